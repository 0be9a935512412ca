//! Fuzzes the RDB codec: arbitrary bytes as a DUMP payload, as a file body after a valid header
//! and with the checksum disabled (so corrupt structure reaches the value parsers), must give
//! errors, never panics; whatever parses re-encodes to a payload that parses to the same value.
#![no_main]

use embedis_rdb::{dump_payload, parse_dump_payload, Event, RdbReader};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // As a payload whose footer is made valid, so the body is what gets tested.
    let mut payload = data.to_vec();
    payload.extend_from_slice(&10u16.to_le_bytes());
    let crc = embedis_rdb::crc64::crc64(&payload);
    payload.extend_from_slice(&crc.to_le_bytes());
    if let Ok(v) = parse_dump_payload(&payload) {
        let again = dump_payload(&v);
        // NaN is refused on reading, so values compare equal.
        assert_eq!(parse_dump_payload(&again).expect("our payload parses"), v);
    }
    let _ = parse_dump_payload(data);
    // As a file: header, then the bytes (a zero checksum, if it gets that far, skips the check).
    let mut file = b"REDIS0010".to_vec();
    file.extend_from_slice(data);
    if let Ok(mut r) = RdbReader::new(&file[..]) {
        while let Ok(e) = r.next_event() {
            if matches!(e, Event::Eof { .. }) {
                break;
            }
        }
    }
});
