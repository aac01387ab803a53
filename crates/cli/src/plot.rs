//! `memscope plot FIGURE FILES... -o fig.svg`: the page's figures as SVG, from the same
//! code (`memscope-figures`) on the same inputs: the fleet figures (configuration
//! grid, rank × time heatmap, overview bars) over every file, the compare curves of
//! two files, and one device's memory timeline, segment timeline, call-site lanes or
//! flame graph, laid out by `memscope-render` as the page lays them out for a canvas of
//! the figure's width.

use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use clap::ValueEnum;
use memscope_figures::bars::{Bar, Bars, Unit};
use memscope_figures::plot::RowLabel;
use memscope_figures::{bars, curves, grid, heatmap, plot, Look, Size, Style};
use memscope_fleet::{
    config_grid, row_labels, runs_from_ranks, Align, BinnedAxis, Heatmap, Metric, RankFacts,
    RankModel,
};
use memscope_render::{
    flame_layout, lanes_layout, layout, legend, segment_layout, Axis, FlameOptions, FlameTree,
    FlameView, Lanes, RowsView, SegmentIndex, TimelineIndex, TimelineView,
};
use memscope_snapshot::units::format_bytes;
use memscope_snapshot::{base_name, DeviceModel, Snapshot};

use crate::{load, NOTHING_TO_SHOW};

/// Which figure.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum Figure {
    /// Peak memory by two parallelism settings in the file or folder names.
    Grid,
    /// Allocated bytes of every rank over time.
    Heatmap,
    /// The overview's bars: peak allocated bytes per rank, outliers flagged.
    Bars,
    /// The allocated bytes of two files on one axis (the first two FILES).
    Compare,
    /// One device's memory timeline.
    Timeline,
    /// One device's segment timeline.
    Segments,
    /// One device's call-site lanes.
    Lanes,
    /// One device's flame graph (bytes live at the peak).
    Flame,
}

/// Bins of the heatmap and of the compare curves, as on the page.
const HEAT_BINS: u32 = 480;
const CURVE_BINS: u32 = 400;
/// Row height of the segment and lane figures, CSS pixels.
const ROW_PX: u32 = 16;

/// `memscope plot`'s options.
pub(crate) struct PlotOptions {
    pub(crate) figure: Figure,
    pub(crate) output: PathBuf,
    pub(crate) size: Size,
    pub(crate) look: Look,
    pub(crate) device: Option<i32>,
    pub(crate) events: bool,
    pub(crate) rows_key: Option<String>,
    pub(crate) cols_key: Option<String>,
    pub(crate) allocated: bool,
    pub(crate) capacity_bytes: u64,
}

/// Writes the figure. Files that cannot be read are named on standard error (a grid
/// marks their run as unreadable); exit status 1 when any could not be read or the
/// figure has nothing to show.
pub(crate) fn plot(files: &[PathBuf], opts: &PlotOptions) -> io::Result<bool> {
    if opts.output.extension().and_then(|e| e.to_str()) != Some("svg") {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "{}: memscope plot writes SVG (name the output *.svg); the page exports PNG \
                 at a chosen size and density, and any SVG tool converts to PDF",
                opts.output.display()
            ),
        ));
    }
    let style = Style::new(opts.look, opts.size);
    let mut errors: Vec<(String, String)> = Vec::new();
    let svg = match opts.figure {
        Figure::Grid | Figure::Heatmap | Figure::Bars => {
            fleet_figure(files, opts, &style, &mut errors)
        }
        Figure::Compare => compare_figure(files, opts, &style, &mut errors),
        Figure::Timeline | Figure::Segments | Figure::Lanes | Figure::Flame => match files {
            [path] => device_figure(path, opts, &style, &mut errors),
            _ => Err(format!(
                "{:?} draws one file's device; got {} files",
                opts.figure,
                files.len()
            )
            .to_lowercase()),
        },
    };
    let mut err = io::stderr().lock();
    for (file, message) in &errors {
        writeln!(err, "memscope: {file}: {message}")?;
    }
    match svg {
        Ok(svg) => {
            std::fs::write(&opts.output, svg)
                .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", opts.output.display())))?;
            Ok(errors.is_empty())
        }
        Err(message) => {
            writeln!(err, "memscope: nothing plotted: {message}")?;
            Ok(false)
        }
    }
}

/// Every readable file's rank models (snapshots dropped once modelled) and the paths
/// that could not be read.
fn models_of(
    files: &[PathBuf],
    errors: &mut Vec<(String, String)>,
) -> (Vec<RankModel>, Vec<RankFacts>, Vec<String>) {
    let mut models = Vec::new();
    let mut facts = Vec::new();
    let mut failed = Vec::new();
    for path in files {
        let name = path.to_string_lossy().into_owned();
        match load(path) {
            Ok(snap) => {
                let these = RankModel::all(&name, &snap);
                if these.is_empty() {
                    errors.push((base_name(&name).to_owned(), NOTHING_TO_SHOW.to_owned()));
                }
                for m in these {
                    facts.push(RankFacts::new(&snap, &m));
                    models.push(m);
                }
            }
            Err(error) => {
                errors.push((base_name(&name).to_owned(), error));
                failed.push(name);
            }
        }
    }
    (models, facts, failed)
}

fn fleet_figure(
    files: &[PathBuf],
    opts: &PlotOptions,
    style: &Style,
    errors: &mut Vec<(String, String)>,
) -> Result<String, String> {
    let (models, facts, failed) = models_of(files, errors);
    let ids: Vec<_> = facts.iter().map(|f| &f.figures.id).collect();
    let labels = row_labels(&ids);
    match opts.figure {
        Figure::Grid => {
            let metric = if opts.allocated {
                Metric::PeakAllocated
            } else {
                Metric::PeakReserved
            };
            let runs = runs_from_ranks(&facts, &failed, metric);
            let mut keys: Vec<String> = runs
                .iter()
                .flat_map(|r| r.settings.keys().cloned())
                .collect();
            keys.sort();
            keys.dedup();
            // As the page picks: tp by pp when present, else the first two settings.
            let pick = |chosen: &Option<String>, prefer: &str, avoid: Option<&String>| {
                chosen
                    .clone()
                    .or_else(|| {
                        keys.iter()
                            .find(|k| *k == prefer && Some(*k) != avoid)
                            .cloned()
                    })
                    .or_else(|| keys.iter().find(|k| Some(*k) != avoid).cloned())
            };
            let row = pick(&opts.rows_key, "tp", None)
                .ok_or("no parallelism settings (tp2_pp4, …) in the file or folder names")?;
            let col = pick(&opts.cols_key, "pp", Some(&row)).ok_or(format!(
                "only one setting ({row}) in the names; the grid needs two"
            ))?;
            let g = config_grid(&runs, &row, &col, opts.capacity_bytes);
            if g.rows.is_empty() || g.cols.is_empty() {
                return Err(format!("no run names both {row} and {col}"));
            }
            Ok(grid::svg(&g, style, opts.size))
        }
        Figure::Heatmap => {
            if models.is_empty() {
                return Err("no readable rank".to_owned());
            }
            let axis = BinnedAxis::for_ranks(&facts, HEAT_BINS);
            let refs: Vec<&RankModel> = models.iter().collect();
            let map = Heatmap::new(&refs, axis, None);
            Ok(heatmap::svg(&map, &labels, style, opts.size))
        }
        _ => {
            if facts.is_empty() {
                return Err("no readable rank".to_owned());
            }
            let overview = memscope_fleet::Overview::new(&facts, Default::default());
            let bars = Bars {
                metric: "Peak allocated".to_owned(),
                unit: Unit::Bytes,
                rows: overview
                    .rows
                    .iter()
                    .zip(&labels)
                    .map(|(r, label)| Bar {
                        label: label.clone(),
                        value: r.figures.peak_allocated_bytes as f64,
                        outlier: r.outlier,
                    })
                    .collect(),
            };
            Ok(bars::svg(&bars, style, opts.size))
        }
    }
}

/// A file's snapshot and the chosen device (`--device`, else its first).
fn load_device(
    path: &Path,
    device: Option<i32>,
    errors: &mut Vec<(String, String)>,
) -> Option<(Snapshot, i32)> {
    let name = path.to_string_lossy().into_owned();
    let base = base_name(&name).to_owned();
    match load(path) {
        Ok(snap) => {
            let devices = snap.devices();
            match device.or_else(|| devices.first().copied()) {
                Some(d) if devices.contains(&d) => Some((snap, d)),
                Some(d) => {
                    errors.push((base, format!("no device {d} (devices: {devices:?})")));
                    None
                }
                None => {
                    errors.push((base, NOTHING_TO_SHOW.to_owned()));
                    None
                }
            }
        }
        Err(error) => {
            errors.push((base, error));
            None
        }
    }
}

fn compare_figure(
    files: &[PathBuf],
    opts: &PlotOptions,
    style: &Style,
    errors: &mut Vec<(String, String)>,
) -> Result<String, String> {
    let [a, b] = files else {
        return Err(format!("compare draws two files; got {}", files.len()));
    };
    let mut sides = Vec::new();
    for path in [a, b] {
        if let Some((snap, device)) = load_device(path, opts.device, errors) {
            let model = RankModel::new(&path.to_string_lossy(), &snap, device);
            sides.push((snap, model));
        }
    }
    let [(snap_a, a), (snap_b, b)] = sides.as_slice() else {
        return Err("both files must be readable".to_owned());
    };
    let cmp = memscope_fleet::compare(snap_a, a, snap_b, b, &Align::Start, CURVE_BINS);
    let labels = row_labels(&[&a.id, &b.id]);
    Ok(curves::svg(
        &cmp.curves,
        &labels[0],
        &labels[1],
        style,
        opts.size,
    ))
}

fn device_figure(
    path: &Path,
    opts: &PlotOptions,
    style: &Style,
    errors: &mut Vec<(String, String)>,
) -> Result<String, String> {
    let (snap, device) =
        load_device(path, opts.device, errors).ok_or("the file has no device to draw")?;
    let model = Arc::new(DeviceModel::replay(&snap, device));
    let index = TimelineIndex::from_model(Arc::clone(&model));
    let axis = if opts.events {
        Axis::Events
    } else {
        Axis::Time
    };
    let name = base_name(&path.to_string_lossy()).to_owned();
    let size = opts.size;
    let view = TimelineView::full(&index, axis, size.width_px, size.height_px);
    let axis = index.effective_axis(axis);
    let title = |what: &str| format!("{name} — device {device}: {what}");
    let plot = match opts.figure {
        Figure::Timeline => {
            let strips = layout(&index, &view);
            let peak = (strips.peak.x, strips.peak.bytes as f64);
            plot::timeline(
                &title("memory timeline"),
                &strips,
                &strips.view,
                &legend(&index, plot::LEGEND_MAX),
                peak,
                style,
            )
        }
        Figure::Segments => {
            let segments = SegmentIndex::new(&index);
            let rows = (segments.len() as u32).min(size.height_px / ROW_PX).max(1);
            let rv = RowsView::new(&view, 0, rows, ROW_PX);
            let l = segment_layout(&index, &segments, &rv, None);
            let labels = l
                .rows
                .iter()
                .map(|p| {
                    let r = &segments.rows()[p.row as usize];
                    RowLabel {
                        top: p.y0,
                        bottom: p.y1,
                        size: format_bytes(r.size_bytes),
                        name: plot::segment_name(r.address, r.expandable, r.pool_id, r.stream),
                    }
                })
                .collect();
            plot::rows(
                &title("segments"),
                &l.strips,
                Some(&l.extents),
                labels,
                axis,
            )
        }
        Figure::Lanes => {
            let lanes = Lanes::new(&index);
            let rows = (lanes.len() as u32).min(size.height_px / ROW_PX).max(1);
            let rv = RowsView::new(&view, 0, rows, ROW_PX);
            let l = lanes_layout(&index, &lanes, &rv);
            let labels = l
                .rows
                .iter()
                .map(|p| {
                    let r = &lanes.rows()[p.row as usize];
                    RowLabel {
                        top: p.y0,
                        bottom: p.y1,
                        size: format_bytes(r.peak_bytes),
                        name: r.label.clone(),
                    }
                })
                .collect();
            plot::rows(&title("call sites"), &l.strips, None, labels, axis)
        }
        _ => {
            let options = FlameOptions::new(&index);
            let tree = FlameTree::build(&snap, &model.allocs, &index, &options);
            let rows = (tree.max_depth() + 1).min(size.height_px / ROW_PX).max(1);
            let l = flame_layout(&tree, &FlameView::new(size.width_px, rows));
            plot::flame(
                &title(&format!(
                    "flame graph of bytes live at the peak ({})",
                    format_bytes(u64::try_from(l.focus_total).unwrap_or(u64::MAX))
                )),
                &l.strips,
                &l.labels,
                tree.max_depth() + 1,
            )
        }
    };
    if plot.rects.is_empty() {
        return Err(format!(
            "{name}: device {device} has nothing to draw in this figure"
        ));
    }
    Ok(plot::svg(&plot, style, size))
}
