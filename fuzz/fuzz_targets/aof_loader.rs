//! Fuzzes the AOF loader (`aof::load_at_start`, what `embedis-server` runs at start-up with
//! `appendonly yes`): a multi-part AOF — the manifest, an RDB or command base, incremental
//! command files — written to a scratch directory and loaded into a live keyspace, commands
//! and all, then every command of `common::exercise_keys` on the result.
//!
//! The input is pieces separated by [`SEPARATOR`]. If the first byte is even, the first piece
//! is the manifest's text and the others are the files it names, in its order (base, then the
//! incremental files); names that are not plain file names are not written. If it is odd, the
//! manifest is a valid one generated for the pieces — the first a base (an RDB if it starts with
//! `REDIS`), the others incremental files — so that the fuzzer spends its time in the files.
#![no_main]

#[path = "common.rs"]
mod common;

use embedis_core::model::aof_state::Manifest;
use embedis_core::base::config::{Access, Config};
use libfuzzer_sys::fuzz_target;
use std::path::PathBuf;

const SEPARATOR: &[u8] = b"\xffFILE\xff\n";

fn split(data: &[u8]) -> Vec<&[u8]> {
    let mut pieces = Vec::new();
    let mut rest = data;
    while let Some(at) = rest.windows(SEPARATOR.len()).position(|w| w == SEPARATOR) {
        pieces.push(&rest[..at]);
        rest = &rest[at + SEPARATOR.len()..];
    }
    pieces.push(rest);
    pieces
}

/// A name this target may create in its scratch directory (the loader gets the others and
/// fails to open them, which is what it would do with a manifest naming a missing file).
fn plain_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 200
        && name != "."
        && name != ".."
        && !name.contains(['/', '\0'])
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, data)) = data.split_first() else {
        return;
    };
    let root: PathBuf = std::env::temp_dir().join(format!("embedis-fuzz-aof-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    let aof_dir = root.join("appendonlydir");
    std::fs::create_dir_all(&aof_dir).unwrap();

    let mut pieces = split(data);
    let (manifest, files): (String, Vec<(String, &[u8])>) = if mode % 2 == 0 {
        let text = String::from_utf8_lossy(pieces.remove(0)).into_owned();
        let names: Vec<String> = match Manifest::parse(&text) {
            Ok(m) => m.base.iter().chain(&m.incr).map(|f| f.name.clone()).collect(),
            Err(_) => Vec::new(),
        };
        let files = names.into_iter().zip(pieces).filter(|(n, _)| plain_name(n)).collect();
        (text, files)
    } else {
        let mut text = String::new();
        let mut files = Vec::new();
        for (i, piece) in pieces.into_iter().take(4).enumerate() {
            let name = if i == 0 {
                let ext = if piece.starts_with(b"REDIS") { "rdb" } else { "aof" };
                text.push_str(&format!("file appendonly.aof.1.base.{ext} seq 1 type b\n"));
                format!("appendonly.aof.1.base.{ext}")
            } else {
                text.push_str(&format!("file appendonly.aof.{i}.incr.aof seq {i} type i\n"));
                format!("appendonly.aof.{i}.incr.aof")
            };
            files.push((name, piece));
        }
        (text, files)
    };
    std::fs::write(aof_dir.join("appendonly.aof.manifest"), manifest).unwrap();
    for (name, body) in files {
        std::fs::write(aof_dir.join(name), body).unwrap();
    }

    let mut config = Config::default();
    config.enable_debug_command = Access::Yes;
    config.dir = root.to_string_lossy().into_owned();
    config.aof_load_truncated = mode & 2 == 0;
    let mut fixture = common::Fixture::with_config(config);
    let loaded = embedis_core::services::aof::load_at_start(&mut fixture.engine.parts());
    if loaded.is_ok() {
        fixture.exercise_keys();
    }
    let _ = std::fs::remove_dir_all(&root);
});
