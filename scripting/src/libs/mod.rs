//! The libraries Redis 7.0 preloads into its Lua VM besides Lua's own `base`, `table`, `string`
//! and `math`: `bit` (LuaBitOp), `cjson`, `cmsgpack` and `struct`. Each is written here in Rust
//! against mlua, reproducing what the C libraries Redis bundles answer, and checked against
//! redis-server through EVAL.
//!
//! This module also owns the calling convention the libraries share. The C libraries raise
//! errors with `luaL_error` (the message gets the caller's `chunk:line: ` prefix from
//! `luaL_where(L, 1)`) and `luaL_argerror` (`bad argument #N to 'name' (...)`, where `name` is how
//! the *calling* code named the function). A Rust callback cannot do either: mlua raises its
//! errors as userdata, and a Rust frame has no Lua name. So every library function is a C closure
//! ([`trampoline`]) around the mlua callback; the callback reports a library error by returning a
//! marker, and the trampoline — running as the C function the script called — raises it exactly
//! as the C library would, as a plain Lua string.

use std::ffi::{c_int, c_void};

use mlua::{ffi, Function, LightUserData, Lua, MultiValue, Table, Value};

pub mod bit;
pub mod cjson;
pub mod cmsgpack;
pub mod rand48;
pub mod structlib;

#[cfg(test)]
mod tests;

/// Opens every library, in the order Redis loads them, with the global name each is installed as.
pub fn open_all(lua: &Lua) -> mlua::Result<Vec<(&'static str, Table)>> {
    Ok(vec![
        ("cjson", cjson::open(lua)?),
        ("struct", structlib::open(lua)?),
        ("cmsgpack", cmsgpack::open(lua)?),
        ("bit", bit::open(lua)?),
    ])
}

/// How a library function fails.
#[derive(Debug)]
pub(crate) enum Fail {
    /// `luaL_error(L, msg)`: raised with the caller's position prefixed.
    Msg(Vec<u8>),
    /// `luaL_argerror(L, narg, msg)`.
    Arg(usize, Vec<u8>),
    /// `lua_error` with the message as it is: what the Lua core raises from inside a C
    /// function (e.g. "table index is nil"), which gets no position as that frame is C.
    Raw(Vec<u8>),
    /// An mlua error (out of memory, a failing metamethod...), propagated as mlua raises it.
    Lua(mlua::Error),
}

impl From<mlua::Error> for Fail {
    fn from(e: mlua::Error) -> Self {
        Fail::Lua(e)
    }
}

pub(crate) type LResult<T> = Result<T, Fail>;

pub(crate) fn msg(m: impl Into<Vec<u8>>) -> Fail {
    Fail::Msg(m.into())
}

pub(crate) fn arg(n: usize, m: impl Into<Vec<u8>>) -> Fail {
    Fail::Arg(n, m.into())
}

/// The codes the callback's marked results carry in place of an argument number.
const MSG: i64 = -1;
const RAW: i64 = -2;
/// Not an error: "my results are the `n` values of this table" (see [`many`]).
const MANY: i64 = -3;

/// The address that tells the trampoline "the callback's results are an error to raise".
static ERROR_MARKER: u8 = 0;

fn marker() -> Value {
    Value::LightUserData(LightUserData(&ERROR_MARKER as *const u8 as *mut c_void))
}

/// The C function every library function is: calls the mlua callback (upvalue 1) with the
/// arguments, and either returns its results or raises the error it reported, as
/// `luaL_error`/`luaL_argerror` would from this frame.
unsafe extern "C-unwind" fn trampoline(l: *mut ffi::lua_State) -> c_int {
    unsafe {
        let nargs = ffi::lua_gettop(l);
        ffi::lua_pushvalue(l, ffi::lua_upvalueindex(1));
        ffi::lua_insert(l, 1);
        ffi::lua_call(l, nargs, ffi::LUA_MULTRET);
        let nres = ffi::lua_gettop(l);
        if nres >= 3
            && ffi::lua_type(l, 1) == ffi::LUA_TLIGHTUSERDATA
            && ffi::lua_touserdata(l, 1) == &ERROR_MARKER as *const u8 as *mut c_void
        {
            let narg = ffi::lua_tointeger(l, 2);
            if narg == MANY {
                // Results too many for mlua's callback stack: spread them on ours. A C function
                // may hold LUAI_MAXCSTACK values; the callers keep their count below that.
                let n = ffi::lua_tointeger(l, 4) as c_int;
                ffi::lua_settop(l, 3);
                ffi::lua_replace(l, 1);
                ffi::lua_settop(l, 1);
                if ffi::lua_checkstack(l, n) == 0 {
                    ffi::luaL_error(l, c"stack overflow (too many results)".as_ptr());
                }
                for i in 1..=n {
                    ffi::lua_rawgeti(l, 1, i as _);
                }
                return n;
            }
            if narg == RAW {
                ffi::lua_settop(l, 3);
                ffi::lua_error(l);
            } else if narg == MSG {
                // luaL_error: position of the caller, then the message.
                ffi::luaL_where(l, 1);
                ffi::lua_insert(l, 3);
                ffi::lua_concat(l, 2);
                ffi::lua_error(l);
            } else {
                let extramsg = ffi::lua_tolstring(l, 3, std::ptr::null_mut());
                ffi::luaL_argerror(l, narg as c_int, extramsg);
                unreachable!("luaL_argerror returned");
            }
        }
        nres
    }
}

/// Wraps `f` as a library function (see the module documentation).
pub(crate) fn function<F>(lua: &Lua, f: F) -> mlua::Result<Function>
where
    F: Fn(&Lua, MultiValue) -> LResult<MultiValue> + 'static,
{
    let inner = lua.create_function(move |lua, args: MultiValue| match f(lua, args) {
        Ok(v) => Ok(v),
        Err(Fail::Lua(e)) => Err(e),
        Err(Fail::Msg(m)) => Ok(MultiValue::from_vec(vec![
            marker(),
            Value::Integer(MSG),
            Value::String(lua.create_string(&m)?),
        ])),
        Err(Fail::Raw(m)) => Ok(MultiValue::from_vec(vec![
            marker(),
            Value::Integer(RAW),
            Value::String(lua.create_string(&m)?),
        ])),
        Err(Fail::Arg(n, m)) => Ok(MultiValue::from_vec(vec![
            marker(),
            Value::Integer(n as i64),
            Value::String(lua.create_string(&m)?),
        ])),
    })?;
    // SAFETY: the closure pops the one value exec_raw pushed (the callback) and pushes one.
    unsafe {
        lua.exec_raw::<Function>(inner, |state| {
            ffi::lua_pushcclosure(state, trampoline, 1);
        })
    }
}

/// Runs one level of a recursive encoder or decoder. The C libraries recurse on the C stack
/// (8 MB on Redis's main thread) as deep as Lua's 8000-slot limit lets them, thousands of levels
/// when a script raises cjson's depth limits; we may run on a smaller thread stack, so a level
/// moves to a heap-allocated stack segment when little stack is left.
pub(crate) fn deep<R>(f: impl FnOnce() -> R) -> R {
    stacker::maybe_grow(64 * 1024, 1024 * 1024, f)
}

/// Returns `values` as a function's results even when they are more than mlua lets a callback
/// return (it keeps a few stack slots for itself): beyond a handful they travel in a table that
/// the trampoline spreads. Callers keep the count within `LUAI_MAXCSTACK` as the C code must.
pub(crate) fn many(values: Table, n: usize) -> LResult<MultiValue> {
    if n <= 32 {
        let mut out = Vec::with_capacity(n);
        for i in 1..=n {
            out.push(values.raw_get::<Value>(i)?);
        }
        return Ok(MultiValue::from_vec(out));
    }
    Ok(MultiValue::from_vec(vec![
        marker(),
        Value::Integer(MANY),
        Value::Table(values),
        Value::Integer(n as i64),
    ]))
}

/// A raw `next(t, k)` for walking tables without holding mlua references per level.
pub(crate) fn raw_next(lua: &Lua) -> mlua::Result<Function> {
    unsafe extern "C-unwind" fn next(l: *mut ffi::lua_State) -> c_int {
        unsafe {
            ffi::luaL_checktype(l, 1, ffi::LUA_TTABLE);
            ffi::lua_settop(l, 2);
            if ffi::lua_next(l, 1) != 0 {
                2
            } else {
                ffi::lua_pushnil(l);
                1
            }
        }
    }
    // SAFETY: `next` follows the Lua C API: it checks its argument and returns pushed values.
    unsafe { lua.create_c_function(next) }
}

/// Lua's `luaL_typename`: the type names C libraries put in "X expected, got Y".
pub(crate) fn typename(v: Option<&Value>) -> &'static str {
    match v {
        None => "no value",
        Some(Value::Nil) => "nil",
        Some(Value::Boolean(_)) => "boolean",
        Some(Value::LightUserData(_)) | Some(Value::UserData(_)) => "userdata",
        Some(Value::Integer(_)) | Some(Value::Number(_)) => "number",
        Some(Value::String(_)) => "string",
        Some(Value::Table(_)) => "table",
        Some(Value::Function(_)) => "function",
        Some(Value::Thread(_)) => "thread",
        Some(_) => "userdata",
    }
}

/// `luaL_checknumber(L, n)` on `args[n-1]` (`lua_tonumber` semantics, numeric strings included).
pub(crate) fn check_number(lua: &Lua, args: &[Value], n: usize) -> LResult<f64> {
    match to_number(lua, args.get(n - 1))? {
        Some(x) => Ok(x),
        None => Err(arg(
            n,
            format!("number expected, got {}", typename(args.get(n - 1))),
        )),
    }
}

/// `lua_tonumber`: `None` where Lua answers "not a number".
pub(crate) fn to_number(lua: &Lua, v: Option<&Value>) -> LResult<Option<f64>> {
    Ok(match v {
        None => None,
        Some(v) => lua.coerce_number(v.clone())?,
    })
}

/// `luaL_checklstring(L, n)` on `args[n-1]` (numbers are converted as Lua converts them).
pub(crate) fn check_string(lua: &Lua, args: &[Value], n: usize) -> LResult<mlua::LuaString> {
    let v = args.get(n - 1);
    let s = match v {
        Some(Value::String(s)) => Some(s.clone()),
        Some(v @ (Value::Integer(_) | Value::Number(_))) => lua.coerce_string(v.clone())?,
        _ => None,
    };
    s.ok_or_else(|| arg(n, format!("string expected, got {}", typename(v))))
}

/// C's `(int64_t)d` as x86-64 computes it (`cvttsd2si`): truncation, and the "integer
/// indefinite" value `i64::MIN` for NaN and anything out of range.
pub(crate) fn f64_to_i64_x86(d: f64) -> i64 {
    if !(-9223372036854775808.0..9223372036854775808.0).contains(&d) {
        i64::MIN
    } else {
        d as i64
    }
}

/// `luaL_checkinteger`/`lua_tointeger` on a number: Lua 5.1 casts with `(ptrdiff_t)d`.
pub(crate) fn check_integer(lua: &Lua, args: &[Value], n: usize) -> LResult<i64> {
    Ok(f64_to_i64_x86(check_number(lua, args, n)?))
}
