//! Redis 7 functions: the function libraries and the Lua VM they live in.
//!
//! Redis keeps functions in a VM of their own, apart from EVAL's, so a library and an EVAL script
//! never see each other; [`Functions`] owns that second [`ScriptVm`] (the same sandbox, read-only
//! globals and libraries) together with the libraries loaded into it.
//!
//! A library is Lua code whose first line is `#!lua name=<library>`. FUNCTION LOAD runs the code
//! once, in a load-time environment that holds nothing but a small `redis` table
//! (`register_function`, `log`, the LOG_* levels and the version): every other global is
//! "nonexistent", every write refused, and a run longer than the host allows (Redis: 500 ms)
//! stops with `FUNCTION LOAD timeout`. The callbacks it registers keep the library's chunk as
//! their environment, yet at run time they must see the ordinary sandbox — helpers defined in the
//! library call `string.*` just fine in Redis. So every library chunk gets the same small
//! switch table as its environment, whose metatable points at the load-time environment while a
//! library loads and at the sandbox's globals otherwise.
//!
//! FCALL calls `callback(keys, args)`; there are no KEYS and ARGV globals. The call goes through
//! [`ScriptVm::run`] (so it shares EVAL's host, message handler, hook and reply conversion) by way
//! of a trampoline that takes the keys and arguments `run` stores as KEYS and ARGV, removes those
//! globals again, and hands them to the callback. At run time the functions VM's `redis` table
//! lacks `breakpoint`, `debug` and `replicate_commands`, as Redis's does.

use std::collections::{BTreeMap, HashMap};

use bytes::Bytes;
use embedis_protocol::Writer;
use mlua::{Function, Lua, MultiValue, RegistryKey, Table, Value};

use crate::bridge::{lua_number_text, Host, RunState};
use crate::errors::Raise;
use crate::sandbox::{ScriptVm, INTERNAL_CHUNK};
use crate::scripts::ScriptFlags;

/// The error for a library or function name with characters Redis does not allow (Redis uses
/// the same words for both).
const BAD_NAME: &str = "ERR Library names can only contain letters, numbers, or underscores(_) and must be at least one character long";

/// One registered function.
pub struct FunctionDef {
    pub name: String,
    pub description: Option<Vec<u8>>,
    pub flags: ScriptFlags,
    /// In the Lua registry, not as an mlua `Function` (whose references share one stack that
    /// Lua 5.1 caps near 8,000 slots): tens of thousands of functions may be loaded.
    callback: RegistryKey,
}

/// One loaded library.
pub struct Library {
    pub name: String,
    /// The code as loaded, shebang included (FUNCTION LIST WITHCODE, FUNCTION DUMP).
    pub code: Bytes,
    /// Its functions, by name.
    pub functions: BTreeMap<String, FunctionDef>,
    /// Lower-cased name → the function FCALL finds by it. Of names that differ only in case
    /// the last registered wins (Redis picks by its hash table's order).
    by_folded_name: HashMap<String, String>,
}

/// What FUNCTION RESTORE does with the libraries already loaded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RestorePolicy {
    /// Drop them all first.
    Flush,
    /// Keep them; a library of the same name is an error.
    Append,
    /// Keep them, but a restored library replaces the one of the same name.
    Replace,
}

/// The functions VM and its libraries.
pub struct Functions {
    vm: ScriptVm,
    /// Libraries by name (FUNCTION LIST and DUMP walk them in this order).
    libraries: BTreeMap<String, Library>,
    /// Function name, lower-cased → the library that holds it. Redis looks functions up
    /// (FCALL, collisions between libraries) regardless of case, while one library may hold
    /// names that differ only in case.
    owners: HashMap<String, String>,
    /// The metatable of the chunks' environment: `__index`/`__newindex` name the table global
    /// names resolve in.
    switch: Table,
    load_env: Table,
    runtime_env: Table,
    /// `set_pending(callback)` before a call of `trampoline`.
    set_pending: Function,
    trampoline: Function,
    xpcall: Function,
    handler: Function,
}

/// The functions a library registers while it loads (the VM's app data during a load).
struct Registrations(Vec<FunctionDef>);

const FUNCTIONS_SETUP: &str = r#"
local backing, real_redis, register_function = ...
local error, tostring, setmetatable = error, tostring, setmetatable

local function refuse() error('Attempt to modify a readonly table', 2) end
local function missing(_, name)
    error("Script attempted to access nonexistent global variable '" .. tostring(name) .. "'", 2)
end
local function protect(t)
    setmetatable(t, {__index = missing})
    return setmetatable({}, {__index = t, __newindex = refuse})
end

local load_redis = {
    register_function = register_function,
    log = real_redis.log,
    LOG_DEBUG = real_redis.LOG_DEBUG,
    LOG_VERBOSE = real_redis.LOG_VERBOSE,
    LOG_NOTICE = real_redis.LOG_NOTICE,
    LOG_WARNING = real_redis.LOG_WARNING,
    REDIS_VERSION = real_redis.REDIS_VERSION,
    REDIS_VERSION_NUM = real_redis.REDIS_VERSION_NUM,
}
local load_env = protect({redis = protect(load_redis)})

local switch = {}
local chunk_env = setmetatable({}, switch)

-- FCALL: the keys and arguments arrive as KEYS and ARGV, which functions must not see.
local pending
local function set_pending(callback) pending = callback end
local function trampoline()
    local keys, args = backing.KEYS, backing.ARGV
    backing.KEYS = nil
    backing.ARGV = nil
    local callback = pending
    pending = nil
    local result = callback(keys, args)
    return result
end
return switch, chunk_env, load_env, set_pending, trampoline
"#;

impl Functions {
    /// A fresh functions VM whose allocations may not pass `memory_limit` bytes (0 = none).
    pub fn new(memory_limit: usize) -> mlua::Result<Functions> {
        Functions::with_os_clock(memory_limit, false)
    }

    /// A fresh functions VM as [`Functions::new`]; with `os_clock`, functions see Redis 7.4's
    /// `os.clock` when they run (not while their library loads: its environment is `redis` alone).
    pub fn with_os_clock(memory_limit: usize, os_clock: bool) -> mlua::Result<Functions> {
        let vm = ScriptVm::with_os_clock(memory_limit, os_clock)?;
        let lua = vm.lua().clone();
        let globals = lua.globals();
        let backing = real_table(&globals)?;
        let redis: Table = backing.raw_get("redis")?;
        let real_redis = real_table(&redis)?;
        for name in ["breakpoint", "debug", "replicate_commands"] {
            real_redis.raw_set(name, Value::Nil)?;
        }
        let register = lua.create_function(register_function)?;
        let (switch, chunk_env, load_env, set_pending, trampoline): (
            Table,
            Table,
            Table,
            Function,
            Function,
        ) = lua.load(FUNCTIONS_SETUP).set_name(INTERNAL_CHUNK).call((
            backing.clone(),
            real_redis,
            register,
        ))?;
        switch.raw_set("__index", globals.clone())?;
        switch.raw_set("__newindex", globals.clone())?;
        let xpcall: Function = backing.raw_get("xpcall")?;
        let handler: Function = backing.raw_get("__redis__err__handler")?;
        // Redis keeps the functions VM's message handler out of the globals.
        backing.raw_set("__redis__err__handler", Value::Nil)?;
        // The chunks' environment is reached through the switch's owner.
        lua.set_named_registry_value("embedis_functions_env", chunk_env)?;
        Ok(Functions {
            vm,
            libraries: BTreeMap::new(),
            owners: HashMap::new(),
            switch,
            load_env,
            runtime_env: globals,
            set_pending,
            trampoline,
            xpcall,
            handler,
        })
    }

    pub fn lua(&self) -> &Lua {
        self.vm.lua()
    }

    pub fn libraries(&self) -> impl Iterator<Item = &Library> {
        self.libraries.values()
    }

    pub fn library_count(&self) -> usize {
        self.libraries.len()
    }

    pub fn function_count(&self) -> usize {
        self.libraries.values().map(|l| l.functions.len()).sum()
    }

    /// The function called `name`.
    pub fn function(&self, name: &[u8]) -> Option<&FunctionDef> {
        let name = std::str::from_utf8(name).ok()?;
        let folded = name.to_ascii_lowercase();
        let library = self.libraries.get(self.owners.get(&folded)?)?;
        library.functions.get(library.by_folded_name.get(&folded)?)
    }

    /// Bytes the VM uses (INFO used_memory_vm_functions).
    pub fn vm_memory(&self) -> usize {
        self.vm.used_memory()
    }

    /// Bytes the libraries' bookkeeping holds (INFO used_memory_functions): an estimate from
    /// the code and names, as Redis's counts its own structures.
    pub fn libraries_memory(&self) -> usize {
        self.libraries
            .values()
            .map(|lib| {
                lib.code.len()
                    + lib.name.len()
                    + 64
                    + lib
                        .functions
                        .values()
                        .map(|f| f.name.len() + f.description.as_ref().map_or(0, |d| d.len()) + 48)
                        .sum::<usize>()
            })
            .sum()
    }

    /// FUNCTION LOAD: compiles and runs `code`, then installs the library it defines. Returns
    /// the library's name; the error is the reply line.
    pub fn load(
        &mut self,
        host: &mut dyn Host,
        code: &Bytes,
        replace: bool,
    ) -> Result<String, Vec<u8>> {
        let name = parse_library_shebang(code)?;
        if !replace && self.libraries.contains_key(&name) {
            return Err(format!("ERR Library '{name}' already exists").into_bytes());
        }
        let library = self.build(host, name, code)?;
        for function in library.functions.keys() {
            if self
                .owners
                .get(&function.to_ascii_lowercase())
                .is_some_and(|owner| *owner != library.name)
            {
                return Err(format!("ERR Function {function} already exists").into_bytes());
            }
        }
        let name = library.name.clone();
        self.install(library);
        Ok(name)
    }

    /// FUNCTION DELETE. False when there is no such library.
    pub fn delete(&mut self, name: &[u8]) -> bool {
        let Ok(name) = std::str::from_utf8(name) else {
            return false;
        };
        match self.libraries.remove(name) {
            Some(library) => {
                for function in library.functions.keys() {
                    self.owners.remove(&function.to_ascii_lowercase());
                }
                true
            }
            None => false,
        }
    }

    /// FUNCTION FLUSH.
    pub fn flush(&mut self) {
        self.libraries.clear();
        self.owners.clear();
        let _ = self.vm.lua().gc_collect();
    }

    /// FUNCTION DUMP's payload (`compress`: the `rdbcompression` setting).
    pub fn dump(&self, compress: bool) -> Vec<u8> {
        let codes: Vec<&[u8]> = self.libraries.values().map(|l| &l.code[..]).collect();
        crate::dump::dump(&codes, compress)
    }

    /// FUNCTION RESTORE: loads every library of `payload`, then merges them by `policy`. All or
    /// nothing: on any error the loaded libraries stay as they were.
    pub fn restore(
        &mut self,
        host: &mut dyn Host,
        payload: &[u8],
        policy: RestorePolicy,
    ) -> Result<(), Vec<u8>> {
        let codes = crate::dump::read(payload).map_err(|e| e.line().as_bytes().to_vec())?;
        let mut restored: BTreeMap<String, Library> = BTreeMap::new();
        let mut restored_owners: HashMap<String, String> = HashMap::new();
        for code in codes {
            let code = Bytes::from(code);
            let name = parse_library_shebang(&code)?;
            if restored.contains_key(&name) {
                return Err(format!("ERR Library '{name}' already exists").into_bytes());
            }
            let library = self.build(host, name, &code)?;
            for function in library.functions.keys() {
                let key = function.to_ascii_lowercase();
                if restored_owners
                    .get(&key)
                    .is_some_and(|o| *o != library.name)
                {
                    return Err(format!("ERR Function {function} already exists").into_bytes());
                }
                restored_owners.insert(key, library.name.clone());
            }
            restored.insert(library.name.clone(), library);
        }
        if policy == RestorePolicy::Append {
            if let Some(name) = restored.keys().find(|n| self.libraries.contains_key(*n)) {
                return Err(format!("ERR Library {name} already exists").into_bytes());
            }
        }
        if policy != RestorePolicy::Flush {
            // Libraries that stay: all of them on APPEND, those not replaced on REPLACE.
            for library in restored.values() {
                for function in library.functions.keys() {
                    let staying_owner = self
                        .owners
                        .get(&function.to_ascii_lowercase())
                        .filter(|owner| !restored.contains_key(*owner));
                    if staying_owner.is_some() {
                        return Err(format!("ERR Function {function} already exists").into_bytes());
                    }
                }
            }
        }
        if policy == RestorePolicy::Flush {
            self.libraries.clear();
            self.owners.clear();
        }
        for library in restored.into_values() {
            self.install(library);
        }
        Ok(())
    }

    /// FCALL: runs `function` with `keys` and `args`; its reply goes to `out`. The error is the
    /// reply line.
    pub fn call(
        &mut self,
        host: &mut dyn Host,
        function: &[u8],
        keys: &[Bytes],
        args: &[Bytes],
        out: &mut Writer<'_>,
    ) -> Result<(), Vec<u8>> {
        let Some(def) = self.function(function) else {
            return Err(b"ERR Function not found".to_vec());
        };
        let name = def.name.clone();
        let callback: Function = self
            .vm
            .lua()
            .registry_value(&def.callback)
            .map_err(|e| format!("ERR {e}").into_bytes())?;
        self.set_pending
            .call::<()>(callback)
            .map_err(|e| format!("ERR {e}").into_bytes())?;
        let trampoline = self.trampoline.clone();
        self.vm.run(host, &trampoline, &name, keys, args, out)
    }

    /// Replaces (or adds) `library`.
    fn install(&mut self, library: Library) {
        self.delete(library.name.as_bytes());
        for function in library.functions.keys() {
            self.owners
                .insert(function.to_ascii_lowercase(), library.name.clone());
        }
        self.libraries.insert(library.name.clone(), library);
    }

    /// Compiles and runs a library's code in the load-time environment; the library it
    /// registers.
    fn build(
        &mut self,
        host: &mut dyn Host,
        name: String,
        code: &Bytes,
    ) -> Result<Library, Vec<u8>> {
        let lua = self.vm.lua().clone();
        let newline = code.iter().position(|&b| b == b'\n').unwrap_or(code.len());
        let env: Table = lua
            .named_registry_value("embedis_functions_env")
            .map_err(|e| format!("ERR {e}").into_bytes())?;
        let chunk = lua
            .load(&code[newline..])
            .set_name("@user_function")
            .set_environment(env)
            .into_function()
            .map_err(|e| {
                let message = match e {
                    mlua::Error::SyntaxError { message, .. } => message,
                    other => other.to_string(),
                };
                let mut line = b"ERR Error compiling function: ".to_vec();
                line.extend_from_slice(message.as_bytes());
                crate::convert::error_text(&line)
            })?;
        let outcome = self.run_load(&lua, host, &chunk);
        drop(chunk);
        self.vm.gc_tick();
        let registered = lua
            .remove_app_data::<Registrations>()
            .map_or_else(Vec::new, |r| r.0);
        if let Err(err) = outcome {
            let mut line = b"ERR Error registering functions: ".to_vec();
            line.extend_from_slice(&err);
            return Err(crate::convert::error_text(&line));
        }
        if registered.is_empty() {
            return Err(b"ERR No functions registered".to_vec());
        }
        let by_folded_name = registered
            .iter()
            .map(|f| (f.name.to_ascii_lowercase(), f.name.clone()))
            .collect();
        let functions = registered
            .into_iter()
            .map(|f| (f.name.clone(), f))
            .collect();
        Ok(Library {
            name,
            code: code.clone(),
            functions,
            by_folded_name,
        })
    }

    /// Runs a library chunk with the load-time environment in place and `host` lent for
    /// `redis.log` and the time limit. The error is the `err` text of what it raised.
    fn run_load(
        &mut self,
        lua: &Lua,
        host: &mut dyn Host,
        chunk: &Function,
    ) -> Result<(), Vec<u8>> {
        let set_env = |env: &Table| -> mlua::Result<()> {
            self.switch.raw_set("__index", env.clone())?;
            self.switch.raw_set("__newindex", env.clone())
        };
        set_env(&self.load_env).map_err(|e| format!("ERR {e}").into_bytes())?;
        lua.set_app_data(Registrations(Vec::new()));
        // SAFETY (lifetime): as in `ScriptVm::run`, the pointer leaves the app data before this
        // function returns and is only used by callbacks running inside the call below.
        let host: *mut (dyn Host + '_) = host;
        let host: *mut (dyn Host + 'static) = unsafe { std::mem::transmute(host) };
        lua.set_app_data(RunState {
            host,
            resp: embedis_protocol::Version::Resp2,
            killed: false,
        });
        let result = self
            .xpcall
            .call::<MultiValue>((chunk.clone(), self.handler.clone()));
        let state = lua.remove_app_data::<RunState>();
        if state.is_some_and(|s| s.killed) {
            crate::sandbox::rearm_hook(lua);
        }
        let _ = set_env(&self.runtime_env);
        match result {
            Ok(values) => {
                let mut values = values.into_iter();
                if matches!(values.next(), Some(Value::Boolean(true))) {
                    return Ok(());
                }
                Err(match values.next() {
                    Some(Value::Table(t)) => match t.raw_get::<Value>("err") {
                        Ok(Value::String(s)) => s.as_bytes().to_vec(),
                        Ok(v @ (Value::Integer(_) | Value::Number(_))) => {
                            lua_tostring(&v).unwrap_or_default()
                        }
                        _ => b"ERR unknown error".to_vec(),
                    },
                    Some(Value::String(s)) => {
                        let mut line = b"ERR ".to_vec();
                        line.extend_from_slice(&s.as_bytes());
                        line
                    }
                    _ => b"ERR unknown error".to_vec(),
                })
            }
            Err(e) => Err(format!("ERR {e}").into_bytes()),
        }
    }
}

/// The table a read-only proxy of the sandbox protects.
fn real_table(proxy: &Table) -> mlua::Result<Table> {
    match proxy.metatable() {
        Some(meta) => match meta.raw_get::<Value>("__index")? {
            Value::Table(real) => Ok(real),
            _ => Ok(proxy.clone()),
        },
        None => Ok(proxy.clone()),
    }
}

/// Lua's `lua_tostring` for strings and numbers.
fn lua_tostring(value: &Value) -> Option<Vec<u8>> {
    match value {
        Value::String(s) => Some(s.as_bytes().to_vec()),
        Value::Integer(i) => Some(lua_number_text(*i as f64)),
        Value::Number(n) => Some(lua_number_text(*n)),
        _ => None,
    }
}

/// Letters, digits and underscores, at least one.
pub fn valid_name(name: &[u8]) -> bool {
    !name.is_empty() && name.iter().all(|b| b.is_ascii_alphanumeric() || *b == b'_')
}

/// The library name from a library's first line, with Redis's checks in Redis's order: the
/// line is split as Redis splits arguments (quotes allowed), the first word is `#!<engine>`, the
/// others must be `name=<library>` (once).
pub fn parse_library_shebang(code: &[u8]) -> Result<String, Vec<u8>> {
    if !code.starts_with(b"#!") {
        return Err(b"ERR Missing library metadata".to_vec());
    }
    let Some(end) = code.iter().position(|&b| b == b'\n') else {
        return Err(b"ERR Invalid library metadata".to_vec());
    };
    let Ok(parts) = embedis_protocol::inline::split_args(&code[..end]) else {
        return Err(b"ERR Invalid library metadata".to_vec());
    };
    let engine = parts.first().map_or(&b""[..], |p| &p[2..]);
    let mut name: Option<&[u8]> = None;
    for part in parts.iter().skip(1) {
        if part.len() >= 5 && part[..5].eq_ignore_ascii_case(b"name=") {
            if name.is_some() {
                return Err(
                    b"ERR Invalid metadata value, name argument was given multiple times".to_vec(),
                );
            }
            name = Some(&part[5..]);
        } else {
            let mut line = b"ERR Invalid metadata value given: ".to_vec();
            line.extend_from_slice(part);
            return Err(line);
        }
    }
    let Some(name) = name else {
        return Err(b"ERR Library name was not given".to_vec());
    };
    if !valid_name(name) {
        return Err(BAD_NAME.as_bytes().to_vec());
    }
    if !engine.eq_ignore_ascii_case(b"lua") {
        let mut line = b"ERR Engine '".to_vec();
        line.extend_from_slice(engine);
        line.extend_from_slice(b"' not found");
        return Err(line);
    }
    Ok(String::from_utf8(name.to_vec()).expect("checked ASCII"))
}

/// `redis.register_function(name, callback)` or `redis.register_function{function_name=…,
/// callback=…, flags={…}, description=…}`, at load time only.
fn register_function(lua: &Lua, args: MultiValue) -> mlua::Result<()> {
    let fail = |text: &str| Err(Raise::err(&format!("ERR {text}")));
    let (name, callback, description, flags) = match args.len() {
        1 => {
            let Some(Value::Table(named)) = args.front() else {
                return fail("calling redis.register_function with a single argument is only applicable to Lua table (representing named arguments).");
            };
            let (mut name, mut callback, mut description) = (None, None, None);
            let mut flags = ScriptFlags {
                declared: true,
                ..ScriptFlags::default()
            };
            for pair in named.pairs::<Value, Value>() {
                let (key, value) = pair?;
                let key = match &key {
                    Value::String(s) => s.as_bytes().to_vec(),
                    _ => return fail("unknown argument given to redis.register_function"),
                };
                match &key[..] {
                    b"function_name" => match lua_tostring(&value) {
                        Some(text) => name = Some(text),
                        None => return fail("function_name argument given to redis.register_function must be a string"),
                    },
                    b"description" => match lua_tostring(&value) {
                        Some(text) => description = Some(text),
                        None => return fail("description argument given to redis.register_function must be a string"),
                    },
                    b"callback" => match value {
                        Value::Function(f) => callback = Some(f),
                        _ => return fail("callback argument given to redis.register_function must be a function"),
                    },
                    b"flags" => match value {
                        Value::Table(list) => {
                            for item in list.sequence_values::<Value>() {
                                let item = item?;
                                match lua_tostring(&item) {
                                    Some(flag) if flags.set(&flag) => {}
                                    _ => return fail("unknown flag given"),
                                }
                            }
                        }
                        _ => return fail("flags argument to redis.register_function must be a table representing function flags"),
                    },
                    _ => return fail("unknown argument given to redis.register_function"),
                }
            }
            let Some(name) = name else {
                return fail("redis.register_function must get a function name argument");
            };
            let Some(callback) = callback else {
                return fail("redis.register_function must get a callback argument");
            };
            (name, callback, description, flags)
        }
        2 => {
            let Some(name) = lua_tostring(&args[0]) else {
                return fail("first argument to redis.register_function must be a string");
            };
            let Value::Function(callback) = &args[1] else {
                return fail("second argument to redis.register_function must be a function");
            };
            let flags = ScriptFlags {
                declared: true,
                ..ScriptFlags::default()
            };
            (name, callback.clone(), None, flags)
        }
        _ => return fail("wrong number of arguments to redis.register_function"),
    };
    if !valid_name(&name) {
        return Err(Raise::err(BAD_NAME));
    }
    let name = String::from_utf8(name).expect("checked ASCII");
    let Some(mut registrations) = lua.app_data_mut::<Registrations>() else {
        return fail("redis.register_function can only be called on FUNCTION LOAD command");
    };
    if registrations.0.iter().any(|f| f.name == name) {
        return fail("Function already exists in the library");
    }
    let callback = lua.create_registry_value(callback)?;
    registrations.0.push(FunctionDef {
        name,
        description,
        flags,
        callback,
    });
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bridge::{HostLog, Interrupt};
    use bytes::BytesMut;
    use embedis_protocol::Version;

    /// A host whose commands all answer +OK and that stops after `budget` checks.
    struct TestHost {
        budget: usize,
        logged: Vec<Vec<u8>>,
    }

    impl Host for TestHost {
        fn call(&mut self, _args: &[Bytes], _version: Version, out: &mut BytesMut) {
            out.extend_from_slice(b"+OK\r\n");
        }
        fn log(&mut self, _level: HostLog, message: &[u8]) {
            self.logged.push(message.to_vec());
        }
        fn interrupt(&mut self) -> Interrupt {
            if self.budget == 0 {
                return Interrupt::Kill("ERR FUNCTION LOAD timeout");
            }
            self.budget -= 1;
            Interrupt::Continue
        }
        fn acl_check(&mut self, _args: &[bytes::Bytes]) -> Option<bool> {
            Some(true)
        }
    }

    fn host() -> TestHost {
        TestHost {
            budget: 10,
            logged: Vec::new(),
        }
    }

    fn load(f: &mut Functions, code: &str) -> Result<String, String> {
        f.load(&mut host(), &Bytes::from(code.to_string()), false)
            .map_err(|e| String::from_utf8(e).unwrap())
    }

    fn fcall(f: &mut Functions, name: &str, keys: &[&str], args: &[&str]) -> String {
        let keys: Vec<Bytes> = keys.iter().map(|k| Bytes::from(k.to_string())).collect();
        let args: Vec<Bytes> = args.iter().map(|k| Bytes::from(k.to_string())).collect();
        let mut buf = BytesMut::new();
        let mut out = Writer::new(&mut buf, Version::Resp2);
        match f.call(&mut host(), name.as_bytes(), &keys, &args, &mut out) {
            Ok(()) => String::from_utf8(buf.to_vec()).unwrap(),
            Err(line) => format!("-{}", String::from_utf8(line).unwrap()),
        }
    }

    #[test]
    fn shebang_checks_in_redis_order() {
        let err = |code: &str| {
            String::from_utf8(parse_library_shebang(code.as_bytes()).unwrap_err()).unwrap()
        };
        assert_eq!(err("return 1"), "ERR Missing library metadata");
        assert_eq!(err("#!lua name=x"), "ERR Invalid library metadata");
        assert_eq!(err("#!lua\n"), "ERR Library name was not given");
        assert_eq!(
            err("#!lua foo name=a-b\n"),
            "ERR Invalid metadata value given: foo"
        );
        assert_eq!(
            err("#!lua name=a name=b\n"),
            "ERR Invalid metadata value, name argument was given multiple times"
        );
        assert_eq!(err("#!luax name=a-b\n"), BAD_NAME);
        assert_eq!(err("#!luax name=ab\n"), "ERR Engine 'luax' not found");
        assert_eq!(err("#!lua name=\"xy\n"), "ERR Invalid library metadata");
        assert_eq!(parse_library_shebang(b"#!LUA Name='q'\r\n").unwrap(), "q");
    }

    #[test]
    fn functions_get_keys_and_args_but_no_globals_for_them() {
        let mut f = Functions::new(0).unwrap();
        let code = "#!lua name=lib\nlocal function helper(x) return string.upper(x) end\nredis.register_function('f', function(keys, args) return {helper(keys[1]), args[1], #keys} end)\nredis.register_function('g', function() return KEYS end)";
        assert_eq!(load(&mut f, code).unwrap(), "lib");
        assert_eq!(
            fcall(&mut f, "f", &["k"], &["a"]),
            "*3\r\n$1\r\nK\r\n$1\r\na\r\n:1\r\n"
        );
        assert_eq!(
            fcall(&mut f, "g", &["k"], &[]),
            "-ERR user_function:4: Script attempted to access nonexistent global variable 'KEYS' script: g, on @user_function:4."
        );
        assert_eq!(fcall(&mut f, "nope", &[], &[]), "-ERR Function not found");
        assert_eq!(f.function_count(), 2);
        assert_eq!(f.library_count(), 1);
    }

    #[test]
    fn load_time_environment_is_small() {
        let mut f = Functions::new(0).unwrap();
        assert_eq!(
            load(&mut f, "#!lua name=x\nredis.call('get', 'a')").unwrap_err(),
            "ERR Error registering functions: ERR user_function:2: Script attempted to access nonexistent global variable 'call'"
        );
        assert_eq!(
            load(&mut f, "#!lua name=x\nx = 1").unwrap_err(),
            "ERR Error registering functions: ERR user_function:2: Attempt to modify a readonly table"
        );
        assert_eq!(
            load(&mut f, "#!lua name=x\nlocal a =").unwrap_err(),
            "ERR Error compiling function: user_function:2: unexpected symbol near '<eof>'"
        );
        assert_eq!(
            load(&mut f, "#!lua name=x\nlocal a = 1").unwrap_err(),
            "ERR No functions registered"
        );
        assert_eq!(
            load(&mut f, "#!lua name=x\nwhile true do end").unwrap_err(),
            "ERR Error registering functions: ERR FUNCTION LOAD timeout"
        );
        // The hook is back to normal afterwards.
        load(&mut f, "#!lua name=x\nredis.log(redis.LOG_WARNING, 'hi') redis.register_function('f', function() return 1 end)").unwrap();
        assert_eq!(fcall(&mut f, "f", &[], &[]), ":1\r\n");
    }

    #[test]
    fn register_function_refusals() {
        let mut f = Functions::new(0).unwrap();
        let err =
            |f: &mut Functions, body: &str| load(f, &format!("#!lua name=x\n{body}")).unwrap_err();
        assert_eq!(
            err(&mut f, "redis.register_function('f', function() end, 3)"),
            "ERR Error registering functions: ERR wrong number of arguments to redis.register_function"
        );
        assert_eq!(
            err(&mut f, "redis.register_function('a-b', function() end)"),
            format!("ERR Error registering functions: {BAD_NAME}")
        );
        assert_eq!(
            err(&mut f, "redis.register_function{function_name='f', callback=function() end, flags={'bogus'}}"),
            "ERR Error registering functions: ERR unknown flag given"
        );
        assert_eq!(
            err(&mut f, "redis.register_function('f', function() end) redis.register_function('f', function() end)"),
            "ERR Error registering functions: ERR Function already exists in the library"
        );
        load(&mut f, "#!lua name=x\nredis.register_function{function_name='f', callback=function() end, flags={'no-writes', 'allow-oom'}, description='d'}").unwrap();
        let def = f.function(b"f").unwrap();
        assert!(def.flags.no_writes && def.flags.allow_oom && !def.flags.allow_stale);
        assert_eq!(def.description.as_deref(), Some(&b"d"[..]));
        assert_eq!(
            load(
                &mut f,
                "#!lua name=x\nredis.register_function('g', function() end)"
            )
            .unwrap_err(),
            "ERR Library 'x' already exists"
        );
        assert_eq!(
            load(
                &mut f,
                "#!lua name=y\nredis.register_function('f', function() end)"
            )
            .unwrap_err(),
            "ERR Function f already exists"
        );
    }

    #[test]
    fn dump_and_restore_policies() {
        let mut f = Functions::new(0).unwrap();
        load(
            &mut f,
            "#!lua name=a\nredis.register_function('fa', function() return 1 end)",
        )
        .unwrap();
        let payload = f.dump(true);
        let restore = |f: &mut Functions, policy| {
            f.restore(&mut host(), &payload, policy)
                .map_err(|e| String::from_utf8(e).unwrap())
        };
        assert_eq!(
            restore(&mut f, RestorePolicy::Append).unwrap_err(),
            "ERR Library a already exists"
        );
        restore(&mut f, RestorePolicy::Replace).unwrap();
        restore(&mut f, RestorePolicy::Flush).unwrap();
        f.flush();
        assert_eq!(f.library_count(), 0);
        restore(&mut f, RestorePolicy::Append).unwrap();
        assert_eq!(fcall(&mut f, "fa", &[], &[]), ":1\r\n");
        assert_eq!(
            f.restore(&mut host(), b"garbage", RestorePolicy::Flush)
                .unwrap_err(),
            b"ERR DUMP payload version or checksum are wrong"
        );
    }

    /// Each registered callback lives in the Lua registry, so tens of thousands of libraries
    /// load (mlua's reference stack, where a held `Function` would sit, stops near 8,000).
    #[test]
    fn many_libraries_load_and_each_function_runs() {
        let mut f = Functions::new(0).unwrap();
        for i in 0..12_000 {
            let code = format!(
                "#!lua name=lib{i}\nredis.register_function('f{i}', function(KEYS, ARGV) return {i} end)"
            );
            load(&mut f, &code).unwrap();
        }
        assert_eq!(fcall(&mut f, "f11999", &[], &[]), ":11999\r\n");
        assert_eq!(fcall(&mut f, "f3", &[], &[]), ":3\r\n");
    }
}
