//! Reading one parameter's value as Redis reads it: integers, memory sizes (`1mb`), the
//! multi-word values (`save` points, output-buffer limits, latency percentiles), and
//! [`Param::validate`], which checks a value against its parameter's kind and bounds and answers
//! Redis's error texts ([`ValueError`]). CONFIG SET, the config file and the command line all
//! check values here, before the table's setters store them.

use super::{event_class, Kind, ObufLimit, Param};
use crate::base::compat::CompatVersion;

/// Parses a `save` value: "" (none) or pairs of seconds (>= 1) and changes (>= 0).
pub fn parse_save_points(value: &str) -> Option<Vec<(u64, u64)>> {
    let words: Vec<&str> = value.split_whitespace().collect();
    if value.trim().is_empty() || value == "\"\"" {
        return Some(Vec::new());
    }
    if !words.len().is_multiple_of(2) {
        return None;
    }
    words
        .chunks(2)
        .map(|pair| {
            let seconds: i64 = pair[0].parse().ok()?;
            let changes: i64 = pair[1].parse().ok()?;
            (seconds >= 1 && changes >= 0).then_some((seconds as u64, changes as u64))
        })
        .collect()
}

/// Parses a `latency-tracking-info-percentiles` value as Redis does: numbers separated by single
/// spaces (so an extra space is an empty, invalid number; an empty value is no number at all),
/// each a C double between 0 and 100. (Rust's float syntax stands in
/// for `strtod`: hexadecimal floats are refused here where Redis would take them.)
pub fn parse_percentiles(value: &str) -> Result<Vec<f64>, ValueError> {
    let mut out = Vec::new();
    if value.is_empty() {
        return Ok(out);
    }
    for word in value.split(' ') {
        let p: f64 = word
            .parse()
            .ok()
            .filter(|p: &f64| !p.is_nan())
            // Out of a double's range is a parse failure for Redis (ERANGE), "inf" is a value.
            .filter(|p: &f64| p.is_finite() || word.to_ascii_lowercase().contains("inf"))
            .ok_or(ValueError::Custom(
                "Invalid latency-tracking-info-percentiles parameters",
            ))?;
        if !(0.0..=100.0).contains(&p) {
            return Err(ValueError::Custom(
                "latency-tracking-info-percentiles parameters should sit between [0.0,100.0]",
            ));
        }
        out.push(p);
    }
    Ok(out)
}

/// A percentile as Redis prints it in CONFIG GET and INFO latencystats: six decimals with the
/// trailing zeros (and a bare point) trimmed — `50`, `99.9`.
pub fn percentile_text(p: f64) -> String {
    let text = format!("{p:.6}");
    text.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// Parses a `client-output-buffer-limit` value as Redis does: groups of
/// `<class> <hard> <soft> <soft seconds>`, all checked before any is applied.
pub fn parse_obuf_limits(value: &str) -> Result<Vec<(usize, ObufLimit)>, ValueError> {
    let words: Vec<&str> = value.split_ascii_whitespace().collect();
    if !words.len().is_multiple_of(4) {
        return Err(ValueError::Custom(
            "Wrong number of arguments in buffer limit configuration.",
        ));
    }
    let mut out = Vec::new();
    for group in words.chunks(4) {
        let class = match group[0].to_ascii_lowercase().as_str() {
            "normal" => ObufLimit::NORMAL,
            "slave" | "replica" => ObufLimit::REPLICA,
            "pubsub" => ObufLimit::PUBSUB,
            _ => {
                return Err(ValueError::Custom(
                    "Invalid client class specified in buffer limit configuration.",
                ))
            }
        };
        let hard = parse_memory(group[1]);
        let soft = parse_memory(group[2]);
        let seconds = parse_int(group[3]);
        match (hard, soft, seconds) {
            (Some(hard), Some(soft), Some(seconds)) if seconds >= 0 => out.push((
                class,
                ObufLimit {
                    hard: hard as u64,
                    soft: soft as u64,
                    soft_seconds: seconds as u64,
                },
            )),
            _ => {
                return Err(ValueError::Custom(
                    "Error in hard, soft or soft_seconds setting in buffer limit configuration.",
                ))
            }
        }
    }
    Ok(out)
}

/// Parses a memory size as Redis's `memtoull`: a number with an optional unit (k = 1000,
/// kb = 1024, m, mb, g, gb; case-insensitive).
pub fn parse_memory(s: &str) -> Option<i64> {
    let lower = s.to_ascii_lowercase();
    let units: [(&str, i64); 6] = [
        ("kb", 1024),
        ("mb", 1024 * 1024),
        ("gb", 1024 * 1024 * 1024),
        ("k", 1000),
        ("m", 1000 * 1000),
        ("g", 1000 * 1000 * 1000),
    ];
    let (digits, mul) = units
        .iter()
        .find_map(|(suffix, mul)| lower.strip_suffix(suffix).map(|d| (d, *mul)))
        .unwrap_or((lower.as_str(), 1));
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse::<i64>().ok()?.checked_mul(mul)
}

/// Parses a memory size into an unsigned 64-bit value as Redis 7.0 reads its unsigned memory
/// parameters (`cluster-link-sendbuf-limit`), `memtoull`'s way: the value is a C string (up to
/// a NUL), its leading ASCII digits are the number (none reads as 0, so "" and "kb" are 0) and
/// the rest must be a unit — none, b, k, kb, m, mb, g, gb, any case. More than 127 digits is an
/// error; a number past 2^64 - 1 reads as 2^64 - 1, and the unit's product wraps around 2^64.
pub fn parse_memory_u64(s: &str) -> Option<u64> {
    let s = s.split('\0').next().unwrap_or("");
    let digits_end = s
        .bytes()
        .position(|b| !b.is_ascii_digit())
        .unwrap_or(s.len());
    let (digits, unit) = s.split_at(digits_end);
    let mul: u64 = match unit.to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" => 1000,
        "kb" => 1024,
        "m" => 1000 * 1000,
        "mb" => 1024 * 1024,
        "g" => 1000 * 1000 * 1000,
        "gb" => 1024 * 1024 * 1024,
        _ => return None,
    };
    if digits.len() > 127 {
        return None;
    }
    let n = digits.bytes().fold(0u64, |n, d| {
        n.checked_mul(10)
            .and_then(|n| n.checked_add(u64::from(d - b'0')))
            .unwrap_or(u64::MAX)
    });
    Some(n.wrapping_mul(mul))
}

/// Reads `maxmemory-clients` as Redis 7.0 does (a signed size that may be a percentage): `N%`
/// (N a strict integer, 0 to 100) is stored as -N; any other value is a memory size read
/// `memtoull`'s way and taken as a signed number, so that one past 2^63 - 1 reads as negative:
/// a percentage, refused over 100 (`18446744073709551615` is `1%`, as in Redis). 0 is off.
pub fn parse_memory_or_percent(value: &str) -> Result<i64, ValueError> {
    const NOT_MEMORY: ValueError = ValueError::Custom("argument must be a memory or percent value");
    let n = match value.strip_suffix('%') {
        Some(digits) => match parse_int(digits) {
            Some(p) if p >= 0 => -p,
            _ => return Err(NOT_MEMORY),
        },
        None => parse_memory_u64(value).ok_or(NOT_MEMORY)? as i64,
    };
    if n < -100 {
        return Err(ValueError::Custom(
            "percentage argument must be less or equal to 100",
        ));
    }
    Ok(n)
}

/// `maxmemory-clients` as CONFIG GET shows it: a percentage as `N%`, a size in bytes.
pub fn memory_or_percent_text(n: i64) -> String {
    if n < 0 {
        format!("{}%", -n)
    } else {
        n.to_string()
    }
}

/// Redis 7.0's check of `cluster-announce-hostname`, on the value as a C string (up to a NUL):
/// shorter than 256 bytes, then only ASCII letters, digits, '-' and '.'.
fn check_hostname(value: &str) -> Result<(), ValueError> {
    let name = value.split('\0').next().unwrap_or("");
    if name.len() >= 256 {
        return Err(ValueError::Custom(
            "Hostnames must be less than 256 characters",
        ));
    }
    if !name
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.')
    {
        return Err(ValueError::Custom(
            "Hostnames may only contain alphanumeric characters, hyphens or dots",
        ));
    }
    Ok(())
}

/// Redis's check of a `replicaof host port` line: `no one`, or a port that `strtol` reads
/// whole (leading spaces and a sign allowed) within 0..=65535.
fn replicaof_port_ok(value: &str) -> bool {
    let mut words = value.split(' ');
    let (host, port) = (words.next().unwrap_or(""), words.next().unwrap_or(""));
    if host.eq_ignore_ascii_case("no") && port.eq_ignore_ascii_case("one") {
        return true;
    }
    let digits = port.trim_start().trim_start_matches(['+', '-']);
    let negative = port.trim_start().starts_with('-');
    digits.bytes().all(|b| b.is_ascii_digit())
        && (negative && digits.bytes().all(|b| b == b'0')
            || !negative
                && digits
                    .parse::<u32>()
                    .map_or(digits.is_empty(), |p| p <= 65535))
}

/// True if `s` has the shape of a memory size (digits and an optional unit), whatever its value.
fn is_memory_syntax(s: &str) -> bool {
    let lower = s.to_ascii_lowercase();
    let digits = ["kb", "mb", "gb", "k", "m", "g"]
        .iter()
        .find_map(|u| lower.strip_suffix(u))
        .unwrap_or(&lower);
    !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())
}

/// Parses an integer parameter value as Redis does (`string2ll`: canonical digits only, no sign
/// `+`, no spaces).
fn parse_int(s: &str) -> Option<i64> {
    embedis_protocol::number::parse_i64(s.as_bytes())
}

/// Redis 8.2's first check of its unsigned parameters: a negative integer, or a memory size
/// too big for a signed 64-bit number, is refused as below zero (8.2 reads both as signed).
fn check_unsigned(kind: Kind, value: &str) -> Result<(), ValueError> {
    let below_zero = match kind {
        Kind::Int { .. } => parse_int(value).is_some_and(|n| n < 0),
        Kind::Memory { .. } | Kind::UnsignedMemory => {
            is_memory_syntax(value) && parse_memory(value).is_none()
        }
        _ => false,
    };
    if below_zero {
        return Err(ValueError::Custom("argument must be greater or equal to 0"));
    }
    Ok(())
}

/// Why a value was refused; `Display` gives Redis's text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ValueError {
    NotInteger,
    NotMemory,
    OutOfRange {
        min: i64,
        max: i64,
    },
    NotYesNo,
    NotOneOf(&'static [&'static str]),
    NotImplemented {
        value: String,
    },
    /// A parameter's own message.
    Custom(&'static str),
}

impl std::fmt::Display for ValueError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ValueError::NotInteger => f.write_str("argument couldn't be parsed into an integer"),
            ValueError::NotMemory => f.write_str("argument must be a memory value"),
            ValueError::OutOfRange { min, max } => {
                write!(f, "argument must be between {min} and {max} inclusive")
            }
            ValueError::NotYesNo => f.write_str("argument must be 'yes' or 'no'"),
            ValueError::NotOneOf(choices) => {
                write!(
                    f,
                    "argument(s) must be one of the following: {}",
                    choices.join(", ")
                )
            }
            ValueError::Custom(text) => f.write_str(text),
            ValueError::NotImplemented { value } => write!(
                f,
                "embedis does not implement the value '{value}' for this parameter yet"
            ),
        }
    }
}

impl Param {
    /// Checks `value` against the parameter's kind and bounds in the Redis `version` names
    /// (see [`Param::kind_in`] and [`Param::unsigned_in`]).
    pub fn validate(&self, value: &str, version: CompatVersion) -> Result<(), ValueError> {
        let kind = self.kind_in(version);
        if self.unsigned_in(version) {
            check_unsigned(kind, value)?;
        }
        self.validate_kind(kind, value)
    }

    fn validate_kind(&self, kind: Kind, value: &str) -> Result<(), ValueError> {
        match kind {
            Kind::Int { min, max } => {
                let n = parse_int(value).ok_or(ValueError::NotInteger)?;
                if n < min || n > max {
                    return Err(ValueError::OutOfRange { min, max });
                }
            }
            Kind::Memory { min, max } => {
                let n = match parse_memory(value) {
                    Some(n) => n,
                    // Well-formed but too big for 64 bits: Redis reports the range.
                    None if is_memory_syntax(value) => {
                        return Err(ValueError::OutOfRange { min, max })
                    }
                    None => return Err(ValueError::NotMemory),
                };
                if n < min || n > max {
                    return Err(ValueError::OutOfRange { min, max });
                }
            }
            Kind::UnsignedMemory => {
                parse_memory_u64(value).ok_or(ValueError::NotMemory)?;
            }
            Kind::Bool => {
                if !value.eq_ignore_ascii_case("yes") && !value.eq_ignore_ascii_case("no") {
                    return Err(ValueError::NotYesNo);
                }
            }
            Kind::Choice(choices) => {
                if !choices.iter().any(|c| c.eq_ignore_ascii_case(value)) {
                    return Err(ValueError::NotOneOf(choices));
                }
            }
            Kind::Text => {
                if self.name == "unixsocketperm" && u32::from_str_radix(value, 8).is_err() {
                    return Err(ValueError::NotInteger);
                }
                if self.name == "client-output-buffer-limit" {
                    parse_obuf_limits(value)?;
                }
                if self.name == "notify-keyspace-events"
                    && event_class::from_letters(value).is_none()
                {
                    return Err(ValueError::Custom(
                        "Invalid event class character. Use 'Ag$lshzxeKEtmdn'.",
                    ));
                }
                if self.name == "dir" && !std::path::Path::new(value).is_dir() {
                    return Err(ValueError::Custom("No such file or directory"));
                }
                if self.name == "save" && parse_save_points(value).is_none() {
                    return Err(ValueError::Custom("Invalid save parameters"));
                }
                if self.name == "dbfilename" && value.contains('/') {
                    return Err(ValueError::Custom(
                        "dbfilename can't be a path, just a filename",
                    ));
                }
                if self.name == "latency-tracking-info-percentiles" {
                    parse_percentiles(value)?;
                }
                if self.name == "cluster-announce-hostname" {
                    check_hostname(value)?;
                }
                if self.name.starts_with("shutdown-on-sig") {
                    super::process::ShutdownFlags::parse(value)?;
                }
                if self.name == "oom-score-adj-values" {
                    super::process::parse_oom_values(value)?;
                }
                if self.name == "replicaof" && !replicaof_port_ok(value) {
                    return Err(ValueError::Custom("Invalid master port"));
                }
                if self.name == "proc-title-template"
                    && !super::process::check_title_template(value)
                {
                    return Err(ValueError::Custom(
                        "template format is invalid or contains unknown variables",
                    ));
                }
            }
            Kind::PartialChoice {
                choices,
                implemented,
            } => {
                if !choices.iter().any(|c| c.eq_ignore_ascii_case(value)) {
                    return Err(ValueError::NotOneOf(choices));
                }
                if !implemented.iter().any(|c| c.eq_ignore_ascii_case(value)) {
                    return Err(ValueError::NotImplemented {
                        value: value.to_string(),
                    });
                }
            }
            Kind::MemoryOrPercent => {
                parse_memory_or_percent(value)?;
            }
            Kind::Only(allowed) => {
                if !allowed.iter().any(|a| a.eq_ignore_ascii_case(value.trim())) {
                    return Err(ValueError::NotImplemented {
                        value: value.to_string(),
                    });
                }
            }
        }
        Ok(())
    }
}
