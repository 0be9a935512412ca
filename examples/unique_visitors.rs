//! Unique visitors per page per day with HyperLogLog, as the source documents describe: one
//! `PFADD visitors:<page>:<day> <visitor>` per visit, PFCOUNT for a day, PFMERGE for the week —
//! against an embedis server started inside this process. The same visits also go into plain
//! sets (the exact answer, and the memory an HLL saves), and the program prints both.
//!
//! `cargo run --release --example unique_visitors`

use std::collections::HashSet;

const PAGES: [&str; 3] = ["/home", "/pricing", "/docs"];
const DAYS: [&str; 7] = [
    "2026-11-16",
    "2026-11-17",
    "2026-11-18",
    "2026-11-19",
    "2026-11-20",
    "2026-11-21",
    "2026-11-22",
];

fn used_memory(con: &mut redis::Connection) -> redis::RedisResult<i64> {
    let info: String = redis::cmd("INFO").arg("memory").query(con)?;
    Ok(info
        .lines()
        .find_map(|l| l.strip_prefix("used_memory:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0))
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let server = embedis::Server::builder().start()?;
    let client = redis::Client::open(server.url())?;
    let mut con = client.get_connection()?;
    println!("embedis listening on {}\n", server.url());

    // A simple deterministic traffic model: each page draws its visitors from a pool of 200,000
    // users; busier pages and weekdays get more visits, and people come back.
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let mut exact: Vec<Vec<HashSet<u64>>> = vec![vec![HashSet::new(); DAYS.len()]; PAGES.len()];
    let before = used_memory(&mut con)?;
    for (p, page) in PAGES.iter().enumerate() {
        for (d, day) in DAYS.iter().enumerate() {
            let visits = 60_000 / (p + 1) * if d >= 5 { 1 } else { 2 };
            let key = format!("visitors:{page}:{day}");
            // One PFADD per visit, sent in pipelined batches.
            for chunk in 0..visits.div_ceil(1_000) {
                let mut pipe = redis::pipe();
                for _ in 0..1_000.min(visits - chunk * 1_000) {
                    let user = next() % 200_000;
                    exact[p][d].insert(user);
                    pipe.cmd("PFADD")
                        .arg(&key)
                        .arg(format!("user:{user}"))
                        .ignore();
                }
                pipe.query::<()>(&mut con)?;
            }
        }
    }
    let hll_memory = used_memory(&mut con)? - before;

    println!("| page | day | PFCOUNT | exact | error |");
    println!("|---|---|---|---|---|");
    for (p, page) in PAGES.iter().enumerate() {
        for (d, day) in DAYS.iter().enumerate() {
            let count: i64 = redis::cmd("PFCOUNT")
                .arg(format!("visitors:{page}:{day}"))
                .query(&mut con)?;
            let truth = exact[p][d].len() as f64;
            println!(
                "| {page} | {day} | {count} | {truth} | {:+.2}% |",
                (count as f64 - truth) / truth * 100.0
            );
        }
        // The week: PFMERGE of the seven days, against the union of the exact sets.
        let week_key = format!("visitors:{page}:week");
        let mut merge = redis::cmd("PFMERGE");
        merge.arg(&week_key);
        for day in DAYS {
            merge.arg(format!("visitors:{page}:{day}"));
        }
        merge.query::<()>(&mut con)?;
        let week: i64 = redis::cmd("PFCOUNT").arg(&week_key).query(&mut con)?;
        let truth = exact[p].iter().flatten().collect::<HashSet<_>>().len() as f64;
        println!(
            "| {page} | **week (PFMERGE)** | {week} | {truth} | {:+.2}% |",
            (week as f64 - truth) / truth * 100.0
        );
    }

    // The same visitors as plain sets, for the memory comparison.
    let before = used_memory(&mut con)?;
    for (p, page) in PAGES.iter().enumerate() {
        for (d, day) in DAYS.iter().enumerate() {
            let users: Vec<String> = exact[p][d].iter().map(|u| format!("user:{u}")).collect();
            for chunk in users.chunks(1_000) {
                redis::cmd("SADD")
                    .arg(format!("set:{page}:{day}"))
                    .arg(chunk)
                    .query::<i64>(&mut con)?;
            }
        }
    }
    let set_memory = used_memory(&mut con)? - before;
    let keys = (PAGES.len() * DAYS.len()) as i64;
    let hll_bytes: i64 = redis::cmd("STRLEN")
        .arg(format!("visitors:{}:{}", PAGES[0], DAYS[0]))
        .query(&mut con)?;
    println!(
        "\n{keys} daily HLLs: {} KB in all ({} bytes each as a string: Redis's dense encoding)",
        hll_memory / 1024,
        hll_bytes
    );
    println!(
        "{keys} daily sets of the same visitors: {} KB in all — {:.0}x the HLLs",
        set_memory / 1024,
        set_memory as f64 / hll_memory as f64
    );
    server.shutdown();
    Ok(())
}
