//! Redis's glob-style pattern matching (`stringmatchlen` in util.c), used by KEYS, SCAN MATCH,
//! PSUBSCRIBE, CONFIG GET and CLIENT KILL patterns.
//!
//! `*` any run of bytes, `?` any one byte, `[abc]`, `[^abc]`, `[a-z]` (reversed ranges allowed),
//! `\x` a literal `x`. We reproduce Redis's corner cases rather than a textbook glob, because users
//! see them: an unclosed `[` matches against the rest of the pattern as a set, bytes ≥ 0x80 compare
//! as signed `char` inside ranges, a trailing `\` is literal, and patterns nest no deeper than 1000
//! stars. Like Redis, once the rest of a pattern has failed to match after a `*` from every later
//! position, earlier stars stop retrying (this keeps `a*a*a*a*…b` linear rather than exponential).

/// True if `string` matches `pattern`; `nocase` folds ASCII case.
pub fn matches(pattern: &[u8], string: &[u8], nocase: bool) -> bool {
    let mut skip_longer = false;
    match_from(pattern, 0, string, 0, nocase, &mut skip_longer, 0)
}

fn fold(c: u8, nocase: bool) -> u8 {
    if nocase {
        c.to_ascii_lowercase()
    } else {
        c
    }
}

/// C's `char` on x86 is signed: range bounds compare as i8.
fn signed(c: u8) -> i32 {
    c as i8 as i32
}

fn match_from(
    pattern: &[u8],
    mut p: usize,
    string: &[u8],
    mut s: usize,
    nocase: bool,
    skip_longer: &mut bool,
    nesting: usize,
) -> bool {
    if nesting > 1000 {
        return false;
    }
    // Out-of-range reads see the C string terminator.
    let pat = |i: usize| pattern.get(i).copied().unwrap_or(0);
    while p < pattern.len() && s < string.len() {
        match pattern[p] {
            b'*' => {
                while p + 1 < pattern.len() && pattern[p + 1] == b'*' {
                    p += 1;
                }
                if p + 1 == pattern.len() {
                    return true;
                }
                while s < string.len() {
                    if match_from(pattern, p + 1, string, s, nocase, skip_longer, nesting + 1) {
                        return true;
                    }
                    if *skip_longer {
                        return false;
                    }
                    s += 1;
                }
                *skip_longer = true;
                return false;
            }
            b'?' => s += 1,
            b'[' => {
                p += 1;
                let negate = pat(p) == b'^';
                if negate {
                    p += 1;
                }
                let c = string[s];
                let mut matched = false;
                loop {
                    if pat(p) == b'\\' && pattern.len() - p >= 2 {
                        p += 1;
                        if pattern[p] == c {
                            matched = true;
                        }
                    } else if pat(p) == b']' {
                        break;
                    } else if p >= pattern.len() {
                        // Unclosed set: step back so the shared advance below ends the pattern.
                        p -= 1;
                        break;
                    } else if pattern.len() - p >= 3 && pattern[p + 1] == b'-' {
                        let (mut start, mut end) = (signed(pattern[p]), signed(pattern[p + 2]));
                        if start > end {
                            std::mem::swap(&mut start, &mut end);
                        }
                        let mut ch = signed(c);
                        if nocase {
                            start = signed(fold(start as u8, true));
                            end = signed(fold(end as u8, true));
                            ch = signed(fold(c, true));
                        }
                        p += 2;
                        if ch >= start && ch <= end {
                            matched = true;
                        }
                    } else if fold(pattern[p], nocase) == fold(c, nocase) {
                        matched = true;
                    }
                    p += 1;
                }
                if negate {
                    matched = !matched;
                }
                if !matched {
                    return false;
                }
                s += 1;
            }
            other => {
                let mut literal = other;
                if other == b'\\' && pattern.len() - p >= 2 {
                    p += 1;
                    literal = pattern[p];
                }
                if fold(literal, nocase) != fold(string[s], nocase) {
                    return false;
                }
                s += 1;
            }
        }
        p += 1;
        if s == string.len() {
            while pat(p) == b'*' {
                p += 1;
            }
            break;
        }
    }
    p >= pattern.len() && s == string.len()
}

#[cfg(test)]
mod tests {
    use super::matches;

    fn m(p: &str, s: &str) -> bool {
        matches(p.as_bytes(), s.as_bytes(), false)
    }

    #[test]
    fn stars_and_questions() {
        // As in Redis, a pattern never matches the empty string unless it is empty itself
        // (KEYS and SCAN special-case a lone "*" before matching).
        assert!(!m("*", ""));
        assert!(m("*", "anything"));
        assert!(m("h?llo", "hello"));
        assert!(!m("h?llo", "hllo"));
        assert!(m("h*llo", "hllo"));
        assert!(m("h*llo", "heeeello"));
        assert!(m("a*b*c", "aXbYc"));
        assert!(!m("a*b*c", "aXbY"));
        assert!(m("**a", "ba"));
        assert!(!m("", "a"));
        assert!(m("", ""));
    }

    #[test]
    fn sets_and_ranges() {
        assert!(m("h[ae]llo", "hello"));
        assert!(!m("h[ae]llo", "hillo"));
        assert!(m("h[^e]llo", "hallo"));
        assert!(!m("h[^e]llo", "hello"));
        assert!(m("h[a-b]llo", "hbllo"));
        assert!(m("h[b-a]llo", "hallo"), "reversed range");
        assert!(m("[\\]]", "]"));
        assert!(m("x[abc", "xa"), "unclosed set still matches its members");
    }

    #[test]
    fn escapes() {
        assert!(m("h\\*llo", "h*llo"));
        assert!(!m("h\\*llo", "hello"));
        assert!(m("a\\", "a\\"), "trailing backslash is literal");
    }

    #[test]
    fn nocase() {
        assert!(matches(b"HeLLo", b"hello", true));
        assert!(matches(b"[A-C]x", b"bX", true));
        assert!(!matches(b"HeLLo", b"hello", false));
    }

    #[test]
    fn pathological_pattern_is_fast() {
        let pattern = "a*".repeat(30) + "b";
        let string = "a".repeat(60);
        assert!(!m(&pattern, &string));
    }
}
