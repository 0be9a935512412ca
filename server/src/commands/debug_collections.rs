//! DEBUG subcommands about how collections are stored, which Redis's list tests call:
//! `DEBUG QUICKLIST-PACKED-THRESHOLD <size>`.
//!
//! The threshold decides which list elements get a "plain" quicklist node of their own instead of
//! sharing a packed one ([`embedis_datatypes::quicklist::set_packed_threshold`]). That is a
//! layout choice no list command can see (MEMORY USAGE can), which Redis's tests use to run the
//! list commands over plain nodes. The argument is checked as Redis does: a memory size up to
//! 4 GB less 1 MB, 0 restoring the 1 GB default.

use embedis_datatypes::quicklist::set_packed_threshold;

use crate::base::error::{CmdResult, Error};
use crate::kernel::ctx::Ctx;

/// Handles the subcommands of this module; `None` when DEBUG's arguments name none of them.
pub fn run(ctx: &mut Ctx<'_>) -> Option<CmdResult> {
    if ctx.arg_is(1, "quicklist-packed-threshold") && ctx.argc() == 3 {
        Some(packed_threshold(ctx))
    } else {
        None
    }
}

fn packed_threshold(ctx: &mut Ctx<'_>) -> CmdResult {
    match parse_memory_size(ctx.arg(2)) {
        Some(size) if set_packed_threshold(size) => {
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
    use crate::io::test_harness::*;

    #[test]
    fn packed_threshold_takes_redis_sizes() {
        let mut h = Harness::new();
        h.engine.server.config.enable_debug_command = crate::base::config::Access::Yes;
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
        // Lists work the same whatever the threshold; only their layout (and so MEMORY USAGE)
        // changes: each element a node of its own.
        h.run_text("DEBUG QUICKLIST-PACKED-THRESHOLD 1b");
        h.run_text("RPUSH l aa bb xxxxxxxxxxx cc");
        h.run_text("LINSERT l BEFORE bb dd");
        h.run_text("LSET l 0 ee");
        assert_eq!(h.run_text("LINDEX l 3"), "$11\r\nxxxxxxxxxxx\r\n");
        assert_eq!(h.run_text("LLEN l"), ":5\r\n");
        let plain = int(&h.run("MEMORY USAGE l"));
        h.run_text("DEBUG QUICKLIST-PACKED-THRESHOLD 0");
        h.run_text("DEL l2");
        h.run_text("RPUSH l2 ee dd bb xxxxxxxxxxx cc");
        let packed = int(&h.run("MEMORY USAGE l2"));
        assert!(
            plain > packed,
            "five nodes ({plain}) against one ({packed})"
        );
    }
}
