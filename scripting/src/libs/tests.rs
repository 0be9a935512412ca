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

#[test]
fn option_bytes_are_reported_as_bytes() {
    // Observed: "bad argument #1 to '?' (invalid format option '\xc8')".
    let lua = vm();
    let e: mlua::LuaString = lua
        .load("local ok, e = pcall(struct.pack, '\\200') return e")
        .eval()
        .unwrap();
    assert_eq!(
        &e.as_bytes()[..],
        b"bad argument #1 to '?' (invalid format option '\xc8')"
    );
}

mod properties {
    use mlua::{Function, Lua, Value};
    use proptest::prelude::*;

    use super::vm;

    fn f(lua: &Lua, path: &str) -> Function {
        lua.load(format!("return {path}")).eval().unwrap()
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        #[test]
        fn cjson_strings_round_trip(s in proptest::collection::vec(any::<u8>(), 0..64)) {
            let lua = vm();
            let (enc, dec) = (f(&lua, "cjson.encode"), f(&lua, "cjson.decode"));
            let json: mlua::LuaString = enc.call(lua.create_string(&s).unwrap()).unwrap();
            // Only ASCII controls, '"', '\\' and '/' are escaped; other bytes pass through.
            let j = json.as_bytes();
            prop_assert!(j.iter().all(|&c| c >= 0x20 && c != 0x7f));
            let back: mlua::LuaString = dec.call(json.clone()).unwrap();
            prop_assert_eq!(&back.as_bytes()[..], &s[..]);
        }

        #[test]
        fn cjson_integers_print_like_percent_14g(n in -99_999_999_999_999i64..99_999_999_999_999) {
            let lua = vm();
            let enc = f(&lua, "cjson.encode");
            let json: String = enc.call(n as f64).unwrap();
            prop_assert_eq!(json, n.to_string());
        }

        #[test]
        fn cmsgpack_round_trips(
            s in proptest::collection::vec(any::<u8>(), 0..300),
            i in -(1i64 << 53)..(1i64 << 53),
            x in any::<f64>().prop_filter("not NaN", |x| !x.is_nan()),
        ) {
            let lua = vm();
            let (pack, unpack) = (f(&lua, "cmsgpack.pack"), f(&lua, "cmsgpack.unpack"));
            let packed: mlua::LuaString =
                pack.call((lua.create_string(&s).unwrap(), i as f64, x)).unwrap();
            let (bs, bi, bx): (mlua::LuaString, f64, f64) = unpack.call(packed).unwrap();
            prop_assert_eq!(&bs.as_bytes()[..], &s[..]);
            prop_assert_eq!(bi, i as f64);
            prop_assert_eq!(bx.to_bits(), if x == 0.0 { 0f64.to_bits() } else { x.to_bits() });
        }

        #[test]
        fn cmsgpack_integer_headers(i in any::<i64>()) {
            let lua = vm();
            let pack = f(&lua, "cmsgpack.pack");
            let packed: mlua::LuaString = pack.call(i as f64).unwrap();
            let p = packed.as_bytes();
            let x = i as f64;
            // The smallest type that holds the value, when the double is an int64.
            let expected_len = if x >= 9223372036854775808.0 {
                5 // float32 2^63 or above: not int64-equivalent
            } else {
                let n = x as i64;
                match n {
                    -32..=127 => 1,
                    128..=255 | -128..=-33 => 2,
                    256..=65535 | -32768..=-129 => 3,
                    65536..=4294967295 | -2147483648..=-32769 => 5,
                    _ => 9,
                }
            };
            prop_assert_eq!(p.len(), expected_len);
        }

        #[test]
        fn struct_integers_round_trip(
            n in any::<i64>(),
            size in 1usize..=8,
            big in any::<bool>(),
            signed in any::<bool>(),
        ) {
            let lua = vm();
            let (pack, unpack) = (f(&lua, "struct.pack"), f(&lua, "struct.unpack"));
            let fmt = format!("{}{}{}", if big { '>' } else { '<' }, if signed { 'i' } else { 'I' }, size);
            // Keep to values the double represents exactly and the size holds.
            let bits = 8 * size as u32;
            let v: i64 = if signed {
                n >> (64 - bits.min(53))
            } else {
                ((n as u64) >> (64 - bits.min(53))) as i64
            };
            let packed: mlua::LuaString = pack.call((fmt.clone(), v as f64)).unwrap();
            prop_assert_eq!(packed.as_bytes().len(), size);
            let bytes = packed.as_bytes().to_vec();
            let expected: Vec<u8> = if big {
                (v as u64).to_be_bytes()[8 - size..].to_vec()
            } else {
                (v as u64).to_le_bytes()[..size].to_vec()
            };
            prop_assert_eq!(&bytes, &expected);
            let (back, next): (f64, f64) = unpack.call((fmt, packed)).unwrap();
            prop_assert_eq!(back, v as f64);
            prop_assert_eq!(next, size as f64 + 1.0);
        }

        #[test]
        fn bit_tobit_is_modular_for_integers(n in -(1i64 << 51)..(1i64 << 51)) {
            let lua = vm();
            let tobit = f(&lua, "bit.tobit");
            let r: Value = tobit.call(n as f64).unwrap();
            let r = match r { Value::Integer(i) => i, Value::Number(x) => x as i64, _ => unreachable!() };
            prop_assert_eq!(r, n as i32 as i64);
        }
    }
}
