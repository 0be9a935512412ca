//! Script errors in Redis 7's shapes.
//!
//! Inside Lua an error is a table `{err = "<CODE> <message>"}`; Redis's message handler adds
//! `source` and `line` — where in the user's code the error happened — and the reply to the
//! client becomes `-<err> script: <sha or function name>, on <source>:<line>.`. A plain string
//! error (`error("x")`, a runtime error) becomes `ERR user_script:1: x` first.
//!
//! Rust callbacks cannot raise a Lua table: they raise [`Raise`], which the message handler
//! (and the sandbox's `pcall`) turn into the table Redis would have raised.

use mlua::{Lua, Table, Value};

use crate::convert::error_table;

/// The chunk name of the sandbox's own Lua code: the message handler skips its frames when it
/// looks for the user's line.
pub const INTERNAL_CHUNK: &str = "=[embedis]";

/// An error a Rust callback raises as Redis's error table `{err = line}`; `counted` for a
/// failed command's error (see `counted_error_table`).
#[derive(Debug, Clone)]
pub struct Raise(pub Vec<u8>, pub bool);

impl std::fmt::Display for Raise {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&String::from_utf8_lossy(&self.0))
    }
}

impl std::error::Error for Raise {}

impl Raise {
    /// The mlua error carrying `line`.
    pub fn err(line: &str) -> mlua::Error {
        Raise::line(line.as_bytes().to_vec())
    }

    pub fn line(line: Vec<u8>) -> mlua::Error {
        mlua::Error::external(Raise(line, false))
    }

    /// A failed command's error, raised by `redis.call`.
    pub fn counted(line: Vec<u8>) -> mlua::Error {
        mlua::Error::external(Raise(line, true))
    }

    /// A plain message raised without the caller's position, as Redis's read-only tables
    /// refuse `rawset`/`setmetatable`: `pcall` sees the bare message, the reply `ERR <message>`.
    pub fn bare(message: &str) -> mlua::Error {
        mlua::Error::external(Bare(message.to_string()))
    }
}

/// See [`Raise::bare`].
#[derive(Debug, Clone)]
pub struct Bare(pub String);

impl std::fmt::Display for Bare {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Bare {}

/// The message of a [`Raise::bare`] error.
fn bare_message(error: &mlua::Error) -> Option<&str> {
    match root(error) {
        mlua::Error::ExternalError(e) => e.downcast_ref::<Bare>().map(|b| b.0.as_str()),
        _ => None,
    }
}

/// The error at the bottom of mlua's wrapping.
fn root(error: &mlua::Error) -> &mlua::Error {
    match error {
        mlua::Error::CallbackError { cause, .. } => root(cause),
        mlua::Error::WithContext { cause, .. } => root(cause),
        other => other,
    }
}

/// An mlua error as the value Lua code would have seen had a C function raised it: the error
/// table for [`Raise`], else the message string.
pub fn lua_error_value(lua: &Lua, error: &mlua::Error) -> mlua::Result<Value> {
    match root(error) {
        mlua::Error::ExternalError(e) => match e.downcast_ref::<Raise>() {
            Some(Raise(line, true)) => Ok(Value::Table(counted_error_table(lua, line)?)),
            Some(raise) => Ok(Value::Table(error_table(lua, &raise.0)?)),
            None => Ok(Value::String(lua.create_string(e.to_string())?)),
        },
        mlua::Error::RuntimeError(msg) | mlua::Error::MemoryError(msg) => {
            Ok(Value::String(lua.create_string(msg)?))
        }
        mlua::Error::SyntaxError { message, .. } => Ok(Value::String(lua.create_string(message)?)),
        other => Ok(Value::String(lua.create_string(other.to_string())?)),
    }
}

/// Where the user's code is: the first Lua frame from `level` up that is not the sandbox's own
/// code. (source, short source, line).
fn user_frame(lua: &Lua, from_level: usize) -> Option<(String, String, i64)> {
    for level in from_level..from_level + 16 {
        let frame = lua.inspect_stack(level, |debug| {
            let source = debug.source();
            (
                source.what.to_string(),
                source.source.as_deref().unwrap_or_default().to_string(),
                source.short_src.as_deref().unwrap_or_default().to_string(),
                debug.current_line().map_or(-1, |l| l as i64),
            )
        })?;
        let (what, source, short_src, line) = frame;
        if what == "C" || source == INTERNAL_CHUNK {
            continue;
        }
        return Some((source, short_src, line));
    }
    None
}

/// The message handler scripts run under (Redis's `__redis__err__handler`): every error
/// becomes a table with `err`, `source` and `line`.
pub fn message_handler(lua: &Lua, err: Value) -> mlua::Result<Table> {
    // Level 0 is this handler, level 1 the function that raised.
    let frame = user_frame(lua, 1);
    let table = match err {
        Value::Table(t) => t,
        Value::Error(e) if bare_message(&e).is_some() => {
            let mut line = b"ERR ".to_vec();
            line.extend_from_slice(bare_message(&e).unwrap_or_default().as_bytes());
            error_table(lua, &line)?
        }
        Value::Error(e) => match lua_error_value(lua, &e)? {
            Value::Table(t) => t,
            other => {
                // A C function's error: luaL_error prefixes the caller's position.
                let mut line = b"ERR ".to_vec();
                if let Some((_, short_src, l)) = &frame {
                    line.extend_from_slice(format!("{short_src}:{l}: ").as_bytes());
                }
                line.extend_from_slice(&tostring(lua, other)?);
                error_table(lua, &line)?
            }
        },
        other => {
            let mut line = b"ERR ".to_vec();
            line.extend_from_slice(&tostring(lua, other)?);
            error_table(lua, &line)?
        }
    };
    if let Some((source, _, line)) = frame {
        table.raw_set("source", source)?;
        table.raw_set("line", line)?;
    }
    Ok(table)
}

/// Lua's `tostring`.
fn tostring(lua: &Lua, value: Value) -> mlua::Result<Vec<u8>> {
    let tostring: mlua::Function = lua.globals().get("tostring")?;
    let s: mlua::LuaString = tostring.call(value)?;
    Ok(s.as_bytes().to_vec())
}

/// The error reply line (without `-` and CRLF) for a script that failed with `err`, run under
/// the name `name` (the script's SHA1, or the function's name).
pub fn failure_line(lua: &Lua, err: Value, name: &str) -> Vec<u8> {
    let table = match err {
        Value::Table(t) => t,
        // Errors the handler never saw (out of memory) arrive as strings.
        Value::String(s) => {
            let mut line = b"ERR ".to_vec();
            line.extend_from_slice(&s.as_bytes());
            return line;
        }
        Value::Error(e) => {
            let mut line = b"ERR ".to_vec();
            line.extend_from_slice(root(&e).to_string().as_bytes());
            return line;
        }
        _ => return b"ERR unknown error".to_vec(),
    };
    // Redis reads the message as a C string, and turns its line breaks into spaces without
    // trimming any (`addReplyErrorSdsExSafe`): the suffix follows them.
    let mut line = match table.raw_get::<Value>("err") {
        Ok(Value::String(s)) => crate::convert::c_str(&s.as_bytes()).to_vec(),
        Ok(v @ (Value::Integer(_) | Value::Number(_))) => {
            tostring(lua, v).unwrap_or_else(|_| b"ERR unknown error".to_vec())
        }
        _ => b"ERR unknown error".to_vec(),
    };
    let source = table
        .raw_get::<Option<mlua::LuaString>>("source")
        .ok()
        .flatten();
    let at = table.raw_get::<Option<i64>>("line").ok().flatten();
    if let (Some(source), Some(at)) = (source, at) {
        line.extend_from_slice(format!(" script: {name}, on ").as_bytes());
        line.extend_from_slice(&source.as_bytes());
        line.extend_from_slice(format!(":{at}.").as_bytes());
    }
    crate::convert::error_text(&line)
}

/// The error table of a command the script ran: errorstats counted the error when the command
/// failed, and Redis's field (visible to the script, as in Redis) says not to count it again
/// should the script return or raise it.
pub(crate) fn counted_error_table(lua: &Lua, line: &[u8]) -> mlua::Result<Table> {
    let t = error_table(lua, line)?;
    t.raw_set(IGNORE_STATS, true)?;
    Ok(t)
}

/// The field Redis 7.0 adds to a failed command's error table.
pub(crate) const IGNORE_STATS: &str = "ignore_error_stats_update";
