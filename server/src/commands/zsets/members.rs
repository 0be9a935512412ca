//! The commands on members one at a time: ZADD and ZINCRBY (every score parsed before the key is
//! looked at), ZREM, the lookups (ZSCORE, ZMSCORE, ZCARD, ZCOUNT, ZLEXCOUNT, ZRANK, ZREVRANK),
//! ZRANDMEMBER and ZSCAN.

use bytes::Bytes;
use embedis_datatypes::glob;
use embedis_datatypes::zset::{AddFlags, AddOutcome, ZSetValue};
use embedis_protocol::number::parse_i64;
use embedis_protocol::Writer;
use rand::Rng;

use crate::base::config::event_class::ZSET;
use crate::base::cstr::word_is;
use crate::base::error::{CmdResult, Error};
use crate::base::value::Value;
use crate::kernel::ctx::Ctx;

use super::{
    delete_if_empty, lex_range, limits, read_zset, score_arg, score_range, zset_of, ScoreWriter,
};

// ---------------------------------------------------------------------------------------------
// ZADD, ZINCRBY, ZREM, lookups
// ---------------------------------------------------------------------------------------------

pub(super) fn zadd(ctx: &mut Ctx<'_>) -> CmdResult {
    let mut flags = AddFlags::default();
    let mut ch = false;
    let mut at = 2;
    while at < ctx.argc() {
        let word = ctx.arg(at);
        if word_is(word, "nx") {
            flags.nx = true;
        } else if word_is(word, "xx") {
            flags.xx = true;
        } else if word_is(word, "ch") {
            ch = true;
        } else if word_is(word, "incr") {
            flags.incr = true;
        } else if word_is(word, "gt") {
            flags.gt = true;
        } else if word_is(word, "lt") {
            flags.lt = true;
        } else {
            break;
        }
        at += 1;
    }
    zadd_generic(ctx, at, flags, ch)
}

pub(super) fn zincrby(ctx: &mut Ctx<'_>) -> CmdResult {
    let flags = AddFlags {
        incr: true,
        ..AddFlags::default()
    };
    zadd_generic(ctx, 2, flags, false)
}

/// ZADD from the first score at `at`, with its options parsed.
fn zadd_generic(ctx: &mut Ctx<'_>, at: usize, flags: AddFlags, ch: bool) -> CmdResult {
    let pairs = ctx.argc() - at;
    if pairs & 1 != 0 || pairs == 0 {
        return Err(Error::Syntax);
    }
    let pairs = pairs / 2;
    if flags.nx && flags.xx {
        return Err(Error::msg(
            "ERR XX and NX options at the same time are not compatible",
        ));
    }
    if (flags.nx && (flags.gt || flags.lt)) || (flags.gt && flags.lt) {
        return Err(Error::msg(
            "ERR GT, LT, and/or NX options at the same time are not compatible",
        ));
    }
    if flags.incr && pairs > 1 {
        return Err(Error::msg(
            "ERR INCR option supports a single increment-element pair",
        ));
    }
    // Every score is checked before the key is looked at.
    let mut single = [0.0f64; 1];
    let mut many = Vec::new();
    let scores: &mut [f64] = if pairs == 1 {
        &mut single
    } else {
        many.resize(pairs, 0.0);
        &mut many
    };
    for (i, score) in scores.iter_mut().enumerate() {
        *score = score_arg(ctx.arg(at + 2 * i))?;
    }
    let limits = limits(ctx);
    let (db, now, key) = (ctx.db(), ctx.now_ms, ctx.arg(1));
    let args: &[Bytes] = ctx.args;
    let mut created = None;
    let set = match ctx.ks.write(db, key, now) {
        Some(value) => zset_of(value)?,
        None => {
            if flags.xx {
                // Nothing to update and nothing may be added.
                return reply_zadd(ctx, flags, 0, None);
            }
            created.insert(ZSetValue::new())
        }
    };
    let (mut added, mut updated) = (0i64, 0i64);
    let mut last = None;
    for (i, &score) in scores.iter().enumerate() {
        let member: &[u8] = &args[at + 2 * i + 1];
        match set.add(member, score, flags, &limits) {
            AddOutcome::Added(s) => {
                added += 1;
                last = Some(s);
            }
            AddOutcome::Updated(s) => {
                updated += 1;
                last = Some(s);
            }
            AddOutcome::Unchanged(s) => last = Some(s),
            AddOutcome::Skipped => {}
            AddOutcome::NotANumber => {
                // Only INCR gets here, with one pair: nothing was changed.
                return Err(Error::msg("ERR resulting score is not a number (NaN)"));
            }
        }
    }
    if let Some(set) = created {
        ctx.ks.add(db, key, Value::ZSet(set), None, now);
        ctx.ks.dirty += ((added + updated) as u64).saturating_sub(1);
    } else {
        ctx.ks.dirty += (added + updated) as u64;
    }
    // A new key's event before the reply, `zadd` after it, as in Redis.
    ctx.publish_events();
    reply_zadd(ctx, flags, if ch { added + updated } else { added }, last)?;
    if added + updated > 0 {
        ctx.notify(ZSET, if flags.incr { "zincr" } else { "zadd" }, key);
    }
    Ok(())
}

fn reply_zadd(ctx: &mut Ctx<'_>, flags: AddFlags, count: i64, score: Option<f64>) -> CmdResult {
    if flags.incr {
        match score {
            Some(s) => ScoreWriter::new().write(&mut ctx.out, s),
            None => ctx.out.null(),
        }
    } else {
        ctx.out.integer(count);
    }
    Ok(())
}

pub(super) fn zrem(ctx: &mut Ctx<'_>) -> CmdResult {
    let (db, now, key) = (ctx.db(), ctx.now_ms, ctx.arg(1));
    let args: &[Bytes] = ctx.args;
    let Some(value) = ctx.ks.write(db, key, now) else {
        ctx.out.integer(0);
        return Ok(());
    };
    let set = zset_of(value)?;
    let mut removed = 0;
    for member in &args[2..] {
        if set.remove(member) {
            removed += 1;
            if set.is_empty() {
                break;
            }
        }
    }
    let empty = set.is_empty();
    ctx.ks.dirty += removed as u64;
    if removed > 0 {
        ctx.notify(ZSET, "zrem", key);
    }
    delete_if_empty(ctx, key, empty);
    ctx.out.integer(removed);
    Ok(())
}

pub(super) fn zscore(ctx: &mut Ctx<'_>) -> CmdResult {
    let member = ctx.arg(2);
    let score = read_zset(ctx, ctx.arg(1))?.and_then(|z| z.score(member));
    match score {
        Some(s) => ScoreWriter::new().write(&mut ctx.out, s),
        None => ctx.out.null(),
    }
    Ok(())
}

pub(super) fn zmscore(ctx: &mut Ctx<'_>) -> CmdResult {
    let args: &[Bytes] = ctx.args;
    let (db, now) = (ctx.db(), ctx.now_ms);
    let set = match ctx.ks.read(db, &args[1], now) {
        None => None,
        Some(value) => Some(&*zset_of(value)?),
    };
    ctx.out.array(args.len() - 2);
    let mut scores = ScoreWriter::new();
    for member in &args[2..] {
        match set.and_then(|z| z.score(member)) {
            Some(s) => scores.write(&mut ctx.out, s),
            None => ctx.out.null(),
        }
    }
    Ok(())
}

pub(super) fn zcard(ctx: &mut Ctx<'_>) -> CmdResult {
    let len = read_zset(ctx, ctx.arg(1))?.map_or(0, |z| z.len());
    ctx.out.integer(len as i64);
    Ok(())
}

pub(super) fn zcount(ctx: &mut Ctx<'_>) -> CmdResult {
    let range = score_range(ctx.arg(2), ctx.arg(3))?;
    let count = read_zset(ctx, ctx.arg(1))?.map_or(0, |z| z.count_in_scores(&range));
    ctx.out.integer(count as i64);
    Ok(())
}

pub(super) fn zlexcount(ctx: &mut Ctx<'_>) -> CmdResult {
    let range = lex_range(ctx.arg(2), ctx.arg(3))?;
    let count = read_zset(ctx, ctx.arg(1))?.map_or(0, |z| z.count_in_lex(&range));
    ctx.out.integer(count as i64);
    Ok(())
}

pub(super) fn zrank(ctx: &mut Ctx<'_>) -> CmdResult {
    rank_generic(ctx, false)
}

pub(super) fn zrevrank(ctx: &mut Ctx<'_>) -> CmdResult {
    rank_generic(ctx, true)
}

/// ZRANK / ZREVRANK key member [WITHSCORE]: WITHSCORE (Redis 7.2; the 7.0 spec's arity refuses
/// it) answers `[rank, score]`, or a null array for a missing member.
fn rank_generic(ctx: &mut Ctx<'_>, reverse: bool) -> CmdResult {
    let with_score = match ctx.argc() {
        3 => false,
        4 if ctx.arg_is(3, "withscore") => true,
        4 => return Err(Error::Syntax),
        _ => {
            let name = if reverse { "zrevrank" } else { "zrank" };
            return Err(Error::WrongArity(name.into()));
        }
    };
    let member = ctx.arg(2);
    let found = read_zset(ctx, ctx.arg(1))?
        .and_then(|z| Some((z.rank(member, reverse)?, z.score(member)?)));
    match (found, with_score) {
        (Some((rank, _)), false) => ctx.out.integer(rank as i64),
        (Some((rank, score)), true) => {
            ctx.out.array(2);
            ctx.out.integer(rank as i64);
            ScoreWriter::new().write(&mut ctx.out, score);
        }
        (None, false) => ctx.out.null(),
        (None, true) => ctx.out.null_array(),
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// ZRANDMEMBER, ZSCAN
// ---------------------------------------------------------------------------------------------

pub(super) fn zrandmember(ctx: &mut Ctx<'_>) -> CmdResult {
    if ctx.argc() < 3 {
        let (db, now, key) = (ctx.db(), ctx.now_ms, ctx.arg(1));
        let Some(value) = ctx.ks.read(db, key, now) else {
            ctx.out.null();
            return Ok(());
        };
        let set: &ZSetValue = zset_of(value)?;
        match set.random_element(&mut ctx.server.rng) {
            Some((m, _)) => ctx.out.bulk(m),
            None => ctx.out.null(),
        }
        return Ok(());
    }
    let count = match parse_i64(ctx.arg(2)) {
        None => return Err(Error::NotInteger),
        Some(i64::MIN) => {
            return Err(Error::msg(
                "ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807",
            ))
        }
        Some(n) => n,
    };
    let mut withscores = false;
    if ctx.argc() > 4 || (ctx.argc() == 4 && !word_is(ctx.arg(3), "withscores")) {
        return Err(Error::Syntax);
    } else if ctx.argc() == 4 {
        withscores = true;
        if !(-(i64::MAX / 2)..=i64::MAX / 2).contains(&count) {
            return Err(Error::msg("ERR value is out of range"));
        }
    }
    let (db, now, key) = (ctx.db(), ctx.now_ms, ctx.arg(1));
    let Some(value) = ctx.ks.read(db, key, now) else {
        ctx.out.array(0);
        return Ok(());
    };
    let set: &ZSetValue = zset_of(value)?;
    let rng = &mut ctx.server.rng;
    let out = &mut ctx.out;
    if count == 0 {
        out.array(0);
        return Ok(());
    }
    let size = set.len();
    let mut scores = ScoreWriter::new();
    let mut emit = |out: &mut Writer<'_>, m: &[u8], s: f64| {
        if withscores && out.is_resp3() {
            out.array(2);
        }
        out.bulk(m);
        if withscores {
            scores.write(out, s);
        }
    };
    let flat = |n: usize, out: &Writer<'_>| {
        if withscores && !out.is_resp3() {
            2 * n
        } else {
            n
        }
    };
    if count < 0 || count == 1 {
        // With repetition (or a single pick).
        let n = count.unsigned_abs() as usize;
        out.array(flat(n, out));
        for _ in 0..n {
            let (m, s) = set.random_element(rng).expect("not empty");
            emit(out, m, s);
        }
        return Ok(());
    }
    let n = count as usize;
    if n >= size {
        // The whole set, highest first (as Redis 7.0 answers).
        out.array(flat(size, out));
        set.for_each_in_ranks(0, size - 1, true, |m, s| emit(out, m, s));
        return Ok(());
    }
    // Distinct picks: a partial shuffle of the ranks when the sample is a large share of the
    // set, rejection of repeats otherwise.
    let ranks: Vec<usize> = if n * 3 > size {
        let mut all: Vec<usize> = (0..size).collect();
        for i in 0..n {
            let j = rng.gen_range(i..size);
            all.swap(i, j);
        }
        all.truncate(n);
        all
    } else {
        let mut seen = std::collections::HashSet::with_capacity(n);
        let mut picked = Vec::with_capacity(n);
        while picked.len() < n {
            let r = rng.gen_range(0..size);
            if seen.insert(r) {
                picked.push(r);
            }
        }
        picked
    };
    out.array(flat(n, out));
    for r in ranks {
        let (m, s) = set.by_rank(r).expect("in range");
        emit(out, m, s);
    }
    Ok(())
}

pub(super) fn zscan(ctx: &mut Ctx<'_>) -> CmdResult {
    let cursor = crate::commands::common::parse_cursor(ctx.arg(2))?;
    let (db, now, key) = (ctx.db(), ctx.now_ms, ctx.arg(1));
    let args: &[Bytes] = ctx.args;
    // Redis 7.4 names HSCAN in its refusal of NOVALUES.
    let novalues = crate::commands::common::novalues_word(ctx, false);
    let Some(value) = ctx.ks.read(db, key, now) else {
        ctx.out.array(2);
        ctx.out.bulk(b"0");
        ctx.out.array(0);
        return Ok(());
    };
    let set = zset_of(value)?;
    let crate::commands::common::ScanOptions { count, pattern, .. } =
        crate::commands::common::parse_scan_options_with(args, 3, false, novalues)?;
    let count = count as u64;
    let mut found: Vec<(&[u8], f64)> = Vec::new();
    let set: &ZSetValue = set;
    // A listpack holds each score as the text Redis wrote it (d2string: the reply's form); a
    // skiplist's scores are printed by ZSCAN itself as `%.17Lg`, in every version.
    let listpack = set.encoding_name() == "listpack";
    let next = set.scan(cursor, count.min(usize::MAX as u64) as usize, |m, s| {
        found.push((m, s))
    });
    found.retain(|(m, _)| pattern.is_none_or(|p| glob::matches(p, m, false)));
    let out = &mut ctx.out;
    out.array(2);
    out.bulk(itoa::Buffer::new().format(next).as_bytes());
    out.array(found.len() * 2);
    let mut text = Vec::with_capacity(32);
    for (m, s) in found {
        out.bulk(m);
        text.clear();
        if listpack {
            out.push_double_text(&mut text, s);
        } else {
            embedis_protocol::float::push_g17(&mut text, s);
        }
        out.bulk(&text);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::io::test_harness::Harness;

    #[test]
    fn zscan_of_a_skiplist_covers_the_set() {
        let mut h = Harness::new();
        for i in 0..300 {
            h.run_text(&format!("ZADD big {i} m{i}"));
        }
        assert_eq!(h.encoding("big"), "skiplist");
        let mut seen = std::collections::HashSet::new();
        let mut cursor = "0".to_string();
        let mut calls = 0;
        loop {
            let reply = h.run(&format!("ZSCAN big {cursor} COUNT 20"));
            let embedis_protocol::Value::Array(parts) = reply else {
                panic!()
            };
            cursor = String::from_utf8(crate::io::test_harness::bulk(&parts[0]).unwrap()).unwrap();
            let items = crate::io::test_harness::strings(&parts[1]);
            for pair in items.chunks(2) {
                let m = String::from_utf8(pair[0].clone()).unwrap();
                assert_eq!(format!("m{}", String::from_utf8_lossy(&pair[1])), m);
                seen.insert(m);
            }
            calls += 1;
            if cursor == "0" {
                break;
            }
        }
        assert_eq!(seen.len(), 300);
        assert!(calls >= 15, "COUNT bounds each call");
    }
}
