//! Access by position: LLEN, LINDEX, LRANGE, LSET, LINSERT, LREM, LTRIM and LPOS (a command that
//! reads through the list ends by recompressing the nodes it decompressed).

use embedis_protocol::number::parse_i64;

use crate::base::compat::CompatVersion;
use crate::base::config::event_class::LIST;
use crate::base::error::{CmdResult, Error};
use crate::kernel::ctx::Ctx;

use super::{delete_if_empty, list_of, ranged_arg};

// ---------------------------------------------------------------------------------------------
// Access by position
// ---------------------------------------------------------------------------------------------

pub(super) fn llen(ctx: &mut Ctx<'_>) -> CmdResult {
    let db = ctx.db();
    let len = match ctx.ks.read(db, ctx.arg(1), ctx.now_ms) {
        Some(value) => list_of(value)?.len(),
        None => 0,
    };
    ctx.out.integer(len as i64);
    Ok(())
}

/// A possibly negative index into a list of `len` elements, if it is in range.
fn resolve_index(index: i64, len: usize) -> Option<usize> {
    let len = len as i64;
    let index = if index < 0 { index + len } else { index };
    (0..len).contains(&index).then_some(index as usize)
}

pub(super) fn lindex(ctx: &mut Ctx<'_>) -> CmdResult {
    let db = ctx.db();
    let Some(value) = ctx.ks.read(db, ctx.arg(1), ctx.now_ms) else {
        ctx.out.null();
        return Ok(());
    };
    let list = list_of(value)?;
    let index = parse_i64(ctx.args[2].as_ref()).ok_or(Error::NotInteger)?;
    match resolve_index(index, list.len()).and_then(|i| list.get(i)) {
        Some(element) => ctx.out.bulk(element),
        None => ctx.out.null(),
    }
    list.release_decompressed();
    Ok(())
}

/// LRANGE / LTRIM's range over `len` elements: the first index and how many, if not empty.
fn resolve_range(start: i64, end: i64, len: usize) -> Option<(usize, usize)> {
    let len = len as i64;
    let mut start = if start < 0 { start + len } else { start };
    let mut end = if end < 0 { end + len } else { end };
    if start < 0 {
        start = 0;
    }
    if start > end || start >= len {
        return None;
    }
    if end >= len {
        end = len - 1;
    }
    Some((start as usize, (end - start + 1) as usize))
}

pub(super) fn lrange(ctx: &mut Ctx<'_>) -> CmdResult {
    let start = ctx.int_arg(2)?;
    let end = ctx.int_arg(3)?;
    let db = ctx.db();
    let Some(value) = ctx.ks.read(db, ctx.arg(1), ctx.now_ms) else {
        ctx.out.array(0);
        return Ok(());
    };
    let list = list_of(value)?;
    match resolve_range(start, end, list.len()) {
        None => ctx.out.array(0),
        Some((first, n)) => {
            ctx.out.array(n);
            for element in list.iter_from(first).take(n) {
                ctx.out.bulk(element);
            }
        }
    }
    // Compressed nodes the walk decompressed go back to their compressed size.
    list.release_decompressed();
    Ok(())
}

pub(super) fn lset(ctx: &mut Ctx<'_>) -> CmdResult {
    let db = ctx.db();
    let value = ctx
        .ks
        .write(db, ctx.arg(1), ctx.now_ms)
        .ok_or(Error::NoSuchKey)?;
    let list = list_of(value)?;
    let index = parse_i64(ctx.args[2].as_ref()).ok_or(Error::NotInteger)?;
    let element = ctx.args[3].as_ref();
    match resolve_index(index, list.len()) {
        Some(i) => {
            list.set(i, element);
            ctx.ks.dirty += 1;
            ctx.out.ok();
            ctx.notify(LIST, "lset", ctx.arg(1));
            Ok(())
        }
        None => Err(Error::msg("ERR index out of range")),
    }
}

pub(super) fn lrem(ctx: &mut Ctx<'_>) -> CmdResult {
    let count = ctx.int_arg(2)?;
    let db = ctx.db();
    let key = ctx.arg(1);
    let element = ctx.arg(3);
    let Some(value) = ctx.ks.write(db, key, ctx.now_ms) else {
        ctx.out.integer(0);
        return Ok(());
    };
    let list = list_of(value)?;
    let limit = count.unsigned_abs().min(usize::MAX as u64) as usize;
    let removed = list.remove_matching(element, limit, count < 0);
    let empty = list.is_empty();
    ctx.ks.dirty += removed as u64;
    if removed > 0 {
        ctx.notify(LIST, "lrem", key);
    }
    delete_if_empty(ctx, key, empty);
    ctx.out.integer(removed as i64);
    Ok(())
}

pub(super) fn ltrim(ctx: &mut Ctx<'_>) -> CmdResult {
    let start = ctx.int_arg(2)?;
    let end = ctx.int_arg(3)?;
    let db = ctx.db();
    let key = ctx.arg(1);
    if let Some(value) = ctx.ks.write(db, key, ctx.now_ms) {
        let list = list_of(value)?;
        let len = list.len();
        match resolve_range(start, end, len) {
            None => list.drain_front(len),
            Some((first, n)) => {
                list.drain_back(len - first - n);
                list.drain_front(first);
            }
        }
        let empty = list.is_empty();
        ctx.ks.dirty += (len - list.len()) as u64;
        // Redis reports the key modified even when nothing was trimmed.
        ctx.ks.touched(db, key);
        ctx.notify(LIST, "ltrim", key);
        delete_if_empty(ctx, key, empty);
    }
    ctx.out.ok();
    Ok(())
}

pub(super) fn linsert(ctx: &mut Ctx<'_>) -> CmdResult {
    let after = if ctx.arg_is(2, "after") {
        true
    } else if ctx.arg_is(2, "before") {
        false
    } else {
        return Err(Error::Syntax);
    };
    let db = ctx.db();
    let pivot = ctx.arg(3);
    let element = ctx.arg(4);
    let Some(value) = ctx.ks.write(db, ctx.arg(1), ctx.now_ms) else {
        ctx.out.integer(0);
        return Ok(());
    };
    let list = list_of(value)?;
    // The new length, or -1 when the pivot is not there.
    let reply = match list.position(pivot) {
        None => -1,
        Some(at) => {
            list.insert_at(at, after, element);
            list.len() as i64
        }
    };
    list.release_decompressed();
    // The event before the reply, as Redis.
    if reply >= 0 {
        ctx.ks.dirty += 1;
        ctx.notify(LIST, "linsert", ctx.arg(1));
    }
    ctx.out.integer(reply);
    Ok(())
}

pub(super) fn lpos(ctx: &mut Ctx<'_>) -> CmdResult {
    let mut rank: i64 = 1;
    let mut count: Option<i64> = None;
    let mut maxlen: i64 = 0;
    let mut j = 3;
    while j < ctx.argc() {
        let has_value = j + 1 < ctx.argc();
        if ctx.arg_is(j, "rank") && has_value {
            rank = ctx.int_arg(j + 1)?;
            // Redis 7.2 refuses the one rank it cannot negate; 7.0 searched it as -1.
            if rank == i64::MIN && ctx.server.config.compat_version >= CompatVersion::V7_2 {
                return Err(Error::msg(
                    "ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807",
                ));
            }
            if rank == 0 {
                return Err(Error::msg(
                    "ERR RANK can't be zero: use 1 to start from the first match, 2 from the second ... or use negative to start from the end of the list",
                ));
            }
        } else if ctx.arg_is(j, "count") && has_value {
            count = Some(ranged_arg(ctx, j + 1, 0, "ERR COUNT can't be negative")?);
        } else if ctx.arg_is(j, "maxlen") && has_value {
            maxlen = ranged_arg(ctx, j + 1, 0, "ERR MAXLEN can't be negative")?;
        } else {
            return Err(Error::Syntax);
        }
        j += 2;
    }
    let db = ctx.db();
    let element = ctx.arg(2);
    let Some(value) = ctx.ks.read(db, ctx.arg(1), ctx.now_ms) else {
        match count {
            Some(_) => ctx.out.array(0),
            None => ctx.out.null(),
        }
        return Ok(());
    };
    let list = list_of(value)?;
    // A negative rank searches from the tail. Negating LLONG_MIN leaves it negative, so that
    // every match reaches the rank: Redis answers the last match, as for -1.
    let (from_tail, rank) = if rank < 0 {
        (true, rank.wrapping_neg())
    } else {
        (false, rank)
    };
    let wanted = match count {
        None => 1,
        Some(0) => u64::MAX,
        Some(n) => n as u64,
    };
    let len = list.len();
    let scan = if maxlen == 0 {
        len
    } else {
        (maxlen as u64).min(len as u64) as usize
    };
    let mut found: Vec<i64> = Vec::new();
    let mut matches: i64 = 0;
    let mut visit = |index: usize, e: &[u8]| {
        if e == element {
            matches += 1;
            if matches >= rank {
                let position = if from_tail { len - 1 - index } else { index };
                found.push(position as i64);
                return found.len() as u64 >= wanted;
            }
        }
        false
    };
    if from_tail {
        for (index, e) in list.iter().rev().take(scan).enumerate() {
            if visit(index, e) {
                break;
            }
        }
    } else {
        for (index, e) in list.iter().take(scan).enumerate() {
            if visit(index, e) {
                break;
            }
        }
    }
    list.release_decompressed();
    match count {
        Some(_) => {
            ctx.out.array(found.len());
            for p in found {
                ctx.out.integer(p);
            }
        }
        None => match found.first() {
            Some(&p) => ctx.out.integer(p),
            None => ctx.out.null(),
        },
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_as_redis_computes_them() {
        assert_eq!(resolve_range(0, -1, 5), Some((0, 5)));
        assert_eq!(resolve_range(-100, 100, 5), Some((0, 5)));
        assert_eq!(resolve_range(3, 1, 5), None);
        assert_eq!(resolve_range(5, 10, 5), None);
        assert_eq!(resolve_range(-1, -2, 5), None);
        assert_eq!(resolve_range(i64::MIN, i64::MAX, 5), Some((0, 5)));
        assert_eq!(resolve_range(0, 0, 0), None);
        assert_eq!(resolve_index(-1, 3), Some(2));
        assert_eq!(resolve_index(-4, 3), None);
        assert_eq!(resolve_index(i64::MIN, 3), None);
        assert_eq!(resolve_index(3, 3), None);
    }
}
