//! The canvases in rows under the memory timeline, on its x axis: the segment timeline
//! (one row per caching-allocator segment, the selected allocation's row expanded),
//! the call-site lanes (one row per call site, ordered by peak) and the private pools
//! (one row per pool and stream).
//!
//! Each sits in a scroll container whose height stands for all rows (the canvas stays
//! put, `position: sticky`); the worker lays out only the visible rows. Dragging pans
//! and Ctrl+wheel zooms the memory timeline (all views follow), a click selects the
//! allocation under the cursor and sets the moment there.

use memscope_figures::plot::{segment_name, RowLabel};
use memscope_figures::{Size, Style};
use memscope_page::Msg;
use memscope_protocol::lens::{
    At, LaneHitAnswer, LanesAnswer, LensOverview, LensRequest, PoolRow, PoolsAnswer, SegmentsAnswer,
};
use memscope_render::gl::NO_ID;
use memscope_render::palette::Theme;
use memscope_render::{RowsView, SegmentAggregate, Strips, AGGREGATE_ID};
use memscope_snapshot::units::{format_bytes, format_count, format_duration_us};
use web_sys::{Event, HtmlElement, MouseEvent};

use super::glview::{dark, dpr, GlView};
use super::{ask, set_moment, Tab};
use crate::app::{App, Shared};
use crate::dom::{self, append, attr, by_id, clear, el_text, style};
use crate::input::{on_press, on_wheel, route, Drag};
use crate::later::{self, Later, When};

/// Width of the label gutter left of each canvas (CSS px), as the memory timeline's
/// y axis, so that x lines up.
const GUTTER_CSS: f64 = 64.0;

/// Which rows view.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Which {
    /// The segment timeline.
    Segments,
    /// Call-site lanes.
    Lanes,
    /// Private pools.
    Pools,
}

impl Which {
    fn name(self) -> &'static str {
        match self {
            Which::Segments => "segments",
            Which::Lanes => "sites",
            Which::Pools => "pools",
        }
    }

    fn tab(self) -> Tab {
        match self {
            Which::Segments => Tab::Segments,
            Which::Lanes => Tab::Lanes,
            Which::Pools => Tab::Pools,
        }
    }

    /// CSS pixels per row.
    fn row_css(self) -> f64 {
        match self {
            Which::Segments => 16.0,
            Which::Lanes => 26.0,
            Which::Pools => 72.0,
        }
    }

    /// How much taller the expanded row is.
    fn expand(self) -> u32 {
        match self {
            Which::Segments => 4,
            _ => 1,
        }
    }
}

/// One rows view.
pub struct Pane {
    which: Which,
    scroll: HtmlElement,
    sticky: HtmlElement,
    spacer: HtmlElement,
    gutter: HtmlElement,
    labels: HtmlElement,
    moment: HtmlElement,
    range: HtmlElement,
    hover: HtmlElement,
    note: HtmlElement,
    gl: Option<GlView>,
    /// The expanded row (segments: the selected allocation's).
    expanded: Option<u32>,
    /// Scroll to the selection's row when the next layout names it.
    scroll_to_selected: bool,
    /// Aggregates of the last segments layout.
    aggregates: Vec<SegmentAggregate>,
    /// Rows of the last pools layout.
    pool_rows: Vec<PoolRow>,
    /// The selection's row in the last layout.
    selected_row: Option<u32>,
    /// The last client position hovered.
    last_hover: (f64, f64),
    /// Worker ms of the last layout.
    worker_ms: f64,
}

impl Pane {
    fn new(which: Which) -> Pane {
        let id = |part: &str| format!("{}-{part}", which.name());
        let gl = GlView::new(&id("canvas"));
        let note: HtmlElement = by_id(&id("note"));
        if let Err(e) = &gl {
            note.set_text_content(Some(&format!("This view cannot draw here: {e}.")));
        }
        Pane {
            which,
            scroll: by_id(&id("scroll")),
            sticky: by_id(&id("sticky")),
            spacer: by_id(&id("spacer")),
            gutter: by_id(&id("gutter")),
            labels: by_id(&id("labels")),
            moment: by_id(&id("moment")),
            range: by_id(&id("range")),
            hover: by_id(&id("hover")),
            note,
            gl: gl.ok(),
            expanded: None,
            scroll_to_selected: false,
            aggregates: Vec::new(),
            pool_rows: Vec::new(),
            selected_row: None,
            last_hover: (0.0, 0.0),
            worker_ms: 0.0,
        }
    }

    fn reset(&mut self) {
        if let Some(gl) = self.gl.as_mut() {
            gl.clear();
            gl.selected = NO_ID;
            gl.hovered = NO_ID;
        }
        self.expanded = None;
        self.scroll_to_selected = false;
        self.aggregates.clear();
        self.pool_rows.clear();
        self.selected_row = None;
        self.scroll.set_scroll_top(0);
        clear(&self.labels);
        clear(&self.gutter);
        dom::show(&self.hover, false);
        self.note.set_text_content(Some("Loading…"));
    }

    /// Device pixels per row and per expanded row.
    fn row_px(&self) -> (u32, u32) {
        let h = (self.which.row_css() * dpr()).round().max(4.0) as u32;
        (h, h * self.which.expand())
    }

    /// Top of row `r` (device px from the top of row 0).
    fn row_top(&self, r: u32) -> f64 {
        let (h, e) = self.row_px();
        let mut top = f64::from(r) * f64::from(h);
        if let Some(x) = self.expanded {
            if x < r {
                top += f64::from(e - h);
            }
        }
        top
    }

    /// Height of row `r`.
    fn row_height(&self, r: u32) -> u32 {
        let (h, e) = self.row_px();
        if self.expanded == Some(r) {
            e
        } else {
            h
        }
    }

    /// The row at device px `y` from the top of row 0.
    fn row_at(&self, y: f64) -> u32 {
        let (h, e) = self.row_px();
        let (h, e) = (f64::from(h), f64::from(e));
        let y = y.max(0.0);
        match self.expanded {
            Some(x) if y >= f64::from(x) * h => {
                let start = f64::from(x) * h;
                if y < start + e {
                    x
                } else {
                    x + 1 + ((y - start - e) / h).floor() as u32
                }
            }
            _ => (y / h).floor() as u32,
        }
    }

    /// The scroll offset in device px.
    fn scroll_px(&self) -> f64 {
        f64::from(self.scroll.scroll_top()) * dpr()
    }
}

/// The three rows views and a drag in progress.
pub struct Panes {
    /// The segment timeline.
    pub segments: Pane,
    /// Call-site lanes.
    pub lanes: Pane,
    /// Private pools.
    pub pools: Pane,
}

impl Panes {
    /// Finds the panes' elements and sets up their canvases.
    pub fn new() -> Panes {
        Panes {
            segments: Pane::new(Which::Segments),
            lanes: Pane::new(Which::Lanes),
            pools: Pane::new(Which::Pools),
        }
    }

    /// Sizes the shown pane's canvas to its box now, at start, rather than when the
    /// first data arrive: resizing a WebGL canvas is slow under software rendering.
    pub fn fit_shown(&self) {
        for pane in [&self.segments, &self.lanes, &self.pools] {
            if let Some(gl) = pane.gl.as_ref() {
                // Hidden panes have no box and are skipped.
                let _ = gl.fit();
            }
        }
    }

    /// Forgets the last device.
    pub fn reset(&mut self) {
        self.segments.reset();
        self.lanes.reset();
        self.pools.reset();
    }

    fn get(&self, which: Which) -> &Pane {
        match which {
            Which::Segments => &self.segments,
            Which::Lanes => &self.lanes,
            Which::Pools => &self.pools,
        }
    }

    fn get_mut(&mut self, which: Which) -> &mut Pane {
        match which {
            Which::Segments => &mut self.segments,
            Which::Lanes => &mut self.lanes,
            Which::Pools => &mut self.pools,
        }
    }
}

impl Default for Panes {
    fn default() -> Self {
        Panes::new()
    }
}

const ALL: [Which; 3] = [Which::Segments, Which::Lanes, Which::Pools];

fn visible(app: &App) -> Option<Which> {
    ALL.into_iter().find(|w| w.tab() == app.page.lens_tab)
}

/// How many rows `which` has.
fn row_count(app: &App, which: Which) -> u32 {
    let Some(o) = &app.lenses.overview else {
        return 0;
    };
    (match which {
        Which::Segments => o.segments.len(),
        Which::Lanes => o.lanes.len(),
        Which::Pools => o.pools.len(),
    }) as u32
}

/// The rows view to lay out for `which` now.
fn rows_view(app: &App, which: Which) -> Option<RowsView> {
    let t = &app.page.window;
    let pane = app.lenses.rows.as_ref()?.get(which);
    let (w, h) = pane.gl.as_ref()?.fit()?;
    let total = row_count(app, which);
    if total == 0 {
        return None;
    }
    let (row_h, exp_h) = pane.row_px();
    let top = pane.scroll_px();
    let first = pane.row_at(top).min(total - 1);
    let last = pane.row_at(top + f64::from(h)).min(total - 1);
    Some(RowsView {
        axis: t.axis,
        x0: t.x0,
        x1: t.x1,
        width_px: w,
        first_row: first,
        row_count: last - first + 1,
        row_height_px: row_h,
        expanded_height_px: exp_h,
        theme: if dark() { Theme::Dark } else { Theme::Light },
    })
}

/// Asks for the layout of `which`.
fn request(app: &mut App, which: Which) {
    if app.lenses.overview.is_none() {
        return;
    }
    let Some(view) = rows_view(app, which) else {
        if let Some(p) = app.lenses.rows.as_mut() {
            let pane = p.get_mut(which);
            if let Some(gl) = pane.gl.as_mut() {
                gl.clear();
            }
        }
        return;
    };
    let selected = app.selected_id();
    let request = match which {
        Which::Segments => LensRequest::Segments { view, selected },
        Which::Lanes => LensRequest::Lanes { view, selected },
        Which::Pools => LensRequest::Pools { view },
    };
    ask(app, request);
}

/// The visible rows view: redraw and ask for a fresh layout.
pub fn refresh(app: &mut App) {
    let Some(which) = visible(app) else { return };
    size_spacer(app, which);
    draw(app, which);
    request(app, which);
}

/// The timeline's view changed.
///
/// The canvas is redrawn through the new mapping at the next frame; its layout is asked
/// for once the view has been still for a moment ([`When::Settled`]), so that the
/// memory timeline's own strips always reach the worker first and a drag costs no
/// layouts.
pub fn on_view_changed(app: &mut App) {
    if visible(app).is_some() {
        later::schedule(app, Later::LensRowsDraw, When::NextFrame, |a| {
            if let Some(which) = visible(a) {
                draw(a, which);
            }
        });
        later::schedule(app, Later::LensRows, When::Settled, |a| {
            if let Some(which) = visible(a) {
                request(a, which);
            }
        });
    }
}

/// The theme changed.
pub fn on_theme_changed(app: &mut App) {
    refresh(app);
}

/// The selection changed.
pub fn on_select(app: &mut App) {
    let selected = app.selected_id();
    if let Some(p) = app.lenses.rows.as_mut() {
        for w in ALL {
            let pane = p.get_mut(w);
            if let Some(gl) = pane.gl.as_mut() {
                gl.selected = selected;
            }
            pane.scroll_to_selected = selected != NO_ID;
        }
    }
    if let Some(which) = visible(app) {
        draw(app, which);
        if which != Which::Pools {
            request(app, which);
        }
    }
}

/// The highlight changed.
pub fn rehighlight(app: &mut App) {
    let h = app.page.highlight.ids.clone();
    if let Some(p) = app.lenses.rows.as_mut() {
        for w in ALL {
            if let Some(gl) = p.get_mut(w).gl.as_mut() {
                gl.rehighlight(h.as_deref());
            }
        }
    }
    if let Some(which) = visible(app) {
        draw(app, which);
    }
}

/// The device's overview arrived: notes and sizes.
pub fn on_overview(app: &mut App) {
    let Some(o) = app.lenses.overview.as_ref() else {
        return;
    };
    let segments_note = {
        let n = o.segments.len();
        let mut text = format!(
            "{} segment{} {} — each row maps the segment's addresses top to \
             bottom; the selected allocation's row is expanded.",
            format_count(n as u64),
            if n == 1 { "" } else { "s" },
            if crate::app::shows_no_trace(app) {
                "at the snapshot (no trace)"
            } else {
                "over the trace"
            }
        );
        if o.unmapped > 0 {
            text.push_str(&format!(
                " {} allocations lie in no recorded segment and are not drawn here.",
                format_count(u64::from(o.unmapped))
            ));
        }
        if n == 0 {
            text = "This device records no segments.".to_owned();
        }
        text
    };
    let lanes_note = if o.lanes.is_empty() {
        "No allocations.".to_owned()
    } else {
        format!(
            "{} call sites, ordered by their peak; each row is scaled to its own peak.",
            format_count(o.lanes.len() as u64)
        )
    };
    let pools_note = if o.pools.is_empty() {
        "This device has no private pools: every segment is in the default pool \
         (CUDA graphs and torch.cuda.MemPool create private ones)."
            .to_owned()
    } else {
        format!(
            "{} private pool{} (pool, stream): the envelope of max(allocated, reserved) \
             only grows; the pool's allocations are stripes inside it, the line its \
             reserved bytes. Each row is scaled to its own peak.",
            o.pools.len(),
            if o.pools.len() == 1 { "" } else { "s" }
        )
    };
    let no_pools = o.pools.is_empty();
    if let Some(p) = app.lenses.rows.as_mut() {
        for (note, text) in [
            (&p.segments.note, &segments_note),
            (&p.lanes.note, &lanes_note),
            (&p.pools.note, &pools_note),
        ] {
            note.set_text_content(Some(text));
            // The note is one line; the whole of it on hover.
            attr(note, "title", text);
        }
        dom::show(&p.pools.scroll, !no_pools);
        attr(
            &by_id::<HtmlElement>("lens-pools-pane"),
            "data-pools",
            &if no_pools { 0 } else { 1 }.to_string(),
        );
    }
    for w in ALL {
        size_spacer(app, w);
    }
}

/// Sets the scroll range of `which` to all its rows.
fn size_spacer(app: &App, which: Which) {
    let total = row_count(app, which);
    let Some(p) = app.lenses.rows.as_ref() else {
        return;
    };
    let pane = p.get(which);
    let all_px = if total == 0 {
        0.0
    } else {
        pane.row_top(total - 1) + f64::from(pane.row_height(total - 1))
    };
    let view_css = f64::from(pane.sticky.client_height());
    let spacer = (all_px / dpr() - view_css).max(0.0);
    style(&pane.spacer, "height", &format!("{spacer:.0}px"));
    attr(&pane.scroll, "data-rows", &total.to_string());
}

/// Redraws `which` through the timeline's current view, with labels and markers.
fn draw(app: &mut App, which: Which) {
    let v = app.page.window;
    let Some(p) = app.lenses.rows.as_mut() else {
        return;
    };
    let pane = p.get_mut(which);
    let top = pane.scroll_px();
    if let Some(gl) = pane.gl.as_mut() {
        if let Some((_, h)) = gl.fit() {
            gl.draw((v.x0, v.x1), (top, top + f64::from(h)));
        }
    }
    labels(app, which);
    super::place_markers(app);
}

/// Row `r`'s texts: its size (the gutter), its name (over the row) and its tooltip.
fn row_texts(
    o: &LensOverview,
    pane: &Pane,
    which: Which,
    r: u32,
) -> Option<(String, String, String)> {
    Some(match which {
        Which::Segments => {
            let s = o.segments.get(r as usize)?;
            let name = segment_name(s.address, s.expandable, s.pool_id, s.stream);
            let title = format!(
                "segment 0x{:x}: {} ({} bytes), {} allocations over its life{}",
                s.address,
                format_bytes(s.size_bytes),
                format_count(s.size_bytes),
                format_count(u64::from(s.allocations)),
                if s.before_window {
                    "; made before the trace"
                } else {
                    ""
                }
            );
            (format_bytes(s.size_bytes), name, title)
        }
        Which::Lanes => {
            let l = o.lanes.get(r as usize)?;
            let title = format!(
                "{}: peak {} ({} bytes), {} allocations",
                l.label,
                format_bytes(l.peak_bytes),
                format_count(l.peak_bytes),
                format_count(u64::from(l.allocations))
            );
            (format_bytes(l.peak_bytes), l.label.clone(), title)
        }
        Which::Pools => {
            let pool = o.pools.get(r as usize)?;
            let name = format!(
                "pool ({}, {}) · stream 0x{:x} · {} allocations",
                pool.pool_id.0,
                pool.pool_id.1,
                pool.stream,
                format_count(u64::from(pool.allocations))
            );
            let title = format!(
                "envelope peak {} ({} bytes); reserved at the snapshot {} ({} bytes); at the start {} bytes",
                format_bytes(pool.peak_bytes),
                format_count(pool.peak_bytes),
                format_bytes(pool.snapshot_reserved_bytes),
                format_count(pool.snapshot_reserved_bytes),
                pool.initial_reserved_bytes
            );
            let scale = pane
                .pool_rows
                .iter()
                .find(|x| x.pool == r)
                .map_or(pool.peak_bytes, |x| x.scale_bytes);
            (format_bytes(scale), name, title)
        }
    })
}

/// Row labels: sizes in the gutter, names over the rows.
fn labels(app: &App, which: Which) {
    let (Some(p), Some(o)) = (app.lenses.rows.as_ref(), app.lenses.overview.as_ref()) else {
        return;
    };
    let pane = p.get(which);
    clear(&pane.labels);
    clear(&pane.gutter);
    let Some((_, h)) = pane.gl.as_ref().and_then(GlView::fit) else {
        return;
    };
    let total = row_count(app, which);
    if total == 0 {
        return;
    }
    let d = dpr();
    let top = pane.scroll_px();
    let first = pane.row_at(top).min(total - 1);
    let last = pane.row_at(top + f64::from(h)).min(total - 1);
    for r in first..=last {
        let y = (pane.row_top(r) - top) / d;
        let height = f64::from(pane.row_height(r)) / d;
        let Some((gutter, name, title)) = row_texts(o, pane, which, r) else {
            continue;
        };
        let g = el_text("span", "row-size", &gutter);
        style(&g, "top", &format!("{y:.1}px"));
        style(&g, "height", &format!("{height:.1}px"));
        attr(&g, "title", &title);
        attr(&g, "data-row", &r.to_string());
        append(&pane.gutter, &g);
        if height >= 11.0 {
            let l = el_text("span", "row-name", &name);
            style(&l, "top", &format!("{y:.1}px"));
            attr(&l, "data-row", &r.to_string());
            if pane.expanded == Some(r) || pane.selected_row == Some(r) {
                let _ = l.class_list().add_1("selected");
            }
            append(&pane.labels, &l);
        }
    }
}

/// The segment timeline (`segments`) or the call-site lanes as drawn — the visible
/// rows, with their sizes and names — as an SVG figure.
pub fn figure(app: &App, segments: bool, title: &str, style: &Style, size: Size) -> Option<String> {
    let which = if segments {
        Which::Segments
    } else {
        Which::Lanes
    };
    let (p, o) = (app.lenses.rows.as_ref()?, app.lenses.overview.as_ref()?);
    let pane = p.get(which);
    let gl = pane.gl.as_ref()?;
    let strips = gl.strips.as_ref()?;
    let (_, h) = gl.fit()?;
    let total = row_count(app, which);
    if total == 0 {
        return None;
    }
    let top = pane.scroll_px();
    let first = pane.row_at(top).min(total - 1);
    let last = pane.row_at(top + f64::from(h)).min(total - 1);
    let rows = (first..=last)
        .filter_map(|r| {
            let (gutter, name, _) = row_texts(o, pane, which, r)?;
            let y = pane.row_top(r);
            Some(RowLabel {
                top: y,
                bottom: y + f64::from(pane.row_height(r)),
                size: gutter,
                name,
            })
        })
        .collect();
    app.timeline.as_ref()?;
    let axis = app.page.window.axis;
    let plot = memscope_figures::plot::rows(title, strips, gl.under_strips.as_ref(), rows, axis);
    Some(memscope_figures::plot::svg(&plot, style, size))
}

/// Places the moment line (`moment`: fraction of the width) and the range (fractions).
pub fn place_markers(app: &App, moment: Option<f64>, range: Option<(f64, f64)>) {
    let Some(p) = app.lenses.rows.as_ref() else {
        return;
    };
    // Every width is read before any marker moves: a read after a write forces a
    // layout per pane.
    let widths = ALL.map(|w| {
        p.get(w)
            .gl
            .as_ref()
            .map_or(0.0, |g| f64::from(g.canvas().client_width()))
    });
    for (w, width) in ALL.into_iter().zip(widths) {
        let pane = p.get(w);
        match moment {
            Some(f) if (0.0..=1.0).contains(&f) && width > 0.0 => {
                style(
                    &pane.moment,
                    "left",
                    &format!("{:.1}px", GUTTER_CSS + f * width),
                );
                dom::show(&pane.moment, true);
            }
            _ => dom::show(&pane.moment, false),
        }
        match range {
            Some((a, b)) if b >= 0.0 && a <= 1.0 && width > 0.0 => {
                let (a, b) = (a.max(0.0), b.min(1.0));
                style(
                    &pane.range,
                    "left",
                    &format!("{:.1}px", GUTTER_CSS + a * width),
                );
                style(
                    &pane.range,
                    "width",
                    &format!("{:.1}px", ((b - a) * width).max(1.0)),
                );
                dom::show(&pane.range, true);
            }
            _ => dom::show(&pane.range, false),
        }
    }
}

fn scroll_to_row(pane: &Pane, row: u32) {
    let d = dpr();
    let top = pane.row_top(row) / d;
    let bottom = top + f64::from(pane.row_height(row)) / d;
    let view_top = f64::from(pane.scroll.scroll_top());
    let view_h = f64::from(pane.sticky.client_height());
    if top < view_top || bottom > view_top + view_h {
        pane.scroll
            .set_scroll_top((top - view_h / 3.0).max(0.0).round() as i32);
    }
}

/// Shared handling of a rows layout: upload, scroll to the selection, draw.
fn took(app: &mut App, which: Which) {
    let selected_row = {
        let Some(p) = app.lenses.rows.as_ref() else {
            return;
        };
        let pane = p.get(which);
        attr(
            &pane.scroll,
            "data-worker-ms",
            &format!("{:.1}", pane.worker_ms),
        );
        attr(
            &pane.scroll,
            "data-instances",
            &pane
                .gl
                .as_ref()
                .and_then(|g| g.strips.as_ref())
                .map_or(0, |s| s.len())
                .to_string(),
        );
        {
            let v = app.page.window;
            attr(&pane.scroll, "data-x0", &v.x0.to_string());
            attr(&pane.scroll, "data-x1", &v.x1.to_string());
        }
        match which {
            Which::Segments => pane.expanded,
            _ => pane.selected_row,
        }
    };
    size_spacer(app, which);
    let mut scrolled = false;
    if let Some(p) = app.lenses.rows.as_mut() {
        let pane = p.get_mut(which);
        attr(
            &pane.scroll,
            "data-selected-row",
            &selected_row.map_or(String::new(), |r| r.to_string()),
        );
        if pane.scroll_to_selected {
            pane.scroll_to_selected = false;
            if let Some(r) = selected_row {
                let before = pane.scroll.scroll_top();
                scroll_to_row(pane, r);
                scrolled = pane.scroll.scroll_top() != before;
            }
        }
    }
    draw(app, which);
    if scrolled {
        // The scroll event asks for the rows now in view.
        request(app, which);
    }
}

/// The segment timeline arrived.
pub fn on_segments(app: &mut App, a: SegmentsAnswer) {
    let h = app.page.highlight.ids.clone();
    if let Some(p) = app.lenses.rows.as_mut() {
        let pane = &mut p.segments;
        pane.expanded = a.expanded;
        pane.aggregates = a.aggregates;
        pane.worker_ms = a.worker_ms;
        if let Some(gl) = pane.gl.as_mut() {
            let under = Strips::from(&a.extents);
            gl.set(Some(&under), Strips::from(&a.strips), h.as_deref());
        }
    }
    took(app, Which::Segments);
}

/// The lanes arrived.
pub fn on_lanes(app: &mut App, a: LanesAnswer) {
    let h = app.page.highlight.ids.clone();
    if let Some(p) = app.lenses.rows.as_mut() {
        let pane = &mut p.lanes;
        pane.selected_row = a.selected_row;
        pane.worker_ms = a.worker_ms;
        if let Some(gl) = pane.gl.as_mut() {
            gl.set(None, Strips::from(&a.strips), h.as_deref());
        }
    }
    took(app, Which::Lanes);
}

/// The pools arrived.
pub fn on_pools(app: &mut App, a: PoolsAnswer) {
    let h = app.page.highlight.ids.clone();
    if let Some(p) = app.lenses.rows.as_mut() {
        let pane = &mut p.pools;
        pane.pool_rows = a.rows;
        pane.worker_ms = a.worker_ms;
        if let Some(gl) = pane.gl.as_mut() {
            gl.set(None, Strips::from(&a.strips), h.as_deref());
        }
        attr(
            &p.pools.scroll,
            "data-scales",
            &p.pools
                .pool_rows
                .iter()
                .map(|r| r.scale_bytes.to_string())
                .collect::<Vec<_>>()
                .join(","),
        );
    }
    took(app, Which::Pools);
}

/// A lane's allocations under the cursor arrived.
pub fn on_lane_hit(app: &mut App, a: LaneHitAnswer) {
    let Some(p) = app.lenses.rows.as_ref() else {
        return;
    };
    let pane = &p.lanes;
    let Some(o) = app.lenses.overview.as_ref() else {
        return;
    };
    let label = o.lanes.get(a.row as usize).map_or("", |l| l.label.as_str());
    let mut lines = vec![label.to_owned()];
    let when = match (a.time_us, a.moment) {
        (Some(t), _) => format_duration_us(t),
        (None, Some(m)) => format!("moment {m}"),
        (None, None) => String::new(),
    };
    let total: u64 = a.items.iter().map(|i| i.size_bytes).sum();
    lines.push(format!(
        "{} allocations live at {when}, {} — bottom first:",
        a.items.len(),
        format_bytes(total)
    ));
    const SHOWN: usize = 24;
    for it in a.items.iter().take(SHOWN) {
        lines.push(format!(
            "#{:<7} {:>10}{}",
            it.id,
            format_bytes(it.size_bytes),
            if it.pending_free {
                "  (pending free)"
            } else {
                ""
            }
        ));
    }
    if a.items.len() > SHOWN {
        lines.push(format!("… {} more", a.items.len() - SHOWN));
    }
    show_hover(pane, &lines.join("\n"));
    attr(&pane.hover, "data-count", &a.items.len().to_string());
    attr(&pane.hover, "data-bytes", &total.to_string());
}

fn show_hover(pane: &Pane, text: &str) {
    pane.hover.set_text_content(Some(text));
    let (cx, cy) = pane.last_hover;
    dom::show_tooltip(&pane.hover, &pane.sticky, cx, cy);
}

/// Data x (timeline axis) and device-px y (from the top of row 0) under a client point.
fn data_at(app: &App, pane: &Pane, cx: f64, cy: f64) -> Option<(f64, f64)> {
    let v = app.page.window;
    let canvas = pane.gl.as_ref()?.canvas();
    let r = canvas.get_bounding_client_rect();
    let fx = (cx - r.left()) / r.width().max(1.0);
    let x = v.x0 + fx * (v.x1 - v.x0);
    let y = pane.scroll_px() + (cy - r.top()) * dpr();
    Some((x, y))
}

fn hover(app: &mut App, which: Which, cx: f64, cy: f64) {
    let Some((x, y)) = app
        .lenses
        .rows
        .as_ref()
        .and_then(|p| data_at(app, p.get(which), cx, cy))
    else {
        return;
    };
    let total = row_count(app, which);
    let Some(p) = app.lenses.rows.as_mut() else {
        return;
    };
    let pane = p.get_mut(which);
    pane.last_hover = (cx, cy);
    let row = pane.row_at(y);
    if row >= total {
        dom::show(&pane.hover, false);
        return;
    }
    let hit = pane.gl.as_ref().and_then(|g| g.hit(x, y));
    let hovered = match hit {
        Some((_, id)) if id != AGGREGATE_ID => id,
        _ => NO_ID,
    };
    let mut redraw = false;
    if let Some(gl) = pane.gl.as_mut() {
        if gl.hovered != hovered {
            gl.hovered = hovered;
            redraw = true;
        }
    }
    match which {
        Which::Lanes => {
            ask(app, LensRequest::LaneHit { row, x });
        }
        Which::Segments | Which::Pools => {
            let Some(o) = app.lenses.overview.as_ref() else {
                return;
            };
            let pane = app.lenses.rows.as_ref().map(|p| p.get(which));
            let Some(pane) = pane else { return };
            let mut lines = Vec::new();
            if which == Which::Segments {
                if let Some(s) = o.segments.get(row as usize) {
                    lines.push(format!(
                        "segment 0x{:x} · {} ({} bytes)",
                        s.address,
                        format_bytes(s.size_bytes),
                        format_count(s.size_bytes)
                    ));
                    // Address under the cursor: rows map addresses top to bottom.
                    let (top, h) = (pane.row_top(row), f64::from(pane.row_height(row)));
                    let offset = ((y - top) / h * s.size_bytes as f64).max(0.0) as u64;
                    lines.push(format!(
                        "offset {} (0x{:x})",
                        format_bytes(offset),
                        s.address + offset
                    ));
                }
            } else if let Some(pool) = o.pools.get(row as usize) {
                lines.push(format!(
                    "pool ({}, {}) · stream 0x{:x} · peak {}",
                    pool.pool_id.0,
                    pool.pool_id.1,
                    pool.stream,
                    format_bytes(pool.peak_bytes)
                ));
            }
            match hit {
                Some((_, id)) if id != AGGREGATE_ID => {
                    lines.push(format!("allocation #{id} — click to select"));
                }
                Some((i, _)) => {
                    if let Some(g) = pane.aggregates.iter().find(|g| g.instance as usize == i) {
                        lines.push(format!(
                            "{} small allocations, {}",
                            format_count(u64::from(g.allocations)),
                            format_bytes(g.bytes)
                        ));
                    }
                }
                None => {}
            }
            show_hover(pane, &lines.join("\n"));
        }
    }
    if redraw {
        draw(app, which);
    }
}

/// What a drag on a rows canvas is doing.
#[derive(Clone, Copy, Debug)]
pub struct RowsDrag {
    which: Which,
    last_x: f64,
    start: (f64, f64),
    moved: bool,
}

impl RowsDrag {
    /// A press on pane `which` at client (`cx`, `cy`): a pan (a click when it does not
    /// move).
    fn start(which: Which, cx: f64, cy: f64) -> Drag {
        Drag::Rows(RowsDrag {
            which,
            last_x: cx,
            start: (cx, cy),
            moved: false,
        })
    }
}

/// Wires the three panes: scroll, drag to pan, Ctrl+wheel to zoom, click, hover.
pub fn wire(app: &Shared) {
    for which in ALL {
        let (scroll, canvas) = {
            let a = app.borrow();
            let Some(p) = a.lenses.rows.as_ref() else {
                return;
            };
            let pane = p.get(which);
            let Some(gl) = pane.gl.as_ref() else { continue };
            (pane.scroll.clone(), gl.canvas().clone())
        };
        route(app, &scroll, "scroll", move |a, _: Event| {
            scrolled(a, which)
        });
        on_press(app, &canvas, move |_, _, cx, cy| {
            Some(RowsDrag::start(which, cx, cy))
        });
        route(app, &canvas, "mousemove", move |a, e: MouseEvent| {
            hover_unless_dragging(a, which, &e)
        });
        route(app, &canvas, "mouseleave", move |a, _: MouseEvent| {
            left(a, which)
        });
        on_wheel(app, &canvas, move |a, cx, cy| data_x(a, which, cx, cy));
    }
}

/// The data x under a client position on a pane's canvas.
fn data_x(a: &App, which: Which, cx: f64, cy: f64) -> Option<f64> {
    data_at(a, a.lenses.rows.as_ref()?.get(which), cx, cy).map(|(x, _)| x)
}

/// A pane scrolled: hide its readout, draw it and ask for the rows now in view.
fn scrolled(a: &mut App, which: Which) {
    if let Some(p) = a.lenses.rows.as_ref() {
        dom::show(&p.get(which).hover, false);
    }
    draw(a, which);
    request(a, which);
}

/// The pointer moved over a pane's canvas: its readout, unless a drag is carrying it.
fn hover_unless_dragging(a: &mut App, which: Which, e: &MouseEvent) {
    if matches!(a.drag, Drag::None) {
        hover(a, which, f64::from(e.client_x()), f64::from(e.client_y()));
    }
}

/// The pointer left a pane's canvas: hide its readout and outline.
fn left(a: &mut App, which: Which) {
    let mut redraw = false;
    if let Some(p) = a.lenses.rows.as_mut() {
        let pane = p.get_mut(which);
        dom::show(&pane.hover, false);
        if let Some(gl) = pane.gl.as_mut() {
            redraw = gl.hovered != NO_ID;
            gl.hovered = NO_ID;
        }
    }
    if redraw {
        draw(a, which);
    }
}

/// The pointer moved during a drag that started on a rows canvas: pan.
pub fn drag_move(a: &mut App, mut d: RowsDrag, cx: f64, cy: f64) {
    if !d.moved && (cx - d.start.0).abs() + (cy - d.start.1).abs() <= 3.0 {
        return;
    }
    d.moved = true;
    let width = a
        .lenses
        .rows
        .as_ref()
        .and_then(|p| p.get(d.which).gl.as_ref())
        .map_or(1.0, |g| f64::from(g.canvas().client_width()).max(1.0));
    let dx = (cx - d.last_x) / width * a.page.window.span();
    d.last_x = cx;
    a.drag = Drag::Rows(d);
    a.dispatch(Msg::PanBy { dx: -dx, dy: 0.0 });
}

/// A drag that started on a rows canvas ended: without a move, a click that selects
/// what is under it and sets the moment there.
pub fn drag_end(a: &mut App, d: RowsDrag, cx: f64, cy: f64) {
    if d.moved {
        return;
    }
    let Some((x, y)) = a
        .lenses
        .rows
        .as_ref()
        .and_then(|p| data_at(a, p.get(d.which), cx, cy))
    else {
        return;
    };
    let hit = a
        .lenses
        .rows
        .as_ref()
        .and_then(|p| p.get(d.which).gl.as_ref())
        .and_then(|g| g.hit(x, y));
    if let Some((_, id)) = hit {
        if id != AGGREGATE_ID {
            a.select(id);
        }
    }
    let axis = a.page.window.axis;
    set_moment(a, At::X { axis, x });
}

/// Facts for `window.memscope.lenses()`.
pub fn expose(app: &App, out: &js_sys::Object) {
    let Some(p) = app.lenses.rows.as_ref() else {
        return;
    };
    for w in ALL {
        let pane = p.get(w);
        let o = js_sys::Object::new();
        let set = |k: &str, v: wasm_bindgen::JsValue| {
            let _ = js_sys::Reflect::set(&o, &k.into(), &v);
        };
        set("rows", row_count(app, w).into());
        set(
            "instances",
            (pane
                .gl
                .as_ref()
                .and_then(|g| g.strips.as_ref())
                .map_or(0, |s| s.len()) as u32)
                .into(),
        );
        set(
            "expanded",
            pane.expanded
                .map_or(wasm_bindgen::JsValue::NULL, |r| r.into()),
        );
        set(
            "selectedRow",
            pane.selected_row
                .map_or(wasm_bindgen::JsValue::NULL, |r| r.into()),
        );
        set(
            "selectedDrawn",
            pane.gl
                .as_ref()
                .is_some_and(|g| g.selected != NO_ID && g.has(g.selected))
                .into(),
        );
        let _ = js_sys::Reflect::set(out, &w.name().into(), &o);
    }
}

/// Client coordinates of the middle of allocation `id`'s largest drawn rect in pane
/// `name`, if drawn (for tests).
pub fn locate(app: &App, name: &str, id: u32) -> Option<(f64, f64)> {
    let which = ALL.into_iter().find(|w| w.name() == name)?;
    let p = app.lenses.rows.as_ref()?;
    let pane = p.get(which);
    let gl = pane.gl.as_ref()?;
    let s = gl.strips.as_ref()?;
    let v = app.page.window;
    let top = pane.scroll_px();
    let (_, h) = gl.fit()?;
    let bottom = top + f64::from(h);
    let best = (0..s.len())
        .filter(|&i| s.ids[i] == id)
        .map(|i| {
            let r = s.rect_data(i);
            [
                r[0].max(v.x0),
                r[1].min(v.x1),
                r[2].max(top),
                r[3].min(bottom),
            ]
        })
        .filter(|r| r[1] > r[0] && r[3] > r[2])
        .max_by(|a, b| {
            ((a[1] - a[0]) * (a[3] - a[2])).total_cmp(&((b[1] - b[0]) * (b[3] - b[2])))
        })?;
    let rect = gl.canvas().get_bounding_client_rect();
    let d = dpr();
    let fx = ((best[0] + best[1]) / 2.0 - v.x0) / (v.x1 - v.x0);
    let y = ((best[2] + best[3]) / 2.0 - top) / d;
    Some((rect.left() + fx * rect.width(), rect.top() + y))
}
