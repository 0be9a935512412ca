//! The searches: GEOSEARCH, GEOSEARCHSTORE and the older GEORADIUS, GEORADIUSBYMEMBER and their
//! `_RO` forms, all Redis's `georadiusGeneric` — the source key read first, then the centre and
//! shape, the options in order and the checks across them; then the cells scanned, the points
//! sorted, counted and replied or stored.

use embedis_datatypes::zset::{ScoreRange, ZSetValue};

use crate::base::config::event_class::{GENERIC, ZSET};
use crate::base::cstr::word_is;
use crate::base::error::{CmdResult, Error};
use crate::base::value::Value;
use crate::kernel::ctx::Ctx;
use crate::model::keyspace::Access;

use super::hash::{align52, decode_score, format_distance, Cell, Search, Shape};
use super::{box_args, long_lat, radius_args, write_coordinate};
use crate::commands::zsets::limits;

/// Which command of the family is running (Redis's `georadiusGeneric` flags).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// GEORADIUS[_RO]: around coordinates.
    Radius { store_allowed: bool },
    /// GEORADIUSBYMEMBER[_RO]: around a member.
    ByMember { store_allowed: bool },
    /// GEOSEARCH, or GEOSEARCHSTORE with `store`.
    Search { store: bool },
}

pub(super) fn georadius(ctx: &mut Ctx<'_>) -> CmdResult {
    radius_generic(
        ctx,
        1,
        Kind::Radius {
            store_allowed: true,
        },
    )
}

pub(super) fn georadius_ro(ctx: &mut Ctx<'_>) -> CmdResult {
    radius_generic(
        ctx,
        1,
        Kind::Radius {
            store_allowed: false,
        },
    )
}

pub(super) fn georadiusbymember(ctx: &mut Ctx<'_>) -> CmdResult {
    radius_generic(
        ctx,
        1,
        Kind::ByMember {
            store_allowed: true,
        },
    )
}

pub(super) fn georadiusbymember_ro(ctx: &mut Ctx<'_>) -> CmdResult {
    radius_generic(
        ctx,
        1,
        Kind::ByMember {
            store_allowed: false,
        },
    )
}

pub(super) fn geosearch(ctx: &mut Ctx<'_>) -> CmdResult {
    radius_generic(ctx, 1, Kind::Search { store: false })
}

pub(super) fn geosearchstore(ctx: &mut Ctx<'_>) -> CmdResult {
    radius_generic(ctx, 2, Kind::Search { store: true })
}

/// One point found by a search.
struct Found {
    member: Vec<u8>,
    longitude: f64,
    latitude: f64,
    dist: f64,
    score: f64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Order {
    None,
    Asc,
    Desc,
}

/// What a search's arguments say, read as Redis's `georadiusGeneric` reads them.
struct SearchArgs {
    /// Longitude and latitude of the centre (unset while FROMMEMBER names a missing key).
    center: Option<(f64, f64)>,
    /// The shape, and the metres per unit of its distances.
    shape: Option<(Shape, f64)>,
    /// The index of the destination key (STORE, STOREDIST, GEOSEARCHSTORE's).
    store_key: Option<usize>,
    store_dist: bool,
    with_dist: bool,
    with_hash: bool,
    with_coord: bool,
    order: Order,
    any: bool,
    count: i64,
    from_member: bool,
    from_loc: bool,
    by_radius: bool,
    by_box: bool,
}

/// The search commands, as Redis's `georadiusGeneric`: the source key is read first, then the
/// centre and shape, then the options in order (each error as soon as it is met), then the
/// cross-option checks.
fn radius_generic(ctx: &mut Ctx<'_>, src_at: usize, kind: Kind) -> CmdResult {
    let args = ctx.args;
    let (db, now) = (ctx.db(), ctx.now_ms);
    let exists = match ctx.ks.read(db, &args[src_at], now) {
        None => false,
        Some(Value::ZSet(_)) => true,
        Some(_) => return Err(Error::WrongType),
    };
    let mut opts = SearchArgs {
        center: None,
        shape: None,
        store_key: None,
        store_dist: false,
        with_dist: false,
        with_hash: false,
        with_coord: false,
        order: Order::None,
        any: false,
        count: 0,
        from_member: false,
        from_loc: false,
        by_radius: false,
        by_box: false,
    };
    let base = search_base(ctx, src_at, kind, exists, &mut opts)?;
    parse_search_options(ctx, src_at, kind, exists, base, &mut opts)?;
    check_search_args(ctx, kind, &opts)?;
    if !exists {
        match opts.store_key {
            Some(dest) => {
                if ctx.ks.delete(db, &args[dest], now) {
                    ctx.notify(GENERIC, "del", &args[dest]);
                }
                ctx.out.integer(0);
            }
            None => ctx.out.array(0),
        }
        return Ok(());
    }
    if opts.count != 0 && opts.order == Order::None && !opts.any {
        opts.order = Order::Asc;
    }
    let ((longitude, latitude), (shape, conversion)) = (
        opts.center.expect("set by the arguments"),
        opts.shape.expect("set by the arguments"),
    );
    let query = Search {
        longitude,
        latitude,
        shape,
        conversion,
    };
    let limit = if opts.any { opts.count as usize } else { 0 };
    let mut found: Vec<Found> = match ctx
        .ks
        .lookup(db, &args[src_at], now, Access::NoTouch)
        .map(|o| &o.value)
    {
        Some(Value::ZSet(set)) => points_in(set, &query, limit),
        _ => Vec::new(),
    };
    if found.is_empty() && opts.store_key.is_none() {
        ctx.out.array(0);
        return Ok(());
    }
    let returned = if opts.count == 0 || (found.len() as i64) < opts.count {
        found.len()
    } else {
        opts.count as usize
    };
    match opts.order {
        Order::None => {}
        Order::Asc => found.sort_by(|a, b| a.dist.partial_cmp(&b.dist).unwrap()),
        Order::Desc => found.sort_by(|a, b| b.dist.partial_cmp(&a.dist).unwrap()),
    }
    found.truncate(returned);
    for f in &mut found {
        f.dist /= conversion;
    }
    match opts.store_key {
        None => reply_found(ctx, &opts, &found),
        Some(dest) => store_found(ctx, dest, kind, opts.store_dist, &found),
    }
    Ok(())
}

/// The coordinates of `member` in the source key's set, if it is there and its score decodes.
fn member_score(ctx: &mut Ctx<'_>, src_at: usize, member: &[u8]) -> Option<(f64, f64)> {
    let args = ctx.args;
    let (db, now) = (ctx.db(), ctx.now_ms);
    match ctx
        .ks
        .lookup(db, &args[src_at], now, Access::NoTouch)
        .map(|o| &o.value)
    {
        Some(Value::ZSet(z)) => z.score(member).and_then(decode_score),
        _ => None,
    }
}

/// Reads the centre and shape that GEORADIUS and GEORADIUSBYMEMBER take as fixed arguments
/// (GEOSEARCH takes none, GEOSEARCHSTORE its destination); returns the index of the first option.
fn search_base(
    ctx: &mut Ctx<'_>,
    src_at: usize,
    kind: Kind,
    exists: bool,
    opts: &mut SearchArgs,
) -> CmdResult<usize> {
    let args = ctx.args;
    Ok(match kind {
        Kind::Radius { .. } => {
            opts.center = Some(long_lat(&args[2..4])?);
            let (radius, conversion) = radius_args(&args[4..6])?;
            opts.shape = Some((Shape::Circle { radius }, conversion));
            6
        }
        Kind::ByMember { .. } if !exists => 5,
        Kind::ByMember { .. } => {
            opts.center = Some(
                member_score(ctx, src_at, &args[2])
                    .ok_or_else(|| Error::msg("ERR could not decode requested zset member"))?,
            );
            let (radius, conversion) = radius_args(&args[3..5])?;
            opts.shape = Some((Shape::Circle { radius }, conversion));
            5
        }
        Kind::Search { store } => {
            if store {
                opts.store_key = Some(1);
                3
            } else {
                2
            }
        }
    })
}

/// Reads the options from `base` on, in order, each error as soon as it is met (as Redis does);
/// FROMMEMBER looks its member up when the key exists.
fn parse_search_options(
    ctx: &mut Ctx<'_>,
    src_at: usize,
    kind: Kind,
    exists: bool,
    base: usize,
    opts: &mut SearchArgs,
) -> CmdResult {
    let args = ctx.args;
    let search = matches!(kind, Kind::Search { .. });
    let geosearchstore = matches!(kind, Kind::Search { store: true });
    let store_allowed = matches!(
        kind,
        Kind::Radius {
            store_allowed: true
        } | Kind::ByMember {
            store_allowed: true
        }
    );
    let remaining = args.len().saturating_sub(base);
    let mut i = 0;
    while i < remaining {
        let arg = &args[base + i];
        let at = base + i;
        if word_is(arg, "withdist") {
            opts.with_dist = true;
        } else if word_is(arg, "withhash") {
            opts.with_hash = true;
        } else if word_is(arg, "withcoord") {
            opts.with_coord = true;
        } else if word_is(arg, "any") {
            opts.any = true;
        } else if word_is(arg, "asc") {
            opts.order = Order::Asc;
        } else if word_is(arg, "desc") {
            opts.order = Order::Desc;
        } else if word_is(arg, "count") && i + 1 < remaining {
            opts.count = ctx.int_arg(at + 1)?;
            if opts.count <= 0 {
                return Err(Error::msg("ERR COUNT must be > 0"));
            }
            i += 1;
        } else if word_is(arg, "store") && i + 1 < remaining && store_allowed {
            opts.store_key = Some(at + 1);
            opts.store_dist = false;
            i += 1;
        } else if word_is(arg, "storedist") && i + 1 < remaining && store_allowed {
            opts.store_key = Some(at + 1);
            opts.store_dist = true;
            i += 1;
        } else if word_is(arg, "storedist") && geosearchstore {
            opts.store_dist = true;
        } else if word_is(arg, "frommember") && i + 1 < remaining && search && !opts.from_loc {
            if exists {
                opts.center = Some(
                    member_score(ctx, src_at, &args[at + 1])
                        .ok_or_else(|| Error::msg("ERR could not decode requested zset member"))?,
                );
            }
            opts.from_member = true;
            i += 1;
        } else if word_is(arg, "fromlonlat") && i + 2 < remaining && search && !opts.from_member {
            opts.center = Some(long_lat(&args[at + 1..at + 3])?);
            opts.from_loc = true;
            i += 2;
        } else if word_is(arg, "byradius") && i + 2 < remaining && search && !opts.by_box {
            let (radius, conversion) = radius_args(&args[at + 1..at + 3])?;
            opts.shape = Some((Shape::Circle { radius }, conversion));
            opts.by_radius = true;
            i += 2;
        } else if word_is(arg, "bybox") && i + 3 < remaining && search && !opts.by_radius {
            let (width, height, conversion) = box_args(&args[at + 1..at + 4])?;
            opts.shape = Some((Shape::Box { width, height }, conversion));
            opts.by_box = true;
            i += 3;
        } else {
            return Err(Error::Syntax);
        }
        i += 1;
    }
    Ok(())
}

/// The checks across options, once all are read, in Redis's order.
fn check_search_args(ctx: &Ctx<'_>, kind: Kind, opts: &SearchArgs) -> CmdResult {
    let search = matches!(kind, Kind::Search { .. });
    let geosearchstore = matches!(kind, Kind::Search { store: true });
    if opts.store_key.is_some() && (opts.with_dist || opts.with_hash || opts.with_coord) {
        return Err(Error::owned(format!(
            "ERR {} is not compatible with WITHDIST, WITHHASH and WITHCOORD options",
            if geosearchstore {
                "GEOSEARCHSTORE"
            } else {
                "STORE option in GEORADIUS"
            }
        )));
    }
    let name = String::from_utf8_lossy(&ctx.args[0]);
    if search && !(opts.from_member || opts.from_loc) {
        return Err(Error::owned(format!(
            "ERR exactly one of FROMMEMBER or FROMLONLAT can be specified for {name}"
        )));
    }
    if search && !(opts.by_radius || opts.by_box) {
        return Err(Error::owned(format!(
            "ERR exactly one of BYRADIUS and BYBOX can be specified for {name}"
        )));
    }
    if opts.any && opts.count == 0 {
        return Err(Error::msg("ERR the ANY argument requires COUNT argument"));
    }
    Ok(())
}

/// The points of `set` inside the query's shape, scanned cell by cell over the centre's
/// neighbourhood; with a `limit` (ANY), no more than that many.
fn points_in(set: &ZSetValue, query: &Search, limit: usize) -> Vec<Found> {
    let mut found: Vec<Found> = Vec::new();
    let cells = query.cells();
    // The index of the last cell scanned, 0 standing for "none yet" as in Redis — so the
    // centre cell itself is never compared with.
    let mut last = 0;
    for (i, &cell) in cells.iter().enumerate() {
        if cell.is_zero() {
            continue;
        }
        // Huge radii make neighbours repeat: a cell equal to the last one scanned is skipped.
        if last != 0 && cells[last] == cell {
            continue;
        }
        if limit != 0 && found.len() >= limit {
            break;
        }
        let min = align52(cell) as f64;
        let max = align52(Cell {
            bits: cell.bits + 1,
            step: cell.step,
        }) as f64;
        let range = ScoreRange {
            min,
            max,
            min_ex: false,
            max_ex: true,
        };
        let mut full = false;
        set.for_each_in_scores(&range, false, 0, -1, |member, score| {
            if full {
                return;
            }
            if let Some((lon, lat)) = decode_score(score) {
                if let Some(dist) = query.distance_if_inside(lon, lat) {
                    found.push(Found {
                        member: member.to_vec(),
                        longitude: lon,
                        latitude: lat,
                        dist,
                        score,
                    });
                }
            }
            if limit != 0 && found.len() >= limit {
                full = true;
            }
        });
        last = i;
    }
    found
}

/// The points found, each its member alone or, with WITHDIST, WITHHASH and WITHCOORD, an array
/// of the member and what they ask.
fn reply_found(ctx: &mut Ctx<'_>, opts: &SearchArgs, found: &[Found]) {
    let (with_dist, with_hash, with_coord) = (opts.with_dist, opts.with_hash, opts.with_coord);
    let options = with_dist as usize + with_coord as usize + with_hash as usize;
    ctx.out.array(found.len());
    for f in found {
        if options > 0 {
            ctx.out.array(options + 1);
        }
        ctx.out.bulk(&f.member);
        if with_dist {
            ctx.out.bulk(format_distance(f.dist).as_bytes());
        }
        if with_hash {
            ctx.out.integer(f.score as i64);
        }
        if with_coord {
            ctx.out.array(2);
            write_coordinate(ctx, f.longitude);
            write_coordinate(ctx, f.latitude);
        }
    }
}

/// STORE, STOREDIST and GEOSEARCHSTORE: the points written to the key at `dest` as a sorted set
/// (scored by geohash, or by distance with STOREDIST), an empty result deleting the key; the reply
/// is how many.
fn store_found(ctx: &mut Ctx<'_>, dest: usize, kind: Kind, store_dist: bool, found: &[Found]) {
    let args = ctx.args;
    let (db, now) = (ctx.db(), ctx.now_ms);
    if found.is_empty() {
        if ctx.ks.delete(db, &args[dest], now) {
            ctx.notify(GENERIC, "del", &args[dest]);
        }
    } else {
        let limits = limits(ctx);
        let elements: Vec<(&[u8], f64)> = found
            .iter()
            .map(|f| {
                (
                    f.member.as_slice(),
                    if store_dist { f.dist } else { f.score },
                )
            })
            .collect();
        let set = ZSetValue::from_unsorted(elements, &limits);
        ctx.ks.set(db, &args[dest], Value::ZSet(set), false, now);
        ctx.ks.dirty += found.len() as u64 - 1;
        let event = if matches!(kind, Kind::Search { .. }) {
            "geosearchstore"
        } else {
            "georadiusstore"
        };
        ctx.notify(ZSET, event, &args[dest]);
    }
    ctx.out.integer(found.len() as i64);
}
