//! Fuzzes the RESP value decoder: no panic on any input, and a decoded value re-encodes (as
//! RESP3) to something that decodes to the same value.
#![no_main]

use bytes::{Bytes, BytesMut};
use embedis_protocol::{decode_value, Version, Writer};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let bytes = Bytes::copy_from_slice(data);
    if let Ok(Some((value, used))) = decode_value(&bytes) {
        assert!(used <= data.len());
        let mut out = BytesMut::new();
        value.write_to(&mut Writer::new(&mut out, Version::Resp3));
        let again = decode_value(&out.freeze()).expect("re-encoded value is valid").expect("complete");
        // NaN never equals itself; compare the encodings instead of the values.
        let mut a = BytesMut::new();
        again.0.write_to(&mut Writer::new(&mut a, Version::Resp3));
        let mut b = BytesMut::new();
        value.write_to(&mut Writer::new(&mut b, Version::Resp3));
        assert_eq!(a, b);
    }
});
