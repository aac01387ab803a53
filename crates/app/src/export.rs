//! Exports: the memory timeline as SVG (vector: rectangles, lines, axes and labels as
//! text, at a chosen size) or PNG (the same drawing rasterised), and the loaded ranks'
//! summaries as CSV or JSON (the fields of `memscope summary --json`), the fleet's
//! anomalies as JSON. Everything is generated in the page and downloaded; nothing leaves
//! the machine.

use std::fmt::Write as _;

use memscope_protocol::Axis;
use memscope_render::palette::{channels, overlay_color, Theme};
use memscope_render::{is_aggregate, palette, ticks_bytes, ticks_events, ticks_time};
use memscope_snapshot::units::format_bytes;
use memscope_snapshot::DeviceSummary;
use wasm_bindgen::closure::Closure;
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;
use web_sys::{HtmlAnchorElement, HtmlCanvasElement, HtmlImageElement};

use crate::app::{App, RankState};
use crate::dom;

fn hex(color: u32) -> (String, f64) {
    let [r, g, b, a] = channels(color);
    (format!("#{r:02x}{g:02x}{b:02x}"), f64::from(a) / 255.0)
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// The memory timeline of the active device as an SVG document of `width` × `height`
/// pixels (the plot, its axes, title, peak marker and legend), or `None` when nothing is
/// shown.
pub fn timeline_svg(app: &App, width: u32, height: u32) -> Option<String> {
    let t = app.timeline.as_ref()?;
    let shown = t.shown.as_ref()?;
    let (key, device) = app.active?;
    let name = app.ranks.iter().find(|r| r.key == key)?.name.clone();
    let dark = dom::document()
        .document_element()
        .is_some_and(|e| e.get_attribute("data-theme").as_deref() == Some("dark"));
    let (bg, fg, muted) = if dark {
        ("#17191e", "#e6e8ec", "#9aa1ad")
    } else {
        ("#ffffff", "#1d2129", "#5f6673")
    };
    let legend_rows = shown.legend.len().div_ceil(2).min(6) as f64;
    let (w, h) = (f64::from(width.max(200)), f64::from(height.max(150)));
    let (left, right, top) = (78.0, 16.0, 34.0);
    let bottom = 34.0 + legend_rows * 16.0;
    let (pw, ph) = ((w - left - right).max(10.0), (h - top - bottom).max(10.0));
    let v = app.page.window;
    let sx = |x: f64| left + (x - v.x0) / (v.x1 - v.x0) * pw;
    let sy = |y: f64| top + (1.0 - (y - v.y0) / (v.y1 - v.y0)) * ph;
    let mut out = String::new();
    let _ = writeln!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" font-family="system-ui, sans-serif" font-size="11">"#
    );
    let _ = writeln!(out, r#"<rect width="{w}" height="{h}" fill="{bg}"/>"#);
    let _ = writeln!(
        out,
        r#"<text x="{left}" y="20" font-size="14" font-weight="600" fill="{fg}">{} — device {device}</text>"#,
        escape(&name)
    );
    let _ = writeln!(
        out,
        r#"<clipPath id="plot"><rect x="{left}" y="{top}" width="{pw}" height="{ph}"/></clipPath>"#
    );
    // Bands, grouped by colour: one element per rectangle, clipped to the plot.
    let s = &shown.strips;
    let _ = writeln!(
        out,
        r#"<g clip-path="url(#plot)" shape-rendering="crispEdges">"#
    );
    let mut order: Vec<usize> = (0..s.len()).collect();
    // As on screen: mixed (grey) aggregates, then those of one call site, then bands.
    let class = |i: usize| match (is_aggregate(s.ids[i]), s.colors[i] == palette::AGGREGATE) {
        (true, true) => 0,
        (true, false) => 1,
        (false, _) => 2,
    };
    order.sort_by_key(|&i| (class(i), s.colors[i]));
    let mut current = None;
    for i in order {
        let [x0, x1, y0, y1] = s.rect_data(i);
        if x1 < v.x0 || x0 > v.x1 || y1 < v.y0 || y0 > v.y1 {
            continue;
        }
        if current != Some(s.colors[i]) {
            if current.is_some() {
                out.push_str("</g>\n");
            }
            let (fill, alpha) = hex(s.colors[i]);
            let _ = write!(out, r#"<g fill="{fill}" fill-opacity="{alpha:.3}">"#);
            current = Some(s.colors[i]);
        }
        let (px0, px1) = (sx(x0.max(v.x0)), sx(x1.min(v.x1)));
        let (py0, py1) = (sy(y1.min(v.y1)), sy(y0.max(v.y0)));
        let _ = write!(
            out,
            r#"<rect x="{:.2}" y="{:.2}" width="{:.2}" height="{:.2}"/>"#,
            px0,
            py0,
            (px1 - px0).max(0.5),
            (py1 - py0).max(0.5)
        );
    }
    if current.is_some() {
        out.push_str("</g>\n");
    }
    // Overlay lines (allocated outline, reserved bytes).
    let theme = if dark { Theme::Dark } else { Theme::Light };
    for strip in &s.line_strips {
        let (stroke, alpha) = hex(overlay_color(strip.kind, theme));
        let mut points = String::new();
        for k in strip.first..strip.first + strip.count {
            let (x, y) = (s.lines[2 * k as usize], s.lines[2 * k as usize + 1]);
            let _ = write!(
                points,
                "{:.2},{:.2} ",
                sx(s.origin_x + f64::from(x)),
                sy(s.origin_y + f64::from(y))
            );
        }
        let _ = writeln!(
            out,
            r#"<polyline points="{}" fill="none" stroke="{stroke}" stroke-opacity="{alpha:.3}" stroke-width="1"/>"#,
            points.trim_end()
        );
    }
    out.push_str("</g>\n");
    // Axes.
    let _ = writeln!(
        out,
        r#"<rect x="{left}" y="{top}" width="{pw}" height="{ph}" fill="none" stroke="{muted}"/>"#
    );
    for (value, label) in ticks_bytes(v.y0, v.y1, 6) {
        let y = sy(value);
        let _ = writeln!(
            out,
            r#"<line x1="{:.1}" x2="{left}" y1="{y:.2}" y2="{y:.2}" stroke="{muted}"/><text x="{:.1}" y="{:.2}" text-anchor="end" fill="{muted}">{}</text>"#,
            left - 4.0,
            left - 6.0,
            y + 4.0,
            escape(&label)
        );
    }
    let x_ticks = match v.axis {
        Axis::Time => ticks_time(v.x0.max(0.0), v.x1, 8),
        Axis::Events => ticks_events(v.x0.max(0.0), v.x1, 8),
    };
    for (value, label) in x_ticks {
        let x = sx(value);
        if x < left || x > left + pw {
            continue;
        }
        let _ = writeln!(
            out,
            r#"<line x1="{x:.2}" x2="{x:.2}" y1="{}" y2="{:.1}" stroke="{muted}"/><text x="{x:.2}" y="{:.1}" text-anchor="middle" fill="{muted}">{}</text>"#,
            top + ph,
            top + ph + 4.0,
            top + ph + 16.0,
            escape(&label)
        );
    }
    let axis_name = match v.axis {
        Axis::Time => "time since the trace start",
        Axis::Events => "trace entries",
    };
    let _ = writeln!(
        out,
        r#"<text x="{:.1}" y="{:.1}" text-anchor="end" fill="{muted}">{axis_name}</text>"#,
        left + pw,
        top + ph + 28.0
    );
    // The peak.
    let (px, pb) = shown.peak;
    if px >= v.x0 && px <= v.x1 {
        let (x, y) = (sx(px), sy(pb.min(v.y1)));
        let _ = writeln!(
            out,
            r#"<circle cx="{x:.2}" cy="{y:.2}" r="3" fill="{fg}"/><text x="{x:.2}" y="{:.2}" text-anchor="middle" fill="{fg}">peak {}</text>"#,
            y - 6.0,
            format_bytes(pb as u64)
        );
    }
    // Legend, two columns.
    let legend_top = top + ph + 40.0;
    for (n, entry) in shown.legend.iter().take(12).enumerate() {
        let (fill, _) = hex(entry.color);
        let x = left + (n % 2) as f64 * (pw / 2.0);
        let y = legend_top + (n / 2) as f64 * 16.0;
        let _ = writeln!(
            out,
            r#"<rect x="{x:.1}" y="{:.1}" width="10" height="10" fill="{fill}"/><text x="{:.1}" y="{y:.1}" fill="{fg}">{} — {}</text>"#,
            y - 9.0,
            x + 14.0,
            escape(&entry.label),
            format_bytes(entry.bytes as u64)
        );
    }
    out.push_str("</svg>\n");
    Some(out)
}

/// The loaded (file, device) summaries.
pub fn summaries(app: &App) -> Vec<DeviceSummary> {
    app.ranks
        .iter()
        .filter_map(|r| match &r.state {
            RankState::Ready(info) => Some(info.devices.iter().map(|d| d.summary.clone())),
            _ => None,
        })
        .flatten()
        .collect()
}

/// One CSV field, quoted when needed (RFC 4180).
fn csv_field(text: &str) -> String {
    if text.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text.to_owned()
    }
}

/// A CSV document from a header and rows.
pub fn csv(header: &[&str], rows: &[Vec<String>]) -> String {
    let mut out = header
        .iter()
        .map(|h| csv_field(h))
        .collect::<Vec<_>>()
        .join(",");
    out.push_str("\r\n");
    for row in rows {
        out.push_str(
            &row.iter()
                .map(|f| csv_field(f))
                .collect::<Vec<_>>()
                .join(","),
        );
        out.push_str("\r\n");
    }
    out
}

/// The summaries as CSV, one row per (file, device), the CLI's JSON fields as columns.
pub fn summaries_csv(app: &App) -> String {
    let header = [
        "file",
        "rank",
        "device",
        "events",
        "segments",
        "reserved_bytes",
        "allocated_bytes",
        "requested_bytes",
        "peak_allocated_bytes",
        "peak_reserved_bytes",
        "first_time_us",
        "last_time_us",
        "unique_frames",
        "unique_stacks",
    ];
    let opt = |v: Option<i64>| v.map_or(String::new(), |v| v.to_string());
    let rows: Vec<Vec<String>> = summaries(app)
        .iter()
        .map(|s| {
            vec![
                s.file.clone(),
                s.rank.map_or(String::new(), |r| r.to_string()),
                s.device.to_string(),
                s.events.to_string(),
                s.segments.to_string(),
                s.reserved_bytes.to_string(),
                s.allocated_bytes.to_string(),
                s.requested_bytes.to_string(),
                s.peak_allocated_bytes.to_string(),
                s.peak_reserved_bytes.to_string(),
                opt(s.first_time_us),
                opt(s.last_time_us),
                s.unique_frames.to_string(),
                s.unique_stacks.to_string(),
            ]
        })
        .collect();
    csv(&header, &rows)
}

/// The summaries as JSON lines, exactly as `memscope summary --json` prints them.
pub fn summaries_json(app: &App) -> String {
    summaries(app).iter().filter_map(serde_json_line).collect()
}

fn serde_json_line<T: serde::Serialize>(value: &T) -> Option<String> {
    // Maps as plain objects, as JSON has them.
    let js = value
        .serialize(&serde_wasm_bindgen::Serializer::json_compatible())
        .ok()?;
    let text = js_sys::JSON::stringify(&js).ok()?;
    Some(format!("{}\n", String::from(text)))
}

/// Downloads `content` as a file named `name`.
pub fn download(name: &str, mime: &str, content: &JsValue) -> Result<(), JsValue> {
    let parts = js_sys::Array::of1(content);
    let options = web_sys::BlobPropertyBag::new();
    options.set_type(mime);
    let blob = web_sys::Blob::new_with_str_sequence_and_options(&parts, &options)?;
    download_blob(name, &blob)
}

fn download_blob(name: &str, blob: &web_sys::Blob) -> Result<(), JsValue> {
    let url = web_sys::Url::create_object_url_with_blob(blob)?;
    let a: HtmlAnchorElement = dom::document().create_element("a")?.unchecked_into();
    a.set_href(&url);
    a.set_download(name);
    a.click();
    // Revoke once the download has started.
    let revoke = Closure::once_into_js(move || {
        let _ = web_sys::Url::revoke_object_url(&url);
    });
    let _ = dom::window()
        .set_timeout_with_callback_and_timeout_and_arguments_0(revoke.unchecked_ref(), 10_000);
    Ok(())
}

/// Rasterises an SVG document to a PNG of `width` × `height` and downloads it.
pub async fn download_png(
    name: String,
    svg: String,
    width: u32,
    height: u32,
) -> Result<(), JsValue> {
    let parts = js_sys::Array::of1(&svg.into());
    let options = web_sys::BlobPropertyBag::new();
    options.set_type("image/svg+xml");
    let blob = web_sys::Blob::new_with_str_sequence_and_options(&parts, &options)?;
    let url = web_sys::Url::create_object_url_with_blob(&blob)?;
    let image = HtmlImageElement::new()?;
    let loaded = js_sys::Promise::new(&mut |resolve, reject| {
        image.set_onload(Some(&resolve));
        image.set_onerror(Some(&reject));
    });
    image.set_src(&url);
    JsFuture::from(loaded).await?;
    let canvas: HtmlCanvasElement = dom::document().create_element("canvas")?.unchecked_into();
    canvas.set_width(width);
    canvas.set_height(height);
    let context: web_sys::CanvasRenderingContext2d = canvas
        .get_context("2d")?
        .ok_or_else(|| JsValue::from_str("no 2D canvas"))?
        .unchecked_into();
    context.draw_image_with_html_image_element_and_dw_and_dh(
        &image,
        0.0,
        0.0,
        f64::from(width),
        f64::from(height),
    )?;
    web_sys::Url::revoke_object_url(&url)?;
    let png = JsFuture::from(js_sys::Promise::new(&mut |resolve, _reject| {
        let _ = canvas.to_blob(&resolve);
    }))
    .await?;
    download_blob(&name, &png.unchecked_into())
}

/// The export dialog's choice.
fn selected_format() -> String {
    dom::by_id::<web_sys::HtmlSelectElement>("export-format").value()
}

fn size_input(id: &str, default: u32) -> u32 {
    dom::by_id::<web_sys::HtmlInputElement>(id)
        .value()
        .parse::<u32>()
        .ok()
        .filter(|v| (100..=8000).contains(v))
        .unwrap_or(default)
}

/// Runs the export chosen in the dialog.
fn export(app: &crate::app::Shared) {
    let format = selected_format();
    let (width, height) = (
        size_input("export-width", 1600),
        size_input("export-height", 900),
    );
    let app_ref = app.borrow();
    let base = app_ref
        .active
        .and_then(|(key, device)| {
            let rank = app_ref.ranks.iter().find(|r| r.key == key)?;
            let stem = rank.name.split('.').next().unwrap_or("memscope");
            Some(format!("{stem}-device{device}"))
        })
        .unwrap_or_else(|| "memscope".to_owned());
    let result = match format.as_str() {
        "svg" => match timeline_svg(&app_ref, width, height) {
            Some(svg) => download(&format!("{base}.svg"), "image/svg+xml", &svg.into()),
            None => Err("nothing is shown".into()),
        },
        "png" => match timeline_svg(&app_ref, width, height) {
            Some(svg) => {
                let name = format!("{base}.png");
                wasm_bindgen_futures::spawn_local(async move {
                    if let Err(e) = download_png(name, svg, width, height).await {
                        web_sys::console::error_2(&"memscope: PNG export failed".into(), &e);
                    }
                });
                Ok(())
            }
            None => Err("nothing is shown".into()),
        },
        "csv" => download(
            "memscope-summaries.csv",
            "text/csv",
            &summaries_csv(&app_ref).into(),
        ),
        _ => download(
            "memscope-summaries.jsonl",
            "application/json",
            &summaries_json(&app_ref).into(),
        ),
    };
    let status: web_sys::HtmlElement = dom::by_id("export-status");
    match result {
        Ok(()) => status.set_text_content(Some("")),
        Err(e) => status.set_text_content(Some(&format!(
            "Could not export: {}",
            e.as_string().unwrap_or_default()
        ))),
    }
}

/// Wires the export dialog.
pub fn install(app: &crate::app::Shared) {
    let dialog: web_sys::HtmlElement = dom::by_id("export-dialog");
    {
        let dialog = dialog.clone();
        dom::on(
            &dom::by_id::<web_sys::HtmlElement>("export-open"),
            "click",
            move |_: web_sys::Event| {
                dom::show(&dialog, dialog.hidden());
            },
        );
    }
    {
        let dialog = dialog.clone();
        dom::on(
            &dom::by_id::<web_sys::HtmlElement>("export-close"),
            "click",
            move |_: web_sys::Event| {
                dom::show(&dialog, false);
            },
        );
    }
    let app = app.clone();
    dom::on(
        &dom::by_id::<web_sys::HtmlElement>("export-go"),
        "click",
        move |_: web_sys::Event| {
            export(&app);
        },
    );
}
