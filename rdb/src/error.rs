//! [`RdbError`]: everything that can go wrong reading or writing the format. Kept in one type
//! so that the server can map each case to the reply or log line Redis gives for it.

use std::fmt;

#[derive(Debug)]
pub enum RdbError {
    /// The underlying reader or writer failed (other than by ending early).
    Io(std::io::Error),
    /// The input ended before the structure it was reading.
    UnexpectedEof,
    /// Not an RDB file (`REDIS` magic missing) or a version this reader does not know.
    BadHeader(String),
    /// Bytes that do not follow the format.
    Corrupt(String),
    /// Valid RDB that this crate does not load (modules, pre-release function opcodes).
    Unsupported(String),
    /// The trailer's CRC64 differs from the one computed over the file.
    BadChecksum { expected: u64, got: u64 },
    /// A DUMP payload whose footer version or checksum is wrong.
    BadDumpPayload,
}

impl fmt::Display for RdbError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RdbError::Io(e) => write!(f, "I/O error on RDB: {e}"),
            // Redis's wording when a file is truncated.
            RdbError::UnexpectedEof => write!(f, "Short read or OOM loading DB"),
            RdbError::BadHeader(m) => write!(f, "{m}"),
            RdbError::Corrupt(m) => write!(f, "Corrupt RDB: {m}"),
            RdbError::Unsupported(m) => write!(f, "Unsupported RDB content: {m}"),
            // Redis logs this line (expected = computed, got = the file's trailer).
            RdbError::BadChecksum { expected, got } => write!(
                f,
                "Wrong RDB checksum expected: ({expected:x}) but got ({got:x}). Aborting now."
            ),
            RdbError::BadDumpPayload => write!(f, "ERR DUMP payload version or checksum are wrong"),
        }
    }
}

impl std::error::Error for RdbError {}

impl From<std::io::Error> for RdbError {
    fn from(e: std::io::Error) -> Self {
        if e.kind() == std::io::ErrorKind::UnexpectedEof {
            RdbError::UnexpectedEof
        } else {
            RdbError::Io(e)
        }
    }
}

pub(crate) fn corrupt<T>(msg: impl Into<String>) -> Result<T, RdbError> {
    Err(RdbError::Corrupt(msg.into()))
}
