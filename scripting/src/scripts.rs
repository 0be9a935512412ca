//! EVAL scripts: the `#!lua flags=…` shebang and the flags it declares.
//!
//! A Redis 7 script may open with a shebang line naming its engine and flags. A script without
//! one runs in compatibility mode (it may write, whatever the flags say); a script with one is
//! held to its flags (`no-writes` refuses writes, and so on). The shebang line is cut from the
//! code before compiling but its line feed is kept, so Lua's line numbers still match the text
//! the user sent.

use crate::convert::c_str;

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
/// kept), as Redis's `evalExtractShebangFlags`: the line up to its line feed is split as
/// arguments are (`sdssplitargs`: any whitespace, a CR too, separates; quotes group), and each
/// word is read as a C string.
pub fn parse_shebang(body: &[u8]) -> Result<(ScriptFlags, &[u8]), ShebangError> {
    if !body.starts_with(b"#!") {
        return Ok((ScriptFlags::default(), body));
    }
    // `strchr`: a NUL before the line feed hides it.
    let Some(end) = c_str(body).iter().position(|&b| b == b'\n') else {
        return Err(refusal("Invalid script shebang", b""));
    };
    let parts = match embedis_protocol::inline::split_args(&body[..end]) {
        Ok(parts) if !parts.is_empty() => parts,
        _ => return Err(refusal("Invalid engine in script shebang", b"")),
    };
    if c_str(&parts[0]) != b"#!lua" {
        return Err(refusal("Unexpected engine in script shebang: ", &parts[0]));
    }
    let mut flags = ScriptFlags {
        declared: true,
        ..ScriptFlags::default()
    };
    for part in &parts[1..] {
        let Some(list) = part.strip_prefix(b"flags=") else {
            return Err(refusal("Unknown lua shebang option: ", part));
        };
        // `sdssplitlen`: nothing in an empty list, an empty name between two commas.
        for name in list.split(|&b| b == b',').filter(|_| !list.is_empty()) {
            if !flags.set(c_str(name)) {
                return Err(refusal("Unexpected flag in script shebang: ", name));
            }
        }
    }
    Ok((flags, &body[end..]))
}

/// `ERR <message><quoted>`, the quoted word read as a C string.
fn refusal(message: &str, quoted: &[u8]) -> ShebangError {
    let mut line = format!("ERR {message}").into_bytes();
    line.extend_from_slice(c_str(quoted));
    ShebangError(line)
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
        assert_eq!(err(b"#!lua"), "ERR Invalid script shebang");
        assert_eq!(err(b"#!lua \0\nreturn 1"), "ERR Invalid script shebang");
        assert_eq!(err(b"#!lua \"x\n"), "ERR Invalid engine in script shebang");
        assert_eq!(
            err(b"#!lua flags=no-writes,,allow-oom\n"),
            "ERR Unexpected flag in script shebang: "
        );
    }

    #[test]
    fn the_line_is_split_as_arguments_are() {
        // A CR before the line feed separates words, as a tab does; quotes group.
        for body in [
            &b"#!lua flags=no-writes\r\nreturn 1"[..],
            b"#!lua\tflags=no-writes\n",
            b"#!lua \"flags=no-writes\"\n",
        ] {
            let (flags, _) = parse_shebang(body).unwrap();
            assert!(flags.declared && flags.no_writes, "{body:?}");
        }
        let (flags, code) = parse_shebang(b"#!lua flags=\nreturn 1").unwrap();
        assert!(flags.declared && !flags.no_writes);
        assert_eq!(code, b"\nreturn 1");
    }
}
