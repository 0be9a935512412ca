//! EVAL scripts: the `#!lua flags=…` shebang and the flags it declares.
//!
//! A Redis 7 script may open with a shebang line naming its engine and flags. A script without
//! one runs in compatibility mode (it may write, whatever the flags say); a script with one is
//! held to its flags (`no-writes` refuses writes, and so on). The shebang line is cut from the
//! code before compiling but its line feed is kept, so Lua's line numbers still match the text
//! the user sent.

/// Flags a script declares in its shebang (or a function in `register_function`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ScriptFlags {
    /// The script opened with a shebang: it is held to its flags. Without one Redis runs it in
    /// compatibility mode.
    pub declared: bool,
    pub no_writes: bool,
    pub allow_oom: bool,
    pub allow_stale: bool,
    pub no_cluster: bool,
    pub allow_cross_slot_keys: bool,
}

impl ScriptFlags {
    /// The flag names Redis accepts, in its order.
    pub const NAMES: [&'static str; 5] = [
        "no-writes",
        "allow-oom",
        "allow-stale",
        "no-cluster",
        "allow-cross-slot-keys",
    ];

    /// Sets the flag called `name`; false if there is no such flag.
    pub fn set(&mut self, name: &[u8]) -> bool {
        match name {
            b"no-writes" => self.no_writes = true,
            b"allow-oom" => self.allow_oom = true,
            b"allow-stale" => self.allow_stale = true,
            b"no-cluster" => self.no_cluster = true,
            b"allow-cross-slot-keys" => self.allow_cross_slot_keys = true,
            _ => return false,
        }
        true
    }

    /// The names of the flags set, in Redis's order (FUNCTION LIST).
    pub fn names(&self) -> Vec<&'static str> {
        let set = [
            self.no_writes,
            self.allow_oom,
            self.allow_stale,
            self.no_cluster,
            self.allow_cross_slot_keys,
        ];
        Self::NAMES
            .iter()
            .zip(set)
            .filter(|(_, on)| *on)
            .map(|(n, _)| *n)
            .collect()
    }
}

/// A shebang Redis would refuse: the error line to reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShebangError(pub Vec<u8>);

/// Splits `body` into its flags and the code to compile (the shebang line cut, its line feed
/// kept).
pub fn parse_shebang(body: &[u8]) -> Result<(ScriptFlags, &[u8]), ShebangError> {
    if !body.starts_with(b"#!") {
        return Ok((ScriptFlags::default(), body));
    }
    let end = body.iter().position(|&b| b == b'\n').unwrap_or(body.len());
    let line = &body[..end];
    let mut flags = ScriptFlags {
        declared: true,
        ..ScriptFlags::default()
    };
    let mut parts = line.split(|&b| b == b' ').filter(|p| !p.is_empty());
    let engine = parts.next().unwrap_or_default();
    if engine != b"#!lua" {
        let mut msg = b"ERR Unexpected engine in script shebang: ".to_vec();
        msg.extend_from_slice(engine);
        return Err(ShebangError(msg));
    }
    for part in parts {
        if let Some(list) = part.strip_prefix(b"flags=") {
            for name in list.split(|&b| b == b',').filter(|n| !n.is_empty()) {
                if !flags.set(name) {
                    let mut msg = b"ERR Unexpected flag in script shebang: ".to_vec();
                    msg.extend_from_slice(name);
                    return Err(ShebangError(msg));
                }
            }
        } else {
            let mut msg = b"ERR Unknown lua shebang option: ".to_vec();
            msg.extend_from_slice(part);
            return Err(ShebangError(msg));
        }
    }
    Ok((flags, &body[end..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_shebang_is_compatibility_mode() {
        let (flags, code) = parse_shebang(b"return 1").unwrap();
        assert!(!flags.declared);
        assert_eq!(code, b"return 1");
    }

    #[test]
    fn flags_are_parsed_and_the_line_feed_kept() {
        let (flags, code) = parse_shebang(b"#!lua flags=no-writes,allow-oom\nreturn 1").unwrap();
        assert!(flags.declared && flags.no_writes && flags.allow_oom && !flags.allow_stale);
        assert_eq!(code, b"\nreturn 1");
        assert_eq!(flags.names(), vec!["no-writes", "allow-oom"]);
    }

    #[test]
    fn refusals_name_the_offending_part() {
        let err = |body: &[u8]| String::from_utf8(parse_shebang(body).unwrap_err().0).unwrap();
        assert_eq!(
            err(b"#!luax\nreturn 1"),
            "ERR Unexpected engine in script shebang: #!luax"
        );
        assert_eq!(
            err(b"#!lua flags=bogus\n"),
            "ERR Unexpected flag in script shebang: bogus"
        );
        assert_eq!(
            err(b"#!lua name=x\n"),
            "ERR Unknown lua shebang option: name=x"
        );
    }
}
