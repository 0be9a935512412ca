//! The language packages keep up with the Rust API: every public method of the test-facing
//! types — `Clock`, `Faults`, `Nodes`, `ReplicaSet`, `Cluster`, and what the facade adds to
//! `Server` for them — is offered by the Python package (`python/src/`, PyO3) and by the Node
//! package (declared in `nodejs/index.d.ts`, in camelCase; the Node tests check that the
//! declarations exist at run time), or is listed here with the reason it is not. A method
//! added to the Rust API fails this test until each package offers it or its list says why
//! not; a method a package drops fails it too.

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

/// The Rust API's test-facing methods, by type.
fn rust_api() -> BTreeMap<String, BTreeSet<String>> {
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
    // `Controlled`, `Stopwatch`…: the clock file's other types are internal.
    let public = [
        "Clock",
        "Faults",
        "Nodes",
        "ReplicaSet",
        "Cluster",
        "Server",
        "ServerBuilder",
    ];
    rust.retain(|ty, _| public.contains(&ty.as_str()));
    rust
}

/// Fails with the Rust methods `package` lacks that `exempt` does not excuse, and with the
/// exemptions that no longer apply. `offered(type, rust_name)` asks the package.
fn check_package(
    package: &str,
    exempt: &[(&str, &str, &str)],
    offered: impl Fn(&str, &str) -> bool,
) {
    let rust = rust_api();
    let excused: BTreeSet<(&str, &str)> = exempt.iter().map(|(t, n, _)| (*t, *n)).collect();
    let missing: Vec<String> = rust
        .iter()
        .flat_map(|(ty, names)| names.iter().map(move |name| (ty, name)))
        .filter(|(ty, name)| !offered(ty, name) && !excused.contains(&(ty.as_str(), name.as_str())))
        .map(|(ty, name)| format!("{ty}::{name}"))
        .collect();
    assert!(
        missing.is_empty(),
        "Rust API methods the {package} package does not offer (add them, or list them as \
         exempt with the reason): {missing:?}"
    );
    for (ty, name, _) in exempt {
        assert!(
            rust.get(*ty).is_some_and(|r| r.contains(*name)),
            "{package}'s exemptions name {ty}::{name}, which the Rust API no longer has"
        );
        assert!(
            !offered(ty, name),
            "{package}'s exemptions name {ty}::{name}, which the package now offers"
        );
    }
}

#[test]
fn the_python_package_offers_the_rust_test_api() {
    let mut python: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for file in ["clock.rs", "faults.rs", "group.rs", "server.rs"] {
        for (ty, names) in python_methods(&format!("python/src/{file}")) {
            python.entry(ty).or_default().extend(names);
        }
    }
    check_package("Python", NOT_IN_PYTHON, |ty, name| {
        python.get(ty).is_some_and(|p| p.contains(name))
    });
}

/// The members of each `export class <Type> {` block of the Node package's declarations.
fn node_members() -> BTreeMap<String, BTreeSet<String>> {
    let text = std::fs::read_to_string(format!("{ROOT}/nodejs/index.d.ts")).unwrap();
    let mut found: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut current: Option<String> = None;
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("export class ") {
            let name: String = rest.chars().take_while(|c| c.is_alphanumeric()).collect();
            found.entry(name.clone()).or_default();
            current = (!line.trim_end().ends_with("{}")).then_some(name);
        } else if line.starts_with('}') {
            current = None;
        } else if let (Some(ty), Some(member)) = (&current, line.strip_prefix("  ")) {
            let member = member
                .trim_start_matches("static ")
                .trim_start_matches("readonly ");
            let name: String = member.chars().take_while(|c| c.is_alphanumeric()).collect();
            if !name.is_empty() {
                found.entry(ty.clone()).or_default().insert(name);
            }
        }
    }
    found
}

/// `wait_for_owner` → `waitForOwner`.
fn camel_case(name: &str) -> String {
    let mut out = String::new();
    let mut upper = false;
    for c in name.chars() {
        match c {
            '_' => upper = true,
            c if upper => {
                out.extend(c.to_uppercase());
                upper = false;
            }
            c => out.push(c),
        }
    }
    out
}

/// Rust methods the Node package does not offer under their camelCase name, and why.
const NOT_IN_NODE: &[(&str, &str, &str)] = &[
    (
        "Clock",
        "system",
        "clock: 'system' (the default) in an options object",
    ),
    (
        "Clock",
        "frozen_at",
        "Clock.manual() freezes at the current time",
    ),
    (
        "Clock",
        "now",
        "nowMs / nowUs: JavaScript's clock is not the server's",
    ),
    (
        "Clock",
        "set",
        "advance and skew move a clock; setting it back is a Rust-only need",
    ),
    (
        "Clock",
        "on_change",
        "a callback for servers, not for tests",
    ),
    ("Clock", "set_rate", "the rate property's setter"),
    (
        "Faults",
        "add",
        "the typed helpers build every rule it takes",
    ),
    ("Nodes", "start_with", "Nodes.start(n, options)"),
    ("Nodes", "is_empty", "nodes.length"),
    ("Nodes", "iter", "for (const server of nodes)"),
    ("Nodes", "len", "nodes.length"),
    ("Nodes", "addrs", "each node's host and port"),
    (
        "ReplicaSet",
        "start_with",
        "ReplicaSet.start(replicas, options)",
    ),
    (
        "Cluster",
        "start_with",
        "Cluster.start(shards, replicas, options)",
    ),
    (
        "Cluster",
        "start_on_clock",
        "Cluster.start(shards, replicas, { clock })",
    ),
    (
        "ServerBuilder",
        "replica_of",
        "ReplicaSet, or config: { replicaof: ... }",
    ),
];

#[test]
fn the_node_package_declares_the_rust_test_api() {
    let node = node_members();
    check_package("Node", NOT_IN_NODE, |ty, name| {
        node.get(ty)
            .is_some_and(|members| members.contains(&camel_case(name)))
    });
}
