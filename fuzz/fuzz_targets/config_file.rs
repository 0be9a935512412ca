//! Fuzzes the configuration-file parser (`Config::load_text`, what `embedis-server <file>`
//! and `--name value` arguments go through): any text must give a configuration or Redis's
//! error for the line, never a panic. What it accepts must read back: every parameter's value
//! as CONFIG GET shows it, written again as a file line, must load (CONFIG REWRITE relies on
//! that), and give the same value.
#![no_main]

use embedis_core::base::config::Config;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let mut config = Config::default();
    if config.load_text(text).is_err() {
        return;
    }
    let shown = config.matching(&[b"*"]);
    for (name, value) in &shown {
        // A value holding control characters (a `bind` address with a vertical tab in it) is
        // split differently by the two places that split words — the config-file line and the
        // parameter's own parser — in Redis too; such values are nobody's real configuration.
        if value.chars().any(|c| c.is_ascii_control()) {
            continue;
        }
        // Redis splits a multi-argument parameter's single word again, so a word of such a
        // value with a quote or backslash in it does not survive a round trip there either
        // (`bind "a\"b"` is unbalanced on the second split).
        let resplit = ["bind", "save", "replicaof", "client-output-buffer-limit"];
        if resplit.contains(&name.as_str()) && value.contains(['"', '\'', '\\']) {
            continue;
        }
        let mut again = config.clone();
        let line = format!("{name} {}\n", quote(value));
        if let Err(e) = again.load_text(&line) {
            panic!("{line:?} does not load back: {e:?}");
        }
        let reread = again.matching(&[name.as_bytes()]);
        let now = reread.iter().find(|(n, _)| n == name).map(|(_, v)| v);
        assert_eq!(now, Some(value), "{line:?} reads back differently");
    }
});

/// A value as one config-file word: quoted when it is empty or holds spaces or quotes.
fn quote(value: &str) -> String {
    let plain = |c: char| c.is_ascii_graphic() && !matches!(c, '"' | '\'' | '\\');
    if !value.is_empty() && value.chars().all(plain) {
        return value.to_string();
    }
    let mut out = String::from("\"");
    for c in value.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c.is_ascii_control() => out.push_str(&format!("\\x{:02x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}
