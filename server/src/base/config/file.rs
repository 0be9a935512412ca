//! Reading the configuration at start-up: a config file's text (Redis's format and quoting) and
//! the command line's `--name value` arguments, which become config-file text too, with Redis's
//! fatal-error report ([`ConfigError`]) for a bad line.

use super::{find_param, parse_save_points, Config};

/// A problem in a config file or on the command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    pub line_number: usize,
    pub line: String,
    pub reason: String,
}

impl std::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "\n*** FATAL CONFIG FILE ERROR (embedis {}) ***\nReading the configuration file, at line {}\n>>> '{}'\n{}",
            env!("CARGO_PKG_VERSION"),
            self.line_number,
            self.line,
            self.reason
        )
    }
}

impl std::error::Error for ConfigError {}

/// Redis parameters that embedis knows of but does not implement yet; refused with a clear
/// message instead of "bad directive".
const KNOWN_UNIMPLEMENTED: &[&str] = &[
    "supervised",
    "io-threads-do-reads",
    "include",
    "loadmodule",
    "syslog-enabled",
];

/// The parameters Redis 7.0 flags `MULTI_ARG_CONFIG`: a config-file line gives their value as
/// several words.
const MULTI_ARG: &[&str] = &[
    "bind",
    "save",
    "replicaof",
    "client-output-buffer-limit",
    "latency-tracking-info-percentiles",
    "oom-score-adj-values",
    "shutdown-on-sigint",
    "shutdown-on-sigterm",
];

impl Config {
    /// Applies the last `compat-version` line of `text` before anything else, because which
    /// parameters exist depends on it, whatever line or source (file, command line) names them.
    pub fn preset_compat_version(&mut self, text: &str) -> Result<(), ConfigError> {
        let wanted = text
            .lines()
            .enumerate()
            .filter_map(|(index, line)| {
                let mut words = line.split_whitespace();
                let name = words.next()?;
                name.eq_ignore_ascii_case("compat-version")
                    .then(|| (index, line, words.next().unwrap_or("").trim_matches('"')))
            })
            .last();
        let Some((index, line, value)) = wanted else {
            return Ok(());
        };
        let param = find_param("compat-version").expect("in the table");
        param
            .validate(value, Default::default())
            .map_err(|e| ConfigError {
                line_number: index + 1,
                line: line.trim().to_string(),
                reason: e.to_string(),
            })?;
        (param.set)(self, value);
        Ok(())
    }

    /// Parses config-file text (Redis's format: `name arg…` per line, `#` comments, quoting as
    /// in `sdssplitargs`) on top of the current values.
    pub fn load_text(&mut self, text: &str) -> Result<(), ConfigError> {
        self.preset_compat_version(text)?;
        let mut save_seen = false;
        for (index, raw_line) in text.lines().enumerate() {
            // Redis trims only these four (`sdstrim(line, " \t\r\n")`).
            let line = raw_line.trim_matches([' ', '\t', '\r', '\n']);
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let error = |reason: String| ConfigError {
                line_number: index + 1,
                line: line.to_string(),
                reason,
            };
            let args = embedis_protocol::inline::split_args(line.as_bytes())
                .map_err(|_| error("Unbalanced quotes in configuration line".into()))?;
            let args: Vec<String> = args
                .into_iter()
                .map(|a| String::from_utf8_lossy(&a).into_owned())
                .collect();
            let Some((name, values)) = args.split_first() else {
                continue;
            };
            // `user <name> <rules…>`: checked and applied at start-up with the command table.
            if name.eq_ignore_ascii_case("user") && !values.is_empty() {
                self.users
                    .push(values.iter().map(|v| v.as_bytes().to_vec()).collect());
                continue;
            }
            if name.eq_ignore_ascii_case("rename-command") && values.len() == 2 {
                self.rename_commands
                    .push((values[0].clone(), values[1].clone()));
                continue;
            }
            let Some(param) = find_param(name).filter(|p| p.exists_in(self.compat_version)) else {
                let reason = if KNOWN_UNIMPLEMENTED
                    .iter()
                    .any(|k| k.eq_ignore_ascii_case(name))
                {
                    format!("embedis does not implement '{name}' yet")
                } else {
                    "Bad directive or wrong number of arguments".to_string()
                };
                return Err(error(reason));
            };
            // Redis's multi-argument parameters take their words either separately or as one
            // quoted word, which it splits (`--save "900 1"`, a file line
            // `client-output-buffer-limit normal 0 0 0`); the others need exactly one word.
            let split;
            let values = match values {
                [one] if MULTI_ARG.contains(&param.name) && !one.is_empty() => {
                    split = embedis_protocol::inline::split_args(one.as_bytes())
                        .map_err(|_| error("Unbalanced quotes in configuration line".into()))?
                        .into_iter()
                        .map(|a| String::from_utf8_lossy(&a).into_owned())
                        .collect::<Vec<_>>();
                    &split[..]
                }
                _ => values,
            };
            let value = match (param.name, values) {
                ("save", v) => v.join(" "),
                // No words at all are an empty value, which the parameter's own check refuses
                // in its words (`shutdown-on-sigint` alone: "argument(s) must be one of…").
                (name, v) if MULTI_ARG.contains(&name) && name != "replicaof" => v.join(" "),
                ("replicaof", [host, port]) => format!("{host} {port}"),
                ("replicaof", _) => return Err(error("wrong number of arguments".into())),
                (_, [one]) => one.clone(),
                _ => return Err(error("wrong number of arguments".into())),
            };
            param
                .validate(&value, self.compat_version)
                .map_err(|e| error(e.to_string()))?;
            // Several `save` lines add up (the first replaces the defaults), as in Redis.
            if param.name == "save" && save_seen && !value.trim().is_empty() {
                let more = parse_save_points(&value).unwrap_or_default();
                self.save_points.extend(more);
                continue;
            }
            if param.name == "save" {
                save_seen = true;
            }
            (param.set)(self, &value);
        }
        Ok(())
    }

    /// Parses redis-server style arguments: an optional config file path first, then
    /// `--name value…` pairs (a value may be several words). Returns the config text they make.
    pub fn args_to_text(args: &[String]) -> Result<(Option<String>, String), String> {
        let mut file = None;
        let mut rest = args;
        if let Some(first) = args.first() {
            if !first.starts_with("--") {
                file = Some(first.clone());
                rest = &args[1..];
            }
        }
        let mut text = String::new();
        // An option name alone takes the next argument as its value even if that starts with
        // `--` (`--proc-title-template --save`), as Redis's `main` reads them; but `--save`
        // followed by an option or nothing is `save ""` (and `--sentinel` takes no value).
        let mut value_due = false;
        for (j, arg) in rest.iter().enumerate() {
            let Some(name) = arg.strip_prefix("--").filter(|_| !value_due) else {
                // Words before any option start a line of their own (`loglevel verbose`
                // reads as that line, as Redis's `main` appends them).
                if !text.is_empty() {
                    text.push(' ');
                }
                text.push_str(&quote_arg(arg));
                value_due = false;
                continue;
            };
            if !text.is_empty() {
                text.push('\n');
            }
            text.push_str(name);
            value_due = name.split_whitespace().count() == 1;
            let option_follows = rest.get(j + 1).is_none_or(|a| a.starts_with("--"));
            if value_due && option_follows {
                if name.eq_ignore_ascii_case("save") {
                    text.push_str(" \"\"");
                    value_due = false;
                } else if name.eq_ignore_ascii_case("sentinel") {
                    value_due = false;
                }
            }
        }
        Ok((file, text))
    }
}

/// Quotes a command-line value so that `split_args` gives it back as one argument.
fn quote_arg(arg: &str) -> String {
    let mut out = String::from("\"");
    for c in arg.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            other => out.push(other),
        }
    }
    out.push('"');
    out
}
