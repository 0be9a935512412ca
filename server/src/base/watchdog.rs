//! `watchdog-period`: the software watchdog of Redis (`watchdogScheduleSignal` in serverCron,
//! `watchdogSignalHandler`). Each tick of the engine re-arms it; if no tick comes within the
//! period — the event loop is held by a slow command, a script, DEBUG SLEEP — the engine's thread
//! is sent SIGALRM, whose handler writes "--- WATCHDOG TIMER EXPIRED ---" and that thread's stack
//! trace to the log, once per stall. Redis arms a one-shot interval timer; here a thread of ours
//! watches the time of the last tick (the real monotonic time: it is about the process being
//! stuck, not the server's clock) and signals the engine's thread itself, so that the trace is
//! the engine's whatever thread the kernel would have chosen.
//!
//! The stack is walked inside the signal handler, as Redis's `logStackTrace` does: it may
//! allocate, so a stall inside the allocator could hang the process. The setting is a hidden
//! debugging aid, off by default, and only the binary arms it.

use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use crate::base::log::Logger;

/// The period in ms (0: off).
static PERIOD_MS: AtomicU64 = AtomicU64::new(0);
/// When the engine last ticked, in ms since [`EPOCH`].
static LAST_TICK_MS: AtomicU64 = AtomicU64::new(0);
/// The engine's thread (a `pthread_t`).
static ENGINE_THREAD: AtomicU64 = AtomicU64::new(0);
/// The stall since the last tick has been reported.
static FIRED: AtomicBool = AtomicBool::new(false);
/// The log's descriptor, for the handler.
static LOG_FD: AtomicI32 = AtomicI32::new(-1);
static EPOCH: OnceLock<Instant> = OnceLock::new();
/// The logger whose descriptor the handler writes to, kept open.
static LOG: OnceLock<Logger> = OnceLock::new();

fn now_ms() -> u64 {
    EPOCH.get_or_init(Instant::now).elapsed().as_millis() as u64
}

/// The engine's tick: re-arms the watchdog for `period_ms` (0 stops it). Called on the engine's
/// thread.
pub fn tick(period_ms: u32, log: &Logger) {
    if period_ms == 0 {
        PERIOD_MS.store(0, Ordering::Relaxed);
        return;
    }
    LAST_TICK_MS.store(now_ms(), Ordering::Relaxed);
    FIRED.store(false, Ordering::Relaxed);
    if PERIOD_MS.swap(period_ms as u64, Ordering::Relaxed) == 0 && LOG.get().is_none() {
        start(log);
    }
}

/// Installs the handler and starts the watching thread, once per process.
fn start(log: &Logger) {
    let log = LOG.get_or_init(|| log.clone());
    LOG_FD.store(log.raw_fd(), Ordering::Relaxed);
    // SAFETY: pthread_self has no preconditions.
    ENGINE_THREAD.store(unsafe { libc::pthread_self() } as u64, Ordering::Relaxed);
    // SAFETY: a zeroed sigaction with our handler and an empty mask is a valid argument.
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = on_alarm as *const () as usize;
        action.sa_flags = libc::SA_RESTART;
        libc::sigemptyset(&mut action.sa_mask);
        libc::sigaction(libc::SIGALRM, &action, std::ptr::null_mut());
    }
    let _ = std::thread::Builder::new()
        .name("embedis-watchdog".into())
        .spawn(watch);
}

fn watch() {
    loop {
        let period = PERIOD_MS.load(Ordering::Relaxed);
        let step = (period / 4).clamp(5, 100);
        std::thread::sleep(Duration::from_millis(step));
        if period == 0 {
            continue;
        }
        let since = now_ms().saturating_sub(LAST_TICK_MS.load(Ordering::Relaxed));
        if since >= period && !FIRED.swap(true, Ordering::Relaxed) {
            // SAFETY: the engine's thread lives as long as the process serves.
            unsafe {
                libc::pthread_kill(
                    ENGINE_THREAD.load(Ordering::Relaxed) as libc::pthread_t,
                    libc::SIGALRM,
                );
            }
        }
    }
}

extern "C" fn on_alarm(_signal: libc::c_int) {
    let trace = std::backtrace::Backtrace::force_capture();
    let report = format!("\n--- WATCHDOG TIMER EXPIRED ---\n{trace}\n--------\n\n");
    let fd = LOG_FD.load(Ordering::Relaxed);
    // SAFETY: writes from a buffer we own.
    unsafe {
        libc::write(fd, report.as_ptr().cast(), report.len());
    }
}
