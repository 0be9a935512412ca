//! The `redis` table scripts see: `redis.call` and `redis.pcall` into the server, and the
//! helpers Redis 7.0 offers beside them (`error_reply`, `status_reply`, `sha1hex`, `log`,
//! `setresp`, `set_repl`, `replicate_commands`, `breakpoint`, `debug`, `acl_check_cmd`, the
//! version and the LOG_* / REPL_* constants).
//!
//! The server is reached through a [`Host`] that [`crate::ScriptVm::run`] lends to the VM for
//! the duration of one script (kept in the VM's app data as a [`RunState`]). Errors keep Redis's
//! shape: a failed `redis.call` raises `{err = "<code> <message>"}` (as a [`Raise`], which the
//! message handler and the sandbox's `pcall` turn into what Redis's Lua would hold), and
//! `redis.pcall` returns that table.

use bytes::{Bytes, BytesMut};
use embedis_protocol::value::decode_value;
use embedis_protocol::Version;
use mlua::{Lua, MultiValue, Table, Value};

use crate::convert::{error_table, lua_to_arg, resp_to_lua};
use crate::errors::Raise;
use crate::sandbox::unlimited;

/// Log levels of `redis.log`, as Redis numbers them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HostLog {
    Debug = 0,
    Verbose = 1,
    Notice = 2,
    Warning = 3,
}

/// What the periodic check during a script decides.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Interrupt {
    Continue,
    /// Stop the script with this error line (SCRIPT KILL, FUNCTION KILL, SHUTDOWN NOSAVE).
    Kill(&'static str),
}

/// The server, as a running script sees it.
pub trait Host {
    /// Runs `args` as a command of the script and appends its reply to `out`, in protocol
    /// `version` (the script's `redis.setresp`). Refusals (unknown command, wrong arity, a
    /// command not allowed from scripts, a write in a read-only script…) are error replies too.
    fn call(&mut self, args: Vec<Bytes>, version: Version, out: &mut BytesMut);
    /// `redis.log`: writes `message` to the server log at `level`.
    fn log(&mut self, level: HostLog, message: &[u8]);
    /// Called every few thousand Lua instructions: time limits, SCRIPT KILL.
    fn interrupt(&mut self) -> Interrupt;
    /// `redis.acl_check_cmd`: does the command exist (the only user may run them all)?
    fn command_exists(&mut self, name: &[u8]) -> bool;
}

/// The state of the script being run, kept in the VM's app data.
pub struct RunState {
    /// The host lent for this run. Only dereferenced while [`crate::ScriptVm::run`] holds the
    /// borrow it was made from.
    pub host: *mut (dyn Host + 'static),
    /// The script's protocol (`redis.setresp`).
    pub resp: Version,
    /// The host said stop: the hook now fires at every instruction.
    pub killed: bool,
}

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
    // handler sees it); redis.pcall returns it.
    redis.raw_set(
        "call",
        lua.create_function(|lua, args: MultiValue| match raw_call(lua, args)? {
            Ok(value) => Ok(value),
            Err(line) => Err(Raise::line(line)),
        })?,
    )?;
    redis.raw_set(
        "pcall",
        lua.create_function(|lua, args: MultiValue| match raw_call(lua, args)? {
            Ok(value) => Ok(value),
            Err(line) => Ok(Value::Table(unlimited(lua, || error_table(lua, &line))?)),
        })?,
    )?;

    redis.raw_set(
        "error_reply",
        lua.create_function(|lua, args: MultiValue| {
            reply_helper(lua, args, |lua, text| {
                let mut line = text.to_vec();
                if line.first() == Some(&b'-') {
                    line.remove(0);
                    Ok(Value::Table(error_table(
                        lua,
                        &with_default_code(&line, true),
                    )?))
                } else {
                    // Redis puts the dash back first: the code is read the same either way.
                    Ok(Value::Table(error_table(
                        lua,
                        &with_default_code(&line, true),
                    )?))
                }
            })
        })?,
    )?;
    redis.raw_set(
        "status_reply",
        lua.create_function(|lua, args: MultiValue| {
            reply_helper(lua, args, |lua, text| {
                let t = lua.create_table_with_capacity(0, 1)?;
                t.raw_set("ok", lua.create_string(text)?)?;
                Ok(Value::Table(t))
            })
        })?,
    )?;
    redis.raw_set(
        "sha1hex",
        lua.create_function(|lua, args: MultiValue| {
            if args.len() != 1 {
                return Err(Raise::err("ERR wrong number of arguments"));
            }
            let text = lua_tostring(&args[0]).unwrap_or_default();
            lua.create_string(crate::sha1_hex(&text))
        })?,
    )?;
    redis.raw_set(
        "log",
        lua.create_function(|lua, args: MultiValue| {
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
        })?,
    )?;
    redis.raw_set(
        "setresp",
        lua.create_function(|lua, args: MultiValue| {
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
        })?,
    )?;
    redis.raw_set(
        "set_repl",
        lua.create_function(|_, args: MultiValue| {
            if args.len() != 1 {
                return Err(Raise::err("ERR redis.set_repl() requires two arguments."));
            }
            match number_of(&args[0]) {
                Some(n) if (0.0..=3.0).contains(&n) => Ok(()),
                _ => Err(Raise::err(
                    "ERR Invalid replication flags. Use REPL_AOF, REPL_REPLICA, REPL_ALL or REPL_NONE.",
                )),
            }
        })?,
    )?;
    // Effects replication is the only mode in Redis 7: the call is accepted and says so.
    redis.raw_set("replicate_commands", lua.create_function(|_, ()| Ok(true))?)?;
    // There is no script debugger: breakpoints are never hit and debug output goes nowhere.
    redis.raw_set("breakpoint", lua.create_function(|_, ()| Ok(false))?)?;
    redis.raw_set("debug", lua.create_function(|_, _: MultiValue| Ok(()))?)?;
    redis.raw_set(
        "acl_check_cmd",
        lua.create_function(|lua, args: MultiValue| {
            let Some(name) = args.front().and_then(lua_tostring) else {
                return Err(Raise::err(
                    "ERR Please specify at least one argument for this redis lib call",
                ));
            };
            if with_host(lua, |host, _| host.command_exists(&name))? {
                Ok(true)
            } else {
                Err(Raise::err(
                    "ERR Invalid command passed to redis.acl_check_cmd()",
                ))
            }
        })?,
    )?;
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

/// `redis.call` / `redis.pcall`: the reply as a Lua value, or the error line of a failure.
fn raw_call(lua: &Lua, args: MultiValue) -> mlua::Result<Result<Value, Vec<u8>>> {
    let fail =
        |_: &Lua, line: &[u8]| -> mlua::Result<Result<Value, Vec<u8>>> { Ok(Err(line.to_vec())) };
    if args.is_empty() {
        return fail(
            lua,
            b"ERR Please specify at least one argument for this redis lib call",
        );
    }
    let mut argv = Vec::with_capacity(args.len());
    for arg in args.iter() {
        match lua_to_arg(arg) {
            Some(bytes) => argv.push(bytes),
            None => {
                return fail(
                    lua,
                    b"ERR Lua redis lib command arguments must be strings or integers",
                )
            }
        }
    }
    let (reply, version) = with_host(lua, |host, resp| {
        let mut out = BytesMut::new();
        host.call(argv, *resp, &mut out);
        (out.freeze(), *resp)
    })?;
    let decoded = match decode_value(&reply) {
        Ok(Some((value, _))) => value,
        _ => return fail(lua, b"ERR the command's reply could not be read"),
    };
    match decoded {
        embedis_protocol::Value::Error(line) | embedis_protocol::Value::BlobError(line) => {
            Ok(Err(line.to_vec()))
        }
        other => Ok(Ok(unlimited(lua, || {
            resp_to_lua(lua, other, version == Version::Resp3)
        })?)),
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

/// An error line with a code: `-CODE msg` keeps its code, anything else gets `ERR`.
fn with_default_code(text: &[u8], had_dash: bool) -> Vec<u8> {
    if had_dash && text.contains(&b' ') {
        return text.to_vec();
    }
    let mut line = b"ERR ".to_vec();
    line.extend_from_slice(text);
    line
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
