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
//!
//! The handlers are in `points` (GEOADD, GEODIST, GEOHASH, GEOPOS) and `search` (the GEORADIUS and
//! GEOSEARCH family), the arithmetic in `hash`; this module keeps the argument readers they share and
//! the command table at its end.

mod hash;
mod points;
mod search;

use bytes::Bytes;

use crate::base::cstr::word_is;
use crate::base::error::{CmdResult, Error};
use crate::kernel::ctx::Ctx;
use crate::kernel::table::keys::flag;
use crate::kernel::table::{Acl, CommandSpec, Flags, KeySpec};

use super::zsets::parse_double;

use hash::{format_coordinate, LAT_MAX, LAT_MIN, LONG_MAX, LONG_MIN};
use points::{geoadd, geodist, geohash, geopos};
use search::{
    georadius, georadius_ro, georadiusbymember, georadiusbymember_ro, geosearch, geosearchstore,
};

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
