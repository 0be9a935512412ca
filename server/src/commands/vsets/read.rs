//! The vector set readers: VEMB, VCARD, VDIM, VINFO, VLINKS, VRANDMEMBER, VGETATTR and
//! VISMEMBER, each with Redis 8.2's answer for a missing key (0, null, an empty array or an
//! error, depending on the command).

use embedis_datatypes::vset::Quant;
use embedis_protocol::number::parse_i64;

use super::{set_in, set_mut, wrong_arity};
use crate::base::error::{CmdResult, Error};
use crate::kernel::ctx::Ctx;

/// VCARD key
pub fn vcard(ctx: &mut Ctx<'_>) -> CmdResult {
    if ctx.argc() != 2 {
        return Err(wrong_arity(ctx));
    }
    let n = set_mut(ctx, ctx.arg(1), false)?.map_or(0, |s| s.len());
    ctx.out.integer(n as i64);
    Ok(())
}

/// VDIM key
pub fn vdim(ctx: &mut Ctx<'_>) -> CmdResult {
    if ctx.argc() != 2 {
        return Err(wrong_arity(ctx));
    }
    let dim = set_mut(ctx, ctx.arg(1), false)?
        .map(|s| s.dim())
        .ok_or(Error::msg("ERR key does not exist"))?;
    ctx.out.integer(dim as i64);
    Ok(())
}

/// VEMB key element [RAW]
pub fn vemb(ctx: &mut Ctx<'_>) -> CmdResult {
    if ctx.argc() < 3 {
        return Err(wrong_arity(ctx));
    }
    let mut raw = false;
    for j in 3..ctx.argc() {
        if !ctx.arg_is(j, "raw") {
            return Err(Error::msg("ERR invalid option"));
        }
        raw = true;
    }
    let (key, element) = (ctx.arg(1), ctx.arg(2));
    let (db, now) = (ctx.db(), ctx.now_ms);
    let out = &mut ctx.out;
    let Some(set) = set_in(ctx.ks, db, now, key, false)? else {
        out.null();
        return Ok(());
    };
    if raw {
        let Some(stored) = set.stored(element) else {
            out.null();
            return Ok(());
        };
        let q8 = set.quant() == Quant::Q8;
        out.array(3 + q8 as usize);
        out.simple(set.quant().name().as_bytes());
        out.bulk(&stored.raw_bytes());
        out.double_shortest(stored.l2 as f64);
        if q8 {
            out.double_shortest(stored.range as f64);
        }
        return Ok(());
    }
    match set.vector(element) {
        None => out.null(),
        Some(v) => {
            out.array(v.len());
            for c in v {
                out.double_shortest(c as f64);
            }
        }
    }
    Ok(())
}

/// VLINKS key element [WITHSCORES]
pub fn vlinks(ctx: &mut Ctx<'_>) -> CmdResult {
    if !(3..=4).contains(&ctx.argc()) || (ctx.argc() == 4 && !ctx.arg_is(3, "withscores")) {
        return Err(wrong_arity(ctx));
    }
    let withscores = ctx.argc() == 4;
    let (key, element) = (ctx.arg(1), ctx.arg(2));
    let levels = match set_mut(ctx, key, false)? {
        Some(set) => set.links(element).map(|levels| {
            levels
                .into_iter()
                .map(|l| l.into_iter().map(|(n, d)| (n.to_vec(), d)).collect())
                .collect::<Vec<Vec<(Vec<u8>, f32)>>>()
        }),
        None => None,
    };
    let out = &mut ctx.out;
    let Some(levels) = levels else {
        out.null();
        return Ok(());
    };
    out.array(levels.len());
    for level in levels {
        if withscores {
            out.map(level.len());
        } else {
            out.array(level.len());
        }
        for (name, distance) in level {
            out.bulk(&name);
            if withscores {
                // Redis stores the similarity in a float before replying.
                let similarity = (1.0 - distance as f64 / 2.0) as f32;
                out.double_shortest(similarity as f64);
            }
        }
    }
    Ok(())
}

/// VINFO key
pub fn vinfo(ctx: &mut Ctx<'_>) -> CmdResult {
    if ctx.argc() != 2 {
        return Err(wrong_arity(ctx));
    }
    let Some(set) = set_mut(ctx, ctx.arg(1), false)? else {
        ctx.out.null_array();
        return Ok(());
    };
    let fields: [(&str, i64); 8] = [
        ("hnsw-m", set.m() as i64),
        ("vector-dim", set.dim() as i64),
        ("projection-input-dim", set.projection_input() as i64),
        ("size", set.len() as i64),
        ("max-level", set.max_level() as i64),
        ("attributes-count", set.attributes_count() as i64),
        ("vset-uid", set.uid as i64),
        ("hnsw-max-node-uid", set.last_node_id() as i64),
    ];
    let quant = set.quant().name();
    let out = &mut ctx.out;
    out.map(9);
    out.simple(b"quant-type");
    out.simple(quant.as_bytes());
    for (name, value) in fields {
        out.simple(name.as_bytes());
        out.integer(value);
    }
    Ok(())
}

/// VGETATTR key element
pub fn vgetattr(ctx: &mut Ctx<'_>) -> CmdResult {
    if ctx.argc() != 3 {
        return Err(wrong_arity(ctx));
    }
    let (key, element) = (ctx.arg(1), ctx.arg(2));
    let attributes =
        set_mut(ctx, key, false)?.and_then(|s| s.attributes(element).flatten().map(<[u8]>::to_vec));
    match attributes {
        Some(a) => ctx.out.bulk(&a),
        None => ctx.out.null(),
    }
    Ok(())
}

/// VISMEMBER key element
pub fn vismember(ctx: &mut Ctx<'_>) -> CmdResult {
    if ctx.argc() != 3 {
        return Err(wrong_arity(ctx));
    }
    let (key, element) = (ctx.arg(1), ctx.arg(2));
    let found = set_mut(ctx, key, false)?.is_some_and(|s| s.contains(element));
    ctx.out.boolean(found);
    Ok(())
}

/// VRANDMEMBER key [count]: one element; `count` distinct ones (a random walk and, beyond a
/// fifth of the set, consecutive elements from a random start); `-count` with repetitions.
pub fn vrandmember(ctx: &mut Ctx<'_>) -> CmdResult {
    if !(2..=3).contains(&ctx.argc()) {
        return Err(wrong_arity(ctx));
    }
    let with_count = ctx.argc() == 3;
    let count = if with_count {
        parse_i64(ctx.arg(2)).ok_or(Error::msg("ERR COUNT value is not an integer"))?
    } else {
        1
    };
    if with_count && count == 0 {
        ctx.out.array(0);
        return Ok(());
    }
    let (db, now, key) = (ctx.db(), ctx.now_ms, ctx.arg(1));
    let Some(set) = set_in(ctx.ks, db, now, key, false)? else {
        if with_count {
            ctx.out.array(0);
        } else {
            ctx.out.null();
        }
        return Ok(());
    };
    if !with_count {
        let name = set.random().map(<[u8]>::to_vec);
        match name {
            Some(n) => ctx.out.bulk(&n),
            None => ctx.out.null(),
        }
        return Ok(());
    }
    if count < 0 {
        // With repetitions: each pick is a random walk, written as it is made.
        let n = count.unsigned_abs() as usize;
        ctx.out.array(n);
        for _ in 0..n {
            let name = set.random().expect("a non-empty set").to_vec();
            ctx.out.bulk(&name);
        }
        return Ok(());
    }
    let picked = pick(set, count as usize);
    ctx.out.array(picked.len());
    for name in picked {
        ctx.out.bulk(&name);
    }
    Ok(())
}

/// `count` distinct elements (at most the whole set).
fn pick(set: &mut embedis_datatypes::vset::VectorSet, count: usize) -> Vec<Vec<u8>> {
    let size = set.len();
    let n = count.min(size);
    if n as f64 <= size as f64 * 0.2 {
        let mut seen = std::collections::HashSet::new();
        let mut out = Vec::with_capacity(n);
        while out.len() < n {
            let Some(name) = set.random().map(<[u8]>::to_vec) else {
                break;
            };
            if seen.insert(name.clone()) {
                out.push(name);
            }
        }
        return out;
    }
    set.walk_from_random(n)
        .into_iter()
        .map(<[u8]>::to_vec)
        .collect()
}
