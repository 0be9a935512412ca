//! Sorted set values in Redis's two encodings: a [`Listpack`] of member, score pairs in score
//! order while small (`zset-max-listpack-entries`, members up to `zset-max-listpack-value` bytes),
//! a skiplist with a member index beyond. OBJECT ENCODING reports `listpack` or `skiplist`.

use crate::listpack::Listpack;

/// A sorted set value.
#[derive(Clone, Debug)]
pub enum ZSetValue {
    /// `member score member score …`, ordered by (score, member).
    Packed(Listpack),
}

impl Default for ZSetValue {
    fn default() -> Self {
        ZSetValue::Packed(Listpack::new())
    }
}

impl ZSetValue {
    pub fn len(&self) -> usize {
        match self {
            ZSetValue::Packed(lp) => lp.len() / 2,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn encoding_name(&self) -> &'static str {
        match self {
            ZSetValue::Packed(_) => "listpack",
        }
    }
}
