//! The Lua VM Redis scripts run in, and the script cache.
//!
//! [`ScriptVm`] is one Lua 5.1 state, created the way Redis 7.0 creates its own: the `base`,
//! `table`, `string` and `math` libraries plus `bit`, `cjson`, `cmsgpack` and `struct`; no `os`,
//! `io`, `package`, `debug`, `print`, `dofile`, `loadfile` or `require`; no bytecode; the globals
//! and every library table read-only (`Attempt to modify a readonly table`), and reading a global
//! that does not exist an error (`Script attempted to access nonexistent global variable …`).
//! As Redis 7.4 (and later) they also have an `os` table holding `clock` alone ([`ScriptVm::with_os_clock`]).
//!
//! Redis gets read-only tables from a patched Lua; plain Lua 5.1 has no such thing, so each
//! protected table is an empty proxy whose `__index` is the real table and whose `__newindex`
//! refuses. `rawset`, `setmetatable`, `rawget`, `next` and `pairs` see through the proxies, so a
//! script cannot write around them and can still walk `_G` or `string`; `getmetatable` never
//! hands out a proxy's own metatable or the string metatable (writing to either would unprotect
//! a table for every later script), only read-only views shaped like Redis's. KEYS and ARGV are
//! written into the real globals table before each call. SCRIPT FLUSH replaces the whole VM, as
//! Redis does.
//!
//! Scripts compile once and are cached by SHA1 (EVAL fills the cache too). Each run gets fresh
//! KEYS and ARGV, the host that runs its commands and the protocol
//! version 2; it runs under Redis's message handler, and a count hook asks the host every
//! [`HOOK_INSTRUCTIONS`] instructions whether to stop (time limit, SCRIPT KILL).

use bytes::Bytes;
use embedis_protocol::{Version, Writer};
use mlua::{
    ffi, Function, HookTriggers, IntoLua, Lua, LuaOptions, MultiValue, RegistryKey, StdLib, Table,
    Value, VmState,
};
use std::collections::HashMap;

use crate::bridge::{Host, Interrupt, RunState};
use crate::errors::{failure_line, lua_error_value, message_handler, Raise};
use crate::memory_limit::unlimited;
use crate::scripts::{parse_shebang, ScriptFlags};

pub use crate::errors::INTERNAL_CHUNK;

/// How often the running script's host is asked whether to go on (Redis: every 100,000).
pub const HOOK_INSTRUCTIONS: u32 = 100_000;

/// The globals Redis 7.0 leaves in a script's environment (plus KEYS and ARGV, set per call).
const KEPT_GLOBALS: &[&str] = &[
    "_G",
    "_VERSION",
    "assert",
    "collectgarbage",
    "coroutine",
    "error",
    "gcinfo",
    "getmetatable",
    "ipairs",
    "load",
    "loadstring",
    "math",
    "next",
    "pairs",
    "pcall",
    "rawequal",
    "rawget",
    "rawset",
    "select",
    "setmetatable",
    "string",
    "table",
    "tonumber",
    "tostring",
    "type",
    "unpack",
    "xpcall",
];

/// Library tables made read-only besides the globals themselves.
const PROTECTED_LIBRARIES: &[&str] = &[
    "coroutine",
    "os",
    "math",
    "string",
    "table",
    "redis",
    "bit",
    "cjson",
    "cmsgpack",
    "struct",
];

/// The sandbox's setup, run once on the real globals table.
const SANDBOX_SETUP: &str = r#"
local backing, libraries, to_error_value = ...
local error, rawget, setmetatable, type, tostring, pcall =
    error, rawget, setmetatable, type, tostring, pcall

-- proxy -> the table it protects
local protected = setmetatable({}, {__mode = 'k'})
local function refuse() error('Attempt to modify a readonly table', 2) end
local function protect(t)
    local proxy = {}
    protected[proxy] = t
    return setmetatable(proxy, {__index = t, __newindex = refuse})
end
for i = 1, #libraries do
    local name = libraries[i]
    if rawget(backing, name) ~= nil then backing[name] = protect(backing[name]) end
end
local globals = protect(backing)
backing._G = globals
local function missing(_, name)
    error("Script attempted to access nonexistent global variable '" .. tostring(name) .. "'", 2)
end
setmetatable(backing, {__index = missing})

-- What `getmetatable` shows a script (see `install_raw_access`): the proxies' own metatables
-- stay out of reach, since writing to one (`__index = {}`) would unprotect the table for every
-- later script. `_G` shows a read-only table holding the missing-global handler; strings show
-- a read-only view of their metatable, whose `__index` is the protected `string` table.
local views = {}
views[globals] = protect({__index = missing})
local string_meta = getmetatable('')
string_meta.__index = backing.string
views[1] = protect(string_meta)

-- Redis's pcall hands a script the message of an error table ({err = "ERR …"}), not the
-- table; errors raised by the Rust side arrive as mlua's error objects and are read the same way.
local function settle(ok, ...)
    if ok then return ok, ... end
    local e = ...
    if type(e) == 'userdata' then e = to_error_value(e) end
    if type(e) == 'table' then
        local message = e.err
        if type(message) == 'string' or type(message) == 'number' then e = message end
    end
    return false, e
end
backing.pcall = function(...) return settle(pcall(...)) end

return globals, protected, views
"#;

/// A compiled EVAL script. Its function is held in the Lua registry, not as an mlua `Function`:
/// mlua keeps each live `Function` on one auxiliary Lua stack, which Lua 5.1 caps at about 8,000
/// slots, so holding every cached script that way ran out of stack near 8,000 SCRIPT LOADs.
pub struct Script {
    function: RegistryKey,
    pub flags: ScriptFlags,
    pub body: Bytes,
}

/// The Lua VM scripts run in.
pub struct ScriptVm {
    lua: Lua,
    /// The real globals table (scripts see its read-only proxy).
    backing: Table,
    handler: Function,
    scripts: HashMap<String, Script>,
    /// The limit the VM was made with (SCRIPT FLUSH makes the next one alike).
    memory_limit: usize,
    /// Loads and runs since the last garbage-collection step ([`ScriptVm::gc_tick`]).
    gc_count: u32,
    /// The VM has Redis 7.4's `os.clock` (SCRIPT FLUSH makes the next one alike).
    os_clock: bool,
}

/// Every this many script loads or runs the VM takes one incremental collection step of this
/// size, as Redis 7.4 does (`luaGC`, LUA_GC_CYCLE_PERIOD): without it, loading tens of
/// thousands of scripts leaves their garbage to Lua's own pacing and the VM grows far larger.
const GC_CYCLE_PERIOD: u32 = 50;

impl ScriptVm {
    /// A fresh VM whose allocations may not pass `memory_limit` bytes (0 = no limit), as
    /// Redis 7.0's.
    pub fn new(memory_limit: usize) -> mlua::Result<ScriptVm> {
        ScriptVm::with_os_clock(memory_limit, false)
    }

    /// A fresh VM as [`ScriptVm::new`]; with `os_clock`, as Redis 7.4's: the globals have an
    /// `os` table whose only function is `clock` (the process's CPU time, C's `clock()`).
    pub fn with_os_clock(memory_limit: usize, os_clock: bool) -> mlua::Result<ScriptVm> {
        let mut libs = StdLib::TABLE | StdLib::STRING | StdLib::MATH;
        if os_clock {
            libs |= StdLib::OS;
        }
        let lua = Lua::new_with(libs, LuaOptions::new())?;
        let backing = lua.globals();
        install_libraries(&lua, &backing)?;
        if os_clock {
            keep_only_os_clock(&lua, &backing)?;
        }
        let redis = crate::bridge::redis_table(&lua)?;
        backing.raw_set("redis", redis)?;
        let handler = lua.create_function(|lua, err: Value| message_handler(lua, err))?;
        backing.raw_set("__redis__err__handler", handler.clone())?;
        // Everything Redis does not offer goes.
        let names: Vec<String> = backing
            .pairs::<String, Value>()
            .flatten()
            .map(|(k, _)| k)
            .collect();
        for name in names {
            let kept = KEPT_GLOBALS.contains(&name.as_str())
                || PROTECTED_LIBRARIES.contains(&name.as_str())
                || name == "__redis__err__handler";
            if !kept {
                backing.raw_set(name, Value::Nil)?;
            }
        }
        let to_error_value = lua.create_function(|lua, err: Value| match err {
            Value::Error(e) => lua_error_value(lua, &e),
            other => Ok(other),
        })?;
        let libraries = lua.create_sequence_from(PROTECTED_LIBRARIES.iter().copied())?;
        let (globals, protected, views): (Table, Table, Table) = lua
            .load(SANDBOX_SETUP)
            .set_name(INTERNAL_CHUNK)
            .call((backing.clone(), libraries, to_error_value))?;
        install_raw_access(&lua, &backing, &protected, &views)?;
        lua.set_globals(globals)?;
        if memory_limit > 0 {
            lua.set_memory_limit(memory_limit)?;
        }
        lua.set_hook(
            HookTriggers::new().every_nth_instruction(HOOK_INSTRUCTIONS),
            hook,
        )?;
        Ok(ScriptVm {
            lua,
            backing,
            handler,
            scripts: HashMap::new(),
            memory_limit,
            gc_count: 0,
            os_clock,
        })
    }

    pub fn lua(&self) -> &Lua {
        &self.lua
    }

    /// Compiles `body` into the cache (if it is not there yet) and returns its SHA1. The error
    /// is the reply line for a script Redis would refuse.
    pub fn load_script(&mut self, body: &Bytes) -> Result<String, Vec<u8>> {
        let sha = crate::sha1_hex(body);
        if self.scripts.contains_key(&sha) {
            return Ok(sha);
        }
        let (flags, code) = parse_shebang(body).map_err(|e| e.0)?;
        let compiled = self.lua.load(code).set_name("@user_script").into_function();
        self.gc_tick();
        let function = compiled.map_err(|e| {
            let mut line = b"ERR Error compiling script (new function): ".to_vec();
            line.extend_from_slice(compile_message(&e).as_bytes());
            crate::convert::error_text(&line)
        })?;
        let function = self
            .lua
            .create_registry_value(function)
            .map_err(|e| format!("ERR {e}").into_bytes())?;
        self.scripts.insert(
            sha.clone(),
            Script {
                function,
                flags,
                body: body.clone(),
            },
        );
        Ok(sha)
    }

    pub fn script(&self, sha: &str) -> Option<&Script> {
        self.scripts.get(sha)
    }

    /// The compiled function of the cached script `sha`, for [`ScriptVm::run`].
    pub fn script_function(&self, sha: &str) -> Option<Function> {
        let script = self.scripts.get(sha)?;
        self.lua.registry_value(&script.function).ok()
    }

    pub fn script_count(&self) -> usize {
        self.scripts.len()
    }

    /// Bytes of the cached scripts' bodies (INFO used_memory_scripts_eval).
    pub fn scripts_memory(&self) -> usize {
        self.scripts.values().map(|s| s.body.len() + 40).sum()
    }

    /// SCRIPT FLUSH: like Redis, a fresh VM, so that nothing a script left behind (a Lua
    /// stack grown to thousands of slots by `unpack`, garbage) outlives it; only the rand48
    /// generator, one per process in Redis, runs on.
    pub fn flush_scripts(&mut self) {
        let rand_state = crate::libs::rand48::state(&self.lua);
        match ScriptVm::with_os_clock(self.memory_limit, self.os_clock) {
            Ok(fresh) => {
                crate::libs::rand48::set_state(&fresh.lua, rand_state);
                *self = fresh;
            }
            Err(_) => {
                self.scripts.clear();
                let _ = self.lua.gc_collect();
            }
        }
    }

    /// Bytes the Lua VM uses (INFO used_memory_lua).
    pub fn used_memory(&self) -> usize {
        self.lua.used_memory()
    }

    /// [`ScriptVm::run`] under a debugging session (SCRIPT DEBUG SYNC, see
    /// [`crate::debugger`]): the script stops before its first line and the client drives it
    /// through the host's debugging I/O; `source` is what the debugger lists. Once it ends, the
    /// session's last lines ("<endsession>") go to the client, ahead of the reply in `out`.
    #[allow(clippy::too_many_arguments)]
    pub fn run_debugged(
        &mut self,
        host: &mut dyn Host,
        function: &Function,
        name: &str,
        keys: &[Bytes],
        argv: &[Bytes],
        out: &mut Writer<'_>,
        source: &[u8],
        timeout: std::time::Duration,
    ) -> Result<(), Vec<u8>> {
        self.lua
            .set_app_data(crate::debugger::Session::new(source, timeout));
        let _ = self.lua.set_hook(
            HookTriggers::new()
                .every_line()
                .every_nth_instruction(HOOK_INSTRUCTIONS),
            crate::debugger::line_hook,
        );
        let result = self.run(host, function, name, keys, argv, out);
        rearm_hook(&self.lua);
        if let Some(mut session) = self.lua.remove_app_data::<crate::debugger::Session>() {
            host.debug_write(&session.finish());
        }
        result
    }

    /// Runs `function` with `keys` and `argv`, its commands served by `host`, and writes its
    /// result to `out`. On failure returns the error reply line; `name` is what the error calls
    /// the script (its SHA1 or the function's name).
    pub fn run(
        &mut self,
        host: &mut dyn Host,
        function: &Function,
        name: &str,
        keys: &[Bytes],
        argv: &[Bytes],
        out: &mut Writer<'_>,
    ) -> Result<(), Vec<u8>> {
        unlimited(&self.lua, || self.set_keys_and_argv(keys, argv))
            .map_err(|e| format!("ERR {e}").into_bytes())?;
        // SAFETY (lifetime): the pointer is removed from the app data before this function
        // returns, and only dereferenced by callbacks running inside the call below.
        let host: *mut (dyn Host + '_) = host;
        let host: *mut (dyn Host + 'static) = unsafe { std::mem::transmute(host) };
        self.lua.set_app_data(RunState {
            host,
            resp: Version::Resp2,
            killed: false,
        });
        let result = self.call_under_handler(function);
        let state = self.lua.remove_app_data::<RunState>();
        self.gc_tick();
        if state.as_ref().is_some_and(|s| s.killed) {
            // The hook had switched to every instruction to stop the script.
            let _ = self.lua.set_hook(
                HookTriggers::new().every_nth_instruction(HOOK_INSTRUCTIONS),
                hook,
            );
        }
        let script_resp3 = state.is_some_and(|s| s.resp == Version::Resp3);
        // SAFETY: the borrow `host` was made from is still held; no Lua code runs any more.
        let host = unsafe { &mut *host };
        match result {
            Ok((ok, value)) => {
                if ok {
                    if let Some((line, counted)) = returned_error(&value) {
                        host.script_error(&line, counted);
                    }
                    unlimited(&self.lua, || {
                        crate::convert::write_lua_reply(out, &value, script_resp3)
                    });
                    Ok(())
                } else {
                    let counted = match &value {
                        Value::Table(t) => is_counted(t),
                        _ => false,
                    };
                    let line = failure_line(&self.lua, value, name);
                    host.script_error(&line, counted);
                    if line.starts_with(b"ERR not enough memory") {
                        let _ = self.lua.gc_collect();
                    }
                    Err(line)
                }
            }
            Err(e) => Err(crate::convert::error_text(format!("ERR {e}").as_bytes())),
        }
    }

    /// Runs `function` as Lua's `xpcall(function, handler)` would — `xpcall` is a `lua_pcall`
    /// with the handler as its message handler — and returns its status and first result (or
    /// what the handler made of the error). Done directly, it saves a second protected call, the
    /// Lua function call to `xpcall` and mlua's handling of the outer call's results.
    /// Counts one load or run and every [`GC_CYCLE_PERIOD`] takes a collection step.
    pub fn gc_tick(&mut self) {
        self.gc_count += 1;
        if self.gc_count < GC_CYCLE_PERIOD {
            return;
        }
        self.gc_count = 0;
        let _ = self.lua.exec_raw_lua(|raw| unsafe {
            ffi::lua_gc(
                raw.state(),
                ffi::LUA_GCSTEP,
                GC_CYCLE_PERIOD as std::os::raw::c_int,
            );
            Ok::<(), mlua::Error>(())
        });
    }

    fn call_under_handler(&self, function: &Function) -> mlua::Result<(bool, Value)> {
        self.lua.exec_raw_lua(|raw| unsafe {
            let state = raw.state();
            if ffi::lua_checkstack(state, 3) == 0 {
                return Err(mlua::Error::StackError);
            }
            let top = ffi::lua_gettop(state);
            (&self.handler).push_into_stack(raw)?;
            function.push_into_stack(raw)?;
            let status = ffi::lua_pcall(state, 0, 1, top + 1);
            let value = raw.pop_value();
            ffi::lua_settop(state, top);
            Ok((status == 0, value))
        })
    }

    /// Fresh KEYS and ARGV tables in the real globals, built on the Lua stack directly (mlua's
    /// table and string handles cost a registry reference each). Call with the memory limit
    /// lifted ([`unlimited`]): an allocation failure here would be a Lua error outside any
    /// protected call.
    fn set_keys_and_argv(&self, keys: &[Bytes], argv: &[Bytes]) -> mlua::Result<()> {
        self.lua.exec_raw_lua(|raw| unsafe {
            let state = raw.state();
            if ffi::lua_checkstack(state, 4) == 0 {
                return Err(mlua::Error::StackError);
            }
            (&self.backing).push_into_stack(raw)?;
            for (name, items) in [(c"KEYS", keys), (c"ARGV", argv)] {
                ffi::lua_pushstring(state, name.as_ptr());
                ffi::lua_createtable(state, items.len().try_into().unwrap_or(0), 0);
                for (i, item) in items.iter().enumerate() {
                    ffi::lua_pushlstring(state, item.as_ptr().cast(), item.len());
                    ffi::lua_rawseti(state, -2, i as ffi::lua_Integer + 1);
                }
                ffi::lua_rawset(state, -3);
            }
            ffi::lua_pop(state, 1);
            Ok(())
        })
    }
}

/// The error line a script's result is written as, if it is an error table, and whether it is
/// a failed command's error that errorstats already counted.
fn returned_error(value: &Value) -> Option<(Vec<u8>, bool)> {
    let Value::Table(t) = value else { return None };
    match t.raw_get::<Value>("err") {
        Ok(Value::String(e)) => Some((
            crate::convert::returned_error_text(&e.as_bytes()),
            is_counted(t),
        )),
        _ => None,
    }
}

/// Does the error table carry Redis's "already counted" mark?
fn is_counted(t: &Table) -> bool {
    matches!(
        t.raw_get::<Value>(crate::errors::IGNORE_STATS),
        Ok(Value::Boolean(true))
    )
}

/// The count hook: asks the host whether the script may go on. Once it may not, the error is
/// raised again at every instruction, so a `pcall` in the script cannot swallow it.
fn hook(lua: &Lua, _: &mlua::debug::Debug) -> mlua::Result<VmState> {
    let verdict = match lua.app_data_mut::<RunState>() {
        // SAFETY: see `ScriptVm::run`.
        Some(mut state) => {
            let verdict = unsafe { (*state.host).interrupt() };
            state.killed |= verdict != Interrupt::Continue;
            verdict
        }
        None => Interrupt::Continue,
    };
    match verdict {
        Interrupt::Continue => Ok(VmState::Continue),
        Interrupt::Kill(line) => {
            lua.set_hook(HookTriggers::new().every_nth_instruction(1), hook)?;
            Err(Raise::err(line))
        }
    }
}

/// Puts the count hook back to its normal period after a run the host stopped (the hook had
/// switched to every instruction). For runs made outside [`ScriptVm::run`] (library loads).
pub(crate) fn rearm_hook(lua: &Lua) {
    let _ = lua.set_hook(
        HookTriggers::new().every_nth_instruction(HOOK_INSTRUCTIONS),
        hook,
    );
}

/// Replaces the functions that could reach around a read-only proxy (`rawset`, `setmetatable`)
/// or would not see through one (`rawget`, `next`, `pairs`), and the chunk loaders, which must
/// refuse bytecode. They are Rust functions, not Lua ones, so that a tail call to them keeps the
/// caller's frame for error positions, as Redis's C functions do.
fn install_raw_access(
    lua: &Lua,
    backing: &Table,
    protected: &Table,
    views: &Table,
) -> mlua::Result<()> {
    install_write_guards(lua, backing, protected, views)?;
    install_see_through(lua, backing, protected)?;
    install_loaders(lua, backing)
}

/// `getmetatable`, `rawset` and `setmetatable` as a protected table needs them: its metatable
/// is its view, and it cannot be written around the proxy.
fn install_write_guards(
    lua: &Lua,
    backing: &Table,
    protected: &Table,
    views: &Table,
) -> mlua::Result<()> {
    let original = |name: &str| backing.raw_get::<Function>(name);
    let (rawset, setmetatable, getmetatable) = (
        original("rawset")?,
        original("setmetatable")?,
        original("getmetatable")?,
    );
    let is_protected = {
        let protected = protected.clone();
        move |t: &Value| {
            !matches!(
                protected.raw_get::<Value>(t.clone()),
                Ok(Value::Nil) | Err(_)
            )
        }
    };
    let refuse = || Raise::bare("Attempt to modify a readonly table");
    {
        // A protected table shows its view (`_G`) or nothing, a string the read-only view of
        // the string metatable; anything else its own metatable.
        let is_protected = is_protected.clone();
        let views = views.clone();
        backing.raw_set(
            "getmetatable",
            lua.create_function(move |_, args: MultiValue| match args.front() {
                None => Err(mlua::Error::runtime(
                    "bad argument #1 to 'getmetatable' (value expected)",
                )),
                Some(t @ Value::Table(_)) if is_protected(t) => Ok(MultiValue::from_vec(vec![
                    views.raw_get::<Value>(t.clone())?,
                ])),
                Some(Value::String(_)) => {
                    Ok(MultiValue::from_vec(vec![views.raw_get::<Value>(1)?]))
                }
                _ => getmetatable.call::<MultiValue>(args),
            })?,
        )?;
    }
    {
        let is_protected = is_protected.clone();
        backing.raw_set(
            "rawset",
            lua.create_function(move |_, args: MultiValue| {
                if args.front().is_some_and(&is_protected) {
                    return Err(refuse());
                }
                rawset.call::<MultiValue>(args)
            })?,
        )?;
    }
    backing.raw_set(
        "setmetatable",
        lua.create_function(move |_, args: MultiValue| {
            if args.front().is_some_and(&is_protected) {
                return Err(refuse());
            }
            setmetatable.call::<MultiValue>(args)
        })?,
    )?;
    Ok(())
}

/// `rawget`, `next` and `pairs`, which read a protected table's real contents through its proxy.
fn install_see_through(lua: &Lua, backing: &Table, protected: &Table) -> mlua::Result<()> {
    let original = |name: &str| backing.raw_get::<Function>(name);
    let (rawget, next) = (original("rawget")?, original("next")?);
    let real = {
        let protected = protected.clone();
        move |t: Value| match protected.raw_get::<Value>(t.clone()) {
            Ok(Value::Table(real)) => Value::Table(real),
            _ => t,
        }
    };
    {
        let real = real.clone();
        backing.raw_set(
            "rawget",
            lua.create_function(move |_, (t, k): (Value, Value)| {
                rawget.call::<MultiValue>((real(t), k))
            })?,
        )?;
    }
    {
        let real = real.clone();
        let next = next.clone();
        backing.raw_set(
            "next",
            lua.create_function(move |_, (t, k): (Value, Value)| {
                next.call::<MultiValue>((real(t), k))
            })?,
        )?;
    }
    backing.raw_set(
        "pairs",
        lua.create_function(move |_, args: MultiValue| {
            let t = args.front().cloned();
            match t.map(&real) {
                Some(Value::Table(t)) => Ok((next.clone(), t, Value::Nil)),
                other => {
                    let got = other.map_or("no value", |v| v.type_name());
                    Err(mlua::Error::runtime(format!(
                        "bad argument #1 to 'pairs' (table expected, got {got})"
                    )))
                }
            }
        })?,
    )?;
    Ok(())
}

/// `loadstring` and `load`, which refuse bytecode.
fn install_loaders(lua: &Lua, backing: &Table) -> mlua::Result<()> {
    let loadstring = backing.raw_get::<Function>("loadstring")?;
    // No bytecode: a binary chunk is refused as Lua's parser refuses its first byte.
    let load_text = {
        let loadstring = loadstring.clone();
        move |lua: &Lua, code: mlua::LuaString, name: Value| -> mlua::Result<MultiValue> {
            if code.as_bytes().first() == Some(&27) {
                let id = match &name {
                    Value::String(n) => chunk_id(&n.as_bytes()),
                    _ => chunk_id(&code.as_bytes()),
                };
                let message = format!("[string \"{id}\"]:1: unexpected symbol near 'char(27)'");
                return Ok(MultiValue::from_vec(vec![
                    Value::Nil,
                    Value::String(lua.create_string(message)?),
                ]));
            }
            loadstring.call::<MultiValue>((code, name))
        }
    };
    {
        let load_text = load_text.clone();
        backing.raw_set(
            "loadstring",
            lua.create_function(move |lua, args: MultiValue| {
                let mut args = args.into_iter();
                match args.next() {
                    Some(Value::String(code)) => {
                        load_text(lua, code, args.next().unwrap_or(Value::Nil))
                    }
                    other => {
                        let mut all = vec![other.unwrap_or(Value::Nil)];
                        all.extend(args);
                        loadstring.call::<MultiValue>(MultiValue::from_vec(all))
                    }
                }
            })?,
        )?;
    }
    backing.raw_set(
        "load",
        lua.create_function(move |lua, (reader, name): (Function, Value)| {
            let mut code = Vec::new();
            loop {
                match reader.call::<Value>(())? {
                    Value::String(piece) if !piece.as_bytes().is_empty() => {
                        code.extend_from_slice(&piece.as_bytes())
                    }
                    _ => break,
                }
            }
            let name = match name {
                Value::Nil => Value::String(lua.create_string("=(load)")?),
                other => other,
            };
            load_text(lua, lua.create_string(&code)?, name)
        })?,
    )?;
    Ok(())
}

/// Opens the libraries Redis preloads besides Lua's own, makes them globals, and gives `math`
/// Redis's rand48 generator (whose state runs on from script to script, as in Redis 7.0).
fn install_libraries(lua: &Lua, globals: &Table) -> mlua::Result<()> {
    for (name, library) in crate::libs::open_all(lua)? {
        globals.raw_set(name, library)?;
    }
    let math: Table = globals.raw_get("math")?;
    crate::libs::rand48::install(lua, &math)
}

/// Replaces Lua's `os` library by a table of its `clock` alone, as Redis 7.4's sandboxed
/// `luaopen_os` registers it: the rest (`execute`, `exit`, `getenv`, `remove`…) reaches the
/// host.
fn keep_only_os_clock(lua: &Lua, globals: &Table) -> mlua::Result<()> {
    let full: Table = globals.raw_get("os")?;
    let os = lua.create_table()?;
    os.raw_set("clock", full.raw_get::<Function>("clock")?)?;
    globals.raw_set("os", os)
}

/// A compile error's message as Lua wrote it.
fn compile_message(e: &mlua::Error) -> String {
    match e {
        mlua::Error::SyntaxError { message, .. } => message.clone(),
        other => other.to_string(),
    }
}

/// Lua's `luaO_chunkid` for a string chunk: its first line, cut at a NUL, shortened with `...`.
fn chunk_id(source: &[u8]) -> String {
    let source = source.split(|&b| b == 0).next().unwrap_or_default();
    let line = source.split(|&b| b == b'\n').next().unwrap_or_default();
    const ROOM: usize = 60 - 15;
    let mut text = String::from_utf8_lossy(&line[..line.len().min(ROOM)]).into_owned();
    if line.len() > ROOM || line.len() < source.len() {
        text.push_str("...");
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bridge::HostLog;
    use bytes::BytesMut;

    /// Answers every command with a bulk of `reply_len` bytes.
    struct BulkHost {
        reply_len: usize,
    }

    impl Host for BulkHost {
        fn call(&mut self, _args: &[Bytes], _version: Version, out: &mut BytesMut) {
            let mut w = Writer::new(out, Version::Resp2);
            w.bulk(&vec![b'x'; self.reply_len]);
        }
        fn log(&mut self, _level: HostLog, _message: &[u8]) {}
        fn interrupt(&mut self) -> Interrupt {
            Interrupt::Continue
        }
        fn acl_check(&mut self, _args: &[bytes::Bytes]) -> Option<bool> {
            Some(true)
        }
    }

    fn eval(vm: &mut ScriptVm, host: &mut BulkHost, code: &str, keys: &[Bytes]) -> String {
        let sha = vm.load_script(&Bytes::from(code.to_string())).unwrap();
        let function = vm.script_function(&sha).unwrap();
        let mut buf = BytesMut::new();
        let mut out = Writer::new(&mut buf, Version::Resp2);
        match vm.run(host, &function, &sha, keys, &[], &mut out) {
            Ok(()) => String::from_utf8_lossy(&buf).into_owned(),
            Err(line) => format!("-{}", String::from_utf8_lossy(&line)),
        }
    }

    /// KEYS, ARGV and `redis.call` replies are built with the limit lifted (see `unlimited`);
    /// the script's own allocations must still meet it, run after run.
    #[test]
    fn memory_limit_still_applies_to_the_scripts_own_allocations() {
        let mut vm = ScriptVm::new(16 << 20).unwrap();
        let mut host = BulkHost { reply_len: 1 << 20 };
        let hog = "local t = {} for i = 1, 1e7 do t[i] = 'v' .. i end return #t";
        let big_key = Bytes::from(vec![b'k'; 1 << 20]);
        for _ in 0..3 {
            let failed = eval(&mut vm, &mut host, hog, &[]);
            assert!(failed.starts_with("-ERR not enough memory"), "got {failed}");
            // Lifting the limit for Rust-built values leaves it in force afterwards.
            assert_eq!(
                eval(
                    &mut vm,
                    &mut host,
                    "return #KEYS[1] + #redis.call('get', 'x')",
                    std::slice::from_ref(&big_key)
                ),
                ":2097152\r\n"
            );
            let limit = vm.lua().set_memory_limit(16 << 20).unwrap();
            assert_eq!(limit, 16 << 20);
        }
        // A pcall in the script sees the failure as Lua's own error.
        assert_eq!(
            eval(
                &mut vm,
                &mut host,
                "local ok, e = pcall(function() local s = string.rep('x', 64 * 1024 * 1024) end) return tostring(e)",
                &[]
            ),
            "$17\r\nnot enough memory\r\n"
        );
    }
}

#[cfg(test)]
mod kill_tests {
    use super::*;
    use crate::bridge::HostLog;
    use bytes::BytesMut;

    /// A host that answers every command with `+OK` and says stop once the hook has asked
    /// `kill_after` times.
    struct TestHost {
        asked: usize,
        kill_after: Option<usize>,
    }

    impl Host for TestHost {
        fn call(&mut self, _args: &[Bytes], _version: Version, out: &mut BytesMut) {
            out.extend_from_slice(b"+OK\r\n");
        }
        fn log(&mut self, _level: HostLog, _message: &[u8]) {}
        fn interrupt(&mut self) -> Interrupt {
            self.asked += 1;
            match self.kill_after {
                Some(n) if self.asked > n => {
                    Interrupt::Kill("ERR Script killed by user with SCRIPT KILL...")
                }
                _ => Interrupt::Continue,
            }
        }
        fn acl_check(&mut self, _args: &[bytes::Bytes]) -> Option<bool> {
            Some(true)
        }
    }

    fn run(vm: &mut ScriptVm, host: &mut TestHost, body: &str) -> Result<Vec<u8>, String> {
        let sha = vm
            .load_script(&Bytes::copy_from_slice(body.as_bytes()))
            .unwrap();
        let function = vm.script_function(&sha).unwrap();
        let mut buf = BytesMut::new();
        let mut out = Writer::new(&mut buf, Version::Resp2);
        vm.run(host, &function, &sha, &[], &[], &mut out)
            .map(|()| buf.to_vec())
            .map_err(|line| String::from_utf8_lossy(&line).into_owned())
    }

    #[test]
    fn a_kill_cannot_be_swallowed_by_pcall() {
        let mut vm = ScriptVm::new(0).unwrap();
        let mut host = TestHost {
            asked: 0,
            kill_after: Some(2),
        };
        let error = run(
            &mut vm,
            &mut host,
            "while true do pcall(function() while true do end end) end",
        )
        .unwrap_err();
        assert!(
            error.starts_with("ERR Script killed by user with SCRIPT KILL... script: "),
            "{error}"
        );
        // The VM is usable afterwards, with its hook back to the usual period.
        let mut host = TestHost {
            asked: 0,
            kill_after: None,
        };
        assert_eq!(run(&mut vm, &mut host, "return 7").unwrap(), b":7\r\n");
        assert_eq!(
            run(
                &mut vm,
                &mut host,
                "local n = 0 for i = 1, 1000000 do n = n + i end return n"
            )
            .unwrap(),
            b":500000500000\r\n"
        );
        assert!(host.asked < 100, "the hook ran {} times", host.asked);
    }

    /// SCRIPT FLUSH starts a fresh VM: what a script grew (a Lua stack of 8,000 slots from
    /// `unpack`) goes, the cache empties, and `math.random` runs on from where it was.
    #[test]
    fn flushing_scripts_makes_a_fresh_vm_and_keeps_the_random_sequence() {
        let mut host = TestHost {
            asked: 0,
            kill_after: None,
        };
        let mut reference = ScriptVm::new(0).unwrap();
        let draw = "return tostring(math.random())";
        let first = run(&mut reference, &mut host, draw).unwrap();
        let second = run(&mut reference, &mut host, draw).unwrap();

        let mut vm = ScriptVm::new(0).unwrap();
        let fresh = vm.used_memory();
        assert_eq!(run(&mut vm, &mut host, draw).unwrap(), first);
        let big = "local a = {} for i = 1, 7999 do a[i] = i end return redis.call('x', unpack(a))";
        assert_eq!(run(&mut vm, &mut host, big).unwrap(), b"+OK\r\n");
        assert!(vm.used_memory() > fresh + 100_000, "{}", vm.used_memory());
        vm.flush_scripts();
        assert_eq!(vm.script_count(), 0);
        assert!(
            vm.used_memory() < fresh + 16_384,
            "{} vs {fresh}",
            vm.used_memory()
        );
        assert_eq!(run(&mut vm, &mut host, draw).unwrap(), second);
    }

    #[test]
    fn a_script_that_allocates_without_bound_fails_and_the_vm_recovers() {
        let mut vm = ScriptVm::new(64 << 20).unwrap();
        let mut host = TestHost {
            asked: 0,
            kill_after: None,
        };
        let error = run(
            &mut vm,
            &mut host,
            "local t = {} while true do t[#t + 1] = string.rep('x', 100000) .. #t end",
        )
        .unwrap_err();
        assert!(error.contains("not enough memory"), "{error}");
        assert_eq!(
            run(&mut vm, &mut host, "return redis.call('ping')").unwrap(),
            b"+OK\r\n"
        );
    }

    /// Cached scripts must not each pin a slot of mlua's reference stack (Lua 5.1 caps it near
    /// 8,000): Redis's suite loads 50,000 and then still runs scripts. The periodic GC step keeps
    /// the VM near Redis 7.4's size (its suite asks for less than 17.5 MB after 50,000).
    #[test]
    fn many_cached_scripts_still_load_and_run() {
        let mut vm = ScriptVm::new(0).unwrap();
        let mut host = TestHost {
            asked: 0,
            kill_after: None,
        };
        for i in 0..12_000 {
            let body = Bytes::from(format!("--xxxxxxxxxx\nreturn {i:06}"));
            vm.load_script(&body).unwrap();
        }
        assert_eq!(vm.script_count(), 12_000);
        assert_eq!(run(&mut vm, &mut host, "return 7").unwrap(), b":7\r\n");
        assert!(vm.used_memory() < 12_000 * 350, "{}", vm.used_memory());
    }
}
