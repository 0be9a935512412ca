//! `embedis-server [config-file] [--option value ...]`: redis-server's command line (see
//! `embedis::command_line`).

use std::process::ExitCode;

use embedis_core::base::alloc::CountingAllocator;

/// Counts allocated bytes for INFO's used_memory, as Redis's zmalloc does (whichever allocator
/// the build chose: glibc's by default, mimalloc or jemalloc for comparisons).
#[cfg(feature = "mimalloc")]
#[global_allocator]
static ALLOCATOR: CountingAllocator<mimalloc::MiMalloc> = CountingAllocator(mimalloc::MiMalloc);
#[cfg(all(feature = "jemalloc", not(feature = "mimalloc")))]
#[global_allocator]
static ALLOCATOR: CountingAllocator<tikv_jemallocator::Jemalloc> =
    CountingAllocator(tikv_jemallocator::Jemalloc);
#[cfg(not(any(feature = "mimalloc", feature = "jemalloc")))]
#[global_allocator]
static ALLOCATOR: CountingAllocator<std::alloc::System> = CountingAllocator(std::alloc::System);

fn main() -> ExitCode {
    embedis::server_binary(std::env::args().skip(1).collect())
}
