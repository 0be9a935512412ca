//! GEO commands: GEOADD, GEODIST, GEOHASH, GEOPOS, GEOSEARCH, GEOSEARCHSTORE and the older
//! GEORADIUS, GEORADIUSBYMEMBER and their `_RO` forms.
//!
//! A position is stored as a sorted-set member whose score is Redis's 52-bit geohash: longitude
//! and latitude (clamped to ±85.05112878, the Web-Mercator limits) are scaled to 26-bit integers
//! and their bits interleaved, latitude in the even bits. Everything clients can observe follows
//! Redis 7.0's own arithmetic, because the observable values come out of it: positions are the
//! centres of the 26-step cells (so GEOPOS does not give back exactly what GEOADD was given),
//! distances use Redis's haversine with its earth radius (6372797.560856 m), and a search looks
//! at the cell holding the centre and its eight neighbours at the step Redis estimates from the
//! radius, keeping the points inside the circle or box — so which points are found, in which
//! order when unsorted, and with which distances, are Redis's. The trigonometry is the C
//! library's (Rust's `f64::sin` and friends call it), as Redis's is.
//!
//! Replies format distances with four decimals (Redis's `fixedpoint_d2string`, rounding half to
//! even) and coordinates with 17 decimals less trailing zeros (`%.17Lf`), or as RESP3 doubles.

use bytes::Bytes;

use super::zsets::{limits, parse_double, read_zset};
use crate::base::config::event_class::{GENERIC, ZSET};
use crate::base::cstr::word_is;
use crate::base::error::{CmdResult, Error};
use crate::base::value::Value;
use crate::kernel::ctx::Ctx;
use crate::kernel::table::keys::flag;
use crate::kernel::table::{Acl, CommandSpec, Flags, KeySpec};
use crate::model::keyspace::Access;
use embedis_datatypes::zset::{AddFlags, AddOutcome, ScoreRange, ZSetValue};

// ---------------------------------------------------------------------------------------------
// Geohash arithmetic (Redis's geohash.c and geohash_helper.c, rewritten)
// ---------------------------------------------------------------------------------------------

const STEP_MAX: u8 = 26;
const LAT_MIN: f64 = -85.05112878;
const LAT_MAX: f64 = 85.05112878;
const LONG_MIN: f64 = -180.0;
const LONG_MAX: f64 = 180.0;
const EARTH_RADIUS_IN_METERS: f64 = 6372797.560856;
const MERCATOR_MAX: f64 = 20037726.37;
const D_R: f64 = std::f64::consts::PI / 180.0;

fn deg_rad(deg: f64) -> f64 {
    deg * D_R
}

fn rad_deg(rad: f64) -> f64 {
    rad / D_R
}

/// A cell: `step` bits of each coordinate, interleaved (latitude in the even bits).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
struct Cell {
    bits: u64,
    step: u8,
}

impl Cell {
    fn is_zero(self) -> bool {
        self.bits == 0 && self.step == 0
    }
}

#[derive(Debug, Clone, Copy)]
struct Range {
    min: f64,
    max: f64,
}

const LONG_RANGE: Range = Range {
    min: LONG_MIN,
    max: LONG_MAX,
};
const LAT_RANGE: Range = Range {
    min: LAT_MIN,
    max: LAT_MAX,
};

#[derive(Debug, Clone, Copy)]
struct Area {
    longitude: Range,
    latitude: Range,
}

/// Spreads the 32 bits of `v` over the even bits of a u64.
fn spread(v: u32) -> u64 {
    let mut x = v as u64;
    x = (x | (x << 16)) & 0x0000_FFFF_0000_FFFF;
    x = (x | (x << 8)) & 0x00FF_00FF_00FF_00FF;
    x = (x | (x << 4)) & 0x0F0F_0F0F_0F0F_0F0F;
    x = (x | (x << 2)) & 0x3333_3333_3333_3333;
    (x | (x << 1)) & 0x5555_5555_5555_5555
}

/// The inverse of [`spread`]: the even bits of `x`, packed.
fn squash(x: u64) -> u32 {
    let mut x = x & 0x5555_5555_5555_5555;
    x = (x | (x >> 1)) & 0x3333_3333_3333_3333;
    x = (x | (x >> 2)) & 0x0F0F_0F0F_0F0F_0F0F;
    x = (x | (x >> 4)) & 0x00FF_00FF_00FF_00FF;
    x = (x | (x >> 8)) & 0x0000_FFFF_0000_FFFF;
    x = (x | (x >> 16)) & 0x0000_0000_FFFF_FFFF;
    x as u32
}

/// The cell of `step` bits holding a position, in the given coordinate ranges; `None` outside
/// them (or outside Redis's absolute limits).
fn encode(
    long_range: Range,
    lat_range: Range,
    longitude: f64,
    latitude: f64,
    step: u8,
) -> Option<Cell> {
    if !(LONG_MIN..=LONG_MAX).contains(&longitude) || !(LAT_MIN..=LAT_MAX).contains(&latitude) {
        return None;
    }
    if latitude < lat_range.min
        || latitude > lat_range.max
        || longitude < long_range.min
        || longitude > long_range.max
    {
        return None;
    }
    let scale = (1u64 << step) as f64;
    let lat_offset = (latitude - lat_range.min) / (lat_range.max - lat_range.min) * scale;
    let long_offset = (longitude - long_range.min) / (long_range.max - long_range.min) * scale;
    // C converts the doubles to uint32 by truncation.
    Some(Cell {
        bits: spread(lat_offset as u32) | (spread(long_offset as u32) << 1),
        step,
    })
}

fn decode(cell: Cell) -> Option<Area> {
    if cell.is_zero() {
        return None;
    }
    let lat_cells = squash(cell.bits) as f64;
    let long_cells = squash(cell.bits >> 1) as f64;
    let scale = (1u64 << cell.step) as f64;
    let lat_scale = LAT_RANGE.max - LAT_RANGE.min;
    let long_scale = LONG_RANGE.max - LONG_RANGE.min;
    Some(Area {
        latitude: Range {
            min: LAT_RANGE.min + (lat_cells / scale) * lat_scale,
            max: LAT_RANGE.min + ((lat_cells + 1.0) / scale) * lat_scale,
        },
        longitude: Range {
            min: LONG_RANGE.min + (long_cells / scale) * long_scale,
            max: LONG_RANGE.min + ((long_cells + 1.0) / scale) * long_scale,
        },
    })
}

/// The centre of a cell, clamped to the coordinate limits.
fn center(area: &Area) -> (f64, f64) {
    let longitude = ((area.longitude.min + area.longitude.max) / 2.0).clamp(LONG_MIN, LONG_MAX);
    let latitude = ((area.latitude.min + area.latitude.max) / 2.0).clamp(LAT_MIN, LAT_MAX);
    (longitude, latitude)
}

/// The position a score stands for (the centre of its 26-step cell).
fn decode_score(score: f64) -> Option<(f64, f64)> {
    let cell = Cell {
        bits: score as u64,
        step: STEP_MAX,
    };
    decode(cell).map(|a| center(&a))
}

/// The 52-bit score of a cell: its bits moved to the top of 52.
fn align52(cell: Cell) -> u64 {
    cell.bits << (52 - cell.step as u32 * 2)
}

/// Moves a cell one step east (`d` > 0) or west in longitude (the odd bits).
fn move_x(cell: &mut Cell, d: i8) {
    if d == 0 {
        return;
    }
    let shift = 64 - cell.step as u32 * 2;
    let mut x = cell.bits & 0xaaaa_aaaa_aaaa_aaaa;
    let y = cell.bits & 0x5555_5555_5555_5555;
    let zz = 0x5555_5555_5555_5555u64 >> shift;
    if d > 0 {
        x = x.wrapping_add(zz + 1);
    } else {
        x |= zz;
        x = x.wrapping_sub(zz + 1);
    }
    x &= 0xaaaa_aaaa_aaaa_aaaau64 >> shift;
    cell.bits = x | y;
}

/// Moves a cell one step north (`d` > 0) or south in latitude (the even bits).
fn move_y(cell: &mut Cell, d: i8) {
    if d == 0 {
        return;
    }
    let shift = 64 - cell.step as u32 * 2;
    let x = cell.bits & 0xaaaa_aaaa_aaaa_aaaa;
    let mut y = cell.bits & 0x5555_5555_5555_5555;
    let zz = 0xaaaa_aaaa_aaaa_aaaau64 >> shift;
    if d > 0 {
        y = y.wrapping_add(zz + 1);
    } else {
        y |= zz;
        y = y.wrapping_sub(zz + 1);
    }
    y &= 0x5555_5555_5555_5555u64 >> shift;
    cell.bits = x | y;
}

fn neighbour(cell: Cell, dx: i8, dy: i8) -> Cell {
    let mut n = cell;
    move_x(&mut n, dx);
    move_y(&mut n, dy);
    n
}

/// Redis's search step for a radius: the coarsest cells that still cover it, one or two
/// steps coarser near the poles.
fn steps_for_radius(mut range_meters: f64, latitude: f64) -> u8 {
    if range_meters == 0.0 {
        return 26;
    }
    let mut step: i32 = 1;
    while range_meters < MERCATOR_MAX {
        range_meters *= 2.0;
        step += 1;
    }
    step -= 2;
    if !(-66.0..=66.0).contains(&latitude) {
        step -= 1;
        if !(-80.0..=80.0).contains(&latitude) {
            step -= 1;
        }
    }
    step.clamp(1, 26) as u8
}

/// What a search covers: a circle (radius) or a box (width × height), in the query's unit.
#[derive(Debug, Clone, Copy)]
enum Shape {
    Circle { radius: f64 },
    Box { width: f64, height: f64 },
}

#[derive(Debug, Clone, Copy)]
struct Search {
    longitude: f64,
    latitude: f64,
    shape: Shape,
    /// Metres per unit.
    conversion: f64,
}

impl Search {
    /// The bounding box of the shape: min longitude, min latitude, max longitude, max latitude.
    fn bounds(&self) -> [f64; 4] {
        let (half_height, half_width) = match self.shape {
            Shape::Circle { radius } => (radius, radius),
            Shape::Box { width, height } => (height / 2.0, width / 2.0),
        };
        let height = self.conversion * half_height;
        let width = self.conversion * half_width;
        let lat_delta = rad_deg(height / EARTH_RADIUS_IN_METERS);
        let long_delta_top =
            rad_deg(width / EARTH_RADIUS_IN_METERS / deg_rad(self.latitude + lat_delta).cos());
        let long_delta_bottom =
            rad_deg(width / EARTH_RADIUS_IN_METERS / deg_rad(self.latitude - lat_delta).cos());
        // The box is widest on the side nearer the equator... measured as Redis does: the
        // bottom edge in the southern hemisphere, the top edge in the northern.
        let long_delta = if self.latitude < 0.0 {
            long_delta_bottom
        } else {
            long_delta_top
        };
        [
            self.longitude - long_delta,
            self.latitude - lat_delta,
            self.longitude + long_delta,
            self.latitude + lat_delta,
        ]
    }

    /// The cells to scan, in Redis's order: the centre's, then N, S, E, W, NE, NW, SE, SW
    /// (zero where a neighbour cannot hold a match).
    fn cells(&self) -> [Cell; 9] {
        let [min_lon, min_lat, max_lon, max_lat] = self.bounds();
        let radius_meters = match self.shape {
            Shape::Circle { radius } => radius,
            Shape::Box { width, height } => {
                ((width / 2.0) * (width / 2.0) + (height / 2.0) * (height / 2.0)).sqrt()
            }
        } * self.conversion;
        let mut steps = steps_for_radius(radius_meters, self.latitude);
        let around = |steps: u8| {
            let cell = encode(LONG_RANGE, LAT_RANGE, self.longitude, self.latitude, steps)
                .unwrap_or(Cell {
                    bits: 0,
                    step: steps,
                });
            let n = [
                neighbour(cell, 0, 1),
                neighbour(cell, 0, -1),
                neighbour(cell, 1, 0),
                neighbour(cell, -1, 0),
                neighbour(cell, 1, 1),
                neighbour(cell, -1, 1),
                neighbour(cell, 1, -1),
                neighbour(cell, -1, -1),
            ];
            (cell, n)
        };
        let (mut cell, mut n) = around(steps);
        // If the neighbours do not reach the bounding box, the cells are too small: one step
        // coarser.
        let reach = |c: Cell| decode(c);
        let mut decrease = false;
        if let Some(north) = reach(n[0]) {
            decrease |= north.latitude.max < max_lat;
        }
        if let Some(south) = reach(n[1]) {
            decrease |= south.latitude.min > min_lat;
        }
        if let Some(east) = reach(n[2]) {
            decrease |= east.longitude.max < max_lon;
        }
        if let Some(west) = reach(n[3]) {
            decrease |= west.longitude.min > min_lon;
        }
        if steps > 1 && decrease {
            steps -= 1;
            (cell, n) = around(steps);
        }
        // Drop the neighbours on a side the shape does not reach.
        if steps >= 2 {
            if let Some(area) = decode(cell) {
                let zero = Cell::default();
                if area.latitude.min < min_lat {
                    n[1] = zero; // south
                    n[7] = zero; // south-west
                    n[6] = zero; // south-east
                }
                if area.latitude.max > max_lat {
                    n[0] = zero; // north
                    n[4] = zero; // north-east
                    n[5] = zero; // north-west
                }
                if area.longitude.min < min_lon {
                    n[3] = zero; // west
                    n[7] = zero; // south-west
                    n[5] = zero; // north-west
                }
                if area.longitude.max > max_lon {
                    n[2] = zero; // east
                    n[6] = zero; // south-east
                    n[4] = zero; // north-east
                }
            }
        }
        [cell, n[0], n[1], n[2], n[3], n[4], n[5], n[6], n[7]]
    }

    /// The distance from the centre to a point if it lies inside the shape.
    fn distance_if_inside(&self, longitude: f64, latitude: f64) -> Option<f64> {
        match self.shape {
            Shape::Circle { radius } => {
                let d = distance(self.longitude, self.latitude, longitude, latitude);
                (d <= radius * self.conversion).then_some(d)
            }
            Shape::Box { width, height } => {
                let (width_m, height_m) = (width * self.conversion, height * self.conversion);
                if lat_distance(latitude, self.latitude) > height_m / 2.0 {
                    return None;
                }
                if distance(longitude, latitude, self.longitude, latitude) > width_m / 2.0 {
                    return None;
                }
                Some(distance(self.longitude, self.latitude, longitude, latitude))
            }
        }
    }
}

fn lat_distance(lat1: f64, lat2: f64) -> f64 {
    EARTH_RADIUS_IN_METERS * (deg_rad(lat2) - deg_rad(lat1)).abs()
}

/// Redis's haversine distance in metres.
fn distance(lon1: f64, lat1: f64, lon2: f64, lat2: f64) -> f64 {
    let lon1r = deg_rad(lon1);
    let lon2r = deg_rad(lon2);
    let v = ((lon2r - lon1r) / 2.0).sin();
    if v == 0.0 {
        return lat_distance(lat1, lat2);
    }
    let lat1r = deg_rad(lat1);
    let lat2r = deg_rad(lat2);
    let u = ((lat2r - lat1r) / 2.0).sin();
    let a = u * u + lat1r.cos() * lat2r.cos() * v * v;
    2.0 * EARTH_RADIUS_IN_METERS * a.sqrt().asin()
}

/// A distance as Redis prints it: rounded (half to even) to four decimals.
fn format_distance(d: f64) -> String {
    if d == 0.0 {
        return "0.0000".into();
    }
    let scaled = (d * 10000.0).round_ties_even();
    let negative = scaled < 0.0;
    let value = scaled.abs() as u64;
    format!(
        "{}{}.{:04}",
        if negative { "-" } else { "" },
        value / 10000,
        value % 10000
    )
}

/// A coordinate as Redis's `%.17Lf` less trailing zeros.
fn format_coordinate(v: f64) -> String {
    let mut s = format!("{v:.17}");
    if s.contains('.') {
        while s.ends_with('0') {
            s.pop();
        }
        if s.ends_with('.') {
            s.pop();
        }
    }
    if s == "-0" {
        s = "0".into();
    }
    s
}

// ---------------------------------------------------------------------------------------------
// Arguments
// ---------------------------------------------------------------------------------------------

fn double_arg(arg: &[u8], message: Option<&str>) -> CmdResult<f64> {
    parse_double(arg).ok_or_else(|| match message {
        Some(m) => Error::owned(format!("ERR {m}")),
        None => Error::NotFloat,
    })
}

/// A longitude and a latitude argument pair, within Redis's limits.
fn long_lat(args: &[Bytes]) -> CmdResult<(f64, f64)> {
    let longitude = double_arg(&args[0], None)?;
    let latitude = double_arg(&args[1], None)?;
    if !(LONG_MIN..=LONG_MAX).contains(&longitude) || !(LAT_MIN..=LAT_MAX).contains(&latitude) {
        return Err(Error::owned(format!(
            "ERR invalid longitude,latitude pair {longitude:.6},{latitude:.6}"
        )));
    }
    Ok((longitude, latitude))
}

/// Metres per unit.
fn unit(arg: &[u8]) -> CmdResult<f64> {
    if word_is(arg, "m") {
        Ok(1.0)
    } else if word_is(arg, "km") {
        Ok(1000.0)
    } else if word_is(arg, "ft") {
        Ok(0.3048)
    } else if word_is(arg, "mi") {
        Ok(1609.34)
    } else {
        Err(Error::msg(
            "ERR unsupported unit provided. please use M, KM, FT, MI",
        ))
    }
}

/// `radius unit`.
fn radius_args(args: &[Bytes]) -> CmdResult<(f64, f64)> {
    let radius = double_arg(&args[0], Some("need numeric radius"))?;
    if radius < 0.0 {
        return Err(Error::msg("ERR radius cannot be negative"));
    }
    Ok((radius, unit(&args[1])?))
}

/// `width height unit`.
fn box_args(args: &[Bytes]) -> CmdResult<(f64, f64, f64)> {
    let width = double_arg(&args[0], Some("need numeric width"))?;
    let height = double_arg(&args[1], Some("need numeric height"))?;
    if height < 0.0 || width < 0.0 {
        return Err(Error::msg("ERR height or width cannot be negative"));
    }
    Ok((width, height, unit(&args[2])?))
}

// ---------------------------------------------------------------------------------------------
// Commands
// ---------------------------------------------------------------------------------------------

/// GEOADD key [NX|XX] [CH] lon lat member …: ZADD with each position's score.
fn geoadd(ctx: &mut Ctx<'_>) -> CmdResult {
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
            v.push(crate::model::write_stream::int_arg(score as i64));
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

fn geodist(ctx: &mut Ctx<'_>) -> CmdResult {
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
fn geohash(ctx: &mut Ctx<'_>) -> CmdResult {
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

/// Writes a coordinate: a bulk string in RESP2, a double in RESP3.
fn write_coordinate(ctx: &mut Ctx<'_>, v: f64) {
    let text = format_coordinate(v);
    if ctx.out.is_resp3() {
        let buf = ctx.out.buffer();
        buf.extend_from_slice(b",");
        buf.extend_from_slice(text.as_bytes());
        buf.extend_from_slice(b"\r\n");
    } else {
        ctx.out.bulk(text.as_bytes());
    }
}

fn geopos(ctx: &mut Ctx<'_>) -> CmdResult {
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

fn georadius(ctx: &mut Ctx<'_>) -> CmdResult {
    radius_generic(
        ctx,
        1,
        Kind::Radius {
            store_allowed: true,
        },
    )
}

fn georadius_ro(ctx: &mut Ctx<'_>) -> CmdResult {
    radius_generic(
        ctx,
        1,
        Kind::Radius {
            store_allowed: false,
        },
    )
}

fn georadiusbymember(ctx: &mut Ctx<'_>) -> CmdResult {
    radius_generic(
        ctx,
        1,
        Kind::ByMember {
            store_allowed: true,
        },
    )
}

fn georadiusbymember_ro(ctx: &mut Ctx<'_>) -> CmdResult {
    radius_generic(
        ctx,
        1,
        Kind::ByMember {
            store_allowed: false,
        },
    )
}

fn geosearch(ctx: &mut Ctx<'_>) -> CmdResult {
    radius_generic(ctx, 1, Kind::Search { store: false })
}

fn geosearchstore(ctx: &mut Ctx<'_>) -> CmdResult {
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

const RO_ACCESS: u16 = flag::RO | flag::ACCESS;

const WRITE: Flags = Flags::WRITE.union(Flags::DENYOOM);

const RADIUS_COMPLEXITY: &str = "O(N+log(M)) where N is the number of elements inside the bounding box of the circular area delimited by center and radius and M is the number of items inside the index.";

const SEARCH_COMPLEXITY: &str = "O(N+log(M)) where N is the number of elements in the grid-aligned bounding box area around the shape provided as the filter and M is the number of items inside the shape";

static RADIUS_KEYS: &[KeySpec] = &[
    KeySpec::single(1, RO_ACCESS),
    KeySpec::after_keyword("STORE", 6, flag::OW | flag::UPDATE),
    KeySpec::after_keyword("STOREDIST", 6, flag::OW | flag::UPDATE),
];

static BYMEMBER_KEYS: &[KeySpec] = &[
    KeySpec::single(1, RO_ACCESS),
    KeySpec::after_keyword("STORE", 5, flag::OW | flag::UPDATE),
    KeySpec::after_keyword("STOREDIST", 5, flag::OW | flag::UPDATE),
];

const fn geo(
    name: &'static str,
    arity: i32,
    handler: crate::kernel::table::Handler,
) -> CommandSpec {
    CommandSpec::new(name, arity, handler).acl(Acl::GEO)
}

pub static COMMANDS: &[CommandSpec] = &[
    geo("geoadd", -5, geoadd)
        .flags(WRITE)
        .keys(&[KeySpec::single(1, flag::RW | flag::UPDATE)])
        .doc(
            "geo",
            "3.2.0",
            "O(log(N)) for each item added, where N is the number of elements in the sorted set.",
            "Adds members with their longitude and latitude to a geospatial index (a sorted set).",
            "key [condition=(NX|XX)] [CH] data=(longitude:double latitude:double member)...",
        ),
    geo("geodist", -4, geodist)
        .flags(Flags::READONLY)
        .keys(&[KeySpec::single(1, RO_ACCESS)])
        .doc(
            "geo",
            "3.2.0",
            "O(log(N))",
            "Returns the distance between two members of a geospatial index.",
            "key member1 member2 [unit=(M|KM|FT|MI)]",
        ),
    geo("geohash", -2, geohash)
        .flags(Flags::READONLY)
        .keys(&[KeySpec::single(1, RO_ACCESS)])
        .doc(
            "geo",
            "3.2.0",
            "O(log(N)) for each member requested, where N is the number of elements in the sorted set.",
            "Returns the standard 11-character geohash string of members of a geospatial index.",
            "key member...",
        ),
    geo("geopos", -2, geopos)
        .flags(Flags::READONLY)
        .keys(&[KeySpec::single(1, RO_ACCESS)])
        .doc(
            "geo",
            "3.2.0",
            "O(N) where N is the number of members requested.",
            "Returns the longitude and latitude of members of a geospatial index.",
            "key member...",
        ),
    geo("georadius", -6, georadius)
        .flags(WRITE)
        .keys(RADIUS_KEYS)
        .doc(
            "geo",
            "3.2.0",
            RADIUS_COMPLEXITY,
            "Returns (or stores) the members of a geospatial index within a radius of a position.",
            concat!(
                "key longitude:double latitude:double radius:double ",
                "unit=(M|KM|FT|MI) [WITHCOORD] [WITHDIST] [WITHHASH] [count-block=(COUNT count:integer [ANY])] [order=(ASC|DESC)]",
                " [STORE key:key] [STOREDIST key:key]"
            ),
        ),
    geo("georadius_ro", -6, georadius_ro)
        .flags(Flags::READONLY)
        .keys(&[KeySpec::single(1, RO_ACCESS)])
        .doc(
            "geo",
            "3.2.10",
            RADIUS_COMPLEXITY,
            "Returns the members of a geospatial index within a radius of a position.",
            concat!(
                "key longitude:double latitude:double radius:double ",
                "unit=(M|KM|FT|MI) [WITHCOORD] [WITHDIST] [WITHHASH] [count-block=(COUNT count:integer [ANY])] [order=(ASC|DESC)]"
            ),
        ),
    geo("georadiusbymember", -5, georadiusbymember)
        .flags(WRITE)
        .keys(BYMEMBER_KEYS)
        .doc(
            "geo",
            "3.2.0",
            RADIUS_COMPLEXITY,
            "Returns (or stores) the members of a geospatial index within a radius of one of its members.",
            concat!(
                "key member radius:double ",
                "unit=(M|KM|FT|MI) [WITHCOORD] [WITHDIST] [WITHHASH] [count-block=(COUNT count:integer [ANY])] [order=(ASC|DESC)]",
                " [STORE key:key] [STOREDIST key:key]"
            ),
        ),
    geo("georadiusbymember_ro", -5, georadiusbymember_ro)
        .flags(Flags::READONLY)
        .keys(&[KeySpec::single(1, RO_ACCESS)])
        .doc(
            "geo",
            "3.2.10",
            RADIUS_COMPLEXITY,
            "Returns the members of a geospatial index within a radius of one of its members.",
            concat!(
                "key member radius:double ",
                "unit=(M|KM|FT|MI) [WITHCOORD] [WITHDIST] [WITHHASH] [count-block=(COUNT count:integer [ANY])] [order=(ASC|DESC)]"
            ),
        ),
    geo("geosearch", -7, geosearch)
        .flags(Flags::READONLY)
        .keys(&[KeySpec::single(1, RO_ACCESS)])
        .doc(
            "geo",
            "6.2.0",
            SEARCH_COMPLEXITY,
            "Returns the members of a geospatial index within a circle or box around a position or member.",
            concat!(
                "key from=(FROMMEMBER member|FROMLONLAT (longitude:double latitude:double)) by=(circle=(BYRADIUS radius:double unit=(M|KM|FT|MI))|box=(BYBOX width:double height:double unit=(M|KM|FT|MI))) [order=(ASC|DESC)] [count-block=(COUNT count:integer [ANY])]",
                " [WITHCOORD] [WITHDIST] [WITHHASH]"
            ),
        ),
    geo("geosearchstore", -8, geosearchstore)
        .flags(WRITE)
        .keys(&[
            KeySpec::single(1, flag::OW | flag::UPDATE),
            KeySpec::single(2, RO_ACCESS),
        ])
        .doc(
            "geo",
            "6.2.0",
            SEARCH_COMPLEXITY,
            "Stores the members of a geospatial index within a circle or box around a position or member.",
            concat!(
                "destination:key source:key from=(FROMMEMBER member|FROMLONLAT (longitude:double latitude:double)) by=(circle=(BYRADIUS radius:double unit=(M|KM|FT|MI))|box=(BYBOX width:double height:double unit=(M|KM|FT|MI))) [order=(ASC|DESC)] [count-block=(COUNT count:integer [ANY])]",
                " [STOREDIST]"
            ),
        ),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spread_and_squash_are_inverse() {
        for v in [0u32, 1, 0x2aaa_aaaa, 0x03ff_ffff, u32::MAX, 123_456_789] {
            assert_eq!(squash(spread(v)), v);
            assert_eq!(spread(v) & 0xaaaa_aaaa_aaaa_aaaa, 0);
        }
    }

    #[test]
    fn a_position_decodes_to_the_centre_of_its_cell() {
        let cell = encode(LONG_RANGE, LAT_RANGE, 13.361389, 38.115556, 26).unwrap();
        let score = align52(cell);
        // Redis stores Palermo at this score (GEOADD then ZSCORE).
        assert_eq!(score, 3479099956230698);
        let (lon, lat) = decode_score(score as f64).unwrap();
        assert!((lon - 13.361389).abs() < 1e-5 && (lat - 38.115556).abs() < 1e-5);
    }

    #[test]
    fn distances_print_with_four_decimals_rounding_half_to_even() {
        assert_eq!(format_distance(0.0), "0.0000");
        assert_eq!(format_distance(166274.15156960033), "166274.1516");
        assert_eq!(format_distance(0.00005), "0.0000");
        assert_eq!(format_distance(-1.5), "-1.5000");
    }

    #[test]
    fn coordinates_print_like_percent_17lf_trimmed() {
        assert_eq!(
            format_coordinate(13.361_389_338_970_184),
            "13.36138933897018433"
        );
        assert_eq!(format_coordinate(1.0), "1");
        assert_eq!(format_coordinate(-0.0), "0");
        assert_eq!(format_coordinate(0.5), "0.5");
    }

    #[test]
    fn neighbours_step_across_cell_edges() {
        let cell = Cell {
            bits: 0b0000,
            step: 2,
        };
        let east = neighbour(cell, 1, 0);
        assert_eq!(squash(east.bits >> 1), 1);
        assert_eq!(squash(east.bits), 0);
        let north = neighbour(cell, 0, 1);
        assert_eq!(squash(north.bits), 1);
        // West of the first column wraps around to the last.
        let west = neighbour(cell, -1, 0);
        assert_eq!(squash(west.bits >> 1), 3);
    }
}
