//! The process title — what `ps` and /proc/<pid>/cmdline show — as Redis's `setproctitle` sets
//! it (`set-proc-title`, `proc-title-template`). Linux shows the memory the command line's
//! strings were handed in (and, when the title runs past them, the environment's that follow),
//! so the title is written over that memory.
//!
//! [`init`] makes the memory free to overwrite, once, at the start of the binary's `main`
//! before any thread reads the environment: the area runs from argv[0] over the strings that
//! follow one another (the argument vector as glibc hands it to `.init_array`, as Redis's
//! `spt_init` reads `main`'s), the environment strings in it are copied and `environ` points at
//! the copies (glibc's `program_invocation_name` likewise), and argv[0] is kept for `{title}`.
//! std's `env::args` reads the original strings, so the binary reads its arguments before it
//! sets a title. A server inside a test process never calls `init` and
//! leaves its host's title alone: [`set`] then does nothing.

use std::sync::{Mutex, OnceLock};

/// The bytes the title may take: from the first argument's first byte to the last string's
/// terminating NUL (kept a NUL).
#[derive(Debug, Clone, Copy)]
struct Area {
    start: usize,
    len: usize,
}

static AREA: Mutex<Option<Area>> = Mutex::new(None);
static ARGV0: OnceLock<String> = OnceLock::new();

/// What a title template's variables stand for (Redis's `redisProcTitleGetVariable`).
#[derive(Debug, Clone, Copy)]
pub struct TitleVars<'a> {
    /// argv[0] as the process was executed.
    pub title: &'a str,
    /// The first `bind` address, if any.
    pub bind: Option<&'a str>,
    pub port: u16,
    pub tls_port: u16,
    pub unixsocket: &'a str,
    pub cluster: bool,
    /// The config file's absolute path, empty without one.
    pub config_file: &'a str,
}

/// The title `template` gives (None for a template Redis would refuse).
pub fn expand(template: &str, vars: &TitleVars<'_>) -> Option<String> {
    super::config::process::expand_title_template(template, |name| match name {
        "title" => vars.title.to_string(),
        "listen-addr" if vars.port != 0 || vars.tls_port != 0 => {
            let port = if vars.port != 0 {
                vars.port
            } else {
                vars.tls_port
            };
            format!("{}:{port}", vars.bind.unwrap_or("*"))
        }
        "listen-addr" => format!("unixsocket:{}", vars.unixsocket),
        "server-mode" if vars.cluster => "[cluster]".to_string(),
        "server-mode" => String::new(),
        "config-file" if vars.config_file.is_empty() => "-".to_string(),
        "config-file" => vars.config_file.to_string(),
        "port" => vars.port.to_string(),
        "tls-port" => vars.tls_port.to_string(),
        "unixsocket" => vars.unixsocket.to_string(),
        _ => String::new(),
    })
}

/// argv[0] as the binary was executed (empty in a process that did not call [`init`]).
pub fn argv0() -> &'static str {
    ARGV0.get().map_or("", String::as_str)
}

/// Prepares the command line's memory for [`set`]. Call once, first thing in `main`, while the
/// process has one thread. Returns false where titles cannot be set (not Linux, no /proc).
pub fn init() -> bool {
    let _ = ARGV0.set(
        std::env::args_os()
            .next()
            .map(|a| a.to_string_lossy().into_owned())
            .unwrap_or_default(),
    );
    let Some(area) = platform::take_area() else {
        return false;
    };
    *AREA.lock().unwrap_or_else(|e| e.into_inner()) = Some(area);
    true
}

/// Writes `title` over the command line (cut to the room there is; the rest zeroed, as Redis
/// does). Returns false if [`init`] did not prepare the memory.
pub fn set(title: &str) -> bool {
    let guard = AREA.lock().unwrap_or_else(|e| e.into_inner());
    let Some(area) = *guard else {
        return false;
    };
    let bytes = title.as_bytes();
    let n = bytes.len().min(area.len - 1);
    // SAFETY: `init` found these bytes to be the process's argument and environment strings
    // (the kernel's arg_start..env_end) and moved every pointer the process holds into the
    // environment's part elsewhere; the lock keeps writers apart.
    unsafe {
        let base = area.start as *mut u8;
        std::ptr::copy_nonoverlapping(bytes.as_ptr(), base, n);
        std::ptr::write_bytes(base.add(n), 0, area.len - n);
    }
    true
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
mod platform {
    use super::Area;
    use std::ffi::{c_char, c_int};
    use std::sync::atomic::{AtomicPtr, AtomicUsize, Ordering};

    extern "C" {
        static mut environ: *mut *mut c_char;
        static mut program_invocation_name: *mut c_char;
        static mut program_invocation_short_name: *mut c_char;
    }

    static ARGC: AtomicUsize = AtomicUsize::new(0);
    static ARGV: AtomicPtr<*const c_char> = AtomicPtr::new(std::ptr::null_mut());

    /// glibc calls the functions of `.init_array` with `main`'s arguments (as std reads its own
    /// `env::args`): the argument vector as the program got it — under valgrind its own copy,
    /// not valgrind's command line, which /proc/self/stat's arg_start would point at.
    #[used]
    #[link_section = ".init_array.00099"]
    static CAPTURE: extern "C" fn(c_int, *const *const c_char, *const *const c_char) = capture;

    extern "C" fn capture(argc: c_int, argv: *const *const c_char, _env: *const *const c_char) {
        ARGC.store(argc.max(0) as usize, Ordering::Relaxed);
        ARGV.store(argv as *mut _, Ordering::Relaxed);
    }

    /// The end of the NUL-terminated string at `p` (one past its NUL).
    ///
    /// SAFETY: `p` points to a NUL-terminated string.
    unsafe fn string_end(p: *const c_char) -> usize {
        p as usize + libc::strlen(p) + 1
    }

    /// Moves what points into the strings elsewhere and returns their area: argv[0] on, over
    /// the arguments and then the environment strings as long as each follows the last
    /// (Redis's `spt_init`).
    pub(super) fn take_area() -> Option<Area> {
        let argc = ARGC.load(Ordering::Relaxed);
        let argv = ARGV.load(Ordering::Relaxed);
        if argv.is_null() || argc == 0 {
            return None;
        }
        // SAFETY: `argv` holds `argc` string pointers (glibc's promise to `.init_array`), and
        // `environ` is NULL-terminated; one thread runs (the caller's promise), so nothing reads
        // `environ` or the names while they are replaced; each copy is a string of its own.
        unsafe {
            let start = *argv as usize;
            if start == 0 {
                return None;
            }
            let mut end = start;
            for i in 0..argc {
                let arg = *argv.add(i);
                if arg as usize != end {
                    break;
                }
                end = string_end(arg);
            }
            let mut entry = environ;
            while !entry.is_null() && !(*entry).is_null() && *entry as usize == end {
                end = string_end(*entry);
                entry = entry.add(1);
            }
            let inside = |p: *mut c_char| (start..end).contains(&(p as usize));
            let mut entry = environ;
            while !entry.is_null() && !(*entry).is_null() {
                if inside(*entry) {
                    *entry = libc::strdup(*entry);
                }
                entry = entry.add(1);
            }
            if inside(program_invocation_name) {
                program_invocation_name = libc::strdup(program_invocation_name);
            }
            if inside(program_invocation_short_name) {
                program_invocation_short_name = libc::strdup(program_invocation_short_name);
            }
            Some(Area {
                start,
                len: end - start,
            })
        }
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
mod platform {
    pub(super) fn take_area() -> Option<super::Area> {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars() -> TitleVars<'static> {
        TitleVars {
            title: "/opt/redis-server",
            bind: Some("127.0.0.1"),
            port: 6379,
            tls_port: 0,
            unixsocket: "/tmp/s.sock",
            cluster: false,
            config_file: "",
        }
    }

    /// The variables as Redis 7.0.15 expands them (its default template and unit/other's).
    #[test]
    fn variables_expand_as_redis_expands_them() {
        let v = vars();
        let default = "{title} {listen-addr} {server-mode}";
        assert_eq!(
            expand(default, &v).unwrap(),
            "/opt/redis-server 127.0.0.1:6379"
        );
        let all = "TEST {title} {listen-addr} {port} {tls-port} {unixsocket} {config-file}";
        assert_eq!(
            expand(all, &v).unwrap(),
            "TEST /opt/redis-server 127.0.0.1:6379 6379 0 /tmp/s.sock -"
        );
        let tls_only = TitleVars {
            port: 0,
            tls_port: 6380,
            bind: None,
            cluster: true,
            ..v
        };
        assert_eq!(
            expand(default, &tls_only).unwrap(),
            "/opt/redis-server *:6380 [cluster]"
        );
        let unix_only = TitleVars { port: 0, ..v };
        assert_eq!(
            expand("{listen-addr}", &unix_only).unwrap(),
            "unixsocket:/tmp/s.sock"
        );
    }

    /// Without `init` (a server inside a test process) the host's title is left alone.
    #[test]
    fn nothing_is_written_without_init() {
        assert!(!set("changed"));
        assert_eq!(argv0(), "");
    }
}
