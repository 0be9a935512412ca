//! DEBUG subcommands about how collections are stored, which Redis's list tests call:
//! `DEBUG QUICKLIST-PACKED-THRESHOLD <size>`.
//!
//! In Redis the threshold decides which list elements get a "plain" quicklist node of their own
//! instead of sharing a packed one. That is a layout choice no command can see (every list
//! command answers the same either way), and our quicklist already gives an element too big for
//! any node a node of its own; so the subcommand checks its argument exactly as Redis does
//! (a memory size up to 4 GB less 1 MB, 0 meaning the 1 GB default) and answers OK.

use crate::ctx::Ctx;
use crate::error::{CmdResult, Error};

/// Handles the subcommands of this module; `None` when DEBUG's arguments name none of them.
pub fn run(ctx: &mut Ctx<'_>) -> Option<CmdResult> {
    if ctx.arg_is(1, "quicklist-packed-threshold") && ctx.argc() == 3 {
        Some(packed_threshold(ctx))
    } else {
        None
    }
}

/// Redis's largest threshold: 4 GB less 1 MB.
const MAX_THRESHOLD: u64 = (1 << 32) - (1 << 20);

fn packed_threshold(ctx: &mut Ctx<'_>) -> CmdResult {
    match parse_memory_size(ctx.arg(2)) {
        Some(size) if size <= MAX_THRESHOLD => {
            ctx.out.ok();
            Ok(())
        }
        _ => Err(Error::msg(
            "ERR argument must be a memory value bigger than 1 and smaller than 4gb",
        )),
    }
}

/// A size as Redis's `memtoull` reads it: digits and an optional unit (b, k, kb, m, mb, g, gb,
/// case-insensitive; k = 1000, kb = 1024).
fn parse_memory_size(arg: &[u8]) -> Option<u64> {
    let text = std::str::from_utf8(arg).ok()?.to_ascii_lowercase();
    let units: [(&str, u64); 7] = [
        ("kb", 1 << 10),
        ("mb", 1 << 20),
        ("gb", 1 << 30),
        ("b", 1),
        ("k", 1000),
        ("m", 1_000_000),
        ("g", 1_000_000_000),
    ];
    let (digits, mul) = units
        .iter()
        .find_map(|(unit, mul)| text.strip_suffix(unit).map(|d| (d, *mul)))
        .unwrap_or((text.as_str(), 1));
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse::<u64>().ok()?.checked_mul(mul)
}

#[cfg(test)]
mod tests {
    use crate::test_harness::*;

    #[test]
    fn packed_threshold_takes_redis_sizes() {
        let mut h = Harness::new();
        h.engine.server.config.enable_debug_command = crate::config::Access::Yes;
        for ok in ["1b", "0", "5b", "100b", "1k", "4000mb", "1gb"] {
            assert_eq!(
                h.run_text(&format!("DEBUG QUICKLIST-PACKED-THRESHOLD {ok}")),
                "+OK\r\n",
                "{ok}"
            );
        }
        for bad in ["abc", "-1", "4gb", "1x", "\"\""] {
            assert_eq!(
                h.run_text(&format!("DEBUG QUICKLIST-PACKED-THRESHOLD {bad}")),
                "-ERR argument must be a memory value bigger than 1 and smaller than 4gb\r\n",
                "{bad}"
            );
        }
        // Lists work the same whatever the threshold.
        h.run_text("DEBUG QUICKLIST-PACKED-THRESHOLD 1b");
        h.run_text("RPUSH l aa bb xxxxxxxxxxx cc");
        assert_eq!(h.run_text("LINDEX l 2"), "$11\r\nxxxxxxxxxxx\r\n");
        assert_eq!(h.run_text("LLEN l"), ":4\r\n");
    }
}
