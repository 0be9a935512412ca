//! VSIM: the elements most similar to a vector or to an element, as Redis 8.2 answers.
//!
//! Arguments are read in Redis's order: a missing key answers an empty array before anything
//! else is checked; then the vector (ELE, FP32 or VALUES, projected when the set was made
//! with REDUCE and the input has the projection's dimension), its dimension, and the options.
//! The search explores max(EF or 100, COUNT) candidates (at most the set's size: a small set
//! is searched exhaustively, so its answer is exact), keeps those within EPSILON (a distance
//! of 2·EPSILON), and replies with similarity 1 − distance/2. Redis runs the search in a
//! thread unless NOTHREAD (or MULTI, a script) says otherwise; the answer is the same, so here
//! it always runs at once.

use embedis_datatypes::vset::expr::Program;
use embedis_protocol::number::parse_i64;

use super::{dim_mismatch, parse_vector, projected, set_mut, wrong_arity, INVALID_VECTOR};
use crate::base::error::{CmdResult, Error};
use crate::commands::zsets::parse_double;
use crate::kernel::ctx::Ctx;

const DEFAULT_EF: usize = 100;
const DEFAULT_COUNT: usize = 10;

struct Options {
    withscores: bool,
    withattribs: bool,
    count: usize,
    epsilon: f32,
    ef: usize,
    filter: Option<Program>,
    filter_ef: usize,
    exact: bool,
}

fn options(ctx: &Ctx<'_>, from: usize) -> CmdResult<Options> {
    let mut o = Options {
        withscores: false,
        withattribs: false,
        count: DEFAULT_COUNT,
        epsilon: 2.0,
        ef: 0,
        filter: None,
        filter_ef: 0,
        exact: false,
    };
    let mut j = from;
    while j < ctx.argc() {
        let value = (j + 1 < ctx.argc()).then(|| ctx.arg(j + 1));
        let positive = |e: &'static str| {
            value
                .and_then(parse_i64)
                .filter(|&n| n > 0)
                .ok_or(Error::msg(e))
        };
        match () {
            _ if ctx.arg_is(j, "withscores") => o.withscores = true,
            _ if ctx.arg_is(j, "withattribs") => o.withattribs = true,
            _ if ctx.arg_is(j, "truth") => o.exact = true,
            _ if ctx.arg_is(j, "nothread") => {}
            _ if ctx.arg_is(j, "count") && value.is_some() => {
                o.count = positive("ERR invalid COUNT")? as usize;
                j += 1;
            }
            _ if ctx.arg_is(j, "epsilon") && value.is_some() => {
                let e = value.and_then(parse_double).filter(|&e| e > 0.0);
                o.epsilon = e.ok_or(Error::msg("ERR invalid EPSILON"))? as f32;
                j += 1;
            }
            _ if ctx.arg_is(j, "ef") && value.is_some() => {
                // No upper bound here in 8.2.3 (VADD has one).
                o.ef = positive("ERR invalid EF")? as usize;
                j += 1;
            }
            _ if ctx.arg_is(j, "filter-ef") && value.is_some() => {
                o.filter_ef = positive("ERR invalid FILTER-EF")? as usize;
                j += 1;
            }
            _ if ctx.arg_is(j, "filter") && value.is_some() => {
                o.filter = Some(compile(value.expect("checked"))?);
                j += 1;
            }
            _ => return Err(Error::msg("ERR syntax error in VSIM command")),
        }
        j += 1;
    }
    Ok(o)
}

/// A FILTER expression, or Redis's error quoting the expression from where it went wrong
/// (read as a C string).
fn compile(expr: &[u8]) -> CmdResult<Program> {
    Program::compile(expr).map_err(|mut at| {
        if at >= expr.len() {
            at = 0;
        }
        let text = match expr.iter().position(|&c| c == 0) {
            Some(n) => &expr[..n],
            None => expr,
        };
        let mut line = b"ERR syntax error in FILTER expression near: ".to_vec();
        line.extend_from_slice(text.get(at..).unwrap_or_default());
        Error::bytes(line)
    })
}

/// VSIM key ELE element|FP32 blob|VALUES n v… [options]
pub fn vsim(ctx: &mut Ctx<'_>) -> CmdResult {
    if ctx.argc() < 4 {
        return Err(wrong_arity(ctx));
    }
    let key = ctx.arg(1);
    let args = ctx.args;
    let by_element = ctx.arg_is(2, "ele");
    let Some(set) = set_mut(ctx, key, false)? else {
        ctx.out.array(0);
        return Ok(());
    };
    let (query, used) = if by_element {
        let v = set
            .vector(&args[3])
            .ok_or(Error::msg("ERR element not found in set"))?;
        (v, 2)
    } else {
        let parsed = parse_vector(args, 2, false).ok_or(INVALID_VECTOR)?;
        let mut v = parsed.vector;
        if set.projection_input() > 0 && v.len() != set.dim() {
            v = projected(set, v)?;
        }
        (v, parsed.used)
    };
    if query.len() != set.dim() {
        return Err(dim_mismatch(query.len(), set.dim()));
    }
    let o = options(ctx, 2 + used)?;
    let Some(set) = set_mut(ctx, key, false)? else {
        unreachable!("looked up above");
    };
    let ef = if o.ef == 0 { DEFAULT_EF } else { o.ef }
        .max(o.count)
        .min(set.len());
    let filter_ef = if o.filter_ef == 0 {
        o.count * 100
    } else {
        o.filter_ef
    };
    let hits = set.search(&query, ef, o.filter.as_ref(), filter_ef, o.exact);
    let kept: Vec<_> = hits
        .into_iter()
        .take(o.count)
        // NaN distances are kept, as Redis's `distance/2 > epsilon` test keeps them.
        .take_while(|h| {
            (h.distance / 2.0).partial_cmp(&o.epsilon) != Some(std::cmp::Ordering::Greater)
        })
        .map(|h| {
            (
                h.name.to_vec(),
                h.distance,
                h.attributes.map(<[u8]>::to_vec),
            )
        })
        .collect();
    reply(ctx, &o, kept);
    Ok(())
}

type Kept = Vec<(Vec<u8>, f32, Option<Vec<u8>>)>;

/// A flat array (element, [score], [attributes]…), or in RESP3 with WITHSCORES or WITHATTRIBS
/// a map from element to its score, its attributes, or both as a pair.
fn reply(ctx: &mut Ctx<'_>, o: &Options, kept: Kept) {
    let out = &mut ctx.out;
    let resp3 = out.is_resp3();
    if resp3 && (o.withscores || o.withattribs) {
        out.map(kept.len());
    } else {
        out.array(kept.len() * (1 + o.withscores as usize + o.withattribs as usize));
    }
    for (name, distance, attributes) in kept {
        out.bulk(&name);
        if resp3 && o.withscores && o.withattribs {
            out.array(2);
        }
        if o.withscores {
            out.double_shortest(1.0 - distance as f64 / 2.0);
        }
        if o.withattribs {
            match attributes {
                Some(a) => out.bulk(&a),
                None => out.null(),
            }
        }
    }
}
