//! The detail panel: everything known about the selected allocation, as selectable
//! text, with its call stack (noise hidden unless asked) and a copy button.

use memscope_protocol::AllocationDetail;
use memscope_snapshot::units::{format_bytes, format_count, format_duration_us};
use web_sys::HtmlElement;

use crate::dom::{append, attr, by_id, clear, el, el_text};

/// A duration or "—".
fn duration(us: Option<f64>) -> String {
    us.map_or_else(
        || "—".to_owned(),
        |us| format_duration_us(us.round() as i64),
    )
}

/// Bytes with the exact count.
fn bytes(b: f64) -> String {
    format!(
        "{} ({} bytes)",
        format_bytes(b as u64),
        format_count(b as u64)
    )
}

/// Wall-clock time of a trace-relative moment.
fn wall_clock(start_us: Option<f64>, t_us: Option<f64>) -> String {
    match (start_us, t_us) {
        (Some(s), Some(t)) => {
            let date = js_sys::Date::new(&((s + t) / 1000.0).into());
            String::from(date.to_iso_string())
        }
        _ => String::new(),
    }
}

fn row(list: &HtmlElement, name: &str, value: &str, title: &str) {
    append(list, &el_text("dt", "", name));
    let dd = el_text("dd", "", value);
    if !title.is_empty() {
        attr(&dd, "title", title);
    }
    append(list, &dd);
}

/// The stack as text (what the copy button copies): every frame, innermost first.
pub fn stack_text(detail: &AllocationDetail) -> String {
    detail
        .frames
        .iter()
        .map(|f| format!("{}:{} {}", f.filename, f.line, f.name))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Shows `detail`, or the placeholder when `None`.
pub fn show(detail: Option<&AllocationDetail>, show_noise: bool) {
    let panel: HtmlElement = by_id("detail-body");
    clear(&panel);
    let Some(d) = detail else {
        for name in [
            "data-allocation",
            "data-alloc-us",
            "data-free-us",
            "data-alloc-entry",
            "data-free-entry",
            "data-lifetime-us",
            "data-bytes",
            "data-site",
        ] {
            let _ = panel.remove_attribute(name);
        }
        append(
            &panel,
            &el_text(
                "p",
                "hint",
                "Click an allocation on the timeline to see its details.",
            ),
        );
        return;
    };
    // For tests and scripts: the allocation, its entries and their times on the
    // timeline's axes (empty where there is none), its bytes and call site.
    let or_empty = |v: Option<String>| v.unwrap_or_default();
    attr(&panel, "data-allocation", &d.allocation.to_string());
    attr(
        &panel,
        "data-alloc-us",
        &or_empty(d.alloc_axis_us.map(|t| t.to_string())),
    );
    attr(
        &panel,
        "data-free-us",
        &or_empty(d.free_axis_us.map(|t| t.to_string())),
    );
    attr(
        &panel,
        "data-alloc-entry",
        &or_empty(d.alloc_entry.map(|e| e.to_string())),
    );
    attr(
        &panel,
        "data-free-entry",
        &or_empty(d.free_entry.map(|e| e.to_string())),
    );
    attr(&panel, "data-bytes", &d.size.to_string());
    append(
        &panel,
        &el_text("h2", "", &format!("Allocation #{}", d.allocation)),
    );
    let list = el("dl", "facts");
    attr(&panel, "data-site", &d.call_site_label);
    let site = el("dd", "call-site-row");
    append(&site, &el_text("span", "site", &d.call_site_label));
    if let Some(reason) = &d.call_site_reason {
        append(&site, &el_text("span", "site-reason", reason));
    }
    append(&list, &el_text("dt", "", "Call site"));
    append(&list, &site);
    row(&list, "Requested", &bytes(d.size), "");
    match d.rounded_size {
        Some(r) => row(
            &list,
            "Rounded",
            &bytes(r),
            &format!(
                "rounding loss {} bytes",
                format_count((r - d.size).max(0.0) as u64)
            ),
        ),
        None => row(&list, "Rounded", "unknown (no block at the snapshot)", ""),
    }
    row(&list, "Address", &format!("0x{:x}", d.address as u64), "");
    let alloc = if d.before_window {
        "before the trace window".to_owned()
    } else {
        match d.alloc_time_us {
            Some(t) => duration(Some(t)),
            None => format!("entry #{}", d.alloc_event.map_or(0, |e| e)),
        }
    };
    row(
        &list,
        "Allocated",
        &alloc,
        &wall_clock(d.start_time_us, d.alloc_time_us),
    );
    let freed = if d.live_at_end {
        "still allocated at the end".to_owned()
    } else {
        match d.free_time_us {
            Some(t) => duration(Some(t)),
            None => format!("entry #{}", d.free_event.map_or(0, |e| e)),
        }
    };
    row(
        &list,
        "Freed",
        &freed,
        &wall_clock(d.start_time_us, d.free_time_us),
    );
    // The table's rule: clipped to the window, so a live allocation counts to the end.
    match d.lifetime_us {
        Some(us) => attr(&panel, "data-lifetime-us", &us.to_string()),
        None => {
            let _ = panel.remove_attribute("data-lifetime-us");
        }
    }
    let lifetime = match d.lifetime_us {
        Some(us) if d.live_at_end => format!("{} (to the end of the trace)", duration(Some(us))),
        Some(us) if d.before_window => {
            format!("{} (from the start of the trace)", duration(Some(us)))
        }
        Some(us) => duration(Some(us)),
        None => "—".to_owned(),
    };
    row(&list, "Lifetime", &lifetime, "");
    let pending = match (d.free_requested_time_us, d.free_time_us) {
        (Some(r), Some(f)) => duration(Some(f - r)),
        (Some(_), None) => "pending at the end".to_owned(),
        _ => "—".to_owned(),
    };
    row(&list, "Pending free", &pending, "");
    row(&list, "Stream", &format!("0x{:x}", d.stream as u64), "");
    if let Some(c) = &d.compile_context {
        row(&list, "compile_context", c, "");
    }
    if let Some(m) = &d.user_metadata {
        row(&list, "user_metadata", m, "");
    }
    append(&panel, &list);

    let hidden = d.frames.iter().filter(|f| f.noise).count();
    let head = el("div", "stack-head");
    append(&head, &el_text("h3", "", "Call stack"));
    let toggle = el_text(
        "button",
        "noise-toggle",
        &if show_noise {
            "Hide interpreter frames".to_owned()
        } else {
            format!("Show all frames ({hidden} hidden)")
        },
    );
    attr(&toggle, "id", "noise-toggle");
    attr(&toggle, "type", "button");
    append(&head, &toggle);
    let copy = el_text("button", "", "Copy");
    attr(&copy, "id", "copy-stack");
    attr(&copy, "type", "button");
    append(&head, &copy);
    append(&panel, &head);
    let stack = el("ol", "stack");
    if d.frames.is_empty() {
        append(&stack, &el_text("li", "hint", "no frames recorded"));
    }
    for f in &d.frames {
        if f.noise && !show_noise {
            continue;
        }
        let mut class = "frame".to_owned();
        if f.noise {
            class.push_str(" noise");
        }
        if f.call_site {
            class.push_str(" call-site");
        }
        let item = el("li", &class);
        append(&item, &el_text("span", "frame-name", &f.name));
        let base = f.filename.rsplit(['/', '\\']).next().unwrap_or(&f.filename);
        let place = if f.line.is_empty() || f.line == "0" || f.line == "18446744073709551615" {
            base.to_owned()
        } else {
            format!("{base}:{}", f.line)
        };
        let location = el_text("span", "frame-file", &place);
        attr(&location, "title", &format!("{}:{}", f.filename, f.line));
        append(&item, &location);
        append(&stack, &item);
    }
    append(&panel, &stack);
}
