//! The repository's root holds only what belongs there: the tracked entries of an explicit list,
//! and nothing that git neither tracks nor ignores — such as the `dump.rdb`, `appendonlydir/` or
//! `temp-*.rdb` a server started without a directory of its own writes into the current
//! directory (the root, under `cargo test`), or a shell redirect's leftover. `.gitignore` hides
//! only the build output (`/target`, the fuzzers'), so such a file fails this test on the next
//! run if not on this one. Needs `git` and a clone (`.git`); skipped with a message otherwise.

use std::path::Path;
use std::process::Command;

/// Everything the root may track. A new top-level file or folder is added here on purpose.
const ALLOWED: &[&str] = &[
    ".ci",
    ".gitignore",
    "BENCHMARKS.md",
    "CONFORMANCE.md",
    "Cargo.lock",
    "Cargo.toml",
    "DEVELOPERS.md",
    "README.md",
    "benches",
    "bus",
    "datatypes",
    "docs",
    "examples",
    "fuzz",
    "nodejs",
    "protocol",
    "python",
    "rdb",
    "scripting",
    "server",
    "src",
    "tests",
];

/// `git <args>` in the repository's root: its standard output's lines, or None (with a
/// message) if git cannot be run there.
fn git(root: &Path, args: &[&str]) -> Option<Vec<String>> {
    let out = match Command::new("git").arg("-C").arg(root).args(args).output() {
        Ok(out) if out.status.success() => out,
        Ok(out) => {
            eprintln!(
                "\n!!!!! SKIPPED the root's files: git {args:?} failed: {} !!!!!\n",
                String::from_utf8_lossy(&out.stderr).trim()
            );
            return None;
        }
        Err(e) => {
            eprintln!("\n!!!!! SKIPPED the root's files: git cannot run ({e}) !!!!!\n");
            return None;
        }
    };
    Some(
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(str::to_string)
            .collect(),
    )
}

#[test]
fn the_root_holds_only_tracked_files_of_the_list_and_nothing_unknown() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    if !root.join(".git").exists() {
        eprintln!("\n!!!!! SKIPPED the root's files: not a git clone (no .git) !!!!!\n");
        return;
    }
    let Some(untracked) = git(
        root,
        &["ls-files", "--others", "--exclude-standard", "--directory"],
    ) else {
        return;
    };
    // Depth 1: a file at the root, or a folder there that git shows as one entry (`dir/`).
    let at_root: Vec<&String> = untracked
        .iter()
        .filter(|p| !p.trim_end_matches('/').contains('/'))
        .collect();
    assert!(
        at_root.is_empty(),
        "files at the repository root that git neither tracks nor ignores (a server started \
         without a directory of its own, or a leftover; remove them and find what wrote them): \
         {at_root:?}"
    );
    let Some(tracked) = git(root, &["ls-files"]) else {
        return;
    };
    let mut top: Vec<&str> = tracked
        .iter()
        .map(|p| p.split('/').next().unwrap_or(p))
        .collect();
    top.dedup();
    let unexpected: Vec<&&str> = top.iter().filter(|t| !ALLOWED.contains(t)).collect();
    assert!(
        unexpected.is_empty(),
        "tracked at the repository root but not in tests/it/repository.rs's list: {unexpected:?}"
    );
}
