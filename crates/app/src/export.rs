//! Exports: every figure as SVG (vector: rectangles, lines, axes and labels as text, at
//! a chosen size; made by [`crate::figures`]) or PNG (the same drawing rasterised at the
//! chosen size × pixel density); the loaded ranks' summaries as CSV or JSON lines (the
//! fields of `memscope summary --json`); the anomalies as JSON lines (those of
//! `memscope anomalies --json`, with the file's warnings); every table as CSV, through
//! one writer (`memscope_analysis::csv`): the shown device's top allocations (as
//! sorted and filtered) and event list, written whole by its worker; its allocator
//! settings (and their `roundup_power2_divisions` table), its segments at the moment and its what-if table, and the fleet view's
//! ranks overview and comparison by call site (as sorted and filtered), written from
//! what the page shows. Downloads are named by the file's path relative
//! to what was opened (`memscope_page::names`), and each is confirmed in the dialog's
//! status line. Everything is generated in the page and downloaded; nothing leaves the
//! machine.

use memscope_snapshot::DeviceSummary;
use wasm_bindgen::closure::Closure;
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;
use web_sys::{HtmlAnchorElement, HtmlCanvasElement, HtmlImageElement};

use memscope_protocol::lens::{CsvAnswer, CsvTable};

use crate::app::App;
use crate::dom;
use crate::input::{on_click, route};

/// The loaded (file, device) summaries.
pub fn summaries(app: &App) -> Vec<DeviceSummary> {
    app.page
        .ranks
        .iter()
        .filter_map(|r| app.info(r.key))
        .flat_map(|info| info.devices.iter().map(|d| d.summary.clone()))
        .collect()
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
    use memscope_analysis::csv::optional;
    let rows: Vec<Vec<String>> = summaries(app)
        .iter()
        .map(|s| {
            vec![
                s.file.clone(),
                optional(s.rank),
                s.device.to_string(),
                s.events.to_string(),
                s.segments.to_string(),
                s.reserved_bytes.to_string(),
                s.allocated_bytes.to_string(),
                s.requested_bytes.to_string(),
                s.peak_allocated_bytes.to_string(),
                s.peak_reserved_bytes.to_string(),
                optional(s.first_time_us),
                optional(s.last_time_us),
                s.unique_frames.to_string(),
                s.unique_stacks.to_string(),
            ]
        })
        .collect();
    memscope_analysis::csv::document(&header, &rows)
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

/// The anomalies as JSON lines, as `memscope anomalies --json` prints them, each with
/// the warnings of its file (as the page lists them), and how many; why not while
/// ranks are still being examined ([`crate::fleet::combined_all`]: the file would leave
/// them out) or before any rank was opened.
pub fn anomalies_json(app: &App) -> Result<(String, usize), String> {
    #[derive(serde::Serialize)]
    struct Line<'a> {
        #[serde(flatten)]
        anomaly: &'a memscope_fleet::Anomaly,
        warnings: &'a [String],
    }
    let combined = match crate::fleet::combined_all(app) {
        Ok(Some(combined)) => combined,
        Ok(None) => return Err("Could not export: no rank is loaded yet".to_owned()),
        Err(examining) => return Err(examining.refusal(app.files_noun()).unwrap_or_default()),
    };
    let anomalies = &combined.report.anomalies;
    let text = anomalies
        .iter()
        .filter_map(|a| {
            let warnings = combined
                .key_of(&a.id)
                .and_then(|(key, _)| app.info(key))
                .map(|info| info.warnings.as_slice())
                .unwrap_or(&[]);
            serde_json_line(&Line {
                anomaly: a,
                warnings,
            })
        })
        .collect();
    Ok((text, anomalies.len()))
}

/// `n` things in words, singular for one ("1 anomaly", "2,081 trace entries").
fn counted(n: u64, one: &str, many: &str) -> String {
    let noun = if n == 1 { one } else { many };
    format!("{} {noun}", memscope_snapshot::units::format_count(n))
}

/// Says in the dialog's status line what was saved.
fn saved(name: &str, what: &str, bytes: usize) {
    set_status(&format!(
        "Saved {name}: {what}, {}",
        memscope_snapshot::units::format_bytes(bytes as u64)
    ));
}

fn set_status(text: &str) {
    dom::by_id::<web_sys::HtmlElement>("export-status").set_text_content(Some(text));
}

/// Downloads `text` as `name` and confirms it in the status line.
fn download_text(name: &str, mime: &str, text: String, what: &str) -> Result<(), JsValue> {
    let bytes = text.len();
    download(name, mime, &text.into())?;
    saved(name, what, bytes);
    Ok(())
}

/// A table the shown device's worker wrote as CSV: download it.
pub fn on_csv(app: &App, answer: CsvAnswer) {
    let (suffix, one, many) = match answer.table {
        CsvTable::TopAllocations { .. } => ("top-allocations", "allocation", "allocations"),
        CsvTable::Events => ("events", "trace entry", "trace entries"),
    };
    let name = format!("{}-{suffix}.csv", base_name(app));
    let rows = counted(answer.rows, one, many);
    if let Err(e) = download_text(&name, "text/csv", answer.text, &rows) {
        set_status(&format!(
            "Could not export: {}",
            e.as_string().unwrap_or_default()
        ));
    }
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

/// The pixel density chosen for PNG (1 to 4; anything else is 1).
fn density_input() -> u32 {
    dom::by_id::<web_sys::HtmlInputElement>("export-density")
        .value()
        .parse::<u32>()
        .ok()
        .filter(|v| (1..=4).contains(v))
        .unwrap_or(1)
}

/// Exports the figure chosen in the dialog as SVG, or as PNG of `size` × `density`.
fn export_figure(app: &App, png: bool, size: memscope_figures::Size) -> Result<(), JsValue> {
    let figure = crate::figures::Figure::from_name(
        &dom::by_id::<web_sys::HtmlSelectElement>("export-figure").value(),
    );
    let print = dom::by_id::<web_sys::HtmlInputElement>("export-print").checked();
    let svg = crate::figures::svg(app, figure, crate::figures::look(print), size)?;
    let stem = crate::figures::file_stem(app, figure);
    if !png {
        return download_text(&format!("{stem}.svg"), "image/svg+xml", svg, "SVG figure");
    }
    let density = density_input();
    let (width, height) = (size.width_px * density, size.height_px * density);
    let name = format!("{stem}.png");
    set_status(&format!("Drawing {name}…"));
    wasm_bindgen_futures::spawn_local(async move {
        match download_png(name.clone(), svg, width, height).await {
            Ok(()) => set_status(&format!("Saved {name}: PNG figure, {width} × {height} px")),
            Err(e) => {
                web_sys::console::error_2(&"memscope: PNG export failed".into(), &e);
                set_status("Could not export: the browser could not draw the PNG");
            }
        }
    });
    Ok(())
}

/// The downloaded file's name without extension: the shown rank (by its path
/// relative to what was opened) and device.
fn base_name(app: &App) -> String {
    app.page
        .shown
        .and_then(|(key, device)| {
            let rank = app.page.ranks.get(key)?;
            Some(memscope_page::names::download_stem(&rank.name, device))
        })
        .unwrap_or_else(|| "memscope".to_owned())
}

/// A table the page shows written as CSV from what it holds (the dialog's `format`):
/// the file's name, its text and what it holds in words; why it cannot be written
/// now; `None` for a format that is no such table.
fn shown_table_csv(
    app: &App,
    format: &str,
) -> Option<Result<(String, String, String), &'static str>> {
    const NO_DEVICE: &str = "open a device first";
    // The settings and the state come with the device's first answers.
    let not_yet = if app.page.shown.is_some() {
        "the shown device is still loading"
    } else {
        NO_DEVICE
    };
    let device = |suffix: &str| format!("{}-{suffix}.csv", base_name(app));
    Some(match format {
        "settings-csv" => crate::lenses::settings_csv(app)
            .map(|(text, n)| {
                let what = counted(n as u64, "setting", "settings");
                (device("allocator-settings"), text, what)
            })
            .ok_or(not_yet),
        "roundup-csv" => crate::lenses::roundup_csv(app)
            .map(|(text, n)| {
                let what = counted(n as u64, "size interval", "size intervals");
                (device("roundup-power2-divisions"), text, what)
            })
            .ok_or(not_yet),
        "state-csv" => crate::lenses::state_csv(app)
            .map(|(moment, text, n)| {
                let what = format!(
                    "{} at moment {}",
                    counted(n as u64, "segment", "segments"),
                    memscope_snapshot::units::format_count(u64::from(moment))
                );
                (
                    device(&format!("allocator-state-moment{moment}")),
                    text,
                    what,
                )
            })
            .ok_or(not_yet),
        "whatif-csv" if app.page.shown.is_none() => Err(NO_DEVICE),
        "whatif-csv" => crate::lenses::whatif_csv(app).map(|(text, n)| {
            let what = counted(n as u64, "configuration", "configurations");
            (device("what-if"), text, what)
        }),
        "ranks-csv" => crate::fleet::overview_csv(app)
            .map(|(text, n)| {
                let what = counted(n as u64, "rank row", "rank rows");
                ("memscope-ranks.csv".to_owned(), text, what)
            })
            .ok_or("no rank is loaded yet"),
        "compare-csv" => crate::fleet::compare_csv(app)
            .map(|(stem, text, n)| {
                let what = counted(n as u64, "call site", "call sites");
                (format!("{stem}-compare-sites.csv"), text, what)
            })
            .ok_or("compare two ranks first (All ranks, Compare two ranks)"),
        _ => return None,
    })
}

/// Runs the export chosen in the dialog.
fn export(app: &crate::app::Shared) {
    let format = selected_format();
    if format == "html" {
        crate::export_html::prepare(&mut app.borrow_mut());
        return;
    }
    let size = memscope_figures::Size::new(
        size_input("export-width", 1600),
        size_input("export-height", 900),
    );
    let mut app_ref = app.borrow_mut();
    let csv_table = match format.as_str() {
        "top-csv" => crate::lenses::top_allocations_csv(&app_ref),
        "events-csv" => Some(CsvTable::Events),
        _ => None,
    };
    let result = match format.as_str() {
        "svg" => export_figure(&app_ref, false, size),
        "png" => export_figure(&app_ref, true, size),
        "csv" | "json" => {
            let n = summaries(&app_ref).len();
            let (name, mime, text) = if format == "csv" {
                (
                    "memscope-summaries.csv",
                    "text/csv",
                    summaries_csv(&app_ref),
                )
            } else {
                (
                    "memscope-summaries.jsonl",
                    "application/json",
                    summaries_json(&app_ref),
                )
            };
            download_text(
                name,
                mime,
                text,
                &counted(n as u64, "rank summary", "rank summaries"),
            )
        }
        "anomalies" => match anomalies_json(&app_ref) {
            Ok((text, n)) => download_text(
                "memscope-anomalies.jsonl",
                "application/json",
                text,
                &counted(n as u64, "anomaly", "anomalies"),
            ),
            Err(why) => {
                set_status(&why);
                Ok(())
            }
        },
        "top-csv" | "events-csv" => match csv_table {
            Some(table) if app_ref.page.shown.is_some() => {
                set_status("Writing the table…");
                crate::lenses::ask_csv(&mut app_ref, table);
                Ok(())
            }
            _ => Err(JsValue::from_str("open a device first")),
        },
        other => match shown_table_csv(&app_ref, other) {
            Some(Ok((name, text, what))) => download_text(&name, "text/csv", text, &what),
            Some(Err(why)) => Err(JsValue::from_str(why)),
            None => Err(JsValue::from_str(&format!("unknown export {other:?}"))),
        },
    };
    if let Err(e) = result {
        set_status(&format!(
            "Could not export: {}",
            e.as_string().unwrap_or_default()
        ));
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
    // One HTML file (export_html.rs): its options, and saving once it is made.
    route(
        app,
        &dom::by_id::<web_sys::HtmlElement>("export-format"),
        "change",
        |a, _: web_sys::Event| crate::export_html::format_changed(a, &selected_format()),
    );
    for id in ["export-html-ranks", "export-html-range"] {
        route(
            app,
            &dom::by_id::<web_sys::HtmlElement>(id),
            "change",
            |a, _: web_sys::Event| crate::export_html::reset(a),
        );
    }
    on_click(app, "export-html-save", |a| {
        crate::export_html::save(a, &base_name(a))
    });
    let app = app.clone();
    dom::on(
        &dom::by_id::<web_sys::HtmlElement>("export-go"),
        "click",
        move |_: web_sys::Event| {
            export(&app);
        },
    );
}
