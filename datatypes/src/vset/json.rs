//! The JSON that FILTER selectors read: one top-level field of an element's attributes, turned
//! into an expression value, with the leniency and the limits of Redis 8.2's extractor (the
//! attributes are stored unchecked, so what matters is what this reader makes of them):
//!
//! - the text must start (after spaces) with `{`; keys are compared byte for byte as written,
//!   escapes included; other fields' values are skipped by shape (strings, bracketed groups by
//!   depth, literals, runs of number characters) without further checks;
//! - the value found may be a string (escapes `\n \r \t \\ \"` decoded, any other escaped
//!   character kept as itself), a number (C's `strtod` over the run of `0-9 + - . e E`),
//!   `true`/`false` (1/0) or `null` when followed by a delimiter, or a flat array of those;
//!   anything else — an object, a malformed value — reads as "not found".
//!
//! Why not serde_json: it would accept and refuse other texts than Redis does (it refuses
//! `{"a":1,}` and unquoted garbage after the field Redis stops at, and decodes `\u` escapes),
//! and FILTER results would differ from Redis's for the same stored attributes.

use super::token::{strtod_whole, Token};

fn is_space(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')
}

fn is_number_char(c: u8) -> bool {
    c.is_ascii_digit() || matches!(c, b'-' | b'+' | b'.' | b'e' | b'E')
}

struct Reader<'a> {
    s: &'a [u8],
    p: usize,
}

impl Reader<'_> {
    fn peek(&self) -> Option<u8> {
        self.s.get(self.p).copied()
    }

    fn spaces(&mut self) {
        while self.peek().is_some_and(is_space) {
            self.p += 1;
        }
    }

    fn skip_string(&mut self) -> bool {
        if self.peek() != Some(b'"') {
            return false;
        }
        self.p += 1;
        while let Some(c) = self.peek() {
            if c == b'\\' {
                self.p += 2;
                continue;
            }
            self.p += 1;
            if c == b'"' {
                return true;
            }
        }
        false
    }

    fn skip_bracketed(&mut self, open: u8, close: u8) -> bool {
        let mut depth = 1;
        self.p += 1;
        while self.p < self.s.len() && depth > 0 {
            let c = self.s[self.p];
            if c == b'"' {
                if !self.skip_string() {
                    return false;
                }
                continue;
            }
            if c == open {
                depth += 1;
            } else if c == close {
                depth -= 1;
            }
            self.p += 1;
        }
        depth == 0
    }

    fn skip_literal(&mut self, lit: &[u8]) -> bool {
        if self.s[self.p..].starts_with(lit) {
            self.p += lit.len();
            true
        } else {
            false
        }
    }

    fn skip_value(&mut self) -> bool {
        self.spaces();
        match self.peek() {
            None => false,
            Some(b'"') => self.skip_string(),
            Some(b'{') => self.skip_bracketed(b'{', b'}'),
            Some(b'[') => self.skip_bracketed(b'[', b']'),
            Some(b't') => self.skip_literal(b"true"),
            Some(b'f') => self.skip_literal(b"false"),
            Some(b'n') => self.skip_literal(b"null"),
            Some(_) => {
                let start = self.p;
                while self.peek().is_some_and(is_number_char) {
                    self.p += 1;
                }
                self.p > start
            }
        }
    }

    /// Moves to the value of top-level field `field`.
    fn seek(&mut self, field: &[u8]) -> bool {
        self.spaces();
        if self.peek() != Some(b'{') {
            return false;
        }
        self.p += 1;
        loop {
            self.spaces();
            if self.peek() != Some(b'"') {
                return false;
            }
            let key_start = self.p + 1;
            if !self.skip_string() {
                return false;
            }
            let matched = &self.s[key_start..self.p - 1] == field;
            self.spaces();
            if self.peek() != Some(b':') {
                return false;
            }
            self.p += 1;
            self.spaces();
            if self.peek().is_none() {
                return false;
            }
            if matched {
                return true;
            }
            if !self.skip_value() {
                return false;
            }
            self.spaces();
            match self.peek() {
                Some(b',') => self.p += 1,
                _ => return false,
            }
        }
    }

    fn string(&mut self) -> Option<Token> {
        self.p += 1;
        let mut out = Vec::new();
        let mut escaped = false;
        while let Some(c) = self.peek() {
            self.p += 1;
            if escaped {
                out.push(match c {
                    b'n' => b'\n',
                    b'r' => b'\r',
                    b't' => b'\t',
                    other => other,
                });
                escaped = false;
            } else if c == b'\\' {
                escaped = true;
            } else if c == b'"' {
                return Some(Token::Str(out));
            } else {
                out.push(c);
            }
        }
        None
    }

    fn number(&mut self) -> Option<Token> {
        let start = self.p;
        while self.p - start < 255 && self.peek().is_some_and(is_number_char) {
            self.p += 1;
        }
        if self.p == start {
            return None;
        }
        strtod_whole(&self.s[start..self.p]).map(Token::Num)
    }

    fn literal(&mut self, lit: &[u8], token: Token) -> Option<Token> {
        if !self.s[self.p..].starts_with(lit) {
            return None;
        }
        let after = self.s.get(self.p + lit.len()).copied();
        if let Some(c) = after {
            if !is_space(c) && !matches!(c, b',' | b']' | b'}') {
                return None;
            }
        }
        self.p += lit.len();
        Some(token)
    }

    fn array(&mut self) -> Option<Token> {
        self.p += 1;
        self.spaces();
        let mut items = Vec::new();
        if self.peek() == Some(b']') {
            self.p += 1;
            return Some(Token::Tuple(items));
        }
        loop {
            items.push(self.value()?);
            self.spaces();
            match self.peek()? {
                b',' => {
                    self.p += 1;
                    self.spaces();
                }
                b']' => {
                    self.p += 1;
                    return Some(Token::Tuple(items));
                }
                _ => return None,
            }
        }
    }

    fn value(&mut self) -> Option<Token> {
        self.spaces();
        match self.peek()? {
            b'"' => self.string(),
            b'[' => self.array(),
            b't' => self.literal(b"true", Token::Num(1.0)),
            b'f' => self.literal(b"false", Token::Num(0.0)),
            b'n' => self.literal(b"null", Token::Null),
            c if c.is_ascii_digit() || c == b'-' || c == b'+' => self.number(),
            _ => None,
        }
    }
}

/// The value of top-level field `field` of `json`, or `None` when it is missing or unreadable.
pub fn extract_field(json: &[u8], field: &[u8]) -> Option<Token> {
    let mut r = Reader { s: json, p: 0 };
    if !r.seek(field) {
        return None;
    }
    r.value()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn reads_the_supported_values() {
        let j = br#" { "a" : 1.5, "b":"x\ty\u0041", "c":[1,"z",true], "d":{"e":1}, "f":false } "#;
        assert_eq!(extract_field(j, b"a"), Some(Token::Num(1.5)));
        assert_eq!(
            extract_field(j, b"b"),
            Some(Token::Str(b"x\tyu0041".to_vec()))
        );
        assert_eq!(
            extract_field(j, b"c"),
            Some(Token::Tuple(vec![
                Token::Num(1.0),
                Token::Str(b"z".to_vec()),
                Token::Num(1.0)
            ]))
        );
        assert_eq!(extract_field(j, b"d"), None);
        assert_eq!(extract_field(j, b"f"), Some(Token::Num(0.0)));
        assert_eq!(extract_field(j, b"zz"), None);
        assert_eq!(extract_field(b"[1]", b"a"), None);
        assert_eq!(extract_field(br#"{"a":trueish}"#, b"a"), None);
    }

    proptest! {
        /// Against a model: an object of integer fields written out reads back field by field.
        #[test]
        fn integer_fields_read_back(fields in prop::collection::btree_map("[a-z]{1,6}", any::<i32>(), 0..8)) {
            let body: Vec<String> = fields.iter().map(|(k, v)| format!("\"{k}\": {v}")).collect();
            let json = format!("{{{}}}", body.join(", "));
            for (k, v) in &fields {
                prop_assert_eq!(extract_field(json.as_bytes(), k.as_bytes()), Some(Token::Num(*v as f64)));
            }
            prop_assert_eq!(extract_field(json.as_bytes(), b"NOPE"), None);
        }

        #[test]
        fn never_panics(json in prop::collection::vec(any::<u8>(), 0..64), field in "[a-z]{1,3}") {
            extract_field(&json, field.as_bytes());
        }
    }
}
