//! Vector sets (Redis 8.2): VADD, VREM, VSETATTR ([`write`]), VSIM ([`search`]) and the
//! readers VEMB, VCARD, VDIM, VINFO, VLINKS, VRANDMEMBER, VGETATTR, VISMEMBER ([`read`]).
//!
//! In Redis these commands belong to the built-in `vectorset` module, and what users see
//! follows from that: COMMAND INFO gives them arity -1, so every argument count is checked by
//! the handler and named in upper case (`wrong number of arguments for 'VADD' command`); the
//! key is checked only after the arguments a command parses first (VADD checks its whole
//! vector and options before the key's type); replies are module replies — booleans (`#t` in
//! RESP3), doubles in Redis 8's shortest form; no keyspace event is sent; a command replicates
//! only what it changed, verbatim (a VADD that updates an existing element is not propagated,
//! as in Redis). The data structure is [`embedis_datatypes::vset`].

pub mod memory;
mod read;
mod search;
mod write;

use bytes::Bytes;
use embedis_datatypes::vset::{VectorSet, MAX_DIM};
use embedis_protocol::number::parse_i64;

use crate::base::error::{CmdResult, Error};
use crate::base::value::Value;
use crate::commands::zsets::parse_double;
use crate::kernel::ctx::Ctx;
use crate::kernel::table::keys::{flag, KeySpec};
use crate::kernel::table::{CommandSpec, Flags};
use crate::model::keyspace::Keyspace;

/// A module's arity error, which names the command in upper case.
fn wrong_arity(ctx: &Ctx<'_>) -> Error {
    Error::owned(format!(
        "ERR wrong number of arguments for '{}' command",
        ctx.cmd.full_name.to_ascii_uppercase()
    ))
}

const INVALID_VECTOR: Error = Error::msg("ERR invalid vector specification");

/// The vector set under `key` (for writing or reading): `None` when the key is missing.
fn set_mut<'a>(
    ctx: &'a mut Ctx<'_>,
    key: &[u8],
    write: bool,
) -> CmdResult<Option<&'a mut VectorSet>> {
    let (db, now) = (ctx.db(), ctx.now_ms);
    set_in(ctx.ks, db, now, key, write)
}

/// [`set_mut`] borrowing only the keyspace, so that the reply can be written meanwhile.
fn set_in<'k>(
    ks: &'k mut Keyspace,
    db: usize,
    now: i64,
    key: &[u8],
    write: bool,
) -> CmdResult<Option<&'k mut VectorSet>> {
    let value = if write {
        ks.write(db, key, now)
    } else {
        ks.read(db, key, now)
    };
    match value {
        None => Ok(None),
        Some(Value::VectorSet(set)) => Ok(Some(set)),
        Some(_) => Err(Error::WrongType),
    }
}

/// A vector given as `[REDUCE dim] FP32 blob` or `[REDUCE dim] VALUES n v1 … vn` from argument
/// `at`, as Redis's `parseVector` reads it.
struct Parsed {
    vector: Vec<f32>,
    /// REDUCE's target dimension, 0 without.
    reduce: usize,
    /// Arguments used.
    used: usize,
}

fn parse_vector(args: &[Bytes], mut at: usize, allow_reduce: bool) -> Option<Parsed> {
    let mut used = 0;
    let mut reduce = 0;
    if allow_reduce && args.len() > at + 2 && args[at].eq_ignore_ascii_case(b"reduce") {
        // Above the largest dimension Redis would try (and fail) to allocate the matrix: here
        // it is an invalid specification.
        reduce = parse_i64(&args[at + 1]).filter(|&d| d > 0 && d <= MAX_DIM as i64)? as usize;
        at += 2;
        used += 2;
    }
    let format = args.get(at)?;
    let vector: Vec<f32> = if format.eq_ignore_ascii_case(b"fp32") {
        let blob = args.get(at + 1)?;
        if blob.len() % 4 != 0 || blob.is_empty() || blob.len() / 4 > MAX_DIM {
            return None;
        }
        used += 2;
        blob.chunks_exact(4)
            .map(|c| f32::from_le_bytes(c.try_into().expect("4 bytes")))
            .collect()
    } else if format.eq_ignore_ascii_case(b"values") {
        let n = parse_i64(args.get(at + 1)?).filter(|&n| (1..=MAX_DIM as i64).contains(&n))?;
        let n = n as usize;
        if args.len() < at + 2 + n {
            return None;
        }
        used += 2 + n;
        args[at + 2..at + 2 + n]
            .iter()
            .map(|a| parse_double(a).map(|v| v as f32))
            .collect::<Option<_>>()?
    } else {
        return None;
    };
    // Redis 8.2.3 accepts a REDUCE dimension above the input's (later versions refuse it).
    Some(Parsed {
        vector,
        reduce,
        used,
    })
}

/// The projection a set applies to an input of `dim` components, with Redis's error when the
/// input does not have the projection's dimension.
fn projected(set: &VectorSet, vector: Vec<f32>) -> CmdResult<Vec<f32>> {
    if vector.len() != set.projection_input() {
        return Err(Error::owned(format!(
            "ERR Input dimension mismatch for projection - got {} but projection expects {}",
            vector.len(),
            set.projection_input()
        )));
    }
    Ok(set.project(vector))
}

fn dim_mismatch(got: usize, has: usize) -> Error {
    Error::owned(format!(
        "ERR Vector dimension mismatch - got {got} but set has {has}"
    ))
}

// ---------------------------------------------------------------------------------------------
// The table
// ---------------------------------------------------------------------------------------------

/// Every vector set command's one key, as Redis's module API declares it (first=last=1).
const KEY: &[KeySpec] = &[KeySpec::single(1, flag::RW | flag::ACCESS | flag::UPDATE)];

macro_rules! vspec {
    ($name:literal, $handler:expr, $flags:expr, $since:literal, $summary:literal, $syntax:literal) => {
        CommandSpec::new($name, -1, $handler)
            .flags($flags)
            .module("vectorset")
            .keys(KEY)
            .doc("module", $since, "", $summary, $syntax)
    };
}

pub static COMMANDS: &[CommandSpec] = &[
    vspec!(
        "vadd",
        write::vadd,
        Flags::WRITE.union(Flags::DENYOOM),
        "8.0.0",
        "Adds an element with its vector to a vector set, or updates its vector.",
        "key [REDUCE dim:integer] format=(FP32|VALUES) vector element [CAS] quant_type=[NOQUANT|BIN|Q8] [EF build-exploration-factor:integer] [SETATTR attributes] [M numlinks:integer]"
    ),
    vspec!(
        "vrem",
        write::vrem,
        Flags::WRITE,
        "8.0.0",
        "Removes an element from a vector set.",
        "key element"
    ),
    vspec!(
        "vsim",
        search::vsim,
        Flags::READONLY,
        "8.0.0",
        "Returns the elements most similar to a vector or to an element.",
        "key format=(ELE|FP32|VALUES) vector_or_element [WITHSCORES] [WITHATTRIBS] [COUNT count:integer] [EPSILON max_distance:double] [EF search-exploration-factor:integer] [FILTER expression] [FILTER-EF max-filtering-effort:integer] [TRUTH] [NOTHREAD]"
    ),
    vspec!(
        "vdim",
        read::vdim,
        Flags::READONLY.union(Flags::FAST),
        "8.0.0",
        "Returns the dimension of a vector set's vectors.",
        "key"
    ),
    vspec!(
        "vcard",
        read::vcard,
        Flags::READONLY.union(Flags::FAST),
        "8.0.0",
        "Returns the number of elements of a vector set.",
        "key"
    ),
    vspec!(
        "vemb",
        read::vemb,
        Flags::READONLY.union(Flags::FAST),
        "8.0.0",
        "Returns the vector of an element.",
        "key element [RAW]"
    ),
    vspec!(
        "vlinks",
        read::vlinks,
        Flags::READONLY.union(Flags::FAST),
        "8.0.0",
        "Returns an element's neighbours at each layer of the graph.",
        "key element [WITHSCORES]"
    ),
    vspec!(
        "vinfo",
        read::vinfo,
        Flags::READONLY.union(Flags::FAST),
        "8.0.0",
        "Returns information about a vector set.",
        "key"
    ),
    vspec!(
        "vsetattr",
        write::vsetattr,
        Flags::WRITE.union(Flags::FAST),
        "8.0.0",
        "Sets or removes the JSON attributes of an element.",
        "key element json"
    ),
    vspec!(
        "vgetattr",
        read::vgetattr,
        Flags::READONLY.union(Flags::FAST),
        "8.0.0",
        "Returns the JSON attributes of an element.",
        "key element"
    ),
    vspec!(
        "vrandmember",
        read::vrandmember,
        Flags::READONLY,
        "8.0.0",
        "Returns one or more random elements of a vector set.",
        "key [count:integer]"
    ),
    vspec!(
        "vismember",
        read::vismember,
        Flags::READONLY,
        "8.2.0",
        "Tells whether an element belongs to a vector set.",
        "key element"
    ),
];

#[cfg(test)]
mod tests {
    //! The vector set commands through the engine: versions, replies that no fixture can
    //! compare (VINFO's random fields), DUMP/RESTORE and what DEBUG RELOAD keeps.

    use super::COMMANDS;
    use crate::base::compat::CompatVersion;
    use crate::io::test_harness::{error, int, Harness};

    #[test]
    fn documented_syntax_parses() {
        use crate::kernel::table::docs::parse;
        for spec in COMMANDS {
            let args = parse(spec.syntax, spec.keys.len());
            assert!(args.is_ok(), "{}: {:?}", spec.name, args);
        }
    }

    #[test]
    fn unknown_before_8_2_and_vismember_only_from_8_2() {
        let mut old = Harness::as_version(CompatVersion::V7_4);
        assert!(error(&old.run("VCARD k")).starts_with("ERR unknown command 'VCARD'"));
        let mut h = Harness::new();
        assert_eq!(int(&h.run("VCARD k")), 0);
        assert_eq!(int(&h.run("VISMEMBER k a")), 0);
    }

    #[test]
    fn the_module_shows_from_8_2_only() {
        let mut old = Harness::as_version(CompatVersion::V7_4);
        assert_eq!(old.run_text("MODULE LIST"), "*0\r\n");
        assert!(!old.run_text("INFO modules").contains("module:"));
        let mut h = Harness::as_version(CompatVersion::V8_2);
        assert!(h.run_text("MODULE LIST").contains("$9\r\nvectorset\r\n"));
        assert!(h
            .run_text("INFO modules")
            .contains("module:name=vectorset,ver=1,"));
        assert!(h
            .run_text("COMMAND INFO vadd")
            .starts_with("*1\r\n*10\r\n$4\r\nVADD\r\n"));
        // No category names it: `+@write` does not let a user add to a vector set.
        assert!(!h.run_text("ACL CAT write").contains("VADD"));
        h.run("ACL SETUSER w on nopass ~* +@write");
        assert!(h
            .run_text("ACL DRYRUN w VADD k VALUES 1 1 e")
            .contains("'VADD' command"));
        h.run("ACL SETUSER a on nopass ~* +@all -vrem");
        assert_eq!(h.run_text("ACL DRYRUN a VADD k VALUES 1 1 e"), "+OK\r\n");
        assert!(h.run_text("ACL LIST").contains(" +@all -vrem"));
    }

    #[test]
    fn vinfo_counts_what_the_set_holds() {
        let mut h = Harness::new();
        h.run("VADD k REDUCE 2 VALUES 4 1 2 3 4 a SETATTR {\"x\":1}");
        h.run("VADD k REDUCE 2 VALUES 4 4 3 2 1 b");
        let field = |h: &mut Harness, name: &str| {
            let text = h.run_text("VINFO k");
            let lines: Vec<&str> = text.split("\r\n").collect();
            let i = lines.iter().position(|l| *l == format!("+{name}")).unwrap();
            lines[i + 1][1..].to_string()
        };
        assert_eq!(field(&mut h, "quant-type"), "int8");
        assert_eq!(field(&mut h, "vector-dim"), "2");
        assert_eq!(field(&mut h, "projection-input-dim"), "4");
        assert_eq!(field(&mut h, "size"), "2");
        assert_eq!(field(&mut h, "attributes-count"), "1");
        assert_eq!(field(&mut h, "hnsw-max-node-uid"), "2");
        // An update is a new node: the node ids go on.
        h.run("VADD k REDUCE 2 VALUES 4 4 3 2 2 b");
        assert_eq!(field(&mut h, "hnsw-max-node-uid"), "3");
    }

    #[test]
    fn debug_reload_keeps_vectors_graph_and_attributes() {
        let mut h = Harness::new();
        h.engine.server.config.enable_debug_command = crate::base::config::Access::Yes;
        for i in 0..60 {
            let (x, y, z) = (i % 7, i % 5 + 1, i % 3);
            h.run(&format!(
                "VADD k VALUES 3 {x} {y} {z} e{i} SETATTR {{\"i\":{i}}}"
            ));
        }
        h.run("VADD n VALUES 3 1 2 3 a NOQUANT");
        h.run("VADD b VALUES 3 1 -2 3 a BIN");
        let before: Vec<_> = [
            "VEMB k e7",
            "VEMB n a RAW",
            "VEMB b a",
            "VSIM k ELE e3 WITHSCORES COUNT 60 TRUTH",
        ]
        .iter()
        .map(|c| h.run_text(c))
        .collect();
        let digest = h.run_text("DEBUG DIGEST");
        // A load reverses the node list (as Redis's does), and with it the order of a TRUTH
        // scan's ties: one reload keeps the same replies as sets, two give the same bytes.
        let sorted = |text: &str| {
            let mut lines: Vec<&str> = text.split("\r\n").collect();
            lines.sort_unstable();
            lines.join("\n")
        };
        assert_eq!(h.run_text("DEBUG RELOAD"), "+OK\r\n");
        let once = h.run_text("VSIM k ELE e3 WITHSCORES COUNT 60 TRUTH");
        assert_eq!(sorted(&once), sorted(&before[3]));
        assert_eq!(h.run_text("DEBUG RELOAD"), "+OK\r\n");
        let after: Vec<_> = [
            "VEMB k e7",
            "VEMB n a RAW",
            "VEMB b a",
            "VSIM k ELE e3 WITHSCORES COUNT 60 TRUTH",
        ]
        .iter()
        .map(|c| h.run_text(c))
        .collect();
        assert_eq!(before, after);
        assert_eq!(h.run_text("DEBUG DIGEST"), digest);
        assert_eq!(h.run_text("VGETATTR k e9"), "$7\r\n{\"i\":9}\r\n");
        assert_eq!(int(&h.run("VCARD k")), 60);
    }

    #[test]
    fn dump_restore_round_trips() {
        let mut h = Harness::new();
        for i in 0..30 {
            h.run(&format!("VADD k VALUES 2 {} {} e{i}", i % 4, i % 9 + 1));
        }
        let payload = match h.run("DUMP k") {
            embedis_protocol::Value::Bulk(b) => b,
            other => panic!("{other:?}"),
        };
        let mut args: Vec<&[u8]> = vec![b"RESTORE", b"k2", b"0"];
        args.push(&payload);
        let reply = h.run_args(&args);
        assert_eq!(reply, embedis_protocol::Value::Simple("OK".into()));
        assert_eq!(h.run_text("VEMB k e5"), h.run_text("VEMB k2 e5"));
        assert_eq!(int(&h.run("VCARD k2")), 30);
        assert_eq!(h.run_text("TYPE k2"), "+vectorset\r\n");
        assert_eq!(
            error(&h.run("COPY k k3")),
            "ERR not supported for this module key"
        );
    }
}
