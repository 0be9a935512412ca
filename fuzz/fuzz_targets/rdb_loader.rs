//! Fuzzes the server's RDB loader (what start-up, DEBUG RELOAD and a replica's full sync run):
//! the file's bytes through `persistence::load_from` into a live keyspace — header, AUX fields,
//! function libraries, SELECTDB/RESIZEDB, expiries, values converted to the server's own — and
//! then every command of `common::exercise_keys` on what was loaded. The input is tried as it
//! is and behind a valid `REDIS0010` header with a zero checksum at the end (which the loader
//! skips, as Redis does), so that the fuzzer does not have to find the magic first.
#![no_main]

#[path = "common.rs"]
mod common;

use embedis_core::services::rdb_saving;
use libfuzzer_sys::fuzz_target;

fn load(fixture: &mut common::Fixture, file: &[u8]) {
    let engine = &mut fixture.engine;
    let registry = engine.registry;
    let _ = rdb_saving::load_from(&mut engine.ks, &mut engine.server, registry, file, false);
}

fuzz_target!(|data: &[u8]| {
    let mut fixture = common::Fixture::new();
    load(&mut fixture, data);
    let mut file = b"REDIS0010".to_vec();
    file.extend_from_slice(data);
    let mut merged = common::Fixture::new();
    load(&mut merged, &file);
    fixture.exercise_keys();
    merged.exercise_keys();
});
