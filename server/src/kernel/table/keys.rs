//! Key specifications: where a command's keys are among its arguments, in Redis 7's form.
//!
//! A key spec says where to start looking (`begin_search`: a fixed index, or after a keyword) and
//! how to find the keys from there (`find_keys`: a range, or a count read from an argument), plus
//! flags describing the access (RO/RW/OW/RM, access/update/insert/delete). COMMAND INFO shows
//! them, COMMAND GETKEYS applies them, and Redis's older first/last/step triple is derived from
//! them with Redis's rules (`populateCommandLegacyRangeSpec`).

use bytes::Bytes;
use std::iter::StepBy;
use std::ops::Range;

/// Key spec flags, named as COMMAND INFO names them.
pub mod flag {
    pub const RO: u16 = 1 << 0;
    pub const RW: u16 = 1 << 1;
    pub const OW: u16 = 1 << 2;
    pub const RM: u16 = 1 << 3;
    pub const ACCESS: u16 = 1 << 4;
    pub const UPDATE: u16 = 1 << 5;
    pub const INSERT: u16 = 1 << 6;
    pub const DELETE: u16 = 1 << 7;
    pub const NOT_KEY: u16 = 1 << 8;
    pub const INCOMPLETE: u16 = 1 << 9;
    pub const VARIABLE_FLAGS: u16 = 1 << 10;

    pub const NAMES: &[(u16, &str)] = &[
        (RO, "RO"),
        (RW, "RW"),
        (OW, "OW"),
        (RM, "RM"),
        (ACCESS, "access"),
        (UPDATE, "update"),
        (INSERT, "insert"),
        (DELETE, "delete"),
        (NOT_KEY, "not_key"),
        (INCOMPLETE, "incomplete"),
        (VARIABLE_FLAGS, "variable_flags"),
    ];
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Begin {
    /// The first key is at this argument index.
    Index(i32),
    /// The first key follows this keyword, searched from `start_from` (negative: from the end).
    Keyword {
        keyword: &'static str,
        start_from: i32,
    },
    /// Redis's `unknown`: the keys cannot be found from the arguments' positions alone (SORT's
    /// BY/GET patterns and its STORE, which may appear anywhere); the command's own key
    /// finder ([`super::CommandSpec::keys_fn`]) answers COMMAND GETKEYS instead.
    Unknown,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Find {
    /// Keys from the start to `last_key` (relative to the start; -1 = the last argument),
    /// every `step` arguments; `limit` > 1 limits to 1/limit of the remaining arguments.
    Range {
        last_key: i32,
        step: i32,
        limit: i32,
    },
    /// The argument at `count_index` (relative to the start) holds the number of keys, which
    /// begin at `first_key` (relative), every `step`.
    Keynum {
        count_index: i32,
        first_key: i32,
        step: i32,
    },
    /// Redis's `unknown` (see [`Begin::Unknown`]).
    Unknown,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeySpec {
    pub flags: u16,
    pub begin: Begin,
    pub find: Find,
    pub notes: &'static str,
}

impl KeySpec {
    /// The one key at `index`.
    pub const fn single(index: i32, flags: u16) -> Self {
        KeySpec {
            flags,
            begin: Begin::Index(index),
            find: Find::Range {
                last_key: 0,
                step: 1,
                limit: 0,
            },
            notes: "",
        }
    }

    /// Keys from `index` to `last_key` (relative; -1 = last argument) every `step`.
    pub const fn range(index: i32, last_key: i32, step: i32, flags: u16) -> Self {
        KeySpec {
            flags,
            begin: Begin::Index(index),
            find: Find::Range {
                last_key,
                step,
                limit: 0,
            },
            notes: "",
        }
    }

    /// The one key after `keyword`, searched for from argument `start_from` (GEORADIUS's STORE).
    pub const fn after_keyword(keyword: &'static str, start_from: i32, flags: u16) -> Self {
        KeySpec {
            flags,
            begin: Begin::Keyword {
                keyword,
                start_from,
            },
            find: Find::Range {
                last_key: 0,
                step: 1,
                limit: 0,
            },
            notes: "",
        }
    }

    /// A spec whose keys only the command's own key finder can locate (Redis's `unknown`
    /// begin_search and find_keys).
    pub const fn unknown(flags: u16) -> Self {
        KeySpec {
            flags,
            begin: Begin::Unknown,
            find: Find::Unknown,
            notes: "",
        }
    }

    pub const fn notes(mut self, notes: &'static str) -> Self {
        self.notes = notes;
        self
    }

    /// Positions (argument indexes) of the keys in `args` (name included at 0).
    pub fn key_positions(&self, args: &[Bytes]) -> Vec<usize> {
        self.search(args, false).unwrap_or_default()
    }

    /// As [`KeySpec::key_positions`], but `None` where Redis's key-spec search finds the line
    /// malformed (its `invalid_spec`): a keynum count that is missing, not a number or negative,
    /// or a first or last key outside the line (so also a count of zero). COMMAND GETKEYS then
    /// reports no keys at all rather than the ones that fit.
    pub fn strict_key_positions(&self, args: &[Bytes]) -> Option<Vec<usize>> {
        self.search(args, true)
    }

    /// The positions of the keys, as the arithmetic progression every spec describes (no
    /// allocation: the ACL check walks them on every request of a restricted user).
    pub fn positions(&self, args: &[Bytes], strict: bool) -> Option<StepBy<Range<usize>>> {
        let none = || (0..0).step_by(1);
        let argc = args.len() as i64;
        let start = match self.begin {
            Begin::Index(i) => i as i64,
            Begin::Keyword {
                keyword,
                start_from,
            } => {
                let found = if start_from >= 0 {
                    (start_from as i64..argc)
                        .find(|&i| args[i as usize].eq_ignore_ascii_case(keyword.as_bytes()))
                } else {
                    let from = argc + start_from as i64;
                    (1..=from)
                        .rev()
                        .find(|&i| args[i as usize].eq_ignore_ascii_case(keyword.as_bytes()))
                };
                match found {
                    Some(i) => i + 1,
                    // An optional keyword absent: this spec finds nothing, which is fine.
                    None => return Some(none()),
                }
            }
            // Positions say nothing here; the command's key finder knows (and callers that
            // only need the declared keys, like the tracking of reads, do without these).
            Begin::Unknown => return Some(none()),
        };
        if start >= argc {
            return if strict { None } else { Some(none()) };
        }
        match self.find {
            Find::Unknown => Some(none()),
            Find::Range {
                last_key,
                step,
                limit,
            } => {
                let last = if last_key >= 0 {
                    start + last_key as i64
                } else if limit <= 1 {
                    argc + last_key as i64
                } else {
                    start + (argc - start) / limit as i64 + last_key as i64
                };
                if strict && (last >= argc || last < start) {
                    return None;
                }
                let last = last.min(argc - 1);
                if last < start {
                    return Some(none());
                }
                Some((start as usize..last as usize + 1).step_by(step.max(1) as usize))
            }
            Find::Keynum {
                count_index,
                first_key,
                step,
            } => {
                let count_at = start + count_index as i64;
                let Some(count) = args
                    .get(count_at as usize)
                    .and_then(|a| embedis_protocol::number::parse_i64(a))
                else {
                    return if strict { None } else { Some(none()) };
                };
                let first = start + first_key as i64;
                if strict && (count <= 0 || first + count > argc) {
                    return None;
                }
                if count <= 0 || first >= argc {
                    return Some(none());
                }
                let step = step.max(1) as i64;
                // The last of `count` positions, or the last argument if the line is short.
                let last = (first + (count - 1).saturating_mul(step)).min(argc - 1);
                Some((first as usize..last as usize + 1).step_by(step as usize))
            }
        }
    }

    fn search(&self, args: &[Bytes], strict: bool) -> Option<Vec<usize>> {
        self.positions(args, strict).map(Iterator::collect)
    }
}

/// Redis's legacy (first, last, step) derived from key specs, and whether the keys are "movable"
/// (not describable by that triple).
pub fn legacy_range(specs: &[KeySpec]) -> ((i32, i32, i32), bool) {
    if specs.is_empty() {
        return ((0, 0, 0), false);
    }
    if let [KeySpec {
        begin: Begin::Index(pos),
        find: Find::Range { last_key, step, .. },
        flags,
        ..
    }] = specs
    {
        let last = if *last_key >= 0 {
            pos + last_key
        } else {
            *last_key
        };
        return ((*pos, last, *step), flags & flag::INCOMPLETE != 0);
    }
    let mut movable = false;
    let mut first = i32::MAX;
    let mut last: i32 = 0;
    let mut previous_last: i32 = 0;
    for spec in specs {
        let (Begin::Index(pos), Find::Range { last_key, step, .. }) = (spec.begin, spec.find)
        else {
            movable = true;
            continue;
        };
        if step != 1 || (previous_last != 0 && previous_last != pos - 1) {
            movable = true;
            continue;
        }
        if spec.flags & flag::INCOMPLETE != 0 {
            movable = true;
        }
        first = first.min(pos);
        let absolute = if last_key >= 0 {
            last_key + pos
        } else {
            last_key
        };
        // Redis compares as unsigned so that -1 ("to the end") wins.
        last = if (absolute as u32) > (last as u32) {
            absolute
        } else {
            last
        };
        previous_last = last;
    }
    if first == i32::MAX {
        return ((0, 0, 0), true);
    }
    ((first, last, 1), movable)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Vec<Bytes> {
        s.split(' ')
            .map(|w| Bytes::copy_from_slice(w.as_bytes()))
            .collect()
    }

    #[test]
    fn positions() {
        assert_eq!(
            KeySpec::single(1, flag::RO).key_positions(&args("GET k")),
            vec![1]
        );
        assert_eq!(
            KeySpec::range(1, -1, 2, flag::OW).key_positions(&args("MSET a 1 b 2")),
            vec![1, 3]
        );
        assert_eq!(
            KeySpec::range(1, -1, 1, flag::RM).key_positions(&args("DEL a b c")),
            vec![1, 2, 3]
        );
        let keynum = KeySpec {
            flags: flag::RO,
            begin: Begin::Index(2),
            find: Find::Keynum {
                count_index: 0,
                first_key: 1,
                step: 1,
            },
            notes: "",
        };
        assert_eq!(keynum.key_positions(&args("EVAL s 2 a b c")), vec![3, 4]);
        // The strict search (COMMAND GETKEYS) refuses what Redis's key specs call invalid;
        // the lenient one keeps the keys that fit.
        assert_eq!(
            keynum.strict_key_positions(&args("EVAL s 2 a b c")),
            Some(vec![3, 4])
        );
        assert_eq!(keynum.key_positions(&args("EVAL s 3 a b")), vec![3, 4]);
        assert_eq!(keynum.strict_key_positions(&args("EVAL s 3 a b")), None);
        assert_eq!(keynum.strict_key_positions(&args("EVAL s 0")), None);
        assert_eq!(keynum.strict_key_positions(&args("EVAL s -1 a")), None);
        assert_eq!(keynum.strict_key_positions(&args("EVAL s x a")), None);
        assert_eq!(
            KeySpec::single(1, flag::RO).strict_key_positions(&args("GET k")),
            Some(vec![1])
        );
    }

    #[test]
    fn legacy() {
        assert_eq!(
            legacy_range(&[KeySpec::single(1, flag::RO)]),
            ((1, 1, 1), false)
        );
        assert_eq!(
            legacy_range(&[KeySpec::range(1, -1, 2, flag::OW)]),
            ((1, -1, 2), false)
        );
        assert_eq!(
            legacy_range(&[KeySpec::single(1, flag::RW), KeySpec::single(2, flag::OW)]),
            ((1, 2, 1), false)
        );
        assert_eq!(legacy_range(&[]), ((0, 0, 0), false));
    }
}
