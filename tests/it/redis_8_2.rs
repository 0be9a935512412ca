//! What Redis 8.2 added, beyond what tests/diff8 compares line by line: the new BITOP
//! operations and stream options exist only from `compat-version 8.2` (7.4 answers as 7.4.1
//! did), and a seeded random comparison with Redis 8.2.3 (`$EMBEDIS_REDIS8_SERVER`) of each
//! family: random commands over a few keys, reply for reply.

use rand::{rngs::StdRng, seq::SliceRandom, Rng, SeedableRng};

use crate::support;
use support::{show, Client, Conn, RedisServer};

/// Sends `count` random command lines from `line` to Redis 8.2 and to embedis as 8.2, running
/// `reset` on both every 200 lines, and fails listing the replies that differ. Skipped loudly
/// without a Redis 8.2, unless EMBEDIS_REQUIRE_REDIS=1.
fn compare_random(
    name: &str,
    seed: u64,
    count: usize,
    reset: &[&[&str]],
    mut line: impl FnMut(&mut StdRng) -> Vec<Vec<u8>>,
) {
    let Some(redis) = RedisServer::start_redis8(name, &[]) else {
        return;
    };
    let ours = support::builder_as("8.2").start().unwrap();
    let mut theirs_conn = Conn::connect(redis.addr()).unwrap();
    let mut ours_conn = Conn::connect(ours.addr()).unwrap();
    let mut rng = StdRng::seed_from_u64(seed);
    let mut failures = Vec::new();
    for i in 0..count {
        if i % 200 == 0 {
            for conn in [&mut theirs_conn, &mut ours_conn] {
                conn.command(&["FLUSHALL"]);
                for args in reset {
                    conn.command(args);
                }
            }
        }
        let args = line(&mut rng);
        let expected = theirs_conn.command(&args);
        let got = ours_conn.command(&args);
        if expected != got {
            let shown: Vec<_> = args.iter().map(|a| show(a)).collect();
            failures.push(format!(
                "{}\n    redis:   {}\n    embedis: {}",
                shown.join(" "),
                show(&expected),
                show(&got)
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {count} replies differ from Redis 8.2:\n{}",
        failures.len(),
        failures[..failures.len().min(20)].join("\n")
    );
}

fn pick<'a>(rng: &mut StdRng, words: &[&'a str]) -> &'a str {
    words.choose(rng).unwrap()
}

#[test]
fn bitop_s_new_operations_exist_from_8_2() {
    let as_7_4 = support::builder_as("7.4").start().unwrap();
    let as_8_2 = support::builder_as("8.2").start().unwrap();
    let mut old = Client::connect(as_7_4.addr());
    let mut new = Client::connect(as_8_2.addr());
    for c in [&mut old, &mut new] {
        c.cmd(&["SET", "a", "\u{f}"]);
        c.cmd(&["SET", "b", "\u{3}"]);
    }
    for op in ["DIFF", "DIFF1", "ANDOR", "ONE"] {
        let line = ["BITOP", op, "r", "a", "b"];
        assert_eq!(old.cmd(&line), "-ERR syntax error\r\n", "{op} as 7.4");
        assert_eq!(new.cmd(&line), ":1\r\n", "{op} as 8.2");
    }
    assert_eq!(new.cmd(&["BITOP", "DIFF", "r", "a", "b"]), ":1\r\n");
    assert_eq!(new.cmd(&["GET", "r"]), "$1\r\n\u{c}\r\n");
    assert_eq!(
        old.cmd(&["BITOP", "DIFF", "r", "a"]),
        "-ERR syntax error\r\n",
        "7.4 knows no DIFF, so no source count either"
    );
}

/// Random BITOP lines (every operation, sources of random bytes and lengths, missing keys, a
/// list) against Redis 8.2.
#[test]
fn random_bitops_answer_as_redis_8_does() {
    let keys = ["k1", "k2", "k3", "k4", "nokey", "list"];
    let ops = [
        "AND", "OR", "XOR", "NOT", "DIFF", "DIFF1", "ANDOR", "ONE", "diff", "One", "NOPE",
    ];
    compare_random(
        "bitop random",
        82,
        3000,
        &[&["LPUSH", "list", "x"]],
        |rng| {
            let mut args: Vec<Vec<u8>> = Vec::new();
            match rng.gen_range(0..10) {
                0..=2 => {
                    // A string of random bytes, sometimes longer than the word-at-a-time step.
                    let len = *[0usize, 1, 3, 8, 31, 32, 33, 70].choose(rng).unwrap();
                    let value: Vec<u8> = (0..len).map(|_| rng.gen()).collect();
                    let key = pick(rng, &keys[..4]);
                    args.extend([b"SET".to_vec(), key.into(), value]);
                }
                3 => args.extend([b"GET".to_vec(), pick(rng, &keys[..4]).into()]),
                _ => {
                    args.extend([b"BITOP".to_vec(), pick(rng, &ops).into()]);
                    args.push(pick(rng, &["k1", "dest", "list"]).into());
                    for _ in 0..rng.gen_range(0..=4) {
                        args.push(pick(rng, &keys).into());
                    }
                }
            }
            args
        },
    );
}

#[test]
fn stream_reference_options_exist_from_8_2() {
    let as_7_4 = support::builder_as("7.4").start().unwrap();
    let mut c = Client::connect(as_7_4.addr());
    c.cmd(&["XADD", "s", "1-0", "a", "1"]);
    assert_eq!(
        c.cmd(&["XDELEX", "s", "IDS", "1", "1-0"]),
        "-ERR unknown command 'XDELEX', with args beginning with: 's' 'IDS' '1' '1-0' \r\n"
    );
    assert!(c
        .cmd(&["XACKDEL", "s", "g", "IDS", "1", "1-0"])
        .starts_with("-ERR unknown command"));
    assert_eq!(
        c.cmd(&["XADD", "s", "ACKED", "2-0", "a", "1"]),
        "-ERR Invalid stream ID specified as stream command argument\r\n"
    );
    assert_eq!(
        c.cmd(&["XTRIM", "s", "MAXLEN", "0", "DELREF"]),
        "-ERR syntax error\r\n"
    );
    let as_8_2 = support::builder_as("8.2").start().unwrap();
    let mut c = Client::connect(as_8_2.addr());
    c.cmd(&["XADD", "s", "1-0", "a", "1"]);
    assert_eq!(c.cmd(&["XTRIM", "s", "MAXLEN", "0", "DELREF"]), ":1\r\n");
}

/// Random stream commands over one stream with two groups, nodes of 4 entries: XADD (with
/// trimming and KEEPREF / DELREF / ACKED), XTRIM, XDEL, XDELEX, XACKDEL, XACK, XREADGROUP, and
/// what shows the result (XRANGE, XPENDING's summary, XINFO STREAM), against Redis
/// 8.2. IDs are explicit, so every reply is deterministic.
#[test]
fn random_stream_deletions_answer_as_redis_8_does() {
    let refs = ["KEEPREF", "DELREF", "ACKED", "acked", ""];
    let mut top = 0u64;
    compare_random(
        "stream random",
        8,
        4000,
        &[
            &["CONFIG", "SET", "stream-node-max-entries", "4"],
            &["XADD", "s", "1-0", "a", "1"],
            &["XGROUP", "CREATE", "s", "g", "0"],
            &["XGROUP", "CREATE", "s", "h", "0"],
            &["SET", "str", "x"],
        ],
        |rng| {
            let id = |rng: &mut StdRng| format!("{}-0", rng.gen_range(1..60));
            let ids = |rng: &mut StdRng, args: &mut Vec<String>| {
                let n = rng.gen_range(1..=4);
                let claimed = if rng.gen_bool(0.9) { n } else { n + 1 };
                args.extend(["IDS".into(), claimed.to_string()]);
                for _ in 0..n {
                    args.push(if rng.gen_bool(0.03) {
                        "bad".into()
                    } else {
                        id(rng)
                    });
                }
            };
            let key = pick(rng, &["s", "s", "s", "s", "nokey", "str"]).to_string();
            let option = pick(rng, &refs).to_string();
            let mut args: Vec<String> = Vec::new();
            match rng.gen_range(0..14) {
                0..=2 => {
                    top = if rng.gen_bool(0.9) {
                        top % 60 + 1
                    } else {
                        rng.gen_range(1..60)
                    };
                    args.extend(["XADD".into(), key, option]);
                    if rng.gen_bool(0.4) {
                        args.push(pick(rng, &["MAXLEN", "MINID"]).into());
                        args.push(pick(rng, &["~", "=", ""]).into());
                        args.push(if args[3] == "MINID" {
                            id(rng)
                        } else {
                            rng.gen_range(0..12).to_string()
                        });
                    }
                    args.extend([format!("{top}-0"), "f".into(), "v".into()]);
                }
                3 => {
                    args.extend(["XTRIM".into(), key, option]);
                    args.push(pick(rng, &["MAXLEN", "MINID"]).into());
                    args.push(pick(rng, &["~", "=", ""]).into());
                    args.push(if args[3] == "MINID" {
                        id(rng)
                    } else {
                        rng.gen_range(0..12).to_string()
                    });
                    if rng.gen_bool(0.2) {
                        args.extend(["LIMIT".into(), rng.gen_range(0..10).to_string()]);
                    }
                }
                4 | 5 => {
                    args.extend(["XDELEX".into(), key, option]);
                    ids(rng, &mut args);
                }
                6 | 7 => {
                    args.extend([
                        "XACKDEL".into(),
                        key,
                        pick(rng, &["g", "h", "nogroup"]).into(),
                        option,
                    ]);
                    ids(rng, &mut args);
                }
                8 => args.extend([
                    "XREADGROUP".into(),
                    "GROUP".into(),
                    pick(rng, &["g", "h"]).into(),
                    "c".into(),
                    "COUNT".into(),
                    rng.gen_range(1..5).to_string(),
                    "STREAMS".into(),
                    key,
                    ">".into(),
                ]),
                9 => args.extend(["XACK".into(), key, pick(rng, &["g", "h"]).into(), id(rng)]),
                10 => args.extend(["XDEL".into(), key, id(rng)]),
                11 => args.extend(["XPENDING".into(), key, pick(rng, &["g", "h"]).into()]),
                // Not XINFO GROUPS: its entries-read and lag follow Redis 7.x's rules in embedis
                // and differ from 8.2's after deletions (with or without the 8.2 commands).
                12 => args.extend(["XINFO".into(), "STREAM".into(), key]),
                _ => args.extend(["XRANGE".into(), key, "-".into(), "+".into()]),
            }
            args.retain(|a| !a.is_empty());
            args.into_iter().map(String::into_bytes).collect()
        },
    );
}

/// A vector set of the random comparison: its key, the dimension its vectors are given in,
/// the REDUCE it is made with, and the quantization it is made with. The int8 sets have at
/// least 4 dimensions: in 3, two random vectors quantise alike often enough to tie (their
/// order is then the graph's, see below).
struct VKey {
    name: &'static str,
    dim: usize,
    reduce: Option<usize>,
    quant: &'static str,
}

const VKEYS: [VKey; 4] = [
    VKey {
        name: "q",
        dim: 4,
        reduce: None,
        quant: "Q8",
    },
    VKey {
        name: "f",
        dim: 3,
        reduce: None,
        quant: "NOQUANT",
    },
    VKey {
        name: "b",
        dim: 6,
        reduce: None,
        quant: "BIN",
    },
    VKey {
        name: "r",
        dim: 7,
        reduce: Some(4),
        quant: "Q8",
    },
];

/// The elements of every set: few, so that sets stay small (and VSIM's graph search stays
/// exhaustive), and one, `zero`, that is always given the zero vector.
const VSET_ELEMENTS: [&str; 17] = [
    "e0", "e1", "e2", "e3", "e4", "e5", "e6", "e7", "e8", "e9", "e10", "e11", "e12", "e13", "e14",
    "e15", "zero",
];

/// A vector component: mostly two decimals in [-10, 10) (so that no two elements are at the
/// same distance from a query), sometimes a number written oddly or no number at all, but
/// never an infinite one (nor one whose square is): a vector with one has NaN distances, which
/// every order places differently.
fn vset_component(rng: &mut StdRng) -> String {
    if rng.gen_bool(0.005) {
        let odd = [
            "1e-3", "-0", "+2", "1E2", ".5", "5.", "0x10", " 1", "1 ", "", "abc", "nan",
        ];
        return pick(rng, &odd).to_string();
    }
    format!("{:.2}", rng.gen_range(-10.0..10.0f64))
}

/// A vector of `dim` components as VALUES (or, sometimes, as an FP32 blob), the zero vector
/// when `zero`; rarely malformed (a count that does not match, a blob of a bad length).
fn vset_vector(rng: &mut StdRng, dim: usize, zero: bool) -> Vec<Vec<u8>> {
    if rng.gen_bool(0.15) {
        let mut blob: Vec<u8> = (0..dim)
            .flat_map(|_| {
                let x = if zero {
                    0.0f32
                } else {
                    (rng.gen_range(-1000..1000) as f32) / 100.0
                };
                x.to_le_bytes()
            })
            .collect();
        if rng.gen_bool(0.03) {
            blob.pop();
        }
        return vec![pick(rng, &["FP32", "fp32"]).into(), blob];
    }
    let claimed = if rng.gen_bool(0.97) {
        dim.to_string()
    } else {
        pick(rng, &["0", "-1", "x", "9", "70000"]).to_string()
    };
    let mut out: Vec<Vec<u8>> = vec![pick(rng, &["VALUES", "values"]).into(), claimed.into()];
    for _ in 0..dim {
        out.push(if zero {
            pick(rng, &["0", "0.0", "-0"]).into()
        } else {
            vset_component(rng).into()
        });
    }
    out
}

/// JSON attributes: objects of the fields the filters read (in any order, some missing, of
/// the expected type or not), sometimes invalid JSON, or empty (which removes attributes).
fn vset_json(rng: &mut StdRng) -> String {
    match rng.gen_range(0..30) {
        0 => return String::new(),
        1 | 2 => {
            let invalid = [
                "not json",
                "{",
                "{\"year\": }",
                "[1, 2, 3]",
                "42",
                "\"text\"",
                "{\"a\": 1,}",
                "{'year': 1999}",
                "{\"ok\": tru}",
                "{}",
                "null",
                "{\"year\": 1999} trailing",
                "{\"year\":1999,\"year\":2000}",
            ];
            return pick(rng, &invalid).to_string();
        }
        _ => {}
    }
    let names = [
        "\"Matrix\"",
        "\"Alien\"",
        "\"Blade Runner\"",
        "\"\"",
        "\"sf\"",
        "\"a\\\"b\"",
        "\"\\u00e9t\\u00e9\"",
        "\"x\\ny\"",
    ];
    let tag = [
        "\"sf\"",
        "\"drama\"",
        "1",
        "2",
        "2.5",
        "true",
        "null",
        "\"Matrix\"",
    ];
    let mut fields: Vec<String> = Vec::new();
    let mut field = |rng: &mut StdRng, name: &str, value: String| {
        if rng.gen_bool(0.6) {
            let colon = pick(rng, &[":", ": ", " : "]);
            fields.push(format!("\"{name}\"{colon}{value}"));
        }
    };
    let year = match rng.gen_range(0..12) {
        0 => format!("\"{}\"", rng.gen_range(1950..2030)),
        1 => format!("{}.5", rng.gen_range(1950..2030)),
        2 => "1.5e3".to_string(),
        _ => rng.gen_range(1950..2030).to_string(),
    };
    field(rng, "year", year);
    let rating = format!("{:.1}", rng.gen_range(0.0..10.0f64));
    field(rng, "rating", rating);
    let name = pick(rng, &names).to_string();
    field(rng, "name", name);
    let tags: Vec<&str> = (0..rng.gen_range(0..4)).map(|_| pick(rng, &tag)).collect();
    field(rng, "tags", format!("[{}]", tags.join(", ")));
    let ok = pick(rng, &["true", "false"]).to_string();
    field(rng, "ok", ok);
    field(rng, "n", "null".to_string());
    let neg = format!("-{}", rng.gen_range(1..100));
    field(rng, "neg", neg);
    field(rng, "nested", "{\"a\": 1, \"b\": [1, 2]}".to_string());
    fields.shuffle(rng);
    let sep = pick(rng, &[",", ", "]);
    format!("{{{}}}", fields.join(sep))
}

/// A FILTER expression: random trees of selectors, literals and every operator, sometimes
/// broken by a character removed or added.
fn vset_filter(rng: &mut StdRng) -> String {
    fn atom(rng: &mut StdRng) -> String {
        let atoms = [
            ".year",
            ".year",
            ".rating",
            ".name",
            ".tags",
            ".ok",
            ".n",
            ".neg",
            ".missing",
            ".nested",
            "1984",
            "2000",
            "0",
            "-2",
            "3.5",
            "1e3",
            "'sf'",
            "\"Matrix\"",
            "'Alien'",
            "''",
            "'at'",
            "'a'",
            "true",
            "false",
            "null",
            "[1, 'sf', 2]",
            "[]",
            "[1984, 1999, 2010]",
            ".",
        ];
        match rng.gen_range(0..10) {
            0 => rng.gen_range(1950..2030).to_string(),
            _ => pick(rng, &atoms).to_string(),
        }
    }
    fn tree(rng: &mut StdRng, depth: u32) -> String {
        if depth == 0 || rng.gen_bool(0.3) {
            return atom(rng);
        }
        match rng.gen_range(0..10) {
            0 => format!("({})", tree(rng, depth - 1)),
            1 => {
                let not = pick(rng, &["!", "not ", "!!", "! "]);
                format!("{not}{}", tree(rng, depth - 1))
            }
            _ => {
                let ops = [
                    "+", "-", "*", "/", "%", "**", "==", "!=", "<", "<=", ">", ">=", "and", "or",
                    "&&", "||", "in", "==", ">", "and",
                ];
                let op = pick(rng, &ops);
                let space = if rng.gen_bool(0.9) { " " } else { "" };
                format!(
                    "{}{space}{op}{space}{}",
                    tree(rng, depth - 1),
                    tree(rng, depth - 1)
                )
            }
        }
    }
    if rng.gen_bool(0.1) {
        // `in` between strings (a substring test) or against a field of another type.
        let needle = pick(
            rng,
            &["'at'", "'Run'", "''", "\"ien\"", "'Alien'", "'sf'", "1"],
        );
        let hay = pick(
            rng,
            &[".name", ".name", "'Blade Runner'", ".tags", ".year", ".n"],
        );
        return format!("{needle} in {hay}");
    }
    let mut expr = tree(rng, 3);
    if rng.gen_bool(0.1) && !expr.is_empty() {
        let at = rng.gen_range(0..expr.len());
        if expr.is_char_boundary(at) {
            if rng.gen_bool(0.5) {
                expr.remove(at);
            } else {
                let c = *[
                    '(', ')', '[', ']', '\'', '"', '$', '.', '#', '=', '<', '!', '&', '|', 'x',
                ]
                .choose(rng)
                .unwrap();
                expr.insert(at, c);
            }
        }
    }
    expr
}

/// One random vector set command line (see `random_vector_set_commands_answer_as_redis_8_does`).
fn vset_line(rng: &mut StdRng) -> Vec<Vec<u8>> {
    let vkey = VKEYS.choose(rng).unwrap();
    // "nokey" stays missing: VADD, the one command that makes a key, writes to the set.
    let key = match rng.gen_range(0..100) {
        0..=4 => "nokey",
        5..=8 => "str",
        _ => vkey.name,
    };
    let element = |rng: &mut StdRng| {
        if rng.gen_bool(0.05) {
            pick(rng, &["nope", ""]).to_string()
        } else {
            pick(rng, &VSET_ELEMENTS).to_string()
        }
    };
    let mut args: Vec<Vec<u8>> = Vec::new();
    fn push(args: &mut Vec<Vec<u8>>, words: &[&str]) {
        args.extend(words.iter().map(|w| w.as_bytes().to_vec()));
    }
    match rng.gen_range(0..100) {
        // VADD key [REDUCE n] vector element [options]
        0..=44 => {
            push(
                &mut args,
                &["VADD", if key == "nokey" { vkey.name } else { key }],
            );
            let mut dim = vkey.dim;
            if let Some(reduce) = vkey.reduce {
                if rng.gen_bool(0.97) {
                    let r = if rng.gen_bool(0.97) {
                        reduce.to_string()
                    } else {
                        pick(rng, &["2", "0", "x", "7"]).to_string()
                    };
                    push(&mut args, &["REDUCE", &r]);
                } else {
                    dim = reduce;
                }
            } else if rng.gen_bool(0.02) {
                push(&mut args, &["REDUCE", "2"]);
            }
            if rng.gen_bool(0.02) {
                dim = rng.gen_range(1..=8);
            }
            let name = element(rng);
            args.extend(vset_vector(rng, dim, name == "zero"));
            // Rarely no element (an option is taken for it), but never a second zero vector.
            if name == "zero" || rng.gen_bool(0.995) {
                args.push(name.into());
            }
            let mut options: Vec<Vec<String>> = Vec::new();
            // A wrong quantization fails on an existing set, and makes a new one with it: never
            // a binary one, whose distances tie (see below).
            let quant = if rng.gen_bool(0.95) {
                vkey.quant
            } else {
                pick(rng, &["Q8", "NOQUANT"])
            };
            if quant != "Q8" || rng.gen_bool(0.3) {
                options.push(vec![quant.to_string()]);
            }
            if rng.gen_bool(0.15) {
                options.push(vec!["CAS".into()]);
            }
            if rng.gen_bool(0.15) {
                let ef = if rng.gen_bool(0.95) {
                    rng.gen_range(1..400).to_string()
                } else {
                    pick(rng, &["0", "-1", "x", "1000001", "1000000"]).to_string()
                };
                options.push(vec!["EF".into(), ef]);
            }
            if rng.gen_bool(0.08) {
                let m = pick(rng, &["16", "16", "16", "16", "16", "8", "3", "4097", "x"]);
                options.push(vec!["M".into(), m.into()]);
            }
            if rng.gen_bool(0.4) {
                options.push(vec!["SETATTR".into(), vset_json(rng)]);
            }
            if rng.gen_bool(0.01) {
                options.push(vec![pick(rng, &["BOGUS", "EF", "SETATTR"]).into()]);
            }
            options.shuffle(rng);
            args.extend(options.into_iter().flatten().map(String::into_bytes));
        }
        45..=48 => push(&mut args, &["VREM", key, &element(rng)]),
        49..=50 => push(&mut args, &["VCARD", key]),
        51 => push(&mut args, &["VDIM", key]),
        52..=56 => {
            push(&mut args, &["VEMB", key, &element(rng)]);
            if rng.gen_bool(0.35) {
                push(
                    &mut args,
                    &[pick(rng, &["RAW", "raw", "RAW", "RAW", "RAW", "BOGUS"])],
                );
            }
        }
        57..=58 => push(&mut args, &["VISMEMBER", key, &element(rng)]),
        59..=61 => push(&mut args, &["VGETATTR", key, &element(rng)]),
        62..=65 => {
            let json = vset_json(rng);
            push(&mut args, &["VSETATTR", key, &element(rng), &json]);
        }
        // VSIM key ELE|VALUES|FP32 ... [options]
        66..=91 => {
            push(&mut args, &["VSIM", key]);
            // Binary vectors are at few distinct distances: only TRUTH orders ties alike.
            let mut exact = vkey.quant == "BIN";
            match rng.gen_range(0..20) {
                0..=6 => {
                    let name = element(rng);
                    exact |= name == "zero";
                    push(&mut args, &[pick(rng, &["ELE", "ele"]), &name]);
                }
                7 => push(&mut args, &[pick(rng, &["FOO", "ELE"])]),
                _ => {
                    let dim = match vkey.reduce {
                        Some(r) if rng.gen_bool(0.3) => r,
                        _ if rng.gen_bool(0.05) => rng.gen_range(1..=8),
                        _ => vkey.dim,
                    };
                    let zero = rng.gen_bool(0.03);
                    exact |= zero;
                    args.extend(vset_vector(rng, dim, zero));
                }
            }
            let truth = exact || rng.gen_bool(0.4);
            let mut options: Vec<Vec<String>> = Vec::new();
            if truth {
                options.push(vec![pick(rng, &["TRUTH", "truth"]).into()]);
            }
            let flag = |rng: &mut StdRng, options: &mut Vec<Vec<String>>, p, word: &str| {
                if rng.gen_bool(p) {
                    options.push(vec![word.to_string()]);
                }
            };
            flag(rng, &mut options, 0.5, "WITHSCORES");
            flag(rng, &mut options, 0.3, "WITHATTRIBS");
            flag(rng, &mut options, 0.15, "NOTHREAD");
            flag(rng, &mut options, 0.01, "BOGUS");
            let mut valued = |rng: &mut StdRng, p, word: &str, good: String, bad: &[&str]| {
                if rng.gen_bool(p) {
                    let value = if rng.gen_bool(0.95) {
                        good
                    } else {
                        pick(rng, bad).to_string()
                    };
                    options.push(vec![word.to_string(), value]);
                }
            };
            let count = rng.gen_range(1..20).to_string();
            valued(rng, 0.4, "COUNT", count, &["0", "-1", "x", ""]);
            let epsilon = format!("{:.2}", rng.gen_range(0.01..1.2f64));
            valued(rng, 0.15, "EPSILON", epsilon, &["0", "-0.5", "x"]);
            // Without TRUTH, an EF below the set's size makes the graph search partial (and
            // its answer depends on the random levels); so does a small FILTER-EF. With TRUTH,
            // a small EF (and COUNT) fills the scan's queue, which orders ties its own way.
            let low = if truth { 1 } else { 30 };
            let ef = if truth && rng.gen_bool(0.7) {
                rng.gen_range(1..12)
            } else {
                rng.gen_range(low..300)
            }
            .to_string();
            valued(rng, 0.15, "EF", ef, &["0", "-1", "x"]);
            let filter_ef = rng.gen_range(low..500).to_string();
            valued(rng, 0.1, "FILTER-EF", filter_ef, &["0", "-1", "x"]);
            if rng.gen_bool(0.45) {
                options.push(vec!["FILTER".into(), vset_filter(rng)]);
            }
            options.shuffle(rng);
            args.extend(options.into_iter().flatten().map(String::into_bytes));
            if rng.gen_bool(0.01) {
                push(&mut args, &[pick(rng, &["COUNT", "FILTER", "EF"])]);
            }
        }
        // The graph's commands, only where the answer does not depend on it ("absent" is no
        // element's name).
        92 => push(
            &mut args,
            &["VRANDMEMBER", key, pick(rng, &["0", "x", "1.5"])],
        ),
        93 => push(&mut args, &["VRANDMEMBER", pick(rng, &["nokey", "str"])]),
        94 => {
            // No such element (a null), or one that may be there with an option that is not
            // WITHSCORES (an arity error, before the key is looked at).
            let (element, option) = *[("absent", "WITHSCORES"), ("absent", ""), ("e1", "BOGUS")]
                .choose(rng)
                .unwrap();
            push(&mut args, &["VLINKS", key, element, option]);
            args.retain(|a| !a.is_empty());
        }
        95 => push(&mut args, &["VLINKS", pick(rng, &["nokey", "str"]), "e1"]),
        96 => push(&mut args, &["VINFO", pick(rng, &["nokey", "str"])]),
        97 => push(&mut args, &["DEL", vkey.name]),
        _ => {
            // Arity errors.
            let command = pick(
                rng,
                &[
                    "VADD",
                    "VREM",
                    "VSIM",
                    "VEMB",
                    "VCARD",
                    "VDIM",
                    "VINFO",
                    "VLINKS",
                    "VRANDMEMBER",
                    "VSETATTR",
                    "VGETATTR",
                    "VISMEMBER",
                ],
            );
            push(&mut args, &[command]);
            let mut n = rng.gen_range(0..5);
            if n == 1 && ["VINFO", "VRANDMEMBER"].contains(&command) {
                n = 0; // a set's VINFO or VRANDMEMBER, not an arity error
            }
            for _ in 0..n {
                push(&mut args, &[key]);
            }
        }
    }
    args
}

/// Random vector set commands over four sets (int8, float, binary, and int8 made with REDUCE)
/// against Redis 8.2.3, in RESP2 and RESP3: VADD (FP32 and VALUES, every option, dimension and
/// quantization mismatches, malformed vectors), VREM, VCARD, VDIM, VEMB (and RAW), VISMEMBER,
/// VGETATTR and VSETATTR (valid and invalid JSON, "" removing), VSIM (by element or vector,
/// every option, FILTER expressions of random shape, errors), wrong types, missing keys and
/// arity errors.
///
/// Only deterministic answers are compared. What depends on the random levels of the graph's
/// nodes is left out: VLINKS, VRANDMEMBER and VINFO on a set (only their errors, missing keys
/// and `VRANDMEMBER key 0` are sent; VINFO's max-level and vset-uid vary), and VSIM without
/// TRUTH where the graph search is partial or meets ties, whose order is then the order the
/// search met them in: an EF or FILTER-EF below the size of the set (sets here have at most 17
/// elements, so EF and FILTER-EF are at least 30 without TRUTH), binary sets (whose distances
/// take a few values) and queries by the zero vector (at distance 1 from everything). With
/// TRUTH every shape is compared, ties included: the scan goes in node order. REDUCE's
/// projection (a Hadamard pattern) and CAS (a thread gathers the neighbours, the one client
/// waits for its reply) answer alike every time. Redis against a second Redis, 160,000 lines
/// of this generator (80 seeds) gave the same replies.
#[test]
fn random_vector_set_commands_answer_as_redis_8_does() {
    for (protocol, seed) in [("2", 8203u64), ("3", 8204)] {
        compare_random(
            &format!("vector sets random RESP{protocol}"),
            seed,
            4000,
            &[&["HELLO", protocol], &["SET", "str", "x"]],
            vset_line,
        );
    }
}

/// One random write (or read) for the INFO keysizes comparison: every counted type, the
/// commands that grow, shrink, empty, move, copy, rename, expire and restore keys, and the
/// SETBIT/BITFIELD growth of empty strings that Redis 8.2.3 leaves uncounted. `next_id` keeps
/// XADD's replies deterministic; TTLs are 1 ms (then waited out) or long.
fn keysizes_line(rng: &mut StdRng, next_id: &mut u64) -> Vec<String> {
    let keys = ["k0", "k1", "k2", "k3", "k4", "k5"];
    let k = pick(rng, &keys).to_string();
    let k2 = pick(rng, &keys).to_string();
    let members: Vec<String> = (0..rng.gen_range(1..6))
        .map(|_| rng.gen_range(0..20).to_string())
        .collect();
    let pairs: Vec<String> = members
        .iter()
        .flat_map(|m| [m.clone(), m.clone()])
        .collect();
    let value = "x".repeat(*[0usize, 1, 3, 4, 9, 17, 40].choose(rng).unwrap());
    let ttl = pick(rng, &["1", "100000"]).to_string();
    let m0 = members[0].clone();
    let s = |words: &[&str]| words.iter().map(|w| w.to_string()).collect::<Vec<_>>();
    let with = |mut head: Vec<String>, tail: &[String]| {
        head.extend_from_slice(tail);
        head
    };
    match rng.gen_range(0..36) {
        0 => s(&["SET", &k, &value]),
        1 => s(&["APPEND", &k, &value]),
        2 => s(&["SETRANGE", &k, &rng.gen_range(0..40).to_string(), &value]),
        3 => s(&["INCRBY", &k, &rng.gen_range(-2000..2000).to_string()]),
        4 => s(&["SETBIT", &k, &rng.gen_range(0..400).to_string(), "1"]),
        5 => s(&["BITFIELD", &k, "OVERFLOW", "FAIL", "INCRBY", "u8", &rng.gen_range(0..900).to_string(), "300"]),
        6 => s(&["BITFIELD", &k, "SET", "u8", &rng.gen_range(0..900).to_string(), "1"]),
        7 => with(s(&["RPUSH", &k]), &members),
        8 => s(&["LPOP", &k, &rng.gen_range(1..4).to_string()]),
        9 => s(&["LTRIM", &k, "1", "-1"]),
        10 => s(&["LMOVE", &k, &k2, "LEFT", "RIGHT"]),
        11 => with(s(&["SADD", &k]), &members),
        12 => with(s(&["SREM", &k]), &members),
        13 => s(&["SINTERSTORE", &k, &k2, &k]),
        14 => with(s(&["ZADD", &k]), &pairs),
        15 => s(&["ZPOPMIN", &k, "2"]),
        16 => s(&["ZUNIONSTORE", &k, "2", &k, &k2]),
        17 => with(s(&["HSET", &k]), &pairs),
        18 => with(s(&["HDEL", &k]), &members),
        19 => s(&["HPEXPIRE", &k, &ttl, "FIELDS", "1", &m0]),
        20 => s(&["HSETEX", &k, "PX", &ttl, "FIELDS", "1", &m0, "v"]),
        21 => s(&["PEXPIRE", &k, &ttl]),
        22 => s(&["DEL", &k]),
        23 => s(&["RENAME", &k, &k2]),
        24 => s(&["COPY", &k, &k2, "DB", "1", "REPLACE"]),
        25 => s(&["MOVE", &k, "1"]),
        26 => s(&["SWAPDB", "0", "1"]),
        27 => s(&["SELECT", pick(rng, &["0", "1"])]),
        28 => with(s(&["PFADD", &k]), &members),
        29 => {
            *next_id += 1;
            s(&["XADD", &k, &format!("{next_id}-1"), "f", "v"])
        }
        30 => s(&["SORT", &k2, "STORE", &k]),
        31 => s(&["GETDEL", &k]),
        32 => s(&["EVAL", "redis.call('rpush', KEYS[1], 'a', 'b', 'c') return redis.call('set', KEYS[2], 'abcdefghij')", "2", &k, &k2]),
        33 if rng.gen_bool(0.1) => s(&["DEBUG", "RELOAD"]),
        34 if rng.gen_bool(0.1) => s(&["FLUSHDB"]),
        35 => s(&["GET", &k]),
        _ => s(&["EXISTS", &k, &k2]),
    }
}

/// Random writes across every type, with INFO keysizes compared with Redis 8.2.3's after each
/// one (and the replies with its replies). Active expiry is off on both, so that keys and fields
/// whose TTL has passed go when a command touches them, at the same moment in both.
#[test]
fn random_writes_keep_info_keysizes_as_redis_8_does() {
    let Some(redis) =
        RedisServer::start_redis8("keysizes random", &["--enable-debug-command", "yes"])
    else {
        return;
    };
    let ours = support::builder_as("8.2")
        .config("enable-debug-command", "yes")
        .unwrap()
        .start()
        .unwrap();
    let mut theirs_conn = Conn::connect(redis.addr()).unwrap();
    let mut ours_conn = Conn::connect(ours.addr()).unwrap();
    for conn in [&mut theirs_conn, &mut ours_conn] {
        assert_eq!(
            conn.command(&["DEBUG", "SET-ACTIVE-EXPIRE", "0"]),
            b"+OK\r\n"
        );
    }
    let mut rng = StdRng::seed_from_u64(8023);
    let mut next_id = 0;
    let mut failures = Vec::new();
    let mut seen_lines = std::collections::BTreeSet::new();
    for _ in 0..4000 {
        let args = keysizes_line(&mut rng, &mut next_id);
        let expected = theirs_conn.command(&args);
        let got = ours_conn.command(&args);
        // A 1 ms TTL has passed before the next command, in both servers.
        if ["PEXPIRE", "HPEXPIRE", "HSETEX"].contains(&args[0].as_str()) {
            std::thread::sleep(std::time::Duration::from_millis(3));
        }
        let theirs_info = theirs_conn.command(&["INFO", "keysizes"]);
        let ours_info = ours_conn.command(&["INFO", "keysizes"]);
        for line in String::from_utf8_lossy(&theirs_info).lines() {
            seen_lines.insert(line.split(':').next().unwrap_or("").to_string());
        }
        if expected != got || theirs_info != ours_info {
            failures.push(format!(
                "{}\n    redis:   {} {}\n    embedis: {} {}",
                args.join(" "),
                show(&expected),
                show(&theirs_info),
                show(&got),
                show(&ours_info)
            ));
            break;
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // The run reached every counted type in both databases (else it proves less than it says).
    for db in ["db0", "db1"] {
        for kind in [
            "strings_sizes",
            "lists_items",
            "sets_items",
            "zsets_items",
            "hashes_items",
        ] {
            let name = format!("{db}_distrib_{kind}");
            assert!(seen_lines.contains(&name), "{name} never shown");
        }
    }
}

/// INFO keysizes's lines recomputed from what the server holds (SCAN, then each key's length),
/// for the paths no command drives: eviction and the active expiry of hash fields.
fn recount_keysizes(c: &mut Client) -> String {
    let mut lines = String::from("# Keysizes\r\n");
    for db in 0..16 {
        c.cmd(&["SELECT", &db.to_string()]);
        let mut bins = std::collections::BTreeMap::<(usize, u32), u64>::new();
        let listing = c.cmd(&["KEYS", "*"]);
        let keys = listing.lines().filter(|l| !l.starts_with(['*', '$']));
        for key in keys {
            let (kind, length) = match c.text(&["TYPE", key]).as_str() {
                "string" => (0, "STRLEN"),
                "list" => (1, "LLEN"),
                "set" => (2, "SCARD"),
                "zset" => (3, "ZCARD"),
                "hash" => (4, "HLEN"),
                _ => continue,
            };
            let reply = c.cmd(&[length, key]);
            let len: u64 = reply.trim_start_matches(':').trim_end().parse().unwrap();
            *bins
                .entry((kind, u64::BITS - len.leading_zeros()))
                .or_default() += 1;
        }
        let names = [
            "strings_sizes",
            "lists_items",
            "sets_items",
            "zsets_items",
            "hashes_items",
        ];
        for (kind, name) in names.iter().enumerate() {
            let entries: Vec<String> = bins
                .iter()
                .filter(|((k, _), _)| *k == kind)
                .map(|((_, bin), n)| match bin {
                    0 => format!("0={n}"),
                    b if b - 1 < 10 => format!("{}={n}", 1u64 << (b - 1)),
                    b => format!("{}K={n}", 1u64 << (b - 11)),
                })
                .collect();
            if !entries.is_empty() {
                lines.push_str(&format!("db{db}_distrib_{name}:{}\r\n", entries.join(",")));
            }
        }
    }
    c.cmd(&["SELECT", "0"]);
    lines
}

#[test]
fn keysizes_follow_eviction_and_active_field_expiry() {
    let server = support::builder_as("8.2").start().unwrap();
    let mut c = Client::connect(server.addr());
    let mut rng = StdRng::seed_from_u64(7);
    // The fields due in 1 ms must not expire between INFO and the recount below (a loaded
    // machine can run the active cycle in between): the cycle waits until both are read.
    c.cmd(&["DEBUG", "SET-ACTIVE-EXPIRE", "0"]);
    for i in 0..300 {
        let key = format!("k{i}");
        match i % 3 {
            0 => c.cmd(&["SET", &key, &"v".repeat(rng.gen_range(0..3000))]),
            1 => c.cmd(&["RPUSH", &key, "a", "b", "c"]),
            _ => c.cmd(&["HSET", &key, "a", "1", "b", "2", "c", "3", "d", "4"]),
        };
        if i % 3 == 2 && i % 2 == 0 {
            c.cmd(&["HPEXPIRE", &key, "1", "FIELDS", "2", "a", "b"]);
        }
    }
    assert_eq!(c.text(&["INFO", "keysizes"]), recount_keysizes(&mut c));
    c.cmd(&["DEBUG", "SET-ACTIVE-EXPIRE", "1"]);
    // The active cycle removes the due fields: the hashes of 4 fields move to the bin of 2.
    // (Eventually: a loaded machine may delay the tick that runs the cycle.)
    support::eventually("the active cycle to remove the due fields", || {
        c.text(&["INFO", "keysizes"])
            .contains("hashes_items:2=50,4=50")
    });
    let after_expiry = c.text(&["INFO", "keysizes"]);
    assert_eq!(after_expiry, recount_keysizes(&mut c));
    // Eviction removes keys behind every command's back.
    c.cmd(&["CONFIG", "SET", "maxmemory-policy", "allkeys-random"]);
    let info = c.text(&["INFO", "memory"]);
    let used_memory: u64 = info
        .lines()
        .find_map(|l| l.strip_prefix("used_memory:"))
        .unwrap()
        .parse()
        .unwrap();
    c.cmd(&[
        "CONFIG",
        "SET",
        "maxmemory",
        &(used_memory - 200_000).to_string(),
    ]);
    c.cmd(&["SET", "trigger", "x"]);
    // Every command evicts while memory is over the limit: lift it before counting.
    c.cmd(&["CONFIG", "SET", "maxmemory", "0"]);
    let left = c.cmd(&["DBSIZE"]);
    let left: u64 = left.trim_start_matches(':').trim_end().parse().unwrap();
    assert!(left < 300, "eviction ran ({left} keys left)");
    assert_eq!(c.text(&["INFO", "keysizes"]), recount_keysizes(&mut c));
    // FLUSHALL empties every histogram.
    c.cmd(&["FLUSHALL"]);
    assert_eq!(c.text(&["INFO", "keysizes"]), "# Keysizes\r\n");
}

#[test]
fn keysizes_section_exists_from_8_2() {
    let as_7_4 = support::builder_as("7.4").start().unwrap();
    let as_8_2 = support::builder_as("8.2").start().unwrap();
    let mut old = Client::connect(as_7_4.addr());
    let mut new = Client::connect(as_8_2.addr());
    for c in [&mut old, &mut new] {
        c.cmd(&["SET", "s", "abc"]);
    }
    assert_eq!(old.text(&["INFO", "keysizes"]), "");
    assert!(!old.text(&["INFO", "everything"]).contains("Keysizes"));
    let expected = "# Keysizes\r\ndb0_distrib_strings_sizes:2=1\r\n";
    assert_eq!(new.text(&["INFO", "keysizes"]), expected);
    for section in [&[][..], &["everything"], &["all"], &["default"]] {
        let mut args = vec!["INFO"];
        args.extend_from_slice(section);
        let info = new.text(&args);
        assert!(
            info.ends_with(&format!("\r\n\r\n{expected}")),
            "INFO {section:?}: {info}"
        );
    }
}

/// CLUSTER SLOT-STATS (8.2) on a cluster node serving half the slots, against a cluster-enabled
/// Redis 8.2.3: ranges and rankings of key counts (ties, both orders, limits, slots served or
/// not), every argument error, RESP2 and RESP3. The tests/diff8 fixtures run on servers
/// without cluster mode, hence this test.
#[test]
fn cluster_slot_stats_answer_as_redis_8_does() {
    let bus = support::free_port().to_string();
    let cluster_args = [
        "--cluster-enabled",
        "yes",
        "--cluster-config-file",
        "nodes.conf",
        "--cluster-port",
        &bus,
        "--cluster-require-full-coverage",
        "no",
    ];
    let Some(redis) = RedisServer::start_redis8("cluster slot-stats", &cluster_args) else {
        return;
    };
    let ours = support::builder_as("8.2")
        .config("cluster-enabled", "yes")
        .unwrap()
        .config("cluster-port", &support::free_port().to_string())
        .unwrap()
        .config("cluster-require-full-coverage", "no")
        .unwrap()
        .start()
        .unwrap();
    let mut theirs_conn = Conn::connect(redis.addr()).unwrap();
    let mut ours_conn = Conn::connect(ours.addr()).unwrap();
    for conn in [&mut theirs_conn, &mut ours_conn] {
        assert_eq!(
            conn.command(&["CLUSTER", "ADDSLOTSRANGE", "0", "8000"]),
            b"+OK\r\n"
        );
        // The node takes up its new state in its next cluster tick.
        for _ in 0..100 {
            let info = conn.command(&["CLUSTER", "INFO"]);
            if String::from_utf8_lossy(&info).contains("cluster_state:ok") {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }
    let mut lines: Vec<Vec<String>> = Vec::new();
    let mut add = |line: &str| lines.push(line.split(' ').map(str::to_string).collect());
    // Keys in served slots, some sharing one (a slot not served refuses writes).
    for key in [
        "b", "{b}x", "{b}y", "c", "f", "{f}1", "g", "j", "k", "n", "o", "bar",
    ] {
        add(&format!("SET {key} 1"));
    }
    for args in [
        "",
        "SLOTSRANGE",
        "SLOTSRANGE 0",
        "SLOTSRANGE 0 2 x",
        "SLOTSRANGE 2 1",
        "SLOTSRANGE -1 5",
        "SLOTSRANGE 0 16384",
        "SLOTSRANGE a 1",
        "SLOTSRANGE +5 6",
        "SLOTSRANGE 7990 8010",
        "slotsrange 3300 3300",
        "SLOTSRANGE 15495 15496",
        "SLOTSRANGE 0 16383",
        "ORDERBY",
        "ORDERBY cpu-usec",
        "ORDERBY network-bytes-in LIMIT 1",
        "ORDERBY network-bytes-out",
        "ORDERBY bogus LIMIT 0",
        "ORDERBY key-count LIMIT 0",
        "ORDERBY key-count LIMIT 16385",
        "ORDERBY key-count LIMIT abc",
        "ORDERBY key-count LIMIT +3",
        "ORDERBY key-count LIMIT",
        "ORDERBY key-count LIMIT 1 bogus",
        "ORDERBY key-count LIMIT 1 LIMIT 0",
        "ORDERBY key-count LIMIT 1 LIMIT 2",
        "ORDERBY key-count ASC DESC",
        "ORDERBY key-count DESC LIMIT",
        "BOGUS x",
        "ORDERBY key-count LIMIT 6",
        "orderby KEY-COUNT limit 6 asc",
        "ORDERBY key-count DESC",
        "ORDERBY key-count ASC",
    ] {
        add(format!("CLUSTER SLOT-STATS {args}").trim_end());
    }
    add("COMMAND INFO cluster|slot-stats");
    add("HELLO 3");
    add("CLUSTER SLOT-STATS ORDERBY key-count LIMIT 4");
    add("CLUSTER SLOT-STATS SLOTSRANGE 3300 3301");
    let mut failures = Vec::new();
    for args in &lines {
        let expected = theirs_conn.command(args);
        let got = ours_conn.command(args);
        if args[0] == "SET" {
            assert_eq!(expected, b"+OK\r\n", "the node serves {}", args[1]);
        }
        // HELLO's client ids and modules differ; its protocol switch is what matters here.
        if args[0] != "HELLO" && expected != got {
            failures.push(format!(
                "{}\n    redis:   {}\n    embedis: {}",
                args.join(" "),
                show(&expected[..expected.len().min(400)]),
                show(&got[..got.len().min(400)])
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn cluster_slot_stats_exists_from_8_2_and_needs_cluster_mode() {
    let as_7_4 = support::builder_as("7.4").start().unwrap();
    let as_8_2 = support::builder_as("8.2").start().unwrap();
    let mut old = Client::connect(as_7_4.addr());
    let mut new = Client::connect(as_8_2.addr());
    assert_eq!(
        old.text(&["CLUSTER", "SLOT-STATS", "SLOTSRANGE", "0", "1"]),
        "ERR unknown subcommand 'SLOT-STATS'. Try CLUSTER HELP."
    );
    assert_eq!(
        new.text(&["CLUSTER", "SLOT-STATS", "SLOTSRANGE", "0", "1"]),
        "ERR This instance has cluster support disabled"
    );
}

/// CONFIG SET's bounds that changed after 7.0, per `compat-version`: `nothing` as a log level
/// from 7.2 (Redis 7.2.6's config.c), `maxmemory-samples` up to 64 from 7.4 (7.4.1), the sign
/// check of unsigned parameters from 8.2 (8.2.3). tests/diff8/config.txt compares 8.2's answers
/// with Redis 8.2.3 line by line, tests/diff/ 7.0's with 7.0.15.
#[test]
fn config_set_bounds_follow_the_version() {
    let prefix =
        |name: &str| format!("ERR CONFIG SET failed (possibly related to argument '{name}') - ");
    for (version, nothing, samples_max, unsigned) in [
        ("7.0", false, "2147483647", false),
        ("7.2", true, "2147483647", false),
        ("7.4", true, "64", false),
        ("8.2", true, "64", true),
    ] {
        let server = support::builder_as(version).start().unwrap();
        let mut c = Client::connect(server.addr());
        let loglevel = c.text(&["CONFIG", "SET", "loglevel", "nothing"]);
        assert_eq!(loglevel == "OK", nothing, "{version}: {loglevel}");
        assert_eq!(
            c.text(&["CONFIG", "SET", "maxmemory-samples", "0"]),
            format!(
                "{}argument must be between 1 and {samples_max} inclusive",
                prefix("maxmemory-samples")
            ),
            "{version}"
        );
        let at_65 = c.text(&["CONFIG", "SET", "maxmemory-samples", "65"]);
        assert_eq!(at_65 == "OK", samples_max != "64", "{version}: {at_65}");
        let negative = c.text(&["CONFIG", "SET", "hash-max-listpack-entries", "-1"]);
        let expected = if unsigned {
            "argument must be greater or equal to 0"
        } else {
            "argument must be between 0 and 9223372036854775807 inclusive"
        };
        assert_eq!(
            negative,
            format!("{}{expected}", prefix("hash-max-listpack-entries"))
        );
        let huge = c.text(&["CONFIG", "SET", "maxmemory", "9223372036854775808"]);
        if unsigned {
            assert_eq!(
                huge,
                format!(
                    "{}argument must be greater or equal to 0",
                    prefix("maxmemory")
                )
            );
        } else {
            assert_eq!(
                huge, "OK",
                "{version}: maxmemory is unsigned up to 2^64 - 1"
            );
            let got = c.cmd(&["CONFIG", "GET", "maxmemory"]);
            assert!(got.contains("9223372036854775808"), "{version}: {got}");
        }
    }
}
