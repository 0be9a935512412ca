//! `cmsgpack`: lua-cmsgpack 0.4.0 as Redis 7.0 bundles it — `pack`, `unpack`, `unpack_one`,
//! `unpack_limit` and the `_NAME`/`_VERSION`/`_COPYRIGHT`/`_DESCRIPTION` strings.
//!
//! Its choices are part of the bytes scripts produce, so they are kept: a number that converts
//! to int64 and back unchanged packs as the smallest integer type, any other as float32 when the
//! float32 is exact and float64 otherwise; strings pack as fixstr/str8/str16/str32; a table is an
//! array only when its keys are exactly 1..n (each fitting a C int), otherwise a map in `next`
//! order; tables nested 16 deep pack as nil (that is how the library survives cycles); and values
//! it cannot represent (functions, userdata, threads) pack as nil. Unpacking knows the types this
//! version knew — not bin, ext or fixext, which are "Bad data format" — reads uint64 through a
//! signed 64-bit integer as the C code does, and emulates the `lua_checkstack` limits that make
//! very long streams fail with the C library's messages.

use mlua::{Lua, MultiValue, Table, Value};

use super::{arg, check_integer, check_string, f64_to_i64_x86, function, many, msg, Fail, LResult};

/// Lua 5.1's `LUAI_MAXCSTACK`.
const MAXCSTACK: usize = 8000;
/// `LUACMSGPACK_MAX_NESTING`.
const MAX_NESTING: usize = 16;

pub fn open(lua: &Lua) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    t.set("pack", function(lua, pack)?)?;
    t.set(
        "unpack",
        function(lua, |lua, a| {
            let a = a.into_vec();
            unpack_full(lua, &a, 0, 0)
        })?,
    )?;
    t.set(
        "unpack_one",
        function(lua, |lua, a| {
            let a = a.into_vec();
            let offset = opt_int(lua, &a, 2)?;
            unpack_full(lua, &a, 1, offset)
        })?,
    )?;
    t.set(
        "unpack_limit",
        function(lua, |lua, a| {
            let a = a.into_vec();
            let limit = check_integer(lua, &a, 2)? as i32;
            let offset = opt_int(lua, &a, 3)?;
            unpack_full(lua, &a, limit, offset)
        })?,
    )?;
    t.set("_NAME", "cmsgpack")?;
    t.set("_VERSION", "lua-cmsgpack 0.4.0")?;
    t.set("_COPYRIGHT", "Copyright (C) 2012, Salvatore Sanfilippo")?;
    t.set("_DESCRIPTION", "MessagePack C implementation for Lua")?;
    Ok(t)
}

/// `luaL_optinteger(L, n, 0)` stored in a C int.
fn opt_int(lua: &Lua, a: &[Value], n: usize) -> LResult<i32> {
    match a.get(n - 1) {
        None | Some(Value::Nil) => Ok(0),
        Some(_) => Ok(check_integer(lua, a, n)? as i32),
    }
}

fn overflow(what: &str) -> Fail {
    msg(format!("stack overflow ({what})"))
}

// ------------------------------------------------------------------------------------------
// Packing

fn encode_int(out: &mut Vec<u8>, n: i64) {
    if n >= 0 {
        if n <= 127 {
            out.push(n as u8);
        } else if n <= 0xff {
            out.extend_from_slice(&[0xcc, n as u8]);
        } else if n <= 0xffff {
            out.push(0xcd);
            out.extend_from_slice(&(n as u16).to_be_bytes());
        } else if n <= 0xffff_ffff {
            out.push(0xce);
            out.extend_from_slice(&(n as u32).to_be_bytes());
        } else {
            out.push(0xcf);
            out.extend_from_slice(&(n as u64).to_be_bytes());
        }
    } else if n >= -32 {
        out.push(n as i8 as u8);
    } else if n >= -128 {
        out.extend_from_slice(&[0xd0, n as i8 as u8]);
    } else if n >= -32768 {
        out.push(0xd1);
        out.extend_from_slice(&(n as i16).to_be_bytes());
    } else if n >= -2147483648 {
        out.push(0xd2);
        out.extend_from_slice(&(n as i32).to_be_bytes());
    } else {
        out.push(0xd3);
        out.extend_from_slice(&n.to_be_bytes());
    }
}

fn encode_number(out: &mut Vec<u8>, n: f64) {
    // IS_INT64_EQUIVALENT: the x86-64 conversion to int64 gives the number back.
    if !n.is_infinite() && f64_to_i64_x86(n) as f64 == n {
        encode_int(out, f64_to_i64_x86(n));
    } else {
        let f = n as f32;
        if f as f64 == n {
            out.push(0xca);
            out.extend_from_slice(&f.to_be_bytes());
        } else {
            out.push(0xcb);
            out.extend_from_slice(&n.to_be_bytes());
        }
    }
}

fn encode_header(out: &mut Vec<u8>, n: usize, fix: u8, fixmax: usize, b16: u8, b32: u8) {
    if n <= fixmax {
        out.push(fix | n as u8);
    } else if n <= 0xffff {
        out.push(b16);
        out.extend_from_slice(&(n as u16).to_be_bytes());
    } else {
        out.push(b32);
        out.extend_from_slice(&(n as u32).to_be_bytes());
    }
}

fn encode_bytes(out: &mut Vec<u8>, s: &[u8]) {
    let len = s.len();
    if len < 32 {
        out.push(0xa0 | len as u8);
    } else if len <= 0xff {
        out.extend_from_slice(&[0xd9, len as u8]);
    } else if len <= 0xffff {
        out.push(0xda);
        out.extend_from_slice(&(len as u16).to_be_bytes());
    } else {
        out.push(0xdb);
        out.extend_from_slice(&(len as u32).to_be_bytes());
    }
    out.extend_from_slice(s);
}

fn number_of(v: &Value) -> Option<f64> {
    match v {
        Value::Integer(i) => Some(*i as f64),
        Value::Number(n) => Some(*n),
        _ => None,
    }
}

/// `table_is_an_array`: keys exactly 1..n, each a positive number equal to its C `int`.
fn is_array(t: &Table) -> LResult<bool> {
    let (mut count, mut max) = (0i32, 0i32);
    for pair in t.pairs::<Value, Value>() {
        let (k, _) = pair?;
        let Some(n) = number_of(&k) else {
            return Ok(false);
        };
        if n <= 0.0 || !(n < 2147483648.0 && n.trunc() == n) {
            return Ok(false);
        }
        max = max.max(n as i32);
        count += 1;
    }
    Ok(max == count)
}

/// `mp_encode_lua_type` for `v` at nesting `level`, sitting at C stack height `height`.
fn encode_value(out: &mut Vec<u8>, v: &Value, level: usize, height: usize) -> LResult<()> {
    super::deep(|| encode_value_inner(out, v, level, height))
}

fn encode_value_inner(out: &mut Vec<u8>, v: &Value, level: usize, height: usize) -> LResult<()> {
    match v {
        Value::String(s) => encode_bytes(out, &s.as_bytes()),
        Value::Boolean(b) => out.push(if *b { 0xc3 } else { 0xc2 }),
        Value::Integer(_) | Value::Number(_) => encode_number(out, number_of(v).unwrap_or(0.0)),
        Value::Table(t) if level < MAX_NESTING => {
            if height + 2 > MAXCSTACK {
                return Err(overflow("in function table_is_an_array"));
            }
            if is_array(t)? {
                if height + 1 > MAXCSTACK {
                    return Err(overflow("in function mp_encode_lua_table_as_array"));
                }
                let len = t.raw_len();
                encode_header(out, len, 0x90, 15, 0xdc, 0xdd);
                for j in 1..=len {
                    let e: Value = t.raw_get(j)?;
                    encode_value(out, &e, level + 1, height + 1)?;
                }
            } else {
                if height + 3 > MAXCSTACK {
                    return Err(overflow("in function mp_encode_lua_table_as_map"));
                }
                let len = t.pairs::<Value, Value>().count();
                encode_header(out, len, 0x80, 15, 0xde, 0xdf);
                for pair in t.pairs::<Value, Value>() {
                    let (k, e) = pair?;
                    encode_value(out, &k, level + 1, height + 3)?;
                    encode_value(out, &e, level + 1, height + 2)?;
                }
            }
        }
        _ => out.push(0xc0),
    }
    Ok(())
}

fn pack(lua: &Lua, a: MultiValue) -> LResult<MultiValue> {
    let a = a.into_vec();
    let nargs = a.len();
    if nargs == 0 {
        return Err(arg(0, "MessagePack pack needs input."));
    }
    if nargs + nargs > MAXCSTACK {
        return Err(arg(0, "Too many arguments for MessagePack pack."));
    }
    let mut out = Vec::new();
    for (i, v) in a.iter().enumerate() {
        encode_value(&mut out, v, 0, nargs + i + 1)?;
    }
    Ok(MultiValue::from_vec(vec![Value::String(
        lua.create_string(&out)?,
    )]))
}

// ------------------------------------------------------------------------------------------
// Unpacking

enum CurErr {
    Eof,
    BadFmt,
    /// An error raised on the spot (stack overflow, a nil or NaN table key).
    Raised(Fail),
}

impl From<mlua::Error> for CurErr {
    fn from(e: mlua::Error) -> Self {
        CurErr::Raised(Fail::Lua(e))
    }
}

struct Cursor<'a> {
    data: &'a [u8],
    p: usize,
    /// The tables being filled (at `2*level`) and a map's pending key (`2*level+1`): kept in a
    /// Lua table because every value a Rust frame holds is one of mlua's ~8000 references, and
    /// arrays may nest thousands deep.
    spine: Table,
    level: i64,
}

impl Cursor<'_> {
    fn left(&self) -> usize {
        self.data.len() - self.p
    }

    fn need(&self, n: usize) -> Result<(), CurErr> {
        if self.left() < n {
            Err(CurErr::Eof)
        } else {
            Ok(())
        }
    }

    fn be(&self, from: usize, n: usize) -> u64 {
        self.data[self.p + from..self.p + from + n]
            .iter()
            .fold(0u64, |acc, &b| (acc << 8) | b as u64)
    }

    /// Reads `n` bytes after a `hdr`-byte header as a string.
    fn bytes(&mut self, lua: &Lua, hdr: usize, n: usize) -> Result<Value, CurErr> {
        self.need(hdr.saturating_add(n))?;
        let s = lua.create_string(&self.data[self.p + hdr..self.p + hdr + n])?;
        self.p += hdr + n;
        Ok(Value::String(s))
    }

    fn array(&mut self, lua: &Lua, len: u64, height: usize) -> Result<Value, CurErr> {
        if height + 1 > MAXCSTACK {
            return Err(CurErr::Raised(overflow(
                "in function mp_decode_to_lua_array",
            )));
        }
        self.level += 1;
        let slot = 2 * self.level;
        self.spine.raw_set(slot, lua.create_table()?)?;
        for i in 1..=len {
            let v = self.value(lua, height + 2)?;
            self.spine.raw_get::<Table>(slot)?.raw_set(i as f64, v)?;
        }
        self.level -= 1;
        Ok(self.spine.raw_get(slot)?)
    }

    fn map(&mut self, lua: &Lua, len: u64, height: usize) -> Result<Value, CurErr> {
        self.level += 1;
        let slot = 2 * self.level;
        self.spine.raw_set(slot, lua.create_table()?)?;
        for _ in 0..len {
            let k = self.value(lua, height + 1)?;
            self.spine.raw_set(slot + 1, k)?;
            let v = self.value(lua, height + 2)?;
            let k: Value = self.spine.raw_get(slot + 1)?;
            match &k {
                Value::Nil => {
                    return Err(CurErr::Raised(Fail::Raw(b"table index is nil".to_vec())))
                }
                Value::Number(n) if n.is_nan() => {
                    return Err(CurErr::Raised(Fail::Raw(b"table index is NaN".to_vec())))
                }
                _ => self.spine.raw_get::<Table>(slot)?.raw_set(k, v)?,
            }
        }
        self.level -= 1;
        Ok(self.spine.raw_get(slot)?)
    }

    /// `mp_decode_to_lua_type`; the value will sit at C stack height `height`.
    fn value(&mut self, lua: &Lua, height: usize) -> Result<Value, CurErr> {
        // Arrays nest as deep as the 8000-slot stack allows: grow the stack rather than overflow.
        super::deep(|| self.value_inner(lua, height))
    }

    fn value_inner(&mut self, lua: &Lua, height: usize) -> Result<Value, CurErr> {
        self.need(1)?;
        if height > MAXCSTACK {
            return Err(CurErr::Raised(overflow(
                "too many return values at once; use unpack_one or unpack_limit instead.",
            )));
        }
        let num = |x: f64| Ok(Value::Number(x));
        let b = self.data[self.p];
        let fixed = |c: &mut Self, n: usize| -> Result<u64, CurErr> {
            c.need(n + 1)?;
            let v = c.be(1, n);
            c.p += n + 1;
            Ok(v)
        };
        match b {
            0xcc => num(fixed(self, 1)? as f64),
            0xd0 => num(fixed(self, 1)? as u8 as i8 as f64),
            0xcd => num(fixed(self, 2)? as f64),
            0xd1 => num(fixed(self, 2)? as u16 as i16 as f64),
            0xce => num(fixed(self, 4)? as f64),
            0xd2 => num(fixed(self, 4)? as u32 as i32 as f64),
            // The C code pushes uint64 through lua_Integer: it comes back signed.
            0xcf | 0xd3 => num(fixed(self, 8)? as i64 as f64),
            0xc0 => {
                self.p += 1;
                Ok(Value::Nil)
            }
            0xc2 | 0xc3 => {
                self.p += 1;
                Ok(Value::Boolean(b == 0xc3))
            }
            0xca => num(f32::from_bits(fixed(self, 4)? as u32) as f64),
            0xcb => num(f64::from_bits(fixed(self, 8)?)),
            0xd9 => {
                self.need(2)?;
                let l = self.be(1, 1) as usize;
                self.bytes(lua, 2, l)
            }
            0xda => {
                self.need(3)?;
                let l = self.be(1, 2) as usize;
                self.bytes(lua, 3, l)
            }
            0xdb => {
                self.need(5)?;
                let l = self.be(1, 4) as usize;
                self.bytes(lua, 5, l)
            }
            0xdc => {
                let l = fixed(self, 2)?;
                self.array(lua, l, height)
            }
            0xdd => {
                let l = fixed(self, 4)?;
                self.array(lua, l, height)
            }
            0xde => {
                let l = fixed(self, 2)?;
                self.map(lua, l, height)
            }
            0xdf => {
                let l = fixed(self, 4)?;
                self.map(lua, l, height)
            }
            _ if b & 0x80 == 0 => {
                self.p += 1;
                num(b as f64)
            }
            _ if b & 0xe0 == 0xe0 => {
                self.p += 1;
                num(b as i8 as f64)
            }
            _ if b & 0xe0 == 0xa0 => self.bytes(lua, 1, (b & 0x1f) as usize),
            _ if b & 0xf0 == 0x90 => {
                self.p += 1;
                self.array(lua, (b & 0xf) as u64, height)
            }
            _ if b & 0xf0 == 0x80 => {
                self.p += 1;
                self.map(lua, (b & 0xf) as u64, height)
            }
            _ => Err(CurErr::BadFmt),
        }
    }
}

/// `mp_unpack_full`: `limit` values from `offset` (both 0: everything, without the offset).
fn unpack_full(lua: &Lua, a: &[Value], limit: i32, offset: i32) -> LResult<MultiValue> {
    let s = check_string(lua, a, 1)?;
    let s = s.as_bytes();
    let len = s.len();
    let decode_all = limit == 0 && offset == 0;
    if offset < 0 || limit < 0 {
        // The C code prints the input length where it means the limit.
        return Err(msg(format!(
            "Invalid request to unpack with offset of {offset} and limit of {}.",
            len as i32
        )));
    } else if offset as usize > len {
        return Err(msg(format!(
            "Start offset {offset} greater than input length {}.",
            len as i32
        )));
    }
    let limit = if decode_all { i32::MAX } else { limit };
    let mut c = Cursor {
        data: &s[offset as usize..],
        p: 0,
        spine: lua.create_table()?,
        level: 0,
    };
    // The results go straight into a table: holding thousands of them in Rust would exhaust
    // mlua's references. Slot 1 is kept for the offset unpack_one/unpack_limit return first.
    let results = lua.create_table()?;
    let first = if decode_all { 1 } else { 2 };
    let mut n: usize = 0;
    while c.left() > 0 && (n as i64) < limit as i64 {
        // The argument string is below the results on the C stack.
        match c.value(lua, n + 2) {
            Ok(v) => results.raw_set(first + n, v)?,
            Err(CurErr::Eof) => return Err(msg("Missing bytes in input.")),
            Err(CurErr::BadFmt) => return Err(msg("Bad data format in input.")),
            Err(CurErr::Raised(f)) => return Err(f),
        }
        n += 1;
    }
    if !decode_all {
        let next = if c.left() == 0 {
            -1.0
        } else {
            (len - c.left()) as i32 as f64
        };
        results.raw_set(1, next)?;
        n += 1;
    }
    many(results, n)
}
