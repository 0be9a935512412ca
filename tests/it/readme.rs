//! The README's list of supported commands is generated from the command table; this test fails
//! when they differ. Run with EMBEDIS_UPDATE_README=1 to rewrite the list.

use std::collections::BTreeMap;

const BEGIN: &str =
    "<!-- commands:begin (generated from the command table by tests/it/readme.rs) -->";
const END: &str = "<!-- commands:end -->";

fn generated_list() -> String {
    let registry = embedis_core::commands::registry();
    let mut by_group: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for command in registry.top_level() {
        let name = command.spec.name.to_ascii_uppercase();
        let subs: Vec<String> = registry
            .subcommands_of(command)
            .map(|s| format!("{name} {}", s.spec.name.to_ascii_uppercase()))
            .collect();
        let entries = by_group.entry(command.spec.group).or_default();
        if subs.is_empty() {
            entries.push(name);
        } else {
            entries.extend(subs);
        }
    }
    let total: usize = by_group.values().map(Vec::len).sum();
    let mut out = format!("{BEGIN}\n{total} commands and subcommands:\n\n");
    for (group, mut names) in by_group {
        names.sort();
        out.push_str(&format!("- **{group}**: {}\n", names.join(", ")));
    }
    out.push_str(END);
    out
}

#[test]
fn readme_lists_exactly_the_commands_in_the_table() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md");
    let readme = std::fs::read_to_string(&path).expect("README.md exists");
    let expected = generated_list();
    let (Some(start), Some(end)) = (readme.find(BEGIN), readme.find(END)) else {
        panic!("README.md has no generated command list; add:\n{expected}");
    };
    let current = &readme[start..end + END.len()];
    if current != expected {
        if std::env::var("EMBEDIS_UPDATE_README").is_ok_and(|v| v == "1") {
            let updated = format!(
                "{}{}{}",
                &readme[..start],
                expected,
                &readme[end + END.len()..]
            );
            std::fs::write(&path, updated).unwrap();
            return;
        }
        panic!(
            "README.md's command list differs from the command table; run\n  EMBEDIS_UPDATE_README=1 cargo test --test it readme\nexpected:\n{expected}"
        );
    }
}
