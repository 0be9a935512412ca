//! Conversions between RESP and Lua, as Redis 7.0 makes them.
//!
//! A command run by `redis.call` replies in RESP (2, or 3 after `redis.setresp(3)`); the reply is
//! decoded and turned into Lua values: integer → number, bulk → string, status → `{ok=…}`, error
//! → `{err=…}`, RESP2 nil → false, array → table; RESP3 adds `{map=…}`, `{set=…}`,
//! `{double=…}`, booleans, `{big_number=…}`, `{verbatim_string=…}` and null → nil.
//!
//! A script's result goes the other way: number → integer (truncated, as C's cast does),
//! string → bulk, true → 1 (or a RESP3 boolean after setresp(3)), false and nil → null, a table
//! with `err` / `ok` / `double` / `big_number` / `map` / `set` / `verbatim_string` → that reply,
//! any other table → an array that stops at the first nil.
//!
//! Arguments to `redis.call` may be strings or numbers only; a number is written as C's `%.17g`
//! would write it, so integral numbers arrive as integers and binary strings arrive unchanged.

use bytes::Bytes;
use embedis_protocol::writer::trim_line_breaks;
use embedis_protocol::{Value as Resp, Version, Writer};
use mlua::{Lua, Table, Value};

/// How deep a script's reply may nest before it is cut (Redis checks the C stack; a script
/// building a self-referencing table must not take the server down).
const MAX_REPLY_DEPTH: usize = 1000;

/// Turns a decoded reply into a Lua value. `resp3` tells how the null was meant: RESP2's null
/// bulk and null array become false, RESP3's null becomes nil.
pub fn resp_to_lua(lua: &Lua, reply: Resp, resp3: bool) -> mlua::Result<Value> {
    Ok(match reply {
        Resp::Simple(s) => {
            let t = lua.create_table_with_capacity(0, 1)?;
            t.raw_set("ok", lua.create_string(&s)?)?;
            Value::Table(t)
        }
        Resp::Error(e) | Resp::BlobError(e) => Value::Table(pushed_error_table(lua, &e)?),
        Resp::Integer(n) => Value::Number(n as f64),
        Resp::Bulk(b) => Value::String(lua.create_string(&b)?),
        Resp::Null if resp3 => Value::Nil,
        Resp::Null | Resp::NullArray => Value::Boolean(false),
        // Redis's reply parser gives a script nothing for a push (DEBUG PROTOCOL PUSH).
        Resp::Push(_) => Value::Nil,
        Resp::Array(items) => {
            let t = lua.create_table_with_capacity(items.len(), 0)?;
            for (i, item) in items.into_iter().enumerate() {
                t.raw_set(i + 1, resp_to_lua(lua, item, resp3)?)?;
            }
            Value::Table(t)
        }
        // Maps and sets grow from an empty table as Redis builds them, so that a script walking
        // one with `pairs` meets the keys in Redis's order (integer keys move to the array
        // part as the table grows).
        Resp::Map(pairs) => {
            let inner = lua.create_table()?;
            for (k, v) in pairs {
                inner.raw_set(resp_to_lua(lua, k, resp3)?, resp_to_lua(lua, v, resp3)?)?;
            }
            wrap(lua, "map", Value::Table(inner))?
        }
        Resp::Set(items) => {
            let inner = lua.create_table()?;
            for item in items {
                inner.raw_set(resp_to_lua(lua, item, resp3)?, true)?;
            }
            wrap(lua, "set", Value::Table(inner))?
        }
        Resp::Double(d) => wrap(lua, "double", Value::Number(d))?,
        Resp::Boolean(b) => Value::Boolean(b),
        Resp::BigNumber(digits) => wrap(
            lua,
            "big_number",
            Value::String(lua.create_string(&digits)?),
        )?,
        Resp::Attribute { value, .. } => resp_to_lua(lua, *value, resp3)?,
        Resp::Verbatim { format, text } => {
            let inner = lua.create_table_with_capacity(0, 2)?;
            inner.raw_set("format", lua.create_string(format)?)?;
            inner.raw_set("string", lua.create_string(&text)?)?;
            wrap(lua, "verbatim_string", Value::Table(inner))?
        }
    })
}

fn wrap(lua: &Lua, field: &str, value: Value) -> mlua::Result<Value> {
    let t = lua.create_table_with_capacity(0, 1)?;
    t.raw_set(field, value)?;
    Ok(Value::Table(t))
}

/// `{err = "<line>"}`, the form errors take in Lua.
pub fn error_table(lua: &Lua, line: &[u8]) -> mlua::Result<Table> {
    let t = lua.create_table_with_capacity(0, 1)?;
    t.raw_set("err", lua.create_string(line)?)?;
    Ok(t)
}

/// The `err` Redis's `luaPushErrorBuff` makes of an error line given without its dash (a failed
/// command's reply, `redis.error_reply`): read as a C string, its first word is the code (`ERR`
/// when there is no space) and CR and LF are trimmed from both ends of the rest, so that a
/// command's error ending in a line break does not end in spaces inside the script either.
pub fn pushed_error_text(line: &[u8]) -> Vec<u8> {
    let line = c_str(line);
    let (code, message) = match line.iter().position(|&b| b == b' ') {
        Some(space) => (&line[..space], &line[space + 1..]),
        None => (&b"ERR"[..], line),
    };
    let mut text = code.to_vec();
    text.push(b' ');
    text.extend_from_slice(trim_line_breaks(message));
    text
}

/// [`error_table`] of [`pushed_error_text`].
pub fn pushed_error_table(lua: &Lua, line: &[u8]) -> mlua::Result<Table> {
    error_table(lua, &pushed_error_text(line))
}

/// The bytes before the first NUL: what Redis reads of a Lua string it takes as a C string
/// (`lua_tostring` into `%s` or `sdsnew`).
pub fn c_str(text: &[u8]) -> &[u8] {
    let end = text.iter().position(|&b| b == 0).unwrap_or(text.len());
    &text[..end]
}

/// A `redis.call` argument as the bytes of a command argument; None for a type Redis refuses.
pub fn lua_to_arg(value: &Value) -> Option<Bytes> {
    match value {
        Value::String(s) => Some(Bytes::copy_from_slice(&s.as_bytes())),
        Value::Integer(i) => Some(number_arg(*i as f64)),
        Value::Number(n) => Some(number_arg(*n)),
        _ => None,
    }
}

/// A number as Redis writes it into a command argument: `%.17g`.
fn number_arg(n: f64) -> Bytes {
    let mut text = Vec::with_capacity(24);
    embedis_protocol::float::push_g17(&mut text, n);
    Bytes::from(text)
}

/// C's `(long long)` cast of a double as x86-64 performs it: truncation, and the "integer
/// indefinite" value for NaN and anything out of range.
pub fn truncate_to_i64(n: f64) -> i64 {
    const LIMIT: f64 = 9_223_372_036_854_775_808.0; // 2^63
    if !(-LIMIT..LIMIT).contains(&n) {
        i64::MIN
    } else {
        n as i64
    }
}

/// Writes a script's result as its reply. `script_resp3` is the script's own protocol
/// (`redis.setresp`), which decides how booleans are written; the writer carries the caller's.
pub fn write_lua_reply(out: &mut Writer<'_>, value: &Value, script_resp3: bool) {
    write_value(out, value, script_resp3, 0)
}

fn write_value(out: &mut Writer<'_>, value: &Value, script_resp3: bool, depth: usize) {
    if depth > MAX_REPLY_DEPTH {
        out.error_line(b"ERR reached lua stack limit");
        return;
    }
    match value {
        Value::String(s) => out.bulk(&s.as_bytes()),
        Value::Boolean(b) if script_resp3 => out.boolean(*b),
        Value::Boolean(true) => out.integer(1),
        Value::Integer(i) => out.integer(*i),
        Value::Number(n) => out.integer(truncate_to_i64(*n)),
        Value::Table(t) => write_table(out, t, script_resp3, depth),
        _ => out.null(),
    }
}

fn write_table(out: &mut Writer<'_>, t: &Table, script_resp3: bool, depth: usize) {
    if let Ok(Value::String(e)) = t.raw_get::<Value>("err") {
        out.error_line(&returned_error_text(&e.as_bytes()));
        return;
    }
    if let Ok(Value::String(s)) = t.raw_get::<Value>("ok") {
        out.simple(&status_text(c_str(&s.as_bytes())));
        return;
    }
    match t.raw_get::<Value>("double") {
        Ok(Value::Number(d)) => return out.double(d),
        Ok(Value::Integer(i)) => return out.double(i as f64),
        _ => {}
    }
    if let Ok(Value::String(s)) = t.raw_get::<Value>("big_number") {
        out.big_number(&status_text(&s.as_bytes()));
        return;
    }
    if let Ok(Value::Table(map)) = t.raw_get::<Value>("map") {
        let pairs: Vec<(Value, Value)> = map.pairs::<Value, Value>().flatten().collect();
        out.map(pairs.len());
        for (k, v) in &pairs {
            write_value(out, k, script_resp3, depth + 1);
            write_value(out, v, script_resp3, depth + 1);
        }
        return;
    }
    if let Ok(Value::Table(set)) = t.raw_get::<Value>("set") {
        let members: Vec<Value> = set
            .pairs::<Value, Value>()
            .flatten()
            .map(|(k, _)| k)
            .collect();
        out.set(members.len());
        for m in &members {
            write_value(out, m, script_resp3, depth + 1);
        }
        return;
    }
    if let Ok(Value::Table(v)) = t.raw_get::<Value>("verbatim_string") {
        if let (Ok(Value::String(format)), Ok(Value::String(text))) =
            (v.raw_get::<Value>("format"), v.raw_get::<Value>("string"))
        {
            let format = format.as_bytes();
            if format.len() == 3 {
                out.verbatim(&[format[0], format[1], format[2]], &text.as_bytes());
                return;
            }
        }
    }
    // An array: elements 1, 2, … up to the first nil.
    let mut items = Vec::new();
    for i in 1.. {
        match t.raw_get::<Value>(i) {
            Ok(Value::Nil) | Err(_) => break,
            Ok(v) => items.push(v),
        }
    }
    out.array(items.len());
    for item in &items {
        write_value(out, item, script_resp3, depth + 1);
    }
}

/// An error reply's text: Redis turns line breaks into spaces so the reply stays one line.
pub fn error_text(text: &[u8]) -> Vec<u8> {
    status_text(text)
}

/// The text of an error table a script returns, as Redis writes it
/// (`addReplyErrorFormat(c, "-%s", err)`): up to a NUL, CR and LF trimmed from its end (the dash
/// shields its start), those inside turned into spaces.
pub fn returned_error_text(err: &[u8]) -> Vec<u8> {
    let text = c_str(err);
    let end = text
        .iter()
        .rposition(|&b| b != b'\r' && b != b'\n')
        .map_or(0, |i| i + 1);
    error_text(&text[..end])
}

/// A status reply's text, line breaks turned into spaces.
fn status_text(text: &[u8]) -> Vec<u8> {
    text.iter()
        .map(|&b| if b == b'\r' || b == b'\n' { b' ' } else { b })
        .collect()
}

/// Whether a protocol version is RESP3.
pub fn is_resp3(version: Version) -> bool {
    version == Version::Resp3
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::BytesMut;

    fn reply_of(lua: &Lua, code: &str, script_resp3: bool, version: Version) -> String {
        let value: Value = lua.load(code).eval().unwrap();
        let mut buf = BytesMut::new();
        write_lua_reply(&mut Writer::new(&mut buf, version), &value, script_resp3);
        String::from_utf8_lossy(&buf).into_owned()
    }

    #[test]
    fn script_results_become_replies() {
        let lua = Lua::new();
        let r2 = |code| reply_of(&lua, code, false, Version::Resp2);
        assert_eq!(r2("return 3.99"), ":3\r\n");
        assert_eq!(r2("return -3.99"), ":-3\r\n");
        assert_eq!(r2("return 1e20"), ":-9223372036854775808\r\n");
        assert_eq!(r2("return 0/0"), ":-9223372036854775808\r\n");
        assert_eq!(r2("return 'a\\0b'"), "$3\r\na\0b\r\n");
        assert_eq!(r2("return true"), ":1\r\n");
        assert_eq!(r2("return false"), "$-1\r\n");
        assert_eq!(r2("return nil"), "$-1\r\n");
        assert_eq!(r2("return {1,2,nil,4}"), "*2\r\n:1\r\n:2\r\n");
        assert_eq!(r2("return {ok='fine'}"), "+fine\r\n");
        assert_eq!(r2("return {err='MY x\\ny'}"), "-MY x y\r\n");
        assert_eq!(r2("return {double=1.5}"), "$3\r\n1.5\r\n");
        assert_eq!(r2("return {map={a=1}}"), "*2\r\n$1\r\na\r\n:1\r\n");
        assert_eq!(
            reply_of(&lua, "return false", true, Version::Resp2),
            ":0\r\n"
        );
        assert_eq!(
            reply_of(&lua, "return false", true, Version::Resp3),
            "#f\r\n"
        );
        assert_eq!(reply_of(&lua, "return nil", false, Version::Resp3), "_\r\n");
        assert_eq!(
            reply_of(&lua, "return {double=1.5}", false, Version::Resp3),
            ",1.5\r\n"
        );
    }

    #[test]
    fn arguments_are_written_as_percent_17g() {
        let lua = Lua::new();
        let arg = |code: &str| {
            let v: Value = lua.load(code).eval().unwrap();
            lua_to_arg(&v).map(|b| String::from_utf8(b.to_vec()).unwrap())
        };
        assert_eq!(arg("return 1").as_deref(), Some("1"));
        assert_eq!(arg("return 0.1").as_deref(), Some("0.10000000000000001"));
        assert_eq!(arg("return 1e20").as_deref(), Some("1e+20"));
        assert_eq!(arg("return 2^60").as_deref(), Some("1.152921504606847e+18"));
        assert_eq!(arg("return 'x'").as_deref(), Some("x"));
        assert_eq!(arg("return {}"), None);
        assert_eq!(arg("return nil"), None);
    }

    #[test]
    fn replies_become_lua_values() {
        let lua = Lua::new();
        let v = resp_to_lua(&lua, Resp::Simple(Bytes::from_static(b"OK")), false).unwrap();
        let t = v.as_table().unwrap();
        assert_eq!(t.get::<String>("ok").unwrap(), "OK");
        let v = resp_to_lua(&lua, Resp::Null, false).unwrap();
        assert_eq!(v, Value::Boolean(false));
        let v = resp_to_lua(&lua, Resp::Null, true).unwrap();
        assert_eq!(v, Value::Nil);
        let v = resp_to_lua(
            &lua,
            Resp::Array(vec![Resp::Integer(7), Resp::NullArray]),
            false,
        )
        .unwrap();
        let t = v.as_table().unwrap();
        assert_eq!(t.get::<f64>(1).unwrap(), 7.0);
        assert_eq!(t.get::<Value>(2).unwrap(), Value::Boolean(false));
    }

    #[test]
    fn error_tables_are_trimmed_as_lua_push_error_buff_trims_them() {
        let pushed = |line: &[u8]| String::from_utf8(pushed_error_text(line)).unwrap();
        assert_eq!(
            pushed(b"ERR Unsupported option \r\n"),
            "ERR Unsupported option "
        );
        assert_eq!(pushed(b"MY \r\nfoo\r\n"), "MY foo");
        assert_eq!(pushed(b"MY x\r\ny\r\n"), "MY x\r\ny");
        // No space: the whole line is the message, under ERR.
        assert_eq!(pushed(b"Myerror\r\n"), "ERR Myerror");
        assert_eq!(pushed(b"\r\n"), "ERR ");
        // The code is everything before the first space, line breaks included.
        assert_eq!(pushed(b"MY\r\n x"), "MY\r\n x");
        assert_eq!(pushed(b"MY a\0b"), "MY a");
    }

    #[test]
    fn returned_errors_lose_line_breaks_at_their_end_only() {
        let returned = |err: &[u8]| String::from_utf8(returned_error_text(err)).unwrap();
        assert_eq!(returned(b"ERR x\r\n\r\n"), "ERR x");
        assert_eq!(returned(b"\r\nx"), "  x");
        assert_eq!(returned(b"x\r\ny\n"), "x  y");
        assert_eq!(returned(b"x\r\n "), "x   ");
        assert_eq!(returned(b"x\0y\r\n"), "x");
    }
}
