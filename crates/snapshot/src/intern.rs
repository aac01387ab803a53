//! Interned strings, frames and call stacks: each distinct value stored once and named
//! by a `u32` id, so columns of millions of events hold 4-byte ids.

use std::hash::{BuildHasher, Hash, Hasher};

use hashbrown::HashTable;
use rustc_hash::FxBuildHasher;

/// Id of an interned string.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct StrId(pub u32);

/// Id of an interned frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FrameId(pub u32);

/// Id of an interned call stack (a sequence of frames, innermost first as PyTorch
/// records them). [`StackId::EMPTY`] is the stack of an entry without frames.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct StackId(pub u32);

impl StackId {
    /// No frames recorded.
    pub const EMPTY: StackId = StackId(0);
}

fn hash_of<T: Hash + ?Sized>(value: &T) -> u64 {
    FxBuildHasher.hash_one(value)
}

/// Hash of a frame sequence, two ids per step: stacks are hashed once per trace entry,
/// so this is on the hot path of loading.
fn hash_frames(frames: &[FrameId]) -> u64 {
    let mut hasher = FxBuildHasher.build_hasher();
    hasher.write_usize(frames.len());
    let mut pairs = frames.chunks_exact(2);
    for pair in &mut pairs {
        hasher.write_u64(u64::from(pair[0].0) << 32 | u64::from(pair[1].0));
    }
    if let [last] = pairs.remainder() {
        hasher.write_u32(last.0);
    }
    hasher.finish()
}

/// Distinct strings, stored back to back in one buffer.
#[derive(Clone, Debug, Default)]
pub struct Strings {
    text: String,
    /// `ends[i]` is where string `i` ends in `text`; it starts where `i - 1` ends.
    ends: Vec<u32>,
    table: HashTable<u32>,
}

impl Strings {
    /// The id of `s`, interning it if new. Fails only past 4 GiB of distinct text.
    pub fn intern(&mut self, s: &str) -> Result<StrId, &'static str> {
        let hash = hash_of(s);
        let Strings { text, ends, table } = self;
        let get = |i: u32| -> &str {
            let end = ends[i as usize] as usize;
            let start = if i == 0 {
                0
            } else {
                ends[i as usize - 1] as usize
            };
            &text[start..end]
        };
        if let Some(&id) = table.find(hash, |&i| get(i) == s) {
            return Ok(StrId(id));
        }
        let id = u32::try_from(ends.len()).map_err(|_| "more than 4 billion strings")?;
        text.push_str(s);
        let end = u32::try_from(text.len()).map_err(|_| "more than 4 GiB of distinct text")?;
        ends.push(end);
        let Strings { text, ends, table } = self;
        table.insert_unique(hash, id, |&i| {
            let end = ends[i as usize] as usize;
            let start = if i == 0 {
                0
            } else {
                ends[i as usize - 1] as usize
            };
            hash_of(&text[start..end])
        });
        Ok(StrId(id))
    }

    /// The string with id `id` (empty for an unknown id).
    pub fn get(&self, id: StrId) -> &str {
        let i = id.0 as usize;
        match self.ends.get(i) {
            Some(&end) => {
                let start = if i == 0 { 0 } else { self.ends[i - 1] as usize };
                &self.text[start..end as usize]
            }
            None => "",
        }
    }

    /// The id of `s` if it was interned.
    pub fn lookup(&self, s: &str) -> Option<StrId> {
        let hash = hash_of(s);
        self.table
            .find(hash, |&i| self.get(StrId(i)) == s)
            .map(|&i| StrId(i))
    }

    /// The number of distinct strings.
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// Bytes of distinct text.
    pub fn text_bytes(&self) -> usize {
        self.text.len()
    }
}

/// The optional torch.fx fields of a frame (compiled graphs).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct FxInfo {
    /// `fx_node_op`.
    pub node_op: Option<StrId>,
    /// `fx_node_name`.
    pub node_name: Option<StrId>,
    /// `fx_node_target`.
    pub node_target: Option<StrId>,
    /// `fx_original_trace`.
    pub original_trace: Option<StrId>,
}

impl FxInfo {
    /// Whether no field is set.
    pub fn is_empty(&self) -> bool {
        *self == FxInfo::default()
    }
}

/// The `line` of a frame that has none (CPython's `None`: distinct from every line).
pub const NO_LINE: i128 = i128::MIN;

/// One frame as recorded: `{filename, line, name}` plus optional fx fields.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Frame {
    /// `filename`.
    pub filename: StrId,
    /// `line`. PyTorch writes 2^64−1 for unknown C++ lines, hence `i128`; a frame
    /// without `line` has [`NO_LINE`].
    pub line: i128,
    /// `name` (the function).
    pub name: StrId,
    /// torch.fx fields.
    pub fx: FxInfo,
}

/// Distinct frames, in columns.
#[derive(Clone, Debug, Default)]
pub struct Frames {
    /// `filename` per frame.
    pub filename: Vec<StrId>,
    /// `line` per frame.
    pub line: Vec<i128>,
    /// `name` per frame.
    pub name: Vec<StrId>,
    /// fx fields, for the few frames that have them, sorted by frame id.
    pub fx: Vec<(FrameId, FxInfo)>,
    table: HashTable<u32>,
}

impl Frames {
    fn frame_at(&self, i: u32) -> Frame {
        let i = i as usize;
        Frame {
            filename: self.filename[i],
            line: self.line[i],
            name: self.name[i],
            fx: self.fx_of(FrameId(i as u32)),
        }
    }

    /// The fx fields of a frame (all `None` for most).
    pub fn fx_of(&self, id: FrameId) -> FxInfo {
        match self.fx.binary_search_by_key(&id, |(f, _)| *f) {
            Ok(pos) => self.fx[pos].1,
            Err(_) => FxInfo::default(),
        }
    }

    /// The frame with id `id`.
    pub fn get(&self, id: FrameId) -> Frame {
        self.frame_at(id.0)
    }

    /// The id of `frame`, interning it if new.
    pub fn intern(&mut self, frame: Frame) -> Result<FrameId, &'static str> {
        let hash = hash_of(&frame);
        if let Some(&id) = self.table.find(hash, |&i| self.frame_at(i) == frame) {
            return Ok(FrameId(id));
        }
        let id = u32::try_from(self.filename.len()).map_err(|_| "more than 4 billion frames")?;
        self.filename.push(frame.filename);
        self.line.push(frame.line);
        self.name.push(frame.name);
        if !frame.fx.is_empty() {
            // Ids grow, so pushing keeps `fx` sorted.
            self.fx.push((FrameId(id), frame.fx));
        }
        let Frames {
            filename,
            line,
            name,
            fx,
            table,
        } = self;
        table.insert_unique(hash, id, |&i| {
            let i = i as usize;
            let fx = match fx.binary_search_by_key(&FrameId(i as u32), |(f, _)| *f) {
                Ok(pos) => fx[pos].1,
                Err(_) => FxInfo::default(),
            };
            hash_of(&Frame {
                filename: filename[i],
                line: line[i],
                name: name[i],
                fx,
            })
        });
        Ok(FrameId(id))
    }

    /// The number of distinct frames.
    pub fn len(&self) -> usize {
        self.filename.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.filename.is_empty()
    }
}

/// Distinct call stacks: frame-id sequences stored back to back.
#[derive(Clone, Debug)]
pub struct Stacks {
    /// `ends[i]` is where stack `i` ends in `frames`.
    ends: Vec<u32>,
    frames: Vec<FrameId>,
    table: HashTable<u32>,
}

impl Default for Stacks {
    fn default() -> Self {
        // Stack 0 is the empty stack.
        let mut table = HashTable::new();
        table.insert_unique(hash_frames(&[]), 0, |_| 0);
        Stacks {
            ends: vec![0],
            frames: Vec::new(),
            table,
        }
    }
}

impl Stacks {
    /// The frames of stack `id`, innermost first.
    pub fn get(&self, id: StackId) -> &[FrameId] {
        let i = id.0 as usize;
        match self.ends.get(i) {
            Some(&end) => {
                let start = if i == 0 { 0 } else { self.ends[i - 1] as usize };
                &self.frames[start..end as usize]
            }
            None => &[],
        }
    }

    /// The id of the stack `frames`, interning it if new.
    pub fn intern(&mut self, frames: &[FrameId]) -> Result<StackId, &'static str> {
        let hash = hash_frames(frames);
        if let Some(&id) = self.table.find(hash, |&i| self.get(StackId(i)) == frames) {
            return Ok(StackId(id));
        }
        let id = u32::try_from(self.ends.len()).map_err(|_| "more than 4 billion stacks")?;
        self.frames.extend_from_slice(frames);
        let end = u32::try_from(self.frames.len())
            .map_err(|_| "more than 4 billion frames in distinct stacks")?;
        self.ends.push(end);
        let Stacks {
            ends,
            frames,
            table,
        } = self;
        table.insert_unique(hash, id, |&i| {
            let i = i as usize;
            let start = if i == 0 { 0 } else { ends[i - 1] as usize };
            hash_frames(&frames[start..ends[i] as usize])
        });
        Ok(StackId(id))
    }

    /// The number of distinct stacks, the empty one included.
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    /// Always false: the empty stack is always there.
    pub fn is_empty(&self) -> bool {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_intern_once() {
        let mut strings = Strings::default();
        let a = strings.intern("alloc").unwrap();
        let b = strings.intern("free").unwrap();
        assert_eq!(strings.intern("alloc").unwrap(), a);
        assert_ne!(a, b);
        assert_eq!(strings.get(b), "free");
        assert_eq!(strings.lookup("free"), Some(b));
        assert_eq!(strings.lookup("nope"), None);
        assert_eq!(strings.intern("").unwrap(), StrId(2));
        assert_eq!(strings.get(StrId(2)), "");
        assert_eq!(strings.len(), 3);
    }

    #[test]
    fn stacks_and_frames_intern_once() {
        let mut strings = Strings::default();
        let mut frames = Frames::default();
        let f = |frames: &mut Frames, line| {
            frames
                .intern(Frame {
                    filename: StrId(0),
                    line,
                    name: StrId(1),
                    fx: FxInfo::default(),
                })
                .unwrap()
        };
        strings.intern("a.py").unwrap();
        let f1 = f(&mut frames, 1);
        let f2 = f(&mut frames, (1 << 64) - 1);
        assert_eq!(f(&mut frames, 1), f1);
        assert_eq!(frames.len(), 2);
        assert_eq!(frames.get(f2).line, 18_446_744_073_709_551_615);
        let mut stacks = Stacks::default();
        assert_eq!(stacks.intern(&[]).unwrap(), StackId::EMPTY);
        let s = stacks.intern(&[f1, f2]).unwrap();
        assert_eq!(stacks.intern(&[f1, f2]).unwrap(), s);
        assert_ne!(stacks.intern(&[f2, f1]).unwrap(), s);
        assert_eq!(stacks.get(s), &[f1, f2]);
        assert_eq!(stacks.len(), 3);
    }
}
