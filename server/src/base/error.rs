//! [`Error`]: a command's failure, rendered with Redis's exact text.
//!
//! A command error is an ordinary reply (`-CODE message`), never a dropped connection. The
//! common errors are variants so that handlers cannot misspell them and so that INFO errorstats
//! can count them by code; anything else is a [`Error::Msg`] carrying the full line, code first,
//! as Redis writes it. Texts are Redis 7.0's, checked against redis-server by the differential
//! tests.

use std::borrow::Cow;
use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    WrongType,
    Syntax,
    NotInteger,
    NotFloat,
    NoSuchKey,
    DbIndexOutOfRange,
    Overflow,
    /// Wrong number of arguments for the command with this full name (`get`, `config|get`).
    WrongArity(Cow<'static, str>),
    NoAuth,
    WrongPass,
    /// A complete error line without the leading `-`, e.g. `ERR invalid expire time in 'set' command`.
    Msg(Cow<'static, [u8]>),
}

pub type CmdResult<T = ()> = Result<T, Error>;

impl Error {
    /// An error from a static line such as `"ERR invalid cursor"`.
    pub const fn msg(line: &'static str) -> Self {
        Error::Msg(Cow::Borrowed(line.as_bytes()))
    }

    /// An error from a formatted line, cleaned as [`Error::bytes`] cleans it.
    pub fn owned(line: impl Into<String>) -> Self {
        Error::bytes(line.into().into_bytes())
    }

    /// An error from raw bytes (for messages that quote client data). Redis formats such errors
    /// with `addReplyErrorFormat`, which cuts CR and LF from both ends of the text: an argument
    /// quoted last (`ERR Unsupported option x\r\n`) ends the line without trailing spaces.
    /// Those inside become spaces when the line is written.
    pub fn bytes(mut line: Vec<u8>) -> Self {
        let trimmed = embedis_protocol::writer::trim_line_breaks(&line);
        if trimmed.len() != line.len() {
            line = trimmed.to_vec();
        }
        Error::Msg(Cow::Owned(line))
    }

    /// An error whose line breaks all become spaces, those at its ends too: Redis's
    /// `addReplyErrorSdsSafe`, which FUNCTION LIST's `Unknown argument` goes through.
    pub fn untrimmed(line: Vec<u8>) -> Self {
        let spaced = line
            .into_iter()
            .map(|b| if b == b'\r' || b == b'\n' { b' ' } else { b })
            .collect();
        Error::Msg(Cow::Owned(spaced))
    }

    /// The error line without the leading `-` and without CRLF.
    pub fn line(&self) -> Cow<'_, [u8]> {
        let s: &'static str = match self {
            Error::WrongType => "WRONGTYPE Operation against a key holding the wrong kind of value",
            Error::Syntax => "ERR syntax error",
            Error::NotInteger => "ERR value is not an integer or out of range",
            Error::NotFloat => "ERR value is not a valid float",
            Error::NoSuchKey => "ERR no such key",
            Error::DbIndexOutOfRange => "ERR DB index is out of range",
            Error::Overflow => "ERR increment or decrement would overflow",
            Error::NoAuth => "NOAUTH Authentication required.",
            Error::WrongPass => "WRONGPASS invalid username-password pair or user is disabled.",
            Error::WrongArity(name) => {
                return Cow::Owned(
                    format!("ERR wrong number of arguments for '{name}' command").into_bytes(),
                )
            }
            Error::Msg(line) => return Cow::Borrowed(line),
        };
        Cow::Borrowed(s.as_bytes())
    }

    /// The error code: the first word of the line (`ERR`, `WRONGTYPE`, `NOAUTH`…), counted by
    /// INFO errorstats.
    pub fn code(&self) -> String {
        let line = self.line();
        let end = line.iter().position(|&b| b == b' ').unwrap_or(line.len());
        String::from_utf8_lossy(&line[..end]).into_owned()
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&String::from_utf8_lossy(&self.line()))
    }
}

impl std::error::Error for Error {}

/// An OS error as C's `strerror` words it (without Rust's " (os error N)" suffix), for log
/// lines and replies that quote Redis's.
pub fn os_error_text(e: &std::io::Error) -> String {
    let text = e.to_string();
    match text.find(" (os error") {
        Some(cut) => text[..cut].to_string(),
        None => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn texts_and_codes() {
        assert_eq!(
            Error::WrongArity("config|get".into()).to_string(),
            "ERR wrong number of arguments for 'config|get' command"
        );
        assert_eq!(Error::WrongType.code(), "WRONGTYPE");
        assert_eq!(Error::msg("ERR x y").code(), "ERR");
        assert_eq!(Error::NoAuth.code(), "NOAUTH");
    }

    #[test]
    fn quoted_line_breaks_are_trimmed_unless_redis_keeps_them() {
        let line = |e: Error| e.line().into_owned();
        assert_eq!(
            line(Error::bytes(b"ERR Unsupported option x\r\n".to_vec())),
            b"ERR Unsupported option x"
        );
        assert_eq!(line(Error::owned("ERR a\r\nb\n")), b"ERR a\r\nb");
        assert_eq!(
            line(Error::untrimmed(b"ERR Unknown argument x\r\n".to_vec())),
            b"ERR Unknown argument x  "
        );
    }
}
