//! Work put off: to the next animation frame, until the view has been still for a
//! moment, or until the frame being prepared has reached the screen.
//!
//! Each kind of work ([`Later`]) runs once for any number of requests made before it
//! runs: a later request replaces an earlier one (and, for [`When::Settled`], postpones
//! it). This keeps a drag from costing a layout per mouse move, and keeps secondary
//! views from delaying the memory timeline's first paint. What is pending lives in the
//! page ([`Pending`]), not in globals.

use std::collections::HashMap;

use wasm_bindgen::closure::Closure;
use wasm_bindgen::JsCast;

use crate::app::App;
use crate::dom;

/// The kinds of deferred work.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Later {
    /// The visible lens rows view's layout.
    LensRows,
    /// The visible lens rows view's redraw.
    LensRowsDraw,
    /// The flame graph's layout.
    LensFlame,
    /// The linked views' first questions about a newly shown device.
    LensStart,
    /// Combining the ranks' reports and drawing the fleet view.
    Fleet,
}

/// When deferred work runs.
#[derive(Clone, Copy, Debug)]
pub enum When {
    /// At the next animation frame.
    NextFrame,
    /// Once no request of the same kind came for [`SETTLE_MS`].
    Settled,
    /// Just after the next frame is shown (an animation frame, then a task).
    AfterPaint,
    /// After this many milliseconds.
    After(i32),
}

/// How long the view must be still before [`When::Settled`] work runs.
pub const SETTLE_MS: i32 = 60;

/// Per kind, the number of the latest request: only that one runs.
#[derive(Default)]
pub struct Pending {
    latest: HashMap<Later, u32>,
}

/// Runs `f` on the page `when` says, unless a request of the same kind comes first.
pub fn schedule(app: &mut App, kind: Later, when: When, f: fn(&mut App)) {
    let slot = app.later.latest.entry(kind).or_insert(0);
    *slot = slot.wrapping_add(1);
    let number = *slot;
    let page = app.self_ref.clone();
    let run = move || {
        if let Some(app) = page.upgrade() {
            run_when_free(app, kind, number, f);
        }
    };
    let window = dom::window();
    let _ = match when {
        When::NextFrame => {
            window.request_animation_frame(Closure::once_into_js(run).unchecked_ref())
        }
        When::Settled => timeout(Closure::once_into_js(run), SETTLE_MS),
        When::After(ms) => timeout(Closure::once_into_js(run), ms),
        When::AfterPaint => {
            let then = Closure::once_into_js(move || {
                let _ = timeout(Closure::once_into_js(run), 0);
            });
            window.request_animation_frame(then.unchecked_ref())
        }
    };
}

/// Runs request `number` of `kind` unless a newer one came. Callbacks run between
/// events, when no handler holds the page; should one ever find it held, the work moves
/// to the next frame rather than being lost.
fn run_when_free(
    app: std::rc::Rc<std::cell::RefCell<App>>,
    kind: Later,
    number: u32,
    f: fn(&mut App),
) {
    if let Ok(mut a) = app.try_borrow_mut() {
        if a.later.latest.get(&kind) == Some(&number) {
            f(&mut a);
        }
        return;
    }
    let retry = Closure::once_into_js(move || run_when_free(app, kind, number, f));
    let _ = dom::window().request_animation_frame(retry.unchecked_ref());
}

fn timeout(callback: wasm_bindgen::JsValue, ms: i32) -> Result<i32, wasm_bindgen::JsValue> {
    dom::window()
        .set_timeout_with_callback_and_timeout_and_arguments_0(callback.unchecked_ref(), ms)
}
