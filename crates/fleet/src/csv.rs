//! The fleet view's tables as CSV, with `memscope_analysis::csv`'s one writer (RFC
//! 4180, units in the column names): the overview (one row per rank and device) and
//! the comparison by call site, each in the order the page shows it.

use memscope_analysis::csv::{document, optional};

use crate::compare::SiteDiff;
use crate::overview::RankRow;

/// The columns of [`overview_csv`].
pub const OVERVIEW_HEADER: [&str; 12] = [
    "path",
    "file",
    "rank",
    "device",
    "peak_allocated_bytes",
    "peak_reserved_bytes",
    "allocated_bytes",
    "events",
    "ooms",
    "outlier",
    "outlier_metrics",
    "growth_bytes_per_iteration",
];

/// Overview rows, in the order given (the page's sort), every one of them: the file by
/// its path, the figures exact, the outlier flags by metric, and the growth per
/// iteration of a rank whose floor keeps rising (empty: not growing).
pub fn overview_csv<'a>(rows: impl IntoIterator<Item = &'a RankRow>) -> String {
    let rows: Vec<Vec<String>> = rows
        .into_iter()
        .map(|r| {
            let f = &r.figures;
            let metrics: Vec<&str> = r.outliers.iter().map(|o| o.metric.name()).collect();
            vec![
                f.id.path.clone(),
                f.id.file.clone(),
                optional(f.id.rank),
                f.id.device.to_string(),
                f.peak_allocated_bytes.to_string(),
                f.peak_reserved_bytes.to_string(),
                f.allocated_bytes.to_string(),
                f.events.to_string(),
                f.ooms.to_string(),
                r.outlier.to_string(),
                metrics.join(" "),
                optional(f.growth.as_ref().map(|g| g.bytes_per_iteration)),
            ]
        })
        .collect();
    document(&OVERVIEW_HEADER, &rows)
}

/// The columns of [`sites_csv`].
pub const SITES_HEADER: [&str; 10] = [
    "change",
    "call_site",
    "site_key",
    "delta_bytes",
    "a_bytes_at_peak",
    "b_bytes_at_peak",
    "a_live_at_peak",
    "b_live_at_peak",
    "a_allocations",
    "b_allocations",
];

/// Rows of a comparison by call site, in the order given (the page's sort and filter):
/// bytes live at each side's peak, allocations live there and over the whole trace.
pub fn sites_csv<'a>(rows: impl IntoIterator<Item = &'a SiteDiff>) -> String {
    let rows: Vec<Vec<String>> = rows
        .into_iter()
        .map(|r| {
            vec![
                r.change.name().to_owned(),
                r.site.label.clone(),
                r.site.key.clone(),
                r.delta_bytes.to_string(),
                r.a.bytes_at_peak.to_string(),
                r.b.bytes_at_peak.to_string(),
                r.a.live_at_peak.to_string(),
                r.b.live_at_peak.to_string(),
                r.a.allocations.to_string(),
                r.b.allocations.to_string(),
            ]
        })
        .collect();
    document(&SITES_HEADER, &rows)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::{Change, SiteSide};
    use crate::overview::{FloorGrowth, Metric, Outlier, RankFigures};
    use crate::rank::RankId;
    use crate::sites::Site;

    fn row(path: &str, device: i32, peak: u64) -> RankRow {
        RankRow {
            figures: RankFigures {
                id: RankId::new(path, device),
                events: 2081,
                ooms: 0,
                peak_allocated_bytes: peak,
                peak_allocated_time_us: None,
                peak_reserved_bytes: 4_194_304,
                allocated_bytes: 512,
                reserved_bytes: 2_097_152,
                end_allocated_bytes: 512,
                first_time_us: None,
                last_time_us: None,
                iterations: 0,
                growth: None,
            },
            outlier: false,
            outliers: Vec::new(),
        }
    }

    #[test]
    fn overview_rows_in_the_order_given() {
        let plain = row("tp2_pp1/rank0.pickle", 0, 1_048_576);
        let mut odd = row("run \"b\", v2/rank3.pickle", 1, 3_145_728);
        odd.figures.ooms = 2;
        odd.figures.growth = Some(FloorGrowth {
            iteration_end_bytes: vec![0, 1024, 2048],
            bytes_per_iteration: 1024,
        });
        odd.outlier = true;
        odd.outliers = vec![Outlier {
            metric: Metric::PeakAllocated,
            value: 3_145_728,
            median: 1_048_576.0,
            mad: 0.0,
            robust_z: None,
            relative_gap: 2.0,
            reference: plain.figures.id.clone(),
            grown_sites: Vec::new(),
        }];
        let unnamed = row("snapshot.pickle", 0, 0);
        assert_eq!(
            overview_csv([&odd, &plain, &unnamed]),
            "path,file,rank,device,peak_allocated_bytes,peak_reserved_bytes,allocated_bytes,\
             events,ooms,outlier,outlier_metrics,growth_bytes_per_iteration\r\n\
             \"run \"\"b\"\", v2/rank3.pickle\",rank3.pickle,3,1,3145728,4194304,512,2081,2,true,\
             peak_allocated,1024\r\n\
             tp2_pp1/rank0.pickle,rank0.pickle,0,0,1048576,4194304,512,2081,0,false,,\r\n\
             snapshot.pickle,snapshot.pickle,,0,0,4194304,512,2081,0,false,,\r\n"
        );
    }

    #[test]
    fn site_rows_in_the_order_given() {
        let side = |bytes: u64, live: u64, allocations: u64| SiteSide {
            bytes_at_peak: bytes,
            live_at_peak: live,
            allocations,
            ids_at_peak: Vec::new(),
            largest_ids: Vec::new(),
        };
        let grown = SiteDiff {
            site: Site {
                key: "00ff00ff00ff00ff".to_owned(),
                label: "attn, \"q\" (model.py:42)".to_owned(),
            },
            change: Change::Grown,
            delta_bytes: 1_048_576,
            a: side(1_048_576, 1, 10),
            b: side(2_097_152, 2, 12),
            stacks: Vec::new(),
        };
        let removed = SiteDiff {
            site: Site {
                key: "0123456789abcdef".to_owned(),
                label: "forward (model.py:10)".to_owned(),
            },
            change: Change::Removed,
            delta_bytes: -512,
            a: side(512, 1, 3),
            b: side(0, 0, 0),
            stacks: Vec::new(),
        };
        assert_eq!(
            sites_csv([&grown, &removed]),
            "change,call_site,site_key,delta_bytes,a_bytes_at_peak,b_bytes_at_peak,\
             a_live_at_peak,b_live_at_peak,a_allocations,b_allocations\r\n\
             grown,\"attn, \"\"q\"\" (model.py:42)\",00ff00ff00ff00ff,1048576,1048576,2097152,\
             1,2,10,12\r\n\
             removed,forward (model.py:10),0123456789abcdef,-512,512,0,1,0,3,0\r\n"
        );
        assert_eq!(
            sites_csv([]),
            "change,call_site,site_key,delta_bytes,a_bytes_at_peak,b_bytes_at_peak,\
             a_live_at_peak,b_live_at_peak,a_allocations,b_allocations\r\n"
        );
    }
}
