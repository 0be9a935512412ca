//! `bit`: LuaBitOp as Redis bundles it. Every operation works on 32-bit integers and returns a
//! signed 32-bit result as a Lua number. Lua 5.1 numbers are doubles, so each argument is first
//! normalised the way LuaBitOp does it: add 2^52+2^51 and keep the low 32 bits of the double's
//! representation. That rounds to nearest-even (0.5 → 0, 1.5 → 2) and wraps modulo 2^32
//! (2^32+1 → 1), and gives 0 for NaN and infinities; we reproduce it bit for bit rather than
//! with integer casts, which would differ on all of those.

use mlua::{Lua, MultiValue, Table, Value};

use super::{arg, function, to_number, typename, LResult};

/// LuaBitOp's `barg`: the argument normalised to 32 bits. Like the C code, a type error is only
/// raised when the normalised value is 0 and the argument is not a number (`lua_tonumber` gave
/// 0 for it), so the check order matches the C library's.
fn barg(lua: &Lua, args: &[Value], n: usize) -> LResult<u32> {
    let x = to_number(lua, args.get(n - 1))?;
    let b = tobit(x.unwrap_or(0.0));
    if b == 0 && x.is_none() {
        return Err(arg(
            n,
            format!("number expected, got {}", typename(args.get(n - 1))),
        ));
    }
    Ok(b)
}

/// The 2^52+2^51 trick: the low 32 bits of the sum's IEEE representation.
pub fn tobit(x: f64) -> u32 {
    (x + 6755399441055744.0).to_bits() as u32
}

/// LuaBitOp's `BRET`: the result as a signed 32-bit number.
fn ret(b: u32) -> LResult<MultiValue> {
    Ok(MultiValue::from_vec(vec![Value::Number(b as i32 as f64)]))
}

pub fn open(lua: &Lua) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    t.set(
        "tobit",
        function(lua, |lua, a| ret(barg(lua, &a.into_vec(), 1)?))?,
    )?;
    t.set(
        "bnot",
        function(lua, |lua, a| ret(!barg(lua, &a.into_vec(), 1)?))?,
    )?;
    t.set(
        "bswap",
        function(lua, |lua, a| ret(barg(lua, &a.into_vec(), 1)?.swap_bytes()))?,
    )?;
    t.set("tohex", function(lua, tohex)?)?;
    // band/bor/bxor fold the arguments from the last down to the second, as the C loop does, so
    // the first bad argument reported is the same one.
    for (name, op) in [
        ("band", (|a, b| a & b) as fn(u32, u32) -> u32),
        ("bor", |a, b| a | b),
        ("bxor", |a, b| a ^ b),
    ] {
        t.set(
            name,
            function(lua, move |lua, a| {
                let a = a.into_vec();
                let mut b = barg(lua, &a, 1)?;
                for i in (2..=a.len()).rev() {
                    b = op(b, barg(lua, &a, i)?);
                }
                ret(b)
            })?,
        )?;
    }
    // Shift counts are taken modulo 32.
    for (name, op) in [
        ("lshift", (|b: u32, n: u32| b << n) as fn(u32, u32) -> u32),
        ("rshift", |b, n| b >> n),
        ("arshift", |b, n| ((b as i32) >> n) as u32),
        ("rol", |b, n| b.rotate_left(n)),
        ("ror", |b, n| b.rotate_right(n)),
    ] {
        t.set(
            name,
            function(lua, move |lua, a| {
                let a = a.into_vec();
                let b = barg(lua, &a, 1)?;
                let n = barg(lua, &a, 2)? & 31;
                ret(op(b, n))
            })?,
        )?;
    }
    Ok(t)
}

/// `bit.tohex(x [, n])`: `n` digits (default 8, at most 8), upper-case when `n` is negative.
fn tohex(lua: &Lua, a: MultiValue) -> LResult<MultiValue> {
    let a = a.into_vec();
    let mut b = barg(lua, &a, 1)?;
    let mut n: i64 = if a.len() < 2 {
        8
    } else {
        barg(lua, &a, 2)? as i32 as i64
    };
    let digits: &[u8; 16] = if n < 0 {
        n = -n;
        b"0123456789ABCDEF"
    } else {
        b"0123456789abcdef"
    };
    let n = n.min(8) as usize;
    let mut buf = vec![0u8; n];
    for i in (0..n).rev() {
        buf[i] = digits[(b & 15) as usize];
        b >>= 4;
    }
    Ok(MultiValue::from_vec(vec![Value::String(
        lua.create_string(&buf)?,
    )]))
}
