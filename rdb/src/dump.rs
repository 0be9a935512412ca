//! DUMP/RESTORE payloads: a value's type byte and body as in an RDB file, then a footer of the
//! RDB version (2 bytes little-endian) and a CRC64 (8 bytes little-endian) of everything before
//! it. RESTORE accepts versions up to its own (10, or the newer one its caller names) and refuses
//! a wrong checksum.

use crate::crc64::crc64;
use crate::error::RdbError;
use crate::value::{RdbValue, Sanitize};
use crate::RDB_VERSION;

/// The payload Redis's DUMP gives for `value` with `rdbcompression yes`.
pub fn dump_payload(value: &RdbValue) -> Vec<u8> {
    dump_payload_with(value, true)
}

/// [`dump_payload`] with compression on or off (`rdbcompression`).
pub fn dump_payload_with(value: &RdbValue, compress: bool) -> Vec<u8> {
    dump_payload_as(value, compress, RDB_VERSION)
}

/// The payload of a server whose RDB version is `version` (11 for Redis 7.2, 12 for 7.4): its
/// footer, and the value's layout in that version.
pub fn dump_payload_as(value: &RdbValue, compress: bool, version: u16) -> Vec<u8> {
    let mut out = vec![value.type_byte_as(version)];
    value
        .write_body_as(&mut out, compress, version)
        .expect("writing to a Vec cannot fail");
    out.extend_from_slice(&version.to_le_bytes());
    let crc = crc64(&out);
    out.extend_from_slice(&crc.to_le_bytes());
    out
}

/// Checks the footer and reads the value as Redis's RESTORE does: from the whole payload, footer
/// included (a body cut short reads into the footer), leaving whatever follows the value unread.
pub fn parse_dump_payload(payload: &[u8]) -> Result<RdbValue, RdbError> {
    parse_dump_payload_upto(payload, RDB_VERSION)
}

/// [`parse_dump_payload`] for a server that accepts payloads up to RDB version `newest` (the
/// Redis it behaves as: 11 for 7.2, 12 for 7.4).
pub fn parse_dump_payload_upto(payload: &[u8], newest: u16) -> Result<RdbValue, RdbError> {
    parse_dump_payload_checked(payload, newest, true)
}

/// [`parse_dump_payload_upto`], checking the CRC64 only if `verify_crc` (Redis's `DEBUG
/// SET-SKIP-CHECKSUM-VALIDATION 1` turns it off; the version is checked either way). The
/// value's reasons for refusing a body are the loader's ([`RdbError::Corrupt`]'s text, such as
/// "Hash ziplist integrity check failed."), which the server logs as Redis does.
pub fn parse_dump_payload_checked(
    payload: &[u8],
    newest: u16,
    verify_crc: bool,
) -> Result<RdbValue, RdbError> {
    parse_dump_payload_sanitized(payload, newest, verify_crc, Sanitize::Deep)
}

/// [`parse_dump_payload_checked`], the value's listpacks checked as `sanitize` says.
pub fn parse_dump_payload_sanitized(
    payload: &[u8],
    newest: u16,
    verify_crc: bool,
    sanitize: Sanitize,
) -> Result<RdbValue, RdbError> {
    if payload.len() < 10 {
        return Err(RdbError::BadDumpPayload);
    }
    let footer = &payload[payload.len() - 10..];
    let version = u16::from_le_bytes([footer[0], footer[1]]);
    let crc = u64::from_le_bytes(footer[2..].try_into().unwrap());
    if version > newest || (verify_crc && crc64(&payload[..payload.len() - 8]) != crc) {
        return Err(RdbError::BadDumpPayload);
    }
    let (&ty, mut rest) = payload.split_first().expect("10 bytes or more");
    RdbValue::read_body_as(&mut rest, ty, sanitize).map_err(|e| match e {
        RdbError::Corrupt(reason) => RdbError::Corrupt(reason),
        // A body cut short, or a length beyond the payload, as Redis's string loader puts it.
        other => RdbError::Corrupt(format!("Bad data format ({other})")),
    })
}
