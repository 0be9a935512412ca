//! Checks of the libraries against what redis-server 7.0.15 answers. Every expected value here
//! was observed on redis-server through EVAL (errors as `pcall` returns them, or with the
//! `user_script:1: ` prefix `luaL_error` adds when a script calls the function directly).

use mlua::{Lua, Value};

use super::*;

/// A VM with the libraries installed as globals, as Redis has them.
pub(crate) fn vm() -> Lua {
    let lua = Lua::new();
    for (name, t) in open_all(&lua).unwrap() {
        lua.globals().set(name, t).unwrap();
    }
    let math: mlua::Table = lua.globals().get("math").unwrap();
    rand48::install(&lua, &math).unwrap();
    lua
}

/// A value printed unambiguously: strings with their bytes escaped, numbers exactly.
pub(crate) fn show(v: &Value) -> String {
    match v {
        Value::Nil => "nil".into(),
        Value::Boolean(b) => b.to_string(),
        Value::Integer(i) => i.to_string(),
        Value::Number(n) => {
            if n.is_nan() {
                if n.is_sign_negative() {
                    "-nan".into()
                } else {
                    "nan".into()
                }
            } else {
                format!("{n:?}")
            }
        }
        Value::String(s) => {
            let mut out = String::from("\"");
            for &c in s.as_bytes().iter() {
                match c {
                    b'"' => out.push_str("\\\""),
                    b'\\' => out.push_str("\\\\"),
                    0x20..=0x7e => out.push(c as char),
                    _ => out.push_str(&format!("\\x{c:02x}")),
                }
            }
            out.push('"');
            out
        }
        Value::Table(t) => {
            let parts: Vec<String> = t
                .pairs::<Value, Value>()
                .map(|p| {
                    let (k, v) = p.unwrap();
                    format!("{}={}", show(&k), show(&v))
                })
                .collect();
            format!("{{{}}}", parts.join(","))
        }
        Value::LightUserData(p) if p.0.is_null() => "null".into(),
        other => other.type_name().into(),
    }
}

/// Runs `code` as a script (chunk named like Redis's) and shows its results, or `ERR <message>`.
pub(crate) fn run_in(lua: &Lua, code: &str) -> String {
    match lua
        .load(code)
        .set_name("@user_script")
        .eval::<mlua::MultiValue>()
    {
        Ok(vals) => vals.iter().map(show).collect::<Vec<_>>().join(" "),
        Err(e) => format!("ERR {e}"),
    }
}

pub(crate) fn run(code: &str) -> String {
    run_in(&vm(), code)
}

/// The error message a `pcall` of `code` (a function body) gets, as Lua sees it.
pub(crate) fn perr(code: &str) -> String {
    run(&format!(
        "local ok, e = pcall(function() {code} end) assert(not ok) return type(e), e"
    ))
}

#[track_caller]
pub(crate) fn check(code: &str, expected: &str) {
    assert_eq!(run(code), expected, "for {code}");
}

#[test]
fn errors_are_plain_strings_with_c_positions() {
    // Called through pcall directly, the caller is pcall (a C function): no position.
    check(
        "local ok, e = pcall(cjson.decode, '[') return type(e), e",
        "\"string\" \"Expected value but found T_END at character 2\"",
    );
    // Called from a Lua function, luaL_error prefixes the caller's position.
    assert_eq!(
        perr("return cjson.decode('[')"),
        "\"string\" \"user_script:1: Expected value but found T_END at character 2\""
    );
    // luaL_argerror names the function as the caller named it.
    assert_eq!(
        perr("return cjson.decode()"),
        "\"string\" \"user_script:1: bad argument #1 to 'decode' (expected 1 argument)\""
    );
    assert_eq!(
        perr("local f = cjson.decode return f()"),
        "\"string\" \"user_script:1: bad argument #1 to 'f' (expected 1 argument)\""
    );
    check(
        "local ok, e = pcall(cjson.decode) return e",
        "\"bad argument #1 to '?' (expected 1 argument)\"",
    );
    check(
        "return type(cjson.encode), type(bit.band)",
        "\"function\" \"function\"",
    );
}
