//! Shared by the flame, lanes and segment tests: the corpus, and allocation lifetimes
//! in moments straight from the `Allocations` columns (no index involved).

#![allow(dead_code)]

use std::path::PathBuf;

use memscope_render::Strips;
use memscope_snapshot::{load_bytes, Allocations, Snapshot, NONE};

pub fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures")
}

/// Every real snapshot of the corpus, by file name.
pub fn corpus() -> Vec<(String, Snapshot)> {
    let dir = fixtures().join("corpus/real");
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    paths.sort();
    paths
        .into_iter()
        .map(|p| {
            let name = p.file_name().unwrap().to_str().unwrap().to_owned();
            (name, load_bytes(&std::fs::read(&p).unwrap()).unwrap())
        })
        .collect()
}

/// Lifetimes in moments: live over `start..end`, pending from `pending`.
pub struct Lives {
    pub start: Vec<u32>,
    pub pending: Vec<u32>,
    pub end: Vec<u32>,
    pub moments: u32,
}

impl Lives {
    pub fn new(allocs: &Allocations) -> Lives {
        let first = allocs.trace.start;
        let n = allocs.trace.len() as u32;
        let local = |e: u32, absent: u32| if e == NONE { absent } else { e - first + 1 };
        Lives {
            start: allocs.alloc_event.iter().map(|&e| local(e, 0)).collect(),
            pending: allocs
                .free_requested_event
                .iter()
                .map(|&e| local(e, u32::MAX))
                .collect(),
            end: allocs.free_event.iter().map(|&e| local(e, n + 1)).collect(),
            moments: n + 1,
        }
    }

    pub fn live(&self, id: usize, m: u32) -> bool {
        self.start[id] <= m && m < self.end[id]
    }

    /// Σ requested bytes live at `m`, one allocation at a time.
    pub fn live_bytes(&self, allocs: &Allocations, m: u32) -> u64 {
        (0..allocs.len())
            .filter(|&id| self.live(id, m))
            .map(|id| allocs.size[id])
            .sum()
    }
}

/// Instances covering each pixel column (x edges on column edges).
pub fn by_column(strips: &Strips) -> Vec<Vec<usize>> {
    let w = strips.view.width_px as usize;
    let dx = strips.view.x_per_px();
    let mut columns = vec![Vec::new(); w];
    for i in 0..strips.len() {
        let [x0, x1, y0, y1] = strips.rect(i);
        assert!(x0 < x1 && y0 < y1, "instance {i}: {:?}", strips.rect(i));
        let ja = (f64::from(x0) / dx).round() as usize;
        let jb = (f64::from(x1) / dx).round() as usize;
        assert!(ja < jb && jb <= w, "instance {i} spans columns {ja}..{jb}");
        for column in &mut columns[ja..jb] {
            column.push(i);
        }
    }
    columns
}
