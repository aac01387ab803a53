//! The flame graph: call stacks weighted by bytes live at the moment (the peak until a
//! moment is chosen) or by bytes × lifetime (byte·seconds), top-down or bottom-up,
//! left-heavy or stable. Nodes are drawn on a canvas with the timeline's renderer,
//! their labels in the DOM. A click drills into a node (by identity: its path of
//! frames survives rebuilds), lists its allocations and highlights them in every view;
//! the breadcrumb goes back.

use memscope_figures::{Size, Style};
use memscope_page::flame::{FlameMsg, Weighting};
use memscope_page::Msg;
use memscope_protocol::lens::{
    Crumb, FlameAggregateInfo, FlameAnswer, FlameNodeInfo, FlameQuery, FlameUnit, FlameWeight,
    LensRequest, NodeAllocations,
};
use memscope_protocol::Axis;
use memscope_render::gl::NO_ID;
use memscope_render::{FlameLabel, FlameOrder, Orientation, AGGREGATE_ID};
use memscope_snapshot::units::{format_bytes, format_count, format_duration_us};
use web_sys::{Event, HtmlElement, MouseEvent};

use super::glview::{dpr, GlView};
use super::{ask, select_and_reveal, Tab};
use crate::app::{App, Shared};
use crate::dom::{self, append, attr, by_id, clear, el, el_text, style};
use crate::input::{event_data, on_click, route};
use memscope_page::highlight::{HighlightMsg, HighlightSource};

/// CSS pixels per depth.
const ROW_CSS: f64 = 18.0;

/// How many of a node's allocations are listed.
const LIST_LIMIT: u32 = 300;

/// The flame graph's widget: what the worker laid out, and the node in focus (its
/// settings are the page model's, `memscope_page::flame`).
#[derive(Default)]
pub struct FlameState {
    focus_path: Vec<u32>,
    focus_node: Option<(u32, u32)>,
    /// A newer layout is needed (the moment changed while hidden).
    pub stale: bool,
    gl: Option<GlView>,
    generation: u32,
    focus: u32,
    breadcrumb: Vec<Crumb>,
    labels: Vec<FlameLabel>,
    aggregates: Vec<FlameAggregateInfo>,
    max_depth: u32,
    unit: Option<FlameUnit>,
    total_weight: f64,
    moment: Option<u32>,
    time_us: Option<i64>,
    selected_path: Vec<u32>,
    nodes: u32,
    /// The focused node's allocations.
    list: Option<(u32, f64, Vec<memscope_protocol::lens::AllocationItem>)>,
    /// The last layout answered a click: highlight the node's allocations.
    clicked: bool,
    /// The axis bytes × lifetime was asked on.
    axis: Option<Axis>,
    answered: bool,
    hover_at: (f64, f64),
    /// The canvas size the last layout was asked for.
    laid_size: Option<(u32, u32)>,
}

impl FlameState {
    /// Forgets the last device.
    pub fn reset(&mut self) {
        let gl = self.gl.take();
        *self = FlameState {
            gl,
            ..FlameState::default()
        };
        if let Some(gl) = self.gl.as_mut() {
            gl.clear();
            gl.selected = NO_ID;
            gl.hovered = NO_ID;
        }
    }

    /// Whether a layout was shown.
    pub fn has_answer(&self) -> bool {
        self.answered
    }

    /// The timeline's axis is now `axis` (and the window may have been resized):
    /// whether the graph, weighted as `weighting`, must be laid out again.
    pub fn axis_changed(&mut self, weighting: Weighting, axis: Option<Axis>) -> bool {
        if weighting == Weighting::ByteTime && axis.is_some() && axis != self.axis {
            self.axis = axis;
            return true;
        }
        let size = self.gl.as_ref().and_then(GlView::fit);
        size.is_some() && self.answered && size != self.laid_size
    }
}

fn query(app: &App) -> Option<FlameQuery> {
    let f = &app.lenses.flame;
    let settings = app.page.flame;
    let gl = f.gl.as_ref()?;
    let (w, h) = gl.fit()?;
    let row_px = ROW_CSS * dpr();
    let scroll: HtmlElement = by_id("flame-scroll");
    let top = f64::from(scroll.scroll_top()) * dpr();
    Some(FlameQuery {
        weight: match settings.weighting {
            Weighting::Live => FlameWeight::Live(app.page.moment.target),
            Weighting::ByteTime => FlameWeight::ByteTime,
        },
        axis: app.page.window.axis,
        orientation: if settings.bottom_up {
            Orientation::BottomUp
        } else {
            Orientation::TopDown
        },
        order: if settings.stable_order {
            FlameOrder::Stable
        } else {
            FlameOrder::LeftHeavy
        },
        focus_path: f.focus_path.clone(),
        focus_node: f.focus_node,
        width_px: w,
        first_depth: (top / row_px).floor() as u32,
        rows: (f64::from(h) / row_px).ceil() as u32 + 1,
        highlight_search: app.page.highlight.source == HighlightSource::Search,
        selected: app.selected_id(),
        list_limit: LIST_LIMIT,
    })
}

/// Asks for the flame graph (when its tab is shown; else marks it stale).
pub fn request(app: &mut App) {
    if app.page.lens_tab != Tab::Flame {
        app.lenses.flame.stale = true;
        return;
    }
    let Some(q) = query(app) else {
        app.lenses.flame.stale = true;
        return;
    };
    app.lenses.flame.stale = false;
    app.lenses.flame.laid_size = app.lenses.flame.gl.as_ref().and_then(GlView::fit);
    if q.weight == FlameWeight::ByteTime {
        app.lenses.flame.axis = Some(q.axis);
    }
    ask(app, LensRequest::Flame(q));
}

/// The selection changed: find its node.
pub fn on_select(app: &mut App) {
    if let Some(gl) = app.lenses.flame.gl.as_mut() {
        gl.selected = NO_ID;
    }
    request(app);
}

/// A layout arrived.
pub fn on_answer(app: &mut App, a: FlameAnswer) {
    let clicked = std::mem::take(&mut app.lenses.flame.clicked);
    let node_ids: Option<Vec<u32>> = a.focus_allocations.as_ref().map(|n| n.ids.to_vec());
    {
        let f = &mut app.lenses.flame;
        f.answered = true;
        f.generation = a.generation;
        f.focus = a.focus;
        f.focus_path = a.focus_path.clone();
        f.focus_node = Some((a.focus, a.generation));
        f.breadcrumb = a.breadcrumb;
        f.labels = a.labels;
        f.aggregates = a.aggregates;
        f.max_depth = a.max_depth;
        f.unit = Some(a.unit);
        f.total_weight = a.total_weight;
        f.moment = a.moment;
        f.time_us = a.time_us;
        f.selected_path = a.selected_path;
        f.nodes = a.nodes;
        f.list = a.focus_allocations.map(
            |NodeAllocations {
                 count,
                 bytes,
                 largest,
                 ..
             }| { (count, bytes, largest) },
        );
        let strips = memscope_render::Strips::from(&a.strips);
        if let Some(gl) = f.gl.as_mut() {
            gl.set(None, strips, None);
            // The deepest node of the selection's path that is drawn.
            gl.selected = f
                .selected_path
                .iter()
                .rev()
                .copied()
                .find(|&n| gl.has(n))
                .unwrap_or(NO_ID);
        }
    }
    let spacer: HtmlElement = by_id("flame-spacer");
    let sticky: HtmlElement = by_id("flame-sticky");
    let all = f64::from(app.lenses.flame.max_depth + 1) * ROW_CSS;
    style(
        &spacer,
        "height",
        &format!(
            "{:.0}px",
            (all - f64::from(sticky.client_height())).max(0.0)
        ),
    );
    draw(app);
    render_chrome(app);
    if clicked {
        // A node's allocations, or the node's highlight taken back (a search's stays).
        app.dispatch(Msg::Highlight(match node_ids {
            Some(ids) => HighlightMsg::Set {
                ids: ids.into_iter().collect(),
                source: HighlightSource::Node,
            },
            None => HighlightMsg::Clear(HighlightSource::Node),
        }));
    }
}

/// Weight as text in the unit of the layout.
fn weight_text(unit: Option<FlameUnit>, w: f64) -> String {
    match unit {
        Some(FlameUnit::ByteMicros) => format!("{}·s", format_bytes((w / 1e6).round() as u64)),
        Some(FlameUnit::ByteEntries) => format!("{}·entries", format_bytes(w.round() as u64)),
        _ => format_bytes(w.round() as u64),
    }
}

/// Toolbar, caption, breadcrumb and the node's allocation list.
pub fn render_chrome(app: &App) {
    let f = &app.lenses.flame;
    let settings = app.page.flame;
    let pane: HtmlElement = by_id("lens-flame-pane");
    attr(
        &by_id::<HtmlElement>("flame-live"),
        "aria-pressed",
        bool_text(settings.weighting == Weighting::Live),
    );
    attr(
        &by_id::<HtmlElement>("flame-bytetime"),
        "aria-pressed",
        bool_text(settings.weighting == Weighting::ByteTime),
    );
    by_id::<HtmlElement>("flame-orientation").set_text_content(Some(if settings.bottom_up {
        "Bottom-up (who calls the allocator)"
    } else {
        "Top-down"
    }));
    by_id::<HtmlElement>("flame-order").set_text_content(Some(if settings.stable_order {
        "Stable order"
    } else {
        "Left-heavy"
    }));
    let caption: HtmlElement = by_id("flame-caption");
    let total = weight_text(f.unit, f.total_weight);
    let text = match (f.unit, f.moment) {
        (Some(FlameUnit::Bytes), Some(m)) => {
            let when = match f.time_us {
                Some(t) => format!("{} (entry #{})", format_duration_us(t), m.saturating_sub(1)),
                None => format!("moment {m}"),
            };
            let peak = app
                .lenses
                .overview
                .as_ref()
                .is_some_and(|o| o.peak_moment == m);
            format!(
                "{total} live at {when}{}",
                if peak { " — the peak" } else { "" }
            )
        }
        (Some(FlameUnit::ByteMicros), _) => {
            format!("bytes × lifetime: {total} in all (byte·seconds)")
        }
        (Some(FlameUnit::ByteEntries), _) => {
            format!("bytes × lifetime: {total} in all (byte·trace entries; no times)")
        }
        _ => String::new(),
    };
    caption.set_text_content(Some(&text));
    attr(&pane, "data-total", &format!("{}", f.total_weight));
    attr(
        &pane,
        "data-unit",
        match f.unit {
            Some(FlameUnit::Bytes) => "bytes",
            Some(FlameUnit::ByteMicros) => "byte-us",
            Some(FlameUnit::ByteEntries) => "byte-entries",
            None => "",
        },
    );
    attr(
        &pane,
        "data-moment",
        &f.moment.map_or(String::new(), |m| m.to_string()),
    );
    attr(&pane, "data-focus", &f.focus.to_string());
    attr(&pane, "data-nodes", &f.nodes.to_string());
    attr(
        &pane,
        "data-selected-node",
        &f.selected_path
            .last()
            .map_or(String::new(), |n| n.to_string()),
    );

    let crumbs: HtmlElement = by_id("flame-crumbs");
    clear(&crumbs);
    for (i, c) in f.breadcrumb.iter().enumerate() {
        if i > 0 {
            append(&crumbs, &el_text("span", "crumb-sep", "›"));
        }
        let b = el_text("button", "crumb", &c.label);
        attr(&b, "type", "button");
        attr(&b, "data-node", &c.node.to_string());
        attr(
            &b,
            "title",
            &format!(
                "{}{}{}",
                c.full_label,
                if c.full_label.is_empty() { "" } else { " — " },
                weight_text(f.unit, c.total)
            ),
        );
        if i + 1 == f.breadcrumb.len() {
            attr(&b, "aria-current", "true");
        }
        append(&crumbs, &b);
    }

    let list: HtmlElement = by_id("flame-node");
    clear(&list);
    match &f.list {
        None => {
            append(
                &list,
                &el_text(
                    "p",
                    "hint",
                    "Click a node to drill in and list its allocations; they are highlighted \
                     in every view.",
                ),
            );
        }
        Some((count, bytes, largest)) => {
            let label = f.breadcrumb.last().map_or("", |c| c.label.as_str());
            append(&list, &el_text("h3", "", label));
            let summary = el_text(
                "p",
                "hint",
                &format!(
                    "{} allocations, {} requested{}",
                    format_count(u64::from(*count)),
                    format_bytes(*bytes as u64),
                    if *count as usize > largest.len() {
                        format!(" — the {} largest:", largest.len())
                    } else {
                        ":".to_owned()
                    }
                ),
            );
            attr(&summary, "data-count", &count.to_string());
            append(&list, &summary);
            let ol = el("ol", "alloc-list");
            for it in largest {
                let li = el("li", "alloc-item");
                let b = el("button", "alloc-link");
                attr(&b, "type", "button");
                attr(&b, "data-id", &it.id.to_string());
                append(&b, &el_text("span", "alloc-id", &format!("#{}", it.id)));
                let size = el_text("span", "alloc-size", &format_bytes(it.size_bytes));
                attr(
                    &size,
                    "title",
                    &format!("{} bytes", format_count(it.size_bytes)),
                );
                append(&b, &size);
                if it.pending_free {
                    append(&b, &el_text("span", "lens-chip pending", "pending free"));
                }
                if it.id == app.selected_id() {
                    let _ = li.class_list().add_1("selected");
                }
                append(&li, &b);
                append(&ol, &li);
            }
            append(&list, &ol);
        }
    }
}

fn bool_text(b: bool) -> &'static str {
    if b {
        "true"
    } else {
        "false"
    }
}

/// The flame graph as drawn (the depths laid out, their labels), as an SVG figure.
pub fn figure(app: &App, title: &str, style: &Style, size: Size) -> Option<String> {
    let f = &app.lenses.flame;
    let strips = f.gl.as_ref()?.strips.as_ref()?;
    let plot = memscope_figures::plot::flame(title, strips, &f.labels, f.max_depth + 1);
    Some(memscope_figures::plot::svg(&plot, style, size))
}

/// Redraws the canvas and the labels.
pub fn draw(app: &mut App) {
    let scroll: HtmlElement = by_id("flame-scroll");
    let d = dpr();
    let row_px = ROW_CSS * d;
    let top = f64::from(scroll.scroll_top()) * d;
    let f = &mut app.lenses.flame;
    let Some(gl) = f.gl.as_mut() else { return };
    let Some((w, h)) = gl.fit() else { return };
    gl.draw(
        (0.0, f64::from(w)),
        (top / row_px, (top + f64::from(h)) / row_px),
    );
    let layer: HtmlElement = by_id("flame-labels");
    clear(&layer);
    for l in &f.labels {
        let y = (f64::from(l.depth) * row_px - top) / d;
        if y < -ROW_CSS || y > f64::from(h) / d {
            continue;
        }
        let span = el_text("span", "flame-label", &l.label);
        style(&span, "left", &format!("{:.1}px", f64::from(l.x0) / d));
        style(&span, "top", &format!("{y:.1}px"));
        style(
            &span,
            "width",
            &format!("{:.1}px", f64::from(l.x1 - l.x0) / d),
        );
        attr(&span, "data-node", &l.node.to_string());
        append(&layer, &span);
    }
}

/// Hover info arrived.
pub fn on_info(app: &mut App, info: Option<FlameNodeInfo>) {
    let hover: HtmlElement = by_id("flame-hover");
    let Some(n) = info else {
        dom::show(&hover, false);
        return;
    };
    let f = &app.lenses.flame;
    let share = if n.root_total > 0.0 {
        n.total / n.root_total * 100.0
    } else {
        0.0
    };
    let text = format!(
        "{}\n{}{} ({share:.1}% of all), self {}\n{} allocations — click to drill in",
        n.label,
        if n.full_label.is_empty() {
            String::new()
        } else {
            format!("{}\n", n.full_label)
        },
        weight_text(f.unit, n.total),
        weight_text(f.unit, n.self_weight),
        format_count(u64::from(n.allocations))
    );
    show_hover(&hover, f.hover_at, &text);
}

fn show_hover(hover: &HtmlElement, at: (f64, f64), text: &str) {
    hover.set_text_content(Some(text));
    let sticky: HtmlElement = by_id("flame-sticky");
    dom::show_tooltip(hover, &sticky, at.0, at.1);
}

/// The node (or aggregate instance) under a client point.
fn hit(app: &App, cx: f64, cy: f64) -> Option<(usize, u32)> {
    let gl = app.lenses.flame.gl.as_ref()?;
    let r = gl.canvas().get_bounding_client_rect();
    let d = dpr();
    let scroll: HtmlElement = by_id("flame-scroll");
    let x = (cx - r.left()) * d;
    let y = (f64::from(scroll.scroll_top()) + cy - r.top()) / ROW_CSS;
    gl.hit(x, y)
}

/// Drills into `node` of the current tree.
fn focus(app: &mut App, node: u32) {
    let f = &mut app.lenses.flame;
    f.focus_node = Some((node, f.generation));
    f.clicked = true;
    let scroll: HtmlElement = by_id("flame-scroll");
    scroll.set_scroll_top(0);
    request(app);
}

/// Wires the toolbar, the canvas and the lists.
pub fn wire(app: &Shared) {
    match GlView::new("flame-canvas") {
        Ok(gl) => app.borrow_mut().lenses.flame.gl = Some(gl),
        Err(e) => by_id::<HtmlElement>("flame-caption")
            .set_text_content(Some(&format!("The flame graph cannot draw here: {e}."))),
    }
    let setting = |app: &Shared, id: &str, msg: FlameMsg| {
        on_click(app, id, move |a| a.dispatch(Msg::Flame(msg)));
    };
    setting(app, "flame-live", FlameMsg::Weigh(Weighting::Live));
    setting(app, "flame-bytetime", FlameMsg::Weigh(Weighting::ByteTime));
    setting(app, "flame-peak", FlameMsg::LiveAtPeak);
    setting(app, "flame-orientation", FlameMsg::FlipOrientation);
    setting(app, "flame-order", FlameMsg::FlipOrder);
    let crumbs = by_id::<HtmlElement>("flame-crumbs");
    route(app, &crumbs, "click", |a, e: MouseEvent| {
        crumb_clicked(a, &e)
    });
    let node = by_id::<HtmlElement>("flame-node");
    route(app, &node, "click", |a, e: MouseEvent| {
        allocation_clicked(a, &e)
    });
    let scroll = by_id::<HtmlElement>("flame-scroll");
    route(app, &scroll, "scroll", |a, _: Event| scrolled(a));
    let Some(canvas) = app
        .borrow()
        .lenses
        .flame
        .gl
        .as_ref()
        .map(|g| g.canvas().clone())
    else {
        return;
    };
    route(app, &canvas, "click", |a, e: MouseEvent| {
        canvas_clicked(a, &e)
    });
    route(app, &canvas, "mousemove", |a, e: MouseEvent| hovered(a, &e));
    route(app, &canvas, "mouseleave", |a, _: MouseEvent| left(a));
}

/// The orientation changed: paths differ between orientations, so the focus goes back
/// to the root (before the new layout is asked for).
pub fn to_root(a: &mut App) {
    let f = &mut a.lenses.flame;
    f.focus_path.clear();
    f.focus_node = None;
    f.clicked = true;
}

/// A click on a breadcrumb: focus its node.
fn crumb_clicked(a: &mut App, e: &MouseEvent) {
    if let Some(node) = target_data(e, "data-node") {
        focus(a, node);
    }
}

/// A click on an allocation listed for the hovered node: select it and bring it
/// into view.
fn allocation_clicked(a: &mut App, e: &MouseEvent) {
    if let Some(id) = target_data(e, "data-id") {
        select_and_reveal(a, id, true);
    }
}

/// The graph scrolled: draw it and ask for the depths now in view.
fn scrolled(a: &mut App) {
    draw(a);
    request(a);
}

/// A click on the canvas: focus the node under it (not an aggregate).
fn canvas_clicked(a: &mut App, e: &MouseEvent) {
    match hit(a, f64::from(e.client_x()), f64::from(e.client_y())) {
        Some((_, node)) if node != AGGREGATE_ID => focus(a, node),
        _ => {}
    }
}

/// The pointer moved over the canvas: outline the node under it and ask for its
/// figures, or describe the aggregate under it.
fn hovered(a: &mut App, e: &MouseEvent) {
    let (cx, cy) = (f64::from(e.client_x()), f64::from(e.client_y()));
    a.lenses.flame.hover_at = (cx, cy);
    let hover: HtmlElement = by_id("flame-hover");
    let node = match hit(a, cx, cy) {
        Some((_, node)) if node != AGGREGATE_ID => node,
        Some((i, _)) => {
            let f = &a.lenses.flame;
            if let Some(g) = f.aggregates.iter().find(|g| g.instance as usize == i) {
                let text = format!(
                    "{} nodes narrower than a pixel, {}",
                    format_count(u64::from(g.nodes)),
                    weight_text(f.unit, g.weight)
                );
                show_hover(&hover, f.hover_at, &text);
            }
            NO_ID
        }
        None => {
            dom::show(&hover, false);
            NO_ID
        }
    };
    let Some(gl) = a.lenses.flame.gl.as_mut() else {
        return;
    };
    if gl.hovered == node {
        return;
    }
    gl.hovered = node;
    draw(a);
    if node == NO_ID {
        return;
    }
    if let Some(q) = query(a) {
        let generation = a.lenses.flame.generation;
        ask(
            a,
            LensRequest::FlameInfo {
                node,
                generation,
                query: q,
            },
        );
    }
}

/// The pointer left the canvas: hide the readout and the outline.
fn left(a: &mut App) {
    dom::show(&by_id("flame-hover"), false);
    if let Some(gl) = a.lenses.flame.gl.as_mut() {
        gl.hovered = NO_ID;
    }
    draw(a);
}

/// A numeric data attribute of the clicked element or an ancestor.
fn target_data(e: &MouseEvent, name: &str) -> Option<u32> {
    event_data(e, &format!("[{name}]"), name)
}

/// Facts for `window.memscope.lenses()`.
pub fn expose(app: &App, out: &js_sys::Object) {
    let f = &app.lenses.flame;
    let o = js_sys::Object::new();
    let set = |k: &str, v: wasm_bindgen::JsValue| {
        let _ = js_sys::Reflect::set(&o, &k.into(), &v);
    };
    set("total", f.total_weight.into());
    set("focus", f.focus.into());
    set("nodes", f.nodes.into());
    set(
        "moment",
        f.moment.map_or(wasm_bindgen::JsValue::NULL, |m| m.into()),
    );
    set(
        "instances",
        (f.gl
            .as_ref()
            .and_then(|g| g.strips.as_ref())
            .map_or(0, |s| s.len()) as u32)
            .into(),
    );
    let crumbs = js_sys::Array::new();
    for c in &f.breadcrumb {
        crumbs.push(&c.label.clone().into());
    }
    set("breadcrumb", crumbs.into());
    set(
        "listed",
        f.list
            .as_ref()
            .map_or(wasm_bindgen::JsValue::NULL, |(n, _, _)| (*n).into()),
    );
    let _ = js_sys::Reflect::set(out, &"flame".into(), &o);
}

/// Client coordinates of the middle of node `node`'s rect, if drawn (for tests).
pub fn locate(app: &App, node: u32) -> Option<(f64, f64)> {
    let gl = app.lenses.flame.gl.as_ref()?;
    let s = gl.strips.as_ref()?;
    let i = (0..s.len()).find(|&i| s.ids[i] == node)?;
    let r = s.rect_data(i);
    let rect = gl.canvas().get_bounding_client_rect();
    let scroll: HtmlElement = by_id("flame-scroll");
    let d = dpr();
    let x = rect.left() + (r[0] + r[1]) / 2.0 / d;
    let y = rect.top() + ((r[2] + r[3]) / 2.0) * ROW_CSS - f64::from(scroll.scroll_top());
    Some((x, y))
}
