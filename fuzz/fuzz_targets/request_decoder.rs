//! Fuzzes the server's request decoder: any bytes, fed in two chunks at a fuzzer-chosen point,
//! must decode without panicking, and the commands decoded must not depend on where the stream
//! was cut, nor on how many requests are decoded ahead (`RequestDecoder::decode_ahead`, which the
//! server runs before a pipeline's requests to prefetch their keys).
#![no_main]

use bytes::BytesMut;
use embedis_protocol::RequestDecoder;
use libfuzzer_sys::fuzz_target;

fn decode_in_chunks(
    data: &[u8],
    cut: usize,
    authenticated: bool,
    ahead: usize,
) -> (Vec<Vec<bytes::Bytes>>, bool) {
    let mut decoder = RequestDecoder::default();
    let mut buf = BytesMut::new();
    let mut commands = Vec::new();
    for chunk in [&data[..cut], &data[cut..]] {
        buf.extend_from_slice(chunk);
        loop {
            if ahead > 0 && !decoder.has_ahead() {
                decoder.decode_ahead(&mut buf, authenticated, ahead);
            }
            match decoder.decode(&mut buf, authenticated) {
                Ok(Some(args)) => {
                    assert!(!args.is_empty(), "empty commands are skipped, never returned");
                    commands.push(args);
                }
                Ok(None) => break,
                Err(_) => return (commands, true),
            }
        }
    }
    (commands, false)
}

fuzz_target!(|input: &[u8]| {
    let Some((&control, data)) = input.split_first() else { return };
    let cut = if data.is_empty() { 0 } else { control as usize % (data.len() + 1) };
    let authenticated = control & 0x80 == 0;
    let whole = decode_in_chunks(data, data.len(), authenticated, 0);
    let split = decode_in_chunks(data, cut, authenticated, 0);
    assert_eq!(whole, split, "decoding depends on how the stream was cut");
    let ahead = decode_in_chunks(data, cut, authenticated, 1 + (control as usize & 0x0f));
    assert_eq!(whole, ahead, "decoding depends on decoding ahead");
});
