//! A builder that builds nothing: decoding alone, the ceiling for any real builder.

use std::vec::Drain;

use crate::builder::{BuildError, Builder, BytesKind, ContainerKind, MemoSlot};

/// Decodes every opcode and keeps nothing. Memo lookups always succeed.
#[derive(Debug, Default)]
pub struct ScanBuilder {
    /// Values the decoder produced (opcodes that push something).
    pub values: u64,
}

impl Builder for ScanBuilder {
    type Value = ();

    fn none(&mut self) {
        self.values += 1;
    }
    fn bool(&mut self, _: bool) {
        self.values += 1;
    }
    fn int(&mut self, _: i64) {
        self.values += 1;
    }
    fn big_int(&mut self, _: &[u8]) -> Result<(), BuildError> {
        self.values += 1;
        Ok(())
    }
    fn float(&mut self, _: f64) {
        self.values += 1;
    }
    fn str(&mut self, _: &str) -> Result<(), BuildError> {
        self.values += 1;
        Ok(())
    }
    fn bytes(&mut self, _: &[u8], _: BytesKind) -> Result<(), BuildError> {
        self.values += 1;
        Ok(())
    }
    fn new_container(&mut self, _: ContainerKind) -> Result<(), BuildError> {
        self.values += 1;
        Ok(())
    }
    fn append(&mut self, _: &(), _: Drain<'_, ()>) -> Result<(), BuildError> {
        Ok(())
    }
    fn set_items(&mut self, _: &(), _: Drain<'_, ()>) -> Result<(), BuildError> {
        Ok(())
    }
    fn add_items(&mut self, _: &(), _: Drain<'_, ()>) -> Result<(), BuildError> {
        Ok(())
    }
    fn tuple(&mut self, _: Drain<'_, ()>) -> Result<(), BuildError> {
        self.values += 1;
        Ok(())
    }
    fn frozenset(&mut self, _: Drain<'_, ()>) -> Result<(), BuildError> {
        self.values += 1;
        Ok(())
    }
    fn memo_put(&mut self, _: MemoSlot, _: &mut ()) -> Result<(), BuildError> {
        Ok(())
    }
    fn memo_get(&mut self, _: u32) -> Result<(), BuildError> {
        self.values += 1;
        Ok(())
    }
    fn append_memo_refs(&mut self, _: &(), indices: &[u32]) -> Result<(), BuildError> {
        self.values += indices.len() as u64;
        Ok(())
    }
    fn finish(&mut self, _: ()) -> Result<(), BuildError> {
        Ok(())
    }
}
