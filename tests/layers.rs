//! The server crate's layers, checked from its source text.
//!
//! `server/src` is built in layers, lowest first: **base** (errors, C strings, the clock, memory
//! numbers, configuration, logging, listeners, values, flags), **model** (the keyspace and the
//! state of clients and of the server over it: watches, pub/sub, blocking, MULTI, the script VM's
//! slot, faults), **kernel** (the command table, the command context, calling a command, the
//! generic gates), **services** (the script and function hosts, busy scripts, active expiry),
//! **handlers** (the commands), **executor** (the engine) and **io** (networking, starting and
//! stopping the server, the direct API, the test harness, the crate root). The rule: a file may
//! use `crate::` paths only into its own layer or lower ones, so that each layer can be read,
//! tested and changed without the layers above it. [`LAYERS`] places every file in a layer and
//! [`ALLOWED`] lists the upward uses accepted for now, each with its reason.
//!
//! A path names the file of the longest prefix of its segments that is a module: `crate::a::b::x`
//! names `a/b.rs` (or `a/b/mod.rs`) if there is one, else `a.rs`, else `lib.rs` (a re-export like
//! `crate::Clock`). `super::` and `self::` paths are resolved the same way from the module they
//! are in. A bare path into a child module (`keys::flag` in `table/mod.rs`) is a module using its
//! own parts, not an import between peers, and is not counted. Only code counts:
//! comments and doc comments (a link in a doc is not an import), string literals and
//! `#[cfg(test)]` modules (a unit test may drive the whole engine through `test_harness`) are
//! skipped.
//!
//! A second test looks at every crate of the workspace for import circles: files that use one
//! another round a circle can only be understood and changed together, so no circle may hold more
//! than [`MAX_CIRCLE`] files.
//!
//! The tests read source text only, with std alone: they do not depend on the server crate.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::Path;

/// The layers of `server/src`, lowest first, each a folder of its own: a file's layer is the
/// first segment of its path. `lib.rs`, which only declares the seven folders, stands at the
/// top; no other file may sit at the root of `server/src`.
const LAYERS: &[&str] = &[
    "base", "model", "kernel", "services", "commands", "engine", "io",
];
/// Upward uses accepted for now, as (from, to, reason), paths relative to `server/src`. An entry
/// that matches no use fails the test, so the list cannot go stale.
const ALLOWED: &[(&str, &str, &str)] = &[];

/// The most files an import circle may hold: none, so every file can be read on top of the
/// files it uses.
const MAX_CIRCLE: usize = 1;

/// The circles accepted, each as its files (`crate dir/file`, sorted) and the reason.
const CIRCLES_ALLOWED: &[(&[&str], &str)] = &[(
    &["server/src/kernel/ctx.rs", "server/src/kernel/table/mod.rs"],
    "the table's Handler type is a function of Ctx, and Ctx lends the table to the handler",
)];

/// The source folders of the workspace's crates, relative to the workspace root.
const CRATES: &[&str] = &[
    "server/src",
    "rdb/src",
    "bus/src",
    "protocol/src",
    "datatypes/src",
    "scripting/src",
    "src",
];

/// The layer of a file of `server/src` (its index in [`LAYERS`]): its folder's, or the top for
/// `lib.rs`; `None` for any other file at the root.
fn layer_of(file: &str) -> Option<usize> {
    if file == "lib.rs" {
        return Some(LAYERS.len() - 1);
    }
    let (folder, _) = file.split_once('/')?;
    LAYERS.iter().position(|&layer| layer == folder)
}

// ---------------------------------------------------------------------------------------------
// Reading paths out of source text

/// A path found in code: its segments as written (a glob's last segment is `*`, a group's `self`
/// is dropped) and the inline (non-test) modules it sits in within its file.
#[derive(Debug)]
struct Found {
    scope: Vec<String>,
    path: Vec<String>,
}

/// `src` with comments (doc comments too), string literals and char literals blanked out; line
/// breaks are kept.
fn code_only(src: &str) -> String {
    let c: Vec<char> = src.chars().collect();
    let at = |k: usize| c.get(k).copied().unwrap_or('\0');
    let ident = |ch: char| ch.is_alphanumeric() || ch == '_';
    let mut out = String::with_capacity(src.len());
    let blank = |out: &mut String, from: usize, to: usize| {
        for &ch in &c[from..to.min(c.len())] {
            out.push(if ch == '\n' { '\n' } else { ' ' });
        }
    };
    let mut i = 0;
    while i < c.len() {
        let end = if c[i] == '/' && at(i + 1) == '/' {
            (i..c.len()).find(|&k| c[k] == '\n').unwrap_or(c.len())
        } else if c[i] == '/' && at(i + 1) == '*' {
            let (mut k, mut depth) = (i, 0);
            while k < c.len() {
                if at(k) == '/' && at(k + 1) == '*' {
                    depth += 1;
                    k += 2;
                } else if at(k) == '*' && at(k + 1) == '/' {
                    depth -= 1;
                    k += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    k += 1;
                }
            }
            k
        } else if c[i] == '"' {
            let mut k = i + 1;
            while k < c.len() && c[k] != '"' {
                k += if c[k] == '\\' { 2 } else { 1 };
            }
            k + 1
        } else if c[i] == 'r'
            && matches!(at(i + 1), '"' | '#')
            && (i == 0
                || !ident(c[i - 1])
                || (matches!(c[i - 1], 'b' | 'c') && (i < 2 || !ident(c[i - 2]))))
            && {
                let hashes = (i + 1..c.len()).take_while(|&k| c[k] == '#').count();
                at(i + 1 + hashes) == '"'
            }
        {
            // A raw string: r"…", r#"…"#, br##"…"##.
            let hashes = (i + 1..c.len()).take_while(|&k| c[k] == '#').count();
            let mut k = i + hashes + 2;
            while k < c.len() && !(c[k] == '"' && (1..=hashes).all(|h| at(k + h) == '#')) {
                k += 1;
            }
            k + hashes + 1
        } else if c[i] == '\'' && at(i + 1) == '\\' {
            // An escaped char literal: '\n', '\'', '\u{1F600}'.
            let mut k = i + 3;
            while k < c.len() && c[k] != '\'' {
                k += 1;
            }
            k + 1
        } else if c[i] == '\'' && at(i + 2) == '\'' && at(i + 1) != '\'' {
            i + 3
        } else {
            // Code, a lifetime's quote included.
            out.push(if c[i] == '\'' { ' ' } else { c[i] });
            i += 1;
            continue;
        };
        blank(&mut out, i, end);
        i = end;
    }
    out
}

/// The tokens of code: identifiers (keywords and numbers too), `::`, and single other characters.
fn tokens(code: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut chars = code.char_indices().peekable();
    while let Some((start, ch)) = chars.next() {
        let mut end = start + ch.len_utf8();
        if ch.is_whitespace() {
            continue;
        } else if ch.is_alphanumeric() || ch == '_' {
            while let Some(&(k, next)) = chars.peek() {
                if !(next.is_alphanumeric() || next == '_') {
                    break;
                }
                end = k + next.len_utf8();
                chars.next();
            }
        } else if ch == ':' && chars.peek().map(|&(_, next)| next) == Some(':') {
            chars.next();
            end += 1;
        }
        out.push(&code[start..end]);
    }
    out
}

fn is_ident(token: &str) -> bool {
    token.starts_with(|ch: char| ch.is_alphabetic() || ch == '_')
}

/// The index just past the bracket that closes the one opened at `open` (the end of the tokens
/// if it is never closed).
fn closing(t: &[&str], open: usize) -> usize {
    let (left, right) = match t[open] {
        "(" => ("(", ")"),
        "[" => ("[", "]"),
        _ => ("{", "}"),
    };
    let mut depth = 0usize;
    for (k, token) in t.iter().enumerate().skip(open) {
        if *token == left {
            depth += 1;
        } else if *token == right {
            depth -= 1;
            if depth == 0 {
                return k + 1;
            }
        }
    }
    t.len()
}

/// If a `#[cfg(test)]` attribute starts at `i` and marks a `mod` item (`mod tests { … }` or
/// `pub(crate) mod test_harness;`), the index just past that item.
fn test_module_end(t: &[&str], i: usize) -> Option<usize> {
    if t.get(i..i + 7)? != ["#", "[", "cfg", "(", "test", ")", "]"] {
        return None;
    }
    let mut k = i + 7;
    while t.get(k) == Some(&"#") && t.get(k + 1) == Some(&"[") {
        k = closing(t, k + 1);
    }
    if t.get(k) == Some(&"pub") {
        k += 1;
        if t.get(k) == Some(&"(") {
            k = closing(t, k);
        }
    }
    if t.get(k) != Some(&"mod") {
        return None;
    }
    match *t.get(k + 2)? {
        ";" => Some(k + 3),
        "{" => Some(closing(t, k + 2)),
        _ => None,
    }
}

/// Reads one use tree (or an expression's path) starting at `i` below `prefix`; pushes each of its
/// leaves onto `out` and returns the index just past it.
fn use_tree(
    t: &[&str],
    mut i: usize,
    mut prefix: Vec<String>,
    out: &mut Vec<Vec<String>>,
) -> usize {
    let start = i;
    loop {
        match t.get(i) {
            Some(&"{") => {
                i += 1;
                while let Some(&token) = t.get(i) {
                    match token {
                        "}" => return i + 1,
                        "," => i += 1,
                        _ => {
                            let next = use_tree(t, i, prefix.clone(), out);
                            i = next.max(i + 1);
                        }
                    }
                }
                return i;
            }
            Some(&"*") => {
                prefix.push("*".into());
                i += 1;
                break;
            }
            Some(&segment) if is_ident(segment) => {
                // `a::{self, b}`: `self` names `a`.
                if segment != "self" || prefix.is_empty() {
                    prefix.push(segment.into());
                }
                i += 1;
                if t.get(i) != Some(&"::") {
                    break;
                }
                i += 1;
            }
            // Generic arguments (`crate::a::B::<T>`) or anything else end the path.
            _ => break,
        }
    }
    if t.get(i) == Some(&"as") {
        i += 2;
    }
    if i > start {
        out.push(prefix);
    }
    i
}

/// Every path of two segments or more (`crate::a::x`, `super::x`, `keys::flag`, `std::io`, each
/// leaf of a use group) in the code of `src`, outside `#[cfg(test)]` modules.
fn paths(src: &str) -> Vec<Found> {
    let code = code_only(src);
    let t = tokens(&code);
    let mut out = Vec::new();
    // The inline modules the scan is in, each with the brace depth inside it.
    let mut scope: Vec<(&str, usize)> = Vec::new();
    let mut depth = 0usize;
    let mut i = 0;
    while i < t.len() {
        if let Some(end) = test_module_end(&t, i) {
            i = end;
            continue;
        }
        match t[i] {
            "{" => depth += 1,
            "}" => {
                depth = depth.saturating_sub(1);
                while scope.last().is_some_and(|&(_, inside)| inside > depth) {
                    scope.pop();
                }
            }
            "mod" if t.get(i + 2) == Some(&"{") && t.get(i + 1).is_some_and(|n| is_ident(n)) => {
                depth += 1;
                scope.push((t[i + 1], depth));
                i += 3;
                continue;
            }
            // The head of a path: `crate::`, `$crate::`, `self::` or `super::`. A bare name
            // (`keys::legacy_range` in `table/mod.rs`, `std::io`) is a module's own child or
            // something outside the crate: not read (see the module documentation).
            // `a.b::<T>()` is a method.
            head if matches!(head, "crate" | "self" | "super")
                && t.get(i + 1) == Some(&"::")
                && (i == 0
                    || !matches!(t[i - 1], "::" | "." | "$")
                    || (t[i - 1] == "$" && head == "crate"))
                // `pub(in crate::a)` is a visibility, not a use.
                && !(i >= 3 && t[i - 3..i] == ["pub", "(", "in"]) =>
            {
                let mut leaves = Vec::new();
                i = use_tree(&t, i, Vec::new(), &mut leaves);
                for path in leaves {
                    let scope = scope.iter().map(|&(name, _)| name.to_string()).collect();
                    out.push(Found { scope, path });
                }
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    out
}

// ---------------------------------------------------------------------------------------------
// A crate's files, modules and uses

/// A use of one file by another: the path as written and the file it names.
#[derive(Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Use {
    target: String,
    path: String,
}

struct Crate {
    /// Relative path (`commands/keys.rs`) → source.
    files: BTreeMap<String, String>,
    /// Module path (`commands::keys`, `""` for the root) → relative path of its file.
    modules: BTreeMap<String, String>,
}

/// The module path of a file: `commands/keys.rs` → `commands::keys`, `table/mod.rs` → `table`,
/// `lib.rs` → the crate root (no segment).
fn module_of(file: &str) -> Vec<String> {
    let mut segments: Vec<String> = file
        .strip_suffix(".rs")
        .unwrap_or(file)
        .split('/')
        .map(String::from)
        .collect();
    if segments.last().is_some_and(|s| s == "mod") || segments == ["lib"] {
        segments.pop();
    }
    segments
}

impl Crate {
    fn new(files: BTreeMap<String, String>) -> Crate {
        let modules = files
            .keys()
            .map(|f| (module_of(f).join("::"), f.clone()))
            .collect();
        Crate { files, modules }
    }

    /// The `.rs` files under `dir` (relative to the workspace root), but not under `bin/`: each
    /// binary is a crate of its own.
    fn load(dir: &str) -> Crate {
        fn walk(root: &Path, rel: &str, files: &mut BTreeMap<String, String>) {
            let entries = std::fs::read_dir(root.join(rel))
                .unwrap_or_else(|e| panic!("reading {}: {e}", root.join(rel).display()));
            for entry in entries {
                let entry = entry.expect("a directory entry");
                let name = entry.file_name().to_string_lossy().into_owned();
                let path = if rel.is_empty() {
                    name.clone()
                } else {
                    format!("{rel}/{name}")
                };
                if entry.file_type().expect("a file type").is_dir() {
                    if path != "bin" {
                        walk(root, &path, files);
                    }
                } else if name.ends_with(".rs") {
                    let src = std::fs::read_to_string(entry.path()).expect("a source file");
                    files.insert(path, src);
                }
            }
        }
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join(dir);
        let mut files = BTreeMap::new();
        walk(&root, "", &mut files);
        assert!(files.contains_key("lib.rs"), "{dir}/lib.rs not found");
        Crate::new(files)
    }

    /// The file a path found in `file` names: the longest prefix of its segments that is a module
    /// of the crate (the crate root, lib.rs, when no other is). A path that starts with neither
    /// `crate`, `self` nor `super` names a file only when its first segment is a child module of
    /// the module it is in (Rust 2018 relative paths); otherwise it is outside the crate.
    fn resolve(&self, file: &str, found: &Found) -> Option<&str> {
        let mut here = module_of(file);
        here.extend(found.scope.iter().cloned());
        let (first, rest) = found.path.split_first()?;
        let mut module: Vec<String> = match first.as_str() {
            "crate" => Vec::new(),
            "self" => here,
            "super" => {
                here.pop()?;
                here
            }
            child => {
                here.push(child.to_string());
                self.modules.get(&here.join("::"))?;
                here
            }
        };
        for segment in rest {
            match segment.as_str() {
                "super" => {
                    module.pop()?;
                }
                "self" => {}
                name => module.push(name.to_string()),
            }
        }
        (0..=module.len())
            .rev()
            .find_map(|k| self.modules.get(&module[..k].join("::")))
            .map(String::as_str)
    }

    /// The uses of other files of the crate by `file`, each path once.
    fn uses(&self, file: &str) -> BTreeSet<Use> {
        paths(&self.files[file])
            .iter()
            .filter_map(|found| {
                let target = self.resolve(file, found)?;
                (target != file).then(|| Use {
                    target: target.to_string(),
                    path: found.path.join("::"),
                })
            })
            .collect()
    }
}

/// The strongly connected components of a graph given as each node's successors (Tarjan).
fn strongly_connected(edges: &[Vec<usize>]) -> Vec<Vec<usize>> {
    struct Tarjan<'a> {
        edges: &'a [Vec<usize>],
        index: Vec<Option<usize>>,
        low: Vec<usize>,
        on_stack: Vec<bool>,
        stack: Vec<usize>,
        next: usize,
        components: Vec<Vec<usize>>,
    }
    fn visit(t: &mut Tarjan, v: usize) {
        t.index[v] = Some(t.next);
        t.low[v] = t.next;
        t.next += 1;
        t.stack.push(v);
        t.on_stack[v] = true;
        let edges = t.edges;
        for &w in &edges[v] {
            match t.index[w] {
                None => {
                    visit(t, w);
                    t.low[v] = t.low[v].min(t.low[w]);
                }
                Some(index) if t.on_stack[w] => t.low[v] = t.low[v].min(index),
                Some(_) => {}
            }
        }
        if Some(t.low[v]) == t.index[v] {
            let mut component = Vec::new();
            while let Some(w) = t.stack.pop() {
                t.on_stack[w] = false;
                component.push(w);
                if w == v {
                    break;
                }
            }
            component.sort();
            t.components.push(component);
        }
    }
    let n = edges.len();
    let mut t = Tarjan {
        edges,
        index: vec![None; n],
        low: vec![0; n],
        on_stack: vec![false; n],
        stack: Vec::new(),
        next: 0,
        components: Vec::new(),
    };
    for v in 0..n {
        if t.index[v].is_none() {
            visit(&mut t, v);
        }
    }
    t.components
}

fn section(report: &mut String, title: &str, lines: &[String]) {
    if !lines.is_empty() {
        writeln!(report, "\n{title}").unwrap();
        for line in lines {
            writeln!(report, "  {line}").unwrap();
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The guards

#[test]
fn server_files_use_only_their_own_layer_or_lower_ones() {
    let server = Crate::load("server/src");
    let name = |layer: usize| LAYERS[layer];
    let unmapped: Vec<String> = server
        .files
        .keys()
        .filter(|file| layer_of(file).is_none())
        .map(|file| {
            format!(
                "server/src/{file}: every file but lib.rs belongs in a layer's folder ({})",
                LAYERS.join(", ")
            )
        })
        .collect();
    let mut allowance_used = vec![false; ALLOWED.len()];
    let mut upward = Vec::new();
    for from in server.files.keys() {
        let Some(from_layer) = layer_of(from) else {
            continue;
        };
        for Use { target, path } in server.uses(from) {
            let Some(to_layer) = layer_of(&target) else {
                continue;
            };
            if to_layer <= from_layer {
                continue;
            }
            if let Some(k) = ALLOWED
                .iter()
                .position(|&(f, t, _)| f == from && t == target)
            {
                allowance_used[k] = true;
                continue;
            }
            upward.push(format!(
                "server/src/{from} ({}) -> server/src/{target} ({}): {path}",
                name(from_layer),
                name(to_layer)
            ));
        }
    }
    let stale: Vec<String> = ALLOWED
        .iter()
        .zip(&allowance_used)
        .filter(|(_, used)| !**used)
        .map(|((from, to, reason), _)| format!("({from:?}, {to:?}, {reason:?})"))
        .collect();

    let mut report = String::new();
    section(&mut report, "Files in no layer:", &unmapped);
    section(
        &mut report,
        &format!(
            "Uses of a higher layer ({}; lowest first): move the code down, or pass down what it \
             needs; a use that must stay goes in ALLOWED with its reason.",
            LAYERS.join(" < ")
        ),
        &upward,
    );
    section(
        &mut report,
        "ALLOWED entries that match no upward use any more (remove them):",
        &stale,
    );
    assert!(
        report.is_empty(),
        "the server crate's layering is broken:\n{report}"
    );
}

#[test]
fn no_file_is_in_an_import_circle() {
    let mut circles = Vec::new();
    let mut allowance_used = vec![false; CIRCLES_ALLOWED.len()];
    for dir in CRATES {
        let krate = Crate::load(dir);
        let files: Vec<&String> = krate.files.keys().collect();
        let index: BTreeMap<&str, usize> = files
            .iter()
            .enumerate()
            .map(|(k, f)| (f.as_str(), k))
            .collect();
        let edges: Vec<Vec<usize>> = files
            .iter()
            .map(|file| {
                let targets: BTreeSet<usize> = krate
                    .uses(file)
                    .iter()
                    .map(|u| index[u.target.as_str()])
                    .collect();
                targets.into_iter().collect()
            })
            .collect();
        for component in strongly_connected(&edges) {
            if component.len() <= MAX_CIRCLE {
                continue;
            }
            let names: Vec<String> = component
                .iter()
                .map(|&k| format!("{dir}/{}", files[k]))
                .collect();
            if let Some(k) = CIRCLES_ALLOWED
                .iter()
                .position(|(allowed, _)| *allowed == names)
            {
                allowance_used[k] = true;
                continue;
            }
            let mut lines = format!("{dir}: a circle of {} files:", component.len());
            for name in &names {
                write!(lines, "\n    {name}").unwrap();
            }
            circles.push(lines);
        }
    }
    let mut report = String::new();
    section(
        &mut report,
        &format!(
            "Import circles of more than {MAX_CIRCLE} file (in each, every file reaches every other \
             through uses; break one by moving what the lower files need down to them):"
        ),
        &circles,
    );
    let stale: Vec<String> = CIRCLES_ALLOWED
        .iter()
        .zip(&allowance_used)
        .filter(|(_, used)| !**used)
        .map(|((files, _), _)| files.join(", "))
        .collect();
    section(
        &mut report,
        "CIRCLES_ALLOWED entries that match no circle any more (remove them):",
        &stale,
    );
    assert!(report.is_empty(), "{report}");
}

// ---------------------------------------------------------------------------------------------
// The parser's own tests

fn found(src: &str) -> Vec<String> {
    paths(src).iter().map(|f| f.path.join("::")).collect()
}

#[test]
fn parser_reads_grouped_and_nested_uses() {
    assert_eq!(
        found("use crate::{a::x, b::{y, z}};"),
        ["crate::a::x", "crate::b::y", "crate::b::z"]
    );
    assert_eq!(
        found("pub use crate::a::{\n    self,\n    b::{c as d, e::*},\n    f,\n};"),
        [
            "crate::a",
            "crate::a::b::c",
            "crate::a::b::e::*",
            "crate::a::f"
        ]
    );
    assert_eq!(
        found("use crate::a::x;\nuse crate::*;"),
        ["crate::a::x", "crate::*"]
    );
    assert_eq!(
        // Only paths from `crate`, `self` and `super` are read.
        found("use std::{io, fmt};\nuse super::{q, r::s};"),
        ["super::q", "super::r::s"]
    );
}

#[test]
fn parser_reads_paths_in_expressions_and_types() {
    let src = "fn f<'a>(c: &'a mut crate::client::Client) -> crate::error::CmdResult<'a> {\n\
               crate::pubsub::unsubscribe_all(c, crate::a::B::<u8>::new());\n\
               let s = crate::value::Value::Str { len: 1 };\n\
               super::super::bits::COMMANDS[3]\n}";
    assert_eq!(
        found(src),
        [
            "crate::client::Client",
            "crate::error::CmdResult",
            "crate::pubsub::unsubscribe_all",
            "crate::a::B",
            "crate::value::Value::Str",
            "super::super::bits::COMMANDS",
        ]
    );
}

#[test]
fn parser_ignores_comments_strings_and_visibilities() {
    let src =
        "// use crate::a;\n/// See [`crate::b`].\n//! [crate::c]\n/* crate::d /* crate::e */ */\n\
               let s = \"crate::f \\\" crate::g\";\nlet r = r#\"crate::h \"quoted\"\"#;\n\
               let q = '\"'; let e = '\\''; let b = b\"crate::i\";\n\
               pub(crate) fn f() {} pub(super) fn g() {} pub(in crate::j) fn h() {}\n\
               use crate::kept; // crate::after_code\n";
    assert_eq!(found(src), ["crate::kept"]);
}

#[test]
fn parser_skips_test_modules_only() {
    let src = "use crate::a;\n\
               #[cfg(test)]\nmod tests {\n    use super::*;\n\
                   use crate::test_harness::Harness;\n    fn t() { if x { crate::b::c() } }\n}\n\
               #[cfg(test)]\npub(crate) mod test_harness;\n\
               #[cfg(test)]\n#[allow(dead_code)]\nmod more { use crate::m; }\n\
               #[cfg(test)]\nfn helper() { crate::kept::f() }\n\
               mod inline { use super::z; }\n\
               use crate::after;";
    let all = paths(src);
    let listed: Vec<String> = all.iter().map(|f| f.path.join("::")).collect();
    assert_eq!(
        listed,
        ["crate::a", "crate::kept::f", "super::z", "crate::after"]
    );
    assert_eq!(all[2].scope, ["inline"]);
    assert!(all[3].scope.is_empty());
}

/// What each path found in `src`, as the text of `file`, names in a crate of `files`.
fn resolved(files: &[&str], file: &str, src: &str) -> Vec<(String, Option<String>)> {
    let krate = Crate::new(
        files
            .iter()
            .map(|f| (f.to_string(), String::new()))
            .collect(),
    );
    paths(src)
        .iter()
        .map(|f| (f.path.join("::"), krate.resolve(file, f).map(String::from)))
        .collect()
}

fn named(list: &[(&str, Option<&str>)]) -> Vec<(String, Option<String>)> {
    list.iter()
        .map(|(p, f)| (p.to_string(), f.map(String::from)))
        .collect()
}

const FILES: &[&str] = &[
    "lib.rs",
    "clock.rs",
    "commands/mod.rs",
    "commands/keys.rs",
    "commands/strings.rs",
    "table/mod.rs",
    "table/keys.rs",
];

#[test]
fn paths_resolve_to_the_longest_module_prefix() {
    let src = "use crate::Clock;\nuse crate::clock::Clock;\n\
               use crate::commands::keys::flag::READ;\nuse crate::commands::Handler;\n\
               use crate::table;\nuse crate::table::keys::{self, Begin};\n\
               use super::strings::string_of;\nuse super::{Command, keys};\nuse self::inner::x;\n\
               mod inner { use super::y; }\nuse crate::nowhere::z;\nuse std::io;\n\
               fn f() { strings::len(); Vec::<u8>::new(); }";
    let expected = [
        ("crate::Clock", Some("lib.rs")),
        ("crate::clock::Clock", Some("clock.rs")),
        (
            "crate::commands::keys::flag::READ",
            Some("commands/keys.rs"),
        ),
        ("crate::commands::Handler", Some("commands/mod.rs")),
        ("crate::table", Some("table/mod.rs")),
        ("crate::table::keys", Some("table/keys.rs")),
        ("crate::table::keys::Begin", Some("table/keys.rs")),
        ("super::strings::string_of", Some("commands/strings.rs")),
        ("super::Command", Some("commands/mod.rs")),
        ("super::keys", Some("commands/keys.rs")),
        ("self::inner::x", Some("commands/keys.rs")),
        ("super::y", Some("commands/keys.rs")),
        ("crate::nowhere::z", Some("lib.rs")),
    ];
    assert_eq!(resolved(FILES, "commands/keys.rs", src), named(&expected));
    // Same-file uses are not uses of another file.
    let mut files: BTreeMap<String, String> = FILES
        .iter()
        .map(|f| (f.to_string(), String::new()))
        .collect();
    files.insert("commands/keys.rs".into(), src.into());
    let krate = Crate::new(files);
    let targets: BTreeSet<String> = krate
        .uses("commands/keys.rs")
        .into_iter()
        .map(|u| u.target)
        .collect();
    assert_eq!(
        targets.iter().map(String::as_str).collect::<Vec<_>>(),
        [
            "clock.rs",
            "commands/mod.rs",
            "commands/strings.rs",
            "lib.rs",
            "table/keys.rs",
            "table/mod.rs"
        ]
    );
    assert_eq!(module_of("table/mod.rs"), ["table"]);
    assert_eq!(module_of("commands/keys.rs"), ["commands", "keys"]);
    assert!(module_of("lib.rs").is_empty());
}

#[test]
fn bare_paths_into_child_modules_are_not_uses() {
    // A module using its own children (`keys::flag` in `commands/mod.rs`) is one unit with them,
    // not a circle between peers; only `crate::`, `self::` and `super::` paths are read.
    let src = "pub mod keys;\nuse keys::{flag, Begin};\npub use strings::COMMANDS as S;\n\
               static F: &[u8] = &[keys::N, ::keys::M];\n\
               fn f(x: X) { x.keys::<u8>(); $crate::a::b(); }";
    let expected = [("crate::a::b", Some("lib.rs"))];
    assert_eq!(resolved(FILES, "commands/mod.rs", src), named(&expected));
    assert!(resolved(FILES, "table/mod.rs", "use keys::Begin;").is_empty());
    assert!(resolved(FILES, "lib.rs", "pub use table::keys;").is_empty());
}

#[test]
fn a_files_layer_is_its_folder() {
    let layer = |file: &str| layer_of(file).map(|l| LAYERS[l]);
    assert_eq!(layer("commands/keys.rs"), Some("commands"));
    assert_eq!(layer("kernel/table/mod.rs"), Some("kernel"));
    assert_eq!(layer("io/net.rs"), Some("io"));
    assert_eq!(layer("lib.rs"), Some("io"));
    assert_eq!(layer("engine/run.rs"), Some("engine"));
    assert_eq!(layer("commands.rs"), None);
    assert_eq!(layer("nowhere.rs"), None);
    assert_eq!(layer("handlers/x.rs"), None);
}

#[test]
fn tarjan_finds_circles() {
    // 0 → 1 → 2 → 0, 3 → 0, 4 ⇄ 5.
    let edges = vec![vec![1], vec![2], vec![0], vec![0], vec![5], vec![4]];
    let mut components = strongly_connected(&edges);
    components.sort();
    assert_eq!(components, [vec![0, 1, 2], vec![3], vec![4, 5]]);
}

// ---------------------------------------------------------------------------------------------
// The size of what one reads at once

/// The longest a production function may be, in lines: one that does not fit a screen or two
/// is cut into steps (an options struct parsed in Redis's order, the work, the reply).
const MAX_FUNCTION_LINES: usize = 150;

/// The longest a production file may be, in lines before its `#[cfg(test)]` module: a longer
/// one is split along its sections into a folder.
const MAX_FILE_LINES: usize = 1500;

/// The lines of `src` before its first `#[cfg(test)]` module (unit tests sit at a file's end).
fn production_part(src: &str) -> &str {
    let code = code_only(src);
    let code_lines: Vec<&str> = code.lines().collect();
    // Blanking keeps lines but not byte offsets (a blanked `—` is one space): count lines.
    let cut = (0..code_lines.len()).find(|&k| {
        code_lines[k].trim() == "#[cfg(test)]"
            && code_lines.get(k + 1).is_some_and(|next| {
                let next = next.trim_start();
                next.starts_with("mod ") || next.starts_with("pub(crate) mod ")
            })
    });
    match cut {
        Some(line) => {
            let offset: usize = src.split_inclusive('\n').take(line).map(str::len).sum();
            &src[..offset]
        }
        None => src,
    }
}

/// Each function of `src`'s code with its first line (1-based) and length in lines.
fn functions(src: &str) -> Vec<(String, usize, usize)> {
    let code = code_only(src);
    let line_at = |offset: usize| code[..offset].matches('\n').count() + 1;
    let bytes = code.as_bytes();
    let mut found = Vec::new();
    let mut search = 0;
    while let Some(at) = code[search..].find("fn ").map(|k| k + search) {
        search = at + 3;
        let starts_word =
            at == 0 || !(bytes[at - 1].is_ascii_alphanumeric() || bytes[at - 1] == b'_');
        let name: String = code[at + 3..]
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        if !starts_word || name.is_empty() {
            continue;
        }
        // The body opens at the first `{` before any `;` (a declaration without body ends there).
        let Some(open) = code[at..].find(['{', ';']).map(|k| k + at) else {
            continue;
        };
        if bytes[open] == b';' {
            continue;
        }
        let mut depth = 0usize;
        let mut close = open;
        for (k, &b) in bytes.iter().enumerate().skip(open) {
            match b {
                b'{' => depth += 1,
                b'}' => {
                    depth -= 1;
                    if depth == 0 {
                        close = k;
                        break;
                    }
                }
                _ => {}
            }
        }
        let first = line_at(at);
        found.push((name, first, line_at(close) - first + 1));
    }
    found
}

#[test]
fn no_long_production_functions_or_files() {
    let mut long = Vec::new();
    for dir in CRATES {
        let krate = Crate::load(dir);
        for (file, src) in &krate.files {
            let production = production_part(src);
            let lines = production.lines().count();
            if lines > MAX_FILE_LINES {
                long.push(format!("{dir}/{file}: {lines} lines before its tests"));
            }
            for (name, line, length) in functions(production) {
                if length > MAX_FUNCTION_LINES {
                    long.push(format!("{dir}/{file}:{line}: fn {name} is {length} lines"));
                }
            }
        }
    }
    long.sort();
    long.dedup();
    assert!(
        long.is_empty(),
        "over {MAX_FUNCTION_LINES} lines a function or {MAX_FILE_LINES} a file:\n  {}",
        long.join("\n  ")
    );
}

#[test]
fn function_lengths_are_read_from_code() {
    let src = "fn a() {\n    let s = \"}\";\n}\n// fn b() {\nfn c(x: u8);\npub fn d<T>(t: T) where T: Copy {\n    if true { 1 } else { 2 };\n}\n";
    assert_eq!(
        functions(src),
        [("a".to_string(), 1, 3), ("d".to_string(), 6, 3)]
    );
    // A blanked comment with a character of several bytes must not shift the cut.
    let with_tests = "fn a() {} // — x\n#[cfg(test)]\nmod tests {\n    fn t() {}\n}\n";
    assert_eq!(production_part(with_tests), "fn a() {} // — x\n");
}

// ---------------------------------------------------------------------------------------------
// DEVELOPERS.md's drawing of the layers

/// The rows of DEVELOPERS.md's layer table (between its `layers:begin` and `layers:end`
/// markers): each folder with the names its files cell gives in backquotes.
fn documented_layers(doc: &str) -> Vec<(String, Vec<String>)> {
    let begin = doc
        .find("<!-- layers:begin -->")
        .expect("DEVELOPERS.md: layers:begin marker");
    let end = doc
        .find("<!-- layers:end -->")
        .expect("DEVELOPERS.md: layers:end marker");
    let quoted = |cell: &str| -> Vec<String> {
        cell.split('`')
            .skip(1)
            .step_by(2)
            .map(String::from)
            .collect()
    };
    doc[begin..end]
        .lines()
        .filter_map(|line| {
            let cells: Vec<&str> = line.split('|').map(str::trim).collect();
            let folder = quoted(cells.get(1)?).into_iter().next()?;
            let folder = folder.strip_suffix('/')?.to_string();
            Some((folder, quoted(cells.get(2)?)))
        })
        .collect()
}

#[test]
fn developers_md_draws_the_layer_folders_as_they_are() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let doc = std::fs::read_to_string(root.join("DEVELOPERS.md")).expect("DEVELOPERS.md");
    let rows = documented_layers(&doc);
    let folders: Vec<&str> = rows.iter().map(|(folder, _)| folder.as_str()).collect();
    assert_eq!(
        folders, LAYERS,
        "DEVELOPERS.md's layer table: one row per folder, lowest first"
    );
    let server = Crate::load("server/src");
    let mut wrong = Vec::new();
    for (folder, names) in &rows {
        let files: Vec<&String> = server
            .files
            .keys()
            .filter(|f| f.starts_with(&format!("{folder}/")))
            .collect();
        // Every module directly in the folder is named (a file's stem, or a subfolder as `x/`).
        for file in &files {
            let inside = &file[folder.len() + 1..];
            let module = match inside.split_once('/') {
                Some((sub, _)) => format!("{sub}/"),
                None => inside.trim_end_matches(".rs").to_string(),
            };
            let named = names
                .iter()
                .any(|n| *n == module || n.trim_end_matches('/') == module.trim_end_matches('/'));
            if module != "mod" && !named {
                wrong.push(format!("{folder}/: `{module}` is not in its row"));
            }
        }
        // Every name given is a module somewhere in the folder.
        for name in names {
            let name = name.trim_end_matches('/').trim_end_matches(".rs");
            let exists = files.iter().any(|f| {
                f.split('/')
                    .any(|part| part.trim_end_matches(".rs") == name)
            });
            if !exists {
                wrong.push(format!("{folder}/: `{name}` is in its row but not on disk"));
            }
        }
    }
    wrong.sort();
    wrong.dedup();
    assert!(
        wrong.is_empty(),
        "DEVELOPERS.md's layer table:\n  {}",
        wrong.join("\n  ")
    );
}
