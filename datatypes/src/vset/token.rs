//! The values FILTER expressions compute with (numbers, strings, null, tuples), their
//! selectors and operators, and C's `strtod`, shared by the expression compiler ([`super::expr`])
//! and the JSON field reader ([`super::json`]), which turns attributes into these values.

#[derive(Clone, Debug, PartialEq)]
pub enum Token {
    Num(f64),
    Str(Vec<u8>),
    Null,
    Tuple(Vec<Token>),
    Selector(Vec<u8>),
    Op(Op),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    Open,
    Close,
    Not,
    Pow,
    Mul,
    Div,
    Mod,
    Add,
    Sub,
    Gt,
    Ge,
    Lt,
    Le,
    Eq,
    Ne,
    In,
    And,
    Or,
}

/// C's `strtod` over the whole of `text`: `Some` only if it consumed every byte.
pub fn strtod_whole(text: &[u8]) -> Option<f64> {
    if text.contains(&0) {
        return None;
    }
    let mut buf = Vec::with_capacity(text.len() + 1);
    buf.extend_from_slice(text);
    buf.push(0);
    // SAFETY: `buf` is NUL-terminated and outlives the call; strtod only reads it.
    unsafe {
        let mut end: *mut libc::c_char = std::ptr::null_mut();
        let v = libc::strtod(buf.as_ptr() as *const libc::c_char, &mut end);
        let used = (end as *const u8).offset_from(buf.as_ptr()) as usize;
        (used == text.len()).then_some(v)
    }
}
