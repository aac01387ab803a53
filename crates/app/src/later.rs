//! Work put off: to the next animation frame, until the view has been still for a
//! moment, or until the frame being prepared has reached the screen.
//!
//! Each kind of work ([`Later`]) runs once for any number of requests made before it
//! runs: a later request replaces an earlier one (and, for [`When::Settled`], postpones
//! it). This keeps a drag from costing a layout per mouse move, and keeps secondary
//! views from delaying the memory timeline's first paint.

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::{Rc, Weak};

use wasm_bindgen::closure::Closure;
use wasm_bindgen::JsCast;

use crate::app::{App, Shared};
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

thread_local! {
    /// The page, for timers (set by [`install`]).
    static PAGE: RefCell<Option<Weak<RefCell<App>>>> = const { RefCell::new(None) };
    /// Per kind, the number of the latest request.
    static LATEST: RefCell<HashMap<Later, u32>> = RefCell::new(HashMap::new());
}

/// Lets deferred work reach the page. Call once at start.
pub fn install(app: &Shared) {
    PAGE.with(|p| *p.borrow_mut() = Some(Rc::downgrade(app)));
}

/// Runs `f` on the page `when` says, unless a request of the same kind comes first.
/// Before [`install`], runs it at once.
pub fn schedule(app: &mut App, kind: Later, when: When, f: fn(&mut App)) {
    let number = LATEST.with(|l| {
        let mut l = l.borrow_mut();
        let slot = l.entry(kind).or_insert(0);
        *slot += 1;
        *slot
    });
    let Some(page) = PAGE.with(|p| p.borrow().clone()) else {
        f(app);
        return;
    };
    let run = move || {
        if LATEST.with(|l| l.borrow().get(&kind) != Some(&number)) {
            return;
        }
        let Some(app) = page.upgrade() else { return };
        // Timer callbacks run between events, when nothing else holds the page.
        let Ok(mut a) = app.try_borrow_mut() else {
            return;
        };
        f(&mut a);
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

fn timeout(callback: wasm_bindgen::JsValue, ms: i32) -> Result<i32, wasm_bindgen::JsValue> {
    dom::window()
        .set_timeout_with_callback_and_timeout_and_arguments_0(callback.unchecked_ref(), ms)
}
