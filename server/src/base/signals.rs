//! The process's signals, as Redis's `setupSignalHandlers` takes them: SIGTERM and SIGINT ask
//! for a shutdown that the next tick begins (Redis's `shutdown_asap`); a second SIGINT while one
//! is pending exits at once, removing the temporary RDB file of a save in progress. The fatal
//! signals (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT) write a crash report to the log while
//! `crash-log-enabled` is on, then take their default action.
//!
//! Signals are the process's, not a server's: only the `embedis-server` binary installs these
//! handlers (a server inside a test process never sees [`pending`] set). The shutdown handler
//! only writes the signal's number to a pipe (all a handler may safely do); a thread of ours reads
//! it, logs the line Redis's handler logs and sets the request, so that it acts even while the
//! event loop is held up — in the very save a first SIGINT began, for instance.

use std::io::Read;
use std::os::fd::FromRawFd;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::OnceLock;

use crate::base::log::Logger;

/// The signal of the pending shutdown request (0: none).
static PENDING: AtomicI32 = AtomicI32::new(0);
/// The pipe's writing end, for the handler.
static PIPE: AtomicI32 = AtomicI32::new(-1);
/// The server is loading its data (the signal's log line says so, as Redis's does).
static LOADING: AtomicBool = AtomicBool::new(false);

/// A signal that asks for a shutdown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShutdownSignal {
    Int,
    Term,
}

/// The shutdown a signal asked for and no tick has begun or abandoned yet.
pub fn pending() -> Option<ShutdownSignal> {
    match PENDING.load(Ordering::Acquire) {
        libc::SIGINT => Some(ShutdownSignal::Int),
        libc::SIGTERM => Some(ShutdownSignal::Term),
        _ => None,
    }
}

/// Forgets the pending request (SHUTDOWN ABORT, or a shutdown that failed).
pub fn clear() {
    PENDING.store(0, Ordering::Release);
}

/// Tells the handler whether the data is loading.
pub fn set_loading(loading: bool) {
    LOADING.store(loading, Ordering::Relaxed);
}

extern "C" fn on_shutdown_signal(signal: libc::c_int) {
    let fd = PIPE.load(Ordering::Relaxed);
    let byte = signal as u8;
    // SAFETY: write(2) is async-signal-safe; the byte lives on this frame.
    unsafe {
        libc::write(fd, (&byte as *const u8).cast(), 1);
    }
}

/// Installs the SIGINT / SIGTERM handlers and the thread that acts on them. `temp_rdb` is the
/// file a save of this process writes first (removed by an insisting SIGINT).
pub fn install_shutdown_handlers(log: Logger, temp_rdb: PathBuf) -> std::io::Result<()> {
    let mut fds = [0; 2];
    // SAFETY: pipe2 fills the two descriptors we pass.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    PIPE.store(fds[1], Ordering::Relaxed);
    // SAFETY: the reading end is ours alone from here on.
    let mut reader = unsafe { std::fs::File::from_raw_fd(fds[0]) };
    std::thread::Builder::new()
        .name("embedis-signals".into())
        .spawn(move || {
            let mut byte = [0u8];
            while reader.read_exact(&mut byte).is_ok() {
                received(byte[0] as i32, &log, &temp_rdb);
            }
        })?;
    for signal in [libc::SIGINT, libc::SIGTERM] {
        // SAFETY: a zeroed sigaction with our handler and an empty mask is a valid argument.
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = on_shutdown_signal as *const () as usize;
            libc::sigemptyset(&mut action.sa_mask);
            action.sa_flags = libc::SA_RESTART;
            libc::sigaction(signal, &action, std::ptr::null_mut());
        }
    }
    Ok(())
}

/// What Redis's `sigShutdownHandler` does with a signal.
fn received(signal: i32, log: &Logger, temp_rdb: &PathBuf) {
    if signal == libc::SIGINT && PENDING.load(Ordering::Acquire) != 0 {
        log.warning("You insist... exiting now.");
        let _ = std::fs::remove_file(temp_rdb);
        std::process::exit(1);
    }
    let message = if LOADING.load(Ordering::Relaxed) {
        "Received shutdown signal during loading, scheduling shutdown."
    } else if signal == libc::SIGINT {
        "Received SIGINT scheduling shutdown..."
    } else {
        "Received SIGTERM scheduling shutdown..."
    };
    log.warning(message);
    PENDING.store(signal, Ordering::Release);
}

/// Where a crash report goes: the log's descriptor, and the logger that keeps it open.
static CRASH_LOG: OnceLock<(Logger, AtomicI32)> = OnceLock::new();
/// The fatal signals a crash report covers (Redis's list).
const FATAL: [libc::c_int; 5] = [
    libc::SIGSEGV,
    libc::SIGBUS,
    libc::SIGFPE,
    libc::SIGILL,
    libc::SIGABRT,
];

/// Installs (`enabled`) or removes the crash-report handlers, as `crash-log-enabled` says
/// (Redis's `setupSignalHandlers` / `removeSignalHandlers`).
pub fn set_crash_log(log: &Logger, enabled: bool) {
    let (_, fd) = CRASH_LOG.get_or_init(|| (log.clone(), AtomicI32::new(-1)));
    fd.store(log.raw_fd(), Ordering::Relaxed);
    for signal in FATAL {
        // SAFETY: as above; SA_RESETHAND puts the default action back for the re-raise.
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            if enabled {
                action.sa_sigaction = on_fatal_signal as *const () as usize;
                action.sa_flags = libc::SA_NODEFER | libc::SA_RESETHAND | libc::SA_SIGINFO;
            } else {
                action.sa_sigaction = libc::SIG_DFL;
                action.sa_flags = libc::SA_NODEFER | libc::SA_RESETHAND;
            }
            libc::sigemptyset(&mut action.sa_mask);
            libc::sigaction(signal, &action, std::ptr::null_mut());
        }
    }
}

extern "C" fn on_fatal_signal(
    signal: libc::c_int,
    info: *mut libc::siginfo_t,
    _context: *mut libc::c_void,
) {
    let fd = CRASH_LOG
        .get()
        .map_or(2, |(_, fd)| fd.load(Ordering::Relaxed));
    // SAFETY: the kernel hands a valid siginfo to an SA_SIGINFO handler.
    let code = if info.is_null() {
        0
    } else {
        unsafe { (*info).si_code }
    };
    // Like Redis's report, this formats and walks the stack inside the handler: the process is
    // lost anyway, and the report is worth the risk.
    let report = crash_report(signal, code);
    // SAFETY: writes from a buffer we own, then the default action of the signal (the handler
    // was reset on entry): the process ends as it would have without us.
    unsafe {
        libc::write(fd, report.as_ptr().cast(), report.len());
        libc::raise(signal);
    }
}

/// The crash report: Redis's frame (the lines its tests and people look for), our stack trace.
fn crash_report(signal: i32, code: i32) -> String {
    let pid = std::process::id();
    let trace = std::backtrace::Backtrace::force_capture();
    format!(
        "\n\n=== REDIS BUG REPORT START: Cut & paste starting from here ===\n\
         {pid}:M # embedis {} crashed by signal: {signal}, si_code: {code}\n\n\
         ------ STACK TRACE ------\n\n{trace}\n\
         === REDIS BUG REPORT END. Make sure to include from START to END. ===\n\n",
        env!("CARGO_PKG_VERSION")
    )
}
