//! The rank worker's entry point (Trunk builds this as a `data-type="worker"` bundle).

fn main() {
    memscope_worker::register();
}
