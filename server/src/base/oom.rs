//! `oom-score-adj`: the score the process gives the kernel's OOM killer, written to
//! `/proc/self/oom_score_adj` as Redis's `setOOMScoreAdj` writes it. The first time the server
//! takes control it keeps the score the process had (the base): `relative` adds the class's
//! value to it, `absolute` uses the value alone, both bounded to ±1000; turning the setting off
//! puts the base back. The score is the process's, so the base is kept once per process.

use parking_lot::Mutex;

use crate::base::config::process::{OomClass, OomScoreAdj, ProcessConfig};
use crate::base::log::Logger;

const PATH: &str = "/proc/self/oom_score_adj";

/// The score could not be read or written (the log says why).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OomFailed;

/// The score the process had before the server changed it, while the server controls it.
static BASE: Mutex<Option<i32>> = Mutex::new(None);

/// Sets the score for `class` as `config` says (nothing when off and never changed). Errors are
/// logged as Redis logs them; `Err` makes CONFIG SET fail.
pub fn apply(config: &ProcessConfig, class: OomClass, log: &Logger) -> Result<(), OomFailed> {
    let mut base = BASE.lock();
    let value = match (config.oom_score_adj, *base) {
        (OomScoreAdj::No, None) => return Ok(()),
        (OomScoreAdj::No, Some(old)) => {
            *base = None;
            old
        }
        (mode, known) => {
            let start = match known {
                Some(start) => start,
                None => {
                    let text = std::fs::read_to_string(PATH).map_err(|e| {
                        log.warning(&format!("Unable to read oom_score_adj: {}", os_text(&e)));
                        OomFailed
                    })?;
                    // atoi: what does not parse is 0.
                    let start = text.trim().parse().unwrap_or(0);
                    *base = Some(start);
                    start
                }
            };
            let own = config.oom_score_adj_values[class as usize];
            let value = if mode == OomScoreAdj::Relative {
                own + start
            } else {
                own
            };
            value.clamp(-1000, 1000)
        }
    };
    std::fs::write(PATH, format!("{value}\n")).map_err(|e| {
        log.warning(&format!("Unable to write oom_score_adj: {}", os_text(&e)));
        OomFailed
    })
}

/// The score a process of `class` gets (a background save's child), or None to keep the
/// parent's (the setting is off).
pub fn score_for(config: &ProcessConfig, class: OomClass) -> Option<i32> {
    let base = *BASE.lock();
    let own = config.oom_score_adj_values[class as usize];
    let value = match config.oom_score_adj {
        OomScoreAdj::No => return None,
        OomScoreAdj::Relative => own + base.unwrap_or(0),
        OomScoreAdj::Absolute => own,
    };
    Some(value.clamp(-1000, 1000))
}

/// An OS error as `strerror` words it.
fn os_text(e: &std::io::Error) -> String {
    let text = e.to_string();
    match text.find(" (os error") {
        Some(end) => text[..end].to_string(),
        None => text,
    }
}
