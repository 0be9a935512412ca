//! The runnable examples in `examples/` run to the end and keep their promises: `cargo test`
//! builds them (into target/<profile>/examples/), and this test runs the job queue, whose own
//! assertions check that every job is done exactly once and nothing stays pending after the
//! crashed worker's jobs are recovered with XAUTOCLAIM on the manual clock.

use std::path::PathBuf;
use std::process::Command;

/// target/<profile>/examples/<name>, next to this test's own target/<profile>/deps/.
fn example(name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("the test's path");
    let profile_dir = exe
        .parent()
        .and_then(|deps| deps.parent())
        .expect("target/<profile>");
    profile_dir.join("examples").join(name)
}

#[test]
fn job_queue_recovers_a_crashed_workers_jobs() {
    let path = example("job_queue");
    assert!(
        path.exists(),
        "{} is missing: cargo test builds the examples",
        path.display()
    );
    let out = Command::new(&path).output().expect("run the example");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "job_queue failed: {stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("XAUTOCLAIM right away claims 0 jobs"),
        "{stdout}"
    );
    assert!(
        stdout.contains("XAUTOCLAIM gives bob 2 jobs: [\"3\", \"4\"]"),
        "{stdout}"
    );
    assert!(stdout.contains("pending now: 0"), "{stdout}");
    assert!(stdout.contains("entries-read=10 lag=0"), "{stdout}");
}
