//! The parser keeps the Builder contract: containers are created when they open, filled
//! in batches of at most 1,000 items (pairs), and placed only once they are complete.
#![allow(clippy::unwrap_used)] // Test helpers unwrap, as tests do.

use std::fmt::Write as _;
use std::vec::Drain;

use memscope_json::{JsonParser, BATCH};
use memscope_pickle::{BuildError, Builder, BytesKind, ContainerKind, MemoSlot};

/// Logs every step and refuses to change a container after it was placed.
#[derive(Default)]
struct Recorder {
    log: String,
    next: u32,
    placed: Vec<bool>,
    max_batch: usize,
}

impl Recorder {
    fn scalar(&mut self) -> u32 {
        self.next += 1;
        self.placed.push(false);
        self.next - 1
    }

    fn fill(&mut self, op: &str, target: u32, items: Drain<'_, u32>) -> Result<(), BuildError> {
        if self.placed[target as usize] {
            return Err(BuildError::Recursive);
        }
        let items: Vec<u32> = items.collect();
        self.max_batch = self.max_batch.max(items.len());
        if items.len() <= 4 {
            let _ = write!(self.log, "{op} {target} {items:?}; ");
        } else {
            let _ = write!(self.log, "{op} {target} x{}; ", items.len());
        }
        for item in items {
            self.placed[item as usize] = true;
        }
        Ok(())
    }
}

impl Builder for Recorder {
    type Value = u32;
    fn none(&mut self) -> u32 {
        self.scalar()
    }
    fn bool(&mut self, _: bool) -> u32 {
        self.scalar()
    }
    fn int(&mut self, _: i64) -> u32 {
        self.scalar()
    }
    fn big_int(&mut self, _: &[u8]) -> Result<u32, BuildError> {
        Ok(self.scalar())
    }
    fn float(&mut self, _: f64) -> u32 {
        self.scalar()
    }
    fn str(&mut self, _: &str) -> Result<u32, BuildError> {
        Ok(self.scalar())
    }
    fn bytes(&mut self, _: &[u8], _: BytesKind) -> Result<u32, BuildError> {
        Ok(self.scalar())
    }
    fn new_container(&mut self, kind: ContainerKind) -> Result<u32, BuildError> {
        let id = self.scalar();
        let _ = write!(self.log, "new {} {id}; ", kind.name());
        Ok(id)
    }
    fn append(&mut self, list: &u32, items: Drain<'_, u32>) -> Result<(), BuildError> {
        self.fill("append", *list, items)
    }
    fn set_items(&mut self, dict: &u32, pairs: Drain<'_, u32>) -> Result<(), BuildError> {
        assert_eq!(pairs.len() % 2, 0);
        self.fill("set_items", *dict, pairs)
    }
    fn add_items(&mut self, _: &u32, _: Drain<'_, u32>) -> Result<(), BuildError> {
        unreachable!("JSON has no sets")
    }
    fn tuple(&mut self, _: Drain<'_, u32>) -> Result<u32, BuildError> {
        unreachable!("JSON has no tuples")
    }
    fn frozenset(&mut self, _: Drain<'_, u32>) -> Result<u32, BuildError> {
        unreachable!("JSON has no frozensets")
    }
    fn memo_put(&mut self, _: MemoSlot, _: &mut u32) -> Result<(), BuildError> {
        unreachable!("JSON has no memo")
    }
    fn memo_get(&mut self, _: u32) -> Result<u32, BuildError> {
        unreachable!("JSON has no memo")
    }
    fn finish(&mut self, root: u32) -> Result<(), BuildError> {
        let _ = write!(self.log, "finish {root}");
        Ok(())
    }
}

fn record(doc: &[u8], chunk: usize) -> Recorder {
    let mut parser = JsonParser::new(Recorder::default());
    for piece in doc.chunks(chunk) {
        parser.feed(piece).unwrap();
    }
    parser.finish().unwrap()
}

#[test]
fn containers_are_placed_when_complete() {
    let doc = br#"[[1, 2], {"a": [3], "b": {}}, []]"#;
    for chunk in [1, 3, doc.len()] {
        let recorder = record(doc, chunk);
        assert_eq!(
            recorder.log,
            "new list 0; new list 1; append 1 [2, 3]; new dict 4; new list 6; \
             append 6 [7]; new dict 9; set_items 4 [5, 6, 8, 9]; new list 10; \
             append 0 [1, 4, 10]; finish 0"
        );
    }
}

#[test]
fn items_arrive_in_batches() {
    let items: Vec<String> = (0..2500).map(|i| format!("[{i}]")).collect();
    let doc = format!("[{}]", items.join(","));
    let recorder = record(doc.as_bytes(), 4096);
    assert_eq!(recorder.max_batch, BATCH);
    assert!(recorder.log.contains("append 0 x1000; "));
    assert!(recorder.log.ends_with("append 0 x500; finish 0"));
    assert_eq!(recorder.log.matches("append 0 ").count(), 3);

    let pairs: Vec<String> = (0..2500).map(|i| format!("\"k{i}\": [{i}]")).collect();
    let doc = format!("{{{}}}", pairs.join(","));
    let recorder = record(doc.as_bytes(), 7);
    assert_eq!(recorder.max_batch, 2 * BATCH);
    assert!(recorder.log.contains("set_items 0 x2000; "));
    assert!(recorder.log.ends_with("set_items 0 x1000; finish 0"));
    assert_eq!(recorder.log.matches("set_items 0 ").count(), 3);
}
