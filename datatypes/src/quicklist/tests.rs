use super::nodes::{redis_bytes_of, write_entry, MAX_PACKED_THRESHOLD, MIN_COMPRESS_IMPROVE};
use super::*;
use crate::listpack::{encode_entry, entry_size, REDIS_OVERHEAD};
use proptest::prelude::*;

/// The many-node form of `q` (tests look at its nodes), whatever form `q` is in.
fn big(q: &Quicklist) -> Nodes {
    match &q.repr {
        Repr::Big(b) => (**b).clone(),
        Repr::Small(_) => q.clone().nodes_mut().clone(),
    }
}

fn is_small(q: &Quicklist) -> bool {
    matches!(q.repr, Repr::Small(_))
}

/// Checks the structure: counts add up, no empty node, every node within its fill (a node
/// may exceed it only when it holds a single element), the `compress` nodes at each end raw
/// and nothing compressed without a compress depth; a list of one small raw packed node is in
/// the small form unless it got there by shrinking (then it is packed under half the limit).
fn check_invariants(q: &Quicklist) {
    if let Repr::Small(s) = &q.repr {
        assert!(Small::fits(s.count(), s.redis_sz()));
        let expected = REDIS_OVERHEAD + redis_bytes_of(s.entries(), 0, s.entries().len());
        assert_eq!(s.redis_sz(), expected, "Redis size of the small list");
    }
    let q = big(q);
    let total: usize = q.nodes.iter().map(|n| n.count).sum();
    assert_eq!(total, q.len);
    let len = q.nodes.len();
    for (i, node) in q.nodes.iter().enumerate() {
        let near_an_end = i < q.compress || i + q.compress >= len;
        assert!(
            node.lzf.is_none() || (q.compress > 0 && !near_an_end),
            "node {i} of {len} compressed at depth {}",
            q.compress
        );
    }
    for node in &q.nodes {
        assert!(node.count > 0, "empty node");
        assert!(
            !node.plain || node.count == 1,
            "a plain node holds one element"
        );
        let buf = node.bytes();
        let mut pos = node.start;
        let mut count = 0;
        while pos < buf.len() {
            pos = entry_at(buf, pos).1;
            count += 1;
        }
        assert_eq!(pos, buf.len());
        assert_eq!(count, node.count);
        if let Some(c) = &node.lzf {
            assert!(node.buf.is_empty() && node.start == 0);
            assert!(
                c.data.len() + MIN_COMPRESS_IMPROVE < c.raw_len,
                "kept only when it saves enough"
            );
        }
        // Redis's size of the node is kept exactly (its fill decisions depend on it). A
        // node may exceed the fill: LSET replaces in place whatever the size, as Redis does.
        if !node.plain {
            let expected = REDIS_OVERHEAD + redis_bytes_of(buf, node.start, buf.len());
            assert_eq!(node.redis_sz, expected, "Redis size of a node");
        }
    }
}

#[test]
fn front_writes_match_the_listpack_codec() {
    for len in [0usize, 1, 5, 126, 127, 128, 200, 16_383, 16_384, 70_000] {
        let data = vec![b'x'; len];
        let mut expected = Vec::new();
        encode_entry(&mut expected, &data);
        let mut got = vec![0; entry_size(&data)];
        write_entry(&mut got, &data);
        assert_eq!(got, expected, "length {len}");
    }
}

#[test]
fn nodes_follow_the_fill() {
    let mut q = Quicklist::with_fill(-2);
    for i in 0..10_000 {
        q.push_back(format!("element:{i}").as_bytes());
    }
    // ~14 bytes per entry: about 580 per 8 KB node.
    assert!((15..=20).contains(&q.node_count()), "{}", q.node_count());
    check_invariants(&q);
    let mut q = Quicklist::with_fill(3);
    for i in 0..10 {
        q.push_front(format!("{i}").as_bytes());
    }
    assert_eq!(q.node_count(), 4);
    check_invariants(&q);
    // Fill 0 is one element per node; a huge element gets a node of its own.
    let mut q = Quicklist::with_fill(0);
    q.push_back(b"a");
    q.push_back(b"b");
    assert_eq!(q.node_count(), 2);
    let mut q = Quicklist::new();
    q.push_back(b"a");
    q.push_back(&[b'z'; 20_000]);
    q.push_back(b"b");
    assert_eq!(q.node_count(), 3);
    check_invariants(&q);
}

#[test]
fn pushes_reuse_spare_room() {
    let mut q = Quicklist::new();
    for _ in 0..2_000 {
        q.push_front(b"abcdef");
    }
    let Repr::Big(b) = &q.repr else {
        panic!("16 KB of entries take two nodes")
    };
    let node = &b.nodes[0];
    assert!(node.buf.capacity() <= 2 * 8192, "{}", node.buf.capacity());
    for _ in 0..2_000 {
        q.pop_back();
    }
    assert!(q.is_empty() && q.node_count() == 0);
}

/// Interior nodes of a long list of repetitive elements are compressed, the `depth` nodes
/// at each end are not, and the list reads back the same; reads decompress only until
/// `release_decompressed`.
#[test]
fn interior_nodes_compress() {
    for depth in 1..=3 {
        let mut q = Quicklist::with_options(-2, depth);
        for i in 0..20_000 {
            q.push_back(format!("element:{}", i % 10).as_bytes());
        }
        check_invariants(&q);
        let nodes = q.node_count();
        assert!(nodes > 2 * depth + 2, "{nodes}");
        assert_eq!(q.compressed_nodes(), nodes - 2 * depth, "depth {depth}");
        let packed: usize = q.node_listpack_sizes().sum();
        let raw = q.byte_size();
        assert!(packed * 4 < raw, "{packed} compressed bytes for {raw}");
        assert_eq!(q.get(10_003), Some(&b"element:3"[..]));
        assert_eq!(q.iter().filter(|e| *e == b"element:7").count(), 2_000);
        assert!(big(&q)
            .nodes
            .iter()
            .any(|n| n.lzf.as_ref().is_some_and(|c| c.raw.get().is_some())));
        q.release_decompressed();
        assert!(big(&q)
            .nodes
            .iter()
            .all(|n| n.lzf.as_ref().is_none_or(|c| c.raw.get().is_none())));
        // Changes in the middle leave the changed node compressed again.
        q.insert(10_000, b"inserted");
        q.set(5_000, b"replaced");
        q.remove(15_000);
        check_invariants(&q);
        assert_eq!(q.compressed_nodes(), q.node_count() - 2 * depth);
        assert_eq!(q.get(10_000), Some(&b"inserted"[..]));
        assert_eq!(q.get(5_000), Some(&b"replaced"[..]));
        // Popping down to a few nodes leaves them all raw.
        q.drain_back(q.len() - 1_000);
        check_invariants(&q);
        assert!(q.node_count() <= 2 * depth || q.compressed_nodes() > 0);
    }
    // Without a depth nothing is compressed.
    let mut q = Quicklist::with_options(-2, 0);
    for i in 0..20_000 {
        q.push_front(format!("element:{}", i % 10).as_bytes());
    }
    assert_eq!(q.compressed_nodes(), 0);
}

/// Small or incompressible nodes stay raw, as in Redis.
#[test]
fn nodes_that_would_not_shrink_stay_raw() {
    let mut q = Quicklist::with_options(1, 1);
    for i in 0..10u8 {
        q.push_back(&[i; 40]); // under 48 bytes with its header
    }
    assert_eq!(q.compressed_nodes(), 0);
    let mut q = Quicklist::with_options(1, 1);
    for i in 0..10u32 {
        // xorshift noise: nothing for LZF to match.
        let mut x = 0x9e37_79b9u32 ^ i;
        let noise: Vec<u8> = (0..500)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                x as u8
            })
            .collect();
        q.push_back(&noise);
    }
    assert_eq!(q.compressed_nodes(), 0);
    let mut q = Quicklist::with_options(1, 1);
    for _ in 0..10 {
        q.push_back(&[b'x'; 500]);
    }
    assert_eq!(q.compressed_nodes(), 8);
}

#[derive(Debug, Clone)]
enum Op {
    PushBack(Vec<u8>),
    PushFront(Vec<u8>),
    PopBack,
    PopFront,
    Insert(usize, Vec<u8>),
    InsertAt(usize, bool, Vec<u8>),
    Remove(usize),
    Set(usize, Vec<u8>),
    DrainFront(usize),
    DrainBack(usize),
    RemoveMatching(Vec<u8>, usize, bool),
    /// Several pushes in one call (LPUSH / RPUSH of several elements).
    PushAll(Vec<Vec<u8>>, bool),
}

fn item() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        4 => proptest::collection::vec(b'a'..b'd', 0..3),
        2 => proptest::collection::vec(any::<u8>(), 0..200),
        1 => proptest::collection::vec(any::<u8>(), 1000..5000),
        // Compressible: repetitive elements, small and large (a large one fills a node or
        // gets a plain node of its own).
        2 => (0u32..50).prop_map(|i| format!("element:{i}:element:{i}:element").into_bytes()),
        1 => (1000usize..9000, any::<u8>()).prop_map(|(n, b)| vec![b; n]),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => item().prop_map(Op::PushBack),
        4 => item().prop_map(Op::PushFront),
        2 => Just(Op::PopBack),
        2 => Just(Op::PopFront),
        3 => (any::<usize>(), item()).prop_map(|(i, v)| Op::Insert(i, v)),
        3 => (any::<usize>(), any::<bool>(), item()).prop_map(|(i, a, v)| Op::InsertAt(i, a, v)),
        2 => any::<usize>().prop_map(Op::Remove),
        2 => (any::<usize>(), item()).prop_map(|(i, v)| Op::Set(i, v)),
        1 => (0usize..5).prop_map(Op::DrainFront),
        1 => (0usize..5).prop_map(Op::DrainBack),
        1 => (proptest::collection::vec(b'a'..b'd', 0..3), 0usize..3, any::<bool>())
            .prop_map(|(v, l, t)| Op::RemoveMatching(v, l, t)),
        1 => (proptest::collection::vec(item(), 0..12), any::<bool>())
            .prop_map(|(v, back)| Op::PushAll(v, back)),
    ]
}

/// A list one call builds (LPUSH / RPUSH of several elements) holds no spare room: a small
/// list is one exact block, and a node a many-node list starts is sized for what it takes.
/// Pushes one at a time to a many-node list grow by doubling (amortised O(1)).
#[test]
fn a_list_built_by_one_call_holds_no_spare_room() {
    let items: Vec<Vec<u8>> = (0..10)
        .map(|i| format!("element:{i}").into_bytes())
        .collect();
    for back in [true, false] {
        let mut q = Quicklist::default();
        q.push_all(&items, back);
        let Repr::Small(s) = &q.repr else {
            panic!("ten elements are a small list")
        };
        // "element:N": 9 bytes, a 1-byte length and a 1-byte back length each.
        assert_eq!(s.entries().len(), 10 * 11);
        let mut order: Vec<&[u8]> = items.iter().map(|i| i.as_slice()).collect();
        if !back {
            order.reverse();
        }
        assert_eq!(q.iter().collect::<Vec<_>>(), order);
    }
    // Under a count fill, a node is sized for the entries it may take, not for all.
    let mut q = Quicklist::with_fill(2);
    q.push_all(&items, true);
    let Repr::Big(b) = &q.repr else {
        panic!("five nodes")
    };
    assert_eq!(b.nodes.len(), 5);
    assert!(b.nodes.iter().all(|n| n.buf.capacity() == n.buf.len()));
    let mut q = Quicklist::with_fill(-1);
    for _ in 0..1_000 {
        q.push_back(b"0123456789");
    }
    let Repr::Big(b) = &q.repr else {
        panic!("12 KB take three nodes")
    };
    assert!(b.nodes.back().unwrap().buf.capacity() > b.nodes.back().unwrap().buf.len());
}

/// A list takes the small form while it is one small node, leaves it for a second node, and
/// comes back once it shrinks to one node under half the limit; the value is two words.
#[test]
fn small_lists_are_one_block() {
    assert_eq!(std::mem::size_of::<Quicklist>(), 16);
    let mut q = Quicklist::with_fill(-1); // 4 KB nodes
    for i in 0..300 {
        q.push_back(format!("{i:08}").as_bytes()); // 10 bytes each
        assert!(is_small(&q), "{i}");
    }
    for _ in 0..400 {
        q.push_back(b"01234567");
    }
    assert!(!is_small(&q), "7,000 bytes take two nodes");
    assert_eq!(q.node_count(), 2);
    // Popping the first node's entries away leaves one node of ~3 KB: over half of 4 KB.
    let first = big(&q).nodes[0].count;
    for _ in 0..first {
        q.pop_front();
        check_invariants(&q);
    }
    assert_eq!(q.node_count(), 1);
    assert!(
        !is_small(&q),
        "one node of 100 entries over half the limit stays"
    );
    while q.len() > 150 {
        q.pop_front();
    }
    assert!(is_small(&q), "under half the limit it is packed back");
    check_invariants(&q);
    // Settings the header cannot hold keep the many-node form.
    let q = Quicklist::with_fill(100_000);
    assert!(!is_small(&q));
    let q = Quicklist::with_options(-2, 20_000);
    assert!(!is_small(&q));
    assert_eq!(q.compress_depth(), 20_000);
}

/// Elements at or above the packed threshold get nodes of their own, which take no
/// neighbour and never merge; LSET moves an element between plain and packed nodes.
#[test]
fn plain_nodes_hold_one_element() {
    assert!(!set_packed_threshold(MAX_PACKED_THRESHOLD + 1));
    assert!(set_packed_threshold(5));
    let mut q = Quicklist::with_fill(-2);
    for item in [&b"aa"[..], b"bb", b"plain", b"cc", b"longer!", b"dd"] {
        q.push_back(item);
    }
    // [aa bb] [plain] [cc] [longer!] [dd]
    assert_eq!(q.node_count(), 5);
    q.insert(1, b"biggest");
    assert_eq!(q.node_count(), 7, "a plain element splits the packed node");
    q.remove(1);
    assert_eq!(
        q.node_count(),
        6,
        "packed halves do not merge across a plain node"
    );
    q.set(2, b"xx");
    assert_eq!(q.get(2), Some(&b"xx"[..]));
    q.set(0, b"plain again");
    assert_eq!(q.get(0), Some(&b"plain again"[..]));
    check_invariants(&q);
    let items: Vec<&[u8]> = q.iter().collect();
    let expected: Vec<&[u8]> = vec![b"plain again", b"bb", b"xx", b"cc", b"longer!", b"dd"];
    assert_eq!(items, expected);
    assert!(set_packed_threshold(0));
    q.push_back(b"plain-sized but packed now");
    check_invariants(&q);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]
    /// A quicklist behaves like a VecDeque of byte strings, whatever its fill.
    #[test]
    fn behaves_like_a_deque(
        fill in prop_oneof![Just(-2), Just(-1), Just(1), Just(2), Just(3), Just(0), Just(-7)],
        // list-compress-depth.
        depth in 0usize..4,
        // Whether reads' decompressed copies are dropped after each step (a read command
        // does) or kept (reads in a row).
        release in any::<bool>(),
        // The packed threshold: the default, or low enough that some elements are plain.
        threshold in prop_oneof![Just(0u64), Just(1), Just(2), Just(3)],
        ops in proptest::collection::vec(op(), 1..120),
    ) {
        assert!(set_packed_threshold(threshold));
        let mut q = Quicklist::with_options(fill, depth);
        let mut model: VecDeque<Vec<u8>> = VecDeque::new();
        for op in ops {
            match op {
                Op::PushBack(v) => { q.push_back(&v); model.push_back(v); }
                Op::PushFront(v) => { q.push_front(&v); model.push_front(v); }
                Op::PopBack => prop_assert_eq!(q.pop_back(), model.pop_back()),
                Op::PopFront => prop_assert_eq!(q.pop_front(), model.pop_front()),
                Op::Insert(i, v) => {
                    let i = i % (model.len() + 1);
                    q.insert(i, &v);
                    model.insert(i, v);
                }
                Op::InsertAt(i, after, v) => if !model.is_empty() {
                    let i = i % model.len();
                    q.insert_at(i, after, &v);
                    model.insert(if after { i + 1 } else { i }, v);
                }
                Op::Remove(i) => if !model.is_empty() {
                    let i = i % model.len();
                    q.remove(i);
                    model.remove(i);
                },
                Op::Set(i, v) => {
                    let i = if model.is_empty() { i % 3 } else { i % (model.len() + 1) };
                    let ok = q.set(i, &v);
                    prop_assert_eq!(ok, i < model.len());
                    if ok { model[i] = v; }
                }
                Op::DrainFront(n) => { q.drain_front(n); model.drain(..n.min(model.len())); }
                Op::DrainBack(n) => {
                    q.drain_back(n);
                    let keep = model.len().saturating_sub(n);
                    model.truncate(keep);
                }
                Op::RemoveMatching(v, limit, from_tail) => {
                    let expected = remove_from_model(&mut model, &v, limit, from_tail);
                    prop_assert_eq!(q.remove_matching(&v, limit, from_tail), expected);
                }
                Op::PushAll(items, back) => {
                    q.push_all(&items, back);
                    for v in items {
                        if back { model.push_back(v) } else { model.push_front(v) }
                    }
                }
            }
            check_invariants(&q);
            prop_assert_eq!(q.len(), model.len());
            let forward: Vec<&[u8]> = q.iter().collect();
            let expected: Vec<&[u8]> = model.iter().map(|v| v.as_slice()).collect();
            prop_assert_eq!(&forward, &expected);
            let backward: Vec<&[u8]> = q.iter().rev().collect();
            let expected_back: Vec<&[u8]> = model.iter().rev().map(|v| v.as_slice()).collect();
            prop_assert_eq!(backward, expected_back);
            prop_assert_eq!(q.front(), model.front().map(|v| v.as_slice()));
            prop_assert_eq!(q.back(), model.back().map(|v| v.as_slice()));
            for (i, v) in model.iter().enumerate() {
                prop_assert_eq!(q.get(i), Some(v.as_slice()));
            }
            prop_assert_eq!(q.get(model.len()), None);
            for start in [0, 1, model.len() / 2, model.len().saturating_sub(1), model.len()] {
                let tail: Vec<&[u8]> = q.iter_from(start).collect();
                let expected: Vec<&[u8]> = model.iter().skip(start).map(|v| v.as_slice()).collect();
                prop_assert_eq!(tail, expected);
                // Mixed ends on a suffix iterator meet in the middle.
                let mut it = q.iter_from(start);
                let mut both = Vec::new();
                while let Some(a) = it.next() {
                    both.push(a);
                    if let Some(b) = it.next_back() { both.push(b); }
                }
                prop_assert_eq!(both.len(), model.len().saturating_sub(start));
            }
            if release {
                q.release_decompressed();
                if let Repr::Big(b) = &q.repr {
                    prop_assert!(b.nodes.iter().all(|n| n.lzf.as_ref().is_none_or(|c| c.raw.get().is_none())));
                }
            }
        }
    }
}

fn remove_from_model(
    model: &mut VecDeque<Vec<u8>>,
    v: &[u8],
    limit: usize,
    from_tail: bool,
) -> usize {
    let mut removed = 0;
    let mut out: VecDeque<Vec<u8>> = VecDeque::new();
    let items: Vec<Vec<u8>> = if from_tail {
        model.drain(..).rev().collect()
    } else {
        model.drain(..).collect()
    };
    for e in items {
        if e == v && (limit == 0 || removed < limit) {
            removed += 1;
        } else if from_tail {
            out.push_front(e);
        } else {
            out.push_back(e);
        }
    }
    *model = out;
    removed
}

/// Each node's kind and elements, owned.
type Shape = Vec<(bool, Vec<Vec<u8>>)>;

fn shape<'a>(nodes: impl Iterator<Item = (bool, Vec<&'a [u8]>)>) -> Shape {
    nodes
        .map(|(plain, items)| (plain, items.into_iter().map(<[u8]>::to_vec).collect()))
        .collect()
}

/// Applies `op` to the many-node form alone: the reference for where nodes split.
fn apply_to_nodes(n: &mut Nodes, op: &Op) {
    let len = n.len;
    match op {
        Op::PushBack(v) => n.push_back(v),
        Op::PushFront(v) => n.push_front(v),
        Op::PopBack => drop(n.pop_back_with(<[u8]>::to_vec)),
        Op::PopFront => drop(n.pop_front_with(<[u8]>::to_vec)),
        Op::Insert(i, v) => n.insert(i % (len + 1), v),
        Op::InsertAt(i, after, v) if len > 0 => n.insert_at(i % len, *after, v),
        Op::Remove(i) if len > 0 => n.remove(i % len),
        Op::Set(i, v) => drop(n.set(i % (len + 1), v)),
        Op::DrainFront(k) => n.drain_front(*k),
        Op::DrainBack(k) => n.drain_back(*k),
        Op::RemoveMatching(v, limit, tail) => drop(n.remove_matching(v, *limit, *tail)),
        Op::PushAll(items, back) => n.push_all(items, *back),
        Op::InsertAt(..) | Op::Remove(_) => {}
    }
}

fn apply(q: &mut Quicklist, op: &Op) {
    let len = q.len();
    match op {
        Op::PushBack(v) => q.push_back(v),
        Op::PushFront(v) => q.push_front(v),
        Op::PopBack => drop(q.pop_back()),
        Op::PopFront => drop(q.pop_front()),
        Op::Insert(i, v) => q.insert(i % (len + 1), v),
        Op::InsertAt(i, after, v) if len > 0 => q.insert_at(i % len, *after, v),
        Op::Remove(i) if len > 0 => q.remove(i % len),
        Op::Set(i, v) => drop(q.set(i % (len + 1), v)),
        Op::DrainFront(k) => q.drain_front(*k),
        Op::DrainBack(k) => q.drain_back(*k),
        Op::RemoveMatching(v, limit, tail) => drop(q.remove_matching(v, *limit, *tail)),
        Op::PushAll(items, back) => q.push_all(items, *back),
        Op::InsertAt(..) | Op::Remove(_) => {}
    }
}

fn small_item() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        4 => proptest::collection::vec(b'a'..b'd', 0..3),
        3 => proptest::collection::vec(any::<u8>(), 0..200),
        1 => proptest::collection::vec(any::<u8>(), 1000..3000),
        1 => (0u32..50).prop_map(|i| format!("{i}").into_bytes()),
    ]
}

fn small_op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => small_item().prop_map(Op::PushBack),
        4 => small_item().prop_map(Op::PushFront),
        3 => Just(Op::PopBack),
        3 => Just(Op::PopFront),
        2 => (any::<usize>(), small_item()).prop_map(|(i, v)| Op::Insert(i, v)),
        2 => (any::<usize>(), any::<bool>(), small_item()).prop_map(|(i, a, v)| Op::InsertAt(i, a, v)),
        2 => any::<usize>().prop_map(Op::Remove),
        2 => (any::<usize>(), small_item()).prop_map(|(i, v)| Op::Set(i, v)),
        1 => (0usize..8).prop_map(Op::DrainFront),
        1 => (0usize..8).prop_map(Op::DrainBack),
        1 => (proptest::collection::vec(b'a'..b'd', 0..3), 0usize..3, any::<bool>())
            .prop_map(|(v, l, t)| Op::RemoveMatching(v, l, t)),
        2 => (proptest::collection::vec(small_item(), 0..20), any::<bool>())
            .prop_map(|(v, back)| Op::PushAll(v, back)),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]
    /// The small form is memory layout only: after every step, a list has the nodes (kinds,
    /// boundaries, elements) and the encoding name that the many-node form alone has.
    #[test]
    fn the_small_form_has_the_nodes_of_the_many_node_form(
        fill in prop_oneof![Just(-2), Just(-1), Just(1), Just(3), Just(0), Just(-7), Just(40)],
        depth in 0usize..3,
        listpack in any::<bool>(),
        threshold in prop_oneof![Just(0u64), Just(3), Just(150)],
        ops in proptest::collection::vec(small_op(), 1..150),
    ) {
        assert!(set_packed_threshold(threshold));
        let mut q = Quicklist::with_options(fill, depth);
        let mut reference = Nodes::with_options(fill, depth);
        if listpack {
            q = q.with_listpack_encoding();
            reference.encoding = ListEncoding::Listpack;
            reference.settle();
        }
        for op in &ops {
            apply(&mut q, op);
            apply_to_nodes(&mut reference, op);
            check_invariants(&q);
            prop_assert_eq!(shape(q.node_elements()), shape(reference.node_elements()), "after {:?}", op);
            prop_assert_eq!(q.encoding(), reference.encoding, "after {:?}", op);
            prop_assert_eq!(q.len(), reference.len);
            let sizes: Vec<usize> = q.node_listpack_sizes().collect();
            let expected: Vec<usize> = reference.node_listpack_sizes().collect();
            prop_assert_eq!(sizes, expected);
        }
        // A list just built settles alike (SORT … STORE, a load).
        for encoding in [ListEncoding::Quicklist, ListEncoding::Listpack] {
            let settled = q.clone().with_encoding(encoding);
            let mut expected = reference.clone();
            expected.encoding = encoding;
            expected.settle();
            prop_assert_eq!(settled.encoding(), expected.encoding);
        }
        assert!(set_packed_threshold(0));
    }
}
