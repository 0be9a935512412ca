//! The examples of docs/testing.md, run so that the guide cannot rot: every ```python block runs
//! with redis-py against a freshly spawned `embedis-server --port auto --enable-debug-command yes`,
//! which it finds through `EMBEDIS_PORT`. (The guide's Rust blocks are doctests of the embedis
//! crate: `cargo test --doc -p embedis`.)
//!
//! Needs a Python 3 with the `redis` package: `$EMBEDIS_PYTHON` if set, else `python3`. Without
//! it the test skips loudly; with `EMBEDIS_REQUIRE_REDIS=1` (CI) it fails instead.

use crate::support;

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

const GUIDE: &str = include_str!("../../docs/testing.md");

/// The contents of the guide's fenced blocks in `language`, in order.
fn blocks(markdown: &str, language: &str) -> Vec<String> {
    let opening = format!("```{language}");
    let mut found = Vec::new();
    let mut current: Option<String> = None;
    for line in markdown.lines() {
        match current.as_mut() {
            None if line.trim_end() == opening => current = Some(String::new()),
            None => {}
            Some(_) if line.trim_end() == "```" => found.extend(current.take()),
            Some(block) => {
                block.push_str(line);
                block.push('\n');
            }
        }
    }
    assert!(current.is_none(), "an unclosed ```{language} block");
    found
}

/// An `embedis-server` child process, killed on drop.
struct Binary {
    child: Child,
    port: u16,
}

impl Binary {
    /// Starts the binary as the guide says and reads the port it prints.
    fn start() -> Binary {
        let mut child = Command::new(env!("CARGO_BIN_EXE_embedis-server"))
            .current_dir(support::server_dir())
            .args([
                "--port",
                "auto",
                "--save",
                "",
                "--enable-debug-command",
                "yes",
            ])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn embedis-server");
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        let port = loop {
            line.clear();
            let read = stdout
                .read_line(&mut line)
                .expect("read the server's output");
            assert!(read > 0, "embedis-server exited before printing its port");
            if let Some(port) = line.trim().strip_prefix("port=") {
                break port.parse().expect("a port number");
            }
        };
        Binary { child, port }
    }
}

impl Drop for Binary {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn the_guide_has_python_and_rust_examples() {
    assert!(!blocks(GUIDE, "python").is_empty());
    assert!(blocks(GUIDE, "rust").len() >= 3);
    // An unlabelled block would be compiled as Rust by the doctests: every block names a language.
    let fences = GUIDE.lines().filter(|l| l.starts_with("```")).count();
    let labelled = ["rust", "python", "sh"]
        .iter()
        .map(|language| blocks(GUIDE, language).len())
        .sum::<usize>();
    assert_eq!(
        fences,
        2 * labelled,
        "a fenced block without a known language"
    );
}

#[test]
fn the_guides_python_examples_pass_against_embedis_server() {
    let Some(python) = support::python_with(&["redis"], "the guide's Python examples") else {
        return;
    };
    for (i, example) in blocks(GUIDE, "python").iter().enumerate() {
        // A fresh server per example: each starts from an empty keyspace and a running clock.
        let server = Binary::start();
        let output = Command::new(&python)
            .args(["-c", example])
            .env("EMBEDIS_PORT", server.port.to_string())
            .output()
            .expect("run python");
        assert!(
            output.status.success(),
            "Python example {i} of docs/testing.md failed:\n{}\n{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
    }
}
