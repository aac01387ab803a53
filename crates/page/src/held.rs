//! Which ranks' full models the workers keep: the rule that picks the models to drop
//! when those held add up to more than the budget (counted in the bytes of the files
//! they were read from). The least recently used go first; never the rank shown, a
//! rank that has not reported yet (its record would be lost with it), one a fleet
//! question waits on, or one whose file cannot be read again. A dropped rank keeps its
//! card, its name and its record; opening it reads its file again.

/// A model a worker holds, as the rule sees it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HeldModel {
    /// The rank's key.
    pub key: u32,
    /// Bytes of the file it was read from.
    pub bytes: f64,
    /// When it was last used (larger: later).
    pub used: u64,
    /// It may be dropped: not shown, reported, nothing waits on it, its file can be
    /// read again.
    pub droppable: bool,
}

/// The keys of the models to drop, in order, so that those left fit in
/// `budget_bytes` (or as close as the models that must stay allow).
pub fn to_drop(models: &[HeldModel], budget_bytes: f64) -> Vec<u32> {
    let mut held: f64 = models.iter().map(|m| m.bytes).sum();
    let mut candidates: Vec<&HeldModel> = models.iter().filter(|m| m.droppable).collect();
    candidates.sort_by_key(|m| m.used);
    let mut out = Vec::new();
    for m in candidates {
        if held <= budget_bytes {
            break;
        }
        held -= m.bytes;
        out.push(m.key);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn model(key: u32, bytes: f64, used: u64, droppable: bool) -> HeldModel {
        HeldModel {
            key,
            bytes,
            used,
            droppable,
        }
    }

    #[test]
    fn the_least_recently_used_go_first_until_the_rest_fit() {
        let models = [
            model(1, 100.0, 5, true),
            model(2, 100.0, 1, true),
            model(3, 100.0, 3, true),
            model(4, 100.0, 0, false), // shown, or not reported yet
        ];
        assert_eq!(to_drop(&models, 400.0), Vec::<u32>::new());
        assert_eq!(to_drop(&models, 300.0), vec![2]);
        assert_eq!(to_drop(&models, 150.0), vec![2, 3, 1]);
        // Budget 0 keeps only what must stay.
        assert_eq!(to_drop(&models, 0.0), vec![2, 3, 1]);
    }

    proptest! {
        /// What is dropped is droppable, least recently used first; what stays fits
        /// the budget unless only models that must stay are left to drop; nothing is
        /// dropped that was not needed.
        #[test]
        fn drops_only_what_is_needed(
            raw in proptest::collection::vec((1.0f64..1e9, 0u64..1000, any::<bool>()), 0..30),
            budget in 0.0f64..1e10,
        ) {
            let models: Vec<HeldModel> = raw
                .iter()
                .enumerate()
                .map(|(i, &(bytes, used, droppable))| model(i as u32, bytes, used, droppable))
                .collect();
            let dropped = to_drop(&models, budget);
            let by_key = |k: u32| models[k as usize];
            prop_assert!(dropped.iter().all(|&k| by_key(k).droppable));
            prop_assert!(dropped.windows(2).all(|w| by_key(w[0]).used <= by_key(w[1]).used));
            let left: f64 = models
                .iter()
                .filter(|m| !dropped.contains(&m.key))
                .map(|m| m.bytes)
                .sum();
            let all_droppable_gone = models.iter().filter(|m| m.droppable).count() == dropped.len();
            prop_assert!(left <= budget || all_droppable_gone);
            // Without its last drop, the rest would not have fitted.
            if let Some(&last) = dropped.last() {
                prop_assert!(left + by_key(last).bytes > budget);
            }
        }
    }
}
