//! A hint to the CPU to start fetching a cache line that will be read soon.
//!
//! Batches of lookups (a pipeline's keys, see `Dict::prefetch_bucket`) use it to overlap their
//! cache misses. Prefetching never faults and has no effect a program can observe beyond speed,
//! so any address may be given, even one past the end of a table.

/// Asks the CPU to bring the cache line holding `address` into its first-level data cache. A
/// no-op on targets without a stable prefetch instruction in Rust.
#[inline(always)]
pub fn prefetch_read<T>(address: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: SSE is part of x86_64's baseline; a prefetch never dereferences its address in a
    // way that can fault.
    #[allow(unused_unsafe)]
    unsafe {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        _mm_prefetch::<_MM_HINT_T0>(address.cast::<i8>());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = address;
}
