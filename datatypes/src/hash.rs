//! Hash values (field → value) in Redis's two encodings: a [`Listpack`] of alternating fields and
//! values while the hash is small (`hash-max-listpack-entries` fields, none longer than
//! `hash-max-listpack-value` bytes), a [`Dict`] beyond. OBJECT ENCODING reports `listpack` or
//! `hashtable`; the conversion is one-way, as in Redis.

use crate::dict::Dict;
use crate::listpack::Listpack;
use crate::small_bytes::SmallBytes;

/// A hash value.
#[derive(Clone, Debug)]
pub enum HashValue {
    /// Fields and values alternating: `f1 v1 f2 v2 …`.
    Packed(Listpack),
    Table(Box<Dict<SmallBytes, SmallBytes>>),
}

impl Default for HashValue {
    fn default() -> Self {
        HashValue::Packed(Listpack::new())
    }
}

impl HashValue {
    pub fn new() -> Self {
        Self::default()
    }

    /// Number of fields.
    pub fn len(&self) -> usize {
        match self {
            HashValue::Packed(lp) => lp.len() / 2,
            HashValue::Table(d) => d.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// OBJECT ENCODING's name for the current form.
    pub fn encoding_name(&self) -> &'static str {
        match self {
            HashValue::Packed(_) => "listpack",
            HashValue::Table(_) => "hashtable",
        }
    }
}
