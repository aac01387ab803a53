//! The allocations kept bright in every view (the rest dimmed): the search's matches
//! or a flame node's allocations. One highlight at a time, and it remembers who set
//! it, so that one source clearing its own highlight never clears the other's.

use std::collections::HashSet;
use std::rc::Rc;

use crate::{Effect, Effects, Part};

/// Where the highlighted allocations come from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum HighlightSource {
    /// Nothing highlighted.
    #[default]
    None,
    /// The search's matches.
    Search,
    /// A flame node's allocations.
    Node,
}

/// The highlighted allocations of the shown device (`None`: every allocation drawn
/// plainly) and who set them. The set is shared with the views that draw it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Highlight {
    /// The allocation ids kept bright.
    pub ids: Option<Rc<HashSet<u32>>>,
    /// Who set them ([`HighlightSource::None`] exactly when `ids` is `None`).
    pub source: HighlightSource,
}

/// A change of the highlight.
#[derive(Clone, Debug, PartialEq)]
pub enum HighlightMsg {
    /// `source` highlights `ids`.
    Set {
        /// The allocation ids.
        ids: HashSet<u32>,
        /// Who asks.
        source: HighlightSource,
    },
    /// `source` takes back its highlight; another source's stays.
    Clear(HighlightSource),
    /// The shown device changed: nothing is highlighted.
    Reset,
}

/// Applies `msg`; a change redraws the canvases and the highlighted parts.
pub(crate) fn apply(h: &mut Highlight, msg: HighlightMsg, fx: &mut Effects) {
    let next = match msg {
        HighlightMsg::Set { ids, source } if source != HighlightSource::None => Highlight {
            ids: Some(Rc::new(ids)),
            source,
        },
        HighlightMsg::Set { .. } | HighlightMsg::Reset => Highlight::default(),
        HighlightMsg::Clear(source) if source == h.source => Highlight::default(),
        HighlightMsg::Clear(_) => return,
    };
    if *h != next {
        *h = next;
        fx.push(Effect::Dom(Part::Highlight));
        fx.push(Effect::Redraw);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(ids: &[u32], source: HighlightSource) -> HighlightMsg {
        HighlightMsg::Set {
            ids: ids.iter().copied().collect(),
            source,
        }
    }

    #[test]
    fn a_source_clears_only_its_own_highlight() {
        let mut h = Highlight::default();
        let mut fx = Effects::default();
        apply(&mut h, set(&[1, 2], HighlightSource::Node), &mut fx);
        assert_eq!(h.source, HighlightSource::Node);
        assert_eq!(fx.0, [Effect::Dom(Part::Highlight), Effect::Redraw]);
        // The search had nothing to clear: the flame node's highlight stays.
        let mut fx = Effects::default();
        apply(
            &mut h,
            HighlightMsg::Clear(HighlightSource::Search),
            &mut fx,
        );
        assert_eq!(h.ids.as_deref(), Some(&HashSet::from([1, 2])));
        assert!(fx.0.is_empty());
        // Search matches replace it; the node's clearing then leaves them.
        apply(&mut h, set(&[7], HighlightSource::Search), &mut fx);
        apply(&mut h, HighlightMsg::Clear(HighlightSource::Node), &mut fx);
        assert_eq!(h.ids.as_deref(), Some(&HashSet::from([7])));
        apply(
            &mut h,
            HighlightMsg::Clear(HighlightSource::Search),
            &mut fx,
        );
        assert_eq!(h, Highlight::default());
    }

    #[test]
    fn the_same_highlight_again_redraws_nothing_and_reset_clears_any() {
        let mut h = Highlight::default();
        let mut fx = Effects::default();
        apply(&mut h, set(&[3], HighlightSource::Search), &mut fx);
        let mut fx = Effects::default();
        apply(&mut h, set(&[3], HighlightSource::Search), &mut fx);
        assert!(fx.0.is_empty());
        apply(&mut h, HighlightMsg::Reset, &mut fx);
        assert_eq!(h, Highlight::default());
        assert_eq!(fx.0, [Effect::Dom(Part::Highlight), Effect::Redraw]);
        // No source, no highlight.
        apply(&mut h, set(&[3], HighlightSource::None), &mut fx);
        assert_eq!(h, Highlight::default());
    }
}
