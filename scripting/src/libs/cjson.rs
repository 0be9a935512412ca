//! `cjson`: lua-cjson 2.1.0 as Redis 7.0 bundles it — `encode`, `decode`, `new`, the
//! configuration functions, `null`, `_NAME` and `_VERSION`, the same set as redis-server
//! 7.0.15's `cjson` table.
//!
//! What scripts can observe is reproduced, not just "valid JSON": numbers are printed with C's
//! `%.14g` (precision configurable), `/` and DEL are escaped, tables are arrays only when every
//! key is a positive integer and the array is not "excessively sparse", an empty table is `{}`,
//! keys come out in Lua's `next` order (we iterate the same Lua tables with the same `lua_next`),
//! and decoding follows the C tokenizer byte for byte — input ends at the first NUL as a C string
//! does, numbers are read by (an emulation of) glibc's `strtod`, so `0x10`, `+1`, `nan` and
//! `Infinity` are accepted as the C library accepts them, and every error message and character
//! position is the C library's. The nesting checks also emulate `lua_checkstack`'s 8000-slot
//! limit, which is what stops deep structures when the depth limits are raised.

use std::cell::Cell;
use std::rc::Rc;

use mlua::{Function, LightUserData, Lua, MultiValue, Table, Value};

use super::{arg, check_integer, check_string, function, msg, typename, Fail, LResult};

/// Lua 5.1's `LUAI_MAXCSTACK`: the most stack slots one C function may use.
const MAXCSTACK: usize = 8000;

/// One cjson instance's configuration (`cjson.new()` makes another).
struct Config {
    encode_sparse_convert: Cell<i32>,
    encode_sparse_ratio: Cell<i32>,
    encode_sparse_safe: Cell<i32>,
    encode_max_depth: Cell<i32>,
    decode_max_depth: Cell<i32>,
    encode_invalid_numbers: Cell<i32>,
    decode_invalid_numbers: Cell<i32>,
    encode_keep_buffer: Cell<i32>,
    encode_number_precision: Cell<i32>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            encode_sparse_convert: Cell::new(0),
            encode_sparse_ratio: Cell::new(2),
            encode_sparse_safe: Cell::new(10),
            encode_max_depth: Cell::new(1000),
            decode_max_depth: Cell::new(1000),
            encode_invalid_numbers: Cell::new(0),
            decode_invalid_numbers: Cell::new(1),
            encode_keep_buffer: Cell::new(1),
            encode_number_precision: Cell::new(14),
        }
    }
}

/// `cjson.null`: the NULL light userdata.
fn null() -> Value {
    Value::LightUserData(LightUserData(std::ptr::null_mut()))
}

fn one(v: Value) -> LResult<MultiValue> {
    Ok(MultiValue::from_vec(vec![v]))
}

pub fn open(lua: &Lua) -> mlua::Result<Table> {
    let cfg = Rc::new(Config::default());
    let t = lua.create_table()?;
    let c = cfg.clone();
    let next = super::raw_next(lua)?;
    t.set(
        "encode",
        function(lua, move |lua, a| encode(lua, &c, &next, a))?,
    )?;
    let c = cfg.clone();
    t.set("decode", function(lua, move |lua, a| decode(lua, &c, a))?)?;
    let c = cfg.clone();
    t.set(
        "encode_sparse_array",
        function(lua, move |lua, a| {
            let a = arg_init(a, 3)?;
            let convert = enum_option(lua, &a, 1, &c.encode_sparse_convert, None)?;
            let ratio = integer_option(lua, &a, 2, &c.encode_sparse_ratio, 0, i32::MAX)?;
            let safe = integer_option(lua, &a, 3, &c.encode_sparse_safe, 0, i32::MAX)?;
            Ok(MultiValue::from_vec(vec![convert, ratio, safe]))
        })?,
    )?;
    for (name, max, field) in [
        (
            "encode_max_depth",
            i32::MAX,
            (|c: &Config| &c.encode_max_depth) as fn(&Config) -> &Cell<i32>,
        ),
        ("decode_max_depth", i32::MAX, |c| &c.decode_max_depth),
        ("encode_number_precision", 14, |c| {
            &c.encode_number_precision
        }),
    ] {
        let c = cfg.clone();
        t.set(
            name,
            function(lua, move |lua, a| {
                let a = arg_init(a, 1)?;
                one(integer_option(lua, &a, 1, field(&c), 1, max)?)
            })?,
        )?;
    }
    for (name, options, field) in [
        (
            "encode_keep_buffer",
            None,
            (|c: &Config| &c.encode_keep_buffer) as fn(&Config) -> &Cell<i32>,
        ),
        (
            "encode_invalid_numbers",
            Some(&["off", "on", "null"][..]),
            |c| &c.encode_invalid_numbers,
        ),
        ("decode_invalid_numbers", None, |c| {
            &c.decode_invalid_numbers
        }),
    ] {
        let c = cfg.clone();
        t.set(
            name,
            function(lua, move |lua, a| {
                let a = arg_init(a, 1)?;
                one(enum_option(lua, &a, 1, field(&c), options)?)
            })?,
        )?;
    }
    t.set(
        "new",
        function(lua, |lua, _| one(Value::Table(open(lua)?)))?,
    )?;
    t.set("null", null())?;
    t.set("_NAME", "cjson")?;
    t.set("_VERSION", "2.1.0")?;
    Ok(t)
}

/// `json_arg_init`: at most `n` arguments, padded with nils.
fn arg_init(a: MultiValue, n: usize) -> LResult<Vec<Value>> {
    let mut a = a.into_vec();
    if a.len() > n {
        return Err(arg(n + 1, "found too many arguments"));
    }
    a.resize(n, Value::Nil);
    Ok(a)
}

/// `json_integer_option`. The range error names argument 1 whatever the option's position,
/// as the C code does.
fn integer_option(
    lua: &Lua,
    a: &[Value],
    i: usize,
    setting: &Cell<i32>,
    min: i32,
    max: i32,
) -> LResult<Value> {
    if !a[i - 1].is_nil() {
        let v = check_integer(lua, a, i)? as i32;
        if !(min <= v && v <= max) {
            return Err(arg(1, format!("expected integer between {min} and {max}")));
        }
        setting.set(v);
    }
    Ok(Value::Number(setting.get() as f64))
}

/// `json_enum_option`: a boolean, or one of the option names (default "off"/"on").
fn enum_option(
    lua: &Lua,
    a: &[Value],
    i: usize,
    setting: &Cell<i32>,
    options: Option<&[&str]>,
) -> LResult<Value> {
    let options = options.unwrap_or(&["off", "on"]);
    match &a[i - 1] {
        Value::Nil => {}
        Value::Boolean(b) => setting.set(*b as i32),
        _ => {
            let s = check_string(lua, a, i)?;
            let s = s.as_bytes();
            let name = s.split(|&c| c == 0).next().unwrap_or(&[]);
            match options.iter().position(|o| o.as_bytes() == name) {
                Some(p) => setting.set(p as i32),
                None => {
                    return Err(arg(
                        i,
                        format!("invalid option '{}'", String::from_utf8_lossy(name)),
                    ))
                }
            }
        }
    }
    let v = setting.get();
    Ok(if v == 0 || v == 1 {
        Value::Boolean(v == 1)
    } else {
        Value::String(lua.create_string(options[v as usize])?)
    })
}

// ------------------------------------------------------------------------------------------
// Encoding

/// C's `printf("%.*g", prec, x)` (glibc's output for NaN and infinities included).
pub fn fmt_g(x: f64, prec: usize) -> String {
    if x.is_nan() {
        return if x.is_sign_negative() { "-nan" } else { "nan" }.into();
    }
    if x.is_infinite() {
        return if x < 0.0 { "-inf" } else { "inf" }.into();
    }
    if x == 0.0 {
        return if x.is_sign_negative() { "-0" } else { "0" }.into();
    }
    let p = prec.max(1);
    let e = format!("{:.*e}", p - 1, x);
    let (mant, exp) = e.split_once('e').expect("exponent format");
    let exp: i32 = exp.parse().expect("exponent");
    let strip = |s: &str| -> String {
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            s.to_string()
        }
    };
    if exp < -4 || exp >= p as i32 {
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{}e{}{:02}", strip(mant), sign, exp.abs())
    } else {
        strip(&format!("{:.*}", (p as i32 - 1 - exp) as usize, x))
    }
}

fn number_of(v: &Value) -> Option<f64> {
    match v {
        Value::Integer(i) => Some(*i as f64),
        Value::Number(n) => Some(*n),
        _ => None,
    }
}

/// `json_encode_exception`.
fn exception(v: &Value, reason: &str) -> Fail {
    msg(format!(
        "Cannot serialise {}: {}",
        typename(Some(v)),
        reason
    ))
}

struct Encoder<'a> {
    cfg: &'a Config,
    out: Vec<u8>,
    /// The tables being encoded (at `2*depth`) and the key each is at (`2*depth+1`). Kept in a
    /// Lua table rather than in Rust frames: every value a Rust frame holds is an mlua reference,
    /// and mlua has only about 8000 of them, fewer than the levels a raised limit allows.
    spine: Table,
    next: Function,
}

impl Encoder<'_> {
    fn string(&mut self, s: &[u8]) {
        self.out.push(b'"');
        for &c in s {
            match c {
                b'"' => self.out.extend_from_slice(b"\\\""),
                b'\\' => self.out.extend_from_slice(b"\\\\"),
                b'/' => self.out.extend_from_slice(b"\\/"),
                b'\x08' => self.out.extend_from_slice(b"\\b"),
                b'\t' => self.out.extend_from_slice(b"\\t"),
                b'\n' => self.out.extend_from_slice(b"\\n"),
                b'\x0c' => self.out.extend_from_slice(b"\\f"),
                b'\r' => self.out.extend_from_slice(b"\\r"),
                0..=0x1f | 0x7f => self.out.extend_from_slice(format!("\\u{c:04x}").as_bytes()),
                _ => self.out.push(c),
            }
        }
        self.out.push(b'"');
    }

    /// `json_append_number`; `v` is the Lua value, for the error's type name.
    fn number(&mut self, n: f64, v: &Value) -> LResult<()> {
        match self.cfg.encode_invalid_numbers.get() {
            0 if !n.is_finite() => return Err(exception(v, "must not be NaN or Inf")),
            1 if n.is_nan() => {
                self.out.extend_from_slice(b"nan");
                return Ok(());
            }
            2 if !n.is_finite() => {
                self.out.extend_from_slice(b"null");
                return Ok(());
            }
            _ => {}
        }
        let p = self.cfg.encode_number_precision.get() as usize;
        self.out.extend_from_slice(fmt_g(n, p).as_bytes());
        Ok(())
    }

    /// `lua_array_length`: the array length, or -1 (or ≤ 0) for "encode as an object".
    fn array_length(&self, t: &Table) -> LResult<i32> {
        let mut max: i32 = 0;
        let mut items: i32 = 0;
        for pair in t.pairs::<Value, Value>() {
            let (k, _) = pair?;
            match number_of(&k) {
                Some(k) if k != 0.0 && k.floor() == k && k >= 1.0 => {
                    if k > max as f64 {
                        // `max = k` converts to C int: out of range gives INT_MIN on x86-64.
                        max = if k < 2147483648.0 { k as i32 } else { i32::MIN };
                    }
                    items = items.wrapping_add(1);
                }
                _ => return Ok(-1),
            }
        }
        let ratio = self.cfg.encode_sparse_ratio.get();
        if ratio > 0 && max > items.wrapping_mul(ratio) && max > self.cfg.encode_sparse_safe.get() {
            if self.cfg.encode_sparse_convert.get() == 0 {
                return Err(exception(
                    &Value::Table(t.clone()),
                    "excessively sparse array",
                ));
            }
            return Ok(-1);
        }
        Ok(max)
    }

    /// `json_append_data` for the value `v`, which sits at stack height `height` in the C code.
    fn value(&mut self, v: Value, depth: i32, height: usize) -> LResult<()> {
        // Raised depth limits allow nesting thousands deep: grow the stack rather than overflow.
        super::deep(|| self.value_inner(v, depth, height))
    }

    fn value_inner(&mut self, v: Value, depth: i32, height: usize) -> LResult<()> {
        match &v {
            Value::String(s) => self.string(&s.as_bytes()),
            Value::Integer(_) | Value::Number(_) => {
                self.number(number_of(&v).unwrap_or(0.0), &v)?
            }
            Value::Boolean(b) => self
                .out
                .extend_from_slice(if *b { b"true" } else { b"false" }),
            Value::Nil => self.out.extend_from_slice(b"null"),
            Value::LightUserData(p) if p.0.is_null() => self.out.extend_from_slice(b"null"),
            Value::Table(t) => {
                let depth = depth + 1;
                if depth > self.cfg.encode_max_depth.get() || height + 3 > MAXCSTACK {
                    return Err(msg(format!(
                        "Cannot serialise, excessive nesting ({depth})"
                    )));
                }
                let len = self.array_length(t)?;
                let slot = 2 * depth as i64;
                self.spine.raw_set(slot, t)?;
                drop(v);
                if len > 0 {
                    self.out.push(b'[');
                    for i in 1..=len {
                        if i > 1 {
                            self.out.push(b',');
                        }
                        let e: Value = self.spine.raw_get::<Table>(slot)?.raw_get(i)?;
                        self.value(e, depth, height + 1)?;
                    }
                    self.out.push(b']');
                } else {
                    self.out.push(b'{');
                    let mut key = Value::Nil;
                    loop {
                        let t: Table = self.spine.raw_get(slot)?;
                        let (k, e): (Value, Value) = self.next.call((t, key))?;
                        if k.is_nil() {
                            break;
                        }
                        if self.out.last() != Some(&b'{') {
                            self.out.push(b',');
                        }
                        match &k {
                            Value::Integer(_) | Value::Number(_) => {
                                self.out.push(b'"');
                                self.number(number_of(&k).unwrap_or(0.0), &k)?;
                                self.out.extend_from_slice(b"\":");
                            }
                            Value::String(s) => {
                                self.string(&s.as_bytes());
                                self.out.push(b':');
                            }
                            _ => return Err(exception(&k, "table key must be a number or string")),
                        }
                        self.spine.raw_set(slot + 1, k)?;
                        self.value(e, depth, height + 2)?;
                        key = self.spine.raw_get(slot + 1)?;
                    }
                    self.out.push(b'}');
                }
                return Ok(());
            }
            _ => return Err(exception(&v, "type not supported")),
        }
        Ok(())
    }
}

fn encode(lua: &Lua, cfg: &Config, next: &Function, a: MultiValue) -> LResult<MultiValue> {
    let a = a.into_vec();
    if a.len() != 1 {
        return Err(arg(1, "expected 1 argument"));
    }
    let mut e = Encoder {
        cfg,
        out: Vec::new(),
        spine: lua.create_table()?,
        next: next.clone(),
    };
    let v = a.into_iter().next().unwrap_or(Value::Nil);
    e.value(v, 0, 1)?;
    one(Value::String(lua.create_string(&e.out)?))
}

// ------------------------------------------------------------------------------------------
// Decoding

#[derive(Clone, Copy, PartialEq, Debug)]
enum Tok {
    ObjBegin,
    ObjEnd,
    ArrBegin,
    ArrEnd,
    Str,
    Num,
    Bool,
    Null,
    Colon,
    Comma,
    End,
    Error,
}

impl Tok {
    fn name(self) -> &'static str {
        match self {
            Tok::ObjBegin => "T_OBJ_BEGIN",
            Tok::ObjEnd => "T_OBJ_END",
            Tok::ArrBegin => "T_ARR_BEGIN",
            Tok::ArrEnd => "T_ARR_END",
            Tok::Str => "T_STRING",
            Tok::Num => "T_NUMBER",
            Tok::Bool => "T_BOOLEAN",
            Tok::Null => "T_NULL",
            Tok::Colon => "T_COLON",
            Tok::Comma => "T_COMMA",
            Tok::End => "T_END",
            Tok::Error => "T_ERROR",
        }
    }
}

struct Token {
    ty: Tok,
    /// Offset of the token (or of the error) in the input.
    index: usize,
    num: f64,
    boolean: bool,
    string: Vec<u8>,
    error: &'static str,
}

struct Parser<'a> {
    cfg: &'a Config,
    /// The input up to its first NUL: the C parser reads a C string.
    data: &'a [u8],
    ptr: usize,
    depth: i32,
    /// The tables being filled, by depth (see `Encoder::spine` for why not in Rust frames).
    spine: Table,
}

/// The value of an ASCII hex digit.
fn hexval(c: u8) -> Option<u32> {
    (c as char).to_digit(16)
}

/// How much of `s` glibc's `strtod` reads (0 when it reads nothing), and the value.
pub fn strtod(s: &[u8]) -> (usize, f64) {
    let at = |i: usize| s.get(i).copied().unwrap_or(0);
    let mut i = 0;
    while matches!(at(i), b' ' | b'\t' | b'\n' | b'\x0b' | b'\x0c' | b'\r') {
        i += 1;
    }
    let neg = at(i) == b'-';
    if matches!(at(i), b'+' | b'-') {
        i += 1;
    }
    let sign = |x: f64| if neg { -x } else { x };
    let starts =
        |i: usize, w: &[u8]| s.len() >= i + w.len() && s[i..i + w.len()].eq_ignore_ascii_case(w);
    if starts(i, b"inf") {
        let n = if starts(i, b"infinity") { i + 8 } else { i + 3 };
        return (n, sign(f64::INFINITY));
    }
    if starts(i, b"nan") {
        let mut n = i + 3;
        if at(n) == b'(' {
            let mut j = n + 1;
            while at(j).is_ascii_alphanumeric() || at(j) == b'_' {
                j += 1;
            }
            if at(j) == b')' {
                n = j + 1;
            }
        }
        return (n, sign(f64::NAN));
    }
    // Hexadecimal: "0x" then at least one hex digit (possibly after the point).
    if at(i) == b'0'
        && (at(i + 1) | 0x20) == b'x'
        && (hexval(at(i + 2)).is_some() || (at(i + 2) == b'.' && hexval(at(i + 3)).is_some()))
    {
        let mut j = i + 2;
        let mut m = 0f64;
        let mut exp: i32 = 0;
        while let Some(d) = hexval(at(j)) {
            m = m * 16.0 + d as f64;
            j += 1;
        }
        if at(j) == b'.' {
            j += 1;
            while let Some(d) = hexval(at(j)) {
                m = m * 16.0 + d as f64;
                exp -= 4;
                j += 1;
            }
        }
        if (at(j) | 0x20) == b'p' {
            let mut k = j + 1;
            let eneg = at(k) == b'-';
            if matches!(at(k), b'+' | b'-') {
                k += 1;
            }
            if at(k).is_ascii_digit() {
                let mut e: i32 = 0;
                while at(k).is_ascii_digit() {
                    e = e.saturating_mul(10).saturating_add((at(k) - b'0') as i32);
                    k += 1;
                }
                exp = exp.saturating_add(if eneg { -e } else { e });
                j = k;
            }
        }
        return (j, sign(m * 2f64.powi(exp)));
    }
    let start = i;
    let mut digits = 0;
    while at(i).is_ascii_digit() {
        i += 1;
        digits += 1;
    }
    if at(i) == b'.' {
        i += 1;
        while at(i).is_ascii_digit() {
            i += 1;
            digits += 1;
        }
    }
    if digits == 0 {
        return (0, 0.0);
    }
    if (at(i) | 0x20) == b'e' {
        let mut k = i + 1;
        if matches!(at(k), b'+' | b'-') {
            k += 1;
        }
        if at(k).is_ascii_digit() {
            while at(k).is_ascii_digit() {
                k += 1;
            }
            i = k;
        }
    }
    let text = std::str::from_utf8(&s[start..i]).expect("ASCII number");
    (i, sign(text.parse::<f64>().unwrap_or(0.0)))
}

impl Parser<'_> {
    fn at(&self, i: usize) -> u8 {
        self.data.get(i).copied().unwrap_or(0)
    }

    fn token(&self, ty: Tok, index: usize) -> Token {
        Token {
            ty,
            index,
            num: 0.0,
            boolean: false,
            string: Vec::new(),
            error: "",
        }
    }

    fn error(&self, error: &'static str) -> Token {
        Token {
            error,
            ..self.token(Tok::Error, self.ptr)
        }
    }

    /// `json_is_invalid_number`: numbers JSON forbids but strtod reads.
    fn is_invalid_number(&self) -> bool {
        let mut p = self.ptr;
        if self.at(p) == b'+' {
            return true;
        }
        if self.at(p) == b'-' {
            p += 1;
        }
        if self.at(p) == b'0' {
            let c2 = self.at(p + 1);
            return (c2 | 0x20) == b'x' || c2.is_ascii_digit();
        } else if self.at(p) <= b'9' {
            return false;
        }
        let rest = &self.data[p.min(self.data.len())..];
        let ci = |w: &[u8]| rest.len() >= 3 && rest[..3].eq_ignore_ascii_case(w);
        ci(b"inf") || ci(b"nan")
    }

    fn number_token(&mut self) -> Token {
        let (n, v) = strtod(&self.data[self.ptr..]);
        if n == 0 {
            return self.error("invalid number");
        }
        let t = Token {
            num: v,
            ..self.token(Tok::Num, self.ptr)
        };
        self.ptr += n;
        t
    }

    fn string_token(&mut self) -> Token {
        let start = self.ptr;
        self.ptr += 1;
        let mut out = Vec::new();
        loop {
            let ch = self.at(self.ptr);
            if ch == b'"' {
                break;
            }
            if ch == 0 {
                return self.error("unexpected end of string");
            }
            if ch == b'\\' {
                let c = match self.at(self.ptr + 1) {
                    b'"' => b'"',
                    b'\\' => b'\\',
                    b'/' => b'/',
                    b'b' => 8,
                    b'f' => 12,
                    b'n' => b'\n',
                    b'r' => b'\r',
                    b't' => b'\t',
                    b'u' => {
                        if self.unicode_escape(&mut out) {
                            continue;
                        }
                        return self.error("invalid unicode escape code");
                    }
                    _ => return self.error("invalid escape code"),
                };
                out.push(c);
                self.ptr += 2;
                continue;
            }
            out.push(ch);
            self.ptr += 1;
        }
        self.ptr += 1;
        Token {
            string: out,
            ..self.token(Tok::Str, start)
        }
    }

    fn hex4(&self, at: usize) -> Option<u32> {
        let mut v = 0;
        for i in 0..4 {
            v = v * 16 + hexval(self.at(at + i))?;
        }
        Some(v)
    }

    /// `json_append_unicode_escape`: `\u` and four hex digits, or a surrogate pair of them, as UTF-8.
    fn unicode_escape(&mut self, out: &mut Vec<u8>) -> bool {
        let Some(mut cp) = self.hex4(self.ptr + 2) else {
            return false;
        };
        let mut len = 6;
        if cp & 0xF800 == 0xD800 {
            if cp & 0x400 != 0 {
                return false;
            }
            if self.at(self.ptr + 6) != b'\\' || self.at(self.ptr + 7) != b'u' {
                return false;
            }
            let Some(low) = self.hex4(self.ptr + 8) else {
                return false;
            };
            if low & 0xFC00 != 0xDC00 {
                return false;
            }
            cp = (((cp & 0x3FF) << 10) | (low & 0x3FF)) + 0x10000;
            len = 12;
        }
        let mut buf = [0u8; 4];
        // Lone surrogates were rejected above, so this is a scalar value.
        let Some(c) = char::from_u32(cp) else {
            return false;
        };
        out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
        self.ptr += len;
        true
    }

    fn next_token(&mut self) -> Token {
        while matches!(self.at(self.ptr), b' ' | b'\t' | b'\r' | b'\n') {
            self.ptr += 1;
        }
        let i = self.ptr;
        let ch = self.at(i);
        let single = match ch {
            0 => return self.token(Tok::End, i),
            b'{' => Some(Tok::ObjBegin),
            b'}' => Some(Tok::ObjEnd),
            b'[' => Some(Tok::ArrBegin),
            b']' => Some(Tok::ArrEnd),
            b',' => Some(Tok::Comma),
            b':' => Some(Tok::Colon),
            b'f' | b'i' | b'I' | b'n' | b'N' | b't' | b'"' | b'+' | b'-' | b'0'..=b'9' => None,
            _ => return self.error("invalid token"),
        };
        if let Some(t) = single {
            self.ptr += 1;
            return self.token(t, i);
        }
        let rest = &self.data[i..];
        let decode_invalid = self.cfg.decode_invalid_numbers.get() != 0;
        if ch == b'"' {
            return self.string_token();
        } else if ch == b'-' || ch.is_ascii_digit() {
            if !decode_invalid && self.is_invalid_number() {
                return self.error("invalid number");
            }
            return self.number_token();
        } else if rest.starts_with(b"true") {
            self.ptr += 4;
            return Token {
                boolean: true,
                ..self.token(Tok::Bool, i)
            };
        } else if rest.starts_with(b"false") {
            self.ptr += 5;
            return self.token(Tok::Bool, i);
        } else if rest.starts_with(b"null") {
            self.ptr += 4;
            return self.token(Tok::Null, i);
        } else if decode_invalid && self.is_invalid_number() {
            return self.number_token();
        }
        self.error("invalid token")
    }

    fn parse_error(&self, expected: &str, t: &Token) -> Fail {
        let found = if t.ty == Tok::Error {
            t.error
        } else {
            t.ty.name()
        };
        msg(format!(
            "Expected {expected} but found {found} at character {}",
            t.index + 1
        ))
    }

    /// `json_decode_descend`: `height` is the C stack height before the new table.
    fn descend(&mut self, height: usize, slots: usize) -> LResult<()> {
        self.depth += 1;
        if self.depth <= self.cfg.decode_max_depth.get() && height + slots <= MAXCSTACK {
            return Ok(());
        }
        Err(msg(format!(
            "Found too many nested data structures ({}) at character {}",
            self.depth, self.ptr
        )))
    }

    fn value(&mut self, lua: &Lua, t: Token, height: usize) -> LResult<Value> {
        super::deep(|| self.value_inner(lua, t, height))
    }

    fn value_inner(&mut self, lua: &Lua, t: Token, height: usize) -> LResult<Value> {
        Ok(match t.ty {
            Tok::Str => Value::String(lua.create_string(&t.string)?),
            Tok::Num => Value::Number(t.num),
            Tok::Bool => Value::Boolean(t.boolean),
            Tok::Null => null(),
            Tok::ObjBegin => Value::Table(self.object(lua, height)?),
            Tok::ArrBegin => Value::Table(self.array(lua, height)?),
            _ => return Err(self.parse_error("value", &t)),
        })
    }

    fn object(&mut self, lua: &Lua, height: usize) -> LResult<Table> {
        self.descend(height, 3)?;
        let d = self.depth as i64;
        self.spine.raw_set(d, lua.create_table()?)?;
        let mut t = self.next_token();
        if t.ty == Tok::ObjEnd {
            self.depth -= 1;
            return Ok(self.spine.raw_get(d)?);
        }
        loop {
            if t.ty != Tok::Str {
                return Err(self.parse_error("object key string", &t));
            }
            let key = std::mem::take(&mut t.string);
            t = self.next_token();
            if t.ty != Tok::Colon {
                return Err(self.parse_error("colon", &t));
            }
            t = self.next_token();
            let v = self.value(lua, t, height + 2)?;
            let table: Table = self.spine.raw_get(d)?;
            table.raw_set(lua.create_string(&key)?, v)?;
            drop(table);
            t = self.next_token();
            if t.ty == Tok::ObjEnd {
                self.depth -= 1;
                return Ok(self.spine.raw_get(d)?);
            }
            if t.ty != Tok::Comma {
                return Err(self.parse_error("comma or object end", &t));
            }
            t = self.next_token();
        }
    }

    fn array(&mut self, lua: &Lua, height: usize) -> LResult<Table> {
        self.descend(height, 2)?;
        let d = self.depth as i64;
        self.spine.raw_set(d, lua.create_table()?)?;
        let mut t = self.next_token();
        if t.ty == Tok::ArrEnd {
            self.depth -= 1;
            return Ok(self.spine.raw_get(d)?);
        }
        let mut i: i64 = 1;
        loop {
            let v = self.value(lua, t, height + 1)?;
            self.spine.raw_get::<Table>(d)?.raw_set(i, v)?;
            i += 1;
            t = self.next_token();
            if t.ty == Tok::ArrEnd {
                self.depth -= 1;
                return Ok(self.spine.raw_get(d)?);
            }
            if t.ty != Tok::Comma {
                return Err(self.parse_error("comma or array end", &t));
            }
            t = self.next_token();
        }
    }
}

fn decode(lua: &Lua, cfg: &Config, a: MultiValue) -> LResult<MultiValue> {
    let a = a.into_vec();
    if a.len() != 1 {
        return Err(arg(1, "expected 1 argument"));
    }
    let s = check_string(lua, &a, 1)?;
    let bytes = s.as_bytes();
    if bytes.len() >= 2 && (bytes[0] == 0 || bytes[1] == 0) {
        return Err(msg("JSON parser does not support UTF-16 or UTF-32"));
    }
    let data = bytes.split(|&c| c == 0).next().unwrap_or(&[]);
    let mut p = Parser {
        cfg,
        data,
        ptr: 0,
        depth: 0,
        spine: lua.create_table()?,
    };
    let t = p.next_token();
    let v = p.value(lua, t, 1)?;
    let t = p.next_token();
    if t.ty != Tok::End {
        return Err(p.parse_error("the end", &t));
    }
    one(v)
}
