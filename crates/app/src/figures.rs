//! Figure exports: the figure chosen in the export dialog, made from what the page
//! shows (the timeline's current view, the lens panes' visible rows, the flame graph's
//! depths, the fleet view's heatmap, bars, compare curves and configuration grid) by
//! `memscope-figures` — the same code `memscope plot` runs — as SVG, or rasterised by
//! the browser to PNG at the chosen size × pixel density.

use memscope_figures::{Look, Size, Style};

use crate::app::App;
use crate::dom;

/// The figures the dialog offers (`#export-figure` values).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Figure {
    /// The memory timeline.
    Timeline,
    /// The segment timeline.
    Segments,
    /// The call-site lanes.
    Lanes,
    /// The flame graph.
    Flame,
    /// The fleet's rank × time heatmap.
    Heatmap,
    /// The fleet overview's bars.
    Bars,
    /// The compare view's curves.
    Compare,
    /// The configuration grid.
    Grid,
}

impl Figure {
    /// The figure named `name` (`#export-figure`'s values), the timeline otherwise.
    pub fn from_name(name: &str) -> Figure {
        match name {
            "segments" => Figure::Segments,
            "lanes" => Figure::Lanes,
            "flame" => Figure::Flame,
            "heatmap" => Figure::Heatmap,
            "bars" => Figure::Bars,
            "compare" => Figure::Compare,
            "grid" => Figure::Grid,
            _ => Figure::Timeline,
        }
    }

    /// Its name in file names.
    pub fn name(self) -> &'static str {
        match self {
            Figure::Timeline => "timeline",
            Figure::Segments => "segments",
            Figure::Lanes => "lanes",
            Figure::Flame => "flame",
            Figure::Heatmap => "heatmap",
            Figure::Bars => "bars",
            Figure::Compare => "compare",
            Figure::Grid => "grid",
        }
    }

    /// Where the page shows it (for the message when it is not shown).
    fn place(self) -> &'static str {
        match self {
            Figure::Timeline => "the memory timeline of a rank",
            Figure::Segments => "the Segments tab",
            Figure::Lanes => "the Call sites tab",
            Figure::Flame => "the Flame graph tab",
            Figure::Heatmap => "the Fleet view's heatmap",
            Figure::Bars => "the Fleet view's overview",
            Figure::Compare => "a comparison in the Fleet view",
            Figure::Grid => "the Fleet view's configuration grid (two settings in the names)",
        }
    }
}

/// The look: print when asked, else the page's theme.
pub fn look(print: bool) -> Look {
    let dark = dom::document()
        .document_element()
        .is_some_and(|e| e.get_attribute("data-theme").as_deref() == Some("dark"));
    match (print, dark) {
        (true, _) => Look::Print,
        (false, true) => Look::Dark,
        (false, false) => Look::Light,
    }
}

/// The shown rank's file stem and device, for titles and file names.
fn active(app: &App) -> Option<(String, i32)> {
    let (key, device) = app.page.shown?;
    let name = app.page.ranks.get(key)?.name.clone();
    Some((name, device))
}

/// The file name of `figure` (without extension).
pub fn file_stem(app: &App, figure: Figure) -> String {
    let rank = active(app).map(|(name, device)| memscope_page::names::download_stem(&name, device));
    match (figure, rank) {
        (Figure::Timeline, Some(rank)) => rank,
        (Figure::Segments | Figure::Lanes | Figure::Flame, Some(rank)) => {
            format!("{rank}-{}", figure.name())
        }
        _ => format!("memscope-{}", figure.name()),
    }
}

/// `figure` as an SVG document of `size` in `look`, or why there is none.
pub fn svg(app: &App, figure: Figure, look: Look, size: Size) -> Result<String, String> {
    let style = Style::new(look, size);
    let title = |what: &str| {
        active(app).map_or_else(
            || what.to_owned(),
            |(name, device)| format!("{name} — device {device}: {what}"),
        )
    };
    let made = match figure {
        Figure::Timeline => timeline(app, &title("memory timeline"), &style, size),
        Figure::Segments => crate::lenses::rows_figure(app, true, &title("segments"), &style, size),
        Figure::Lanes => crate::lenses::rows_figure(app, false, &title("call sites"), &style, size),
        Figure::Flame => crate::lenses::flame_figure(app, &title("flame graph"), &style, size),
        Figure::Heatmap => crate::fleet::heat_figure(app, &style, size),
        Figure::Bars => crate::fleet::overview_figure(app, &style, size),
        Figure::Compare => crate::fleet::compare_figure(app, &style, size),
        Figure::Grid => crate::fleet::grid_figure(app, &style, size),
    };
    made.ok_or_else(|| format!("nothing to export: open {} first", figure.place()))
}

/// The memory timeline through the current view.
fn timeline(app: &App, title: &str, style: &Style, size: Size) -> Option<String> {
    let t = app.timeline.as_ref()?;
    let shown = t.shown.as_ref()?;
    let plot = memscope_figures::plot::timeline(
        title,
        &shown.strips,
        &t.layout_view(&app.page.window),
        &shown.legend,
        shown.peak,
        style,
    );
    Some(memscope_figures::plot::svg(&plot, style, size))
}
