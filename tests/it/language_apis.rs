//! The language packages keep up with the Rust API: every public method of the test-facing
//! types — `Clock`, `Faults`, `Nodes`, `ReplicaSet`, `Cluster`, and what the facade adds to
//! `Server` for them — is offered by the Python package (`python/src/`, PyO3), or is listed
//! here with the reason it is not. A method added to the Rust API fails this test until the
//! package offers it or the list says why not; a method the package drops fails it too.

use std::collections::{BTreeMap, BTreeSet};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// The names of the `pub fn`s in each `impl <Type> {` block of a Rust file.
fn rust_methods(path: &str) -> BTreeMap<String, BTreeSet<String>> {
    methods(path, "pub fn ")
}

/// The names of the methods in each `#[pymethods] impl <Type> {` block of a file: getters and
/// setters (`get_rate`, `set_rate`) count as the Rust methods they stand for.
fn python_methods(path: &str) -> BTreeMap<String, BTreeSet<String>> {
    methods(path, "fn ")
}

fn methods(path: &str, marker: &str) -> BTreeMap<String, BTreeSet<String>> {
    let text = std::fs::read_to_string(format!("{ROOT}/{path}")).unwrap();
    let mut found: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut current: Option<String> = None;
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("impl ") {
            // `impl Type {` only: trait impls (`impl Drop for Type`) are not API.
            let name = rest.trim_end_matches(" {").trim();
            // Generic arguments (`Faults<'_>`) are not part of the name.
            let name = name.split('<').next().unwrap_or(name);
            current = (!name.contains(' ')).then(|| name.to_string());
        } else if line == "}" {
            current = None;
        } else if let (Some(ty), Some(at)) = (&current, line.find(marker)) {
            let after = &line[at + marker.len()..];
            let is_method = line[..at].trim().is_empty() || line[..at].trim() == "pub";
            let name: String = after
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            if is_method && !name.is_empty() {
                let name = name.strip_prefix("get_").unwrap_or(&name).to_string();
                found.entry(ty.clone()).or_default().insert(name);
            }
        }
    }
    found
}

/// Rust methods the Python package does not offer as such, and why.
const NOT_IN_PYTHON: &[(&str, &str, &str)] = &[
    (
        "Clock",
        "system",
        "clock=\"system\" (the default) in a constructor",
    ),
    (
        "Clock",
        "frozen_at",
        "Clock.manual() freezes at the current time",
    ),
    (
        "Clock",
        "now",
        "now_ms / now_us: Python's clock is not the server's",
    ),
    (
        "Clock",
        "set",
        "advance and skew move a clock; a clock set back in time is a Rust-only need",
    ),
    (
        "Clock",
        "on_change",
        "a callback for servers, not for tests",
    ),
    (
        "Faults",
        "add",
        "the typed helpers build every rule it takes",
    ),
    ("Nodes", "start", "the constructor Nodes(n, **options)"),
    ("Nodes", "start_with", "the constructor's keyword options"),
    ("Nodes", "is_empty", "len(nodes)"),
    ("Nodes", "iter", "iter(nodes)"),
    ("Nodes", "len", "len(nodes)"),
    ("Nodes", "addrs", "each node's host and port"),
    (
        "ReplicaSet",
        "start",
        "the constructor ReplicaSet(replicas, **options)",
    ),
    (
        "ReplicaSet",
        "start_with",
        "the constructor's keyword options",
    ),
    (
        "Cluster",
        "start",
        "the constructor Cluster(shards, replicas, **options)",
    ),
    ("Cluster", "start_with", "the constructor's keyword options"),
    ("Cluster", "start_on_clock", "Cluster(..., clock=...)"),
    (
        "ServerBuilder",
        "replica_of",
        "ReplicaSet, or config={\"replicaof\": ...}",
    ),
];

#[test]
fn the_python_package_offers_the_rust_test_api() {
    let mut rust = rust_methods("server/src/base/clock.rs");
    for file in [
        "src/faults.rs",
        "src/nodes.rs",
        "src/replica_set.rs",
        "src/cluster.rs",
    ] {
        for (ty, names) in rust_methods(file) {
            rust.entry(ty).or_default().extend(names);
        }
    }
    let mut python: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for file in ["clock.rs", "faults.rs", "group.rs", "server.rs"] {
        for (ty, names) in python_methods(&format!("python/src/{file}")) {
            python.entry(ty).or_default().extend(names);
        }
    }
    let exempt: BTreeSet<(String, String)> = NOT_IN_PYTHON
        .iter()
        .map(|(ty, name, _)| (ty.to_string(), name.to_string()))
        .collect();
    let mut missing = Vec::new();
    for (ty, names) in &rust {
        // `Controlled`, `Stopwatch`…: the clock file's other types are internal.
        if ![
            "Clock",
            "Faults",
            "Nodes",
            "ReplicaSet",
            "Cluster",
            "Server",
            "ServerBuilder",
        ]
        .contains(&ty.as_str())
        {
            continue;
        }
        for name in names {
            let offered = python.get(ty).is_some_and(|p| p.contains(name));
            if !offered && !exempt.contains(&(ty.clone(), name.clone())) {
                missing.push(format!("{ty}::{name}"));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "Rust API methods the Python package does not offer (add them to python/src, or to \
         NOT_IN_PYTHON with the reason): {missing:?}"
    );
    // The exemptions name methods that still exist, and are still missing from Python.
    for (ty, name, _) in NOT_IN_PYTHON {
        assert!(
            rust.get(*ty).is_some_and(|r| r.contains(*name)),
            "NOT_IN_PYTHON names {ty}::{name}, which the Rust API no longer has"
        );
        assert!(
            !python.get(*ty).is_some_and(|p| p.contains(*name)),
            "NOT_IN_PYTHON names {ty}::{name}, which the Python package now offers"
        );
    }
}
