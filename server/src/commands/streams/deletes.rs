//! Redis 8.2's deletions that mind the consumer groups: XDELEX and XACKDEL, and the
//! KEEPREF / DELREF / ACKED word that they share with XADD's and XTRIM's trimming (what each
//! does to the groups' references is [`embedis_datatypes::stream::refs`]).
//!
//! Both answer one code per ID: -1 (no such entry, or for XACKDEL not pending in the group), 1
//! (deleted; for XACKDEL, acknowledged and deleted if it existed) and 2 (ACKED: still
//! referenced, kept). As in Redis they check the key's type first, then the options, and only
//! then, if the key (and group) exist, the IDs.

use bytes::Bytes;
use embedis_datatypes::stream::{Deletion, Refs, StreamId};
use embedis_protocol::number::parse_i64;

use crate::base::compat::CompatVersion;
use crate::base::config::event_class::STREAM;
use crate::base::cstr::word_is;
use crate::base::error::{CmdResult, Error};
use crate::kernel::ctx::Ctx;

use super::{parse_strict_id, read_stream, stream_at, write_stream};

/// KEEPREF, DELREF or ACKED, if `word` is one and the version has them (Redis 8.2).
pub(super) fn refs_word(ctx: &Ctx<'_>, word: &[u8]) -> Option<Refs> {
    if ctx.registry.version < CompatVersion::V8_2 {
        return None;
    }
    [
        ("keepref", Refs::KeepRef),
        ("delref", Refs::DelRef),
        ("acked", Refs::Acked),
    ]
    .into_iter()
    .find(|(name, _)| word_is(word, name))
    .map(|(_, refs)| refs)
}

/// `[KEEPREF|DELREF|ACKED] IDS numids id...` from argument `from` on, in any order, as Redis's
/// `streamParseAckDelArgsOrReply` reads it (a later IDS block replaces an earlier one).
struct DeleteArgs {
    refs: Refs,
    ids_at: usize,
    count: usize,
}

fn parse_delete_args(ctx: &Ctx<'_>, from: usize) -> CmdResult<DeleteArgs> {
    let argc = ctx.argc();
    let mut refs = None;
    let mut ids = None;
    let mut j = from;
    while j < argc {
        let word = ctx.arg(j);
        if let Some(r) = refs_word(ctx, word).filter(|_| refs.is_none()) {
            refs = Some(r);
            j += 1;
        } else if word_is(word, "ids") && j + 1 < argc {
            let count = match parse_i64(ctx.arg(j + 1)) {
                Some(n) if n >= 1 => n as usize,
                _ => return Err(Error::msg("ERR Number of IDs must be a positive integer")),
            };
            if count > argc - j - 2 {
                return Err(Error::msg(
                    "ERR The `numids` parameter must match the number of arguments",
                ));
            }
            ids = Some((j + 2, count));
            j += 2 + count;
        } else {
            return Err(Error::Syntax);
        }
    }
    let (ids_at, count) = ids.ok_or(Error::msg("ERR IDS option is required"))?;
    Ok(DeleteArgs {
        refs: refs.unwrap_or_default(),
        ids_at,
        count,
    })
}

impl DeleteArgs {
    fn ids(&self, args: &[Bytes]) -> CmdResult<Vec<StreamId>> {
        args[self.ids_at..self.ids_at + self.count]
            .iter()
            .map(|a| parse_strict_id(a))
            .collect()
    }

    /// The reply for a missing key (or group): -1 for every ID, which are not even parsed.
    fn reply_all_missing(&self, ctx: &mut Ctx<'_>) {
        ctx.out.array(self.count);
        for _ in 0..self.count {
            ctx.out.integer(-1);
        }
    }
}

/// XDELEX key [KEEPREF|DELREF|ACKED] IDS numids id...
pub(super) fn xdelex(ctx: &mut Ctx<'_>) -> CmdResult {
    let key = ctx.arg(1);
    let exists = write_stream(ctx, key)?.is_some();
    let options = parse_delete_args(ctx, 2)?;
    if !exists {
        options.reply_all_missing(ctx);
        return Ok(());
    }
    let ids = options.ids(ctx.args)?;
    let (db, now) = (ctx.db(), ctx.now_ms);
    let stream = stream_at(ctx.ks, db, key, now);
    let floor = stream.read_floor();
    ctx.out.array(ids.len());
    let mut deleted = 0;
    for id in ids {
        let code = match stream.delete_with_refs(id, options.refs, floor) {
            Deletion::Missing => -1,
            Deletion::Deleted => {
                deleted += 1;
                1
            }
            Deletion::Referenced => 2,
        };
        ctx.out.integer(code);
    }
    ctx.ks.dirty += deleted;
    finish_deletion(ctx, key, deleted);
    Ok(())
}

/// XACKDEL key group [KEEPREF|DELREF|ACKED] IDS numids id...: acknowledges each ID in the
/// group, then deletes the entry as the option says.
pub(super) fn xackdel(ctx: &mut Ctx<'_>) -> CmdResult {
    let (key, name) = (ctx.arg(1), ctx.arg(2));
    let (db, now) = (ctx.db(), ctx.now_ms);
    // Redis looks the key up for reading (a miss is a `keymiss` event).
    let has_group = read_stream(ctx.ks, db, key, now)?.map(|s| s.groups.contains_key(name));
    let options = parse_delete_args(ctx, 3)?;
    if has_group != Some(true) {
        options.reply_all_missing(ctx);
        return Ok(());
    }
    let ids = options.ids(ctx.args)?;
    write_stream(ctx, key)?;
    let stream = stream_at(ctx.ks, db, key, now);
    ctx.out.array(ids.len());
    let (mut acked, mut deleted) = (0, 0);
    for id in ids {
        let group = stream.groups.get_mut(name).expect("checked above");
        if !group.ack(id) {
            ctx.out.integer(-1);
            continue;
        }
        acked += 1;
        let floor = stream.read_floor();
        let code = match stream.delete_with_refs(id, options.refs, floor) {
            Deletion::Referenced => 2,
            Deletion::Deleted => {
                deleted += 1;
                1
            }
            // Acknowledged, and no entry left to delete: Redis counts it as done.
            Deletion::Missing => 1,
        };
        ctx.out.integer(code);
    }
    // Redis counts the acknowledgements as the changes, not the deletions.
    ctx.ks.dirty += acked;
    finish_deletion(ctx, key, deleted);
    Ok(())
}

/// After XDELEX or XACKDEL: `xdel` and WATCH's signal if entries went, as in Redis; a command
/// that only acknowledged (or did nothing) leaves watchers alone.
fn finish_deletion(ctx: &mut Ctx<'_>, key: &[u8], deleted: u64) {
    if deleted > 0 {
        ctx.notify(STREAM, "xdel", key);
    } else {
        let db = ctx.db();
        ctx.ks.unnote_write(db, key);
    }
}
