//! The vector set commands through the engine: versions, replies that no fixture can compare
//! (VINFO's random fields, the graph of one server), and what DEBUG RELOAD keeps.

use super::COMMANDS;
use crate::base::compat::CompatVersion;
use crate::io::test_harness::{error, int, Harness};

#[test]
fn documented_syntax_parses() {
    use crate::kernel::table::docs::parse;
    for spec in COMMANDS {
        let args = parse(spec.syntax, spec.keys.len());
        assert!(args.is_ok(), "{}: {:?}", spec.name, args);
    }
}

#[test]
fn unknown_before_8_2_and_vismember_only_from_8_2() {
    let mut old = Harness::as_version(CompatVersion::V7_4);
    assert!(error(&old.run("VCARD k")).starts_with("ERR unknown command 'VCARD'"));
    let mut h = Harness::new();
    assert_eq!(int(&h.run("VCARD k")), 0);
    assert_eq!(int(&h.run("VISMEMBER k a")), 0);
}

#[test]
fn vinfo_counts_what_the_set_holds() {
    let mut h = Harness::new();
    h.run("VADD k REDUCE 2 VALUES 4 1 2 3 4 a SETATTR {\"x\":1}");
    h.run("VADD k REDUCE 2 VALUES 4 4 3 2 1 b");
    let field = |h: &mut Harness, name: &str| {
        let text = h.run_text("VINFO k");
        let lines: Vec<&str> = text.split("\r\n").collect();
        let i = lines.iter().position(|l| *l == format!("+{name}")).unwrap();
        lines[i + 1][1..].to_string()
    };
    assert_eq!(field(&mut h, "quant-type"), "int8");
    assert_eq!(field(&mut h, "vector-dim"), "2");
    assert_eq!(field(&mut h, "projection-input-dim"), "4");
    assert_eq!(field(&mut h, "size"), "2");
    assert_eq!(field(&mut h, "attributes-count"), "1");
    assert_eq!(field(&mut h, "hnsw-max-node-uid"), "2");
    // An update is a new node: the node ids go on.
    h.run("VADD k REDUCE 2 VALUES 4 4 3 2 2 b");
    assert_eq!(field(&mut h, "hnsw-max-node-uid"), "3");
}

#[test]
fn debug_reload_keeps_vectors_graph_and_attributes() {
    let mut h = Harness::new();
    h.engine.server.config.enable_debug_command = crate::base::config::Access::Yes;
    for i in 0..60 {
        let (x, y, z) = (i % 7, i % 5 + 1, i % 3);
        h.run(&format!(
            "VADD k VALUES 3 {x} {y} {z} e{i} SETATTR {{\"i\":{i}}}"
        ));
    }
    h.run("VADD n VALUES 3 1 2 3 a NOQUANT");
    h.run("VADD b VALUES 3 1 -2 3 a BIN");
    let before: Vec<_> = [
        "VEMB k e7",
        "VEMB n a RAW",
        "VEMB b a",
        "VSIM k ELE e3 WITHSCORES COUNT 60 TRUTH",
    ]
    .iter()
    .map(|c| h.run_text(c))
    .collect();
    let digest = h.run_text("DEBUG DIGEST");
    assert_eq!(h.run_text("DEBUG RELOAD"), "+OK\r\n");
    let after: Vec<_> = [
        "VEMB k e7",
        "VEMB n a RAW",
        "VEMB b a",
        "VSIM k ELE e3 WITHSCORES COUNT 60 TRUTH",
    ]
    .iter()
    .map(|c| h.run_text(c))
    .collect();
    assert_eq!(before, after);
    assert_eq!(h.run_text("DEBUG DIGEST"), digest);
    assert_eq!(h.run_text("VGETATTR k e9"), "$7\r\n{\"i\":9}\r\n");
    assert_eq!(int(&h.run("VCARD k")), 60);
}

#[test]
fn dump_restore_round_trips() {
    let mut h = Harness::new();
    for i in 0..30 {
        h.run(&format!("VADD k VALUES 2 {} {} e{i}", i % 4, i % 9 + 1));
    }
    let payload = match h.run("DUMP k") {
        embedis_protocol::Value::Bulk(b) => b,
        other => panic!("{other:?}"),
    };
    let mut args: Vec<&[u8]> = vec![b"RESTORE", b"k2", b"0"];
    args.push(&payload);
    let reply = h.run_args(&args);
    assert_eq!(reply, embedis_protocol::Value::Simple("OK".into()));
    assert_eq!(h.run_text("VEMB k e5"), h.run_text("VEMB k2 e5"));
    assert_eq!(int(&h.run("VCARD k2")), 30);
    assert_eq!(h.run_text("TYPE k2"), "+vectorset\r\n");
    assert_eq!(
        error(&h.run("COPY k k3")),
        "ERR not supported for this module key"
    );
}
