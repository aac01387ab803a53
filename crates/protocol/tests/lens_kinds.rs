//! Every lens question round-trips through serde with its kind, and its answer is the
//! variant of the same name and kind: the page's stale-answer dropping pairs an answer
//! with its question by kind, so a question whose answer came back under another kind
//! would be dropped or shown in the wrong view.

use memscope_analysis::{AllocatorSettings, Direction, SortKey};
use memscope_protocol::lens::{
    At, CsvAnswer, CsvTable, EventsAnswer, FlameQuery, FlameWeight, LaneHitAnswer, LensKind,
    LensRequest, LensResponse, RevealAnswer, WhatIfQuery,
};
use memscope_protocol::Axis;
use memscope_render::{FlameOrder, Orientation, RowsView};
use serde::de::value::Error;
use serde::de::{Deserialize, Deserializer, Visitor};
use serde_json::Value;

/// A question of each kind (the match makes a new kind add its sample here).
fn sample(kind: LensKind) -> LensRequest {
    let view = RowsView {
        axis: Axis::Events,
        x0: 1.5,
        x1: 250.0,
        width_px: 800,
        first_row: 3,
        row_count: 12,
        row_height_px: 18,
        expanded_height_px: 120,
        theme: Default::default(),
    };
    let flame = FlameQuery {
        weight: FlameWeight::Live(At::X {
            axis: Axis::Time,
            x: 12.25,
        }),
        axis: Axis::Time,
        orientation: Orientation::default(),
        order: FlameOrder::default(),
        focus_path: vec![4, 9],
        focus_node: Some((7, 2)),
        width_px: 640,
        first_depth: 1,
        rows: 30,
        highlight_search: true,
        selected: 17,
        list_limit: 50,
    };
    match kind {
        LensKind::Settings => LensRequest::Settings,
        LensKind::Overview => LensRequest::Overview,
        LensKind::Moment => LensRequest::Moment(At::Moment(41)),
        LensKind::Events => LensRequest::Events {
            first: 100,
            count: 60,
        },
        LensKind::Table => LensRequest::Table {
            key: SortKey::ByteTime,
            direction: Direction::Ascending,
            filter: "model.py, \"attn\"".to_owned(),
            first: 5,
            count: 40,
        },
        LensKind::Search => LensRequest::Search {
            text: "size:>1MiB".to_owned(),
        },
        LensKind::Range => LensRequest::Range {
            axis: Axis::Time,
            x0: 10.0,
            x1: 99.5,
        },
        LensKind::Reveal => LensRequest::Reveal { id: 3 },
        LensKind::Flame => LensRequest::Flame(flame),
        LensKind::FlameInfo => LensRequest::FlameInfo {
            node: 8,
            generation: 2,
            query: flame,
        },
        LensKind::Lanes => LensRequest::Lanes { view, selected: 9 },
        LensKind::LaneHit => LensRequest::LaneHit { row: 2, x: 77.0 },
        LensKind::Segments => LensRequest::Segments { view, selected: 1 },
        LensKind::Pools => LensRequest::Pools { view },
        LensKind::WhatIf => LensRequest::WhatIf(WhatIfQuery {
            capacity: "40GiB".to_owned(),
            sets: vec!["expandable_segments:True".to_owned()],
        }),
        LensKind::Csv => LensRequest::Csv(CsvTable::TopAllocations {
            key: SortKey::Size,
            direction: Direction::Descending,
            filter: String::new(),
        }),
    }
}

/// The variant a message carries on the wire (serde's external tagging: a bare name,
/// or an object with the name as its one key).
fn wire_name(value: &Value) -> String {
    match value {
        Value::String(name) => name.clone(),
        Value::Object(map) if map.len() == 1 => map.keys().next().cloned().unwrap_or_default(),
        other => panic!("not an externally tagged variant: {other}"),
    }
}

#[test]
fn every_question_round_trips_with_its_kind() {
    assert_eq!(LensKind::ALL.len(), 16, "a lens was added or removed");
    for &kind in LensKind::ALL {
        let question = sample(kind);
        assert_eq!(question.kind(), kind);
        let json = serde_json::to_value(&question).expect("a question serializes");
        assert_eq!(wire_name(&json), kind.name(), "{kind:?}'s wire name");
        let back: LensRequest = serde_json::from_value(json.clone()).expect("and reads back");
        assert_eq!(back.kind(), kind);
        assert_eq!(
            serde_json::to_value(&back).expect("again"),
            json,
            "{kind:?} changed on the way"
        );
    }
}

/// Reads the variant names an enum's `Deserialize` declares, without a value.
struct VariantNames<'a>(&'a mut &'static [&'static str]);

impl<'de> Deserializer<'de> for VariantNames<'_> {
    type Error = Error;

    fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Error> {
        Err(serde::de::Error::custom("not an enum"))
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        variants: &'static [&'static str],
        _visitor: V,
    ) -> Result<V::Value, Error> {
        *self.0 = variants;
        Err(serde::de::Error::custom("names read"))
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes
        byte_buf option unit unit_struct newtype_struct seq tuple tuple_struct map
        struct identifier ignored_any
    }
}

fn variant_names<T: for<'de> Deserialize<'de>>() -> Vec<&'static str> {
    let mut names: &'static [&'static str] = &[];
    assert!(T::deserialize(VariantNames(&mut names)).is_err());
    names.to_vec()
}

#[test]
fn questions_answers_and_kinds_are_the_same_list() {
    let kinds: Vec<&str> = LensKind::ALL.iter().map(|k| k.name()).collect();
    assert_eq!(variant_names::<LensRequest>(), kinds);
    assert_eq!(variant_names::<LensResponse>(), kinds);
    // Distinct: one kind per lens.
    let mut sorted = kinds.clone();
    sorted.sort_unstable();
    sorted.dedup();
    assert_eq!(sorted.len(), kinds.len());
}

/// Answers that are plain data (the others carry typed arrays, which exist only in a
/// browser) read back as the answer of their question's kind.
#[test]
fn answers_round_trip_to_their_questions_kind() {
    let answers = [
        LensResponse::Settings(AllocatorSettings::default()),
        LensResponse::Events(EventsAnswer {
            first: 100,
            total: 2081,
            rows: Vec::new(),
        }),
        LensResponse::Reveal(RevealAnswer {
            id: 3,
            time: (1.0, 2.0),
            events: (4.0, 9.0),
            size_bytes: 512,
            band_bytes: Some((0.0, 512.0)),
        }),
        LensResponse::FlameInfo(None),
        LensResponse::LaneHit(LaneHitAnswer {
            row: 2,
            moment: Some(7),
            time_us: None,
            items: Vec::new(),
        }),
        LensResponse::Csv(CsvAnswer {
            table: CsvTable::Events,
            rows: 2,
            text: "a,b\r\n".to_owned(),
        }),
    ];
    for answer in answers {
        let kind = answer.kind();
        let json = serde_json::to_value(&answer).expect("an answer serializes");
        assert_eq!(wire_name(&json), kind.name());
        let back: LensResponse = serde_json::from_value(json).expect("and reads back");
        assert_eq!(back.kind(), kind);
        // The question of that kind carries the same name.
        assert_eq!(
            wire_name(&serde_json::to_value(sample(kind)).expect("question")),
            kind.name()
        );
    }
}
