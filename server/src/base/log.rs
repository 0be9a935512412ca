//! The server log, in Redis's line format, so that harnesses waiting for "Ready to accept
//! connections" and people reading logs see what they expect:
//!
//! ```text
//! 12345:M 21 Nov 2026 10:10:53.135 * Ready to accept connections
//! ```
//!
//! pid, role (`C` while starting, `M` once serving, `S` as a replica), local time with milliseconds, a level mark
//! (`.` debug, `-` verbose, `*` notice, `#` warning) and the message. Lines go to `logfile`, or
//! to standard output when it is empty, as with Redis. A server running inside a test process
//! can be given a quiet logger.

use parking_lot::Mutex;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::sync::Arc;

use crate::base::config::LogLevel;

enum Sink {
    Stdout,
    File(File),
    Silent,
}

/// A shareable logger.
#[derive(Clone)]
pub struct Logger {
    inner: Arc<Mutex<Inner>>,
}

struct Inner {
    sink: Sink,
    level: LogLevel,
    role: char,
}

impl Logger {
    /// Logs to `path`, or to standard output when `path` is empty.
    pub fn open(path: &str, level: LogLevel) -> std::io::Result<Logger> {
        let sink = if path.is_empty() {
            Sink::Stdout
        } else {
            Sink::File(OpenOptions::new().create(true).append(true).open(path)?)
        };
        Ok(Logger {
            inner: Arc::new(Mutex::new(Inner {
                sink,
                level,
                role: 'C',
            })),
        })
    }

    /// A logger that drops everything (servers started inside tests).
    pub fn silent() -> Logger {
        Logger {
            inner: Arc::new(Mutex::new(Inner {
                sink: Sink::Silent,
                level: LogLevel::Warning,
                role: 'M',
            })),
        }
    }

    pub fn set_level(&self, level: LogLevel) {
        self.inner.lock().level = level;
    }

    /// Switches the role mark from `C` (starting) to `M` (serving).
    pub fn set_serving(&self) {
        self.inner.lock().role = 'M';
    }

    /// The role mark once serving: `S` for a replica, `M` for a primary (as Redis's log lines).
    pub fn set_replica(&self, replica: bool) {
        self.inner.lock().role = if replica { 'S' } else { 'M' };
    }

    pub fn log(&self, level: LogLevel, message: &str) {
        let mut inner = self.inner.lock();
        if level < inner.level || matches!(inner.sink, Sink::Silent) {
            return;
        }
        let mark = match level {
            LogLevel::Debug => '.',
            LogLevel::Verbose => '-',
            LogLevel::Notice => '*',
            LogLevel::Warning | LogLevel::Nothing => '#',
        };
        // Each line of a message gets its own prefix, so a report of several lines reads (and
        // greps) as Redis's consecutive log lines do.
        let prefix = format!(
            "{}:{} {} {} ",
            std::process::id(),
            inner.role,
            timestamp(),
            mark
        );
        let mut line = String::with_capacity(prefix.len() + message.len() + 1);
        for part in message.split('\n') {
            line.push_str(&prefix);
            line.push_str(part);
            line.push('\n');
        }
        match &mut inner.sink {
            Sink::Stdout => {
                let mut out = std::io::stdout().lock();
                let _ = out.write_all(line.as_bytes());
                let _ = out.flush();
            }
            Sink::File(f) => {
                let _ = f.write_all(line.as_bytes());
            }
            Sink::Silent => {}
        }
    }

    pub fn notice(&self, message: &str) {
        self.log(LogLevel::Notice, message)
    }

    pub fn warning(&self, message: &str) {
        self.log(LogLevel::Warning, message)
    }

    pub fn verbose(&self, message: &str) {
        self.log(LogLevel::Verbose, message)
    }
}

/// `21 Nov 2026 10:10:53.135` in local time.
fn timestamp() -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    let secs = now.as_secs() as libc::time_t;
    let millis = now.subsec_millis();
    // SAFETY: localtime_r writes into the tm we pass and reads only `secs`.
    let tm = unsafe {
        let mut tm: libc::tm = std::mem::zeroed();
        libc::localtime_r(&secs, &mut tm);
        tm
    };
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    format!(
        "{:02} {} {} {:02}:{:02}:{:02}.{:03}",
        tm.tm_mday,
        MONTHS[tm.tm_mon.clamp(0, 11) as usize],
        tm.tm_year + 1900,
        tm.tm_hour,
        tm.tm_min,
        tm.tm_sec,
        millis
    )
}
