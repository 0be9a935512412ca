//! SORT and SORT_RO: the elements of a list, set or sorted set, sorted as numbers or strings,
//! optionally by the values of other keys (`BY weight_*`, `BY obj_*->field`), with other keys'
//! values fetched in their place (`GET`), a `LIMIT`, and for SORT a `STORE` into a list.
//!
//! Redis 7.0 is followed to the byte, including what clients can see of its implementation:
//! - numbers are read with C's `strtod` (leading space, hex and `inf` accepted; a NaN, an
//!   overflow or trailing bytes make the whole command fail), equal numbers are ordered by the
//!   elements' bytes, and a missing `BY` key weighs 0 (or sorts first with ALPHA);
//! - ALPHA compares as `strcoll` in the C locale (bytes up to a NUL) — but as whole byte strings
//!   when storing, which Redis does so that replicas with another locale store the same list;
//! - `BY` a pattern without `*` does not sort: lists and sorted sets keep their order (DESC walks
//!   it backwards, LIMIT slices it), while a set is sorted as ALPHA when its order would otherwise
//!   leak into a stored key or a script's result (scripts must be deterministic);
//! - SORT converts a small sorted set to its skiplist encoding, as Redis's `zsetConvert` does;
//! - the sort is stable (glibc's `qsort` is a merge sort), which fixes the order of ties that
//!   the comparison leaves equal.
//!
//! The key specs of the BY/GET patterns and of STORE are Redis's `unknown` ones (the names come
//! from the data, and STORE may be anywhere), so SORT is `movablekeys` and answers COMMAND GETKEYS
//! through its own key finder, as Redis's `sortGetKeys`.

use bytes::Bytes;
use embedis_datatypes::quicklist::Quicklist;
use std::cmp::Ordering;

use super::zsets::c_strtod;
use crate::base::config::event_class::{GENERIC, LIST};
use crate::base::cstr::{c_str, word_is};
use crate::base::error::{CmdResult, Error};
use crate::base::value::Value;
use crate::kernel::ctx::Ctx;
use crate::kernel::table::keys::flag;
use crate::kernel::table::{Acl, CommandSpec, Flags, KeySpec};
use crate::model::keyspace::Access;

/// SORT's keys on one command line (Redis's `sortGetKeys`): the sorted key, and the key after
/// the last STORE, found by skipping the arguments of LIMIT, GET and BY. Like Redis's loop, the
/// scan does not step over STORE's own argument.
fn sort_keys(args: &[Bytes]) -> Vec<(usize, u16)> {
    let mut keys = vec![(1, RO_ACCESS)];
    let mut store = None;
    let mut i = 2;
    while i < args.len() {
        let a = &args[i];
        if word_is(a, "limit") {
            i += 2;
        } else if word_is(a, "get") || word_is(a, "by") {
            i += 1;
        } else if word_is(a, "store") && i + 1 < args.len() {
            store = Some(i + 1);
        }
        i += 1;
    }
    if let Some(at) = store {
        keys.push((at, flag::OW | flag::UPDATE));
    }
    keys
}

/// SORT_RO's one key (Redis's `sortROGetKeys`).
fn sort_ro_keys(_args: &[Bytes]) -> Vec<(usize, u16)> {
    vec![(1, RO_ACCESS)]
}

fn sort(ctx: &mut Ctx<'_>) -> CmdResult {
    sort_generic(ctx, false)
}

fn sort_ro(ctx: &mut Ctx<'_>) -> CmdResult {
    sort_generic(ctx, true)
}

/// A value looked up for BY or GET: a string's bytes or a hash field's.
enum Found {
    Int(i64),
    Bytes(Vec<u8>),
}

impl Found {
    fn into_bytes(self) -> Vec<u8> {
        match self {
            Found::Int(n) => n.to_string().into_bytes(),
            Found::Bytes(b) => b,
        }
    }
}

/// Redis's `lookupKeyByPattern`: `#` is the element itself; otherwise the first `*` of the
/// pattern is replaced by the element and the key read (hits, misses and lazy expiry as any
/// read); `key->field` after the `*` reads a hash field. A pattern without `*`, a missing key or
/// one of the wrong type finds nothing.
fn lookup_by_pattern(ctx: &mut Ctx<'_>, pattern: &[u8], element: &[u8]) -> Option<Found> {
    let pattern = c_str(pattern);
    if pattern == b"#" {
        return Some(Found::Bytes(element.to_vec()));
    }
    let star = pattern.iter().position(|&b| b == b'*')?;
    let after = &pattern[star + 1..];
    let field = after
        .windows(2)
        .position(|w| w == b"->")
        .filter(|&at| at + 2 < after.len())
        .map(|at| (at, &after[at + 2..]));
    let postfix = match field {
        Some((at, _)) => &after[..at],
        None => after,
    };
    let mut key = Vec::with_capacity(pattern.len() + element.len());
    key.extend_from_slice(&pattern[..star]);
    key.extend_from_slice(element);
    key.extend_from_slice(postfix);
    let (db, now) = (ctx.client.db, ctx.now_ms);
    let value = ctx.ks.read(db, &key, now)?;
    match (field, &*value) {
        // A field past its deadline (still stored until read or reclaimed) is missing.
        (Some((_, name)), Value::Hash(hash)) if hash.is_expired(name, now) => None,
        (Some((_, name)), Value::Hash(hash)) => hash.get(name).map(|v| Found::Bytes(v.to_vec())),
        (Some(_), _) => None,
        (None, Value::Int(n)) => Some(Found::Int(*n)),
        (None, v) => match super::strings::string_of(v) {
            Ok(bytes) => Some(Found::Bytes(bytes.to_vec())),
            Err(_) => None,
        },
    }
}

/// One element being sorted, with what it sorts by.
struct Item {
    element: Vec<u8>,
    score: f64,
    /// ALPHA BY: the looked-up value (None when the key was missing).
    by: Option<Vec<u8>>,
}

/// `strcoll` in the C locale: byte order of the C strings (up to a NUL).
fn collate(a: &[u8], b: &[u8]) -> Ordering {
    c_str(a).cmp(c_str(b))
}

/// Redis's `compareStringObjects`: byte order, then length.
fn binary(a: &[u8], b: &[u8]) -> Ordering {
    a.cmp(b)
}

/// SORT's number reading (`strtod` to the end of the C string, no NaN, no ERANGE).
fn sort_score(found: &Found) -> Option<f64> {
    match found {
        Found::Int(n) => Some(*n as f64),
        Found::Bytes(bytes) => score_of_bytes(bytes),
    }
}

/// [`sort_score`] of bytes read in place (an element sorted by itself).
fn score_of_bytes(bytes: &[u8]) -> Option<f64> {
    // An integer (the common list to sort) converts exactly as strtod would convert its digits
    // (both round the exact value to the nearest double), without strtod's cost, which was a
    // quarter of SORT's instructions.
    if let Some(n) = embedis_protocol::number::parse_i64(bytes) {
        return Some(n as f64);
    }
    let (value, consumed, erange) = c_strtod(bytes);
    (consumed == c_str(bytes).len() && !erange && !value.is_nan()).then_some(value)
}

/// True if the client's user may read every key with this command line (Redis's
/// `ACLUserCheckCmdWithUnrestrictedKeyAccess`): BY and GET patterns name keys no spec finds.
fn full_key_access(ctx: &Ctx<'_>) -> bool {
    ctx.server
        .users
        .of_client(ctx.client.user)
        .is_none_or(|user| {
            crate::kernel::acl_rules::all_keys_allowed(
                user,
                ctx.cmd,
                ctx.args,
                crate::model::acl_users::READ,
            )
        })
}

/// What SORT's options say.
struct SortOptions {
    desc: bool,
    alpha: bool,
    limit_start: i64,
    limit_count: i64,
    /// The index of STORE's destination key.
    store: Option<usize>,
    /// The index of BY's pattern.
    by: Option<usize>,
    /// The elements keep their stored order (BY with a pattern without `*`).
    dont_sort: bool,
    /// The indexes of GET's patterns, in order.
    gets: Vec<usize>,
}

/// The type of the value being sorted.
#[derive(Clone, Copy, PartialEq, Eq)]
enum SortSource {
    List,
    Set,
    ZSet,
}

fn sort_generic(ctx: &mut Ctx<'_>, read_only: bool) -> CmdResult {
    let mut opts = parse_sort(ctx, read_only)?;
    let (db, now) = (ctx.client.db, ctx.now_ms);
    let (source, len) = sort_source(ctx)?;
    if opts.dont_sort && source == SortSource::Set && (opts.store.is_some() || ctx.from_script) {
        // A set's order is its hash table's: sort it, so that what is stored or what a script
        // sees is the same everywhere.
        opts.dont_sort = false;
        opts.alpha = true;
        opts.by = None;
    }
    let (mut start, mut end) = limit_range(opts.limit_start, opts.limit_count, len as i64);
    let direct = opts.dont_sort && matches!(source, SortSource::List | SortSource::ZSet);
    let mut items = load_items(ctx, &opts, direct, len, start, end);
    if direct {
        // The output code below reads the range from the start of what was loaded.
        end -= start;
        start = 0;
    }
    let mut bad_score = false;
    if !opts.dont_sort {
        bad_score = score_items(ctx, &opts, &mut items);
        order_items(&opts, &mut items, start, end);
    }
    let selected = (end - start + 1).max(0) as usize;
    let output_len = if opts.gets.is_empty() {
        selected
    } else {
        opts.gets.len() * selected
    };
    if bad_score {
        return Err(Error::msg(
            "ERR One or more scores can't be converted into double",
        ));
    }
    let range = if selected == 0 {
        &items[0..0]
    } else {
        &items[start as usize..=end as usize]
    };
    let patterns: Vec<Bytes> = opts.gets.iter().map(|&i| ctx.args[i].clone()).collect();
    match opts.store {
        // Without GET the reply is the sorted elements themselves, written without a copy.
        None if patterns.is_empty() => {
            ctx.out.array(range.len());
            for item in range {
                ctx.out.bulk(&item.element);
            }
        }
        None => reply_with_gets(ctx, range, &patterns, output_len),
        Some(dest_at) => {
            let list = sorted_list(ctx, range, &patterns);
            let dest = ctx.arg(dest_at);
            if output_len > 0 {
                ctx.ks.set(db, dest, Value::List(list), false, now);
                // One change per stored element, as Redis counts (`set` counted one).
                ctx.ks.dirty += output_len as u64 - 1;
                ctx.notify(LIST, "sortstore", dest);
            } else if ctx.ks.delete(db, dest, now) {
                ctx.notify(GENERIC, "del", dest);
            }
            ctx.out.integer(output_len as i64);
        }
    }
    Ok(())
}

/// Reads SORT's options in order, each error as soon as it is met; BY with a real pattern and
/// GET read keys no key spec names, so they are refused in cluster mode and to a user who may
/// not read every key, as in Redis.
fn parse_sort(ctx: &Ctx<'_>, read_only: bool) -> CmdResult<SortOptions> {
    let mut desc = false;
    let mut alpha = false;
    let (mut limit_start, mut limit_count) = (0i64, -1i64);
    let mut store: Option<usize> = None;
    let mut by: Option<usize> = None;
    let mut dont_sort = false;
    let mut gets: Vec<usize> = Vec::new();
    let mut j = 2;
    while j < ctx.argc() {
        let left = ctx.argc() - j - 1;
        let a = ctx.arg(j);
        if word_is(a, "asc") {
            desc = false;
        } else if word_is(a, "desc") {
            desc = true;
        } else if word_is(a, "alpha") {
            alpha = true;
        } else if word_is(a, "limit") && left >= 2 {
            limit_start = ctx.int_arg(j + 1)?;
            limit_count = ctx.int_arg(j + 2)?;
            j += 2;
        } else if !read_only && word_is(a, "store") && left >= 1 {
            store = Some(j + 1);
            j += 1;
        } else if word_is(a, "by") && left >= 1 {
            by = Some(j + 1);
            // A pattern without `*` is a constant: nothing to sort by.
            dont_sort = !c_str(ctx.arg(j + 1)).contains(&b'*');
            // A real pattern reads keys no key spec names: refused in cluster mode and to a
            // user who may not read every key, as in Redis.
            if !dont_sort {
                if ctx.server.cluster.enabled {
                    return Err(Error::msg("ERR BY option of SORT denied in Cluster mode."));
                }
                if !full_key_access(ctx) {
                    return Err(Error::msg(
                        "ERR BY option of SORT denied due to insufficient ACL permissions.",
                    ));
                }
            }
            j += 1;
        } else if word_is(a, "get") && left >= 1 {
            if ctx.server.cluster.enabled {
                return Err(Error::msg("ERR GET option of SORT denied in Cluster mode."));
            }
            if !full_key_access(ctx) {
                return Err(Error::msg(
                    "ERR GET option of SORT denied due to insufficient ACL permissions.",
                ));
            }
            gets.push(j + 1);
            j += 1;
        } else {
            return Err(Error::Syntax);
        }
        j += 1;
    }
    Ok(SortOptions {
        desc,
        alpha,
        limit_start,
        limit_count,
        store,
        by,
        dont_sort,
        gets,
    })
}

/// The type and length of the value to sort (a missing key sorts as an empty list); WRONGTYPE
/// for a type SORT does not take.
fn sort_source(ctx: &mut Ctx<'_>) -> CmdResult<(SortSource, usize)> {
    let (db, now) = (ctx.client.db, ctx.now_ms);
    let key = ctx.arg(1);
    Ok(match ctx.ks.read(db, key, now) {
        None => (SortSource::List, 0),
        Some(Value::List(list)) => (SortSource::List, list.len()),
        Some(Value::Set(set)) => (SortSource::Set, set.len()),
        Some(Value::ZSet(zset)) => {
            // Redis sorts sorted sets in their skiplist form and converts small ones for good.
            zset.convert_to_skiplist();
            (SortSource::ZSet, zset.len())
        }
        Some(_) => return Err(Error::WrongType),
    })
}

/// LIMIT's `start..=end` over `n` elements, clamped as Redis does (a start past the end selects
/// nothing).
fn limit_range(limit_start: i64, limit_count: i64, n: i64) -> (i64, i64) {
    let mut start = limit_start.max(0).min(n);
    let count = limit_count.max(-1).min(n);
    let mut end = if count < 0 { n - 1 } else { start + count - 1 };
    if start >= n {
        start = n - 1;
        end = n - 2;
    }
    if end >= n {
        end = n - 1;
    }
    (start, end)
}

/// The elements, in the stored order: all of them, or with `direct` (unsorted elements of a list
/// or sorted set) only LIMIT's range, read in the requested direction.
fn load_items(
    ctx: &mut Ctx<'_>,
    opts: &SortOptions,
    direct: bool,
    len: usize,
    start: i64,
    end: i64,
) -> Vec<Item> {
    let (db, now) = (ctx.client.db, ctx.now_ms);
    let key = ctx.arg(1);
    let desc = opts.desc;
    let mut items: Vec<Item> = Vec::with_capacity(len);
    // Looked up again without counting a second hit.
    let value = ctx
        .ks
        .lookup(db, key, now, Access::NoTouch)
        .map(|o| &mut o.value);
    let item = |element: Vec<u8>| Item {
        element,
        score: 0.0,
        by: None,
    };
    match value {
        None => {}
        Some(Value::List(list)) if direct && end >= start => {
            let take = (end - start + 1) as usize;
            if desc {
                let from = list.len() - start as usize;
                let all: Vec<&[u8]> = list.iter().take(from).collect();
                items.extend(all.iter().rev().take(take).map(|e| item(e.to_vec())));
            } else {
                items.extend(
                    list.iter_from(start as usize)
                        .take(take)
                        .map(|e| item(e.to_vec())),
                );
            }
        }
        Some(Value::List(_)) if direct => {}
        Some(Value::List(list)) => items.extend(list.iter().map(|e| item(e.to_vec()))),
        Some(Value::Set(set)) => {
            items.extend(set.iter().map(|m| m.with_bytes(|b| item(b.to_vec()))))
        }
        Some(Value::ZSet(zset)) if direct && end >= start => {
            zset.for_each_in_ranks(start as usize, end as usize, desc, |m, _| {
                items.push(item(m.to_vec()))
            });
        }
        Some(Value::ZSet(_)) if direct => {}
        Some(Value::ZSet(zset)) => zset.for_each(|m, _| items.push(item(m.to_vec()))),
        Some(_) => unreachable!("checked above"),
    }
    items
}

/// Gives each element what it sorts by: its score (the element itself, or the value BY's
/// pattern finds), or with ALPHA BY the value found. True if a score could not be read as a
/// double (the error is answered after sorting, as in Redis).
fn score_items(ctx: &mut Ctx<'_>, opts: &SortOptions, items: &mut [Item]) -> bool {
    let alpha = opts.alpha;
    let mut bad_score = false;
    let by_pattern = opts.by.map(|i| ctx.args[i].clone());
    for item in items {
        let found = match &by_pattern {
            Some(pattern) => match lookup_by_pattern(ctx, pattern, &item.element) {
                Some(found) => found,
                None => continue,
            },
            None => {
                // No BY: the element sorts by itself, read in place (a copy per element
                // was a third of SORT's cost). ALPHA without BY compares the elements.
                if !alpha {
                    match score_of_bytes(&item.element) {
                        Some(score) => item.score = score,
                        None => bad_score = true,
                    }
                }
                continue;
            }
        };
        if alpha {
            if by_pattern.is_some() {
                item.by = Some(found.into_bytes());
            }
        } else {
            match sort_score(&found) {
                Some(score) => item.score = score,
                None => bad_score = true,
            }
        }
    }
    bad_score
}

/// Sorts the elements as Redis compares them (numbers, then bytes; ALPHA in C-string order, or
/// byte order when storing), enough to get `start..=end` right.
fn order_items(opts: &SortOptions, items: &mut [Item], start: i64, end: i64) {
    let (alpha, desc) = (opts.alpha, opts.desc);
    let storing = opts.store.is_some();
    let by_used = opts.by.is_some();
    let compare = |x: &Item, y: &Item| {
        let order = if !alpha {
            x.score
                .partial_cmp(&y.score)
                .unwrap_or(Ordering::Equal)
                .then_with(|| binary(&x.element, &y.element))
        } else if by_used {
            match (&x.by, &y.by) {
                (None, None) => Ordering::Equal,
                (None, Some(_)) => Ordering::Less,
                (Some(_), None) => Ordering::Greater,
                (Some(a), Some(b)) if storing => binary(a, b),
                (Some(a), Some(b)) => collate(a, b),
            }
        } else if storing {
            binary(&x.element, &y.element)
        } else {
            collate(&x.element, &y.element)
        };
        if desc {
            order.reverse()
        } else {
            order
        }
    };
    // With LIMIT only the first end + 1 need ordering (Redis's `pqsort`). Numeric order is
    // total (equal scores fall back to the bytes), so the selected range is exactly what a
    // full sort gives; ALPHA's C-string order can tie distinct elements, so it sorts all.
    let upto = end + 1;
    if !alpha && end >= start && (upto as usize) < items.len() {
        let upto = upto as usize;
        items.select_nth_unstable_by(upto - 1, compare);
        items[..upto].sort_by(compare);
    } else {
        items.sort_by(compare);
    }
}

/// The reply with GET: for each element, what each pattern finds (`#` the element itself), null
/// where nothing is found.
fn reply_with_gets(ctx: &mut Ctx<'_>, range: &[Item], patterns: &[Bytes], output_len: usize) {
    let mut values: Vec<Option<Vec<u8>>> = Vec::with_capacity(output_len);
    for item in range {
        if patterns.is_empty() {
            values.push(Some(item.element.clone()));
        }
        for pattern in patterns {
            values.push(lookup_by_pattern(ctx, pattern, &item.element).map(Found::into_bytes));
        }
    }
    ctx.out.array(values.len());
    for value in values {
        match value {
            Some(v) => ctx.out.bulk(&v),
            None => ctx.out.null(),
        }
    }
}

/// STORE's list: the elements, or what GET's patterns find for them (an empty string where
/// nothing is found).
fn sorted_list(ctx: &mut Ctx<'_>, range: &[Item], patterns: &[Bytes]) -> Quicklist {
    let mut list = super::lists::new_list(ctx);
    for item in range {
        if patterns.is_empty() {
            list.push_back(&item.element);
        }
        for pattern in patterns {
            let value = lookup_by_pattern(ctx, pattern, &item.element)
                .map(Found::into_bytes)
                .unwrap_or_default();
            list.push_back(&value);
        }
    }
    list.settle();
    list
}

const RO_ACCESS: u16 = flag::RO | flag::ACCESS;

const ACL: Acl = Acl::SET
    .union(Acl::SORTEDSET)
    .union(Acl::LIST)
    .union(Acl::DANGEROUS);

const COMPLEXITY: &str = "O(N+M*log(M)) where N is the number of elements in the list or set to sort, and M the number of returned elements. When the elements are not sorted, complexity is O(N).";

static SORT_KEYS: &[KeySpec] = &[
    KeySpec::single(1, RO_ACCESS),
    KeySpec::unknown(RO_ACCESS).notes("For the optional BY/GET keyword. It is marked 'unknown' because the key names derive from the content of the key we sort"),
    KeySpec::unknown(flag::OW | flag::UPDATE).notes("For the optional STORE keyword. It is marked 'unknown' because the keyword can appear anywhere in the argument array"),
];

static SORT_RO_KEYS: &[KeySpec] = &[
    KeySpec::single(1, RO_ACCESS),
    KeySpec::unknown(RO_ACCESS).notes("For the optional BY/GET keyword. It is marked 'unknown' because the key names derive from the content of the key we sort"),
];

pub static COMMANDS: &[CommandSpec] = &[
    CommandSpec::new("sort", -2, sort)
        .flags(Flags::WRITE.union(Flags::DENYOOM))
        .acl(ACL)
        .keys(SORT_KEYS)
        .keys_fn(sort_keys)
        .doc(
            "generic",
            "1.0.0",
            COMPLEXITY,
            "Sorts a list, set or sorted set's elements, optionally by other keys' values, and returns or stores them.",
            "key [BY pattern:pattern] [LIMIT offset:integer count:integer] [GET pattern:pattern...+] [order=(ASC|DESC)] [sorting=ALPHA] [STORE destination:key]",
        ),
    CommandSpec::new("sort_ro", -2, sort_ro)
        .flags(Flags::READONLY)
        .acl(ACL)
        .keys(SORT_RO_KEYS)
        .keys_fn(sort_ro_keys)
        .doc(
            "generic",
            "7.0.0",
            COMPLEXITY,
            "Sorts a list, set or sorted set's elements, optionally by other keys' values, and returns them.",
            "key [BY pattern:pattern] [LIMIT offset:integer count:integer] [GET pattern:pattern...+] [order=(ASC|DESC)] [sorting=ALPHA]",
        ),
];

#[cfg(test)]
mod tests {
    use super::*;

    /// The integer fast path of [`score_of_bytes`] gives exactly what strtod gives, including
    /// integers a double cannot hold exactly (rounded the same way) and the ends of `i64`.
    #[test]
    fn integer_scores_match_strtod() {
        let mut samples: Vec<i64> = vec![
            0,
            1,
            -1,
            (1 << 53) + 1,
            -(1 << 53) - 1,
            (1 << 62) + 12345,
            i64::MAX,
            i64::MIN,
            999_999_999_999_999_999,
        ];
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        for _ in 0..10_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            samples.push(x as i64 >> (x % 60));
        }
        for n in samples {
            let text = n.to_string();
            let (strtod, consumed, erange) = c_strtod(text.as_bytes());
            assert!(consumed == text.len() && !erange);
            assert_eq!(
                score_of_bytes(text.as_bytes()).map(f64::to_bits),
                Some(strtod.to_bits()),
                "{text}"
            );
        }
    }

    fn args(line: &str) -> Vec<Bytes> {
        line.split(' ')
            .map(|w| Bytes::copy_from_slice(w.as_bytes()))
            .collect()
    }

    #[test]
    fn store_key_is_found_anywhere_and_the_last_one_wins() {
        assert_eq!(sort_keys(&args("SORT k")), vec![(1, RO_ACCESS)]);
        assert_eq!(
            sort_keys(&args("SORT k STORE a LIMIT 0 1 STORE b")),
            vec![(1, RO_ACCESS), (8, flag::OW | flag::UPDATE)]
        );
        // GET's and BY's arguments are skipped, so a pattern named "store" is not the keyword.
        assert_eq!(
            sort_keys(&args("SORT k GET store x BY store")),
            vec![(1, RO_ACCESS)]
        );
        assert_eq!(sort_keys(&args("SORT k STORE")), vec![(1, RO_ACCESS)]);
    }

    #[test]
    fn scores_read_as_strtod_to_the_end() {
        let s = |t: &str| sort_score(&Found::Bytes(t.as_bytes().to_vec()));
        assert_eq!(s("1.5"), Some(1.5));
        assert_eq!(s(" 2"), Some(2.0));
        assert_eq!(s(""), Some(0.0));
        assert_eq!(s("0x10"), Some(16.0));
        assert_eq!(s("inf"), Some(f64::INFINITY));
        assert_eq!(s("1e999"), None);
        assert_eq!(s("nan"), None);
        assert_eq!(s("3x"), None);
        assert_eq!(s("4\0junk"), Some(4.0));
    }
}
