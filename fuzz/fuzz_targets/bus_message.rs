//! Redis Cluster bus messages as a peer node sends them: the frame length from the first 8
//! bytes, then the whole message. Neither may panic; a message that decodes must encode back
//! to the same bytes (nothing is lost or invented between the two).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Some(prefix) = data.get(..8) {
        let _ = embedis_bus::frame_len(prefix.try_into().unwrap());
    }
    if let Ok(message) = embedis_bus::decode(data) {
        let again = embedis_bus::encode(&message);
        let back = embedis_bus::decode(&again).expect("what encode writes decodes");
        assert_eq!(back, message);
    }
});
