//! A job queue on a Redis stream with a consumer group: producers XADD jobs, workers read them
//! with XREADGROUP and acknowledge with XACK once done — at-least-once delivery. One worker
//! "crashes" holding jobs it read but never acknowledged; after the idle time passes, a surviving
//! worker takes them over with XAUTOCLAIM, and every job is done exactly once in the end.
//!
//! The server runs inside this process on a manual clock, so "a job has been pending for more
//! than 30 seconds" takes no waiting: the program advances the clock. The output is the same
//! on every run.
//!
//! `cargo run --release --example job_queue`

use std::collections::BTreeMap;
use std::time::{Duration, UNIX_EPOCH};

use redis::{Connection, RedisResult, Value};

const STREAM: &str = "jobs";
const GROUP: &str = "workers";
/// How long a job may stay unacknowledged before another worker may claim it.
const CLAIM_AFTER: Duration = Duration::from_secs(30);

/// One entry of a stream reply: its id and its fields.
type Entry = (String, BTreeMap<String, String>);

fn text(v: &Value) -> String {
    match v {
        Value::BulkString(b) => String::from_utf8_lossy(b).into_owned(),
        Value::SimpleString(s) => s.clone(),
        Value::Int(n) => n.to_string(),
        other => format!("{other:?}"),
    }
}

/// The entries of an `[id, [field, value, …]]` array (XRANGE's reply, or one stream of
/// XREADGROUP's); a deleted entry (`[id, nil]`) has no fields.
fn entries(v: &Value) -> Vec<Entry> {
    let Value::Array(items) = v else {
        return Vec::new();
    };
    items
        .iter()
        .filter_map(|item| match item {
            Value::Array(pair) if pair.len() == 2 => {
                let mut fields = BTreeMap::new();
                if let Value::Array(kv) = &pair[1] {
                    for chunk in kv.chunks(2) {
                        fields.insert(text(&chunk[0]), text(&chunk[1]));
                    }
                }
                Some((text(&pair[0]), fields))
            }
            _ => None,
        })
        .collect()
}

/// XREADGROUP … STREAMS jobs > for `consumer`: the new jobs it is given (now pending on it).
fn read_new(con: &mut Connection, consumer: &str, count: usize) -> RedisResult<Vec<Entry>> {
    let reply: Value = redis::cmd("XREADGROUP")
        .arg("GROUP")
        .arg(GROUP)
        .arg(consumer)
        .arg("COUNT")
        .arg(count)
        .arg("STREAMS")
        .arg(STREAM)
        .arg(">")
        .query(con)?;
    // A nil reply: nothing new. Otherwise [[stream, entries]] (RESP2).
    Ok(match reply {
        Value::Array(streams) => streams
            .first()
            .and_then(|s| match s {
                Value::Array(pair) if pair.len() == 2 => Some(entries(&pair[1])),
                _ => None,
            })
            .unwrap_or_default(),
        _ => Vec::new(),
    })
}

fn ack(con: &mut Connection, id: &str) -> RedisResult<i64> {
    redis::cmd("XACK").arg(STREAM).arg(GROUP).arg(id).query(con)
}

/// XPENDING's summary: how many jobs are delivered but not acknowledged, per consumer.
fn pending(con: &mut Connection) -> RedisResult<(i64, Vec<(String, String)>)> {
    let reply: Value = redis::cmd("XPENDING").arg(STREAM).arg(GROUP).query(con)?;
    let Value::Array(parts) = reply else {
        return Ok((0, Vec::new()));
    };
    let total = match parts.first() {
        Some(Value::Int(n)) => *n,
        _ => 0,
    };
    let mut per_consumer = Vec::new();
    if let Some(Value::Array(consumers)) = parts.get(3) {
        for c in consumers {
            if let Value::Array(pair) = c {
                per_consumer.push((text(&pair[0]), text(&pair[1])));
            }
        }
    }
    Ok((total, per_consumer))
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let clock = embedis::Clock::frozen_at(UNIX_EPOCH + Duration::from_secs(1_800_000_000));
    let server = embedis::Server::builder().clock(clock).start()?;
    let client = redis::Client::open(server.url())?;
    let mut producer = client.get_connection()?;
    let mut alice = client.get_connection()?;
    let mut bob = client.get_connection()?;
    println!("embedis listening on {} (manual clock)\n", server.url());

    // The group reads from the start of the stream; MKSTREAM creates the stream with it.
    let _: () = redis::cmd("XGROUP")
        .arg("CREATE")
        .arg(STREAM)
        .arg(GROUP)
        .arg("0")
        .arg("MKSTREAM")
        .query(&mut producer)?;

    // Ten jobs. The clock does not move between them, so their ids share a millisecond and
    // differ in the sequence number: `<ms>-0`, `<ms>-1`, …
    for n in 1..=10 {
        let id: String = redis::cmd("XADD")
            .arg(STREAM)
            .arg("*")
            .arg("job")
            .arg(n)
            .arg("task")
            .arg(format!("resize image {n}"))
            .query(&mut producer)?;
        if n == 1 || n == 10 {
            println!("queued job {n:>2} as {id}");
        }
    }

    let mut done: BTreeMap<String, String> = BTreeMap::new();

    // Alice takes four jobs and finishes two; then her process dies with two unacknowledged.
    let alices = read_new(&mut alice, "alice", 4)?;
    for (id, fields) in alices.iter().take(2) {
        ack(&mut alice, id)?;
        done.insert(fields["job"].clone(), "alice".into());
    }
    println!(
        "\nalice read {} jobs, acknowledged 2, and crashed",
        alices.len()
    );
    drop(alice);

    // Bob works through the rest as they come.
    loop {
        let batch = read_new(&mut bob, "bob", 3)?;
        if batch.is_empty() {
            break;
        }
        for (id, fields) in &batch {
            ack(&mut bob, id)?;
            done.insert(fields["job"].clone(), "bob".into());
        }
    }
    let (stuck, per_consumer) = pending(&mut bob)?;
    println!("bob finished the new jobs; pending: {stuck} {per_consumer:?}");

    // Not yet claimable: alice's jobs have been idle for 0 ms.
    let early: Value = redis::cmd("XAUTOCLAIM")
        .arg(STREAM)
        .arg(GROUP)
        .arg("bob")
        .arg(CLAIM_AFTER.as_millis() as u64)
        .arg("0-0")
        .query(&mut bob)?;
    let early_claimed = match &early {
        Value::Array(parts) => entries(&parts[1]).len(),
        _ => 0,
    };
    println!("XAUTOCLAIM right away claims {early_claimed} jobs");

    // Thirty seconds later (on the manual clock): bob claims what alice left and finishes it.
    server
        .clock()
        .advance(CLAIM_AFTER + Duration::from_millis(1));
    let claimed: Value = redis::cmd("XAUTOCLAIM")
        .arg(STREAM)
        .arg(GROUP)
        .arg("bob")
        .arg(CLAIM_AFTER.as_millis() as u64)
        .arg("0-0")
        .arg("COUNT")
        .arg(10)
        .query(&mut bob)?;
    let Value::Array(parts) = claimed else {
        return Err("XAUTOCLAIM answered no array".into());
    };
    let recovered = entries(&parts[1]);
    println!(
        "after {} s, XAUTOCLAIM gives bob {} jobs: {:?}",
        CLAIM_AFTER.as_secs(),
        recovered.len(),
        recovered
            .iter()
            .map(|(_, f)| f["job"].as_str())
            .collect::<Vec<_>>()
    );
    for (id, fields) in &recovered {
        ack(&mut bob, id)?;
        let previous = done.insert(fields["job"].clone(), "bob (recovered)".into());
        assert!(previous.is_none(), "job {} done twice", fields["job"]);
    }

    let (left, _) = pending(&mut bob)?;
    println!("\npending now: {left}");
    let mut jobs: Vec<(u32, &String)> = done
        .iter()
        .map(|(job, by)| (job.parse().unwrap_or(0), by))
        .collect();
    jobs.sort();
    for (job, by) in &jobs {
        println!("job {job:>2} done by {by}");
    }
    assert_eq!(jobs.len(), 10, "every job is done");
    assert_eq!(left, 0, "nothing is left pending");

    // XINFO GROUPS: the group's view (7.0's entries-read and lag included).
    let info: Value = redis::cmd("XINFO")
        .arg("GROUPS")
        .arg(STREAM)
        .query(&mut bob)?;
    if let Value::Array(groups) = info {
        for g in groups {
            if let Value::Array(kv) = g {
                let shown: Vec<String> = kv
                    .chunks(2)
                    .map(|c| format!("{}={}", text(&c[0]), text(&c[1])))
                    .collect();
                println!("\nXINFO GROUPS: {}", shown.join(" "));
            }
        }
    }
    Ok(())
}
