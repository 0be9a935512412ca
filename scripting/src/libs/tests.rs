//! Checks of the libraries against what redis-server 7.0.15 answers. Every expected value here
//! was observed on redis-server through EVAL (errors as `pcall` returns them, or with the
//! `user_script:1: ` prefix `luaL_error` adds when a script calls the function directly).

use mlua::{Lua, Value};

use super::*;

mod observed;

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

/// The Lua-side printer the observed cases run under, on redis-server and here alike: it prints
/// values unambiguously (strings byte-escaped, numbers with `%.17g`, tables in `next` order,
/// `cjson.null` as `null`), so a script's results can be compared as one string.
const PRELUDE: &str = r#"local function Q(x) local t = type(x) if t == 'string' then return '"' .. (x:gsub('.', function(c) local b = c:byte() if b < 32 or b > 126 then return string.format('\\x%02x', b) elseif c == '"' or c == '\\' then return '\\' .. c end end)) .. '"' elseif t == 'number' then return string.format('%.17g', x) elseif t == 'table' then local p = {} for k, v in pairs(x) do p[#p + 1] = Q(k) .. '=' .. Q(v) end return '{' .. table.concat(p, ',') .. '}' elseif x == cjson.null then return 'null' elseif t == 'nil' or t == 'boolean' then return tostring(x) else return t end end local function S(...) local p = {} for i = 1, select('#', ...) do p[i] = Q((select(i, ...))) end return table.concat(p, ' ') end"#;

/// Runs each `(body, printed results)` case — the body as a function, its results printed by
/// [`PRELUDE`], or `ERR <message>` — and checks it prints what redis-server printed.
#[track_caller]
fn check_observed(cases: &[(&str, &str)]) {
    let mut failures = Vec::new();
    for (body, expected) in cases {
        let code = format!(
            "{PRELUDE} local ok, r = pcall(function() return S((function() {body} end)()) end) \
             if ok then return r else return 'ERR ' .. tostring(r) end"
        );
        let got = run(&code);
        let got = got
            .strip_prefix('"')
            .and_then(|g| g.strip_suffix('"'))
            .unwrap_or(&got);
        // `run` shows the printed string escaped again; undo that one level.
        let got = got
            .replace("\\\\", "\u{0}")
            .replace("\\\"", "\"")
            .replace('\u{0}', "\\");
        if got != *expected {
            failures.push(format!("{body}\n  redis: {expected}\n  ours:  {got}"));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases differ:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}

#[test]
fn bit_observed() {
    check_observed(observed::BIT);
}

#[test]
fn struct_observed() {
    check_observed(observed::STRUCT);
}

#[test]
fn rand48_observed() {
    check_observed(observed::RAND);
}

#[test]
fn cjson_observed() {
    check_observed(observed::CJSON);
}

#[test]
fn cmsgpack_observed() {
    check_observed(observed::CMSGPACK);
}

#[test]
fn rand48_starts_where_a_fresh_server_starts() {
    // A fresh redis-server 7.0.15's first three `math.random()` (tostring), one per EVAL.
    let lua = vm();
    for expected in ["0.39646477363839", "0.84048536971234", "0.35333609737146"] {
        assert_eq!(
            run_in(&lua, "return tostring(math.random())"),
            format!("\"{expected}\"")
        );
    }
    rand48::reset(&lua);
    assert_eq!(rand48::state(&lua), rand48::INITIAL_STATE);
    assert_eq!(
        run_in(&lua, "return tostring(math.random())"),
        "\"0.39646477363839\""
    );
    // randomseed(0), as observed: 0.17082803611217 then 0.74990198051087.
    assert_eq!(
        run_in(
            &lua,
            "math.randomseed(0) return tostring(math.random()), tostring(math.random())"
        ),
        "\"0.17082803611217\" \"0.74990198051087\""
    );
    let st = rand48::state(&lua);
    let other = vm();
    rand48::set_state(&other, st);
    assert_eq!(
        run_in(&lua, "return math.random(1000)"),
        run_in(&other, "return math.random(1000)")
    );
}
