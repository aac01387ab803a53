//! Partial trouble: things in a file that are odd but not fatal (unknown keys, unknown
//! actions, values of the wrong type). They are counted while loading and reported, so
//! a newer torch version degrades gracefully instead of failing to open.

use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};

use crate::intern::{StrId, Strings};

/// What a warning is about; `detail` names the key or value when there is one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct WarningKey {
    /// What happened, in plain words, e.g. "unknown key in trace entries".
    pub what: &'static str,
    /// The key or value concerned.
    pub detail: Option<StrId>,
}

/// Counted warnings.
#[derive(Clone, Debug, Default)]
pub struct Warnings {
    counts: FxHashMap<WarningKey, u64>,
}

/// One reported warning (`{"message": …, "count": …}` in JSON).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Warning {
    /// The message, e.g. "unknown key in trace entries: 'foo'".
    pub message: String,
    /// How many times it happened.
    pub count: u64,
}

/// A JSON line with its file's warnings beside its own fields: how every `--json`
/// line of the CLI and every result of the Python package carries them.
#[derive(Serialize)]
pub struct WithWarnings<'a, T: Serialize> {
    /// The line's own fields.
    #[serde(flatten)]
    pub line: &'a T,
    /// The warnings of the file the line comes from.
    pub warnings: &'a [Warning],
}

impl Warnings {
    /// Counts one occurrence.
    pub fn add(&mut self, what: &'static str, detail: Option<StrId>) {
        *self.counts.entry(WarningKey { what, detail }).or_default() += 1;
    }

    /// Counts `n` occurrences.
    pub fn add_n(&mut self, what: &'static str, detail: Option<StrId>, n: u64) {
        if n > 0 {
            *self.counts.entry(WarningKey { what, detail }).or_default() += n;
        }
    }

    /// Whether nothing was odd.
    pub fn is_empty(&self) -> bool {
        self.counts.is_empty()
    }

    /// The count for one key (for tests and reports).
    pub fn count(&self, what: &'static str, detail: Option<StrId>) -> u64 {
        self.counts
            .get(&WarningKey { what, detail })
            .copied()
            .unwrap_or(0)
    }

    /// Every warning as a message, most frequent first.
    pub fn report(&self, strings: &Strings) -> Vec<Warning> {
        let mut out: Vec<Warning> = self
            .counts
            .iter()
            .map(|(key, &count)| Warning {
                message: match key.detail {
                    Some(id) => format!("{}: {:?}", key.what, strings.get(id)),
                    None => key.what.to_owned(),
                },
                count,
            })
            .collect();
        out.sort_by(|a, b| {
            b.count
                .cmp(&a.count)
                .then_with(|| a.message.cmp(&b.message))
        });
        out
    }
}
