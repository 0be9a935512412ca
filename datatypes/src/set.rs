//! Set values in Redis 7.0's two encodings: an [`Intset`] while every member is an integer and
//! there are at most `set-max-intset-entries` of them, a [`Dict`] beyond. OBJECT ENCODING reports
//! `intset` or `hashtable`.

use crate::dict::Dict;
use crate::intset::Intset;
use crate::small_bytes::SmallBytes;

/// A set value.
#[derive(Clone, Debug)]
pub enum SetValue {
    Ints(Intset),
    Table(Box<Dict<SmallBytes, ()>>),
}

impl SetValue {
    /// Number of members.
    pub fn len(&self) -> usize {
        match self {
            SetValue::Ints(i) => i.len(),
            SetValue::Table(d) => d.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn encoding_name(&self) -> &'static str {
        match self {
            SetValue::Ints(_) => "intset",
            SetValue::Table(_) => "hashtable",
        }
    }
}
