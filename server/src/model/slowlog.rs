//! The slow log: the last `slowlog-max-len` commands that ran for at least
//! `slowlog-log-slower-than` microseconds, newest first, as SLOWLOG GET shows them.
//!
//! An entry keeps what Redis's `slowlogCreateEntry` keeps: a growing id, the UNIX time, the run
//! time, the arguments — at most 32 (the last replaced by `... (N more arguments)`), each at
//! most 128 bytes (then `... (N more bytes)`), passwords already replaced by `(redacted)` —
//! and the client's address and name. `call` decides what is logged (see `crate::kernel::call`).

use bytes::Bytes;
use std::collections::VecDeque;

/// Most arguments an entry keeps (Redis's `SLOWLOG_ENTRY_MAX_ARGC`).
const MAX_ARGC: usize = 32;
/// Most bytes of one argument an entry keeps (Redis's `SLOWLOG_ENTRY_MAX_STRING`).
const MAX_STRING: usize = 128;

/// One logged command.
#[derive(Debug, Clone)]
pub struct Entry {
    pub id: u64,
    /// UNIX time (s) when it was logged.
    pub time: i64,
    pub duration_us: u64,
    pub args: Vec<Bytes>,
    /// `ip:port` of the client, as CLIENT LIST's `addr=`.
    pub peer: String,
    pub client_name: Vec<u8>,
}

/// The slow log of one server.
#[derive(Debug, Default)]
pub struct SlowLog {
    /// Newest first.
    pub entries: VecDeque<Entry>,
    next_id: u64,
}

impl SlowLog {
    /// Adds an entry for a command that took `duration_us`, keeping at most `max_len` entries.
    /// `redacted` lists the argument positions shown as `(redacted)`.
    #[allow(clippy::too_many_arguments)]
    pub fn push(
        &mut self,
        args: &[Bytes],
        redacted: &[usize],
        duration_us: u64,
        time: i64,
        peer: String,
        client_name: &[u8],
        max_len: usize,
    ) {
        let kept = if args.len() > MAX_ARGC {
            MAX_ARGC - 1
        } else {
            args.len()
        };
        let mut logged: Vec<Bytes> = args[..kept]
            .iter()
            .enumerate()
            .map(|(i, arg)| {
                if redacted.contains(&i) {
                    Bytes::from_static(b"(redacted)")
                } else if arg.len() > MAX_STRING {
                    let mut text = arg[..MAX_STRING].to_vec();
                    text.extend_from_slice(
                        format!("... ({} more bytes)", arg.len() - MAX_STRING).as_bytes(),
                    );
                    Bytes::from(text)
                } else {
                    arg.clone()
                }
            })
            .collect();
        if kept < args.len() {
            logged.push(Bytes::from(format!(
                "... ({} more arguments)",
                args.len() - kept
            )));
        }
        self.entries.push_front(Entry {
            id: self.next_id,
            time,
            duration_us,
            args: logged,
            peer,
            client_name: client_name.to_vec(),
        });
        self.next_id += 1;
        self.trim(max_len);
    }

    /// Drops the oldest entries beyond `max_len` (also when CONFIG SET lowers it).
    pub fn trim(&mut self, max_len: usize) {
        self.entries.truncate(max_len);
    }

    pub fn reset(&mut self) {
        self.entries.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(words: &[&[u8]]) -> Vec<Bytes> {
        words.iter().map(|w| Bytes::copy_from_slice(w)).collect()
    }

    #[test]
    fn entries_are_trimmed_redacted_and_bounded() {
        let mut log = SlowLog::default();
        let mut many: Vec<Vec<u8>> = vec![b"sadd".to_vec(), b"set".to_vec()];
        many.extend((1..=40).map(|i| i.to_string().into_bytes()));
        let many: Vec<&[u8]> = many.iter().map(|v| v.as_slice()).collect();
        log.push(&args(&many), &[], 5, 1, "a:1".into(), b"", 10);
        let e = &log.entries[0];
        assert_eq!(e.args.len(), 32);
        assert_eq!(e.args[30], "29");
        assert_eq!(e.args[31], "... (11 more arguments)");

        let long = vec![b'A'; 129];
        log.push(
            &args(&[b"set", b"k", &long]),
            &[],
            5,
            1,
            "a:1".into(),
            b"n",
            10,
        );
        let e = &log.entries[0];
        assert_eq!(e.id, 1);
        assert_eq!(e.args[2].len(), 128 + "... (1 more bytes)".len());
        assert!(e.args[2].ends_with(b"A... (1 more bytes)"));
        assert_eq!(e.client_name, b"n");

        log.push(
            &args(&[b"auth", b"secret"]),
            &[1],
            5,
            1,
            "a:1".into(),
            b"",
            2,
        );
        assert_eq!(log.entries.len(), 2);
        assert_eq!(log.entries[0].args[1], "(redacted)");
        assert_eq!(log.entries[1].id, 1, "the oldest went");
        log.trim(0);
        assert!(log.entries.is_empty());
    }
}
