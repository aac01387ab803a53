//! Which frames of a call stack matter to a reader.
//!
//! PyTorch records stacks innermost first. With `stacks="all"` they interleave Python
//! frames with C++ ones, many of which are the machinery of recording itself (the
//! unwinder), of the interpreter (`_PyEval_EvalFrameDefault`, `*_vectorcall`) or of the
//! process (`_start`, `__libc_start_main`). Those are *noise*: hidden by default. The
//! *call site* of an allocation is its innermost frame in the user's own Python code
//! (not the interpreter, not an installed library such as torch itself): it names what
//! allocated the memory, and colours the timeline.

use crate::intern::{FrameId, StackId, NO_LINE};
use crate::model::Snapshot;

/// Substrings of C/C++ function names that are recording, interpreter or process
/// machinery.
const NOISE_NAMES: &[&str] = &[
    "torch::unwind::",
    "CapturedTraceback",
    "gather_with_cpp",
    "_PyEval_",
    "PyEval_",
    "_PyObject_",
    "PyObject_",
    "_PyFunction_",
    "_PyRun_",
    "PyRun_",
    "Py_RunMain",
    "Py_BytesMain",
    "pymain_",
    "pyrun_",
    "run_eval_code",
    "run_mod",
    "vectorcall",
    "slot_tp_",
    "cfunction_call",
    "_PyVectorcall",
    "PyVectorcall",
    "_PyCFunction",
    "PyCFunction",
    "__libc_start",
    "__libc_init",
    "_start",
    "_Py_",
];

/// Substrings of C++ names that are the allocator's and dispatcher's own plumbing: a
/// stack with no Python frame is labelled by the first frame past them (the operator).
const PLUMBING_NAMES: &[&str] = &[
    "CUDACachingAllocator",
    "c10::cuda::",
    "c10::impl::",
    "c10::Dispatcher",
    "c10::StorageImpl",
    "c10::TensorImpl",
    "c10::intrusive_ptr",
    "at::detail::",
    "at::_ops::",
    "at::empty",
    "at::native::empty",
    "at::TensorBase",
    "at::(anonymous namespace)::",
    "wrap_kernel_functor",
    "wrapper_CUDA",
    "create_out",
    "set_output",
    "THPVariable_",
];

/// Path fragments of installed Python code (libraries, not the user's).
const LIBRARY_PATHS: &[&str] = &[
    "/site-packages/",
    "/dist-packages/",
    "\\site-packages\\",
    "\\dist-packages\\",
    "/lib/python",
    "\\Lib\\",
    "/torch/",
    "\\torch\\",
];

/// Whether a frame is Python code (a `.py` file or a `<…>` pseudo-file such as
/// `<eval_with_key>.3` from torch.fx).
pub fn is_python(snap: &Snapshot, frame: FrameId) -> bool {
    let filename = snap.strings.get(snap.frames.filename[frame.0 as usize]);
    filename.ends_with(".py") || filename.starts_with('<')
}

/// Whether a frame is recording, interpreter or process machinery (hidden by default).
pub fn is_noise(snap: &Snapshot, frame: FrameId) -> bool {
    let i = frame.0 as usize;
    let filename = snap.strings.get(snap.frames.filename[i]);
    if filename.starts_with("<frozen ") {
        return true;
    }
    if is_python(snap, frame) {
        return false;
    }
    let name = snap.strings.get(snap.frames.name[i]);
    NOISE_NAMES.iter().any(|n| name.contains(n))
}

/// Whether a frame is in the user's own Python code.
pub fn is_user_code(snap: &Snapshot, frame: FrameId) -> bool {
    if !is_python(snap, frame) || is_noise(snap, frame) {
        return false;
    }
    let filename = snap.strings.get(snap.frames.filename[frame.0 as usize]);
    !LIBRARY_PATHS.iter().any(|p| filename.contains(p))
}

/// Whether a C++ frame is allocator or dispatcher plumbing (never a useful call site).
fn is_plumbing(snap: &Snapshot, frame: FrameId) -> bool {
    let name = snap.strings.get(snap.frames.name[frame.0 as usize]);
    PLUMBING_NAMES.iter().any(|n| name.contains(n))
}

/// The call site of a stack: its innermost frame in user code, else its innermost
/// Python frame, else (C++ only, e.g. autograd's backward thread) its innermost frame
/// past the allocator's plumbing, else its innermost frame that is not noise, else its
/// first frame. `None` for an empty stack.
pub fn call_site(snap: &Snapshot, stack: StackId) -> Option<FrameId> {
    let frames = snap.stacks.get(stack);
    let useful = |f: FrameId| !is_noise(snap, f);
    frames
        .iter()
        .find(|&&f| is_user_code(snap, f))
        .or_else(|| frames.iter().find(|&&f| is_python(snap, f) && useful(f)))
        .or_else(|| frames.iter().find(|&&f| useful(f) && !is_plumbing(snap, f)))
        .or_else(|| frames.iter().find(|&&f| useful(f)))
        .or_else(|| frames.first())
        .copied()
}

/// `name (file:line)` with the file shortened to its base name, for legends and labels.
pub fn short_label(snap: &Snapshot, frame: FrameId) -> String {
    let i = frame.0 as usize;
    let filename = snap.strings.get(snap.frames.filename[i]);
    let base = filename.rsplit(['/', '\\']).next().unwrap_or(filename);
    let name = snap.strings.get(snap.frames.name[i]);
    let line = snap.frames.line[i];
    if base.is_empty() || base == "??" {
        name.to_owned()
    } else if line > 0 && line < (1 << 63) {
        format!("{name} ({base}:{line})")
    } else {
        format!("{name} ({base})")
    }
}

/// `filename:line name` in full, for stacks shown and copied (`filename name` for a
/// frame without line).
pub fn full_label(snap: &Snapshot, frame: FrameId) -> String {
    let i = frame.0 as usize;
    let filename = snap.strings.get(snap.frames.filename[i]);
    let name = snap.strings.get(snap.frames.name[i]);
    match snap.frames.line[i] {
        NO_LINE => format!("{filename} {name}"),
        line => format!("{filename}:{line} {name}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load_bytes;

    fn snapshot_with(frames: &[(&str, u32, &str)]) -> Snapshot {
        let frames: Vec<String> = frames
            .iter()
            .map(|(file, line, name)| {
                format!(r#"{{"filename": "{file}", "line": {line}, "name": "{name}"}}"#)
            })
            .collect();
        let json = format!(
            r#"{{"segments": [], "device_traces": [[{{"action": "alloc", "addr": 1, "size": 2,
                "stream": 0, "frames": [{}]}}]]}}"#,
            frames.join(",")
        );
        load_bytes(json.as_bytes()).unwrap()
    }

    #[test]
    fn the_call_site_skips_noise_and_libraries() {
        // The shape of a real stacks="all" entry (fullstep-19k), innermost first.
        let snap = snapshot_with(&[
            ("??", 0, "torch::unwind::unwind()"),
            (
                "CUDACachingAllocator.cpp",
                0,
                "c10::cuda::CUDACachingAllocator::Native::malloc",
            ),
            (
                "/env/lib/python3.13/site-packages/torch/nn/modules/module.py",
                1750,
                "_call_impl",
            ),
            ("??", 0, "_PyEval_EvalFrameDefault"),
            ("/home/me/model.py", 244, "forward"),
            ("/home/me/train.py", 12, "<module>"),
            ("??", 0, "_start"),
        ]);
        let stack = snap.events.stack[0];
        let site = call_site(&snap, stack).unwrap();
        assert_eq!(short_label(&snap, site), "forward (model.py:244)");
        let noisy: Vec<bool> = snap
            .stacks
            .get(stack)
            .iter()
            .map(|&f| is_noise(&snap, f))
            .collect();
        assert_eq!(noisy, [true, false, false, true, false, false, true]);
    }

    #[test]
    fn library_only_stacks_fall_back_to_python_then_anything() {
        let snap = snapshot_with(&[
            ("??", 0, "torch::unwind::unwind()"),
            (
                "/usr/lib/python3/dist-packages/torch/functional.py",
                7,
                "einsum",
            ),
        ]);
        let site = call_site(&snap, snap.events.stack[0]).unwrap();
        assert_eq!(short_label(&snap, site), "einsum (functional.py:7)");
        let snap = snapshot_with(&[("??", 0, "_start"), ("alloc.cpp", 0, "at::empty")]);
        let site = call_site(&snap, snap.events.stack[0]).unwrap();
        assert_eq!(short_label(&snap, site), "at::empty (alloc.cpp)");
        // Autograd's backward thread has no Python frame: the operator past the
        // allocator's plumbing names it.
        let snap = snapshot_with(&[
            ("??", 0, "torch::unwind::unwind()"),
            (
                "CUDACachingAllocator.cpp",
                0,
                "c10::cuda::CUDACachingAllocator::Native::malloc",
            ),
            ("??", 0, "at::detail::empty_cuda(c10::ArrayRef<long>)"),
            ("??", 0, "at::_ops::mm::call(at::Tensor const&)"),
            (
                "??",
                0,
                "torch::autograd::generated::MmBackward0::apply(std::vector<at::Tensor>&&)",
            ),
            ("??", 0, "torch::autograd::Engine::thread_main"),
        ]);
        let site = call_site(&snap, snap.events.stack[0]).unwrap();
        assert_eq!(
            short_label(&snap, site),
            "torch::autograd::generated::MmBackward0::apply(std::vector<at::Tensor>&&)"
        );
    }
}
