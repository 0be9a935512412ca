//! Blocked clients: a client whose command cannot complete yet waits here, with its command, until
//! something releases it or its deadline passes.
//!
//! Four things block:
//! - CLIENT PAUSE postpones affected commands; they re-run, in arrival order, when it ends.
//! - WAIT waits until enough replicas acknowledge the write stream up to its offset, or its
//!   timeout passes; WAITAOF waits out its timeout (no replica acknowledges an fsync here).
//! - An injected latency fault holds a command's reply until its deadline ([`crate::model::fault_rules`]).
//! - Blocking pops (BLPOP, BLMOVE, BZPOPMIN, …) wait for a key. Each key has a FIFO queue of the
//!   clients blocked on it. Any command that writes to a key someone waits on marks it *ready*
//!   (see [`crate::model::keyspace::ReadyKeys`]); after the command, the engine re-runs the blocked
//!   commands of that key's queue in order, as long as the key can serve them. A client that
//!   cannot be served keeps its place in the queue and its deadline.
//!
//! A blocked client's connection stops feeding commands until it is released. Deadlines are read
//! from the server's [`crate::base::clock::Clock`], so a test fires them by advancing the clock.

use bytes::Bytes;
use embedis_datatypes::SmallBytes;
use std::collections::{BTreeSet, HashMap, VecDeque};

use embedis_datatypes::long_double::LongDouble;

use crate::base::error::{CmdResult, Error};
use crate::base::value::ValueType;
use crate::model::client_id::ClientId;

/// What a client blocked on keys waits for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyWait {
    pub db: usize,
    pub keys: Vec<SmallBytes>,
    /// The type of value that can serve it (a list for BLPOP, a sorted set for BZPOPMIN): a key
    /// of another type does not wake it, as in Redis.
    pub wants: ValueType,
    /// The reply when its time runs out.
    pub on_timeout: TimeoutReply,
    /// Woken also when a key is deleted or replaced by another type (XREADGROUP: its group
    /// went with it), Redis's `unblock_on_nokey`.
    pub on_nokey: bool,
}

/// The reply a blocked command gives when its timeout fires (or CLIENT UNBLOCK … TIMEOUT).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeoutReply {
    /// `*-1` in RESP2: every blocking pop of Redis 7.0 (BLPOP, BLMPOP, BZPOPMIN, BZMPOP, and
    /// BLMOVE and BRPOPLPUSH too, although their served reply is a bulk string).
    NullArray,
    /// `$-1` in RESP2.
    Null,
    /// An integer (WAIT's, which the executor replaces at release with the replicas that have
    /// acknowledged by then).
    Integer(i64),
    /// Two counts (WAITAOF: local AOF files and replicas that fsynced; the local one is 1
    /// when the AOF is on, its writes fsynced before the command blocked).
    ZeroPair,
    LocalPair,
}

/// Why a client is blocked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BlockReason {
    /// Postponed by CLIENT PAUSE: the command re-runs when the pause ends.
    Postponed,
    /// WAITAOF for replicas' fsync acknowledgements, which never come; the reply (the counts)
    /// at the deadline.
    Wait(TimeoutReply),
    /// WAIT: for `wanted` replicas to acknowledge the stream up to `offset`; released by their
    /// ACKs or at the deadline with the count so far.
    Replicas { offset: u64, wanted: usize },
    /// Waiting for one of some keys to be able to serve it.
    Keys(KeyWait),
    /// SHUTDOWN waiting for lagging replicas: the process ends, or the shutdown fails and the
    /// client gets its error.
    Shutdown,
    /// Its command ran; the reply is held until the deadline (an injected latency fault, see
    /// [`crate::model::fault_rules`]).
    Delayed(Bytes),
}

/// A client's blocked command.
#[derive(Debug, Clone)]
pub struct Blocked {
    pub args: Vec<Bytes>,
    pub reason: BlockReason,
    /// Absolute deadline in ms; `None` = no timeout.
    pub deadline_ms: Option<i64>,
}

impl Blocked {
    /// The reply its command gives when the deadline passes.
    pub fn timeout_reply(&self) -> TimeoutReply {
        match &self.reason {
            BlockReason::Wait(reply) => *reply,
            // Never asked for: a postponed command re-runs, a delayed one sends what it holds.
            BlockReason::Postponed | BlockReason::Delayed(_) | BlockReason::Shutdown => {
                TimeoutReply::NullArray
            }
            // Counted at release time by the executor.
            BlockReason::Replicas { .. } => TimeoutReply::Integer(0),
            BlockReason::Keys(wait) => wait.on_timeout,
        }
    }
}

/// The executor's index of blocked clients.
#[derive(Debug, Default)]
pub struct BlockedIndex {
    /// (deadline, client) for every blocked client with a timeout.
    pub timeouts: BTreeSet<(i64, ClientId)>,
    /// Clients postponed by CLIENT PAUSE, in arrival order.
    pub postponed: VecDeque<ClientId>,
    /// For each (db, key), the clients blocked on it, in the order they blocked.
    pub by_key: HashMap<(usize, SmallBytes), VecDeque<ClientId>>,
    /// How many clients are blocked (INFO blocked_clients).
    pub count: usize,
    /// For each (db, key), how many of its waiters are woken by its deletion too (INFO
    /// total_blocking_keys_on_nokey counts the keys).
    pub on_nokey: HashMap<(usize, SmallBytes), usize>,
}

impl BlockedIndex {
    pub fn add(&mut self, id: ClientId, blocked: &Blocked) {
        self.count += 1;
        if let Some(deadline) = blocked.deadline_ms {
            self.timeouts.insert((deadline, id));
        }
        match &blocked.reason {
            BlockReason::Postponed => self.postponed.push_back(id),
            BlockReason::Keys(wait) => {
                for key in &wait.keys {
                    let queue = self.by_key.entry((wait.db, key.clone())).or_default();
                    // BLPOP a a: one place in the queue is enough.
                    if !queue.contains(&id) {
                        queue.push_back(id);
                        if wait.on_nokey {
                            *self.on_nokey.entry((wait.db, key.clone())).or_default() += 1;
                        }
                    }
                }
            }
            BlockReason::Wait(_)
            | BlockReason::Delayed(_)
            | BlockReason::Replicas { .. }
            | BlockReason::Shutdown => {}
        }
    }

    /// Removes `id`; returns the keys whose queues became empty (nobody waits on them anymore).
    pub fn remove(&mut self, id: ClientId, blocked: &Blocked) -> Vec<(usize, SmallBytes)> {
        self.count = self.count.saturating_sub(1);
        if let Some(deadline) = blocked.deadline_ms {
            self.timeouts.remove(&(deadline, id));
        }
        let mut emptied = Vec::new();
        match &blocked.reason {
            BlockReason::Postponed => self.postponed.retain(|&c| c != id),
            BlockReason::Keys(wait) => {
                for key in &wait.keys {
                    let slot = (wait.db, key.clone());
                    let Some(queue) = self.by_key.get_mut(&slot) else {
                        continue;
                    };
                    let before = queue.len();
                    queue.retain(|&c| c != id);
                    let (left, now_empty) = (queue.len() < before, queue.is_empty());
                    if wait.on_nokey && left {
                        self.forget_on_nokey(&slot);
                    }
                    if now_empty {
                        self.by_key.remove(&slot);
                        emptied.push(slot);
                    }
                }
            }
            BlockReason::Wait(_)
            | BlockReason::Delayed(_)
            | BlockReason::Replicas { .. }
            | BlockReason::Shutdown => {}
        }
        emptied
    }

    fn forget_on_nokey(&mut self, slot: &(usize, SmallBytes)) {
        if let Some(n) = self.on_nokey.get_mut(slot) {
            *n -= 1;
            if *n == 0 {
                self.on_nokey.remove(slot);
            }
        }
    }

    /// The clients blocked on (db, key), in order.
    pub fn waiting_on(&self, db: usize, key: &SmallBytes) -> Vec<ClientId> {
        self.by_key
            .get(&(db, key.clone()))
            .map(|q| q.iter().copied().collect())
            .unwrap_or_default()
    }

    /// Clients whose deadline has passed at `now`. As in Redis, a deadline fires once the clock
    /// is past it (`deadline < now`): `BLPOP k 5` at t answers at t + 5001 ms at the earliest.
    pub fn due(&self, now_ms: i64) -> Vec<ClientId> {
        self.timeouts
            .iter()
            .take_while(|(d, _)| *d < now_ms)
            .map(|(_, id)| *id)
            .collect()
    }

    /// When the earliest deadline fires (one millisecond past it), if any.
    pub fn next_deadline(&self) -> Option<i64> {
        self.timeouts
            .iter()
            .next()
            .map(|(d, _)| d.saturating_add(1))
    }
}

/// Parses a blocking command's timeout in (fractional) seconds as Redis 7.0 does: a long double,
/// times 1000, rounded up to whole milliseconds (`ceill`, so `0.001` is 1 ms, not 0 = forever);
/// negative (or too large to represent, which Redis's conversion turns negative) is refused; 0
/// means forever. Returns the absolute deadline. From Redis 7.2 (`checked`) a timeout too large
/// to represent, or whose deadline would overflow, is "out of range" instead.
pub fn parse_timeout_seconds(arg: &[u8], now_ms: i64, checked: bool) -> CmdResult<Option<i64>> {
    let seconds = LongDouble::from_redis_bytes(arg)
        .ok_or(Error::msg("ERR timeout is not a float or out of range"))?;
    let out_of_range = || Error::msg("ERR timeout is out of range");
    // C's conversion of an out-of-range value to long long yields LLONG_MIN on x86: negative.
    let ms = match seconds_to_ms(&seconds) {
        Some(ms) => ms,
        None if checked && !seconds.is_sign_negative() => return Err(out_of_range()),
        None => return Err(Error::msg("ERR timeout is negative")),
    };
    if ms < 0 {
        return Err(Error::msg("ERR timeout is negative"));
    }
    if ms == 0 {
        return Ok(None);
    }
    if checked && ms > i64::MAX - now_ms {
        return Err(out_of_range());
    }
    Ok(Some(now_ms.saturating_add(ms)))
}

/// `(long long)ceill(seconds * 1000.0)` computed as Redis's x87 long double arithmetic does: the
/// product rounded to 64 significant bits (ties to even), then rounded toward +infinity (a
/// negative value so goes toward zero: `-0.0001` is `-0`, i.e. forever). `None` when
/// the result does not fit in an i64 (infinite or too large).
fn seconds_to_ms(seconds: &LongDouble) -> Option<i64> {
    let (negative, mant, exp) = seconds.parts()?;
    if mant == 0 {
        return Some(0);
    }
    let product = mant as u128 * 1000;
    let bits = 128 - product.leading_zeros() as i64;
    let (mut m, mut e) = (product, exp);
    if bits > 64 {
        let shift = (bits - 64) as u32;
        let rest = m & ((1u128 << shift) - 1);
        let half = 1u128 << (shift - 1);
        m >>= shift;
        e += shift as i64;
        if rest > half || (rest == half && m & 1 == 1) {
            m += 1;
        }
    }
    let (magnitude, inexact): (u128, bool) = if e >= 0 {
        if e > 64 || (m << e) >> e != m {
            return None;
        }
        (m << e, false)
    } else if -e >= 128 {
        (0, true)
    } else {
        let shift = (-e) as u32;
        (m >> shift, m & ((1u128 << shift) - 1) != 0)
    };
    // Rounding up: a positive value with a fraction goes to the next millisecond.
    let magnitude = magnitude + u128::from(inexact && !negative);
    let magnitude = i64::try_from(magnitude).ok()?;
    Some(if negative { -magnitude } else { magnitude })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timeouts_as_redis_parses_them() {
        assert_eq!(parse_timeout_seconds(b"0", 1000, false), Ok(None));
        assert_eq!(parse_timeout_seconds(b"1.5", 1000, false), Ok(Some(2500)));
        assert_eq!(
            parse_timeout_seconds(b"0.0001", 1000, false),
            Ok(Some(1001)),
            "rounded up to 1 ms, not 0 = forever"
        );
        assert_eq!(
            parse_timeout_seconds(b"-0.0001", 0, false),
            Ok(None),
            "-0: forever"
        );
        assert_eq!(parse_timeout_seconds(b"0x10", 0, false), Ok(Some(16_000)));
        assert_eq!(parse_timeout_seconds(b"-0", 0, false), Ok(None));
        // Values checked against C: (long long)ceill(strtold(s) * 1000.0) on x86-64.
        assert_eq!(parse_timeout_seconds(b"0.003", 0, false), Ok(Some(3)));
        assert_eq!(
            parse_timeout_seconds(b"0.001", 0, false),
            Ok(Some(1)),
            "0.999… ms rounds up to 1"
        );
        assert_eq!(parse_timeout_seconds(b"0.0015", 0, false), Ok(Some(2)));
        assert_eq!(parse_timeout_seconds(b"0.1", 0, false), Ok(Some(100)));
        assert_eq!(parse_timeout_seconds(b"0.029", 0, false), Ok(Some(29)));
        assert_eq!(
            parse_timeout_seconds(b"9223372036854775.807", 0, false),
            Ok(Some(9223372036854775807))
        );
        assert_eq!(
            parse_timeout_seconds(b"1e16", 0, false),
            Err(Error::msg("ERR timeout is negative"))
        );
        let negative = Err(Error::msg("ERR timeout is negative"));
        assert_eq!(parse_timeout_seconds(b"-1", 0, false), negative);
        assert_eq!(parse_timeout_seconds(b"inf", 0, false), negative);
        assert_eq!(parse_timeout_seconds(b"1e400", 0, false), negative);
        let out_of_range = Err(Error::msg("ERR timeout is out of range"));
        assert_eq!(parse_timeout_seconds(b"1e16", 0, true), out_of_range, "7.2");
        assert_eq!(
            parse_timeout_seconds(b"0x7FFFFFFFFFFFFF", 5, true),
            out_of_range
        );
        assert_eq!(parse_timeout_seconds(b"-1", 0, true), negative);
        assert_eq!(parse_timeout_seconds(b"inf", 0, true), out_of_range);
        let bad = Err(Error::msg("ERR timeout is not a float or out of range"));
        assert_eq!(parse_timeout_seconds(b"abc", 0, false), bad);
        assert_eq!(parse_timeout_seconds(b"nan", 0, false), bad);
        assert_eq!(parse_timeout_seconds(b" 1", 0, false), bad);
    }

    #[test]
    fn key_queues_are_fifo_and_cleaned_up() {
        let mut index = BlockedIndex::default();
        let wait = |keys: &[&[u8]]| Blocked {
            args: Vec::new(),
            reason: BlockReason::Keys(KeyWait {
                db: 0,
                keys: keys.iter().map(|k| SmallBytes::new(k)).collect(),
                wants: ValueType::List,
                on_timeout: TimeoutReply::NullArray,
                on_nokey: false,
            }),
            deadline_ms: Some(10),
        };
        let (a, b) = (wait(&[b"k", b"j"]), wait(&[b"k"]));
        index.add(1, &a);
        index.add(2, &b);
        assert_eq!(index.waiting_on(0, &SmallBytes::new(b"k")), vec![1, 2]);
        assert_eq!(index.remove(1, &a), vec![(0, SmallBytes::new(b"j"))]);
        assert_eq!(index.waiting_on(0, &SmallBytes::new(b"k")), vec![2]);
        assert_eq!(index.remove(2, &b), vec![(0, SmallBytes::new(b"k"))]);
        assert!(index.by_key.is_empty() && index.timeouts.is_empty());
        assert_eq!(index.count, 0);
    }
}
