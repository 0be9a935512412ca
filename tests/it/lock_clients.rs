//! Real lock clients against embedis: redis-py's `Lock` on one server and pottery's `Redlock`
//! over five, driven by tests/python/lock_clients.py. The same script runs first against real
//! redis-server instances, so that what it expects is what Redis does.
//!
//! Needs a Python 3 with the `redis` and `pottery` packages: `$EMBEDIS_PYTHON` if set, else
//! `python3`. Without it (or without redis-server) the test skips loudly; with
//! `EMBEDIS_REQUIRE_REDIS=1` (CI, which installs both) it fails instead.

use crate::support;

use std::process::Command;

fn run_script(python: &str, ports: &[u16]) -> String {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/python/lock_clients.py");
    let output = Command::new(python)
        .arg(script)
        .args(ports.iter().map(|p| p.to_string()))
        .output()
        .expect("run python");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "lock clients failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
}

#[test]
fn redis_py_lock_and_pottery_redlock_work_against_embedis() {
    let Some(python) = support::python_with(&["redis", "pottery"], "lock clients") else {
        return;
    };
    // The script's expectations, checked on Redis itself first.
    let redis: Vec<support::RedisServer> = (0..6)
        .filter_map(|i| support::RedisServer::start(&format!("lock clients {i}"), &[]))
        .collect();
    if redis.len() == 6 {
        let ports: Vec<u16> = redis.iter().map(|r| r.addr().port()).collect();
        run_script(&python, &ports);
    }
    let servers: Vec<embedis::Server> = (0..6)
        .map(|_| support::builder().start().unwrap())
        .collect();
    let ports: Vec<u16> = servers.iter().map(|s| s.addr().port()).collect();
    let out = run_script(&python, &ports);
    assert!(out.contains("all lock-client checks passed"), "{out}");
    assert!(out.contains("release of a lost lock raises LockNotOwnedError"));
    assert!(out.contains("the key is on a majority of masters"));
}
