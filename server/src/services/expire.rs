//! The active expiry cycle: keys with a TTL disappear on time even if nobody reads them.
//!
//! Lazy expiry (in [`crate::model::keyspace`]) guarantees that no command sees an expired key; this
//! cycle reclaims the ones nobody touches, so that a lock's lease ends for every observer (DBSIZE,
//! KEYS, SCAN, memory) shortly after its deadline. As in Redis, each run walks the expiry index of
//! each database with a persistent SCAN cursor, examining 20 keys per round and deleting the
//! expired ones; it repeats the round while more than 25% of the examined keys had expired (the
//! database probably holds many more), and stops when its time budget — a quarter of a tick — is
//! spent, so a mass expiry never stalls the server.
//!
//! Hash fields with a TTL (HEXPIRE, HSETEX…) expire here too: each database lists its hashes
//! with field TTLs by their earliest field deadline (`Db::field_expires`), and the cycle takes
//! the hashes whose earliest deadline has passed, removes their due fields (at most
//! [`FIELDS_PER_CYCLE`] per cycle and database, so that a hash of millions of due fields is
//! spread over several ticks), sends one `hexpired` event per hash (and `del` when the hash is
//! left empty, which deletes the key), and lists each hash again by its next deadline.

use bytes::Bytes;
use std::time::{Duration, Instant};

use embedis_datatypes::SmallBytes;

use crate::base::config::event_class;
use crate::base::value::Value;
use crate::model::keyspace::Keyspace;
use crate::model::state::ServerState;

/// Keys examined per round.
pub const KEYS_PER_ROUND: usize = 20;
/// Repeat while more than this percentage of examined keys had expired.
pub const ACCEPTABLE_STALE_PERCENT: usize = 25;
/// Hash fields removed per cycle and database, at most.
pub const FIELDS_PER_CYCLE: usize = 1000;

/// Removes the hash fields of database `db` due at `now_ms`, hash by hash in the order of their
/// earliest deadline, up to [`FIELDS_PER_CYCLE`] fields. Returns the number of fields removed.
pub fn expire_hash_fields(ks: &mut Keyspace, db: usize, now_ms: i64) -> usize {
    let mut budget = FIELDS_PER_CYCLE;
    let mut removed = 0;
    while budget > 0 {
        let d = &mut ks.dbs[db];
        let key = match d.field_expires.first() {
            Some((deadline, key)) if now_ms > deadline => SmallBytes::new(key),
            _ => break,
        };
        d.field_expires.remove(&key);
        d.before_change(&key);
        // The entry is a hint: the key may hold something else by now, or nothing due.
        let Some(Value::Hash(hash)) = d.main.get_mut(key.as_slice()).map(|o| &mut o.value) else {
            continue;
        };
        let mut due = hash.expired_fields(now_ms);
        due.truncate(budget);
        hash.remove_fields(&due);
        let emptied = hash.is_empty();
        let next = hash.min_deadline();
        if emptied {
            d.remove(&key);
        } else {
            d.resync_keysize(&key);
            if let Some(next) = next {
                d.field_expires.set(&key, next);
            }
        }
        if due.is_empty() {
            continue;
        }
        budget -= due.len();
        removed += due.len();
        if ks.stream.is_on() {
            // As Redis 8 propagates a field's expiry: HDEL of the fields.
            let mut args = vec![Bytes::from_static(b"HDEL"), Bytes::copy_from_slice(&key)];
            args.extend(due.iter().map(|f| Bytes::copy_from_slice(f.as_ref())));
            ks.stream.also(db, args);
        }
        ks.notify.note(event_class::HASH, "hexpired", db, &key);
        if emptied {
            ks.notify.note(event_class::GENERIC, "del", db, &key);
        }
        ks.touched_by_expiry(db, &key);
        ks.dirty += 1;
    }
    // The deletions go out one by one, never as a transaction (as Redis's active expiry).
    ks.stream.flush(false);
    removed
}

/// Runs one cycle over every database at time `now_ms`, within `budget`. Returns the number of
/// keys deleted.
pub fn active_expire_cycle(
    ks: &mut Keyspace,
    server: &mut ServerState,
    now_ms: i64,
    budget: Duration,
) -> usize {
    let started = Instant::now();
    let mut total_expired = 0;
    let mut total_sampled = 0;
    let mut timed_out = false;
    'databases: for db_index in 0..ks.dbs.len() {
        if !ks.dbs[db_index].field_expires.is_empty() {
            expire_hash_fields(ks, db_index, now_ms);
        }
        let mut rounds = 0usize;
        loop {
            let db = &mut ks.dbs[db_index];
            if db.expires.is_empty() {
                // Nothing volatile left: INFO's avg_ttl goes back to 0, as in Redis, rather
                // than keeping the estimate of keys that are gone.
                db.avg_ttl = 0;
                break;
            }
            let mut expired_keys = Vec::new();
            let mut sampled = 0usize;
            // Wide enough for 20 deadlines at i64::MAX (PEXPIREAT accepts it): an i64 sum
            // overflowed, which panicked the executor in a debug build.
            let mut ttl_sum = 0i128;
            let mut ttl_count = 0i64;
            // Walk buckets until 20 keys were examined, or a whole table's worth of empty buckets
            // was visited (the cursor wraps to 0 at the end of a pass).
            let max_buckets = (db.expires.buckets()).max(1) * 2;
            let mut buckets = 0;
            let mut cursor = db.expires_cursor;
            loop {
                cursor = db.expires.scan(cursor, |key, &when| {
                    sampled += 1;
                    if now_ms > when {
                        expired_keys.push(key.clone());
                    } else {
                        ttl_sum += i128::from(when - now_ms);
                        ttl_count += 1;
                    }
                });
                buckets += 1;
                if sampled >= KEYS_PER_ROUND || cursor == 0 || buckets >= max_buckets {
                    break;
                }
            }
            db.expires_cursor = cursor;
            let expired = expired_keys.len();
            for key in &expired_keys {
                db.remove(key);
            }
            if ttl_count > 0 {
                // Redis's running average: new = old/50*49 + sample/50.
                // Each term is at most i64::MAX, so their mean is too.
                let avg = (ttl_sum / i128::from(ttl_count)) as i64;
                db.avg_ttl = if db.avg_ttl == 0 {
                    avg
                } else {
                    db.avg_ttl / 50 * 49 + avg / 50
                };
            }
            for key in &expired_keys {
                ks.notify.note(
                    crate::base::config::event_class::EXPIRED,
                    "expired",
                    db_index,
                    key,
                );
                ks.touched_by_expiry(db_index, key);
                ks.stream.expired(db_index, key);
            }
            ks.stats.expired_keys += expired as u64;
            ks.dirty += expired as u64;
            total_expired += expired;
            total_sampled += sampled;
            rounds += 1;
            if rounds.is_multiple_of(16) && started.elapsed() > budget {
                timed_out = true;
                ks.stats.expired_time_cap_reached_count += 1;
                break 'databases;
            }
            if sampled == 0 || expired * 100 / sampled <= ACCEPTABLE_STALE_PERCENT {
                break;
            }
        }
    }
    let elapsed = started.elapsed();
    ks.stats.expire_cycle_cpu_milliseconds += elapsed.as_millis() as u64;
    if total_sampled > 0 {
        let current = total_expired as f64 / total_sampled as f64;
        ks.stats.expired_stale_perc = current * 0.05 + ks.stats.expired_stale_perc * 0.95;
    }
    server.expire_cycle_timed_out = timed_out;
    ks.stream.flush(false);
    total_expired
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::clock::Clock;
    use crate::base::config::Config;
    use crate::base::log::Logger;
    use crate::base::value::Value;

    fn server() -> ServerState {
        ServerState::new(
            Config::default(),
            Clock::manual(),
            Logger::silent(),
            Some(1),
            crate::commands::registry().commands.len(),
        )
    }

    #[test]
    fn removes_every_expired_key_without_reads() {
        let mut ks = Keyspace::new(2);
        let mut state = server();
        for i in 0..1000 {
            let key = format!("k{i}");
            let deadline = if i % 2 == 0 { 100 } else { 10_000 };
            ks.add(
                i % 2,
                key.as_bytes(),
                Value::Int(i as i64),
                Some(deadline),
                0,
            );
        }
        for i in 0..100 {
            ks.add(0, format!("p{i}").as_bytes(), Value::Int(1), None, 0);
        }
        // Before the deadline nothing goes.
        assert_eq!(
            active_expire_cycle(&mut ks, &mut state, 100, Duration::from_secs(1)),
            0
        );
        // After it, repeated cycles (each bounded) remove all 500 expired keys and only them.
        let mut removed = 0;
        for _ in 0..100 {
            removed += active_expire_cycle(&mut ks, &mut state, 101, Duration::from_secs(1));
        }
        assert_eq!(removed, 500);
        assert_eq!(ks.dbs[0].len(), 100);
        assert_eq!(ks.dbs[1].len(), 500);
        assert_eq!(ks.dbs[0].expires.len(), 0);
        assert!(ks.dbs[1].avg_ttl > 0);
    }

    #[test]
    fn avg_ttl_returns_to_zero_once_no_key_is_volatile() {
        let mut ks = Keyspace::new(1);
        let mut state = server();
        ks.add(0, b"lease", Value::Int(1), Some(30_000), 0);
        ks.add(0, b"plain", Value::Int(1), None, 0);
        active_expire_cycle(&mut ks, &mut state, 0, Duration::from_secs(1));
        assert_eq!(ks.dbs[0].avg_ttl, 30_000);
        // The volatile key is deleted by a command, not by the cycle: the next cycle notices.
        assert!(ks.dbs[0].remove(b"lease").is_some());
        active_expire_cycle(&mut ks, &mut state, 1, Duration::from_secs(1));
        assert_eq!(ks.dbs[0].avg_ttl, 0);
        assert_eq!(ks.dbs[0].len(), 1);
    }

    #[test]
    fn deadlines_at_the_end_of_time_average_without_overflow() {
        let mut ks = Keyspace::new(1);
        let mut state = server();
        for key in [&b"a"[..], b"b", b"c"] {
            ks.add(0, key, Value::Int(1), Some(i64::MAX), 0);
        }
        active_expire_cycle(&mut ks, &mut state, 1_000, Duration::from_secs(1));
        assert_eq!(ks.dbs[0].avg_ttl, i64::MAX - 1_000);
        assert_eq!(ks.dbs[0].len(), 3);
    }

    /// A hash with `fields` fields f0…, the first `due` of them with deadline 10, stored under
    /// `key` of database 0.
    fn volatile_hash(ks: &mut Keyspace, key: &[u8], fields: usize, due: usize) {
        use embedis_datatypes::hash::{HashValue, Limits};
        let mut hash = HashValue::new();
        for i in 0..fields {
            hash.set(format!("f{i}").as_bytes(), b"v", Limits::default());
        }
        for i in 0..due {
            hash.set_ttl(format!("f{i}").as_bytes(), 10);
        }
        ks.add(0, key, Value::Hash(hash), None, 0);
    }

    #[test]
    fn due_hash_fields_go_within_a_budget_and_emptied_hashes_with_them() {
        let mut ks = Keyspace::new(1);
        volatile_hash(&mut ks, b"partly", 3, 1);
        volatile_hash(&mut ks, b"wholly", 2, 2);
        volatile_hash(&mut ks, b"big", 2500, 2500);
        assert_eq!(ks.dbs[0].field_expires.len(), 3);
        assert_eq!(
            expire_hash_fields(&mut ks, 0, 10),
            0,
            "nothing due at the deadline"
        );
        // The budget bounds one call; the hash whose fields are left is listed again.
        let mut removed = expire_hash_fields(&mut ks, 0, 11);
        assert_eq!(removed, FIELDS_PER_CYCLE);
        while ks.dbs[0].field_expires.first().is_some_and(|(d, _)| d < 11) {
            removed += expire_hash_fields(&mut ks, 0, 11);
        }
        assert_eq!(removed, 1 + 2 + 2500);
        assert_eq!(ks.dbs[0].len(), 1, "the emptied hashes are deleted");
        let Some(Value::Hash(h)) = ks.dbs[0].main.get(&b"partly"[..]).map(|o| &o.value) else {
            panic!("partly stays")
        };
        assert_eq!(h.len(), 2);
        assert!(
            ks.dbs[0].field_expires.is_empty(),
            "no deadline left to list"
        );
    }

    #[test]
    fn a_stale_index_entry_is_dropped() {
        let mut ks = Keyspace::new(1);
        volatile_hash(&mut ks, b"h", 2, 1);
        // The key now holds something else (the index is a hint, corrected when visited).
        ks.set(0, b"h", Value::Int(1), false, 0);
        ks.dbs[0].field_expires.set(b"h", 5);
        assert_eq!(expire_hash_fields(&mut ks, 0, 100), 0);
        assert!(ks.dbs[0].field_expires.is_empty());
        assert_eq!(ks.dbs[0].len(), 1);
        // Removing a key drops its entry.
        volatile_hash(&mut ks, b"g", 2, 1);
        assert_eq!(ks.dbs[0].field_expires.len(), 1);
        ks.dbs[0].remove(b"g");
        assert!(ks.dbs[0].field_expires.is_empty());
    }

    #[test]
    fn a_mostly_expired_database_is_cleared_in_one_cycle() {
        let mut ks = Keyspace::new(1);
        let mut state = server();
        for i in 0..5000 {
            ks.add(0, format!("k{i}").as_bytes(), Value::Int(1), Some(10), 0);
        }
        let removed = active_expire_cycle(&mut ks, &mut state, 11, Duration::from_secs(5));
        assert_eq!(removed, 5000, "rounds repeat while more than 25% expired");
    }
}
