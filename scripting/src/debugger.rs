//! Redis's Lua debugger (LDB) in its synchronous mode: after `SCRIPT DEBUG SYNC`, the client's
//! next EVAL runs under a debugging session. The script stops before its first line; the
//! client then drives it with the debugger's commands (`step`, `continue`, `list`, `print`,
//! `break`, `eval`, `redis`, `maxlen`, `trace`, `abort`, `help`), each answered with an array of
//! status lines in Redis's words ("* Stopped at 3, stop reason = step over", "<value> a = 1",
//! "<reply> \"+OK\""). While it stops, nothing else runs: the server waits for the client, as
//! Redis's synchronous session blocks Redis.
//!
//! The session lives in the VM's app data for one run ([`crate::ScriptVm::run_debugged`]). The
//! line hook ([`line_hook`]) stops where Redis's `luaLdbLineHook` stops — every line while
//! stepping, at breakpoints, after `redis.breakpoint()`, or when the script has run past the
//! busy threshold without stopping — and reads commands through the [`Host`]'s debugging I/O.
//! `redis.call` logs its command and reply while stepping ([`Session::log_call`]),
//! `redis.debug()` writes "<debug>" lines. Values are shown as Redis's `ldbCatStackValue`
//! shows them, RESP replies as its `ldbRedisProtocolToHuman` does.

use mlua::{Function, Lua, Value, VmState};
use std::time::{Duration, Instant};

use crate::errors::Raise;
use crate::host::{Host, RunState};

/// Breakpoints a session may hold (Redis's `LDB_BREAKPOINTS_MAX`).
const MAX_BREAKPOINTS: usize = 64;
/// Replies and values longer than this are cut in the log until `maxlen` says otherwise.
const DEFAULT_MAXLEN: usize = 256;
/// Nesting shown of a table inside tables (Redis's `LDB_MAX_VALUES_DEPTH`).
const MAX_DEPTH: usize = 18;
/// A command line the client may send: at most this many arguments of at most this many
/// bytes, and this much buffered input (Redis's limits).
const MAX_ARGS: usize = 1024;
const MAX_ARG_LEN: usize = 1024;
const MAX_INPUT: usize = 1 << 20;

const HELP: &[&str] = &[
    "Redis Lua debugger help:",
    "[h]elp               Show this help.",
    "[s]tep               Run current line and stop again.",
    "[n]ext               Alias for step.",
    "[c]ontinue           Run till next breakpoint.",
    "[l]ist               List source code around current line.",
    "[l]ist [line]        List source code around [line].",
    "                     line = 0 means: current position.",
    "[l]ist [line] [ctx]  In this form [ctx] specifies how many lines",
    "                     to show before/after [line].",
    "[w]hole              List all source code. Alias for 'list 1 1000000'.",
    "[p]rint              Show all the local variables.",
    "[p]rint <var>        Show the value of the specified variable.",
    "                     Can also show global vars KEYS and ARGV.",
    "[b]reak              Show all breakpoints.",
    "[b]reak <line>       Add a breakpoint to the specified line.",
    "[b]reak -<line>      Remove breakpoint from the specified line.",
    "[b]reak 0            Remove all breakpoints.",
    "[t]race              Show a backtrace.",
    "[e]val <code>        Execute some Lua code (in a different callframe).",
    "[r]edis <cmd>        Execute a Redis command.",
    "[m]axlen [len]       Trim logged Redis replies and Lua var dumps to len.",
    "                     Specifying zero as <len> means unlimited.",
    "[a]bort              Stop the execution of the script. In sync",
    "                     mode dataset changes will be retained.",
    "",
    "Debugger functions you can call from Lua scripts:",
    "redis.debug()        Produce logs in the debugger console.",
    "redis.breakpoint()   Stop execution like if there was a breakpoint in the",
    "                     next line of code.",
];

/// One debugging session (see the module documentation).
pub struct Session {
    /// The script's source, line by line (trailing newlines dropped).
    lines: Vec<Vec<u8>>,
    breakpoints: Vec<usize>,
    /// Stop at the next line (and log `redis.call`s meanwhile).
    pub(crate) step: bool,
    /// `redis.breakpoint()` was called: stop at the next line.
    lua_breakpoint: bool,
    current_line: usize,
    /// Cut logged values at this many bytes (0: never), and whether the hint was given.
    maxlen: usize,
    hint_sent: bool,
    logs: Vec<Vec<u8>>,
    /// What the client sent and no command has consumed yet.
    input: Vec<u8>,
    /// Since the last stop: past `timeout` without one, the script stops anyway.
    running_since: Instant,
    timeout: Duration,
}

/// What the client's next bytes hold.
enum Parsed {
    Command(Vec<Vec<u8>>),
    Incomplete,
    ProtocolError,
}

impl Session {
    /// A session for a script of this `source`, stopping on its first line; `timeout` is how
    /// long it may run without stopping before it is stopped ("infinite loop?").
    pub fn new(source: &[u8], timeout: Duration) -> Session {
        let mut end = source.len();
        while end > 0 && matches!(source[end - 1], b'\n' | b'\r') {
            end -= 1;
        }
        let source = &source[..end];
        let lines = if source.is_empty() {
            Vec::new()
        } else {
            source.split(|&b| b == b'\n').map(<[u8]>::to_vec).collect()
        };
        Session {
            lines,
            breakpoints: Vec::new(),
            step: true,
            lua_breakpoint: false,
            current_line: 0,
            maxlen: DEFAULT_MAXLEN,
            hint_sent: false,
            logs: Vec::new(),
            input: Vec::new(),
            running_since: Instant::now(),
            timeout,
        }
    }

    fn log(&mut self, line: impl Into<Vec<u8>>) {
        self.logs.push(line.into());
    }

    /// Logs `line` cut at `maxlen` bytes (with " ..."), and says once per session how to see
    /// it whole.
    fn log_trimmed(&mut self, mut line: Vec<u8>) {
        let trimmed = self.maxlen != 0 && line.len() > self.maxlen;
        if trimmed {
            line.truncate(self.maxlen);
            line.extend_from_slice(b" ...");
        }
        self.log(line);
        if trimmed && !self.hint_sent {
            self.hint_sent = true;
            self.log("<hint> The above reply was trimmed. Use 'maxlen 0' to disable trimming.");
        }
    }

    /// The logs so far, as the array of status replies the client reads (CR and LF inside a
    /// line become spaces).
    fn take_logs(&mut self) -> Vec<u8> {
        let mut out = format!("*{}\r\n", self.logs.len()).into_bytes();
        for line in self.logs.drain(..) {
            out.push(b'+');
            out.extend(
                line.iter()
                    .map(|&b| if b == b'\r' || b == b'\n' { b' ' } else { b }),
            );
            out.extend_from_slice(b"\r\n");
        }
        out
    }

    /// Logs the command a script's `redis.call` is about to run, while stepping (at most ten
    /// arguments shown).
    pub(crate) fn log_command(&mut self, args: &[bytes::Bytes]) {
        let mut line = b"<redis>".to_vec();
        for (i, arg) in args.iter().enumerate() {
            if i == 10 {
                line.extend_from_slice(format!(" ... ({} more)", args.len() - i - 1).as_bytes());
                break;
            }
            line.push(b' ');
            line.extend_from_slice(arg);
        }
        self.log(line);
    }

    /// Logs what the command answered: the error of a command the script gates refused, or the
    /// reply (an error reply logged as such first).
    pub(crate) fn log_call(&mut self, reply: &[u8], refused: bool) {
        let line = reply.strip_suffix(b"\r\n").unwrap_or(reply);
        if refused {
            let message = line.strip_prefix(b"-ERR ").unwrap_or(line);
            let mut entry = b"<error> ".to_vec();
            entry.extend_from_slice(message);
            self.log(entry);
            return;
        }
        if reply.first() == Some(&b'-') {
            let mut entry = b"<error> ".to_vec();
            entry.extend_from_slice(line);
            self.log(entry);
        }
        let mut entry = b"<reply> ".to_vec();
        human_reply(&mut entry, reply, &mut 0);
        self.log_trimmed(entry);
    }

    /// Logs one source line with its markers: `->` the current line, `#` a breakpoint.
    fn log_source_line(&mut self, line: usize) {
        let text = match line.checked_sub(1).and_then(|i| self.lines.get(i)) {
            Some(text) => text.clone(),
            None => b"<out of range source code line>".to_vec(),
        };
        let current = line == self.current_line;
        let prefix = match (current, self.breakpoints.contains(&line)) {
            (true, true) => "->#",
            (true, false) => "-> ",
            (false, true) => "  #",
            (false, false) => "   ",
        };
        let mut entry = format!("{prefix}{line:<3} ").into_bytes();
        entry.extend_from_slice(&text);
        self.log(entry);
    }

    /// The lines within `context` of `around` (0: all of them).
    fn list(&mut self, around: usize, context: usize) {
        for line in 1..=self.lines.len() {
            if around != 0 && around.abs_diff(line) > context {
                continue;
            }
            self.log_source_line(line);
        }
    }

    fn break_command(&mut self, args: &[Vec<u8>]) {
        if args.len() == 1 {
            if self.breakpoints.is_empty() {
                self.log("No breakpoints set. Use 'b <line>' to add one.");
            } else {
                self.log(format!("{} breakpoints set:", self.breakpoints.len()));
                for line in self.breakpoints.clone() {
                    self.log_source_line(line);
                }
            }
            return;
        }
        for arg in &args[1..] {
            let Some(line) = strict_i64(arg) else {
                let mut entry = b"Invalid argument:'".to_vec();
                entry.extend_from_slice(arg);
                entry.push(b'\'');
                self.log(entry);
                continue;
            };
            if line == 0 {
                self.breakpoints.clear();
                self.log("All breakpoints removed.");
            } else if line > 0 {
                let line = line as usize;
                if self.breakpoints.len() == MAX_BREAKPOINTS {
                    self.log("Too many breakpoints set.");
                } else if line <= self.lines.len() && !self.breakpoints.contains(&line) {
                    self.breakpoints.push(line);
                    self.list(line, 1);
                } else {
                    self.log("Wrong line number.");
                }
            } else {
                let line = line.unsigned_abs() as usize;
                if let Some(at) = self.breakpoints.iter().position(|&b| b == line) {
                    self.breakpoints.remove(at);
                    self.log("Breakpoint removed.");
                } else {
                    self.log("No breakpoint in the specified line.");
                }
            }
        }
    }

    fn maxlen_command(&mut self, args: &[Vec<u8>]) {
        if args.len() == 2 {
            let value = atoi(&args[1]);
            self.hint_sent = true; // the client knows about trimming now
            self.maxlen = match value {
                0 => 0,
                v if v <= 60 => 60,
                v => v as usize,
            };
        }
        if self.maxlen != 0 {
            self.log(format!(
                "<value> replies are truncated at {} bytes.",
                self.maxlen
            ));
        } else {
            self.log("<value> replies are unlimited.");
        }
    }

    /// The session's last lines, "<endsession>" closing them, for the client.
    pub(crate) fn finish(&mut self) -> Vec<u8> {
        self.log("<endsession>");
        self.take_logs()
    }

    /// The next command in the client's input, consumed.
    fn parse_command(&mut self) -> Parsed {
        let (parsed, used) = parse_multibulk(&self.input);
        if !matches!(parsed, Parsed::Incomplete) {
            self.input.drain(..used.min(self.input.len()));
            if matches!(parsed, Parsed::ProtocolError) {
                self.input.clear();
            }
        }
        parsed
    }
}

/// Redis's forgiving parser of the debugger's input: `*<n>\r\n` then `n` bulk strings of 1 to
/// 1024 bytes. Returns the command and how many bytes it took.
fn parse_multibulk(buf: &[u8]) -> (Parsed, usize) {
    let Some(star) = buf.iter().position(|&b| b == b'*') else {
        return (
            if buf.is_empty() {
                Parsed::Incomplete
            } else {
                Parsed::ProtocolError
            },
            0,
        );
    };
    let Some((count, mut pos)) = header_line(buf, star + 1) else {
        return (Parsed::Incomplete, 0);
    };
    if count <= 0 || count as usize > MAX_ARGS {
        return (Parsed::ProtocolError, 0);
    }
    let mut args = Vec::with_capacity(count as usize);
    while args.len() < count as usize {
        match buf.get(pos) {
            None => return (Parsed::Incomplete, 0),
            Some(b'$') => {}
            Some(_) => return (Parsed::ProtocolError, 0),
        }
        let Some((len, start)) = header_line(buf, pos + 1) else {
            return (Parsed::Incomplete, 0);
        };
        if len <= 0 || len as usize > MAX_ARG_LEN {
            return (Parsed::ProtocolError, 0);
        }
        let end = start + len as usize;
        if buf.len() < end + 2 {
            return (Parsed::Incomplete, 0);
        }
        if &buf[end..end + 2] != b"\r\n" {
            return (Parsed::ProtocolError, 0);
        }
        args.push(buf[start..end].to_vec());
        pos = end + 2;
    }
    (Parsed::Command(args), pos)
}

/// The number (as C's `atoi` reads it) on the line starting at `from`, and where the next line
/// starts; None until the line is complete.
fn header_line(buf: &[u8], from: usize) -> Option<(i64, usize)> {
    let rest = buf.get(from..)?;
    let end = rest.windows(2).position(|w| w == b"\r\n")?;
    Some((atoi(&rest[..end]), from + end + 2))
}

/// C's `atoi`: leading blanks, a sign, digits; 0 for anything else.
fn atoi(text: &[u8]) -> i64 {
    let text = text.trim_ascii_start();
    let (negative, digits) = match text.first() {
        Some(b'-') => (true, &text[1..]),
        Some(b'+') => (false, &text[1..]),
        _ => (false, text),
    };
    let mut value: i64 = 0;
    for &d in digits.iter().take_while(|d| d.is_ascii_digit()) {
        value = value.wrapping_mul(10).wrapping_add(i64::from(d - b'0'));
    }
    if negative {
        -value
    } else {
        value
    }
}

/// A whole decimal integer (Redis's `string2l`), or None.
fn strict_i64(text: &[u8]) -> Option<i64> {
    let s = std::str::from_utf8(text).ok()?;
    if s.starts_with('+') || (s.len() > 1 && s.starts_with('0')) || s.starts_with("-0") {
        return None;
    }
    s.parse().ok()
}

/// Runs `f` with the session and the host of the running script.
fn with_session<R>(lua: &Lua, f: impl FnOnce(&mut Session, &mut dyn Host) -> R) -> Option<R> {
    let mut session = lua.app_data_mut::<Session>()?;
    let state = lua.app_data_ref::<RunState>()?;
    // SAFETY: see `bridge::with_host`: the host outlives the run this hook belongs to.
    let host = unsafe { &mut *state.host };
    Some(f(&mut session, host))
}

/// Sends the logs so far to the client.
fn send_logs(lua: &Lua) {
    with_session(lua, |session, host| {
        let bytes = session.take_logs();
        host.debug_write(&bytes);
    });
}

/// The hook while a session runs: Redis's `luaLdbLineHook`.
pub fn line_hook(lua: &Lua, debug: &mlua::debug::Debug) -> mlua::Result<VmState> {
    let line = debug.current_line().unwrap_or(0);
    let in_script = debug
        .source()
        .short_src
        .is_some_and(|s| s.contains("user_script"));
    let count_event = matches!(debug.event(), mlua::debug::DebugEvent::Count);
    let reason = {
        let Some(mut session) = lua.app_data_mut::<Session>() else {
            return Ok(VmState::Continue);
        };
        if !in_script {
            return Ok(VmState::Continue);
        }
        session.current_line = line;
        let breakpoint = session.breakpoints.contains(&line) || session.lua_breakpoint;
        let timed_out = count_event
            && !session.step
            && !breakpoint
            && session.running_since.elapsed() >= session.timeout;
        if count_event && !timed_out {
            return Ok(VmState::Continue);
        }
        if !(session.step || breakpoint || timed_out) {
            return Ok(VmState::Continue);
        }
        let reason = if breakpoint {
            if session.lua_breakpoint {
                "redis.breakpoint() called"
            } else {
                "break point"
            }
        } else if timed_out {
            "timeout reached, infinite loop?"
        } else {
            "step over"
        };
        session.step = false;
        session.lua_breakpoint = false;
        session.log(format!("* Stopped at {line}, stop reason = {reason}"));
        session.log_source_line(line);
        reason
    };
    send_logs(lua);
    let gone = !repl(lua)?;
    if gone && reason.starts_with("timeout") {
        return Err(Raise::err(
            "ERR timeout during Lua debugging with client closing connection",
        ));
    }
    if let Some(mut session) = lua.app_data_mut::<Session>() {
        session.running_since = Instant::now();
    }
    Ok(VmState::Continue)
}

/// Reads and runs the client's commands until one lets the script go on. False if the client
/// went away (the script then runs to its end without stopping).
fn repl(lua: &Lua) -> mlua::Result<bool> {
    loop {
        let parsed = with_session(lua, |session, host| loop {
            match session.parse_command() {
                Parsed::Incomplete => {}
                other => return Some(other),
            }
            let mut chunk = Vec::new();
            if !host.debug_read(&mut chunk) {
                session.step = false;
                session.breakpoints.clear();
                return None;
            }
            session.input.extend_from_slice(&chunk);
            if session.input.len() > MAX_INPUT {
                session.input.clear();
                return Some(Parsed::ProtocolError);
            }
        })
        .flatten();
        let args = match parsed {
            None => return Ok(false),
            Some(Parsed::Command(args)) => args,
            Some(_) => return Err(Raise::err("ERR protocol error")),
        };
        if run_command(lua, &args)? {
            return Ok(true);
        }
        send_logs(lua);
    }
}

/// Runs one debugger command; true if it lets the script go on.
fn run_command(lua: &Lua, args: &[Vec<u8>]) -> mlua::Result<bool> {
    let name = String::from_utf8_lossy(&args[0]).to_ascii_lowercase();
    let session_do = |f: &mut dyn FnMut(&mut Session)| {
        if let Some(mut s) = lua.app_data_mut::<Session>() {
            f(&mut s);
        }
    };
    match name.as_str() {
        "h" | "help" => session_do(&mut |s| HELP.iter().for_each(|l| s.log(*l))),
        "s" | "step" | "n" | "next" => {
            session_do(&mut |s| s.step = true);
            return Ok(true);
        }
        "c" | "continue" => return Ok(true),
        "t" | "trace" => trace(lua),
        "m" | "maxlen" => session_do(&mut |s| s.maxlen_command(args)),
        "b" | "break" => session_do(&mut |s| s.break_command(args)),
        "e" | "eval" => eval(lua, args),
        "a" | "abort" => return Err(Raise::err("ERR script aborted for user request")),
        "r" | "redis" if args.len() > 1 => redis_command(lua, &args[1..]),
        "p" | "print" if args.len() == 2 => print_variable(lua, &args[1]),
        "p" | "print" => print_locals(lua),
        "l" | "list" => session_do(&mut |s| {
            let mut around = s.current_line;
            if let Some(n) = args.get(1).map(|a| atoi(a)).filter(|&n| n > 0) {
                around = n as usize;
            }
            let context = args.get(2).map_or(5, |a| atoi(a).max(0) as usize);
            s.list(around, context);
        }),
        "w" | "whole" => session_do(&mut |s| s.list(1, 1_000_000)),
        _ => session_do(&mut |s| {
            s.log("<error> Unknown Redis Lua debugger command or wrong number of arguments.")
        }),
    }
    Ok(false)
}

/// `trace`: the script's frames, innermost first.
fn trace(lua: &Lua) {
    let mut frames = Vec::new();
    let mut level = 0;
    while let Some(frame) = lua.inspect_stack(level, |d| {
        let in_script = d
            .source()
            .short_src
            .is_some_and(|s| s.contains("user_script"));
        let name = d.names().name.map(|n| n.to_string());
        (in_script, name, d.current_line().unwrap_or(0))
    }) {
        if frame.0 {
            frames.push((level, frame.1, frame.2));
        }
        level += 1;
    }
    let Some(mut session) = lua.app_data_mut::<Session>() else {
        return;
    };
    if frames.is_empty() {
        session.log("<error> Can't retrieve Lua stack.");
    }
    for (i, (_, name, line)) in frames.into_iter().enumerate() {
        let name = name.unwrap_or_else(|| "top level".to_string());
        session.log(format!("{} {name}:", if i == 0 { "In" } else { "From" }));
        session.log_source_line(line);
    }
}

/// `eval <code>`: the code as an expression (`return <code>`), else as statements, in a frame
/// of its own; logs what it returns or the error.
fn eval(lua: &Lua, args: &[Vec<u8>]) {
    let code = args[1..].join(&b' ');
    let mut expression = b"return ".to_vec();
    expression.extend_from_slice(&code);
    let chunk = lua
        .load(&expression[..])
        .set_name("@ldb_eval")
        .into_function()
        .or_else(|_| lua.load(&code[..]).set_name("@ldb_eval").into_function());
    let entry = match chunk.and_then(|f: Function| f.call::<Value>(())) {
        Ok(value) => {
            let mut entry = b"<retval> ".to_vec();
            cat_value(&mut entry, &value, 0);
            Some(entry)
        }
        Err(e) => {
            let mut entry = b"<error> ".to_vec();
            entry.extend_from_slice(error_text(&e).as_bytes());
            if let Some(mut session) = lua.app_data_mut::<Session>() {
                session.log(entry);
            }
            None
        }
    };
    if let (Some(entry), Some(mut session)) = (entry, lua.app_data_mut::<Session>()) {
        session.log_trimmed(entry);
    }
}

/// A Lua error's message as Lua holds it (mlua adds context and a traceback).
fn error_text(e: &mlua::Error) -> String {
    let text = match e {
        mlua::Error::SyntaxError { message, .. } => message.clone(),
        mlua::Error::RuntimeError(message) => message.clone(),
        mlua::Error::CallbackError { cause, .. } => return error_text(cause),
        other => other.to_string(),
    };
    match text.find("\nstack traceback:") {
        Some(at) => text[..at].to_string(),
        None => text,
    }
}

/// `redis <command…>`: runs it through `redis.call`, logging command and reply.
fn redis_command(lua: &Lua, args: &[Vec<u8>]) {
    let call = redis_call_function(lua);
    if let Some(mut s) = lua.app_data_mut::<Session>() {
        s.step = true; // redis.call logs while stepping
    }
    if let Some(call) = call {
        let values: Vec<Value> = args
            .iter()
            .filter_map(|a| lua.create_string(a).ok().map(Value::String))
            .collect();
        let _ = call.call::<Value>(mlua::MultiValue::from_iter(values));
    }
    if let Some(mut s) = lua.app_data_mut::<Session>() {
        s.step = false;
    }
}

/// The `redis.call` function scripts see.
fn redis_call_function(lua: &Lua) -> Option<Function> {
    let redis: mlua::Table = lua.globals().get("redis").ok()?;
    redis.get("call").ok()
}

/// The running function's local variables, names and values (Lua's own temporaries left out).
fn locals(lua: &Lua, level: usize) -> Vec<(String, Value)> {
    let mut found = Vec::new();
    lua.exec_raw_lua(|raw| unsafe {
        let state = raw.state();
        let mut ar: mlua::ffi::lua_Debug = std::mem::zeroed();
        if mlua::ffi::lua_getstack(state, level as i32, &mut ar) == 0 {
            return;
        }
        let mut i = 1;
        loop {
            if mlua::ffi::lua_checkstack(state, 2) == 0 {
                return;
            }
            let name = mlua::ffi::lua_getlocal(state, &ar, i);
            if name.is_null() {
                return;
            }
            let name = std::ffi::CStr::from_ptr(name)
                .to_string_lossy()
                .into_owned();
            let value = raw.pop_value();
            if !name.contains("(*temporary)") {
                found.push((name, value));
            }
            i += 1;
        }
    });
    found
}

/// `print`: every local variable of the running function.
fn print_locals(lua: &Lua) {
    let vars = locals(lua, 0);
    let Some(mut session) = lua.app_data_mut::<Session>() else {
        return;
    };
    if vars.is_empty() {
        session.log("No local variables in the current context.");
    }
    for (name, value) in vars {
        let mut entry = format!("<value> {name} = ").into_bytes();
        cat_value(&mut entry, &value, 0);
        session.log_trimmed(entry);
    }
}

/// `print <name>`: the innermost local of that name, else the global.
fn print_variable(lua: &Lua, name: &[u8]) {
    let name = String::from_utf8_lossy(name);
    let mut level = 0;
    let mut value = None;
    while lua.inspect_stack(level, |_| ()).is_some() {
        if let Some((_, v)) = locals(lua, level).into_iter().find(|(n, _)| *n == name) {
            value = Some(v);
            break;
        }
        level += 1;
    }
    let value = value.or_else(|| match lua.globals().get::<Value>(&*name) {
        Ok(Value::Nil) | Err(_) => None,
        Ok(v) => Some(v),
    });
    let Some(mut session) = lua.app_data_mut::<Session>() else {
        return;
    };
    match value {
        Some(v) => {
            let mut entry = b"<value> ".to_vec();
            cat_value(&mut entry, &v, 0);
            session.log_trimmed(entry);
        }
        None => session.log("No such variable."),
    }
}

/// `redis.debug(…)`: its arguments as values, on a "<debug>" line.
pub(crate) fn debug_values(lua: &Lua, values: &[Value]) {
    let Some(mut session) = lua.app_data_mut::<Session>() else {
        return;
    };
    let mut entry = format!("<debug> line {}: ", session.current_line).into_bytes();
    for (i, value) in values.iter().enumerate() {
        if i > 0 {
            entry.extend_from_slice(b", ");
        }
        cat_value(&mut entry, value, 0);
    }
    session.log(entry);
}

/// `redis.breakpoint()`: stop at the next line; true while a session runs.
pub(crate) fn breakpoint(lua: &Lua) -> bool {
    match lua.app_data_mut::<Session>() {
        Some(mut session) => {
            session.lua_breakpoint = true;
            true
        }
        None => false,
    }
}

/// True while a session steps (`redis.call` then logs).
pub(crate) fn stepping(lua: &Lua) -> bool {
    lua.app_data_ref::<Session>().is_some_and(|s| s.step)
}

/// A Lua value as Redis's `ldbCatStackValue` shows it.
fn cat_value(out: &mut Vec<u8>, value: &Value, depth: usize) {
    if depth == MAX_DEPTH {
        out.extend_from_slice(b"<max recursion level reached! Nested table?>");
        return;
    }
    match value {
        Value::Nil => out.extend_from_slice(b"nil"),
        Value::Boolean(b) => out.extend_from_slice(if *b { b"true" } else { b"false" }),
        Value::Integer(n) => out.extend_from_slice(format_g(*n as f64).as_bytes()),
        Value::Number(n) => out.extend_from_slice(format_g(*n).as_bytes()),
        Value::String(s) => embedis_protocol::repr::push_repr(out, &s.as_bytes()),
        Value::Table(t) => cat_table(out, t, depth),
        Value::Function(f) => cat_pointer(out, "function", f.to_pointer()),
        Value::UserData(u) => cat_pointer(out, "userdata", u.to_pointer()),
        Value::Thread(t) => cat_pointer(out, "thread", t.to_pointer()),
        Value::LightUserData(p) => cat_pointer(out, "light-userdata", p.0),
        _ => out.extend_from_slice(b"\"<unknown-lua-type>\""),
    }
}

/// A table: `{a; b}` when its keys are 1, 2, 3… in iteration order, else `{[k]=v; …}`.
fn cat_table(out: &mut Vec<u8>, table: &mlua::Table, depth: usize) {
    let (mut as_array, mut as_map) = (Vec::new(), Vec::new());
    let mut expected = 1.0;
    let mut is_array = true;
    for (key, value) in table.pairs::<Value, Value>().flatten() {
        let index = match key {
            Value::Integer(n) => Some(n as f64),
            Value::Number(n) => Some(n),
            _ => None,
        };
        if index != Some(expected) {
            is_array = false;
        }
        cat_value(&mut as_array, &value, depth + 1);
        as_array.extend_from_slice(b"; ");
        as_map.push(b'[');
        cat_value(&mut as_map, &key, depth + 1);
        as_map.extend_from_slice(b"]=");
        cat_value(&mut as_map, &value, depth + 1);
        as_map.extend_from_slice(b"; ");
        expected += 1.0;
    }
    let body = if is_array { as_array } else { as_map };
    out.push(b'{');
    out.extend_from_slice(&body[..body.len().saturating_sub(2)]);
    out.push(b'}');
}

fn cat_pointer(out: &mut Vec<u8>, kind: &str, pointer: *const std::ffi::c_void) {
    out.extend_from_slice(format!("\"{kind}@{pointer:p}\"").as_bytes());
}

/// A number as C's `printf("%g")` writes it: six significant digits, fixed or exponential
/// notation by the exponent, trailing zeros dropped.
fn format_g(x: f64) -> String {
    if x.is_nan() {
        return if x.is_sign_negative() { "-nan" } else { "nan" }.to_string();
    }
    if x.is_infinite() {
        return if x < 0.0 { "-inf" } else { "inf" }.to_string();
    }
    if x == 0.0 {
        return if x.is_sign_negative() { "-0" } else { "0" }.to_string();
    }
    let scientific = format!("{x:.5e}");
    let (mantissa, exponent) = scientific.split_once('e').expect("an exponent");
    let exponent: i32 = exponent.parse().expect("a number");
    if (-4..6).contains(&exponent) {
        let decimals = (5 - exponent).max(0) as usize;
        strip_zeros(&format!("{x:.decimals$}"))
    } else {
        let sign = if exponent < 0 { '-' } else { '+' };
        format!("{}e{sign}{:02}", strip_zeros(mantissa), exponent.abs())
    }
}

fn strip_zeros(text: &str) -> String {
    if !text.contains('.') {
        return text.to_string();
    }
    text.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// A RESP reply as Redis's `ldbRedisProtocolToHuman` writes it; advances `pos` past it.
fn human_reply(out: &mut Vec<u8>, reply: &[u8], pos: &mut usize) {
    let Some(&kind) = reply.get(*pos) else {
        return;
    };
    let Some(end) = reply[*pos..].windows(2).position(|w| w == b"\r\n") else {
        *pos = reply.len();
        return;
    };
    let line = &reply[*pos + 1..*pos + end];
    *pos += end + 2;
    let count = || atoi(line);
    match kind {
        b'+' | b'-' => {
            let mut whole = vec![kind];
            whole.extend_from_slice(line);
            embedis_protocol::repr::push_repr(out, &whole);
        }
        b':' => out.extend_from_slice(line),
        b'$' if count() < 0 => out.extend_from_slice(b"NULL"),
        b'$' => {
            let len = count() as usize;
            let body = reply.get(*pos..*pos + len).unwrap_or_default();
            embedis_protocol::repr::push_repr(out, body);
            *pos += len + 2;
        }
        b'*' if count() < 0 => out.extend_from_slice(b"NULL"),
        b'*' => human_list(out, reply, pos, count(), b"[", b"]"),
        b'~' => human_list(out, reply, pos, count(), b"~(", b")"),
        b'%' => {
            out.push(b'{');
            for i in 0..count() {
                human_reply(out, reply, pos);
                out.extend_from_slice(b" => ");
                human_reply(out, reply, pos);
                if i != count() - 1 {
                    out.push(b',');
                }
            }
            out.push(b'}');
        }
        b'_' => out.extend_from_slice(b"(null)"),
        b'#' => out.extend_from_slice(if line == b"t" { b"#true" } else { b"#false" }),
        b',' => {
            out.extend_from_slice(b"(double) ");
            out.extend_from_slice(line);
        }
        // Redis 7.0 leaves the other RESP3 types out.
        _ => *pos = reply.len(),
    }
}

fn human_list(out: &mut Vec<u8>, reply: &[u8], pos: &mut usize, n: i64, open: &[u8], close: &[u8]) {
    out.extend_from_slice(open);
    for i in 0..n {
        human_reply(out, reply, pos);
        if i != n - 1 {
            out.push(b',');
        }
    }
    out.extend_from_slice(close);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_print_as_c_does_with_percent_g() {
        for (x, text) in [
            (1.0, "1"),
            (1.5, "1.5"),
            (42.0, "42"),
            (1.23456789, "1.23457"),
            (1e20, "1e+20"),
            (123456.0, "123456"),
            (1234567.0, "1.23457e+06"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (-2.5, "-2.5"),
        ] {
            assert_eq!(format_g(x), text, "{x}");
        }
    }

    #[test]
    fn replies_read_as_redis_shows_them() {
        let human = |reply: &[u8]| {
            let mut out = Vec::new();
            human_reply(&mut out, reply, &mut 0);
            String::from_utf8(out).unwrap()
        };
        assert_eq!(human(b"+OK\r\n"), "\"+OK\"");
        assert_eq!(human(b"-ERR x\r\n"), "\"-ERR x\"");
        assert_eq!(human(b":1\r\n"), "1");
        assert_eq!(human(b"$-1\r\n"), "NULL");
        assert_eq!(human(b"*2\r\n:1\r\n$1\r\na\r\n"), "[1,\"a\"]");
        assert_eq!(human(b"%1\r\n:0\r\n#f\r\n"), "{0 => #false}");
        assert_eq!(human(b"~2\r\n:0\r\n:1\r\n"), "~(0,1)");
        assert_eq!(human(b",3.141\r\n"), "(double) 3.141");
        assert_eq!(human(b"_\r\n"), "(null)");
    }

    #[test]
    fn the_command_parser_waits_for_whole_commands() {
        assert!(matches!(
            parse_multibulk(b"*1\r\n$1\r"),
            (Parsed::Incomplete, _)
        ));
        match parse_multibulk(b"*2\r\n$1\r\np\r\n$1\r\na\r\nrest") {
            (Parsed::Command(args), used) => {
                assert_eq!(args, vec![b"p".to_vec(), b"a".to_vec()]);
                assert_eq!(used, 18);
            }
            _ => panic!("a command"),
        }
        assert!(matches!(
            parse_multibulk(b"PING\r\n"),
            (Parsed::ProtocolError, _)
        ));
        assert!(matches!(
            parse_multibulk(b"*0\r\n"),
            (Parsed::ProtocolError, _)
        ));
        assert!(matches!(
            parse_multibulk(b"*1\r\n$0\r\n\r\n"),
            (Parsed::ProtocolError, _)
        ));
    }

    #[test]
    fn breakpoints_are_added_listed_and_removed() {
        let mut s = Session::new(
            b"local a = 1\nlocal b = 2\nreturn a\n",
            Duration::from_secs(5),
        );
        s.current_line = 1;
        s.break_command(&[b"b".to_vec(), b"2".to_vec()]);
        s.break_command(&[b"b".to_vec()]);
        s.break_command(&[b"b".to_vec(), b"9".to_vec(), b"x".to_vec(), b"-2".to_vec()]);
        let logs: Vec<String> = s
            .logs
            .iter()
            .map(|l| String::from_utf8_lossy(l).into_owned())
            .collect();
        assert_eq!(
            logs,
            [
                "-> 1   local a = 1",
                "  #2   local b = 2",
                "   3   return a",
                "1 breakpoints set:",
                "  #2   local b = 2",
                "Wrong line number.",
                "Invalid argument:'x'",
                "Breakpoint removed.",
            ]
        );
    }
}
