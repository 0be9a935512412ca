//! Fuzzes RESTORE as a client reaches it: the server's whole path, from the footer's version
//! and CRC64 checks through the payload decoder and the conversion into the server's own
//! values, then every command of `common::exercise_keys` on whatever was restored (a value
//! that decodes but breaks its type's invariants must not panic later either). Each input
//! goes in twice: as sent (so the footer checks themselves are fuzzed) and with a valid
//! footer appended (so the body reaches the decoder instead of failing its checksum).
//! FUNCTION RESTORE reads the same payload format and gets the same two inputs.
#![no_main]

#[path = "common.rs"]
mod common;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut fixture = common::Fixture::new();
    let mut footed = data.to_vec();
    footed.extend_from_slice(&10u16.to_le_bytes());
    let crc = embedis_rdb::crc64::crc64(&footed);
    footed.extend_from_slice(&crc.to_le_bytes());
    for payload in [data, &footed[..]] {
        fixture.run(&[b"RESTORE", b"key", b"0", payload, b"REPLACE"]);
        fixture.run(&[b"FUNCTION", b"RESTORE", payload, b"REPLACE"]);
    }
    fixture.exercise_keys();
    fixture.run(&[b"FUNCTION", b"LIST", b"WITHCODE"]);
    fixture.run(&[b"FUNCTION", b"DUMP"]);
});
