//! [`SmallBytes`]: an immutable owned byte string, 24 bytes wide, that stores up to 23 bytes
//! inline and longer ones in one exactly-sized heap block.
//!
//! Keys are usually short (`user:1000:session`), and a million keys each paying for a separate
//! allocation would cost more memory than the keys themselves. Inline storage puts the key inside
//! the dict entry. The inline length is an enum with 24 values, which leaves the other 232 byte
//! values free as a niche: `Option<SmallBytes>` and enums that embed it (the keyspace's value
//! type) stay 24 bytes wide.

use std::borrow::Borrow;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::ops::Deref;

/// Bytes kept inline.
pub const INLINE_CAPACITY: usize = 23;

/// An owned byte string with small-string optimisation. Hashes, compares and borrows exactly
/// like `[u8]`, so a `Dict<SmallBytes, _>` can be queried with `&[u8]`.
#[derive(Clone)]
pub struct SmallBytes(Repr);

#[derive(Clone)]
enum Repr {
    Inline {
        data: [u8; INLINE_CAPACITY],
        len: InlineLen,
    },
    Heap(Box<[u8]>),
}

/// Lengths 0..=23 as an enum, so the compiler knows the other byte values never occur there.
#[derive(Clone, Copy)]
#[repr(u8)]
#[rustfmt::skip]
enum InlineLen {
    L0, L1, L2, L3, L4, L5, L6, L7, L8, L9, L10, L11, L12, L13, L14, L15, L16, L17, L18, L19, L20,
    L21, L22, L23,
}

#[rustfmt::skip]
const INLINE_LENS: [InlineLen; INLINE_CAPACITY + 1] = {
    use InlineLen::*;
    [L0, L1, L2, L3, L4, L5, L6, L7, L8, L9, L10, L11, L12, L13, L14, L15, L16, L17, L18, L19,
     L20, L21, L22, L23]
};

impl SmallBytes {
    /// Where the value's first heap block starts (or the value itself, when it has none): what
    /// a pipeline's prefetch asks the CPU for before the command that reads it runs.
    #[inline]
    pub fn heap_address(&self) -> *const u8 {
        self.as_slice().as_ptr()
    }

    pub fn new(bytes: &[u8]) -> Self {
        if bytes.len() <= INLINE_CAPACITY {
            let mut data = [0u8; INLINE_CAPACITY];
            data[..bytes.len()].copy_from_slice(bytes);
            SmallBytes(Repr::Inline {
                data,
                len: INLINE_LENS[bytes.len()],
            })
        } else {
            SmallBytes(Repr::Heap(bytes.into()))
        }
    }

    pub fn empty() -> Self {
        Self::new(b"")
    }

    pub fn as_slice(&self) -> &[u8] {
        match &self.0 {
            Repr::Inline { data, len } => &data[..*len as usize],
            Repr::Heap(b) => b,
        }
    }

    /// True when the bytes live inside the value itself (no heap block).
    pub fn is_inline(&self) -> bool {
        matches!(self.0, Repr::Inline { .. })
    }

    /// Heap bytes owned beyond the 24-byte value itself (for memory accounting).
    pub fn heap_size(&self) -> usize {
        match &self.0 {
            Repr::Inline { .. } => 0,
            Repr::Heap(b) => b.len(),
        }
    }
}

impl From<&[u8]> for SmallBytes {
    fn from(bytes: &[u8]) -> Self {
        Self::new(bytes)
    }
}

impl From<Vec<u8>> for SmallBytes {
    fn from(bytes: Vec<u8>) -> Self {
        if bytes.len() <= INLINE_CAPACITY {
            Self::new(&bytes)
        } else {
            SmallBytes(Repr::Heap(bytes.into_boxed_slice()))
        }
    }
}

impl Deref for SmallBytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        self.as_slice()
    }
}

impl AsRef<[u8]> for SmallBytes {
    fn as_ref(&self) -> &[u8] {
        self.as_slice()
    }
}

impl Borrow<[u8]> for SmallBytes {
    fn borrow(&self) -> &[u8] {
        self.as_slice()
    }
}

impl PartialEq for SmallBytes {
    fn eq(&self, other: &Self) -> bool {
        self.as_slice() == other.as_slice()
    }
}

impl Eq for SmallBytes {}

impl PartialOrd for SmallBytes {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for SmallBytes {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.as_slice().cmp(other.as_slice())
    }
}

impl Hash for SmallBytes {
    fn hash<H: Hasher>(&self, state: &mut H) {
        // Must match `[u8]`'s Hash for the Borrow<[u8]> lookups to work.
        self.as_slice().hash(state)
    }
}

impl fmt::Debug for SmallBytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", String::from_utf8_lossy(self.as_slice()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn is_24_bytes_with_a_niche() {
        assert_eq!(std::mem::size_of::<SmallBytes>(), 24);
        assert_eq!(std::mem::size_of::<Option<SmallBytes>>(), 24);
    }

    #[test]
    fn inline_and_heap_boundaries() {
        for len in [0, 1, 22, 23, 24, 100] {
            let data: Vec<u8> = (0..len as u8).collect();
            let s = SmallBytes::new(&data);
            assert_eq!(s.as_slice(), &data[..]);
            assert_eq!(s.is_inline(), len <= INLINE_CAPACITY);
            assert_eq!(SmallBytes::from(data.clone()).as_slice(), &data[..]);
        }
    }

    proptest! {
        #[test]
        fn behaves_like_a_byte_slice(a in proptest::collection::vec(any::<u8>(), 0..60),
                                     b in proptest::collection::vec(any::<u8>(), 0..60)) {
            let (sa, sb) = (SmallBytes::new(&a), SmallBytes::new(&b));
            prop_assert_eq!(sa.as_slice(), &a[..]);
            prop_assert_eq!(sa == sb, a == b);
            prop_assert_eq!(sa.cmp(&sb), a.cmp(&b));
            let state = ahash::RandomState::with_seeds(1, 2, 3, 4);
            prop_assert_eq!(state.hash_one(&sa), state.hash_one(&a[..]));
        }
    }
}
