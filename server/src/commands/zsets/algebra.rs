//! Set algebra over sorted sets (and plain sets, whose members score 1): ZUNION, ZINTER, ZDIFF,
//! their STORE forms and ZINTERCARD, with WEIGHTS and AGGREGATE read as Redis reads them.

use bytes::Bytes;
use embedis_datatypes::set::SetValue;
use embedis_datatypes::zset::ZSetValue;
use embedis_datatypes::SmallBytes;
use embedis_protocol::number::parse_i64;
use std::collections::HashMap;

use crate::base::cstr::word_is;
use crate::base::error::{CmdResult, Error};
use crate::base::value::Value;
use crate::kernel::ctx::Ctx;

use super::{limits, parse_double, positive_arg, reply_elements, store_result};

// ---------------------------------------------------------------------------------------------
// ZUNION, ZINTER, ZDIFF, their STORE forms, ZINTERCARD
// ---------------------------------------------------------------------------------------------

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SetOp {
    Union,
    Inter,
    Diff,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Aggregate {
    Sum,
    Min,
    Max,
}

impl Aggregate {
    fn apply(self, acc: &mut f64, value: f64) {
        match self {
            Aggregate::Sum => {
                *acc += value;
                // inf + -inf: Redis makes it 0.
                if acc.is_nan() {
                    *acc = 0.0;
                }
            }
            Aggregate::Min => {
                if value < *acc {
                    *acc = value;
                }
            }
            Aggregate::Max => {
                if value > *acc {
                    *acc = value;
                }
            }
        }
    }
}

/// An input of the set algebra: a sorted set, a plain set (every member scores 1), or nothing.
#[derive(Clone, Copy)]
enum Source<'a> {
    Missing,
    Sorted(&'a ZSetValue),
    Plain(&'a SetValue),
}

impl<'a> Source<'a> {
    fn len(&self) -> usize {
        match self {
            Source::Missing => 0,
            Source::Sorted(z) => z.len(),
            Source::Plain(s) => s.len(),
        }
    }

    fn score(&self, member: &[u8]) -> Option<f64> {
        match self {
            Source::Missing => None,
            Source::Sorted(z) => z.score(member),
            Source::Plain(SetValue::Ints(ints)) => {
                parse_i64(member).filter(|&n| ints.contains(n)).map(|_| 1.0)
            }
            Source::Plain(SetValue::Table(table)) => table.contains_key(member).then_some(1.0),
            Source::Plain(set @ SetValue::Pack(_)) => set.contains(member).then_some(1.0),
        }
    }

    /// Every element (a plain set's integers formatted as text).
    fn for_each(&self, mut f: impl FnMut(&[u8], f64)) {
        match self {
            Source::Missing => {}
            Source::Sorted(z) => z.for_each(f),
            Source::Plain(SetValue::Ints(ints)) => {
                let mut digits = itoa::Buffer::new();
                for n in ints.iter() {
                    f(digits.format(n).as_bytes(), 1.0);
                }
            }
            Source::Plain(SetValue::Table(table)) => {
                for (member, _) in table.iter() {
                    f(member, 1.0);
                }
            }
            Source::Plain(SetValue::Pack(pack)) => {
                for member in pack.iter() {
                    f(member, 1.0);
                }
            }
        }
    }
}

pub(super) fn zunion(ctx: &mut Ctx<'_>) -> CmdResult {
    setop_generic(ctx, 1, None, SetOp::Union, false)
}

pub(super) fn zinter(ctx: &mut Ctx<'_>) -> CmdResult {
    setop_generic(ctx, 1, None, SetOp::Inter, false)
}

pub(super) fn zdiff(ctx: &mut Ctx<'_>) -> CmdResult {
    setop_generic(ctx, 1, None, SetOp::Diff, false)
}

pub(super) fn zunionstore(ctx: &mut Ctx<'_>) -> CmdResult {
    let dst = ctx.arg(1);
    setop_generic(ctx, 2, Some(dst), SetOp::Union, false)
}

pub(super) fn zinterstore(ctx: &mut Ctx<'_>) -> CmdResult {
    let dst = ctx.arg(1);
    setop_generic(ctx, 2, Some(dst), SetOp::Inter, false)
}

pub(super) fn zdiffstore(ctx: &mut Ctx<'_>) -> CmdResult {
    let dst = ctx.arg(1);
    setop_generic(ctx, 2, Some(dst), SetOp::Diff, false)
}

pub(super) fn zintercard(ctx: &mut Ctx<'_>) -> CmdResult {
    setop_generic(ctx, 1, None, SetOp::Inter, true)
}

/// What the set algebra's options say.
struct SetOpOptions {
    /// WEIGHTS, one per input key (1 by default).
    weights: Vec<f64>,
    aggregate: Aggregate,
    withscores: bool,
    /// ZINTERCARD's LIMIT (0 for none).
    limit: i64,
}

/// Redis's `zunionInterDiffGenericCommand`.
fn setop_generic(
    ctx: &mut Ctx<'_>,
    numkeys_at: usize,
    dst: Option<&[u8]>,
    op: SetOp,
    cardinality_only: bool,
) -> CmdResult {
    let numkeys = ctx.int_arg(numkeys_at)?;
    if numkeys < 1 {
        return Err(Error::owned(format!(
            "ERR at least 1 input key is needed for '{}' command",
            ctx.cmd.full_name
        )));
    }
    if numkeys > (ctx.argc() - numkeys_at - 1) as i64 {
        return Err(Error::Syntax);
    }
    let numkeys = numkeys as usize;
    let args: &[Bytes] = ctx.args;
    let keys = &args[numkeys_at + 1..numkeys_at + 1 + numkeys];
    let (db, now) = (ctx.db(), ctx.now_ms);
    // The keys are looked up (and type-checked) before the options are read, as in Redis. These
    // lookups count hits and misses and expire keys; the values are borrowed again below.
    for key in keys {
        if let Some(value) = ctx.ks.read(db, key, now) {
            if !matches!(value, Value::ZSet(_) | Value::Set(_)) {
                return Err(Error::WrongType);
            }
        }
    }
    let opts = parse_setop_options(
        ctx,
        numkeys_at + 1 + numkeys,
        numkeys,
        dst.is_some(),
        op,
        cardinality_only,
    )?;
    let limits = limits(ctx);
    let dbref = &ctx.ks.dbs[db];
    let mut sources: Vec<(Source<'_>, f64)> = keys
        .iter()
        .zip(&opts.weights)
        .map(|(key, &w)| {
            let source = match dbref.main.get(&key[..]).map(|o| &o.value) {
                Some(Value::ZSet(z)) => Source::Sorted(z),
                Some(Value::Set(s)) => Source::Plain(s),
                _ => Source::Missing,
            };
            (source, w)
        })
        .collect();
    let mut result = match op {
        SetOp::Inter => {
            let (result, count) =
                intersection(&mut sources, opts.aggregate, cardinality_only, opts.limit);
            if cardinality_only {
                ctx.out.integer(count);
                return Ok(());
            }
            result
        }
        SetOp::Union => union(&mut sources, opts.aggregate),
        SetOp::Diff => difference(&sources),
    };
    drop(sources);
    // The result in (score, member) order; members are distinct, -0 and 0 are equal scores.
    result.sort_unstable_by(|a, b| {
        a.1.partial_cmp(&b.1)
            .expect("no NaN scores")
            .then_with(|| a.0.cmp(&b.0))
    });
    let refs: Vec<(&[u8], f64)> = result.iter().map(|(m, s)| (m.as_slice(), *s)).collect();
    match dst {
        Some(dst) => {
            let set = ZSetValue::from_sorted(&refs, &limits);
            let event = match op {
                SetOp::Union => "zunionstore",
                SetOp::Inter => "zinterstore",
                SetOp::Diff => "zdiffstore",
            };
            store_result(ctx, dst, set, event);
        }
        None => reply_elements(&mut ctx.out, &refs, opts.withscores, false),
    }
    Ok(())
}

/// Reads the options from `from` on, in order, each only where the command takes it (WEIGHTS and
/// AGGREGATE but for ZDIFF and ZINTERCARD, WITHSCORES but for the STORE forms, LIMIT for
/// ZINTERCARD); anything else is a syntax error.
fn parse_setop_options(
    ctx: &Ctx<'_>,
    from: usize,
    numkeys: usize,
    storing: bool,
    op: SetOp,
    cardinality_only: bool,
) -> CmdResult<SetOpOptions> {
    let mut weights = vec![1.0f64; numkeys];
    let mut aggregate = Aggregate::Sum;
    let mut withscores = false;
    let mut limit = 0i64;
    let mut i = from;
    while i < ctx.argc() {
        let remaining = ctx.argc() - i;
        let word = ctx.arg(i);
        if op != SetOp::Diff && !cardinality_only && remaining > numkeys && word_is(word, "weights")
        {
            for (k, weight) in weights.iter_mut().enumerate() {
                *weight = parse_double(ctx.arg(i + 1 + k))
                    .ok_or(Error::msg("ERR weight value is not a float"))?;
            }
            i += 1 + numkeys;
        } else if op != SetOp::Diff
            && !cardinality_only
            && remaining >= 2
            && word_is(word, "aggregate")
        {
            let how = ctx.arg(i + 1);
            aggregate = if word_is(how, "sum") {
                Aggregate::Sum
            } else if word_is(how, "min") {
                Aggregate::Min
            } else if word_is(how, "max") {
                Aggregate::Max
            } else {
                return Err(Error::Syntax);
            };
            i += 2;
        } else if !storing && !cardinality_only && word_is(word, "withscores") {
            withscores = true;
            i += 1;
        } else if cardinality_only && remaining >= 2 && word_is(word, "limit") {
            limit = positive_arg(ctx.arg(i + 1), "ERR LIMIT can't be negative")?;
            i += 2;
        } else {
            return Err(Error::Syntax);
        }
    }
    Ok(SetOpOptions {
        weights,
        aggregate,
        withscores,
        limit,
    })
}

/// ZINTER: the members of every input, their weighted scores aggregated; with
/// `cardinality_only` (ZINTERCARD) only how many, up to `limit` when it is not 0.
fn intersection(
    sources: &mut [(Source<'_>, f64)],
    aggregate: Aggregate,
    cardinality_only: bool,
    limit: i64,
) -> (Vec<(SmallBytes, f64)>, i64) {
    let mut result: Vec<(SmallBytes, f64)> = Vec::new();
    // Smallest first (a stable sort, as glibc's qsort is for small arrays): it drives the
    // loop and fixes the order in which scores are combined.
    sources.sort_by_key(|(s, _)| s.len());
    let (first, first_weight) = sources[0];
    let rest = &sources[1..];
    let mut count = 0i64;
    let mut done = false;
    first.for_each(|member, score| {
        if done {
            return;
        }
        let mut acc = weighted(score, first_weight);
        for (other, weight) in rest {
            // Only the first input's product has NaN (inf × 0) made 0, as in Redis; the
            // others' NaN meets the aggregate: SUM makes it 0, MIN/MAX keep the other side.
            match other.score(member) {
                Some(s) => aggregate.apply(&mut acc, s * *weight),
                None => return,
            }
        }
        if cardinality_only {
            count += 1;
            done = limit != 0 && count >= limit;
        } else {
            result.push((SmallBytes::new(member), acc));
        }
    });
    (result, count)
}

/// ZUNION: every input's members, their weighted scores aggregated.
fn union(sources: &mut [(Source<'_>, f64)], aggregate: Aggregate) -> Vec<(SmallBytes, f64)> {
    let mut result: Vec<(SmallBytes, f64)> = Vec::new();
    sources.sort_by_key(|(s, _)| s.len());
    let mut at: HashMap<SmallBytes, usize, ahash::RandomState> = HashMap::default();
    for (source, weight) in sources.iter() {
        source.for_each(|member, score| {
            let value = weighted(score, *weight);
            match at.get(member) {
                Some(&i) => aggregate.apply(&mut result[i].1, value),
                None => {
                    at.insert(SmallBytes::new(member), result.len());
                    result.push((SmallBytes::new(member), value));
                }
            }
        });
    }
    result
}

/// ZDIFF: the first input's members that no other input holds, with their scores.
fn difference(sources: &[(Source<'_>, f64)]) -> Vec<(SmallBytes, f64)> {
    let mut result: Vec<(SmallBytes, f64)> = Vec::new();
    let (first, _) = sources[0];
    let rest = &sources[1..];
    first.for_each(|member, score| {
        if rest.iter().all(|(other, _)| other.score(member).is_none()) {
            result.push((SmallBytes::new(member), score));
        }
    });
    result
}

/// A weighted score; `inf * 0` is 0 in Redis.
fn weighted(score: f64, weight: f64) -> f64 {
    let v = score * weight;
    if v.is_nan() {
        0.0
    } else {
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::test_harness::Harness;
    use embedis_datatypes::Dict;

    #[test]
    fn plain_sets_are_inputs_with_score_one() {
        let mut h = Harness::new();
        let mut table: Dict<SmallBytes, ()> = Dict::new();
        for m in ["a", "b", "x"] {
            table.insert(SmallBytes::new(m.as_bytes()), ());
        }
        let now = h.now();
        h.engine.ks.add(
            0,
            b"set",
            Value::Set(SetValue::Table(Box::new(table))),
            None,
            now,
        );
        h.run_text("ZADD z 5 a 7 c");
        assert_eq!(
            h.run_text("ZUNION 2 z set WITHSCORES"),
            "*8\r\n$1\r\nb\r\n$1\r\n1\r\n$1\r\nx\r\n$1\r\n1\r\n$1\r\na\r\n$1\r\n6\r\n$1\r\nc\r\n$1\r\n7\r\n"
        );
        assert_eq!(
            h.run_text("ZINTER 2 set z WEIGHTS 10 1 WITHSCORES"),
            "*2\r\n$1\r\na\r\n$2\r\n15\r\n"
        );
        assert_eq!(h.run_text("ZDIFF 2 set z"), "*2\r\n$1\r\nb\r\n$1\r\nx\r\n");
        assert_eq!(h.run_text("ZINTERCARD 2 set z"), ":1\r\n");
        assert_eq!(h.run_text("ZUNIONSTORE d 1 set"), ":3\r\n");
        assert_eq!(h.encoding("d"), "listpack");
        assert_eq!(
            h.run_text("ZRANGE set 0 -1"),
            "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"
        );
    }
}
