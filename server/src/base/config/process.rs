//! The parameters about the process rather than the data: how it stops on a signal and how long
//! it waits for its replicas (`shutdown-on-sigint`, `shutdown-on-sigterm`, `shutdown-timeout`),
//! what it asks of the kernel's OOM killer (`oom-score-adj`, `oom-score-adj-values`), the
//! address its outgoing connections leave from (`bind-source-addr`), and its crash report and
//! watchdog (`crash-log-enabled`, `crash-memcheck-enabled`, `watchdog-period`), and its title
//! (`set-proc-title`, `proc-title-template`). They are kept
//! together, apart from [`super::Config`]'s data parameters, because the I/O layer and the
//! shutdown sequence read them, not the commands.
//!
//! The two multi-word values are read as Redis's CONFIG SET reads them: the words are cut at
//! every single space (so two spaces make an empty word, which `oom-score-adj-values` reads as
//! 0, as `strtoll` does, and the flags refuse).

use super::ValueError;

/// SHUTDOWN's flags, as `shutdown-on-sig*` and the SHUTDOWN command combine them (Redis's bits).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ShutdownFlags(pub u8);

impl ShutdownFlags {
    pub const SAVE: u8 = 1;
    pub const NOSAVE: u8 = 2;
    pub const NOW: u8 = 4;
    pub const FORCE: u8 = 8;
    /// The names in Redis's order (its enum's), `default` standing for no flag.
    pub const NAMES: &'static [&'static str] = &["default", "save", "nosave", "now", "force"];
    const BITS: [u8; 5] = [0, Self::SAVE, Self::NOSAVE, Self::NOW, Self::FORCE];

    pub fn has(self, flag: u8) -> bool {
        self.0 & flag != 0
    }

    /// Reads a value as CONFIG SET does: each word one of the names, SAVE and NOSAVE not both.
    pub fn parse(value: &str) -> Result<ShutdownFlags, ValueError> {
        let mut bits = 0;
        for word in value.split(' ') {
            let found = Self::NAMES
                .iter()
                .position(|name| name.eq_ignore_ascii_case(word))
                .ok_or(ValueError::NotOneOf(Self::NAMES))?;
            bits |= Self::BITS[found];
        }
        if bits & Self::SAVE != 0 && bits & Self::NOSAVE != 0 {
            return Err(ValueError::Custom(
                "shutdown options SAVE and NOSAVE can't be used simultaneously",
            ));
        }
        Ok(ShutdownFlags(bits))
    }

    /// The names of the flags set, in Redis's order (`default` for none).
    pub fn text(self) -> String {
        if self.0 == 0 {
            return "default".into();
        }
        let names: Vec<&str> = Self::BITS
            .iter()
            .zip(Self::NAMES)
            .filter(|(bit, _)| **bit != 0 && self.0 & **bit != 0)
            .map(|(_, name)| *name)
            .collect();
        names.join(" ")
    }
}

/// `oom-score-adj`: whether and how the server sets its own `/proc/self/oom_score_adj`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OomScoreAdj {
    /// Leave it alone (and put back what was there before the server changed it).
    #[default]
    No,
    /// The value of the process's class added to what the process started with (`yes` too).
    Relative,
    /// The value of the process's class as it is.
    Absolute,
}

impl OomScoreAdj {
    pub const NAMES: &'static [&'static str] = &["no", "yes", "relative", "absolute"];

    pub fn parse(value: &str) -> OomScoreAdj {
        match value.to_ascii_lowercase().as_str() {
            "yes" | "relative" => OomScoreAdj::Relative,
            "absolute" => OomScoreAdj::Absolute,
            _ => OomScoreAdj::No,
        }
    }

    /// The name CONFIG GET gives: `yes` for relative, as Redis names the value by its first
    /// entry.
    pub fn name(self) -> &'static str {
        match self {
            OomScoreAdj::No => "no",
            OomScoreAdj::Relative => "yes",
            OomScoreAdj::Absolute => "absolute",
        }
    }
}

/// Which of `oom-score-adj-values`'s three a process takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OomClass {
    Primary = 0,
    Replica = 1,
    BackgroundChild = 2,
}

/// Reads `oom-score-adj-values` as Redis does: three words, each an integer from -2000 to 2000
/// (an empty word is 0).
pub fn parse_oom_values(value: &str) -> Result<[i32; 3], ValueError> {
    let words: Vec<&str> = value.split(' ').collect();
    if value.is_empty() || words.len() != 3 {
        return Err(ValueError::Custom("wrong number of arguments"));
    }
    let mut out = [0; 3];
    for (slot, word) in out.iter_mut().zip(words) {
        *slot = strtoll_whole(word)
            .filter(|n| (-2000..=2000).contains(n))
            .ok_or(ValueError::Custom(
                "Invalid oom-score-adj-values, elements must be between -2000 and 2000.",
            ))? as i32;
    }
    Ok(out)
}

/// C's `strtoll(word, &end, 10)` with `*end == '\0'` required: leading white space and a sign
/// allowed, leading zeros too, an empty word is 0; a number too big saturates (out of any range).
fn strtoll_whole(word: &str) -> Option<i64> {
    if word.is_empty() {
        return Some(0);
    }
    let body = word.trim_start_matches([' ', '\t', '\n', '\x0b', '\x0c', '\r']);
    let (negative, digits) = match body.as_bytes().first() {
        Some(b'-') => (true, &body[1..]),
        Some(b'+') => (false, &body[1..]),
        _ => (false, body),
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let magnitude = digits.bytes().fold(0i64, |n, b| {
        n.saturating_mul(10).saturating_add((b - b'0') as i64)
    });
    Some(if negative { -magnitude } else { magnitude })
}

/// The process parameters' values (see the module's documentation).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcessConfig {
    /// Seconds SHUTDOWN (and a signal) waits for lagging replicas (0: not at all).
    pub shutdown_timeout: u32,
    pub shutdown_on_sigint: ShutdownFlags,
    pub shutdown_on_sigterm: ShutdownFlags,
    pub oom_score_adj: OomScoreAdj,
    /// By [`OomClass`]: primary, replica, background child.
    pub oom_score_adj_values: [i32; 3],
    /// The local address the replica's link to its primary binds before connecting (empty: any).
    pub bind_source_addr: String,
    /// Milliseconds the event loop may stay in one turn before the watchdog logs where it is
    /// (0: off).
    pub watchdog_period: u32,
    /// A fatal signal writes a crash report to the log.
    pub crash_log_enabled: bool,
    /// Kept for CONFIG GET / SET: embedis's crash report runs no memory test.
    pub crash_memcheck_enabled: bool,
    /// `set-proc-title` and `proc-title-template`: the binary's process title (what `ps` and
    /// /proc/<pid>/cmdline show; see `crate::base::proc_title`).
    pub set_proc_title: bool,
    pub proc_title_template: String,
}

/// The variables a process title template may name (Redis's `redisProcTitleGetVariable`).
const TITLE_VARIABLES: &[&str] = &[
    "title",
    "listen-addr",
    "server-mode",
    "config-file",
    "port",
    "tls-port",
    "unixsocket",
];

/// Redis's check of `proc-title-template`: `{name}` only for known variables, `{{` and `}}`
/// for literal braces (a lone `}` is one too), and something left once the variables that may be
/// empty (`{title}`, `{server-mode}`, `{unixsocket}`) are taken out and spaces trimmed.
pub fn check_title_template(template: &str) -> bool {
    let sample = |name: &str| {
        if matches!(name, "title" | "server-mode" | "unixsocket") {
            String::new()
        } else {
            "x".to_string()
        }
    };
    expand_title_template(template, sample).is_some_and(|title| !title.is_empty())
}

/// The title `template` gives with `value` for each variable (Redis's `sdstemplate` then its
/// trim of spaces), or None if it names an unknown variable or leaves a `{` open.
pub fn expand_title_template(template: &str, value: impl Fn(&str) -> String) -> Option<String> {
    let mut title = String::new();
    let mut rest = template;
    while let Some(c) = rest.chars().next() {
        rest = &rest[c.len_utf8()..];
        match c {
            '{' if rest.starts_with('{') => {
                title.push('{');
                rest = &rest[1..];
            }
            '}' if rest.starts_with('}') => {
                title.push('}');
                rest = &rest[1..];
            }
            '{' => {
                let end = rest.find('}')?;
                let name = &rest[..end];
                if !TITLE_VARIABLES.contains(&name) {
                    return None;
                }
                title.push_str(&value(name));
                rest = &rest[end + 1..];
            }
            other => title.push(other),
        }
    }
    Some(title.trim_matches(' ').to_string())
}

impl Default for ProcessConfig {
    fn default() -> Self {
        ProcessConfig {
            shutdown_timeout: 10,
            shutdown_on_sigint: ShutdownFlags::default(),
            shutdown_on_sigterm: ShutdownFlags::default(),
            oom_score_adj: OomScoreAdj::No,
            oom_score_adj_values: [0, 200, 800],
            bind_source_addr: String::new(),
            watchdog_period: 0,
            set_proc_title: true,
            proc_title_template: "{title} {listen-addr} {server-mode}".into(),
            crash_log_enabled: true,
            crash_memcheck_enabled: true,
        }
    }
}

#[cfg(test)]
mod tests {
    /// Redis 7.0.15's answers to CONFIG SET proc-title-template, asked of redis-server.
    #[test]
    fn title_templates_as_redis_checks_them() {
        for ok in [
            "{title} {listen-addr} {server-mode}",
            "{port}",
            "x{{y}}",
            "--save",
            "{title}x",
            "a}b",
        ] {
            assert!(check_title_template(ok), "{ok}");
        }
        for bad in [
            "{title}",
            "{title} {server-mode}",
            "{unknown}",
            "{port",
            "   ",
            "",
        ] {
            assert!(!check_title_template(bad), "{bad}");
        }
    }

    use super::*;

    #[test]
    fn title_templates_expand_as_redis_expands_them() {
        let value = |name: &str| match name {
            "title" => "/usr/bin/redis-server".to_string(),
            "listen-addr" => "127.0.0.1:6379".to_string(),
            "server-mode" => String::new(),
            other => format!("<{other}>"),
        };
        assert_eq!(
            expand_title_template("{title} {listen-addr} {server-mode}", value).unwrap(),
            "/usr/bin/redis-server 127.0.0.1:6379"
        );
        assert_eq!(
            expand_title_template("  T {{x}} a}b {port}{tls-port} ", value).unwrap(),
            "T {x} a}b <port><tls-port>"
        );
        assert_eq!(expand_title_template("{nope}", value), None);
        assert_eq!(expand_title_template("{port", value), None);
    }

    #[test]
    fn flags_read_and_print_as_redis_does() {
        assert_eq!(ShutdownFlags::parse("now save").unwrap().text(), "save now");
        assert_eq!(ShutdownFlags::parse("default now").unwrap().text(), "now");
        assert_eq!(ShutdownFlags::parse("DEFAULT").unwrap().text(), "default");
        assert_eq!(
            ShutdownFlags::parse("force now nosave").unwrap().text(),
            "nosave now force"
        );
        assert!(ShutdownFlags::parse("save nosave").is_err());
        assert!(ShutdownFlags::parse("").is_err());
        assert!(ShutdownFlags::parse(" now").is_err());
    }

    #[test]
    fn oom_values_read_as_redis_does() {
        assert_eq!(parse_oom_values("1  2").unwrap(), [1, 0, 2]);
        assert_eq!(parse_oom_values(" 5 6").unwrap(), [0, 5, 6]);
        assert_eq!(parse_oom_values("+1 -2 3").unwrap(), [1, -2, 3]);
        assert!(parse_oom_values("1 2").is_err());
        assert!(parse_oom_values("").is_err());
        assert!(parse_oom_values("0x1 2 3").is_err());
        assert!(parse_oom_values("1 2 2001").is_err());
    }
}
