//! Properties: any value written (in a file or a DUMP payload) reads back equal, and arbitrary
//! or mutated bytes fed to the reader and to parse_dump_payload give errors, never panics.

use embedis_rdb::encodings::{intset_encode, listpack_encode};
use embedis_rdb::*;
use proptest::collection::{btree_map, btree_set, vec};
use proptest::prelude::*;

fn bytes() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        vec(any::<u8>(), 0..40),
        any::<i64>().prop_map(|i| i.to_string().into_bytes()),
        (0usize..300).prop_map(|n| b"abc".repeat(n)),
    ]
}

/// A field deadline as the hash types store it: 0 (none), a time near now, or near the largest.
fn deadline() -> impl Strategy<Value = u64> {
    prop_oneof![
        Just(0u64),
        1_700_000_000_000u64..1_800_000_000_000,
        (1u64 << 48) - 1000..(1u64 << 48),
        1u64..5,
    ]
}

fn id() -> impl Strategy<Value = StreamId> {
    (any::<u64>(), any::<u64>()).prop_map(|(ms, seq)| StreamId { ms, seq })
}

fn stream() -> impl Strategy<Value = RdbValue> {
    let nodes = vec(
        (id(), vec(bytes(), 1..6).prop_map(|i| listpack_encode(&i))),
        0..3,
    );
    let group = (
        bytes(),
        id(),
        any::<u64>(),
        vec((id(), any::<i64>(), any::<u64>()), 0..4),
        vec((bytes(), any::<i64>(), any::<prop::sample::Index>()), 0..3),
    )
        .prop_map(|(name, last_id, entries_read, pel, consumers)| {
            let pel: Vec<StreamNack> = pel
                .into_iter()
                .map(|(id, t, c)| StreamNack {
                    id,
                    delivery_time_ms: t,
                    delivery_count: c,
                })
                .collect();
            let consumers = consumers
                .into_iter()
                .map(|(name, seen, pick)| StreamConsumer {
                    name,
                    seen_time_ms: seen,
                    // Type 19 has no active time: it reads back as the seen time.
                    active_time_ms: seen,
                    pel: if pel.is_empty() {
                        vec![]
                    } else {
                        vec![pel[pick.index(pel.len())].id]
                    },
                })
                .collect();
            StreamGroup {
                name,
                last_id,
                entries_read,
                pel,
                consumers,
            }
        });
    (
        nodes,
        any::<u64>(),
        id(),
        id(),
        id(),
        any::<u64>(),
        vec(group, 0..3),
    )
        .prop_map(
            |(nodes, length, last_id, first_id, max_deleted_id, entries_added, groups)| {
                RdbValue::Stream(Box::new(RdbStream {
                    nodes,
                    length,
                    last_id,
                    first_id,
                    max_deleted_id,
                    entries_added,
                    groups,
                }))
            },
        )
}

fn value() -> impl Strategy<Value = RdbValue> {
    let score = any::<f64>().prop_filter("NaN is not a score", |s| !s.is_nan());
    prop_oneof![
        bytes().prop_map(RdbValue::String),
        vec(
            prop_oneof![
                vec(bytes(), 1..8).prop_map(|i| ListNode {
                    container: NodeContainer::Packed,
                    data: listpack_encode(&i)
                }),
                bytes().prop_map(|d| ListNode {
                    container: NodeContainer::Plain,
                    data: d
                }),
            ],
            0..4
        )
        .prop_map(RdbValue::List),
        vec(any::<i64>(), 1..20).prop_map(|v| RdbValue::SetIntset(intset_encode(&v))),
        // Members and fields are unique, as in any value Redis writes: the loader refuses
        // duplicates as Redis's does ("Duplicate set members detected" and the like).
        btree_set(bytes(), 0..10).prop_map(|s| RdbValue::Set(s.into_iter().collect())),
        btree_set(bytes(), 0..5).prop_map(|v| {
            let flat: Vec<Vec<u8>> = v.into_iter().flat_map(|m| [m, b"1.5".to_vec()]).collect();
            RdbValue::ZsetListpack(listpack_encode(&flat))
        }),
        btree_map(bytes(), score, 0..10).prop_map(|e| {
            let mut e: Vec<(Vec<u8>, f64)> = e.into_iter().collect();
            // The model's order: ascending by (score, member), as a skiplist holds it.
            e.sort_by(|a, b| a.1.partial_cmp(&b.1).unwrap().then_with(|| a.0.cmp(&b.0)));
            RdbValue::Zset(e)
        }),
        btree_map(bytes(), bytes(), 0..5).prop_map(|p| {
            let flat: Vec<Vec<u8>> = p.into_iter().flat_map(|(f, v)| [f, v]).collect();
            RdbValue::HashListpack(listpack_encode(&flat))
        }),
        btree_map(bytes(), bytes(), 0..10).prop_map(|h| RdbValue::Hash(h.into_iter().collect())),
        btree_map(bytes(), (bytes(), deadline()), 0..10).prop_map(|f| RdbValue::HashWithTtls(
            f.into_iter()
                .map(|(field, (value, expire_ms))| TtlField {
                    field,
                    value,
                    expire_ms
                })
                .collect()
        )),
        (
            any::<u64>(),
            btree_map(bytes(), (bytes(), deadline()), 0..6)
        )
            .prop_map(|(min_expire, f)| {
                let mut f: Vec<(Vec<u8>, Vec<u8>, u64)> =
                    f.into_iter().map(|(k, (v, d))| (k, v, d)).collect();
                // The listpack's order: fields with a deadline first, ascending, then the others.
                f.sort_by_key(|t| (t.2 == 0, t.2));
                let flat: Vec<Vec<u8>> = f
                    .into_iter()
                    .flat_map(|(k, v, d)| [k, v, d.to_string().into_bytes()])
                    .collect();
                RdbValue::HashListpackEx {
                    min_expire,
                    listpack: listpack_encode(&flat),
                }
            }),
        stream(),
    ]
}

fn meta() -> impl Strategy<Value = EntryMeta> {
    (
        any::<Option<i64>>(),
        any::<Option<u64>>(),
        any::<Option<u8>>(),
    )
        .prop_map(|(expire_ms, idle, freq)| EntryMeta {
            expire_ms,
            idle,
            freq,
        })
}

fn write_file(entries: &[(Vec<u8>, RdbValue, EntryMeta)], opts: WriterOptions) -> Vec<u8> {
    let mut w = RdbWriter::new(Vec::new(), opts).unwrap();
    w.aux(b"redis-ver", b"7.0.15").unwrap();
    w.function(b"#!lua name=x\nredis.register_function('f', function() return 1 end)")
        .unwrap();
    w.select_db(3, entries.len() as u64, 0).unwrap();
    for (k, v, m) in entries {
        w.entry(k, v, *m).unwrap();
    }
    w.finish().unwrap()
}

fn read_all(bytes: &[u8]) -> Result<Vec<Event>, RdbError> {
    let mut r = RdbReader::new(bytes)?;
    let mut out = Vec::new();
    loop {
        let e = r.next_event()?;
        let end = matches!(e, Event::Eof { .. });
        out.push(e);
        if end {
            return Ok(out);
        }
    }
}

proptest! {
    #[test]
    fn values_round_trip(entries in vec((bytes(), value(), meta()), 0..6), compression: bool, checksum: bool) {
        let file = write_file(&entries, WriterOptions {
                compression,
                checksum,
                ..WriterOptions::default()
            });
        let events = read_all(&file).unwrap();
        let got: Vec<(Vec<u8>, RdbValue, EntryMeta)> = events
            .into_iter()
            .filter_map(|e| match e {
                Event::Entry { key, value, meta } => Some((key, value, meta)),
                _ => None,
            })
            .collect();
        prop_assert_eq!(&got, &entries);
        for (_, v, _) in &entries {
            let p = dump_payload_with(v, compression);
            prop_assert_eq!(&parse_dump_payload(&p).unwrap(), v);
        }
    }

    #[test]
    fn mutated_files_never_panic(entries in vec((bytes(), value(), meta()), 1..4), flips in vec((any::<prop::sample::Index>(), any::<u8>()), 1..4), cut in any::<prop::sample::Index>()) {
        let mut file = write_file(&entries, WriterOptions::default());
        for (at, b) in flips {
            let i = at.index(file.len());
            file[i] = b;
        }
        let _ = read_all(&file);
        let _ = read_all(&file[..cut.index(file.len())]);
        // Without the checksum the corrupted body itself is parsed.
        let n = file.len();
        file[n - 8..].fill(0);
        let _ = read_all(&file);
    }

    #[test]
    fn mutated_payloads_never_panic(v in value(), at in any::<prop::sample::Index>(), b: u8) {
        let mut p = dump_payload(&v);
        let i = at.index(p.len() - 10);
        p[i] = b;
        // Recompute the footer so the mutated body reaches the value parser.
        let n = p.len();
        let crc = embedis_rdb::crc64::crc64(&p[..n - 8]);
        p[n - 8..].copy_from_slice(&crc.to_le_bytes());
        let _ = parse_dump_payload(&p);
    }

    #[test]
    fn random_bytes_never_panic(data in vec(any::<u8>(), 0..200)) {
        let _ = parse_dump_payload(&data);
        let mut file = b"REDIS0010".to_vec();
        file.extend_from_slice(&data);
        let _ = read_all(&file);
    }
}

#[test]
fn checksum_errors_and_zero_checksum() {
    let entries = vec![(
        b"k".to_vec(),
        RdbValue::String(b"v".to_vec()),
        EntryMeta::default(),
    )];
    let mut file = write_file(&entries, WriterOptions::default());
    let n = file.len();
    file[n - 1] ^= 1;
    let err = read_all(&file).unwrap_err();
    assert!(matches!(err, RdbError::BadChecksum { .. }));
    assert!(err
        .to_string()
        .starts_with("Wrong RDB checksum expected: ("));
    let file = write_file(
        &entries,
        WriterOptions {
            compression: true,
            checksum: false,
            ..WriterOptions::default()
        },
    );
    assert_eq!(&file[file.len() - 8..], &[0; 8]);
    assert!(matches!(
        read_all(&file).unwrap().last(),
        Some(Event::Eof { checksum: 0 })
    ));
    assert!(matches!(
        RdbReader::new(&b"REDIS0011"[..]),
        Err(RdbError::BadHeader(_))
    ));
    assert!(matches!(
        parse_dump_payload(&[0, 1, b'x', 11, 0, 0, 0, 0, 0, 0, 0, 0, 0]),
        Err(RdbError::BadDumpPayload)
    ));
}
