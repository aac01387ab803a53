//! Names of downloaded files. A download is named by the file's path relative to what
//! was opened (`tp2_pp1/rank0.pickle` → `tp2_pp1_rank0-device0`), never by its base
//! name alone, so exports of two runs' files of the same name stay apart, as the
//! cards, titles and URL keep them apart.

/// Extensions a snapshot's name ends with that the download leaves out.
const EXTENSIONS: [&str; 5] = [".gz", ".pickle", ".pkl", ".json", ".html"];

/// The stem of a download about `device` of the file at `path` (relative to what was
/// opened): the path's folders joined to its name by `_`, known extensions left out,
/// characters no file system takes replaced by `_`, then `-device{N}`.
pub fn download_stem(path: &str, device: i32) -> String {
    let mut stem = path.trim_matches(['/', '\\']);
    // `rank0.pickle.gz`: every known extension from the end.
    while let Some(shorter) = EXTENSIONS.iter().find_map(|e| strip_suffix_ci(stem, e)) {
        stem = shorter;
    }
    let mut out: String = stem
        .chars()
        .map(|c| match c {
            '/' | '\\' | ':' | '*' | '?' | '"' | '<' | '>' | '|' => '_',
            c if c.is_control() => '_',
            c => c,
        })
        .collect();
    if out.is_empty() {
        out.push_str("memscope");
    }
    format!("{out}-device{device}")
}

/// The stem of a download about two (file, device) sides compared, A then B:
/// `{A}-vs-{B}`, each as [`download_stem`] names it.
pub fn compare_stem(a: (&str, i32), b: (&str, i32)) -> String {
    format!("{}-vs-{}", download_stem(a.0, a.1), download_stem(b.0, b.1))
}

fn strip_suffix_ci<'a>(text: &'a str, suffix: &str) -> Option<&'a str> {
    let cut = text.len().checked_sub(suffix.len())?;
    let (head, tail) = (text.get(..cut)?, text.get(cut..)?);
    (tail.eq_ignore_ascii_case(suffix) && !head.is_empty() && !head.ends_with('/')).then_some(head)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_runs_files_of_one_name_download_apart() {
        let a = download_stem("tp2_pp1/rank0.pickle", 0);
        let b = download_stem("tp2_pp2/rank0.pickle", 0);
        assert_eq!(a, "tp2_pp1_rank0-device0");
        assert_eq!(b, "tp2_pp2_rank0-device0");
        assert_ne!(a, b);
    }

    #[test]
    fn known_extensions_go_and_the_rest_of_the_name_stays() {
        assert_eq!(download_stem("rank0.pickle", 3), "rank0-device3");
        assert_eq!(download_stem("run/rank1.pickle.gz", 0), "run_rank1-device0");
        assert_eq!(download_stem("RANK.PKL", 0), "RANK-device0");
        // Dots that are not a known extension are part of the name (the old rule cut
        // `run.v2/rank0.pickle` to `run`).
        assert_eq!(
            download_stem("run.v2/rank0.pickle", 0),
            "run.v2_rank0-device0"
        );
        assert_eq!(download_stem("a\\b:c.json", 1), "a_b_c-device1");
        // A name that is only an extension keeps it rather than becoming empty.
        assert_eq!(download_stem(".pickle", 0), ".pickle-device0");
        assert_eq!(download_stem("", 0), "memscope-device0");
    }

    #[test]
    fn a_comparison_names_both_sides_in_order() {
        assert_eq!(
            compare_stem(("tp2_pp1/rank0.pickle", 0), ("tp2_pp2/rank0.pickle", 1)),
            "tp2_pp1_rank0-device0-vs-tp2_pp2_rank0-device1"
        );
        assert_ne!(
            compare_stem(("a/rank0.pickle", 0), ("b/rank0.pickle", 0)),
            compare_stem(("b/rank0.pickle", 0), ("a/rank0.pickle", 0))
        );
    }

    /// Distinct paths of one folder depth give distinct stems (the rule only joins
    /// with `_` and cuts known extensions), over every pair of a small alphabet.
    #[test]
    fn distinct_paths_give_distinct_stems() {
        let parts = ["a", "b", "tp2_pp1", "tp2_pp2"];
        let names = ["rank0.pickle", "rank1.pickle", "rank0.pkl.gz"];
        let mut seen = std::collections::HashMap::new();
        for d in parts {
            for n in names {
                let path = format!("{d}/{n}");
                let stem = download_stem(&path, 0);
                let base = n.split('.').next().unwrap_or_default();
                if let Some(other) = seen.insert(stem.clone(), (d, base)) {
                    // Only the same folder and the same name before its extensions.
                    assert_eq!(other, (d, base), "{path} → {stem}");
                }
            }
        }
    }
}
