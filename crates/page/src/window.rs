//! The visible window of the memory timeline (x on the device's axis, y in bytes) and
//! every way it moves: fit, zoom, pan, box zoom, and bringing an allocation into view.
//! The canvases under the timeline share its x range.

use memscope_snapshot::Axis;

use crate::url::YScale;

/// The visible data box.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Window {
    /// The x axis.
    pub axis: Axis,
    /// Left edge, in axis units (µs since the first entry, or moments).
    pub x0: f64,
    /// Right edge.
    pub x1: f64,
    /// Bottom edge, bytes.
    pub y0: f64,
    /// Top edge, bytes.
    pub y1: f64,
}

impl Default for Window {
    fn default() -> Window {
        Window {
            axis: Axis::Time,
            x0: 0.0,
            x1: 1.0,
            y0: 0.0,
            y1: 1.0,
        }
    }
}

/// How far the shown device reaches: what fitting and clamping keep the window in.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Extents {
    /// The trace's span in µs (at least 1).
    pub time_us: f64,
    /// Trace entries.
    pub events: u32,
    /// The highest reserved bytes over the trace and the snapshot.
    pub reserved_bytes: f64,
    /// The peak of allocated bytes.
    pub allocated_bytes: f64,
}

impl Default for Extents {
    fn default() -> Extents {
        Extents {
            time_us: 1.0,
            events: 0,
            reserved_bytes: 1.0,
            allocated_bytes: 1.0,
        }
    }
}

/// Headroom above the fitted peak.
const Y_HEADROOM: f64 = 1.05;

/// Fewer pixels than this and an allocation is not "in view" even when inside the
/// window: it is an aggregate's sliver or a hairline the eye does not find.
pub const MIN_VISIBLE_PX: f64 = 8.0;

impl Extents {
    /// The x extent on `axis`.
    pub fn x(&self, axis: Axis) -> f64 {
        match axis {
            Axis::Time => self.time_us.max(1.0),
            // Moment m (the state after m entries) spans [m, m + 1).
            Axis::Events => f64::from(self.events) + 1.0,
        }
    }

    /// The highest bytes the y axis is fitted to.
    pub fn y(&self, scale: YScale) -> f64 {
        match scale {
            YScale::Reserved => self.reserved_bytes.max(1.0),
            YScale::Allocated => self.allocated_bytes.max(1.0),
        }
    }

    /// The narrowest x span a zoom may reach on `axis`.
    fn min_span(&self, axis: Axis) -> f64 {
        let min: f64 = match axis {
            Axis::Time => 1.0,
            Axis::Events => 4.0,
        };
        min.min(self.x(axis))
    }
}

impl Window {
    /// The whole device on `axis`, y fitted to `scale`.
    pub fn fit(axis: Axis, extents: &Extents, scale: YScale) -> Window {
        Window {
            axis,
            x0: 0.0,
            x1: extents.x(axis),
            y0: 0.0,
            y1: extents.y(scale) * Y_HEADROOM,
        }
    }

    /// Refits y to `scale`, keeping x.
    pub fn fit_y(&mut self, extents: &Extents, scale: YScale) {
        self.y0 = 0.0;
        self.y1 = extents.y(scale) * Y_HEADROOM;
    }

    /// The x span.
    pub fn span(&self) -> f64 {
        self.x1 - self.x0
    }

    /// The x centre.
    pub fn center(&self) -> f64 {
        (self.x0 + self.x1) / 2.0
    }

    /// Zooms x by `factor` (< 1 zooms in) around data x `at`, which stays put.
    pub fn zoom_x(&mut self, factor: f64, at: f64, extents: &Extents) {
        let extent = extents.x(self.axis);
        let span = (self.span() * factor).clamp(extents.min_span(self.axis), extent);
        let t = if self.x1 > self.x0 {
            (at - self.x0) / self.span()
        } else {
            0.5
        };
        self.x0 = at - t * span;
        self.x1 = self.x0 + span;
        self.clamp_x(extents);
    }

    /// Pans x by `fraction` of the visible span.
    pub fn pan_x(&mut self, fraction: f64, extents: &Extents) {
        let d = self.span() * fraction;
        self.x0 += d;
        self.x1 += d;
        self.clamp_x(extents);
    }

    /// Pans by data deltas; y may reach the reserved peak whatever y is fitted to.
    pub fn pan_by(&mut self, dx: f64, dy: f64, extents: &Extents) {
        self.x0 += dx;
        self.x1 += dx;
        let y_max = extents.reserved_bytes.max(1.0) * Y_HEADROOM;
        let span = self.y1 - self.y0;
        if span < y_max {
            let y0 = (self.y0 + dy).clamp(0.0, y_max - span);
            self.y0 = y0;
            self.y1 = y0 + span;
        }
        self.clamp_x(extents);
    }

    /// Shows exactly the data box `x0..x1 × y0..y1` (corners in any order).
    pub fn zoom_to(&mut self, x0: f64, x1: f64, y0: f64, y1: f64, extents: &Extents) {
        self.x0 = x0.min(x1);
        self.x1 = x0.max(x1);
        self.y0 = y0.min(y1).max(0.0);
        self.y1 = y0.max(y1).max(self.y0 + 1.0);
        self.clamp_x(extents);
    }

    /// Keeps the window inside the trace: nothing before its first entry (no negative
    /// time) or after its last, and no wider than the whole trace.
    fn clamp_x(&mut self, extents: &Extents) {
        let extent = extents.x(self.axis);
        let span = self.span().min(extent);
        self.x0 = self.x0.clamp(0.0, extent - span);
        self.x1 = self.x0 + span;
    }

    /// Whether `x0..x1` is inside the window and at least [`MIN_VISIBLE_PX`] wide on a
    /// canvas `width_px` wide.
    pub fn shows(&self, x0: f64, x1: f64, width_px: f64) -> bool {
        let inside = x0 >= self.x0 && x1 <= self.x1;
        let px = (x1 - x0) / self.span().max(f64::MIN_POSITIVE) * width_px;
        inside && px >= MIN_VISIBLE_PX
    }

    /// Brings the lifetime `x0..x1` into view: when `zoom`, or when it is out of view
    /// or too thin to see ([`Window::shows`]), the window zooms to it with a margin
    /// (never narrower than a few units); otherwise it stays. Returns whether it moved.
    pub fn reveal(
        &mut self,
        x0: f64,
        x1: f64,
        zoom: bool,
        width_px: f64,
        extents: &Extents,
    ) -> bool {
        if !zoom && self.shows(x0, x1, width_px) {
            return false;
        }
        let min_span = match self.axis {
            Axis::Time => 10.0,
            Axis::Events => 8.0,
        };
        // The allocation takes the middle half of the window, and at least
        // MIN_VISIBLE_PX however narrow the canvas.
        let pad = ((x1 - x0) * 0.5).max(min_span / 2.0);
        let (a, b) = (x0 - pad, x1 + pad);
        let (y0, y1) = (self.y0, self.y1);
        self.zoom_to(a, b, y0, y1, extents);
        true
    }

    /// Brings the band `lo..hi` (bytes) into view: when it is outside the window or
    /// fewer than [`MIN_VISIBLE_PX`] tall on a canvas `height_px` tall, y zooms so that
    /// the band takes the middle quarter (a 2 KiB allocation under 600 MiB of others is
    /// otherwise a sliver no level of detail draws). Returns whether it moved.
    pub fn reveal_band(&mut self, lo: f64, hi: f64, height_px: f64, extents: &Extents) -> bool {
        let inside = lo >= self.y0 && hi <= self.y1;
        let px = (hi - lo) / (self.y1 - self.y0).max(f64::MIN_POSITIVE) * height_px;
        if inside && px >= MIN_VISIBLE_PX {
            return false;
        }
        let pad = ((hi - lo) * 1.5).max(1.0);
        let (x0, x1) = (self.x0, self.x1);
        self.zoom_to(x0, x1, lo - pad, hi + pad, extents);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn extents() -> Extents {
        Extents {
            time_us: 1_000_000.0,
            events: 999,
            reserved_bytes: 8e9,
            allocated_bytes: 6e9,
        }
    }

    #[test]
    fn fit_shows_the_whole_device_on_either_scale() {
        let e = extents();
        let w = Window::fit(Axis::Time, &e, YScale::Reserved);
        assert_eq!((w.x0, w.x1, w.y0), (0.0, 1e6, 0.0));
        assert!((w.y1 - 8.4e9).abs() < 1.0);
        let w = Window::fit(Axis::Events, &e, YScale::Allocated);
        assert_eq!((w.x0, w.x1), (0.0, 1000.0));
        assert!((w.y1 - 6.3e9).abs() < 1.0);
    }

    #[test]
    fn a_thin_allocation_inside_the_window_is_not_in_view() {
        // A 2.6 ms allocation in a 100 s trace at Fit on a 1600 px canvas: 0.04 px.
        let e = Extents {
            time_us: 100e6,
            ..extents()
        };
        let mut w = Window::fit(Axis::Time, &e, YScale::Reserved);
        let (a, b) = (40e6, 40e6 + 2600.0);
        assert!(!w.shows(a, b, 1600.0));
        assert!(w.reveal(a, b, false, 1600.0, &e));
        assert!(w.shows(a, b, 1600.0), "{w:?}");
        // Once visible, stepping to it again leaves the window alone.
        let before = w;
        assert!(!w.reveal(a, b, false, 1600.0, &e));
        assert_eq!(w, before);
        // Unless asked to zoom.
        w.zoom_x(4.0, w.center(), &e);
        assert!(w.reveal(a, b, true, 1600.0, &e));
    }

    #[test]
    fn a_small_band_under_a_large_one_gets_y_zoomed_to() {
        let e = extents();
        let mut w = Window::fit(Axis::Time, &e, YScale::Reserved);
        // 2 KiB on top of 600 MiB, on a 400 px plot: 0.0001 px.
        let (lo, hi) = (600.0 * 1048576.0, 600.0 * 1048576.0 + 2048.0);
        assert!(w.reveal_band(lo, hi, 400.0, &e));
        assert!(w.y0 <= lo && hi <= w.y1);
        assert!((hi - lo) / (w.y1 - w.y0) * 400.0 >= MIN_VISIBLE_PX, "{w:?}");
        let before = w;
        assert!(!w.reveal_band(lo, hi, 400.0, &e), "already seen");
        assert_eq!(w, before);
        // x is left as it was.
        assert_eq!((w.x0, w.x1), (0.0, e.x(Axis::Time)));
    }

    proptest! {
        #[test]
        fn the_window_stays_inside_the_trace(
            ops in proptest::collection::vec((0u8..5, -2.0f64..2.0, 0.0f64..1.0), 1..40),
            events_axis in any::<bool>(),
        ) {
            let e = extents();
            let axis = if events_axis { Axis::Events } else { Axis::Time };
            let mut w = Window::fit(axis, &e, YScale::Reserved);
            for (op, a, b) in ops {
                let x = b * e.x(axis);
                match op {
                    0 => w.zoom_x(a.abs() + 0.01, x, &e),
                    1 => w.pan_x(a, &e),
                    2 => w.pan_by(a * e.x(axis), a * 1e9, &e),
                    3 => w.zoom_to(x, x + a * 100.0, 0.0, b * 1e10, &e),
                    _ => { w.reveal(x, x + b * 10.0, a > 0.0, 800.0, &e); }
                }
                prop_assert!(w.x0 >= 0.0 && w.x1 <= e.x(axis) + 1e-6 * e.x(axis), "{:?}", w);
                prop_assert!(w.x1 >= w.x0);
                prop_assert!(w.y0 >= 0.0 && w.y1 > w.y0, "{:?}", w);
            }
        }

        #[test]
        fn zooming_keeps_the_point_under_the_cursor(f in 0.1f64..0.9, at in 0.1f64..0.9) {
            let e = extents();
            let mut w = Window::fit(Axis::Time, &e, YScale::Reserved);
            w.zoom_x(0.5, 0.5e6, &e);
            let x = w.x0 + at * w.span();
            let before = (x - w.x0) / w.span();
            w.zoom_x(f, x, &e);
            let after = (x - w.x0) / w.span();
            prop_assert!((before - after).abs() < 1e-9);
        }

        #[test]
        fn a_revealed_allocation_is_in_view(start in 0.0f64..0.99, len in 0.0f64..0.3, zoom in any::<bool>()) {
            let e = Extents { time_us: 100e6, ..extents() };
            let mut w = Window::fit(Axis::Time, &e, YScale::Reserved);
            let a = start * 100e6;
            let b = (a + len * 100e6).min(100e6);
            w.reveal(a, b, zoom, 1200.0, &e);
            // Inside, and at least MIN_VISIBLE_PX unless the trace's minimum span is
            // wider than the allocation needs.
            prop_assert!(a >= w.x0 && b <= w.x1, "{:?} {} {}", w, a, b);
            prop_assert!((b - a) / w.span() * 1200.0 >= MIN_VISIBLE_PX || (b - a) < 10.0);
        }
    }
}
