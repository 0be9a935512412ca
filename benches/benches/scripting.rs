//! One script run through `ScriptVm::run` with a trivial host (every `redis.call` answers from
//! a table of canned replies, no keyspace): the cost of the Lua side of EVALSHA — KEYS/ARGV,
//! the call into the sandbox, `redis.call`'s argument and reply conversions — apart from the
//! server's command path.

use bytes::{Bytes, BytesMut};
use criterion::{black_box, criterion_group, criterion_main, Criterion};
use embedis_protocol::{Version, Writer};
use embedis_scripting::{Host, HostLog, Interrupt, ScriptVm};

const REENTRANT_ACQUIRE: &str =
    include_str!("../../tests/fixtures/lock-scripts/reentrant-acquire.lua");
const COMPARE_AND_DELETE: &str =
    include_str!("../../tests/fixtures/lock-scripts/compare-and-delete.lua");

/// Answers as an empty keyspace would for the commands the lock scripts run.
struct CannedHost;

impl Host for CannedHost {
    fn call(&mut self, args: &[Bytes], _: Version, out: &mut BytesMut) {
        let reply: &[u8] = match args[0].to_ascii_lowercase().as_slice() {
            b"exists" | b"hexists" => b":0\r\n",
            b"hincrby" | b"pexpire" => b":1\r\n",
            b"pttl" => b":29999\r\n",
            b"get" => b"$-1\r\n",
            _ => b"+OK\r\n",
        };
        out.extend_from_slice(reply);
    }
    fn log(&mut self, _: HostLog, _: &[u8]) {}
    fn interrupt(&mut self) -> Interrupt {
        Interrupt::Continue
    }
    fn acl_check(&mut self, _: &[bytes::Bytes]) -> Option<bool> {
        Some(true)
    }
}

fn run(c: &mut Criterion, label: &str, body: &str, keys: &[&str], argv: &[&str]) {
    let mut vm = ScriptVm::new(1 << 30).unwrap();
    let body = Bytes::copy_from_slice(body.as_bytes());
    let sha = vm.load_script(&body).unwrap();
    let function = vm.script_function(&sha).unwrap();
    let keys: Vec<Bytes> = keys
        .iter()
        .map(|k| Bytes::copy_from_slice(k.as_bytes()))
        .collect();
    let argv: Vec<Bytes> = argv
        .iter()
        .map(|a| Bytes::copy_from_slice(a.as_bytes()))
        .collect();
    let mut out = BytesMut::with_capacity(64);
    c.bench_function(label, |b| {
        b.iter(|| {
            out.clear();
            let mut writer = Writer::new(&mut out, Version::Resp2);
            vm.run(&mut CannedHost, &function, &sha, &keys, &argv, &mut writer)
                .unwrap();
            black_box(&out);
        })
    });
}

fn scripts(c: &mut Criterion) {
    run(
        c,
        "script/reentrant-acquire (4 redis.call)",
        REENTRANT_ACQUIRE,
        &["lock:000000012345"],
        &["30000", "owner-1:1"],
    );
    run(
        c,
        "script/compare-and-delete (1 redis.call)",
        COMPARE_AND_DELETE,
        &["lease:000000012345"],
        &["token"],
    );
    run(c, "script/return 1 (no call)", "return 1", &[], &[]);
}

criterion_group!(benches, scripts);
criterion_main!(benches);
