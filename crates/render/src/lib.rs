//! Turns a device's allocations into what the GPU draws.
//!
//! The memory timeline (PyTorch's "Active Memory Timeline") puts time on x and bytes of
//! live allocations on y. Every allocation is a band as tall as its requested size,
//! stacked in allocation order: at any moment a band sits on the sum of the sizes of
//! the live allocations allocated before it, so when an older allocation is freed every
//! band above drops by its size, and new allocations go on top. Allocations made before
//! the trace window are live from the start, at the bottom. The pending-free part of a
//! band (from `free_requested` to its end) is a lighter shade of its colour.
//!
//! Everything here but `gl` is plain Rust (no `web-sys`, no GPU, no clock), tested
//! natively; `gl` (built for wasm only) draws through a `glow` context the page creates.
//!
//! # Data flow
//!
//! ```text
//!  Snapshot ──Allocations::replay──▶ DeviceModel            (memscope-snapshot)
//!      │                                 │      (shared with analysis, fleet, allocator)
//!      └───TimelineIndex::from_model◀────┘   once per device, in the rank's worker:
//!                     │                      O(events + allocations)
//!                     ├──layout(&index, &view)──▶ Strips   per view: pixels decide
//!                     │                             │      the work and the size
//!                     ├──legend(&index, n)          ├──▶ transferred to the page,
//!                     │                             │    drawn as indexed quads, or
//!                     │                             │    filled into a Raster (a colour
//!                     │                             │    and an id per pixel) and drawn
//!                     │                             │    as one textured quad
//!  ticks_bytes / ticks_time / ticks_events          └──▶ Strips::hit(x, y) on hover
//! ```
//!
//! - [`TimelineIndex`]: per device, the x of every moment on both axes ([`Axis::Time`],
//!   [`Axis::Events`]), every allocation's lifetime and colour, allocated bytes after
//!   every trace entry, the reserved-bytes curve and the peak.
//! - [`layout`] of a [`TimelineView`] (x range, y range, canvas size) gives [`Strips`]:
//!   flat `rects` / `colors` / `ids` arrays, one entry per rectangle, relative to an
//!   origin so `f32` stays precise, plus overlay polylines and the peak marker.
//! - [`legend`]: the call sites holding the most bytes at the peak.
//! - [`palette`]: every colour. [`axes`]: tick positions and labels.
//! - [`raster`]: rectangles as pixels, for views they would crowd: a timeline view's
//!   exactly where [`Strips::hit`] answers (`tests/hit_props.rs` compares every pixel
//!   centre of random views).
//! - `gl`: the WebGL2 renderer of strips (glow): the only part that needs a GPU.
//!
//! # Level of detail
//!
//! A snapshot can hold millions of allocations; a canvas has a few thousand columns.
//! The layout follows the pixels:
//!
//! 1. **One moment per column.** Pixel column `j` covers `[x0 + j·dx, x0 + (j+1)·dx)`
//!    (the last one includes its right edge). Its candidates are the state in effect
//!    when it begins and every state entered inside it (on the time axis several
//!    entries can share a time: all of them, even those at its left edge); it shows the
//!    candidate with the most allocated bytes (the first of equals). *Guarantee:* the
//!    peak is drawn at every zoom level, and every column shows a state that really
//!    existed. (On the time axis the state after the last entry has no duration: it is
//!    a candidate of the column holding the last entry's time.)
//! 2. **Bands at least one pixel tall are drawn on their own**, at their exact
//!    stacking offset at that moment: an allocation whose requested size is ≥ bytes
//!    per pixel (`(y1 − y0) / height_px`) and whose band touches `[y0, y1)`. A band
//!    continues across columns as one rect while it stays live, keeps its shade, and
//!    its offset stays within half a pixel of where the rect started. *Guarantee:*
//!    every such allocation live at a column's moment is drawn in that column with its
//!    id, within half a pixel of its true offset, with its exact height.
//! 3. **Everything thinner is aggregated, per call site.** In each column, the gaps
//!    between the bands drawn (and below the first and above the last, up to the
//!    total) hold only allocations thinner than a pixel. Each gap is cut into windows
//!    of at most [`WINDOW_PX`] pixels at boundaries between runs of one call site (a
//!    longer run is a window of its own). In a window, the allocations of each site
//!    are gathered: a site holding a pixel or more there is one aggregate in its
//!    colour; the sites holding less share one aggregate, in the colour of a site
//!    holding more than half of its bytes, else [`palette::AGGREGATE`] grey — grey
//!    means the sites are truly mixed there. They stack in the order each first
//!    appears, so an allocation moves by less than a window. Aggregates are clipped to
//!    the view and continue across columns only while their bounds and contents are
//!    the same. Each one is described in [`Strips::aggregates`] (allocations, bytes,
//!    call sites, the top three, its window); its id is [`AGGREGATE_BASE`] plus its
//!    instance index. *Guarantee:* no allocation is dropped: the layout works in
//!    integer bytes, and in a view from y = 0 the heights drawn in each column sum to
//!    the allocated total at its moment, up to the `f32` rounding of the rect edges
//!    (about 1e-7 of the view height each; an aggregate of a few bytes thinner than
//!    that has no extent in `f32` and is left out, its neighbours' edges being the
//!    same numbers).
//! 4. **Hit testing is what is drawn.** [`Strips::hit`] answers as the renderer draws
//!    (a point on the edge between two columns is the right one's:
//!    [`Strips::column_at`]):
//!    rects at least a pixel tall, aggregates (grey ones first) under bands. A band's
//!    answer is live at the column's moment and covers the point within half a pixel;
//!    an aggregate's covers it and holds exactly what it lists (`tests/hit_props.rs`
//!    checks both over thousands of random views of every corpus file).
//! 5. **Bounded output.** A column holds at most `height_px + 2` rects at least a
//!    pixel tall within the view (bands, runs, lumps that reached a pixel), and a thin
//!    lump is always followed by one of these or by the end of its gap, so a layout
//!    has at most `width_px × (2·height_px + 5)` instances
//!    ([`TimelineView::instance_bound`]), whatever the number of allocations; real
//!    traces give far fewer (neighbouring columns merge).
//! 6. **Bounded work.** The state at the first column (bytes per stacking rank with
//!    64-ary block sums, the live allocations and the bands in 64-ary bit sets) is
//!    built in one pass over the allocations; moving from column to column costs
//!    O(log₆₄ allocations) per allocation starting or ending on the way; choosing the
//!    moments costs three binary searches per column and, for the one a column shows,
//!    the first maximum of its moments' totals read from per-block maxima (O(256 +
//!    moments / 256), not O(moments): a column of a wide view of a long trace covers
//!    thousands). A column walks its live allocations
//!    bottom up from `y0`, adding their offsets (one prefix sum per column), until
//!    `y1`: O(1) per allocation, and a run of one call site longer than a few dozen
//!    allocations is crossed in one jump (a prefix sum and a search, O(64 · log₆₄
//!    allocations)). It resumes where the
//!    previous column drawn last decided something with only unchanged allocations
//!    below (a checkpoint between windows, or after a band), continuing what that
//!    column drew below it: across a trace the stack changes mostly near its top, so a
//!    column usually walks only what changed. A column showing the moment of its left
//!    neighbour costs nothing. The unit tests check that these shortcuts change
//!    nothing drawn. Measured (`bench/layout_versus.py`, 1600 × 800 px, side by side
//!    with the layout before aggregation per call site): on ~120 MiB (811k events,
//!    271k allocations) 0.5–1.2× its time, 3–22 ms; `examples/layout_speed.rs` gives
//!    the figures of any file.
//! 7. **Precision.** Rects and lines are relative to the view's `(x0, y0)`, so their
//!    `f32` edges stay within 1e-4 px of the `f64` column edges even microseconds wide
//!    ten minutes into a trace, where absolute `f32` times would be 64 µs apart.
//!
//! # Example
//!
//! ```
//! use memscope_render::{is_aggregate, layout, legend, Axis, TimelineIndex, TimelineView};
//! use memscope_snapshot::{load_bytes, Allocations};
//!
//! let json = br#"{"segments": [], "device_traces": [[
//!     {"action": "alloc", "addr": 1, "size": 600, "stream": 0, "time_us": 1000},
//!     {"action": "alloc", "addr": 2, "size": 3, "stream": 0, "time_us": 1010},
//!     {"action": "alloc", "addr": 3, "size": 400, "stream": 0, "time_us": 1020},
//!     {"action": "free_completed", "addr": 1, "size": 600, "stream": 0, "time_us": 1030}]]}"#;
//! let snap = load_bytes(json).unwrap();
//! let allocs = Allocations::replay(&snap, 0);
//! let index = TimelineIndex::new(&snap, &allocs);
//! assert_eq!(index.peak().bytes, 1003);
//!
//! // One pixel row is 10 bytes: the 3-byte allocation is in an aggregate.
//! let view = TimelineView { axis: Axis::Events, x0: 0.0, x1: 5.0, y0: 0.0, y1: 1000.0,
//!                           width_px: 5, height_px: 100 };
//! let strips = layout(&index, &view);
//! // Column 3 shows the moment after the third alloc: 600, then 3, then 400 bytes.
//! let at = |y: f64| strips.hit(3.5, y).map(|i| strips.ids[i]);
//! assert_eq!(at(100.0), Some(0));
//! assert_eq!(at(700.0), Some(2));
//! // Drawn a pixel tall at 600 bytes, under the band above it from 603.
//! let i = strips.hit(3.5, 601.0).unwrap();
//! assert!(is_aggregate(strips.ids[i]));
//! let held = strips.aggregate(i).unwrap();
//! assert_eq!((held.allocations, held.bytes), (1, 3));
//! // Column 4: the 600 bytes are freed, the band above drops by 600.
//! assert_eq!(strips.hit(4.5, 100.0).map(|i| strips.ids[i]), Some(2));
//! assert_eq!(legend(&index, 1)[0].bytes, 1003);
//! ```

pub use memscope_snapshot::axes;
pub mod flame;
#[cfg(target_arch = "wasm32")]
pub mod gl;
mod index;
pub mod lanes;
mod layout;
pub mod palette;
pub mod quads;
pub mod raster;
pub mod segments;
mod stack;

pub use flame::{
    flame_layout, FlameAggregate, FlameLabel, FlameLayout, FlameNode, FlameOptions, FlameOrder,
    FlameTree, FlameView, Orientation, Weighting,
};
pub use index::{legend, Axis, LegendEntry, Peak, Span, TimelineIndex, NO_MOMENT, NO_STACK_LABEL};
pub use lanes::{lane_hit, lanes_layout, LaneRow, Lanes, LanesLayout, RowPlacement, RowsView};
pub use layout::{
    aggregate_colour_site, is_aggregate, layout, Aggregate, LineStrip, PeakMarker, Strips,
    TimelineView, AGGREGATE_BASE, AGGREGATE_ID, MIXED_SITE, WINDOW_PX,
};
pub use memscope_snapshot::axes::{ticks_bytes, ticks_events, ticks_time};
pub use segments::{
    segment_instance_bound, segment_layout, SegmentAggregate, SegmentExtent, SegmentIndex,
    SegmentLayout, SegmentRow,
};
