//! [`ThinBytes`]: an immutable byte block behind one thin pointer (eight bytes), its length in
//! the block itself.
//!
//! A `Box<[u8]>` is sixteen bytes (pointer and length), too wide to sit unboxed beside the
//! other forms of a two-word value: a set's intset had to be boxed again, a whole allocator
//! chunk per set. Moving the length into the block costs four bytes of the block instead, which
//! glibc's 16-byte chunk rounding mostly absorbs. The block is `[len: u32][bytes]`, aligned to 4;
//! an empty `ThinBytes` owns nothing. Changing the bytes means building a new block
//! ([`ThinBytes::build`]), as the compact forms rebuild theirs at the exact size on every change.

use std::alloc::{alloc, dealloc, handle_alloc_error, Layout};
use std::ptr::NonNull;

/// Bytes of the length before the data.
const LEN: usize = 4;

/// See the module documentation.
pub struct ThinBytes {
    /// The block, or `None` when empty.
    block: Option<NonNull<u8>>,
}

// SAFETY: a ThinBytes owns its block alone, as a Box<[u8]> does.
unsafe impl Send for ThinBytes {}
// SAFETY: shared access only reads the block.
unsafe impl Sync for ThinBytes {}

fn layout(len: usize) -> Layout {
    Layout::from_size_align(LEN + len, 4).expect("a block under isize::MAX")
}

impl ThinBytes {
    pub const fn new() -> Self {
        ThinBytes { block: None }
    }

    /// A block of `len` bytes written by `fill` (which sees them zeroed); empty when `len` is
    /// 0. Panics if `len` does not fit 32 bits.
    pub fn build(len: usize, fill: impl FnOnce(&mut [u8])) -> Self {
        if len == 0 {
            return ThinBytes::new();
        }
        let stored = u32::try_from(len).expect("a block under 4 GB");
        let layout = layout(len);
        // SAFETY: the layout has a non-zero size.
        let ptr = unsafe { alloc(layout) };
        let Some(block) = NonNull::new(ptr) else {
            handle_alloc_error(layout)
        };
        // SAFETY: the block holds LEN + len bytes, aligned to 4 for the length.
        unsafe {
            block.as_ptr().cast::<u32>().write(stored);
            std::ptr::write_bytes(block.as_ptr().add(LEN), 0, len);
        }
        let mut thin = ThinBytes { block: Some(block) };
        fill(thin.as_mut_slice());
        thin
    }

    pub fn from_slice(bytes: &[u8]) -> Self {
        ThinBytes::build(bytes.len(), |out| out.copy_from_slice(bytes))
    }

    pub fn len(&self) -> usize {
        match self.block {
            // SAFETY: a block starts with its length, aligned to 4.
            Some(block) => unsafe { block.as_ptr().cast::<u32>().read() as usize },
            None => 0,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.block.is_none()
    }

    pub fn as_slice(&self) -> &[u8] {
        match self.block {
            // SAFETY: the block holds `len` initialised bytes after the length, owned by self.
            Some(block) => unsafe {
                std::slice::from_raw_parts(block.as_ptr().add(LEN), self.len())
            },
            None => &[],
        }
    }

    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        let len = self.len();
        match self.block {
            // SAFETY: as in `as_slice`, and `&mut self` makes the access unique.
            Some(block) => unsafe { std::slice::from_raw_parts_mut(block.as_ptr().add(LEN), len) },
            None => &mut [],
        }
    }
}

impl Drop for ThinBytes {
    fn drop(&mut self) {
        if let Some(block) = self.block {
            // SAFETY: allocated in `build` with this layout.
            unsafe { dealloc(block.as_ptr(), layout(self.len())) }
        }
    }
}

impl Default for ThinBytes {
    fn default() -> Self {
        ThinBytes::new()
    }
}

impl Clone for ThinBytes {
    fn clone(&self) -> Self {
        ThinBytes::from_slice(self.as_slice())
    }
}

impl std::ops::Deref for ThinBytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        self.as_slice()
    }
}

impl std::ops::DerefMut for ThinBytes {
    fn deref_mut(&mut self) -> &mut [u8] {
        self.as_mut_slice()
    }
}

impl PartialEq for ThinBytes {
    fn eq(&self, other: &Self) -> bool {
        self.as_slice() == other.as_slice()
    }
}

impl Eq for ThinBytes {}

impl std::fmt::Debug for ThinBytes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.as_slice().fmt(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn one_word_and_empty_owns_nothing() {
        assert_eq!(std::mem::size_of::<ThinBytes>(), 8);
        let empty = ThinBytes::from_slice(b"");
        assert!(empty.is_empty() && empty.block.is_none() && empty.as_slice().is_empty());
    }

    proptest! {
        /// Holds what it was given, through clones and writes.
        #[test]
        fn holds_its_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..600), at in any::<usize>()) {
            let thin = ThinBytes::from_slice(&bytes);
            prop_assert_eq!(thin.len(), bytes.len());
            prop_assert_eq!(&*thin, &bytes[..]);
            let mut copy = thin.clone();
            prop_assert_eq!(&copy, &thin);
            if !bytes.is_empty() {
                let i = at % bytes.len();
                copy[i] ^= 0xff;
                prop_assert_ne!(&copy, &thin);
                prop_assert_eq!(&*thin, &bytes[..]);
            }
        }
    }
}
