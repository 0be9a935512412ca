//! Whole RDB files: [`RdbWriter`] lays out a snapshot as Redis 7.0's `rdbSaveRio` does (header,
//! AUX fields, function libraries, then per database SELECTDB, RESIZEDB and its keys, then EOF
//! and the CRC64 trailer); [`RdbReader`] reads any file Redis 7.0 loads as a stream of
//! [`Event`]s, so a loader never holds more than one key's value at a time.

use crate::crc64::{CrcReader, CrcWriter};
use crate::error::{corrupt, RdbError};
use crate::opcodes;
use crate::primitives::*;
use crate::value::RdbValue;
use crate::RDB_VERSION;
use std::io::{Read, Write};

#[derive(Debug, Clone, Copy)]
pub struct WriterOptions {
    /// `rdbcompression`: LZF for strings over 20 bytes when it saves space.
    pub compression: bool,
    /// `rdbchecksum`: when off the trailer is eight zero bytes.
    pub checksum: bool,
    /// The RDB version written (the header's, and the values' layouts): [`RDB_VERSION`] unless
    /// the caller behaves as a newer Redis.
    pub version: u16,
}

impl Default for WriterOptions {
    fn default() -> Self {
        WriterOptions {
            compression: true,
            checksum: true,
            version: RDB_VERSION,
        }
    }
}

/// The AUX fields Redis 7.0 writes at the top of every file.
#[derive(Debug, Clone)]
pub struct AuxInfo {
    pub redis_ver: String,
    pub ctime: i64,
    pub used_mem: u64,
    pub aof_base: bool,
    /// `repl-stream-db`, `repl-id`, `repl-offset`: present in files made for replication.
    pub repl: Option<(i64, String, i64)>,
}

/// Per-key metadata preceding a value.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EntryMeta {
    /// Absolute expiry, Unix milliseconds.
    pub expire_ms: Option<i64>,
    /// LRU idle seconds (written when the eviction policy is LRU).
    pub idle: Option<u64>,
    /// LFU counter (written when the eviction policy is LFU).
    pub freq: Option<u8>,
}

pub struct RdbWriter<W: Write> {
    out: CrcWriter<W>,
    opts: WriterOptions,
}

impl<W: Write> RdbWriter<W> {
    /// Starts a file: writes the `REDIS0010` header (or the version the options name).
    pub fn new(inner: W, opts: WriterOptions) -> Result<Self, RdbError> {
        let mut out = CrcWriter::new(inner);
        write!(out, "REDIS{:04}", opts.version)?;
        Ok(RdbWriter { out, opts })
    }

    /// One AUX field; values are strings as far as the format is concerned.
    pub fn aux(&mut self, key: &[u8], value: &[u8]) -> Result<(), RdbError> {
        self.out.write_all(&[opcodes::AUX])?;
        write_string(&mut self.out, key, self.opts.compression)?;
        write_string(&mut self.out, value, self.opts.compression)
    }

    /// The AUX fields in the order Redis 7.0 writes them.
    pub fn standard_aux(&mut self, info: &AuxInfo) -> Result<(), RdbError> {
        self.aux(b"redis-ver", info.redis_ver.as_bytes())?;
        self.aux(b"redis-bits", b"64")?;
        self.aux(b"ctime", info.ctime.to_string().as_bytes())?;
        self.aux(b"used-mem", info.used_mem.to_string().as_bytes())?;
        if let Some((db, id, offset)) = &info.repl {
            self.aux(b"repl-stream-db", db.to_string().as_bytes())?;
            self.aux(b"repl-id", id.as_bytes())?;
            self.aux(b"repl-offset", offset.to_string().as_bytes())?;
        }
        self.aux(b"aof-base", if info.aof_base { b"1" } else { b"0" })
    }

    /// A function library (`RDB_OPCODE_FUNCTION2` and its code), written before the databases.
    pub fn function(&mut self, code: &[u8]) -> Result<(), RdbError> {
        self.out.write_all(&[opcodes::FUNCTION2])?;
        write_string(&mut self.out, code, self.opts.compression)
    }

    /// SELECTDB and RESIZEDB before a non-empty database's keys.
    pub fn select_db(&mut self, db: u64, keys: u64, expires: u64) -> Result<(), RdbError> {
        self.out.write_all(&[opcodes::SELECTDB])?;
        write_len(&mut self.out, db)?;
        self.out.write_all(&[opcodes::RESIZEDB])?;
        write_len(&mut self.out, keys)?;
        write_len(&mut self.out, expires)
    }

    pub fn entry(&mut self, key: &[u8], value: &RdbValue, meta: EntryMeta) -> Result<(), RdbError> {
        if let Some(ms) = meta.expire_ms {
            self.out.write_all(&[opcodes::EXPIRETIME_MS])?;
            write_millis(&mut self.out, ms)?;
        }
        if let Some(idle) = meta.idle {
            self.out.write_all(&[opcodes::IDLE])?;
            write_len(&mut self.out, idle)?;
        }
        if let Some(freq) = meta.freq {
            self.out.write_all(&[opcodes::FREQ, freq])?;
        }
        self.out
            .write_all(&[value.type_byte_as(self.opts.version)])?;
        write_string(&mut self.out, key, self.opts.compression)?;
        value.write_body_as(&mut self.out, self.opts.compression, self.opts.version)
    }

    /// Writes EOF and the checksum trailer; returns the inner writer (not flushed further).
    pub fn finish(mut self) -> Result<W, RdbError> {
        self.out.write_all(&[opcodes::EOF])?;
        let crc = if self.opts.checksum {
            self.out.crc()
        } else {
            0
        };
        let mut inner = self.out.inner;
        inner.write_all(&crc.to_le_bytes())?;
        inner.flush()?;
        Ok(inner)
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    Aux {
        key: Vec<u8>,
        value: Vec<u8>,
    },
    SelectDb(u64),
    ResizeDb {
        keys: u64,
        expires: u64,
    },
    Entry {
        key: Vec<u8>,
        value: RdbValue,
        meta: EntryMeta,
    },
    /// A function library's code (`FUNCTION LOAD` text).
    Function(Vec<u8>),
    /// The end: `checksum` is the trailer, already verified (0 = saved without a checksum).
    Eof {
        checksum: u64,
    },
}

pub struct RdbReader<R: Read> {
    input: CrcReader<R>,
    version: u16,
    done: bool,
    /// The key and type byte whose value failed to read, for the error report Redis's loader
    /// gives ("Reading key '…'"); kept only on failure, so loading pays nothing for it.
    failed: Option<(Vec<u8>, u8)>,
}

impl<R: Read> RdbReader<R> {
    /// Reads and checks the header: `REDIS` and a version from 1 to 10.
    pub fn new(inner: R) -> Result<Self, RdbError> {
        Self::new_upto(inner, RDB_VERSION)
    }

    /// [`RdbReader::new`] for a server that reads versions up to `newest` (at most
    /// [`crate::RDB_VERSION_NEWEST`]).
    pub fn new_upto(inner: R, newest: u16) -> Result<Self, RdbError> {
        let mut input = CrcReader::new(inner);
        let head: [u8; 9] = read_array(&mut input).map_err(|e| match e {
            RdbError::UnexpectedEof => {
                RdbError::BadHeader("Wrong signature trying to load DB from file".into())
            }
            e => e,
        })?;
        if &head[..5] != b"REDIS" {
            return Err(RdbError::BadHeader(
                "Wrong signature trying to load DB from file".into(),
            ));
        }
        let version = std::str::from_utf8(&head[5..])
            .ok()
            .filter(|v| v.bytes().all(|b| b.is_ascii_digit()))
            .and_then(|v| v.parse::<u16>().ok())
            .filter(|v| (1..=newest.min(crate::RDB_VERSION_NEWEST)).contains(v))
            .ok_or_else(|| {
                RdbError::BadHeader(format!(
                    "Can't handle RDB format version {}",
                    String::from_utf8_lossy(&head[5..])
                ))
            })?;
        Ok(RdbReader {
            input,
            version,
            done: false,
            failed: None,
        })
    }

    pub fn version(&self) -> u16 {
        self.version
    }

    /// The key and type byte of the value the last [`RdbReader::next_event`] failed to read, if
    /// it failed inside a value.
    pub fn failed_entry(&self) -> Option<(&[u8], u8)> {
        self.failed.as_ref().map(|(k, t)| (k.as_slice(), *t))
    }

    /// The next event; after [`Event::Eof`] every call is an error.
    pub fn next_event(&mut self) -> Result<Event, RdbError> {
        if self.done {
            return corrupt("read past the end of the RDB file");
        }
        let r = &mut self.input;
        let mut meta = EntryMeta::default();
        loop {
            let ty = read_u8(r)?;
            match ty {
                opcodes::EXPIRETIME_MS => meta.expire_ms = Some(read_millis(r)?),
                opcodes::EXPIRETIME => {
                    let secs = i32::from_le_bytes(read_array(r)?);
                    meta.expire_ms = Some(i64::from(secs) * 1000);
                }
                opcodes::IDLE => meta.idle = Some(read_len(r)?),
                opcodes::FREQ => meta.freq = Some(read_u8(r)?),
                opcodes::AUX => {
                    let key = read_string(r)?;
                    let value = read_string(r)?;
                    return Ok(Event::Aux { key, value });
                }
                opcodes::SELECTDB => return Ok(Event::SelectDb(read_len(r)?)),
                opcodes::RESIZEDB => {
                    let keys = read_len(r)?;
                    let expires = read_len(r)?;
                    return Ok(Event::ResizeDb { keys, expires });
                }
                opcodes::FUNCTION2 => return Ok(Event::Function(read_string(r)?)),
                opcodes::FUNCTION => {
                    return Err(RdbError::Unsupported(
                        "pre-release function format (RDB_OPCODE_FUNCTION)".into(),
                    ))
                }
                opcodes::MODULE_AUX => {
                    return Err(RdbError::Unsupported("module auxiliary data".into()))
                }
                opcodes::EOF => {
                    self.done = true;
                    let expected = r.crc();
                    // Checksums start with version 5.
                    if self.version < 5 {
                        return Ok(Event::Eof { checksum: 0 });
                    }
                    let got = u64::from_le_bytes(read_array(&mut r.inner)?);
                    if got != 0 && got != expected {
                        return Err(RdbError::BadChecksum { expected, got });
                    }
                    return Ok(Event::Eof { checksum: got });
                }
                ty => {
                    let key = read_string(r)?;
                    return match RdbValue::read_body(r, ty) {
                        Ok(value) => Ok(Event::Entry { key, value, meta }),
                        Err(e) => {
                            self.failed = Some((key, ty));
                            Err(e)
                        }
                    };
                }
            }
        }
    }

    /// The underlying reader, positioned after whatever was read (after the trailer at EOF).
    pub fn into_inner(self) -> R {
        self.input.inner
    }
}
