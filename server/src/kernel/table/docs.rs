//! Command documentation for COMMAND DOCS and COMMAND INFO, rendered from the table.
//!
//! Each table entry describes its arguments in a compact syntax, close to how Redis's own
//! documentation prints a command's usage:
//!
//! ```text
//! key value condition=[NX|XX] [GET] expiration=[EX seconds:integer|PX milliseconds:integer|KEEPTTL]
//! ```
//!
//! - a lower-case word is an argument: `name` (a string, or a key if the word is `key`), or
//!   `name:type` with type `key`, `string`, `integer`, `double`, `pattern`, `unix-time`;
//! - an upper-case word is a token: alone it is a pure token (`GET`); followed by an argument it
//!   introduces that argument (`EX seconds:integer`);
//! - `[…]` is optional, `(…)` groups; alternatives separated by `|` form a one-of; several items
//!   in a group form a block; `name=` before a group names it;
//! - `...` after an item means it may repeat; `...+` that it repeats with its token
//!   (`multiple_token`: `CONFIG name value CONFIG name value`);
//! - `@version` after an argument is the version that added it (COMMAND DOCS's per-argument
//!   `since`): `IFEQ ifeq-value@8.4.0`. Only arguments newer than the command carry one.
//!
//! redis-cli builds its command hints from COMMAND DOCS, so the structure matters even though
//! the summaries are our own words.

use embedis_protocol::Writer;

use super::keys::{flag, Begin, Find};
use super::{Command, Flags, Registry};

/// An argument's type, as COMMAND DOCS names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArgType {
    String,
    Integer,
    Double,
    Key,
    Pattern,
    UnixTime,
    PureToken,
    Oneof,
    Block,
}

impl ArgType {
    fn name(self) -> &'static str {
        match self {
            ArgType::String => "string",
            ArgType::Integer => "integer",
            ArgType::Double => "double",
            ArgType::Key => "key",
            ArgType::Pattern => "pattern",
            ArgType::UnixTime => "unix-time",
            ArgType::PureToken => "pure-token",
            ArgType::Oneof => "oneof",
            ArgType::Block => "block",
        }
    }
}

/// One documented argument.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Arg {
    pub name: String,
    pub kind: ArgType,
    pub token: Option<String>,
    pub optional: bool,
    pub multiple: bool,
    /// Each repetition repeats the token too (`[CONFIG name value [CONFIG name value ...]]`).
    pub multiple_token: bool,
    pub key_spec_index: Option<usize>,
    /// The version that added the argument, when newer than the command.
    pub since: Option<String>,
    pub children: Vec<Arg>,
}

impl Arg {
    fn leaf(name: &str, kind: ArgType) -> Arg {
        Arg {
            name: name.to_string(),
            kind,
            token: None,
            optional: false,
            multiple: false,
            multiple_token: false,
            key_spec_index: None,
            since: None,
            children: Vec::new(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Tok {
    Open(char),
    Close(char),
    Bar,
    Ellipsis,
    /// `...+`: repeats with its token.
    EllipsisToken,
    Named(String),
    Word(String),
}

fn tokenize(syntax: &str) -> Vec<Tok> {
    let mut out = Vec::new();
    let mut chars = syntax.chars().peekable();
    let mut word = String::new();
    // `name=word` at the start of a group names that group: `[condition=NX|XX]`.
    let flush = |word: &mut String, out: &mut Vec<Tok>| {
        if word.is_empty() {
            return;
        }
        let text = std::mem::take(word);
        match text.split_once('=') {
            Some((name, rest)) if !name.is_empty() && !rest.is_empty() => {
                out.push(Tok::Named(name.to_string()));
                out.push(Tok::Word(rest.to_string()));
            }
            _ => out.push(Tok::Word(text)),
        }
    };
    while let Some(c) = chars.next() {
        match c {
            '[' | '(' => {
                if let Some(name) = word.strip_suffix('=') {
                    out.push(Tok::Named(name.to_string()));
                    word.clear();
                } else {
                    flush(&mut word, &mut out);
                }
                out.push(Tok::Open(c));
            }
            ']' | ')' => {
                flush(&mut word, &mut out);
                out.push(Tok::Close(c));
            }
            '|' => {
                flush(&mut word, &mut out);
                out.push(Tok::Bar);
            }
            '.' if chars.peek() == Some(&'.') => {
                chars.next();
                chars.next();
                flush(&mut word, &mut out);
                if chars.peek() == Some(&'+') {
                    chars.next();
                    out.push(Tok::EllipsisToken);
                } else {
                    out.push(Tok::Ellipsis);
                }
            }
            c if c.is_whitespace() => flush(&mut word, &mut out),
            c => word.push(c),
        }
    }
    flush(&mut word, &mut out);
    out
}

fn is_token(word: &str) -> bool {
    // A version suffix (`REPLACE@3.0.0`) is not part of the word.
    let word = word.split_once('@').map_or(word, |(w, _)| w);
    // The symbols some commands take as literal words (XADD's `*`, `=`, `~`; XGROUP's `$`).
    if matches!(word, "*" | "$" | "=" | "~") {
        return true;
    }
    word.chars().any(|c| c.is_ascii_uppercase())
        && word
            .chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '-' || c == '_')
}

struct Parser {
    toks: Vec<Tok>,
    pos: usize,
}

impl Parser {
    fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.pos)
    }

    fn next(&mut self) -> Option<Tok> {
        let t = self.toks.get(self.pos).cloned();
        self.pos += 1;
        t
    }

    /// alternatives := sequence ('|' sequence)*
    fn alternatives(&mut self) -> Result<Vec<Vec<Arg>>, String> {
        let mut alts = vec![self.sequence()?];
        while self.peek() == Some(&Tok::Bar) {
            self.next();
            alts.push(self.sequence()?);
        }
        Ok(alts)
    }

    /// sequence := item*
    fn sequence(&mut self) -> Result<Vec<Arg>, String> {
        let mut items: Vec<Arg> = Vec::new();
        let mut pending_token: Option<String> = None;
        loop {
            match self.peek() {
                None | Some(Tok::Close(_)) | Some(Tok::Bar) => break,
                Some(Tok::Ellipsis) => {
                    self.next();
                    let last = items.last_mut().ok_or("'...' with nothing before it")?;
                    last.multiple = true;
                }
                Some(Tok::EllipsisToken) => {
                    self.next();
                    let last = items.last_mut().ok_or("'...+' with nothing before it")?;
                    last.multiple = true;
                    last.multiple_token = true;
                }
                Some(Tok::Word(w)) if is_token(w) => {
                    let w = w.clone();
                    self.next();
                    if let Some(t) = pending_token.replace(w) {
                        items.push(pure_token(&t));
                    }
                }
                _ => {
                    let mut item = self.item()?;
                    if let Some(token) = pending_token.take() {
                        if item.token.is_none() {
                            item.token = Some(token);
                        } else {
                            items.push(pure_token(&token));
                        }
                    }
                    items.push(item);
                }
            }
            // A token directly before '...' or the end of the sequence is a pure token.
            if let Some(t) = &pending_token {
                if !matches!(self.peek(), Some(Tok::Word(w)) if !is_token(w))
                    && !matches!(self.peek(), Some(Tok::Open(_)) | Some(Tok::Named(_)))
                {
                    items.push(pure_token(t));
                    pending_token = None;
                }
            }
        }
        if let Some(t) = pending_token {
            items.push(pure_token(&t));
        }
        Ok(items)
    }

    /// item := word | name? ('[' alternatives ']' | '(' alternatives ')')
    fn item(&mut self) -> Result<Arg, String> {
        let name = match self.peek() {
            Some(Tok::Named(n)) => {
                let n = n.clone();
                self.next();
                Some(n)
            }
            _ => None,
        };
        match self.next() {
            Some(Tok::Word(w)) => Ok(argument(&w)),
            Some(Tok::Open(open)) => {
                // `[name=first …]`: a name at the start of the group (not followed by a group
                // of its own) names this group.
                let mut name = name;
                if let (Some(Tok::Named(n)), Some(Tok::Word(_))) =
                    (self.toks.get(self.pos), self.toks.get(self.pos + 1))
                {
                    name = Some(n.clone());
                    self.pos += 1;
                }
                let alts = self.alternatives()?;
                let close = if open == '[' { ']' } else { ')' };
                if self.next() != Some(Tok::Close(close)) {
                    return Err(format!("expected '{close}'"));
                }
                let mut arg = group(alts, name)?;
                arg.optional |= open == '[';
                Ok(arg)
            }
            other => Err(format!("unexpected {other:?}")),
        }
    }
}

fn pure_token(token: &str) -> Arg {
    let (token, since) = match token.split_once('@') {
        Some((token, since)) if !since.is_empty() => (token, Some(since)),
        _ => (token, None),
    };
    let mut arg = pure_token_named(token);
    arg.since = since.map(str::to_string);
    arg
}

fn pure_token_named(token: &str) -> Arg {
    // Symbol tokens have names of their own in Redis's docs.
    let name = match token {
        "=" => "equal".to_string(),
        "~" => "approximately".to_string(),
        "*" => "auto_id".to_string(),
        "$" => "new_id".to_string(),
        _ => token.to_ascii_lowercase(),
    };
    let mut arg = Arg::leaf(&name, ArgType::PureToken);
    arg.token = Some(token.to_string());
    arg
}

fn argument(word: &str) -> Arg {
    let (word, since) = match word.rsplit_once('@') {
        Some((word, since)) if !since.is_empty() => (word, Some(since)),
        _ => (word, None),
    };
    let typed = word.rsplit_once(':').and_then(|(name, kind)| {
        let kind = match kind {
            "key" => ArgType::Key,
            "string" => ArgType::String,
            "integer" => ArgType::Integer,
            "double" => ArgType::Double,
            "pattern" => ArgType::Pattern,
            "unix-time" => ArgType::UnixTime,
            // Not a type: the colon is part of the name (`ip:port`).
            _ => return None,
        };
        Some((name, kind))
    });
    let (name, kind) = match typed {
        Some(typed) => typed,
        None if word == "key" => (word, ArgType::Key),
        None => (word, ArgType::String),
    };
    let mut arg = Arg::leaf(name, kind);
    arg.since = since.map(str::to_string);
    arg
}

fn block(mut items: Vec<Arg>, name: Option<String>) -> Arg {
    if items.len() == 1 && name.is_none() {
        return items.pop().expect("one item");
    }
    let name = name.unwrap_or_else(|| {
        items
            .iter()
            .map(|a| a.name.as_str())
            .collect::<Vec<_>>()
            .join("-")
    });
    let mut arg = Arg::leaf(&name, ArgType::Block);
    arg.children = items;
    arg
}

fn group(alts: Vec<Vec<Arg>>, name: Option<String>) -> Result<Arg, String> {
    if alts.iter().any(Vec::is_empty) {
        return Err("empty group".into());
    }
    if alts.len() == 1 {
        let items = alts.into_iter().next().expect("one alternative");
        return Ok(block(items, name));
    }
    let children: Vec<Arg> = alts.into_iter().map(|items| block(items, None)).collect();
    let name = name.unwrap_or_else(|| {
        children
            .iter()
            .map(|a| a.name.as_str())
            .collect::<Vec<_>>()
            .join("-")
    });
    let mut arg = Arg::leaf(&name, ArgType::Oneof);
    arg.children = children;
    Ok(arg)
}

/// Parses an argument syntax string; key arguments are numbered in order of appearance, capped
/// at the last key spec.
pub fn parse(syntax: &str, key_specs: usize) -> Result<Vec<Arg>, String> {
    let mut parser = Parser {
        toks: tokenize(syntax),
        pos: 0,
    };
    let args = parser.sequence()?;
    if parser.pos < parser.toks.len() {
        return Err(format!(
            "unexpected {:?} in {syntax:?}",
            parser.toks[parser.pos]
        ));
    }
    let mut args = args;
    let mut next_key = 0;
    number_keys(&mut args, &mut next_key, key_specs);
    Ok(args)
}

fn number_keys(args: &mut [Arg], next: &mut usize, key_specs: usize) {
    for arg in args {
        if arg.kind == ArgType::Key && key_specs > 0 {
            arg.key_spec_index = Some((*next).min(key_specs - 1));
            *next += 1;
        }
        number_keys(&mut arg.children, next, key_specs);
    }
}

fn write_arg(w: &mut Writer<'_>, arg: &Arg) {
    let mut fields = 2;
    fields += arg.key_spec_index.is_some() as usize;
    fields += arg.token.is_some() as usize;
    fields += arg.since.is_some() as usize;
    fields += (arg.optional || arg.multiple || arg.multiple_token) as usize;
    fields += !arg.children.is_empty() as usize;
    w.map(fields);
    w.bulk(b"name");
    w.bulk(arg.name.as_bytes());
    w.bulk(b"type");
    w.bulk(arg.kind.name().as_bytes());
    if let Some(index) = arg.key_spec_index {
        w.bulk(b"key_spec_index");
        w.integer(index as i64);
    }
    if let Some(token) = &arg.token {
        w.bulk(b"token");
        w.bulk(token.as_bytes());
    }
    // Redis's field order: token, then since, then flags.
    if let Some(since) = &arg.since {
        w.bulk(b"since");
        w.bulk(since.as_bytes());
    }
    if arg.optional || arg.multiple || arg.multiple_token {
        w.bulk(b"flags");
        let flags: Vec<&str> = [
            (arg.optional, "optional"),
            (arg.multiple, "multiple"),
            (arg.multiple_token, "multiple_token"),
        ]
        .iter()
        .filter(|(on, _)| *on)
        .map(|(_, n)| *n)
        .collect();
        w.set(flags.len());
        for f in flags {
            w.simple(f.as_bytes());
        }
    }
    if !arg.children.is_empty() {
        w.bulk(b"arguments");
        w.array(arg.children.len());
        for child in &arg.children {
            write_arg(w, child);
        }
    }
}

/// Writes one COMMAND DOCS value (the map for `command`, subcommands included).
pub fn write_docs(w: &mut Writer<'_>, registry: &Registry, command: &Command) {
    let spec = command.spec;
    if !spec.module.is_empty() {
        // A module command whose module gives no documentation (the vector set commands):
        // Redis's `addReplyCommandDocs` knows only its group and its module.
        w.map(2);
        w.bulk(b"group");
        w.bulk(spec.group.as_bytes());
        w.bulk(b"module");
        w.bulk(spec.module.as_bytes());
        return;
    }
    let args = parse(spec.syntax, spec.keys.len()).unwrap_or_default();
    let subs: Vec<&Command> = registry.subcommands_of(command).collect();
    let mut fields = 3;
    fields += !spec.complexity.is_empty() as usize;
    fields += !args.is_empty() as usize;
    fields += !subs.is_empty() as usize;
    w.map(fields);
    w.bulk(b"summary");
    w.bulk(spec.summary.as_bytes());
    w.bulk(b"since");
    w.bulk(spec.since.as_bytes());
    w.bulk(b"group");
    w.bulk(spec.group.as_bytes());
    if !spec.complexity.is_empty() {
        w.bulk(b"complexity");
        w.bulk(spec.complexity.as_bytes());
    }
    if !args.is_empty() {
        w.bulk(b"arguments");
        w.array(args.len());
        for arg in &args {
            write_arg(w, arg);
        }
    }
    if !subs.is_empty() {
        w.bulk(b"subcommands");
        w.map(subs.len());
        for sub in subs {
            w.bulk(sub.full_name.as_bytes());
            write_docs(w, registry, sub);
        }
    }
}

/// Writes one COMMAND INFO entry (the 10-element array), subcommands included.
pub fn write_info(w: &mut Writer<'_>, registry: &Registry, command: &Command) {
    let spec = command.spec;
    w.array(10);
    w.bulk(command.full_name.as_bytes());
    w.integer(spec.arity as i64);
    let flags: Vec<&str> = Flags::NAMES
        .iter()
        .filter(|(f, _)| command.flags.contains(*f))
        .map(|(_, n)| *n)
        .collect();
    w.set(flags.len());
    for f in flags {
        w.simple(f.as_bytes());
    }
    let (first, last, step) = command.legacy_range;
    w.integer(first as i64);
    w.integer(last as i64);
    w.integer(step as i64);
    let categories: Vec<&str> = command.acl.names().collect();
    w.set(categories.len());
    for c in categories {
        w.simple(format!("@{c}").as_bytes());
    }
    w.set(spec.tips.len());
    for tip in spec.tips {
        w.bulk(tip.as_bytes());
    }
    w.set(spec.keys.len());
    for key in spec.keys {
        w.map(if key.notes.is_empty() { 3 } else { 4 });
        if !key.notes.is_empty() {
            w.bulk(b"notes");
            w.bulk(key.notes.as_bytes());
        }
        w.bulk(b"flags");
        let names: Vec<&str> = flag::NAMES
            .iter()
            .filter(|(f, _)| key.flags & f != 0)
            .map(|(_, n)| *n)
            .collect();
        w.set(names.len());
        for n in names {
            w.simple(n.as_bytes());
        }
        w.bulk(b"begin_search");
        w.map(2);
        w.bulk(b"type");
        match key.begin {
            Begin::Index(index) => {
                w.bulk(b"index");
                w.bulk(b"spec");
                w.map(1);
                w.bulk(b"index");
                w.integer(index as i64);
            }
            Begin::Keyword {
                keyword,
                start_from,
            } => {
                w.bulk(b"keyword");
                w.bulk(b"spec");
                w.map(2);
                w.bulk(b"keyword");
                w.bulk(keyword.as_bytes());
                w.bulk(b"startfrom");
                w.integer(start_from as i64);
            }
            Begin::Unknown => {
                w.bulk(b"unknown");
                w.bulk(b"spec");
                w.map(0);
            }
        }
        w.bulk(b"find_keys");
        w.map(2);
        w.bulk(b"type");
        match key.find {
            Find::Range {
                last_key,
                step,
                limit,
            } => {
                w.bulk(b"range");
                w.bulk(b"spec");
                w.map(3);
                w.bulk(b"lastkey");
                w.integer(last_key as i64);
                w.bulk(b"keystep");
                w.integer(step as i64);
                w.bulk(b"limit");
                w.integer(limit as i64);
            }
            Find::Keynum {
                count_index,
                first_key,
                step,
            } => {
                w.bulk(b"keynum");
                w.bulk(b"spec");
                w.map(3);
                w.bulk(b"keynumidx");
                w.integer(count_index as i64);
                w.bulk(b"firstkey");
                w.integer(first_key as i64);
                w.bulk(b"keystep");
                w.integer(step as i64);
            }
            Find::Unknown => {
                w.bulk(b"unknown");
                w.bulk(b"spec");
                w.map(0);
            }
        }
    }
    let subs: Vec<&Command> = registry.subcommands_of(command).collect();
    if subs.is_empty() {
        w.set(0);
    } else {
        w.array(subs.len());
        for sub in subs {
            write_info(w, registry, sub);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_set_syntax() {
        let args = parse(
            "key value condition=[NX|XX] [GET] expiration=[EX seconds:integer|PX milliseconds:integer|KEEPTTL]",
            1,
        )
        .unwrap();
        assert_eq!(args.len(), 5);
        assert_eq!(args[0].kind, ArgType::Key);
        assert_eq!(args[0].key_spec_index, Some(0));
        assert_eq!(args[1].kind, ArgType::String);
        assert_eq!(args[2].name, "condition");
        assert_eq!(args[2].kind, ArgType::Oneof);
        assert!(args[2].optional);
        assert_eq!(args[2].children[0].token.as_deref(), Some("NX"));
        assert_eq!(args[3].kind, ArgType::PureToken);
        assert!(args[3].optional);
        let expiration = &args[4];
        assert_eq!(expiration.children[0].name, "seconds");
        assert_eq!(expiration.children[0].token.as_deref(), Some("EX"));
        assert_eq!(expiration.children[0].kind, ArgType::Integer);
        assert_eq!(expiration.children[2].kind, ArgType::PureToken);
    }

    #[test]
    fn repetition_and_blocks() {
        let args = parse("key... ", 1).unwrap();
        assert!(args[0].multiple);
        let args = parse("data=(key value)...", 1).unwrap();
        assert_eq!(args[0].kind, ArgType::Block);
        assert!(args[0].multiple);
        assert_eq!(args[0].children.len(), 2);
        let args = parse(
            "cursor:integer [MATCH pattern:pattern] [COUNT count:integer] [TYPE type]",
            0,
        )
        .unwrap();
        assert_eq!(args[1].token.as_deref(), Some("MATCH"));
        assert_eq!(args[3].token.as_deref(), Some("TYPE"));
        assert!(parse("[a", 0).is_err());
    }

    #[test]
    fn argument_since() {
        let args = parse("key [NX|IFEQ ifeq-value@8.4.0] [count:integer@6.2.0]", 1).unwrap();
        let condition = &args[1];
        assert_eq!(condition.children[0].since, None);
        assert_eq!(condition.children[1].name, "ifeq-value");
        assert_eq!(condition.children[1].token.as_deref(), Some("IFEQ"));
        assert_eq!(condition.children[1].since.as_deref(), Some("8.4.0"));
        assert_eq!(args[2].name, "count");
        assert_eq!(args[2].kind, ArgType::Integer);
        assert_eq!(args[2].since.as_deref(), Some("6.2.0"));
    }
}
