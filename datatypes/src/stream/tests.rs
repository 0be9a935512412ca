//! The stream against a model: a `BTreeMap` from ID to field-value pairs, with Redis's trimming
//! rules applied to a model of its node boundaries (approximate trimming removes whole nodes).

use super::*;
use proptest::prelude::*;
use std::collections::BTreeMap;

type Pairs = Vec<(Vec<u8>, Vec<u8>)>;

#[derive(Debug, Clone)]
enum Op {
    /// Add an entry `gap` ms after the last one (0 = same ms, next sequence).
    Add(u64, Pairs),
    Delete(usize),
    TrimLen(u64, bool, u64),
    TrimMin(usize, bool),
    Range(usize, usize),
}

fn pairs() -> impl Strategy<Value = Pairs> {
    let field = prop_oneof![
        Just(b"f1".to_vec()),
        Just(b"f2".to_vec()),
        proptest::collection::vec(any::<u8>(), 0..6)
    ];
    let value = proptest::collection::vec(any::<u8>(), 0..40);
    prop_oneof![
        3 => Just(vec![(b"f1".to_vec(), b"v1".to_vec()), (b"f2".to_vec(), b"v2".to_vec())]),
        2 => proptest::collection::vec((field, value), 1..4),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        8 => (0u64..3, pairs()).prop_map(|(g, p)| Op::Add(g, p)),
        2 => any::<usize>().prop_map(Op::Delete),
        1 => (0u64..40, any::<bool>(), 0u64..30).prop_map(|(n, a, l)| Op::TrimLen(n, a, l)),
        1 => (any::<usize>(), any::<bool>()).prop_map(|(i, a)| Op::TrimMin(i, a)),
        2 => (any::<usize>(), any::<usize>()).prop_map(|(a, b)| Op::Range(a, b)),
    ]
}

fn flat(p: &Pairs) -> Vec<Vec<u8>> {
    p.iter().flat_map(|(f, v)| [f.clone(), v.clone()]).collect()
}

fn collect<'a>(it: impl Iterator<Item = EntryRef<'a>>) -> Vec<(StreamId, Pairs)> {
    it.map(|e| {
        (
            e.id,
            e.fields().map(|(f, v)| (f.to_vec(), v.to_vec())).collect(),
        )
    })
    .collect()
}

/// The model: the entries in ID order (trimming removes from the front, so the model removes
/// as many as the stream reports, after checking the count against the rules).
struct Model {
    entries: BTreeMap<StreamId, (Pairs, usize)>,
    last: StreamId,
}

proptest! {
    #[test]
    fn stream_matches_model(ops in proptest::collection::vec(op(), 1..120), per_node in 1u64..6) {
        let limits = NodeLimits { max_bytes: 0, max_entries: per_node };
        let mut s = Stream::new();
        let mut m = Model { entries: BTreeMap::new(), last: StreamId::MIN };
        let mut ever = 0u64;
        for op in ops {
            match op {
                Op::Add(gap, p) => {
                    let id = if gap == 0 { StreamId::new(m.last.ms, m.last.seq + 1) } else { StreamId::new(m.last.ms + gap, 0) };
                    s.append(id, &flat(&p), limits);
                    ever += 1;
                    m.entries.insert(id, (p, 0));
                    m.last = id;
                }
                Op::Delete(i) => {
                    if m.entries.is_empty() { prop_assert_eq!(s.delete_ids(&[StreamId::new(1, 1)]), 0); continue; }
                    let id = *m.entries.keys().nth(i % m.entries.len()).unwrap();
                    m.entries.remove(&id);
                    prop_assert_eq!(s.delete_ids(&[id, id]), 1);
                    prop_assert!(s.max_deleted_entry_id >= id);
                }
                Op::TrimLen(max, approx, limit) => {
                    let before = m.entries.len() as u64;
                    let limit = if approx { limit } else { 0 };
                    let removed = s.trim(Trim { to: TrimTo::MaxLen(max), approx, limit, refs: Refs::KeepRef });
                    prop_assert_eq!(s.length, before - removed);
                    if !approx {
                        prop_assert_eq!(s.length, before.min(max));
                    } else {
                        // Whole nodes only: what is left starts a node.
                        prop_assert!(s.length >= max.min(before));
                    }
                    let keep: Vec<StreamId> = m.entries.keys().copied().skip(removed as usize).collect();
                    m.entries.retain(|id, _| keep.contains(id));
                }
                Op::TrimMin(i, approx) => {
                    let min = if m.entries.is_empty() { StreamId::new(1, 0) } else {
                        *m.entries.keys().nth(i % m.entries.len()).unwrap()
                    };
                    let before = m.entries.len() as u64;
                    let removed = s.trim(Trim { to: TrimTo::MinId(min), approx, limit: 0, refs: Refs::KeepRef });
                    let below = m.entries.range(..min).count() as u64;
                    if approx { prop_assert!(removed <= below) } else { prop_assert_eq!(removed, below) }
                    let gone: Vec<StreamId> = m.entries.keys().copied().take(removed as usize).collect();
                    for id in gone { m.entries.remove(&id); }
                    prop_assert_eq!(s.length, before - removed);
                }
                Op::Range(a, b) => {
                    let ids: Vec<StreamId> = m.entries.keys().copied().collect();
                    let pick = |i: usize| if ids.is_empty() { StreamId::new(i as u64 % 7, 0) } else { ids[i % ids.len()] };
                    let (lo, hi) = (pick(a), pick(b));
                    let want: Vec<(StreamId, Pairs)> = m.entries.range(lo..=hi.max(lo)).filter(|_| lo <= hi).map(|(k, (p, _))| (*k, p.clone())).collect();
                    prop_assert_eq!(collect(s.range(lo, hi)), want.clone());
                    let mut rev = want;
                    rev.reverse();
                    prop_assert_eq!(collect(s.rev_range(lo, hi)), rev);
                }
            }
            let all: Vec<(StreamId, Pairs)> = m.entries.iter().map(|(k, (p, _))| (*k, p.clone())).collect();
            prop_assert_eq!(collect(s.range(StreamId::MIN, StreamId::MAX)), all.clone());
            prop_assert_eq!(s.length, all.len() as u64);
            prop_assert_eq!(s.first_id, all.first().map(|e| e.0).unwrap_or(StreamId::MIN));
            prop_assert_eq!(s.entries_added, ever);
            prop_assert_eq!(s.edge(true).map(|e| e.id), all.last().map(|e| e.0));
        }
    }
}

#[test]
fn approximate_trim_removes_whole_nodes_only() {
    let limits = NodeLimits {
        max_bytes: 0,
        max_entries: 10,
    };
    let mut s = Stream::new();
    for i in 1..=100u64 {
        s.append(StreamId::new(i, 0), &[b"f".as_slice(), b"v"], limits);
    }
    assert_eq!(s.node_count(), 10);
    // 100 entries in nodes of 10: MAXLEN ~ 55 keeps 60; with LIMIT 30, three nodes at most.
    let removed = s.trim(Trim {
        to: TrimTo::MaxLen(55),
        approx: true,
        limit: 30,
        refs: Refs::KeepRef,
    });
    assert_eq!((removed, s.length), (30, 70));
    let removed = s.trim(Trim {
        to: TrimTo::MaxLen(55),
        approx: true,
        limit: 0,
        refs: Refs::KeepRef,
    });
    assert_eq!((removed, s.length), (10, 60));
    let removed = s.trim(Trim {
        to: TrimTo::MaxLen(55),
        approx: false,
        limit: 0,
        refs: Refs::KeepRef,
    });
    assert_eq!((removed, s.length), (5, 55));
    assert_eq!(s.first_id, StreamId::new(46, 0));
}

#[test]
fn node_boundaries_follow_redis_listpack_bytes() {
    // With the default 4096 bytes, entries of 1000-byte values fill a node after four entries
    // (Redis's listpack passes 4096 with the fifth).
    let mut s = Stream::new();
    let big = vec![b'x'; 1000];
    for i in 1..=10u64 {
        s.append(
            StreamId::new(i, 0),
            &[b"f".as_slice(), big.as_slice()],
            NodeLimits::default(),
        );
    }
    assert_eq!(s.node_count(), 3);
}

#[test]
fn ids_parse_and_step_at_the_edges() {
    assert_eq!(
        StreamId::parse(b"18446744073709551615-18446744073709551615", 0),
        Some((StreamId::MAX, true))
    );
    assert_eq!(StreamId::parse(b"18446744073709551616", 0), None);
    assert_eq!(StreamId::parse(b"5", 7), Some((StreamId::new(5, 7), false)));
    assert_eq!(StreamId::parse(b"-5", 0), None);
    assert_eq!(StreamId::parse(b"5-", 0), None);
    assert_eq!(StreamId::MAX.next(), None);
    assert_eq!(StreamId::MIN.prev(), None);
    assert_eq!(StreamId::new(1, u64::MAX).next(), Some(StreamId::new(2, 0)));
}

#[test]
fn radix_tree_nodes_as_redis_counts_them() {
    // Figures from redis-server 7.0's XINFO STREAM: an empty tree is its root; one key is a
    // compressed run and a leaf; keys 1-0, 5-0 and 9-0 (one entry per node) branch at byte 7.
    let one_per_node = NodeLimits {
        max_bytes: 0,
        max_entries: 1,
    };
    let mut s = Stream::new();
    assert_eq!(s.radix_tree_nodes(), 1);
    s.append(StreamId::new(1, 0), &[b"f".as_slice(), b"v"], one_per_node);
    assert_eq!(s.radix_tree_nodes(), 2);
    s.append(StreamId::new(5, 0), &[b"f".as_slice(), b"v"], one_per_node);
    s.append(StreamId::new(9, 0), &[b"f".as_slice(), b"v"], one_per_node);
    assert_eq!(s.node_count(), 3);
    assert_eq!(s.radix_tree_nodes(), 8);
}

#[test]
fn lag_counters_wrap_instead_of_panicking() {
    let mut s = Stream::new();
    s.append(
        StreamId::new(1, 1),
        &[b"f".as_slice(), b"v"],
        NodeLimits::default(),
    );
    let group = ConsumerGroup::new(StreamId::MIN, i64::MIN + 1);
    assert_eq!(s.lag(&group), Some(1i64.wrapping_sub(i64::MIN + 1)));
}

#[derive(Debug, Clone)]
enum GroupOp {
    Assign(u64, u8),
    Ack(u64),
    DeleteConsumer(u8),
}

proptest! {
    /// The group PEL and the consumers' own PELs always agree: every pending entry is in its
    /// owner's set and nowhere else, and every ID in a consumer's set is pending with it as owner.
    #[test]
    fn group_and_consumer_pels_agree(ops in proptest::collection::vec(prop_oneof![
        (0u64..20, 0u8..4).prop_map(|(id, c)| GroupOp::Assign(id, c)),
        (0u64..20).prop_map(GroupOp::Ack),
        (0u8..4).prop_map(GroupOp::DeleteConsumer),
    ], 1..80)) {
        let mut group = ConsumerGroup::new(StreamId::MIN, ENTRIES_READ_UNKNOWN);
        let mut model: BTreeMap<u64, u8> = BTreeMap::new();
        for op in ops {
            match op {
                GroupOp::Assign(id, c) => {
                    let name = [b'c', b'0' + c];
                    group.consumer_or_create(&name, 0);
                    group.assign(StreamId::new(id, 0), &name, 1, 1);
                    model.insert(id, c);
                }
                GroupOp::Ack(id) => {
                    prop_assert_eq!(group.ack(StreamId::new(id, 0)), model.remove(&id).is_some());
                }
                GroupOp::DeleteConsumer(c) => {
                    let name = [b'c', b'0' + c];
                    let owned = model.values().filter(|&&o| o == c).count();
                    let existed = group.consumers.contains_key(&name[..]);
                    prop_assert_eq!(group.delete_consumer(&name), existed.then_some(owned));
                    model.retain(|_, o| *o != c);
                }
            }
            let pel: Vec<(u64, Vec<u8>)> = group.pel.iter().map(|(id, p)| (id.ms, p.consumer.to_vec())).collect();
            let want: Vec<(u64, Vec<u8>)> = model.iter().map(|(id, c)| (*id, vec![b'c', b'0' + c])).collect();
            prop_assert_eq!(pel, want);
            for (name, consumer) in &group.consumers {
                for id in &consumer.pending {
                    prop_assert_eq!(&group.pel[id].consumer, name);
                }
                let owned = group.pel.values().filter(|p| &p.consumer == name).count();
                prop_assert_eq!(consumer.pending.len(), owned);
            }
        }
    }
}

/// ACKED keeps what a group still needs (unread, or pending) and takes the rest; DELREF takes
/// the entries and their PEL references; an exact trim walks on through whole nodes for them,
/// an approximate one removes nothing (Redis 8.2.3).
#[test]
fn trims_with_references_keep_or_drop_what_groups_hold() {
    let limits = NodeLimits {
        max_bytes: 0,
        max_entries: 4,
    };
    let build = || {
        let mut s = Stream::new();
        for i in 1..=30u64 {
            s.append(StreamId::new(i, 0), &[b"f".as_slice(), b"v"], limits);
        }
        let mut g = ConsumerGroup::new(StreamId::new(10, 0), 10);
        g.consumer_or_create(b"c", 0);
        for i in [1u64, 3, 4, 6, 7, 8, 9, 10] {
            g.assign(StreamId::new(i, 0), b"c", 0, 1);
        }
        s.groups.insert(b"g".as_slice().into(), g);
        s
    };
    let trim = |to, approx, refs| Trim {
        to,
        approx,
        limit: 0,
        refs,
    };
    let mut s = build();
    assert_eq!(s.trim(trim(TrimTo::MaxLen(20), false, Refs::Acked)), 2);
    assert_eq!(s.length, 28);
    assert!(s.get(StreamId::new(2, 0)).is_none() && s.get(StreamId::new(5, 0)).is_none());
    assert_eq!(s.groups[b"g".as_slice()].pel.len(), 8);
    let mut s = build();
    assert_eq!(
        s.trim(trim(
            TrimTo::MinId(StreamId::new(25, 0)),
            true,
            Refs::DelRef
        )),
        0
    );
    assert_eq!(s.trim(trim(TrimTo::MaxLen(10), true, Refs::Acked)), 0);
    assert_eq!(
        s.trim(trim(
            TrimTo::MinId(StreamId::new(25, 0)),
            false,
            Refs::DelRef
        )),
        24
    );
    assert!(s.groups[b"g".as_slice()].pel.is_empty());
    assert_eq!((s.length, s.first_id), (6, StreamId::new(25, 0)));
    let mut s = build();
    let floor = s.read_floor();
    assert_eq!(
        s.delete_with_refs(StreamId::new(11, 0), Refs::Acked, floor),
        Deletion::Referenced
    );
    assert_eq!(
        s.delete_with_refs(StreamId::new(99, 0), Refs::Acked, floor),
        Deletion::Referenced
    );
    assert_eq!(
        s.delete_with_refs(StreamId::new(2, 0), Refs::Acked, floor),
        Deletion::Deleted
    );
    assert_eq!(
        s.delete_with_refs(StreamId::new(2, 0), Refs::DelRef, floor),
        Deletion::Missing
    );
    assert_eq!(
        s.delete_with_refs(StreamId::new(1, 0), Refs::KeepRef, floor),
        Deletion::Deleted
    );
    assert!(s.groups[b"g".as_slice()]
        .pel
        .contains_key(&StreamId::new(1, 0)));
    assert_eq!(
        s.delete_with_refs(StreamId::new(1, 0), Refs::DelRef, floor),
        Deletion::Missing
    );
    assert!(!s.groups[b"g".as_slice()]
        .pel
        .contains_key(&StreamId::new(1, 0)));
}
