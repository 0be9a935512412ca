//! The LZF codec of compressed list nodes (`embedis_datatypes::lzf`) against redis-server's own
//! LZF: DUMP payloads hold long strings LZF-compressed (`rdbcompression yes`), so redis-server
//! shows us its compressor's output, and RESTORE takes a payload of ours. Each side must read
//! the other's LZF, and ours must write the same bytes as Redis's liblzf: what an RDB file
//! written or read by embedis will need.

use crate::support;

use embedis_datatypes::lzf;
use support::{Conn, RedisServer};

/// One length in RDB's length encoding at `at`: the value and the bytes it took.
fn rdb_len(b: &[u8], at: usize) -> (usize, usize) {
    match b[at] >> 6 {
        0 => ((b[at] & 0x3f) as usize, 1),
        1 => ((((b[at] & 0x3f) as usize) << 8) | b[at + 1] as usize, 2),
        _ if b[at] == 0x80 => (
            u32::from_be_bytes(b[at + 1..at + 5].try_into().unwrap()) as usize,
            5,
        ),
        _ => panic!("unexpected length byte {:#x}", b[at]),
    }
}

/// The LZF bytes and the original length of a string value's DUMP payload.
fn lzf_of_dump(payload: &[u8]) -> (Vec<u8>, usize) {
    assert_eq!(payload[0], 0, "a string value");
    assert_eq!(payload[1], 0xc3, "an LZF-compressed string");
    let (clen, a) = rdb_len(payload, 2);
    let (len, b) = rdb_len(payload, 2 + a);
    let at = 2 + a + b;
    (payload[at..at + clen].to_vec(), len)
}

#[test]
fn each_side_reads_the_others_lzf() {
    let Some(redis) = RedisServer::start("lzf compatibility", &[]) else {
        return;
    };
    let mut conn = Conn::connect(redis.addr()).unwrap();
    let values: Vec<Vec<u8>> = vec![
        b"abc".repeat(100),
        b"element:1 element:2 element:3 element:4 ".repeat(50),
        (0..4000u32)
            .map(|i| (i * 7 % 13) as u8 + b'a')
            .collect::<Vec<u8>>(),
        [&b"hello"[..], &[0u8; 300][..], &b"\r\nworld"[..]]
            .concat()
            .repeat(9),
    ];
    for value in values {
        conn.command(&[&b"SET"[..], b"k", &value]);
        let raw = conn.command(&["DUMP", "k"]);
        // $<n>\r\n<payload>\r\n
        let head = raw.iter().position(|&c| c == b'\n').unwrap() + 1;
        let payload = &raw[head..raw.len() - 2];
        let (theirs, len) = lzf_of_dump(payload);
        assert_eq!(len, value.len());
        assert_eq!(lzf::decompress(&theirs, len).as_deref(), Some(&value[..]));
        let ours = lzf::compress(&value, value.len()).expect("compressible");
        assert_eq!(ours, theirs, "the same bytes as Redis's lzf_compress");
        // And Redis reads ours, in a payload made here (RESTORE checks our CRC too).
        let ours = lzf::compress(&value, value.len()).expect("compressible");
        let mut mine = vec![0u8, 0xc3];
        put_len(&mut mine, ours.len());
        put_len(&mut mine, value.len());
        mine.extend_from_slice(&ours);
        mine.extend_from_slice(&payload[payload.len() - 10..payload.len() - 8]);
        let crc = crc64_jones(&mine);
        mine.extend_from_slice(&crc.to_le_bytes());
        let reply = conn.command(&[&b"RESTORE"[..], b"mine", b"0", &mine, b"REPLACE"]);
        assert_eq!(reply, b"+OK\r\n", "{}", String::from_utf8_lossy(&reply));
        let back = conn.command(&["GET", "mine"]);
        assert_eq!(
            &back[back.len() - 2 - value.len()..back.len() - 2],
            &value[..]
        );
    }
}

/// Appends a length in RDB's length encoding.
fn put_len(out: &mut Vec<u8>, len: usize) {
    if len < 64 {
        out.push(len as u8);
    } else if len < 16384 {
        out.extend_from_slice(&[0x40 | (len >> 8) as u8, len as u8]);
    } else {
        out.push(0x80);
        out.extend_from_slice(&(len as u32).to_be_bytes());
    }
}

/// The CRC-64 that closes a DUMP payload (Jones polynomial, reflected, as Redis's crc64).
fn crc64_jones(data: &[u8]) -> u64 {
    const POLY_REFLECTED: u64 = 0x95ac_9329_ac4b_c9b5;
    let mut crc = 0u64;
    for &byte in data {
        crc ^= byte as u64;
        for _ in 0..8 {
            crc = if crc & 1 == 1 {
                (crc >> 1) ^ POLY_REFLECTED
            } else {
                crc >> 1
            };
        }
    }
    crc
}

#[test]
fn crc64_matches_redis_check_value() {
    // Redis's crc64 self-test: "123456789" → 0xe9c6d914c4b8d9ca.
    assert_eq!(crc64_jones(b"123456789"), 0xe9c6_d914_c4b8_d9ca);
}
