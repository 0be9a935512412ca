//! Arguments seen the way Redis's C code sees them.
//!
//! Redis compares option words with `strcasecmp` and prints arguments with `%s`; both stop at
//! the first NUL byte. So `SET k v "NX\0junk"` is an NX, and an error quoting `"a\0b"` shows
//! `a`. Every option comparison and every error that quotes client data goes through here, so
//! the rule lives in one place. [`push_repr`] prints binary data as Redis's `sdscatrepr` does
//! (MONITOR lines, CONFIG REWRITE, error texts that quote arguments).

/// `bytes` up to its first NUL.
pub fn c_str(bytes: &[u8]) -> &[u8] {
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    &bytes[..end]
}

/// Redis's `strcasecmp(arg, word) == 0`: ASCII case-insensitive, blind to anything after a NUL.
pub fn word_is(arg: &[u8], word: &str) -> bool {
    c_str(arg).eq_ignore_ascii_case(word.as_bytes())
}

/// Redis's `sdscatrepr` (shared with the Lua debugger, so it lives in the protocol crate).
pub use embedis_protocol::repr::push_repr;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn option_words_are_c_strings() {
        assert!(word_is(b"NX\0junk", "nx"));
        assert!(word_is(b"KeepTTL", "keepttl"));
        assert!(!word_is(b"", "nx"));
        assert!(!word_is(b"nxx", "nx"));
        assert_eq!(c_str(b"a\0b"), b"a");
    }

    #[test]
    fn repr() {
        let mut out = Vec::new();
        push_repr(&mut out, b"a\"b\\\n\x01\xff");
        assert_eq!(out, b"\"a\\\"b\\\\\\n\\x01\\xff\"");
    }
}
