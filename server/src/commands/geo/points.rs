//! The commands on positions one member at a time: GEOADD (ZADD with each position's score),
//! GEODIST, GEOHASH and GEOPOS.

use bytes::Bytes;
use embedis_datatypes::zset::{AddFlags, AddOutcome, ZSetValue};

use crate::base::config::event_class::ZSET;
use crate::base::cstr::word_is;
use crate::base::error::{CmdResult, Error};
use crate::base::value::Value;
use crate::kernel::ctx::Ctx;

use super::hash::{
    align52, decode_score, distance, encode, format_distance, Range, LAT_RANGE, LONG_RANGE,
    STEP_MAX,
};
use super::{long_lat, unit, write_coordinate};
use crate::commands::zsets::{limits, read_zset};

// ---------------------------------------------------------------------------------------------
// Commands
// ---------------------------------------------------------------------------------------------

/// GEOADD key [NX|XX] [CH] lon lat member …: ZADD with each position's score.
pub(super) fn geoadd(ctx: &mut Ctx<'_>) -> CmdResult {
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
        } else {
            break;
        }
        at += 1;
    }
    if !(ctx.argc() - at).is_multiple_of(3) || (flags.xx && flags.nx) {
        return Err(Error::Syntax);
    }
    let mut scored: Vec<(f64, usize)> = Vec::with_capacity((ctx.argc() - at) / 3);
    for i in (at..ctx.argc()).step_by(3) {
        let (longitude, latitude) = long_lat(&ctx.args[i..i + 2])?;
        let cell = encode(LONG_RANGE, LAT_RANGE, longitude, latitude, STEP_MAX)
            .expect("checked against the limits");
        scored.push((align52(cell) as f64, i + 2));
    }
    // ZADD without pairs is a syntax error, as GEOADD with only options is.
    if scored.is_empty() {
        return Err(Error::Syntax);
    }
    let limits = limits(ctx);
    let (db, now, key) = (ctx.db(), ctx.now_ms, ctx.arg(1));
    let args: &[Bytes] = ctx.args;
    let mut created = None;
    let set = match ctx.ks.write(db, key, now) {
        Some(Value::ZSet(z)) => z,
        Some(_) => return Err(Error::WrongType),
        None if flags.xx => {
            ctx.out.integer(0);
            return Ok(());
        }
        None => created.insert(ZSetValue::new()),
    };
    let (mut added, mut updated) = (0u64, 0u64);
    for &(score, member_at) in &scored {
        match set.add(&args[member_at], score, flags, &limits) {
            AddOutcome::Added(_) => added += 1,
            AddOutcome::Updated(_) => updated += 1,
            _ => {}
        }
    }
    if let Some(set) = created {
        ctx.ks.add(db, key, Value::ZSet(set), None, now);
        ctx.ks.dirty += (added + updated).saturating_sub(1);
    } else {
        ctx.ks.dirty += added + updated;
    }
    // Propagated as the ZADD it is to Redis: `zadd key [options] score member …`.
    ctx.propagate_as(|| {
        let mut v = Vec::with_capacity(at + 2 * scored.len());
        v.push(Bytes::from_static(b"zadd"));
        v.extend(args[1..at].iter().cloned());
        for &(score, member_at) in &scored {
            v.push(crate::model::write_stream::integer_arg(score as i64));
            v.push(args[member_at].clone());
        }
        v
    });
    // GEOADD is ZADD to Redis: a new key's event before the reply, `zadd` after it.
    ctx.publish_events();
    ctx.out
        .integer(if ch { added + updated } else { added } as i64);
    if added + updated > 0 {
        ctx.notify(ZSET, "zadd", key);
    }
    Ok(())
}

pub(super) fn geodist(ctx: &mut Ctx<'_>) -> CmdResult {
    let to_meter = match ctx.argc() {
        5 => unit(ctx.arg(4))?,
        n if n > 5 => return Err(Error::Syntax),
        _ => 1.0,
    };
    let args = ctx.args;
    let Some(set) = read_zset(ctx, &args[1])? else {
        ctx.out.null();
        return Ok(());
    };
    let points = (
        set.score(&args[2]).and_then(decode_score),
        set.score(&args[3]).and_then(decode_score),
    );
    match points {
        (Some((lon1, lat1)), Some((lon2, lat2))) => {
            let d = distance(lon1, lat1, lon2, lat2) / to_meter;
            ctx.out.bulk(format_distance(d).as_bytes());
        }
        _ => ctx.out.null(),
    }
    Ok(())
}

/// GEOHASH: the standard geohash (latitude range ±90) of each member's position, 11 characters
/// of which the last is always `0` (52 bits make ten and a half).
pub(super) fn geohash(ctx: &mut Ctx<'_>) -> CmdResult {
    const ALPHABET: &[u8; 32] = b"0123456789bcdefghjkmnpqrstuvwxyz";
    let args = ctx.args;
    let scores: Vec<Option<f64>> = match read_zset(ctx, &args[1])? {
        None => vec![None; args.len() - 2],
        Some(set) => args[2..].iter().map(|m| set.score(m)).collect(),
    };
    ctx.out.array(scores.len());
    for score in scores {
        let standard = score.and_then(decode_score).and_then(|(lon, lat)| {
            encode(
                Range {
                    min: -180.0,
                    max: 180.0,
                },
                Range {
                    min: -90.0,
                    max: 90.0,
                },
                lon,
                lat,
                26,
            )
        });
        match standard {
            None => ctx.out.null(),
            Some(cell) => {
                let mut text = [b'0'; 11];
                for (i, c) in text.iter_mut().take(10).enumerate() {
                    let idx = (cell.bits >> (52 - (i + 1) * 5)) & 0x1f;
                    *c = ALPHABET[idx as usize];
                }
                ctx.out.bulk(&text);
            }
        }
    }
    Ok(())
}

pub(super) fn geopos(ctx: &mut Ctx<'_>) -> CmdResult {
    let args = ctx.args;
    let points: Vec<Option<(f64, f64)>> = match read_zset(ctx, &args[1])? {
        None => vec![None; args.len() - 2],
        Some(set) => args[2..]
            .iter()
            .map(|m| set.score(m).and_then(decode_score))
            .collect(),
    };
    ctx.out.array(points.len());
    for point in points {
        match point {
            None => ctx.out.null_array(),
            Some((lon, lat)) => {
                ctx.out.array(2);
                write_coordinate(ctx, lon);
                write_coordinate(ctx, lat);
            }
        }
    }
    Ok(())
}
