//! The `redis` table scripts see: `redis.call` and `redis.pcall` into the server, and the
//! helpers Redis 7.0 offers beside them (`error_reply`, `status_reply`, `sha1hex`, `log`,
//! `setresp`, `set_repl`, `replicate_commands`, `breakpoint`, `debug`, `acl_check_cmd`, the
//! version and the LOG_* / REPL_* constants).
//!
//! The server is reached through a [`Host`] that [`crate::ScriptVm::run`] lends to the VM for
//! the duration of one script (kept in the VM's app data as a [`RunState`]). Errors keep Redis's
//! shape: a failed `redis.call` raises `{err = "<code> <message>"}` (as a [`Raise`], which the
//! message handler and the sandbox's `pcall` turn into what Redis's Lua would hold), and
//! `redis.pcall` returns that table. A failed command's table also carries Redis's
//! `ignore_error_stats_update = true`: errorstats counted the error when the command failed, so
//! the script's reply must not count it again ([`Host::script_error`]).

use bytes::{Bytes, BytesMut};
use embedis_protocol::value::decode_value;
use embedis_protocol::Version;
use mlua::{ffi, Function, Lua, MultiValue, Table, Value};
use std::os::raw::c_int;

use crate::convert::{error_table, pushed_error_table, pushed_error_text, resp_to_lua};
use crate::errors::{counted_error_table, Raise};
use crate::memory_limit::unlimited;

pub use crate::host::{Host, HostLog, Interrupt, RunState};

/// Runs `f` with the host of the running script.
fn with_host<R>(lua: &Lua, f: impl FnOnce(&mut dyn Host, &mut Version) -> R) -> mlua::Result<R> {
    let mut state = lua
        .app_data_mut::<RunState>()
        .ok_or_else(|| Raise::err("ERR redis API called outside of a script"))?;
    let host_ptr = state.host;
    let resp = &mut state.resp;
    // SAFETY: `run` stores the pointer from a `&mut dyn Host` that outlives the Lua call and
    // removes it before returning; nothing else holds the host meanwhile.
    let host = unsafe { &mut *host_ptr };
    Ok(f(host, resp))
}

/// Builds the `redis` table (read-only protection is the sandbox's job).
pub fn redis_table(lua: &Lua) -> mlua::Result<Table> {
    let redis = lua.create_table()?;
    // redis.call raises a failed command's error (as the table `{err = …}` once the message
    // handler sees it); redis.pcall returns it. Both are C functions: see `call_entry`.
    let finish = lua.create_function(|lua, (text, how): (mlua::LuaString, i64)| {
        finish_call(lua, &text.as_bytes(), how)
    })?;
    redis.raw_set("call", command_function(lua, &finish, redis_call)?)?;
    redis.raw_set("pcall", command_function(lua, &finish, redis_pcall)?)?;

    redis.raw_set("error_reply", lua.create_function(lua_error_reply)?)?;
    redis.raw_set("status_reply", lua.create_function(lua_status_reply)?)?;
    redis.raw_set("sha1hex", lua.create_function(lua_sha1hex)?)?;
    redis.raw_set("log", lua.create_function(lua_log)?)?;
    redis.raw_set("setresp", lua.create_function(lua_setresp)?)?;
    redis.raw_set("set_repl", lua.create_function(lua_set_repl)?)?;
    // Effects replication is the only mode in Redis 7: the call is accepted and says so.
    redis.raw_set("replicate_commands", lua.create_function(|_, ()| Ok(true))?)?;
    // The debugger's: they do something only while a session runs (SCRIPT DEBUG SYNC).
    redis.raw_set(
        "breakpoint",
        lua.create_function(|lua, _: MultiValue| Ok(crate::debugger::breakpoint(lua)))?,
    )?;
    redis.raw_set(
        "debug",
        lua.create_function(|lua, values: MultiValue| {
            crate::debugger::debug_values(lua, &values.into_iter().collect::<Vec<_>>());
            Ok(())
        })?,
    )?;
    redis.raw_set("acl_check_cmd", lua.create_function(lua_acl_check_cmd)?)?;
    redis.raw_set("REDIS_VERSION", "7.0.15")?;
    redis.raw_set("REDIS_VERSION_NUM", 0x07000f)?;
    for (name, value) in [
        ("LOG_DEBUG", 0),
        ("LOG_VERBOSE", 1),
        ("LOG_NOTICE", 2),
        ("LOG_WARNING", 3),
        ("REPL_NONE", 0),
        ("REPL_AOF", 1),
        ("REPL_SLAVE", 2),
        ("REPL_REPLICA", 2),
        ("REPL_ALL", 3),
    ] {
        redis.raw_set(name, value)?;
    }
    Ok(redis)
}

/// `redis.error_reply(text)`: the error table Redis makes of `text`. Redis puts a dash first if
/// there is none, so the code is read the same either way.
fn lua_error_reply(lua: &Lua, args: MultiValue) -> mlua::Result<Value> {
    reply_helper(lua, args, |lua, text| {
        let line = text.strip_prefix(b"-").unwrap_or(text);
        Ok(Value::Table(pushed_error_table(lua, line)?))
    })
}

/// `redis.status_reply(text)`: the status table `{ok = text}`.
fn lua_status_reply(lua: &Lua, args: MultiValue) -> mlua::Result<Value> {
    reply_helper(lua, args, |lua, text| {
        let t = lua.create_table_with_capacity(0, 1)?;
        t.raw_set("ok", lua.create_string(text)?)?;
        Ok(Value::Table(t))
    })
}

/// `redis.sha1hex(text)`: the lower-case hex SHA1 of its one argument.
fn lua_sha1hex(lua: &Lua, args: MultiValue) -> mlua::Result<mlua::LuaString> {
    if args.len() != 1 {
        return Err(Raise::err("ERR wrong number of arguments"));
    }
    let text = lua_tostring(&args[0]).unwrap_or_default();
    lua.create_string(crate::sha1_hex(&text))
}

/// `redis.log(level, message…)`: the words joined by spaces, logged by the host at `level`.
fn lua_log(lua: &Lua, args: MultiValue) -> mlua::Result<()> {
    if args.len() < 2 {
        return Err(Raise::err(
            "ERR redis.log() requires two arguments or more.",
        ));
    }
    let level = match &args[0] {
        Value::Integer(i) => *i as f64,
        Value::Number(n) => *n,
        _ => {
            return Err(Raise::err(
                "ERR First argument must be a number (log level).",
            ))
        }
    };
    let level = match level as i64 {
        0 => HostLog::Debug,
        1 => HostLog::Verbose,
        2 => HostLog::Notice,
        3 => HostLog::Warning,
        _ => return Err(Raise::err("ERR Invalid debug level.")),
    };
    let mut message = Vec::new();
    for (i, arg) in args.iter().skip(1).enumerate() {
        if i > 0 {
            message.push(b' ');
        }
        message.extend_from_slice(&lua_tostring(arg).unwrap_or_default());
    }
    with_host(lua, |host, _| host.log(level, &message))?;
    Ok(())
}

/// `redis.setresp(2 | 3)`: the protocol the script's `redis.call` replies are converted from.
fn lua_setresp(lua: &Lua, args: MultiValue) -> mlua::Result<()> {
    if args.len() != 1 {
        return Err(Raise::err("ERR redis.setresp() requires one argument."));
    }
    let version = match number_of(&args[0]) {
        Some(2.0) => Version::Resp2,
        Some(3.0) => Version::Resp3,
        _ => return Err(Raise::err("ERR RESP version must be 2 or 3.")),
    };
    with_host(lua, |_, resp| *resp = version)?;
    Ok(())
}

/// `redis.set_repl(flags)`: where the script's next commands propagate (REPL_AOF, REPL_REPLICA,
/// both or neither), until it says otherwise or ends.
fn lua_set_repl(lua: &Lua, args: MultiValue) -> mlua::Result<()> {
    if args.len() != 1 {
        return Err(Raise::err("ERR redis.set_repl() requires two arguments."));
    }
    match number_of(&args[0]) {
        Some(n) if (0.0..=3.0).contains(&n) => with_host(lua, |host, _| host.set_repl(n as u8)),
        _ => Err(Raise::err(
            "ERR Invalid replication flags. Use REPL_AOF, REPL_REPLICA, REPL_ALL or REPL_NONE.",
        )),
    }
}

/// `redis.acl_check_cmd(command, args…)`: whether the running user may run that command line.
fn lua_acl_check_cmd(lua: &Lua, args: MultiValue) -> mlua::Result<bool> {
    if args.is_empty() {
        return Err(Raise::err(
            "ERR Please specify at least one argument for this redis lib call",
        ));
    }
    let mut line = Vec::with_capacity(args.len());
    for arg in args.iter() {
        let Some(text) = lua_tostring(arg) else {
            return Err(Raise::err(
                "ERR Lua redis lib command arguments must be strings or integers",
            ));
        };
        line.push(Bytes::from(text));
    }
    match with_host(lua, |host, _| host.acl_check(&line))? {
        Some(allowed) => Ok(allowed),
        None => Err(Raise::err(
            "ERR Invalid command passed to redis.acl_check_cmd()",
        )),
    }
}

// `redis.call` and `redis.pcall` are plain Lua C functions rather than mlua callbacks. An mlua
// callback turns every argument into a registry-backed `Value`, collects them in a `MultiValue`,
// and wraps the call in a panic guard and a stack guard; for the two or three short strings of a
// typical `redis.call` that was most of its cost. Here the arguments are read straight off the
// Lua stack into one buffer, and the replies scripts mostly get — integers, bulks, nulls,
// statuses and flat arrays of those, in RESP2 — are pushed straight onto it. Everything else
// (errors, RESP3, nested replies, the refusals) goes to `finish_call`, an ordinary mlua
// callback run by `lua_call`, so those cases keep their exact former behaviour: the same
// conversions, and errors raised as the same mlua error object.

/// `how` bits for [`finish_call`].
const HOW_PCALL: i64 = 1;
/// The text is an error line, not a RESP reply.
const HOW_LINE: i64 = 2;
/// The script runs in RESP3 (`redis.setresp(3)`).
const HOW_RESP3: i64 = 4;
/// Raise the error even from `redis.pcall` (no script is running).
const HOW_ALWAYS_RAISE: i64 = 8;
/// A Rust panic happened: re-raise it from inside an mlua callback, where mlua carries it out
/// to the Rust caller of the script as it does for any callback's panic.
const HOW_PANIC: i64 = 16;

/// The largest reply buffer and argument list kept between calls: a script that once read a
/// big value should not hold its size for good.
const KEEP_REPLY_BYTES: usize = 64 * 1024;
const KEEP_ARGS: usize = 1024;

std::thread_local! {
    /// The reply buffer `redis.call` lends to the host, kept between calls.
    static REPLY: std::cell::Cell<BytesMut> = std::cell::Cell::new(BytesMut::new());
    /// The argument list `redis.call` hands the host, kept between calls.
    static ARGS: std::cell::Cell<Vec<Bytes>> = const { std::cell::Cell::new(Vec::new()) };
    /// A panic caught in `call_command`, on its way to `finish_call`.
    static PANIC: std::cell::Cell<Option<Box<dyn std::any::Any + Send>>> =
        const { std::cell::Cell::new(None) };
}

/// `redis.call` or `redis.pcall` as a C closure whose upvalue is `finish`.
fn command_function(lua: &Lua, finish: &Function, f: ffi::lua_CFunction) -> mlua::Result<Function> {
    // SAFETY: `finish` is on the stack as the one argument; the closure replaces it.
    unsafe { lua.exec_raw::<Function>(finish, |state| ffi::lua_pushcclosure(state, f, 1)) }
}

unsafe extern "C-unwind" fn redis_call(state: *mut ffi::lua_State) -> c_int {
    call_entry(state, 0)
}

unsafe extern "C-unwind" fn redis_pcall(state: *mut ffi::lua_State) -> c_int {
    call_entry(state, HOW_PCALL)
}

/// Runs the command and returns its reply, or hands over to `finish` (upvalue 1), which may raise
/// a Lua error — a longjmp over this frame. So every Rust value with a destructor lives in
/// `call_command` and is gone before `finish` is called.
unsafe fn call_entry(state: *mut ffi::lua_State, pcall: i64) -> c_int {
    let how =
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| call_command(state, pcall)))
        {
            Ok(None) => return 1,
            Ok(Some(how)) => how,
            Err(payload) => {
                PANIC.with(|p| p.set(Some(payload)));
                ffi::lua_pushlstring(state, c"".as_ptr(), 0);
                HOW_PANIC
            }
        };
    // Stack: the arguments, then the text for `finish`.
    ffi::lua_pushvalue(state, ffi::lua_upvalueindex(1));
    ffi::lua_insert(state, -2);
    ffi::lua_pushinteger(state, how as ffi::lua_Integer);
    ffi::lua_call(state, 2, 1);
    1
}

/// The work of `redis.call`: None when the reply is on the stack, else the `how` for
/// `finish_call` with its text pushed.
unsafe fn call_command(state: *mut ffi::lua_State, pcall: i64) -> Option<i64> {
    let lua = Lua::get_or_init_from_ptr(state);
    // Everything pushed here and in `call_entry` (the text, `finish` and `how`, or a reply of
    // at most three slots at a time) fits in the LUA_MINSTACK (20) free slots Lua guarantees a
    // C function above its arguments. No `lua_checkstack`: it refuses once the frame holds
    // 8,000 slots, and `redis.call(unpack(t))` with 7,999 values (unpack's own limit) must
    // run, as in Redis.
    let argc = ffi::lua_gettop(state);
    if argc == 0 {
        return Some(push_line(
            lua,
            state,
            b"ERR Please specify at least one argument for this redis lib call",
            pcall,
        ));
    }
    // One buffer for all the arguments, sized first; numbers are written as Redis writes them
    // (`%.17g`, at most 24 bytes).
    let mut size = 0;
    for i in 1..=argc {
        size += match ffi::lua_type(state, i) {
            ffi::LUA_TSTRING => lua_bytes(state, i).len(),
            ffi::LUA_TNUMBER => 24,
            _ => {
                return Some(push_line(
                    lua,
                    state,
                    b"ERR Lua redis lib command arguments must be strings or integers",
                    pcall,
                ))
            }
        };
    }
    let Some(mut run) = lua.app_data_mut::<RunState>() else {
        return Some(push_line(
            lua,
            state,
            b"ERR redis API called outside of a script",
            HOW_ALWAYS_RAISE,
        ));
    };
    let mut text = BytesMut::with_capacity(size);
    let mut args = ARGS.with(|a| a.take());
    args.clear();
    for i in 1..=argc {
        if ffi::lua_type(state, i) == ffi::LUA_TSTRING {
            text.extend_from_slice(lua_bytes(state, i));
        } else {
            let mut digits = Vec::with_capacity(24);
            embedis_protocol::float::push_g17(&mut digits, ffi::lua_tonumber(state, i));
            text.extend_from_slice(&digits);
        }
        args.push(text.split().freeze());
    }
    let version = run.resp;
    let mut reply = REPLY.with(|r| r.take());
    reply.clear();
    // SAFETY: see `with_host`.
    let host = &mut *run.host;
    let debugged = crate::debugger::stepping(lua);
    if debugged {
        if let Some(mut session) = lua.app_data_mut::<crate::debugger::Session>() {
            session.log_command(&args);
        }
    }
    host.call(&args, version, &mut reply);
    if debugged {
        if let Some(mut session) = lua.app_data_mut::<crate::debugger::Session>() {
            session.log_call(&reply, host.refused());
        }
    }
    drop(run);
    args.clear();
    // Kept for the next call unless a huge command made it huge.
    if args.capacity() <= KEEP_ARGS {
        ARGS.with(|a| a.set(args));
    }
    let how = unlimited(lua, || {
        if version == Version::Resp2 && push_simple_reply(state, &reply) {
            None
        } else {
            ffi::lua_pushlstring(state, reply.as_ptr().cast(), reply.len());
            Some(
                pcall
                    | if version == Version::Resp3 {
                        HOW_RESP3
                    } else {
                        0
                    },
            )
        }
    });
    if reply.capacity() <= KEEP_REPLY_BYTES {
        REPLY.with(|r| r.set(reply));
    }
    how
}

/// Pushes `line` as the text of a failure for `finish_call`.
unsafe fn push_line(lua: &Lua, state: *mut ffi::lua_State, line: &[u8], how: i64) -> i64 {
    unlimited(lua, || {
        ffi::lua_pushlstring(state, line.as_ptr().cast(), line.len())
    });
    how | HOW_LINE
}

/// The bytes of the string at `index`.
unsafe fn lua_bytes<'a>(state: *mut ffi::lua_State, index: c_int) -> &'a [u8] {
    let mut len = 0;
    let ptr = ffi::lua_tolstring(state, index, &mut len);
    std::slice::from_raw_parts(ptr.cast(), len)
}

/// Pushes a RESP2 reply of the common shapes as `resp_to_lua` would convert it: an integer,
/// a bulk or null bulk, a status, or an array (or null array) of integers and bulks. False
/// (nothing pushed) for anything else or anything unexpected. Needs the memory limit lifted:
/// an allocation failure here would be a Lua error outside any protected call.
unsafe fn push_simple_reply(state: *mut ffi::lua_State, reply: &[u8]) -> bool {
    let top = ffi::lua_gettop(state);
    let mut pos = 0;
    let pushed = match reply.first() {
        Some(b'*') => match header(reply, &mut pos) {
            Some(-1) => {
                ffi::lua_pushboolean(state, 0);
                true
            }
            Some(count) if count >= 0 && count <= c_int::MAX as i64 => {
                ffi::lua_createtable(state, count as c_int, 0);
                let mut ok = true;
                for i in 1..=count {
                    if !push_scalar(state, reply, &mut pos) {
                        ok = false;
                        break;
                    }
                    ffi::lua_rawseti(state, -2, i as ffi::lua_Integer);
                }
                ok
            }
            _ => false,
        },
        Some(b'+') => match line_end(reply, 1) {
            Some(end) => {
                ffi::lua_createtable(state, 0, 1);
                ffi::lua_pushlstring(state, c"ok".as_ptr(), 2);
                ffi::lua_pushlstring(state, reply[1..].as_ptr().cast(), end - 1);
                ffi::lua_rawset(state, -3);
                pos = end + 2;
                true
            }
            None => false,
        },
        _ => push_scalar(state, reply, &mut pos),
    };
    if pushed && pos == reply.len() {
        return true;
    }
    ffi::lua_settop(state, top);
    false
}

/// Pushes the integer, bulk or null bulk at `pos`.
unsafe fn push_scalar(state: *mut ffi::lua_State, reply: &[u8], pos: &mut usize) -> bool {
    match reply.get(*pos) {
        Some(b':') => match header(reply, pos) {
            Some(n) => {
                ffi::lua_pushnumber(state, n as f64);
                true
            }
            None => false,
        },
        Some(b'$') => match header(reply, pos) {
            Some(-1) => {
                ffi::lua_pushboolean(state, 0);
                true
            }
            Some(len) if len >= 0 => {
                let start = *pos;
                let end = start + len as usize;
                if reply.len() < end + 2 || &reply[end..end + 2] != b"\r\n" {
                    return false;
                }
                ffi::lua_pushlstring(state, reply[start..].as_ptr().cast(), len as usize);
                *pos = end + 2;
                true
            }
            _ => false,
        },
        _ => false,
    }
}

/// The number after the type byte at `pos` up to CRLF; moves `pos` past the line.
fn header(reply: &[u8], pos: &mut usize) -> Option<i64> {
    let end = line_end(reply, *pos + 1)?;
    let digits = &reply[*pos + 1..end];
    if digits.first() == Some(&b'+') {
        return None; // Rust's parse would take it; leave oddities to `decode_value`.
    }
    let n = std::str::from_utf8(digits).ok()?.parse().ok()?;
    *pos = end + 2;
    Some(n)
}

/// Where the CRLF that ends the line starting at `from` is.
fn line_end(reply: &[u8], from: usize) -> Option<usize> {
    let rest = reply.get(from..)?;
    let cr = rest.iter().position(|&b| b == b'\r')?;
    (rest.get(cr + 1) == Some(&b'\n')).then_some(from + cr)
}

/// The rest of `redis.call` / `redis.pcall` for the cases `call_command` leaves: a reply to
/// decode and convert, or an error (line or error reply) to raise or return as `{err = …}`.
fn finish_call(lua: &Lua, text: &[u8], how: i64) -> mlua::Result<Value> {
    if how & HOW_PANIC != 0 {
        if let Some(payload) = PANIC.with(|p| p.take()) {
            std::panic::resume_unwind(payload);
        }
    }
    let line = if how & HOW_LINE != 0 {
        text.to_vec()
    } else {
        match decode_value(&Bytes::copy_from_slice(text)) {
            Ok(Some((
                embedis_protocol::Value::Error(line) | embedis_protocol::Value::BlobError(line),
                _,
            ))) => line.to_vec(),
            Ok(Some((other, _))) => {
                return unlimited(lua, || resp_to_lua(lua, other, how & HOW_RESP3 != 0));
            }
            _ => b"ERR the command's reply could not be read".to_vec(),
        }
    };
    // Redis pushes every error it hands the script through `luaPushErrorBuff`.
    let line = pushed_error_text(&line);
    // A line of our own (bad arguments) is no command's failure: nothing counted it yet.
    let counted = how & HOW_LINE == 0;
    if how & HOW_ALWAYS_RAISE != 0 {
        Err(Raise::line(line))
    } else if how & HOW_PCALL != 0 {
        Ok(Value::Table(unlimited(lua, || {
            if counted {
                counted_error_table(lua, &line)
            } else {
                error_table(lua, &line)
            }
        })?))
    } else if counted {
        Err(Raise::counted(line))
    } else {
        Err(Raise::line(line))
    }
}

/// `error_reply` and `status_reply`: one string argument, else the error table Redis returns.
fn reply_helper(
    lua: &Lua,
    args: MultiValue,
    make: impl FnOnce(&Lua, &[u8]) -> mlua::Result<Value>,
) -> mlua::Result<Value> {
    match (args.len(), args.front()) {
        (1, Some(Value::String(s))) => make(lua, &s.as_bytes()),
        _ => Ok(Value::Table(error_table(
            lua,
            b"ERR wrong number or type of arguments",
        )?)),
    }
}

/// Lua's `lua_tolstring`: strings, and numbers in Lua's own `%.14g`.
fn lua_tostring(value: &Value) -> Option<Vec<u8>> {
    match value {
        Value::String(s) => Some(s.as_bytes().to_vec()),
        Value::Integer(i) => Some(lua_number_text(*i as f64)),
        Value::Number(n) => Some(lua_number_text(*n)),
        _ => None,
    }
}

/// A number as Lua 5.1 turns it into a string (`%.14g`).
pub fn lua_number_text(n: f64) -> Vec<u8> {
    let mut out = Vec::new();
    embedis_protocol::float::push_g(&mut out, n, 14);
    out
}

fn number_of(value: &Value) -> Option<f64> {
    match value {
        Value::Integer(i) => Some(*i as f64),
        Value::Number(n) => Some(*n),
        Value::String(s) => std::str::from_utf8(&s.as_bytes()).ok()?.trim().parse().ok(),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{HostLog, ScriptVm};
    use embedis_protocol::Writer;

    /// Answers every command with `reply` and remembers the arguments it was given.
    struct CannedHost {
        reply: Vec<u8>,
        args: Vec<Vec<u8>>,
    }

    impl Host for CannedHost {
        fn call(&mut self, args: &[Bytes], _version: Version, out: &mut BytesMut) {
            self.args = args.iter().map(|a| a.to_vec()).collect();
            out.extend_from_slice(&self.reply);
        }
        fn log(&mut self, _level: HostLog, _message: &[u8]) {}
        fn interrupt(&mut self) -> Interrupt {
            Interrupt::Continue
        }
        fn acl_check(&mut self, _args: &[Bytes]) -> Option<bool> {
            Some(true)
        }
    }

    /// Describes a Lua value, tables included, so two conversions can be compared exactly.
    const DESCRIBE: &str = r#"
        local function d(v)
            if type(v) ~= 'table' then return type(v) .. ':' .. tostring(v) end
            local keys = {}
            for k in pairs(v) do keys[#keys + 1] = k end
            table.sort(keys, function(a, b) return tostring(a) < tostring(b) end)
            local s = '{'
            for _, k in ipairs(keys) do s = s .. tostring(k) .. '=' .. d(v[k]) .. ',' end
            return s .. '}'
        end
        return d
    "#;

    fn script(vm: &mut ScriptVm, host: &mut CannedHost, code: &str) -> String {
        let code = format!("local d = (function() {DESCRIBE} end)() {code}");
        let sha = vm.load_script(&Bytes::from(code)).unwrap();
        let function = vm.script_function(&sha).unwrap();
        let mut buf = BytesMut::new();
        let mut out = Writer::new(&mut buf, Version::Resp2);
        match vm.run(host, &function, &sha, &[], &[], &mut out) {
            Ok(()) => String::from_utf8_lossy(&buf).into_owned(),
            Err(line) => format!("-{}", String::from_utf8_lossy(&line)),
        }
    }

    /// The direct path for common replies gives what decoding and `resp_to_lua` give.
    #[test]
    fn direct_replies_match_the_decoded_conversion() {
        let mut vm = ScriptVm::new(1 << 30).unwrap();
        let describe: Function = vm.lua().load(DESCRIBE).eval().unwrap();
        let replies: &[&[u8]] = &[
            b":0\r\n",
            b":-12\r\n",
            b":9223372036854775807\r\n",
            b"$-1\r\n",
            b"$0\r\n\r\n",
            b"$5\r\nh\r\nlo\r\n",
            b"$3\r\na\x00b\r\n",
            b"+OK\r\n",
            b"+\r\n",
            b"*-1\r\n",
            b"*0\r\n",
            b"*3\r\n:1\r\n$-1\r\n$2\r\nab\r\n",
            b"*2\r\n*1\r\n:1\r\n:2\r\n",
            b"*2\r\n+OK\r\n-ERR inner\r\n",
            b"_\r\n",
            b",1.5\r\n",
        ];
        for reply in replies {
            let mut host = CannedHost {
                reply: reply.to_vec(),
                args: Vec::new(),
            };
            let direct = script(&mut vm, &mut host, "return d(redis.call('x'))");
            let decoded = decode_value(&Bytes::copy_from_slice(reply))
                .unwrap()
                .unwrap()
                .0;
            let value = resp_to_lua(vm.lua(), decoded, false).unwrap();
            let expected: String = describe.call(value).unwrap();
            assert_eq!(
                direct,
                format!("${}\r\n{expected}\r\n", expected.len()),
                "reply {:?}",
                String::from_utf8_lossy(reply)
            );
        }
    }

    #[test]
    fn arguments_errors_and_bad_replies() {
        let mut vm = ScriptVm::new(1 << 30).unwrap();
        let mut host = CannedHost {
            reply: b"-WRONGTYPE bad\r\n".to_vec(),
            args: Vec::new(),
        };
        let out = script(
            &mut vm,
            &mut host,
            "return redis.pcall('a', 1, 0.5, '', 'b\\0c')",
        );
        assert_eq!(out, "-WRONGTYPE bad\r\n");
        assert_eq!(
            host.args,
            [&b"a"[..], b"1", b"0.5", b"", b"b\0c"].map(|a| a.to_vec())
        );
        let out = script(&mut vm, &mut host, "return redis.call('a')");
        assert!(out.starts_with("-WRONGTYPE bad script: "), "{out}");
        let out = script(
            &mut vm,
            &mut host,
            "local ok, e = pcall(redis.call, 'a') return {tostring(ok), e}",
        );
        assert_eq!(out, "*2\r\n$5\r\nfalse\r\n$13\r\nWRONGTYPE bad\r\n");
        let out = script(&mut vm, &mut host, "return d(redis.pcall({}))");
        assert_eq!(
            out,
            "$77\r\n{err=string:ERR Lua redis lib command arguments must be strings or integers,}\r\n"
        );
        let out = script(&mut vm, &mut host, "return redis.call()");
        assert!(
            out.starts_with(
                "-ERR Please specify at least one argument for this redis lib call script: "
            ),
            "{out}"
        );
        host.reply = b"$3\r\nab".to_vec();
        let out = script(&mut vm, &mut host, "return redis.pcall('a')");
        assert_eq!(out, "-ERR the command's reply could not be read\r\n");
    }
}
