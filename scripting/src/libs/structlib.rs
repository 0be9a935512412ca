//! `struct`: Roberto Ierusalimschy's struct library as Redis 7.0 bundles it (with Redis's
//! overflow fixes): `struct.pack`, `struct.unpack` and `struct.size` over formats made of
//! `< > ! x b B h H l L T i[n] I[n] f d s c[n]`, native sizes and alignment of x86-64 Linux
//! (`short` 2, `int` 4, `long`/`size_t` 8, maximum alignment 8, little-endian by default).
//!
//! The format is read as a C string (it ends at the first NUL byte), integers go through C's
//! double → 64-bit conversions as x86-64 performs them, and every quirk of argument numbering
//! (the `nil` marker the C code pushes makes a missing argument after the last one read as
//! "got nil"; "string too short" names the argument after the string) is kept, because scripts
//! see these bytes and messages.

use mlua::{Lua, MultiValue, Table, Value};

use super::{
    arg, check_integer, check_number, check_string, f64_to_i64_x86, function, many, msg, LResult,
};

const MAXINTSIZE: usize = 32;
const MAXALIGN: usize = 8;

#[derive(Clone, Copy, PartialEq)]
enum Endian {
    Big,
    Little,
}

struct Header {
    endian: Endian,
    align: usize,
}

impl Header {
    fn new() -> Self {
        Header {
            endian: Endian::Little,
            align: 1,
        }
    }
}

/// A format being read: the bytes up to the first NUL, as the C library sees them.
struct Fmt<'a> {
    s: &'a [u8],
    i: usize,
}

impl Fmt<'_> {
    fn next(&mut self) -> Option<u8> {
        let c = *self.s.get(self.i)?;
        self.i += 1;
        Some(c)
    }

    /// `getnum`: an optional decimal number, `df` when absent.
    fn getnum(&mut self, df: usize) -> LResult<usize> {
        if !self.s.get(self.i).is_some_and(u8::is_ascii_digit) {
            return Ok(df);
        }
        let mut a: i32 = 0;
        while let Some(&c) = self.s.get(self.i).filter(|c| c.is_ascii_digit()) {
            let d = (c - b'0') as i32;
            if a > i32::MAX / 10 || a * 10 > i32::MAX - d {
                return Err(msg("integral size overflow"));
            }
            a = a * 10 + d;
            self.i += 1;
        }
        Ok(a as usize)
    }

    /// `optsize`: the size of an option (0 for those without alignment).
    fn optsize(&mut self, opt: u8) -> LResult<usize> {
        Ok(match opt {
            b'B' | b'b' => 1,
            b'H' | b'h' => 2,
            b'L' | b'l' | b'T' | b'd' => 8,
            b'f' => 4,
            b'x' => 1,
            b'c' => self.getnum(1)?,
            b'i' | b'I' => {
                let sz = self.getnum(4)?;
                if sz > MAXINTSIZE {
                    return Err(msg(format!(
                        "integral size {sz} is larger than limit of {MAXINTSIZE}"
                    )));
                }
                sz
            }
            _ => 0,
        })
    }

    /// `controloptions`: endianness, alignment, spaces; anything else is an invalid option.
    fn control(&mut self, opt: u8, h: &mut Header) -> LResult<()> {
        match opt {
            b' ' => {}
            b'>' => h.endian = Endian::Big,
            b'<' => h.endian = Endian::Little,
            b'!' => {
                let a = self.getnum(MAXALIGN)?;
                if a == 0 || a & (a - 1) != 0 {
                    return Err(msg(format!("alignment {a} is not a power of 2")));
                }
                h.align = a;
            }
            _ => {
                let mut m = b"invalid format option '".to_vec();
                m.push(opt);
                m.push(b'\'');
                return Err(arg(1, m));
            }
        }
        Ok(())
    }
}

fn fmt_bytes(s: &[u8]) -> &[u8] {
    s.split(|&c| c == 0).next().unwrap_or(&[])
}

/// `gettoalign`: the padding before an item of `size` at offset `len`.
fn gettoalign(len: usize, h: &Header, opt: u8, size: usize) -> usize {
    if size == 0 || opt == b'c' {
        return 0;
    }
    let size = size.min(h.align);
    size.wrapping_sub(len & size.wrapping_sub(1)) & size.wrapping_sub(1)
}

/// C's `(uint64_t)d` as gcc compiles it for x86-64.
fn f64_to_u64_x86(d: f64) -> u64 {
    if d >= 9223372036854775808.0 {
        (f64_to_i64_x86(d - 9223372036854775808.0) as u64) ^ (1 << 63)
    } else {
        f64_to_i64_x86(d) as u64
    }
}

pub fn open(lua: &Lua) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    t.set("pack", function(lua, pack)?)?;
    t.set("unpack", function(lua, unpack)?)?;
    t.set("size", function(lua, size)?)?;
    Ok(t)
}

/// The arguments as the C code's stack sees them: after the real arguments it pushed a `nil`
/// marker, so the first missing one reads as `nil` rather than "no value".
fn stack_args(a: MultiValue) -> Vec<Value> {
    let mut v = a.into_vec();
    v.push(Value::Nil);
    v
}

fn pack(lua: &Lua, a: MultiValue) -> LResult<MultiValue> {
    let args = a.into_vec();
    let fmt_s = check_string(lua, &args, 1)?;
    let args = stack_args(MultiValue::from_vec(args));
    let fmt_b = fmt_s.as_bytes();
    let mut fmt = Fmt {
        s: fmt_bytes(&fmt_b),
        i: 0,
    };
    let mut h = Header::new();
    let mut arg = 2;
    let mut out: Vec<u8> = Vec::new();
    while let Some(opt) = fmt.next() {
        let mut size = fmt.optsize(opt)?;
        let toalign = gettoalign(out.len(), &h, opt, size);
        out.resize(out.len() + toalign, 0);
        match opt {
            b'b' | b'B' | b'h' | b'H' | b'l' | b'L' | b'T' | b'i' | b'I' => {
                let n = check_number(lua, &args, arg)?;
                arg += 1;
                let mut value = if n < 0.0 {
                    f64_to_i64_x86(n) as u64
                } else {
                    f64_to_u64_x86(n)
                };
                let mut buf = vec![0u8; size];
                let order: Box<dyn Iterator<Item = usize>> = match h.endian {
                    Endian::Little => Box::new(0..size),
                    Endian::Big => Box::new((0..size).rev()),
                };
                for i in order {
                    buf[i] = value as u8;
                    value = value.checked_shr(8).unwrap_or(0);
                }
                out.extend_from_slice(&buf);
            }
            b'x' => out.push(0),
            b'f' => {
                let f = check_number(lua, &args, arg)? as f32;
                arg += 1;
                match h.endian {
                    Endian::Little => out.extend_from_slice(&f.to_le_bytes()),
                    Endian::Big => out.extend_from_slice(&f.to_be_bytes()),
                }
            }
            b'd' => {
                let d = check_number(lua, &args, arg)?;
                arg += 1;
                match h.endian {
                    Endian::Little => out.extend_from_slice(&d.to_le_bytes()),
                    Endian::Big => out.extend_from_slice(&d.to_be_bytes()),
                }
            }
            b'c' | b's' => {
                let s = check_string(lua, &args, arg)?;
                arg += 1;
                let s = s.as_bytes();
                if size == 0 {
                    size = s.len();
                }
                if s.len() < size {
                    // The C code checks after advancing `arg`: the message names the next one.
                    return Err(super::arg(arg, "string too short"));
                }
                out.extend_from_slice(&s[..size]);
                if opt == b's' {
                    out.push(0);
                }
            }
            _ => fmt.control(opt, &mut h)?,
        }
    }
    Ok(MultiValue::from_vec(vec![Value::String(
        lua.create_string(&out)?,
    )]))
}

/// Reads an integer of `size` bytes, as the C library's `getinteger` (bytes beyond the eighth
/// shift out of its 64-bit accumulator; the sign mask shift wraps modulo 64 as on x86-64).
fn getinteger(buf: &[u8], endian: Endian, signed: bool) -> f64 {
    let size = buf.len();
    let mut l: u64 = 0;
    let mut push = |c: u8| l = (l << 8) | c as u64;
    match endian {
        Endian::Big => buf.iter().for_each(|&c| push(c)),
        Endian::Little => buf.iter().rev().for_each(|&c| push(c)),
    }
    if !signed {
        l as f64
    } else {
        let mask = u64::MAX << ((size * 8).wrapping_sub(1) & 63);
        if l & mask != 0 {
            l |= mask;
        }
        l as i64 as f64
    }
}

fn unpack(lua: &Lua, a: MultiValue) -> LResult<MultiValue> {
    let args = a.into_vec();
    let fmt_s = check_string(lua, &args, 1)?;
    let data = check_string(lua, &args, 2)?;
    let data = data.as_bytes();
    let ld = data.len();
    let pos = match args.get(2) {
        None | Some(Value::Nil) => 1,
        Some(_) => check_integer(lua, &args, 3)?,
    };
    // The position is a size_t in C: a negative offset wraps around and passes this check.
    if pos == 0 {
        return Err(arg(3, "offset must be 1 or greater"));
    }
    let mut pos = (pos as u64 as usize).wrapping_sub(1);
    let fmt_b = fmt_s.as_bytes();
    let mut fmt = Fmt {
        s: fmt_bytes(&fmt_b),
        i: 0,
    };
    let mut h = Header::new();
    // Results go into a table (see `many`); the C code checks for 2 free slots per item.
    let results = lua.create_table()?;
    let mut n: usize = 0;
    let nargs = args.len();
    let too_short = || arg(2, "data string too short");
    while let Some(opt) = fmt.next() {
        let mut size = fmt.optsize(opt)?;
        pos = pos.wrapping_add(gettoalign(pos, &h, opt, size));
        if pos.checked_add(size).is_none_or(|end| end > ld) {
            return Err(too_short());
        }
        if nargs + n + 2 > 8000 {
            return Err(msg("stack overflow (too many results)"));
        }
        let item = match opt {
            b'b' | b'B' | b'h' | b'H' | b'l' | b'L' | b'T' | b'i' | b'I' => {
                let signed = opt.is_ascii_lowercase();
                Some(Value::Number(getinteger(
                    &data[pos..pos + size],
                    h.endian,
                    signed,
                )))
            }
            b'x' => None,
            b'f' => {
                let b: [u8; 4] = data[pos..pos + 4].try_into().unwrap();
                let f = match h.endian {
                    Endian::Little => f32::from_le_bytes(b),
                    Endian::Big => f32::from_be_bytes(b),
                };
                Some(Value::Number(f as f64))
            }
            b'd' => {
                let b: [u8; 8] = data[pos..pos + 8].try_into().unwrap();
                let d = match h.endian {
                    Endian::Little => f64::from_le_bytes(b),
                    Endian::Big => f64::from_be_bytes(b),
                };
                Some(Value::Number(d))
            }
            b'c' => {
                if size == 0 {
                    // `c0` takes its length from the previous result, which it consumes.
                    let last: Value = if n == 0 {
                        Value::Nil
                    } else {
                        results.raw_get(n)?
                    };
                    let prev = match last {
                        Value::Integer(i) => Some(i as f64),
                        Value::Number(x) => Some(x),
                        Value::String(s) => lua.coerce_number(Value::String(s))?,
                        _ => None,
                    };
                    let Some(len) = prev else {
                        return Err(msg("format 'c0' needs a previous size"));
                    };
                    size = f64_to_u64_x86(len) as usize;
                    results.raw_set(n, Value::Nil)?;
                    n -= 1;
                    if size > ld || pos > ld - size {
                        return Err(too_short());
                    }
                }
                Some(Value::String(lua.create_string(&data[pos..pos + size])?))
            }
            b's' => {
                let Some(e) = data[pos..].iter().position(|&c| c == 0) else {
                    return Err(msg("unfinished string in data"));
                };
                size = e + 1;
                Some(Value::String(lua.create_string(&data[pos..pos + e])?))
            }
            _ => {
                fmt.control(opt, &mut h)?;
                None
            }
        };
        if let Some(v) = item {
            n += 1;
            results.raw_set(n, v)?;
        }
        pos = pos.wrapping_add(size);
    }
    n += 1;
    results.raw_set(n, Value::Number(pos.wrapping_add(1) as i64 as f64))?;
    many(results, n)
}

fn size(lua: &Lua, a: MultiValue) -> LResult<MultiValue> {
    let args = a.into_vec();
    let fmt_s = check_string(lua, &args, 1)?;
    let fmt_b = fmt_s.as_bytes();
    let mut fmt = Fmt {
        s: fmt_bytes(&fmt_b),
        i: 0,
    };
    let mut h = Header::new();
    let mut pos: usize = 0;
    while let Some(opt) = fmt.next() {
        let size = fmt.optsize(opt)?;
        pos = pos.wrapping_add(gettoalign(pos, &h, opt, size));
        if opt == b's' {
            return Err(arg(1, "option 's' has no fixed size"));
        } else if opt == b'c' && size == 0 {
            return Err(arg(1, "option 'c0' has no fixed size"));
        }
        // Letters the library does not know are ignored here (only non-alphanumerics go to
        // the control options), unlike in pack and unpack.
        if !opt.is_ascii_alphanumeric() {
            fmt.control(opt, &mut h)?;
        }
        pos = pos.wrapping_add(size);
    }
    Ok(MultiValue::from_vec(vec![Value::Number(pos as i64 as f64)]))
}
