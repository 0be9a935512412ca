//! DEBUG subcommands that show or exercise the server's internals the way Redis's do, for
//! Redis's test suite and for client libraries' tests: PROTOCOL (one sample reply of each RESP
//! type), ERROR (an error line of the caller's choosing), DIGEST and DIGEST-VALUE (a signature of
//! the data), POPULATE (many keys at once), SET-DISABLE-DENY-SCRIPTS (scripts may call
//! `noscript` commands) and the accepted-but-inert REPLYBUFFER.
//!
//! The digests are Redis's own construction, so a digest taken here equals Redis's for the same
//! data (tests compare them across servers): a SHA1 "mix" (xor the data's hash in, then hash the
//! whole) for ordered parts, and a plain xor of the hashes of unordered parts (set members;
//! hash pairs and sorted-set entries mixed first), so that the encoding and the iteration order never
//! matter — a key and its COPY digest alike, whatever their internal form.

use embedis_datatypes::stream::StreamId;
use sha1_smol::Sha1;

use crate::kernel::ctx::Ctx;
use embedis_protocol::number::parse_i64;

use crate::base::error::{CmdResult, Error};
use crate::base::value::{Value, ValueType};
use crate::model::keyspace::Access;

type Digest = [u8; 20];

/// Runs one of these subcommands; `None` if `args[1]` is none of them (or its argument count
/// does not fit), for DEBUG's unknown-subcommand error.
pub fn run(ctx: &mut Ctx<'_>) -> Option<CmdResult> {
    let argc = ctx.argc();
    if ctx.arg_is(1, "protocol") && argc == 3 {
        Some(protocol(ctx))
    } else if ctx.arg_is(1, "error") && argc == 3 {
        // Written as a line, not returned as an `Error`: Redis sends it raw, so it counts in
        // neither errorstats nor total_error_replies.
        let text = ctx.arg(2);
        ctx.out.error_line(text);
        Some(Ok(()))
    } else if ctx.arg_is(1, "digest") && argc == 2 {
        let digest = database_digest(ctx);
        ctx.out.simple(hex(&digest).as_bytes());
        Some(Ok(()))
    } else if ctx.arg_is(1, "digest-value") && argc >= 2 {
        let db = ctx.db();
        let keys = &ctx.args[2..];
        ctx.out.array(keys.len());
        for key in keys {
            let mut digest = [0u8; 20];
            if let Some(object) = ctx.ks.lookup(db, key, ctx.now_ms, Access::NoTouch) {
                value_into(&mut digest, &object.value, object.has_expire());
            }
            ctx.out.simple(hex(&digest).as_bytes());
        }
        Some(Ok(()))
    } else if ctx.arg_is(1, "populate") && (3..=5).contains(&argc) {
        Some(populate(ctx))
    } else if ctx.arg_is(1, "set-disable-deny-scripts") && argc == 3 {
        // Lets scripts call `noscript` commands (the script host's gate reads it).
        ctx.server.disable_deny_scripts = atoi(ctx.arg(2)) != 0;
        ctx.out.ok();
        Some(Ok(()))
    } else if ctx.arg_is(1, "replybuffer") && argc == 4 {
        Some(reply_buffer_tuning(ctx))
    } else {
        None
    }
}

/// DEBUG REPLYBUFFER PEAK-RESET-TIME <ms|never|reset> | RESIZING <0|1>: the tuning of the
/// reply-buffer resize (see crate::model::reply_buffer).
fn reply_buffer_tuning(ctx: &mut Ctx<'_>) -> CmdResult {
    if ctx.arg_is(2, "peak-reset-time") {
        let ms = if ctx.arg_is(3, "never") {
            -1
        } else if ctx.arg_is(3, "reset") {
            crate::model::reply_buffer::DEFAULT_PEAK_RESET_MS
        } else {
            parse_i64(ctx.arg(3)).ok_or(Error::NotInteger)?
        };
        ctx.server.reply_tuning.peak_reset_ms = ms;
    } else if ctx.arg_is(2, "resizing") {
        ctx.server.reply_tuning.resizing = atoi(ctx.arg(3)) != 0;
    } else {
        return Err(crate::commands::common::subcommand_syntax_error(ctx));
    }
    ctx.out.ok();
    Ok(())
}

/// An argument that must be a non-negative integer, with Redis's error for anything else.
fn positive_arg(ctx: &Ctx<'_>, i: usize) -> CmdResult<usize> {
    parse_i64(ctx.arg(i))
        .filter(|n| *n >= 0)
        .map(|n| n as usize)
        .ok_or(Error::msg("ERR value is out of range, must be positive"))
}

/// DEBUG POPULATE <count> [<prefix>] [<size>]: string keys `<prefix>:<n>` (prefix `key`) holding
/// `value:<n>`, cut or padded with zero bytes to `size` when a size is given. Existing keys are
/// left as they are. The values are never integer-encoded, as Redis creates them.
fn populate(ctx: &mut Ctx<'_>) -> CmdResult {
    let count = positive_arg(ctx, 2)?;
    let size = if ctx.argc() == 5 {
        positive_arg(ctx, 4)?
    } else {
        0
    };
    let prefix: &[u8] = if ctx.argc() >= 4 { ctx.arg(3) } else { b"key" };
    let db = ctx.db();
    let dirty_before = ctx.ks.dirty;
    for n in 0..count {
        let mut key = prefix.to_vec();
        key.extend_from_slice(format!(":{n}").as_bytes());
        if ctx
            .ks
            .lookup(db, &key, ctx.now_ms, Access::NoTouch)
            .is_some()
        {
            continue;
        }
        let mut value = format!("value:{n}").into_bytes();
        if size > 0 {
            value.resize(size, 0);
        }
        ctx.ks
            .add(db, &key, Value::plain_string(&value), None, ctx.now_ms);
    }
    // Redis adds the keys without counting them dirty: no save point or
    // `rdb_changes_since_last_save` sees them, and nothing goes to the replicas or the AOF
    // (which is how a Sentinel test's replicas stay empty while their primary fills).
    ctx.ks.dirty = dirty_before;
    ctx.out.ok();
    Ok(())
}

const PROTOCOL_TYPES: &str =
    "string|integer|double|bignum|null|array|set|map|attrib|push|verbatim|true|false";

/// DEBUG PROTOCOL <type>: Redis's sample value of each type, down-converted for RESP2 clients
/// by the writer (push alone is refused there, as Redis refuses it).
fn protocol(ctx: &mut Ctx<'_>) -> CmdResult {
    let out = &mut ctx.out;
    let name = ctx.args[2].to_ascii_lowercase();
    match name.as_slice() {
        b"string" => out.bulk(b"Hello World"),
        b"integer" => out.integer(12345),
        // Redis's sample value, not an approximation of pi.
        #[allow(clippy::approx_constant)]
        b"double" => out.double(3.141),
        b"bignum" => out.big_number(b"1234567999999999999999999999999999999"),
        b"null" => out.null(),
        b"array" | b"set" | b"map" => {
            match name.as_slice() {
                b"array" => out.array(3),
                b"set" => out.set(3),
                _ => out.map(3),
            }
            for i in 0..3 {
                out.integer(i);
                if name == b"map" {
                    out.boolean(i == 1);
                }
            }
        }
        b"attrib" => {
            // RESP2 has no attributes: the reply follows alone.
            if out.is_resp3() {
                out.attribute(1);
                out.bulk(b"key-popularity");
                out.array(2);
                out.bulk(b"key:123");
                out.integer(90);
            }
            out.bulk(b"Some real reply following the attribute");
        }
        b"push" => {
            if !out.is_resp3() {
                out.error_line(b"ERR RESP2 is not supported by this command");
                return Ok(());
            }
            out.push(2);
            out.bulk(b"server-cpu-usage");
            out.integer(42);
            out.bulk(b"Some real reply following the push reply");
        }
        b"verbatim" => out.verbatim(b"txt", b"This is a verbatim\nstring"),
        b"true" => out.boolean(true),
        b"false" => out.boolean(false),
        _ => {
            let line = format!(
                "ERR Wrong protocol type name. Please use one of the following: {PROTOCOL_TYPES}"
            );
            out.error_line(line.as_bytes());
        }
    }
    Ok(())
}

/// Xors the SHA1 of `data` into `digest`.
fn xor_in(digest: &mut Digest, data: &[u8]) {
    let hash = Sha1::from(data).digest().bytes();
    for (d, h) in digest.iter_mut().zip(hash) {
        *d ^= h;
    }
}

/// Xors `data`'s SHA1 in, then replaces `digest` by its own SHA1: unlike a plain xor, the
/// result depends on the order of the parts mixed in.
fn mix_in(digest: &mut Digest, data: &[u8]) {
    xor_in(digest, data);
    *digest = Sha1::from(&digest[..]).digest().bytes();
}

/// Adds a value (and whether it has a TTL) to `digest`, as Redis's object digest does.
fn value_into(digest: &mut Digest, value: &Value, has_expire: bool) {
    // Redis's type numbers, so that a string and a one-element list of the same text differ
    // (and so that the digest is Redis's).
    let type_number: u32 = match value.value_type() {
        ValueType::String => 0,
        ValueType::List => 1,
        ValueType::Set => 2,
        ValueType::ZSet => 3,
        ValueType::Hash => 4,
        ValueType::Stream => 6,
        // A module type's object (Redis's OBJ_MODULE).
        ValueType::VectorSet => 5,
    };
    mix_in(digest, &type_number.to_be_bytes());
    match value {
        Value::List(list) => list.iter().for_each(|item| mix_in(digest, item)),
        Value::Set(set) => set
            .iter()
            .for_each(|member| member.with_bytes(|bytes| xor_in(digest, bytes))),
        Value::ZSet(zset) => zset.for_each(|member, score| {
            let mut element = [0u8; 20];
            mix_in(&mut element, member);
            let mut text = Vec::with_capacity(24);
            embedis_protocol::float::push_g17(&mut text, score);
            mix_in(&mut element, &text);
            xor_in(digest, &element);
        }),
        Value::Hash(hash) => hash.iter().for_each(|(field, value)| {
            let mut element = [0u8; 20];
            mix_in(&mut element, field);
            mix_in(&mut element, value);
            xor_in(digest, &element);
        }),
        Value::VectorSet(set) => vset_digest_into(digest, set),
        Value::Stream(stream) => {
            // Each entry's ID as `ms.seq`, then its fields and values, in order.
            for entry in stream.range(StreamId::MIN, StreamId::MAX) {
                mix_in(
                    digest,
                    format!("{}.{}", entry.id.ms, entry.id.seq).as_bytes(),
                );
                for (field, value) in entry.fields() {
                    mix_in(digest, field);
                    mix_in(digest, value);
                }
            }
        }
        string => {
            if let Some(bytes) = string.string_bytes() {
                mix_in(digest, &bytes);
            }
        }
    }
    if has_expire {
        xor_in(digest, b"!!expire!!");
    }
}

/// DEBUG DIGEST: every non-empty database's number mixed in, then each of its keys' digests
/// (key and value) xored in. All zeros when there is no key at all.
fn database_digest(ctx: &mut Ctx<'_>) -> Digest {
    let mut total = [0u8; 20];
    for db in &ctx.ks.dbs {
        if db.is_empty() {
            continue;
        }
        mix_in(&mut total, &(db.id as u32).to_be_bytes());
        for (key, object) in db.main.iter() {
            let mut digest = [0u8; 20];
            mix_in(&mut digest, &key[..]);
            value_into(&mut digest, &object.value, object.has_expire());
            xor_in(&mut total, &digest);
        }
    }
    total
}

fn hex(digest: &Digest) -> String {
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// C's `atoi`: optional spaces and sign, then digits, ignoring the rest; 0 when there are none.
pub fn atoi(bytes: &[u8]) -> i64 {
    let mut rest = bytes;
    while let [b, tail @ ..] = rest {
        if b.is_ascii_whitespace() {
            rest = tail;
        } else {
            break;
        }
    }
    let negative = rest.first() == Some(&b'-');
    if matches!(rest.first(), Some(b'-' | b'+')) {
        rest = &rest[1..];
    }
    let mut n: i64 = 0;
    for &b in rest.iter().take_while(|b| b.is_ascii_digit()) {
        n = n.wrapping_mul(10).wrapping_add((b - b'0') as i64);
    }
    if negative {
        -n
    } else {
        n
    }
}

/// The vector set type's digest callback as Redis 8.2 runs it: the count and the dimension as
/// one sequence, then per node its stored vector, its element and its attributes as another,
/// each sequence folded in by XOR so that node order does not matter.
fn vset_digest_into(digest: &mut Digest, set: &embedis_datatypes::vset::VectorSet) {
    let mut folded = [0u8; 20];
    let mut seq = [0u8; 20];
    mix_in(&mut seq, set.len().to_string().as_bytes());
    mix_in(&mut seq, set.dim().to_string().as_bytes());
    xor_in(&mut folded, &seq);
    for node in set.saved_nodes() {
        let mut seq = [0u8; 20];
        mix_in(&mut seq, &node.vector.raw_bytes());
        mix_in(&mut seq, &node.element.name);
        if let Some(a) = &node.element.attributes {
            mix_in(&mut seq, a);
        }
        xor_in(&mut folded, &seq);
    }
    xor_in(digest, &folded);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn c_atoi() {
        assert_eq!(atoi(b"1"), 1);
        assert_eq!(atoi(b"x"), 0);
        assert_eq!(atoi(b"  -12abc"), -12);
        assert_eq!(atoi(b"+7"), 7);
    }
}
