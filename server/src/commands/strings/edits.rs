//! The byte-level edits and reads of a string: APPEND, STRLEN, GETRANGE (SUBSTR) and SETRANGE;
//! an edit in place makes the value `raw`, as in Redis.

use crate::base::config::event_class::STRING;
use crate::base::error::{CmdResult, Error};
use crate::base::value::Value;
use crate::kernel::ctx::Ctx;

use super::{check_string_length, clamp_range, string_len, string_of};

// ---------------------------------------------------------------------------------------------
// Byte-level edits and reads
// ---------------------------------------------------------------------------------------------

pub(super) fn append(ctx: &mut Ctx<'_>) -> CmdResult {
    let (db, now, key, suffix) = (ctx.client.db, ctx.now_ms, ctx.arg(1), ctx.arg(2));
    let limit = ctx.server.config.proto_max_bulk_len;
    let len = match ctx.ks.write(db, key, now) {
        Some(value) => {
            check_string_length(limit, (string_len(value)? + suffix.len()) as u64)?;
            let buffer = value.make_raw().expect("a string");
            buffer.extend_from_slice(suffix);
            let len = buffer.len();
            ctx.ks.dirty += 1;
            len
        }
        None => {
            // A new key holds the argument as SET would store it (int-encoded if it can be).
            ctx.ks.add(db, key, Value::string(suffix), None, now);
            suffix.len()
        }
    };
    ctx.notify(STRING, "append", key);
    ctx.out.integer(len as i64);
    Ok(())
}

pub(super) fn strlen(ctx: &mut Ctx<'_>) -> CmdResult {
    let (db, now, key) = (ctx.client.db, ctx.now_ms, ctx.arg(1));
    let len = match ctx.ks.read(db, key, now) {
        Some(value) => string_len(value)?,
        None => 0,
    };
    ctx.out.integer(len as i64);
    Ok(())
}

pub(super) fn getrange(ctx: &mut Ctx<'_>) -> CmdResult {
    let start = ctx.int_arg(2)?;
    let end = ctx.int_arg(3)?;
    let (db, now, key) = (ctx.client.db, ctx.now_ms, ctx.arg(1));
    let Some(value) = ctx.ks.read(db, key, now) else {
        ctx.out.bulk(b"");
        return Ok(());
    };
    let bytes = string_of(value)?;
    // Both from the end and reversed: empty even where clamping would make a range.
    if start < 0 && end < 0 && start > end {
        ctx.out.bulk(b"");
        return Ok(());
    }
    match clamp_range(start, end, bytes.len() as i64) {
        Some((s, e)) => ctx.out.bulk(&bytes[s as usize..=e as usize]),
        None => ctx.out.bulk(b""),
    }
    Ok(())
}

pub(super) fn setrange(ctx: &mut Ctx<'_>) -> CmdResult {
    let offset = ctx.int_arg(2)?;
    if offset < 0 {
        return Err(Error::msg("ERR offset is out of range"));
    }
    let (db, now, key, patch) = (ctx.client.db, ctx.now_ms, ctx.arg(1), ctx.arg(3));
    let limit = ctx.server.config.proto_max_bulk_len;
    let end = (offset as u64).saturating_add(patch.len() as u64);
    let len = match ctx.ks.write(db, key, now) {
        Some(value) => {
            let len = string_len(value)?;
            if patch.is_empty() {
                // Nothing to write: the value (and its encoding) stay as they are.
                len
            } else {
                check_string_length(limit, end)?;
                let buffer = value.make_raw().expect("a string");
                if buffer.len() < end as usize {
                    buffer.resize(end as usize, 0);
                }
                buffer[offset as usize..end as usize].copy_from_slice(patch);
                let len = buffer.len();
                ctx.ks.dirty += 1;
                len
            }
        }
        None if patch.is_empty() => 0,
        None => {
            check_string_length(limit, end)?;
            let mut buffer = vec![0u8; end as usize];
            buffer[offset as usize..].copy_from_slice(patch);
            ctx.ks.add(db, key, Value::Raw(Box::new(buffer)), None, now);
            end as usize
        }
    };
    if !patch.is_empty() {
        ctx.notify(STRING, "setrange", key);
    }
    ctx.out.integer(len as i64);
    Ok(())
}
