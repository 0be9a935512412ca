//! Fuzzes the vector set loader (Redis 8.2's `vectorset` module value) from valid sets outward:
//! a set built with VADD from the input's first bytes is dumped, its module items are mutated
//! by the rest of the input (a number changed, a string's bytes flipped or replaced, items
//! removed, inserted or cut off), and the result goes to the loader directly and through
//! RESTORE as a DUMP payload with a valid footer. Random bytes alone almost never get past a
//! module value's header; mutating a real set reaches the node parameters, the links and the
//! graph checks. Whatever loads is then read and changed by every vector set command
//! (`common::exercise_keys`): a set that loads must not panic later either.
#![no_main]

#[path = "common.rs"]
mod common;

use embedis_core::base::compat::CompatVersion;
use embedis_core::base::config::{Access, Config};
use embedis_core::base::formats::vset_rdb;
use embedis_rdb::{dump_payload_as, parse_dump_payload_upto, ModuleItem, ModuleValue, RdbValue};
use libfuzzer_sys::fuzz_target;

/// Builds a set from `data`'s first bytes: how many elements, the quantisation, the
/// dimension, attributes and a REDUCE. Returns the bytes left for the mutations.
fn build<'a>(fixture: &mut common::Fixture, data: &'a [u8]) -> &'a [u8] {
    let [count, shape, rest @ ..] = data else {
        return &[];
    };
    let quant: &[u8] = match shape & 3 {
        0 => b"NOQUANT",
        1 => b"BIN",
        _ => b"Q8",
    };
    let dim = (shape >> 2) % 4 + 1;
    for i in 0..(count % 24) {
        let name = format!("e{i}");
        let mut args: Vec<Vec<u8>> = vec![b"VADD".to_vec(), b"v".to_vec()];
        if shape & 0x40 != 0 {
            args.extend([b"REDUCE".to_vec(), b"1".to_vec()]);
        }
        args.extend([b"VALUES".to_vec(), dim.to_string().into_bytes()]);
        for d in 0..dim {
            args.push(format!("{}", (i as i32 * 7 + d as i32 * 3) % 11 - 5).into_bytes());
        }
        args.extend([name.into_bytes(), quant.to_vec()]);
        if shape & 0x80 != 0 && i % 2 == 0 {
            args.extend([b"SETATTR".to_vec(), format!("{{\"i\":{i}}}").into_bytes()]);
        }
        let refs: Vec<&[u8]> = args.iter().map(Vec::as_slice).collect();
        fixture.run(&refs);
    }
    rest
}

/// Applies the mutations `ops` describes, four bytes each (kind, item index, two of value).
fn mutate(items: &mut Vec<ModuleItem>, ops: &[u8]) {
    for op in ops.chunks_exact(4).take(16) {
        let (kind, value) = (op[0] % 6, u16::from_le_bytes([op[2], op[3]]) as u64);
        if items.is_empty() {
            items.push(ModuleItem::Uint(value));
            continue;
        }
        let at = op[1] as usize % items.len();
        match (kind, &mut items[at]) {
            (0, ModuleItem::Uint(v)) => *v = value,
            (0, ModuleItem::String(s)) => s.truncate(value as usize % (s.len() + 1)),
            (1, ModuleItem::Uint(v)) => *v ^= 1 << (value % 64),
            (1, ModuleItem::String(s)) if !s.is_empty() => {
                let i = value as usize % s.len();
                s[i] ^= op[3] | 1;
            }
            (2, _) => {
                items.remove(at);
            }
            (3, _) => items.insert(at, ModuleItem::Uint(value)),
            (4, _) => items.truncate(at),
            (5, item) => *item = ModuleItem::String(op[2..].to_vec()),
            _ => {}
        }
    }
}

/// The bytes of a bulk string reply (`$<len>\r\n<bytes>\r\n`); None for anything else.
fn bulk_body(reply: &[u8]) -> Option<&[u8]> {
    let rest = reply.strip_prefix(b"$")?;
    let end = rest.windows(2).position(|w| w == b"\r\n")?;
    let len: usize = std::str::from_utf8(&rest[..end]).ok()?.parse().ok()?;
    rest.get(end + 2..end + 2 + len)
}

fuzz_target!(|data: &[u8]| {
    let mut config = Config::default();
    config.enable_debug_command = Access::Yes;
    config.compat_version = CompatVersion::V8_2;
    let mut fixture = common::Fixture::with_config(config);
    let ops = build(&mut fixture, data);
    // The set's items as DUMP gives them (a bulk string reply).
    let reply = fixture.run(&[b"DUMP", b"v"]);
    let Some(body) = bulk_body(&reply) else {
        return;
    };
    let Ok(RdbValue::Module(module)) = parse_dump_payload_upto(body, 12) else {
        panic!("DUMP of a vector set does not parse back");
    };
    let mut module: ModuleValue = *module;
    mutate(&mut module.items, ops);
    // The loader alone, then the same value as a client's RESTORE.
    let _ = vset_rdb::from_module(module.clone());
    let payload = dump_payload_as(&RdbValue::Module(Box::new(module)), false, 12);
    fixture.run(&[b"RESTORE", b"w", b"0", &payload, b"REPLACE"]);
    fixture.exercise_keys();
});
