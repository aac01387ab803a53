//! A pickle writer for plain data (protocol 2 opcodes): the subset the snapshot reader
//! accepts and nothing that imports or calls code. Shared values (a frame, a call
//! stack) are written once and referenced through the memo, as torch does, so the
//! reader interns them by identity again.

/// Writes pickle opcodes into a buffer.
pub struct PickleWriter {
    out: Vec<u8>,
    memo: u32,
}

impl PickleWriter {
    /// A writer with the protocol header written.
    pub fn new() -> PickleWriter {
        PickleWriter {
            out: vec![0x80, 2],
            memo: 0,
        }
    }

    /// Ends the pickle and returns its bytes.
    pub fn finish(mut self) -> Vec<u8> {
        self.out.push(b'.');
        self.out
    }

    /// `{}` (then items with [`PickleWriter::mark`] … [`PickleWriter::set_items`]).
    pub fn empty_dict(&mut self) {
        self.out.push(b'}');
    }

    /// `[]` (then items with [`PickleWriter::mark`] … [`PickleWriter::append_items`]).
    pub fn empty_list(&mut self) {
        self.out.push(b']');
    }

    /// MARK.
    pub fn mark(&mut self) {
        self.out.push(b'(');
    }

    /// SETITEMS: the key/value pairs since the mark go into the dict under it.
    pub fn set_items(&mut self) {
        self.out.push(b'u');
    }

    /// APPENDS: the values since the mark go into the list under it.
    pub fn append_items(&mut self) {
        self.out.push(b'e');
    }

    /// A string.
    pub fn str(&mut self, s: &str) {
        self.out.push(b'X');
        self.out.extend_from_slice(&(s.len() as u32).to_le_bytes());
        self.out.extend_from_slice(s.as_bytes());
    }

    /// An integer of any size up to 128 bits.
    pub fn int(&mut self, v: i128) {
        if (0..256).contains(&v) {
            self.out.extend_from_slice(&[b'K', v as u8]);
        } else if (0..65536).contains(&v) {
            self.out.push(b'M');
            self.out.extend_from_slice(&(v as u16).to_le_bytes());
        } else if let Ok(small) = i32::try_from(v) {
            self.out.push(b'J');
            self.out.extend_from_slice(&small.to_le_bytes());
        } else {
            // LONG1: little-endian two's complement, as short as the sign allows.
            let bytes = v.to_le_bytes();
            let mut n = bytes.len();
            while n > 1 {
                let top = bytes[n - 1];
                let next_sign = bytes[n - 2] & 0x80;
                if (top == 0 && next_sign == 0) || (top == 0xff && next_sign != 0) {
                    n -= 1;
                } else {
                    break;
                }
            }
            self.out.extend_from_slice(&[0x8a, n as u8]);
            self.out.extend_from_slice(&bytes[..n]);
        }
    }

    /// A float.
    pub fn float(&mut self, v: f64) {
        self.out.push(b'G');
        self.out.extend_from_slice(&v.to_be_bytes());
    }

    /// A bool.
    pub fn bool(&mut self, v: bool) {
        self.out.push(if v { 0x88 } else { 0x89 });
    }

    /// `None`.
    pub fn none(&mut self) {
        self.out.push(b'N');
    }

    /// TUPLE2 of the two values just written.
    pub fn tuple2(&mut self) {
        self.out.push(0x86);
    }

    /// Stores the value on top of the stack in the next memo slot and returns it.
    pub fn put(&mut self) -> u32 {
        let slot = self.memo;
        self.memo += 1;
        self.out.push(b'r');
        self.out.extend_from_slice(&slot.to_le_bytes());
        slot
    }

    /// Pushes the value stored in memo slot `slot`.
    pub fn get(&mut self, slot: u32) {
        self.out.push(b'j');
        self.out.extend_from_slice(&slot.to_le_bytes());
    }
}

impl Default for PickleWriter {
    fn default() -> Self {
        PickleWriter::new()
    }
}
