//! Runs one lock script through `ScriptVm::run` N times with the canned host of
//! `benches/scripting.rs`, for instruction counts that do not depend on the machine's load:
//!
//! ```sh
//! cargo build --release -p embedis-benches --example script_runs
//! perf stat -e instructions:u target/release/examples/script_runs reentrant 1000000
//! ```
//! (and the same with 0 runs, to subtract the set-up).

use bytes::{Bytes, BytesMut};
use embedis_protocol::{Version, Writer};
use embedis_scripting::{Host, HostLog, Interrupt, ScriptVm};

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

fn main() {
    let mut args = std::env::args().skip(1);
    let which = args.next().unwrap_or_else(|| "reentrant".into());
    let runs: u64 = args.next().map_or(1_000_000, |n| n.parse().unwrap());
    let (body, keys, argv): (&str, &[&str], &[&str]) = match which.as_str() {
        "reentrant" => (
            include_str!("../../tests/fixtures/lock-scripts/reentrant-acquire.lua"),
            &["lock:000000012345"],
            &["30000", "owner-1:1"],
        ),
        "cad" => (
            include_str!("../../tests/fixtures/lock-scripts/compare-and-delete.lua"),
            &["lease:000000012345"],
            &["token"],
        ),
        _ => ("return 1", &[], &[]),
    };
    let mut vm = ScriptVm::new(1 << 30).unwrap();
    let sha = vm
        .load_script(&Bytes::copy_from_slice(body.as_bytes()))
        .unwrap();
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
    for _ in 0..runs {
        out.clear();
        let mut writer = Writer::new(&mut out, Version::Resp2);
        vm.run(&mut CannedHost, &function, &sha, &keys, &argv, &mut writer)
            .unwrap();
    }
    std::hint::black_box(&out);
}
