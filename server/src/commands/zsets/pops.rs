//! The pops: ZPOPMIN, ZPOPMAX, ZMPOP and their blocking forms BZPOPMIN, BZPOPMAX and BZMPOP,
//! which wait for a key to hold a sorted set and are served from the key that woke them.

use bytes::Bytes;

use crate::base::config::event_class::ZSET;
use crate::base::cstr::word_is;
use crate::base::error::{CmdResult, Error};
use crate::base::value::{Value, ValueType};
use crate::kernel::ctx::Ctx;
use crate::model::blocking::parse_timeout_seconds;
use crate::model::keyspace::Access;

use super::{count_arg, delete_if_empty, positive_arg, zset_of, ScoreWriter};

// ---------------------------------------------------------------------------------------------
// Pops
// ---------------------------------------------------------------------------------------------

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum End {
    Min,
    Max,
}

/// How a pop replies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PopReply {
    /// ZPOPMIN without COUNT: `[member, score]`, or `[]`.
    Flat,
    /// ZPOPMIN with COUNT: flat in RESP2, pairs in RESP3.
    Counted,
    /// BZPOPMIN: `[key, member, score]`.
    WithKey,
    /// ZMPOP, BZMPOP: `[key, [[member, score]…]]`.
    Nested,
}

/// Pops up to `count` elements from the set under `key` (which must hold a non-empty sorted
/// set) and replies; deletes the key when emptied.
fn pop_from(ctx: &mut Ctx<'_>, key: &[u8], end: End, count: usize, reply: PopReply) {
    let (db, now) = (ctx.db(), ctx.now_ms);
    let Some(Value::ZSet(set)) = ctx.ks.write(db, key, now) else {
        unreachable!("checked by the caller");
    };
    let len = set.len();
    let n = count.min(len);
    let out = &mut ctx.out;
    let mut scores = ScoreWriter::new();
    let pairs = match reply {
        PopReply::Flat => false,
        PopReply::Counted => out.is_resp3(),
        PopReply::WithKey => false,
        PopReply::Nested => true,
    };
    match reply {
        PopReply::WithKey => {
            out.array(3);
            out.bulk(key);
        }
        PopReply::Nested => {
            out.array(2);
            out.bulk(key);
            out.array(n);
        }
        PopReply::Flat | PopReply::Counted => {
            out.array(if pairs { n } else { 2 * n });
        }
    }
    // Redis sends the event after the reply's header, before the first element.
    let event = match end {
        End::Min => "zpopmin",
        End::Max => "zpopmax",
    };
    ctx.notify(ZSET, event, key);
    let Some(Value::ZSet(set)) = ctx
        .ks
        .lookup(db, key, now, Access::NoTouch)
        .map(|o| &mut o.value)
    else {
        unreachable!("looked up above");
    };
    let out = &mut ctx.out;
    set.for_each_in_ranks(0, n - 1, end == End::Max, |m, s| {
        if pairs {
            out.array(2);
        }
        out.bulk(m);
        scores.write(out, s);
    });
    match end {
        End::Min => set.remove_ranks(0, n - 1),
        End::Max => set.remove_ranks(len - n, len - 1),
    };
    let empty = set.is_empty();
    ctx.ks.dirty += n as u64;
    // The blocking and multi-key pops propagate as ZPOPMIN / ZPOPMAX (with the number popped
    // for ZMPOP and BZMPOP).
    if !matches!(reply, PopReply::Flat | PopReply::Counted) {
        ctx.propagate_as(|| {
            let verb = Bytes::from_static(match end {
                End::Min => b"ZPOPMIN",
                End::Max => b"ZPOPMAX",
            });
            let mut v = vec![verb, Bytes::copy_from_slice(key)];
            if reply == PopReply::Nested {
                v.push(crate::model::write_stream::integer_arg(n as i64));
            }
            v
        });
    }
    delete_if_empty(ctx, key, empty);
}

pub(super) fn zpopmin(ctx: &mut Ctx<'_>) -> CmdResult {
    zpop_generic(ctx, End::Min)
}

pub(super) fn zpopmax(ctx: &mut Ctx<'_>) -> CmdResult {
    zpop_generic(ctx, End::Max)
}

fn zpop_generic(ctx: &mut Ctx<'_>, end: End) -> CmdResult {
    if ctx.argc() > 3 {
        return Err(Error::Syntax);
    }
    let mut count = 1;
    let mut reply = PopReply::Flat;
    if ctx.argc() == 3 {
        count = positive_arg(ctx.arg(2), "ERR value is out of range, must be positive")?;
        reply = PopReply::Counted;
    }
    let key = ctx.arg(1);
    // The type is checked before a count of 0 answers `[]`: `ZPOPMIN str 0` is WRONGTYPE.
    if read_for_pop(ctx, key)?.is_none() || count == 0 {
        ctx.out.array(0);
        return Ok(());
    }
    pop_from(ctx, key, end, count as usize, reply);
    Ok(())
}

/// Looks a key up for writing: its length if it holds a sorted set, `None` if missing,
/// WRONGTYPE otherwise.
fn read_for_pop(ctx: &mut Ctx<'_>, key: &[u8]) -> CmdResult<Option<usize>> {
    let (db, now) = (ctx.db(), ctx.now_ms);
    match ctx.ks.write(db, key, now) {
        None => Ok(None),
        Some(value) => Ok(Some(zset_of(value)?.len())),
    }
}

/// ZMPOP / BZMPOP arguments.
struct MultiPop<'a> {
    keys: &'a [Bytes],
    end: End,
    count: usize,
}

fn parse_mpop<'a>(ctx: &Ctx<'a>, numkeys_at: usize) -> CmdResult<MultiPop<'a>> {
    let numkeys = count_arg(ctx.arg(numkeys_at), "ERR numkeys should be greater than 0")?;
    let where_at = (numkeys_at as i64)
        .saturating_add(numkeys)
        .saturating_add(1);
    if where_at >= ctx.argc() as i64 {
        return Err(Error::Syntax);
    }
    let where_at = where_at as usize;
    let end = if word_is(ctx.arg(where_at), "min") {
        End::Min
    } else if word_is(ctx.arg(where_at), "max") {
        End::Max
    } else {
        return Err(Error::Syntax);
    };
    let mut count = None;
    let mut i = where_at + 1;
    while i < ctx.argc() {
        let more = ctx.argc() - 1 - i;
        if count.is_none() && word_is(ctx.arg(i), "count") && more > 0 {
            i += 1;
            count = Some(count_arg(ctx.arg(i), "ERR count should be greater than 0")?);
        } else {
            return Err(Error::Syntax);
        }
        i += 1;
    }
    let args: &'a [Bytes] = ctx.args;
    Ok(MultiPop {
        keys: &args[numkeys_at + 1..where_at],
        end,
        count: count.unwrap_or(1) as usize,
    })
}

pub(super) fn zmpop(ctx: &mut Ctx<'_>) -> CmdResult {
    let mpop = parse_mpop(ctx, 1)?;
    if !pop_first_of(ctx, mpop.keys, mpop.end, mpop.count, PopReply::Nested)? {
        ctx.out.null_array();
    }
    Ok(())
}

/// Pops from the first key holding a non-empty sorted set; false if there is none. A key of
/// another type on the way is WRONGTYPE.
fn pop_first_of(
    ctx: &mut Ctx<'_>,
    keys: &[Bytes],
    end: End,
    count: usize,
    reply: PopReply,
) -> CmdResult<bool> {
    for key in keys {
        match read_for_pop(ctx, key)? {
            Some(len) if len > 0 => {
                pop_from(ctx, key, end, count, reply);
                return Ok(true);
            }
            _ => {}
        }
    }
    Ok(false)
}

pub(super) fn bzpopmin(ctx: &mut Ctx<'_>) -> CmdResult {
    bzpop_generic(ctx, End::Min)
}

pub(super) fn bzpopmax(ctx: &mut Ctx<'_>) -> CmdResult {
    bzpop_generic(ctx, End::Max)
}

fn bzpop_generic(ctx: &mut Ctx<'_>, end: End) -> CmdResult {
    let last = ctx.argc() - 1;
    let deadline = parse_timeout_seconds(
        ctx.arg(last),
        ctx.now_ms,
        ctx.server.config.compat_version >= crate::base::compat::CompatVersion::V7_2,
    )?;
    let args: &[Bytes] = ctx.args;
    let keys = &args[1..last];
    if serve_blocking(ctx, keys, end, 1, PopReply::WithKey)? {
        return Ok(());
    }
    ctx.block_on_keys(keys, ValueType::ZSet, deadline);
    Ok(())
}

pub(super) fn bzmpop(ctx: &mut Ctx<'_>) -> CmdResult {
    let mpop = parse_mpop(ctx, 2)?;
    let deadline = parse_timeout_seconds(
        ctx.arg(1),
        ctx.now_ms,
        ctx.server.config.compat_version >= crate::base::compat::CompatVersion::V7_2,
    )?;
    if serve_blocking(ctx, mpop.keys, mpop.end, mpop.count, PopReply::Nested)? {
        return Ok(());
    }
    ctx.block_on_keys(mpop.keys, ValueType::ZSet, deadline);
    Ok(())
}

/// Serves a blocking pop now if it can: from the first non-empty key on a first run, from the
/// key that woke it on a re-run (as Redis 7.0 does).
fn serve_blocking(
    ctx: &mut Ctx<'_>,
    keys: &[Bytes],
    end: End,
    count: usize,
    reply: PopReply,
) -> CmdResult<bool> {
    match ctx.woken_by {
        Some(key) => match read_for_pop(ctx, key)? {
            Some(len) if len > 0 => {
                pop_from(ctx, key, end, count, reply);
                Ok(true)
            }
            _ => Ok(false),
        },
        None => pop_first_of(ctx, keys, end, count, reply),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::test_harness::Harness;
    use crate::model::client::{ClientId, Peer};
    use bytes::BytesMut;

    #[test]
    fn blocking_pop_on_wrong_type() {
        let mut h = Harness::new();
        h.run_text("SET s x");
        assert_eq!(
            h.run_text("BZPOPMIN s 0"),
            "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"
        );
    }

    /// Two more clients on the harness's engine, to block one and write with the other.
    fn client(h: &mut Harness, port: u16) -> ClientId {
        let addr = format!("127.0.0.1:{port}").parse().unwrap();
        let local = "127.0.0.1:6379".parse().unwrap();
        h.engine.connect(Peer::Tcp { addr, local }, -1).unwrap().id
    }

    fn run(h: &mut Harness, id: ClientId, line: &str) -> String {
        let args = line
            .split(' ')
            .map(|w| Bytes::copy_from_slice(w.as_bytes()))
            .collect();
        let mut out = BytesMut::new();
        h.engine.execute(id, args, &mut out);
        String::from_utf8_lossy(&out).into_owned()
    }

    fn pending(h: &mut Harness, id: ClientId) -> String {
        let client = h.engine.clients.get_mut(id).unwrap();
        String::from_utf8_lossy(&std::mem::take(&mut client.pending)).into_owned()
    }

    #[test]
    fn blocked_pops_are_served_in_order_from_the_written_key() {
        let mut h = Harness::new();
        let (a, b, c) = (client(&mut h, 1), client(&mut h, 2), client(&mut h, 3));
        assert_eq!(run(&mut h, a, "BZPOPMIN k1 k2 0"), "");
        assert_eq!(run(&mut h, c, "BZMPOP 0 1 k2 MAX COUNT 5"), "");
        assert_eq!(run(&mut h, b, "ZADD k2 1 x 2 y 3 z"), ":3\r\n");
        assert_eq!(
            pending(&mut h, a),
            "*3\r\n$2\r\nk2\r\n$1\r\nx\r\n$1\r\n1\r\n"
        );
        assert_eq!(
            pending(&mut h, c),
            "*2\r\n$2\r\nk2\r\n*2\r\n*2\r\n$1\r\nz\r\n$1\r\n3\r\n*2\r\n$1\r\ny\r\n$1\r\n2\r\n"
        );
        assert_eq!(run(&mut h, b, "EXISTS k2"), ":0\r\n", "emptied and deleted");
    }

    #[test]
    fn a_key_of_another_type_does_not_wake_and_timeouts_reply_null() {
        let mut h = Harness::new();
        let (a, b) = (client(&mut h, 1), client(&mut h, 2));
        assert_eq!(run(&mut h, a, "BZPOPMAX k 1"), "");
        assert_eq!(run(&mut h, b, "SET k s"), "+OK\r\n");
        assert_eq!(pending(&mut h, a), "", "still blocked");
        run(&mut h, b, "DEL k");
        run(&mut h, b, "ZADD k 1 a 2 b");
        assert_eq!(
            pending(&mut h, a),
            "*3\r\n$1\r\nk\r\n$1\r\nb\r\n$1\r\n2\r\n"
        );
        assert_eq!(run(&mut h, a, "BZPOPMIN nothing 0.5"), "");
        h.advance_ms(501);
        h.engine.process_timeouts();
        assert_eq!(pending(&mut h, a), "*-1\r\n");
    }
}
