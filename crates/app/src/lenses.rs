//! The linked views of the active device, below the memory timeline. Each asks the
//! device's worker through `Request::Lens` and shows the answer.

use memscope_analysis::AllocatorSettings;
use memscope_protocol::lens::{LensRequest, LensResponse};
use memscope_protocol::Request;
use web_sys::HtmlElement;

use crate::app::App;
use crate::dom::{append, by_id, clear, el, el_text};

/// What the lenses know about the active device.
#[derive(Default)]
pub struct Lenses {
    next_id: u32,
    settings: Option<AllocatorSettings>,
}

/// Sends a lens request for the active device.
fn ask(app: &mut App, request: LensRequest) {
    let Some((rank_key, device)) = app.active else {
        return;
    };
    let Some(slot) = app.slot_of(rank_key) else {
        return;
    };
    app.lenses.next_id += 1;
    let id = app.lenses.next_id;
    app.pool.send(
        slot,
        Request::Lens {
            rank_key,
            device,
            id,
            request,
        },
    );
}

/// A device is shown: ask for what the lenses display.
pub fn on_device_shown(app: &mut App) {
    app.lenses.settings = None;
    render_settings(app);
    ask(app, LensRequest::Settings);
}

/// A worker answered.
pub fn on_response(app: &mut App, rank_key: u32, device: i32, response: LensResponse) {
    if app.active != Some((rank_key, device)) {
        return;
    }
    match response {
        LensResponse::Settings(settings) => {
            app.lenses.settings = Some(settings);
            render_settings(app);
        }
    }
}

/// The allocator settings panel, in units.
fn render_settings(app: &App) {
    let body: HtmlElement = by_id("lens-settings");
    clear(&body);
    let Some(settings) = &app.lenses.settings else {
        return;
    };
    if settings.rows.is_empty() {
        append(
            &body,
            &el_text("p", "hint", "This snapshot records no allocator settings."),
        );
        return;
    }
    let list = el("dl", "facts");
    for row in &settings.rows {
        append(&list, &el_text("dt", "", &row.key));
        append(&list, &el_text("dd", "", &row.value));
    }
    append(&body, &list);
}
