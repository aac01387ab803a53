//! Call-site colours across ranks, property-style: random ranks sharing some of a pool
//! of call sites are coloured as the page does it (every rank's legend into one
//! `SitePalette`, its entries followed by every rank's `TimelineIndex`), and then
//!
//! - a site has one colour on every rank that draws it, listed in a legend or not;
//! - no two sites of a legend share a colour (whenever the rule can promise it: all
//!   legend sites fit in the palette, or no site shares legends with 20 others);
//! - a site no legend lists avoids every legend site's colour while entries are free;
//! - the site with the most bytes takes the first entry (slots go by bytes order);
//! - "(no call stack)" is drawn in its own style, which no site has;
//! - the colours do not depend on the order the legends arrived in.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::{BTreeMap, BTreeSet};

use memscope_render::palette::{self, SitePalette, LEGEND_SITES, NO_STACK, PALETTE};
use memscope_render::{legend, TimelineIndex};
use memscope_snapshot::frames::NO_STACK_LABEL;
use memscope_snapshot::{load_bytes, Allocations};
use proptest::prelude::*;

/// Call sites `0..POOL` are named `site{k}` in `/home/me/model/site{k}.py`; site
/// `POOL` stands for allocations recorded without a call stack.
const POOL: usize = 30;

/// One rank: per allocation, its site (`POOL`: no call stack) and size in units.
type Rank = Vec<(usize, u64)>;

fn label(site: usize) -> String {
    format!("site{site} (site{site}.py:7)")
}

/// A snapshot of `rank`'s allocations, all live at the end (the peak).
fn snapshot(rank: &Rank) -> String {
    let entries: Vec<String> = rank
        .iter()
        .enumerate()
        .map(|(k, &(site, units))| {
            let frames = if site == POOL {
                String::new()
            } else {
                format!(
                    r#"{{"filename": "/home/me/model/site{site}.py", "line": 7, "name": "site{site}"}}"#
                )
            };
            format!(
                r#"{{"action": "alloc", "addr": {}, "size": {}, "stream": 0, "time_us": {}, "frames": [{frames}]}}"#,
                (k as u64 + 1) << 32,
                units * 512,
                1000 + k
            )
        })
        .collect();
    format!(
        r#"{{"segments": [], "device_traces": [[{}]]}}"#,
        entries.join(",")
    )
}

fn index_of(rank: &Rank) -> TimelineIndex {
    let snap = load_bytes(snapshot(rank).as_bytes()).unwrap();
    let allocs = Allocations::replay(&snap, 0);
    TimelineIndex::new(&snap, &allocs)
}

/// Each site's colour on `index`, by label.
fn colours(index: &TimelineIndex) -> BTreeMap<String, u32> {
    (0..index.sites() as u32)
        .map(|s| (index.site_label(s).to_owned(), index.site_color(s)))
        .collect()
}

fn ranks() -> impl Strategy<Value = Vec<Rank>> {
    // Sizes from a small range, so ties in bytes are common (the hash breaks them).
    let alloc = (0..=POOL, 1u64..6);
    prop::collection::vec(prop::collection::vec(alloc, 1..40), 1..5)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn a_site_has_one_colour_on_every_rank(ranks in ranks()) {
        let mut indices: Vec<TimelineIndex> = ranks.iter().map(index_of).collect();
        let legends: Vec<Vec<(String, u64)>> = indices
            .iter()
            .map(|i| legend(i, LEGEND_SITES).into_iter().map(|e| (e.label, e.bytes)).collect())
            .collect();
        let mut page = SitePalette::default();
        for (k, l) in legends.iter().enumerate() {
            page.set_legend(k as u32, 0, l.clone());
        }
        // The order the legends arrive in does not matter.
        let mut reversed = SitePalette::default();
        for (k, l) in legends.iter().enumerate().rev() {
            reversed.set_legend(k as u32, 0, l.clone());
        }
        prop_assert_eq!(page.entries(), reversed.entries());
        let at_once = SitePalette::from_legends(&legends);
        prop_assert_eq!(page.entries(), at_once.entries());
        for index in &mut indices {
            index.follow_palette(page.entries());
            prop_assert_eq!(index.palette_entries(), page.entries());
        }

        // One colour per site across ranks.
        let mut seen: BTreeMap<String, u32> = BTreeMap::new();
        for index in &indices {
            for (label, colour) in colours(index) {
                let first = *seen.entry(label.clone()).or_insert(colour);
                prop_assert_eq!(first, colour, "{} differs between ranks", label);
            }
        }

        // "(no call stack)" alone has its style.
        for (label, &colour) in &seen {
            prop_assert_eq!(label == NO_STACK_LABEL, colour == NO_STACK, "{}", label);
        }

        // The legend sites, their largest bytes and whom they share a legend with.
        let mut bytes: BTreeMap<&str, u64> = BTreeMap::new();
        let mut shares: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
        for l in &legends {
            let sites: Vec<&str> = l
                .iter()
                .map(|(s, _)| s.as_str())
                .filter(|&s| s != NO_STACK_LABEL)
                .collect();
            for (s, b) in l {
                if s != NO_STACK_LABEL {
                    let most = bytes.entry(s).or_default();
                    *most = (*most).max(*b);
                }
            }
            for &a in &sites {
                shares.entry(a).or_default().extend(sites.iter().filter(|&&b| b != a));
            }
        }
        let promised = bytes.len() <= PALETTE.len()
            || shares.values().all(|n| n.len() < PALETTE.len());
        if promised {
            for index in &indices {
                let listed: Vec<u32> = legend(index, LEGEND_SITES)
                    .into_iter()
                    .filter(|e| e.label != NO_STACK_LABEL)
                    .map(|e| e.color)
                    .collect();
                let distinct: BTreeSet<u32> = listed.iter().copied().collect();
                prop_assert_eq!(distinct.len(), listed.len(), "legend colours {:?}", listed);
            }
        }

        // While entries are free, a site no legend lists looks like no legend site.
        if bytes.len() < PALETTE.len() {
            let legend_colours: BTreeSet<u32> =
                bytes.keys().map(|l| seen[*l]).collect();
            for (label, colour) in &seen {
                if label != NO_STACK_LABEL && !bytes.contains_key(label.as_str()) {
                    prop_assert!(!legend_colours.contains(colour), "{} takes a legend colour", label);
                }
            }
        }

        // The site with the most bytes (ties: by the label's hash, then the label)
        // takes the first entry.
        if let Some((top, _)) = bytes.iter().max_by(|a, b| {
            a.1.cmp(b.1)
                .then_with(|| palette::palette_index_of(b.0).cmp(&palette::palette_index_of(a.0)))
                .then_with(|| b.0.cmp(a.0))
        }) {
            prop_assert_eq!(seen[*top], PALETTE[0], "{} has the most bytes", top);
        }
    }
}

/// The page's palette is applied whole: a site that is only in another rank's legend
/// and drawn here (below this rank's legend) takes that rank's colour for it.
#[test]
fn a_site_outside_this_ranks_legend_takes_the_colour_another_rank_gave_it() {
    // Rank 0: sites 0..13 with site 13 the largest; rank 1: sites 0..13 with site 13 the
    // smallest, so below its legend of twelve.
    let rank0: Rank = (0..14).map(|s| (s, if s == 13 { 50 } else { 1 })).collect();
    let rank1: Rank = (0..14)
        .map(|s| (s, if s == 13 { 1 } else { 2 + s as u64 }))
        .collect();
    let mut indices = [index_of(&rank0), index_of(&rank1)];
    let mut page = SitePalette::default();
    for (k, index) in indices.iter().enumerate() {
        let l = legend(index, LEGEND_SITES)
            .into_iter()
            .map(|e| (e.label, e.bytes))
            .collect();
        page.set_legend(k as u32, 0, l);
    }
    let listed1: Vec<String> = legend(&indices[1], LEGEND_SITES)
        .into_iter()
        .map(|e| e.label)
        .collect();
    assert!(!listed1.contains(&label(13)));
    for index in &mut indices {
        index.follow_palette(page.entries());
    }
    assert_eq!(indices[0].label_color(&label(13)), PALETTE[0]);
    assert_eq!(indices[1].label_color(&label(13)), PALETTE[0]);
    assert_eq!(colours(&indices[0]), colours(&indices[1]));
}
