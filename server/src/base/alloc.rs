//! A counting global allocator, so that INFO's `used_memory` reports the bytes the server has
//! allocated, as Redis's zmalloc counters do.
//!
//! The `embedis-server` binary installs [`CountingAllocator`] as its global allocator. A program
//! that embeds embedis keeps its own allocator; [`allocated_bytes`] then returns `None` and INFO
//! falls back to the resident set size.

use std::alloc::{GlobalAlloc, Layout};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

static ALLOCATED: AtomicUsize = AtomicUsize::new(0);
static INSTALLED: AtomicBool = AtomicBool::new(false);

/// Wraps another allocator and counts the bytes currently allocated through it.
pub struct CountingAllocator<A>(pub A);

// SAFETY: every call is forwarded unchanged to the inner allocator; we only count sizes.
unsafe impl<A: GlobalAlloc> GlobalAlloc for CountingAllocator<A> {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let ptr = self.0.alloc(layout);
        if !ptr.is_null() {
            ALLOCATED.fetch_add(layout.size(), Ordering::Relaxed);
            if !INSTALLED.load(Ordering::Relaxed) {
                INSTALLED.store(true, Ordering::Relaxed);
            }
        }
        ptr
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let ptr = self.0.alloc_zeroed(layout);
        if !ptr.is_null() {
            ALLOCATED.fetch_add(layout.size(), Ordering::Relaxed);
        }
        ptr
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        self.0.dealloc(ptr, layout);
        ALLOCATED.fetch_sub(layout.size(), Ordering::Relaxed);
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let new = self.0.realloc(ptr, layout, new_size);
        if !new.is_null() {
            if new_size > layout.size() {
                ALLOCATED.fetch_add(new_size - layout.size(), Ordering::Relaxed);
            } else {
                ALLOCATED.fetch_sub(layout.size() - new_size, Ordering::Relaxed);
            }
        }
        new
    }
}

/// Bytes currently allocated, if the counting allocator is the global allocator.
pub fn allocated_bytes() -> Option<usize> {
    INSTALLED
        .load(Ordering::Relaxed)
        .then(|| ALLOCATED.load(Ordering::Relaxed))
}

/// Resident set size of this process in bytes (from /proc/self/statm), if available.
pub fn resident_bytes() -> Option<usize> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: usize = statm.split_whitespace().nth(1)?.parse().ok()?;
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    Some(pages * page.max(4096) as usize)
}

/// INFO's `used_memory`: bytes allocated when the counting allocator is installed, else the
/// resident set size.
pub fn used_memory() -> u64 {
    allocated_bytes().or_else(resident_bytes).unwrap_or(0) as u64
}
