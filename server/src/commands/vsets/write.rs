//! VADD, VREM and VSETATTR: the commands that change a vector set, with Redis 8.2's order of
//! checks (vector, element, options, then the key) and its replication (only a change, as
//! sent).

use embedis_datatypes::vset::hnsw::{MAX_M, MIN_M};
use embedis_datatypes::vset::{Quant, VectorSet, DEFAULT_BUILD_EF, DEFAULT_M};
use embedis_protocol::number::parse_i64;

use super::{dim_mismatch, parse_vector, projected, set_mut, wrong_arity, INVALID_VECTOR};
use crate::base::error::{CmdResult, Error};
use crate::base::formats::vset_rdb::{new_seed, next_uid};
use crate::base::value::Value;
use crate::kernel::ctx::Ctx;

/// VADD's options after the element.
struct AddOptions {
    ef: usize,
    m: u32,
    quant: Quant,
    attributes: Option<Vec<u8>>,
}

fn add_options(ctx: &Ctx<'_>, from: usize) -> CmdResult<AddOptions> {
    let mut o = AddOptions {
        ef: DEFAULT_BUILD_EF,
        m: DEFAULT_M,
        quant: Quant::Q8,
        attributes: None,
    };
    let mut j = from;
    while j < ctx.argc() {
        let has_value = j + 1 < ctx.argc();
        if ctx.arg_is(j, "cas") {
            // CAS collects neighbours in a thread in Redis; here every insertion is immediate,
            // which is what Redis does for a new key, in MULTI, scripts and replicas.
        } else if ctx.arg_is(j, "ef") && has_value {
            let ef = parse_i64(ctx.arg(j + 1)).filter(|&e| (1..=1_000_000).contains(&e));
            o.ef = ef.ok_or(Error::msg("ERR invalid EF"))? as usize;
            j += 1;
        } else if ctx.arg_is(j, "m") && has_value {
            let m =
                parse_i64(ctx.arg(j + 1)).filter(|&m| (MIN_M as i64..=MAX_M as i64).contains(&m));
            o.m = m.ok_or(Error::msg("ERR invalid M"))? as u32;
            j += 1;
        } else if ctx.arg_is(j, "setattr") && has_value {
            o.attributes = Some(ctx.arg(j + 1).to_vec());
            j += 1;
        } else if ctx.arg_is(j, "noquant") {
            o.quant = Quant::F32;
        } else if ctx.arg_is(j, "bin") {
            o.quant = Quant::Bin;
        } else if ctx.arg_is(j, "q8") {
            o.quant = Quant::Q8;
        } else {
            return Err(Error::msg("ERR invalid option after element"));
        }
        j += 1;
    }
    Ok(o)
}

/// VADD key [REDUCE dim] FP32 blob|VALUES n v… element [CAS] [NOQUANT|BIN|Q8] [EF n]
/// [SETATTR json] [M n]
pub fn vadd(ctx: &mut Ctx<'_>) -> CmdResult {
    if ctx.argc() < 5 {
        return Err(wrong_arity(ctx));
    }
    let parsed = parse_vector(ctx.args, 2, true).ok_or(INVALID_VECTOR)?;
    if ctx.argc() - 2 - parsed.used < 1 {
        return Err(wrong_arity(ctx));
    }
    let element_at = 2 + parsed.used;
    let o = add_options(ctx, element_at + 1)?;
    let (key, element) = (ctx.arg(1), ctx.arg(element_at));
    let (dim, reduce) = (parsed.vector.len(), parsed.reduce);
    let Some(set) = set_mut(ctx, key, true)? else {
        let mut set = VectorSet::new(
            if reduce > 0 { reduce } else { dim },
            o.quant,
            o.m,
            (reduce > 0).then_some(dim),
            next_uid(),
            new_seed(),
        );
        let vector = set.project(parsed.vector);
        set.add(element, vector, o.attributes.as_deref(), o.ef);
        let (db, now) = (ctx.db(), ctx.now_ms);
        ctx.ks
            .add(db, key, Value::VectorSet(Box::new(set)), None, now);
        ctx.out.boolean(true);
        return Ok(());
    };
    if set.quant() != o.quant {
        return Err(Error::msg(
            "ERR asked quantization mismatch with existing vector set",
        ));
    }
    if set.m() != o.m {
        return Err(Error::msg(
            "ERR asked M value mismatch with existing vector set",
        ));
    }
    let projecting = set.projection_input() > 0;
    if (!projecting && set.dim() != dim) || (projecting && set.dim() != reduce) {
        return Err(dim_mismatch(dim, set.dim()));
    }
    if reduce > 0 && !projecting {
        return Err(Error::msg(
            "ERR cannot add projection to existing set without projection",
        ));
    }
    let vector = if projecting {
        projected(set, parsed.vector)?
    } else {
        parsed.vector
    };
    let added = set.add(element, vector, o.attributes.as_deref(), o.ef);
    if added {
        ctx.ks.dirty += 1;
    }
    ctx.out.boolean(added);
    Ok(())
}

/// VREM key element
pub fn vrem(ctx: &mut Ctx<'_>) -> CmdResult {
    if ctx.argc() != 3 {
        return Err(wrong_arity(ctx));
    }
    let (key, element) = (ctx.arg(1), ctx.arg(2));
    let Some(set) = set_mut(ctx, key, true)? else {
        ctx.out.boolean(false);
        return Ok(());
    };
    if !set.remove(element) {
        ctx.out.boolean(false);
        return Ok(());
    }
    let emptied = set.is_empty();
    ctx.ks.dirty += 1;
    if emptied {
        // Redis's module API deletes the key without a keyspace event.
        let (db, now) = (ctx.db(), ctx.now_ms);
        ctx.ks.delete(db, key, now);
    }
    ctx.out.boolean(true);
    Ok(())
}

/// VSETATTR key element json ("" removes the attributes)
pub fn vsetattr(ctx: &mut Ctx<'_>) -> CmdResult {
    if ctx.argc() != 4 {
        return Err(wrong_arity(ctx));
    }
    let (key, element, json) = (ctx.arg(1), ctx.arg(2), ctx.arg(3));
    let done = match set_mut(ctx, key, true)? {
        Some(set) => set.set_attributes(element, json),
        None => false,
    };
    if done {
        ctx.ks.dirty += 1;
    }
    ctx.out.boolean(done);
    Ok(())
}
