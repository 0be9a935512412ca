//! The sorted set against a model (a `BTreeSet<(score, member)>` plus a `HashMap`), in both forms
//! and across the conversion, for every operation the commands use.

use super::*;
use proptest::prelude::*;
use std::collections::{BTreeSet, HashMap};

/// A score that orders totally (the generated scores are never NaN or -0).
#[derive(Debug, Clone, Copy, PartialEq)]
struct Score(f64);
impl PartialOrd for Score {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Eq for Score {}
impl Ord for Score {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0.partial_cmp(&other.0).expect("no NaN")
    }
}

#[derive(Default, Debug)]
struct Model {
    order: BTreeSet<(Score, Vec<u8>)>,
    scores: HashMap<Vec<u8>, f64>,
}

impl Model {
    fn add(&mut self, member: &[u8], score: f64, flags: AddFlags) -> AddOutcome {
        match self.scores.get(member).copied() {
            Some(current) => {
                if flags.nx {
                    return AddOutcome::Skipped;
                }
                let new = if flags.incr { current + score } else { score };
                if new.is_nan() {
                    return AddOutcome::NotANumber;
                }
                if (flags.lt && new >= current) || (flags.gt && new <= current) {
                    return AddOutcome::Skipped;
                }
                if new == current {
                    return AddOutcome::Unchanged(new);
                }
                self.order.remove(&(Score(current), member.to_vec()));
                self.order.insert((Score(new), member.to_vec()));
                self.scores.insert(member.to_vec(), new);
                AddOutcome::Updated(new)
            }
            None => {
                if flags.xx {
                    return AddOutcome::Skipped;
                }
                self.order.insert((Score(score), member.to_vec()));
                self.scores.insert(member.to_vec(), score);
                AddOutcome::Added(score)
            }
        }
    }

    fn remove(&mut self, member: &[u8]) -> bool {
        match self.scores.remove(member) {
            Some(s) => {
                self.order.remove(&(Score(s), member.to_vec()));
                true
            }
            None => false,
        }
    }

    fn elements(&self) -> Vec<(Vec<u8>, f64)> {
        self.order.iter().map(|(s, m)| (m.clone(), s.0)).collect()
    }

    fn rebuild(&mut self, kept: Vec<(Vec<u8>, f64)>) {
        self.order.clear();
        self.scores.clear();
        for (m, s) in kept {
            self.order.insert((Score(s), m.clone()));
            self.scores.insert(m, s);
        }
    }
}

fn collect(f: impl FnOnce(&mut dyn FnMut(&[u8], f64))) -> Vec<(Vec<u8>, f64)> {
    let mut out = Vec::new();
    f(&mut |m, s| out.push((m.to_vec(), s)));
    out
}

fn window<T: Clone>(items: Vec<T>, reverse: bool, offset: i64, limit: i64) -> Vec<T> {
    if offset < 0 {
        return Vec::new();
    }
    let mut items = items;
    if reverse {
        items.reverse();
    }
    let it = items.into_iter().skip(offset as usize);
    if limit < 0 {
        it.collect()
    } else {
        it.take(limit as usize).collect()
    }
}

#[derive(Debug, Clone)]
enum Op {
    Add(u8, f64, AddFlags),
    Remove(u8),
    RemoveRanks(usize, usize),
    RemoveScores(ScoreRange),
    Check(ScoreRange, bool, i64, i64),
    CheckRanks(usize, usize, bool),
}

fn score() -> impl Strategy<Value = f64> {
    prop_oneof![
        Just(f64::NEG_INFINITY),
        Just(f64::INFINITY),
        (-4i32..5).prop_map(|v| v as f64 / 2.0),
        (0u8..6).prop_map(|v| v as f64),
        // Every width of the packed form's integer scores, and the floats beyond.
        (-(1i64 << 49)..(1i64 << 49)).prop_map(|v| v as f64),
        (-40_000i64..40_000).prop_map(|v| v as f64),
        any::<f64>().prop_filter("a score", |v| !v.is_nan() && *v != 0.0),
    ]
}

fn bound() -> impl Strategy<Value = (f64, bool)> {
    (score(), any::<bool>())
}

fn score_range() -> impl Strategy<Value = ScoreRange> {
    (bound(), bound()).prop_map(|((min, min_ex), (max, max_ex))| ScoreRange {
        min,
        max,
        min_ex,
        max_ex,
    })
}

fn flags() -> impl Strategy<Value = AddFlags> {
    (0u8..8, any::<bool>()).prop_map(|(k, incr)| {
        let mut f = AddFlags {
            incr,
            ..AddFlags::default()
        };
        match k {
            1 => f.nx = true,
            2 => f.xx = true,
            3 => f.gt = true,
            4 => f.lt = true,
            5 => {
                f.xx = true;
                f.gt = true
            }
            _ => {}
        }
        f
    })
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (any::<u8>(), score(), flags()).prop_map(|(m, s, f)| Op::Add(m, s, f)),
        2 => any::<u8>().prop_map(Op::Remove),
        1 => (0usize..40, 0usize..40).prop_map(|(a, b)| Op::RemoveRanks(a, b)),
        1 => score_range().prop_map(Op::RemoveScores),
        2 => (score_range(), any::<bool>(), -1i64..5, -2i64..6).prop_map(|(r, rev, o, l)| Op::Check(r, rev, o, l)),
        2 => (0usize..40, 0usize..40, any::<bool>()).prop_map(|(a, b, r)| Op::CheckRanks(a, b, r)),
    ]
}

/// Members of varied lengths: some long enough to force the skiplist under default limits.
fn member(m: u8) -> Vec<u8> {
    match m % 16 {
        0 => vec![b'x'; 70 + (m as usize % 3)],
        1 => Vec::new(),
        2 => vec![0, b'\r', b'\n', m],
        _ => format!("m{}", m % 48).into_bytes(),
    }
}

fn check_same(set: &ZSetValue, model: &Model) -> Result<(), TestCaseError> {
    prop_assert_eq!(set.len(), model.scores.len());
    prop_assert_eq!(set.to_vec(), model.elements());
    if let ZSetValue::Skip(s) = set {
        s.list().check();
    }
    for (rank, (m, s)) in model.elements().iter().enumerate() {
        prop_assert_eq!(set.score(m), Some(*s));
        prop_assert_eq!(set.rank(m, false), Some(rank));
        prop_assert_eq!(set.rank(m, true), Some(model.scores.len() - 1 - rank));
        prop_assert_eq!(set.by_rank(rank), Some((m.as_slice(), *s)));
    }
    Ok(())
}

fn run(ops: Vec<Op>, limits: Limits) -> Result<(), TestCaseError> {
    let mut set = ZSetValue::for_size(0, 0, &limits);
    let mut model = Model::default();
    for op in ops {
        match op {
            Op::Add(m, s, f) => {
                let m = member(m);
                let got = set.add(&m, s, f, &limits);
                let expected = model.add(&m, s, f);
                prop_assert_eq!(got, expected);
                if let ZSetValue::Packed(_) = set {
                    let longest = model.scores.keys().map(|k| k.len()).max().unwrap_or(0);
                    prop_assert!(
                        limits.fits(model.scores.len(), longest),
                        "should have converted"
                    );
                }
            }
            Op::Remove(m) => {
                let m = member(m);
                prop_assert_eq!(set.remove(&m), model.remove(&m));
            }
            Op::RemoveRanks(a, b) => {
                let all = model.elements();
                let expected = if a <= b && b < all.len() {
                    b - a + 1
                } else {
                    0
                };
                prop_assert_eq!(set.remove_ranks(a, b), expected);
                if expected > 0 {
                    let kept = all
                        .into_iter()
                        .enumerate()
                        .filter(|(i, _)| *i < a || *i > b)
                        .map(|(_, e)| e)
                        .collect();
                    model.rebuild(kept);
                }
            }
            Op::RemoveScores(r) => {
                let all = model.elements();
                let (gone, kept): (Vec<_>, Vec<_>) = all.into_iter().partition(|e| r.contains(e.1));
                prop_assert_eq!(set.remove_scores(&r), gone.len());
                model.rebuild(kept);
            }
            Op::Check(r, reverse, offset, limit) => {
                let inside: Vec<_> = model
                    .elements()
                    .into_iter()
                    .filter(|e| r.contains(e.1))
                    .collect();
                prop_assert_eq!(set.count_in_scores(&r), inside.len());
                let got = collect(|f| set.for_each_in_scores(&r, reverse, offset, limit, f));
                prop_assert_eq!(got, window(inside, reverse, offset, limit));
            }
            Op::CheckRanks(a, b, reverse) => {
                let all = model.elements();
                let got = collect(|f| set.for_each_in_ranks(a, b, reverse, f));
                let expected = if a <= b && b < all.len() {
                    window(all, reverse, a as i64, (b - a + 1) as i64)
                } else {
                    Vec::new()
                };
                prop_assert_eq!(got, expected);
            }
        }
        check_same(&set, &model)?;
    }
    Ok(())
}

fn lex_bound() -> impl Strategy<Value = (u8, u8)> {
    (0u8..4, 0u8..20)
}

fn make_lex(b: (u8, u8), names: &[Vec<u8>]) -> LexBound<'_> {
    let name = &names[b.1 as usize % names.len()];
    match b.0 {
        0 => LexBound::NegInf,
        1 => LexBound::PosInf,
        2 => LexBound::Inclusive(name),
        _ => LexBound::Exclusive(name),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// Default limits: starts packed, converts on long members or size.
    #[test]
    fn behaves_like_the_model(ops in proptest::collection::vec(op(), 1..120)) {
        run(ops, Limits { max_entries: 16, max_value: 64 })?;
    }

    /// Always the skiplist.
    #[test]
    fn skiplist_behaves_like_the_model(ops in proptest::collection::vec(op(), 1..200)) {
        run(ops, Limits { max_entries: 0, max_value: 0 })?;
    }

    /// Always packed.
    #[test]
    fn packed_behaves_like_the_model(ops in proptest::collection::vec(op(), 1..120)) {
        run(ops, Limits { max_entries: 100_000, max_value: 100_000 })?;
    }

    /// Lexicographic ranges (all scores equal, as those commands assume): both forms agree with
    /// the model and with each other.
    #[test]
    fn lex_ranges(members in proptest::collection::btree_set(proptest::collection::vec(97u8..101, 0..4), 0..40),
                  min in lex_bound(), max in lex_bound(), reverse in any::<bool>(),
                  offset in -1i64..4, limit in -1i64..5) {
        let names: Vec<Vec<u8>> = members.iter().cloned().chain([b"b".to_vec()]).collect();
        let range = LexRange { min: make_lex(min, &names), max: make_lex(max, &names) };
        let elements: Vec<(&[u8], f64)> = members.iter().map(|m| (m.as_slice(), 1.0)).collect();
        let inside: Vec<(Vec<u8>, f64)> = members.iter().filter(|m| range.contains(m)).map(|m| (m.clone(), 1.0)).collect();
        for limits in [Limits { max_entries: 1000, max_value: 1000 }, Limits { max_entries: 0, max_value: 0 }] {
            let mut set = ZSetValue::from_sorted(&elements, &limits);
            prop_assert_eq!(set.count_in_lex(&range), inside.len());
            let got = collect(|f| set.for_each_in_lex(&range, reverse, offset, limit, f));
            prop_assert_eq!(got, window(inside.clone(), reverse, offset, limit));
            prop_assert_eq!(set.remove_lex(&range), inside.len());
            prop_assert_eq!(set.len(), members.len() - inside.len());
            prop_assert!(set.to_vec().iter().all(|(m, _)| !range.contains(m)));
        }
    }

    /// Sets built whole take the packed form exactly when they fit, and hold the same elements.
    #[test]
    fn built_sets(entries in proptest::collection::hash_map(proptest::collection::vec(any::<u8>(), 0..8), score(), 0..30),
                  max_entries in 0usize..40) {
        let limits = Limits { max_entries, max_value: 6 };
        let elements: Vec<(&[u8], f64)> = entries.iter().map(|(m, s)| (m.as_slice(), *s)).collect();
        let set = ZSetValue::from_unsorted(elements, &limits);
        let longest = entries.keys().map(|k| k.len()).max().unwrap_or(0);
        prop_assert_eq!(set.encoding_name(), if limits.fits(entries.len(), longest) { "listpack" } else { "skiplist" });
        let mut model = Model::default();
        for (m, s) in &entries {
            model.add(m, *s, AddFlags::default());
        }
        check_same(&set, &model)?;
    }

    /// A scan returns every element present throughout, even while others come and go.
    #[test]
    fn scan_sees_stable_members(initial in 1usize..300, churn in proptest::collection::vec((any::<bool>(), 0u16..600), 0..200), count in 1usize..20) {
        let limits = Limits { max_entries: 0, max_value: 0 };
        let mut set = ZSetValue::for_size(0, 0, &limits);
        for i in 0..initial {
            set.add(format!("s{i}").as_bytes(), i as f64, AddFlags::default(), &limits);
        }
        let mut seen = std::collections::HashSet::new();
        let mut cursor = 0;
        let mut churn = churn.into_iter();
        loop {
            cursor = set.scan(cursor, count, |m, _| { seen.insert(m.to_vec()); });
            for (add, n) in churn.by_ref().take(3) {
                let m = format!("c{n}");
                if add {
                    set.add(m.as_bytes(), n as f64, AddFlags::default(), &limits);
                } else {
                    set.remove(m.as_bytes());
                }
            }
            if cursor == 0 {
                break;
            }
        }
        for i in 0..initial {
            let name = format!("s{i}");
            prop_assert!(seen.contains(name.as_bytes()), "missing {}", name);
        }
    }
}

#[test]
fn negative_zero_is_zero_in_the_packed_form_only() {
    let limits = Limits::default();
    let mut packed = ZSetValue::new();
    packed.add(b"a", -0.0, AddFlags::default(), &limits);
    assert!(packed.score(b"a").unwrap().is_sign_positive());
    let mut big = ZSetValue::for_size(1000, 0, &limits);
    big.add(b"a", -0.0, AddFlags::default(), &limits);
    assert!(big.score(b"a").unwrap().is_sign_negative());
    assert_eq!(
        big.add(b"a", 0.0, AddFlags::default(), &limits),
        AddOutcome::Unchanged(0.0)
    );
}

#[test]
fn conversion_points() {
    let limits = Limits {
        max_entries: 3,
        max_value: 4,
    };
    let mut set = ZSetValue::new();
    for (i, m) in [b"a", b"b", b"c"].iter().enumerate() {
        set.add(*m, i as f64, AddFlags::default(), &limits);
    }
    assert_eq!(set.encoding_name(), "listpack");
    // An XX that adds nothing does not convert.
    set.add(
        b"dddd",
        1.0,
        AddFlags {
            xx: true,
            ..Default::default()
        },
        &limits,
    );
    assert_eq!(set.encoding_name(), "listpack");
    set.add(b"d", 3.0, AddFlags::default(), &limits);
    assert_eq!(set.encoding_name(), "skiplist");
    let mut long = ZSetValue::new();
    long.add(b"abcde", 1.0, AddFlags::default(), &limits);
    assert_eq!(long.encoding_name(), "skiplist");
    assert_eq!(long.to_vec(), vec![(b"abcde".to_vec(), 1.0)]);
}

#[test]
fn compact_layout() {
    assert_eq!(std::mem::size_of::<ZSetValue>(), 16);
    assert_eq!(std::mem::size_of::<Packed>(), 16);
}

#[test]
fn arena_shrinks_after_mass_removal() {
    let limits = Limits::default();
    let mut set = ZSetValue::for_size(10_000, 0, &limits);
    for i in 0..10_000 {
        set.add(
            format!("m{i}").as_bytes(),
            i as f64,
            AddFlags::default(),
            &limits,
        );
    }
    let before = set.heap_bytes();
    assert_eq!(set.remove_ranks(0, 9_899), 9_900);
    assert!(
        set.heap_bytes() < before / 4,
        "{} vs {before}",
        set.heap_bytes()
    );
    assert_eq!(set.len(), 100);
    assert_eq!(set.by_rank(0), Some((&b"m9900"[..], 9900.0)));
    if let ZSetValue::Skip(s) = &set {
        s.list().check();
    }
}

/// The links of a big list cache the score of the node they point to: score updates that keep a
/// node in place (short and tall nodes alike), that move it, and ties must all keep those caches
/// exact (`check` compares every one), and ranks must stay right.
#[test]
fn cached_scores_follow_every_update() {
    let limits = Limits {
        max_entries: 0,
        max_value: 0,
    };
    let mut set = ZSetValue::for_size(0, 0, &limits);
    let n = 3_000usize;
    for i in 0..n {
        set.add(
            format!("m{i}").as_bytes(),
            (i * 10) as f64,
            AddFlags::default(),
            &limits,
        );
    }
    let incr = AddFlags {
        incr: true,
        ..AddFlags::default()
    };
    let mut x: u64 = 0x2545_F491_4F6C_DD1D;
    for round in 0..6_000u64 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let i = (x % n as u64) as usize;
        // Mostly nudges that stay between the neighbours, sometimes jumps and exact ties.
        let delta = match round % 5 {
            0 => ((x >> 20) % 4_000) as f64 - 2_000.0,
            1 => 0.0,
            _ => 1.0 + ((x >> 20) % 7) as f64 / 8.0,
        };
        set.add(format!("m{i}").as_bytes(), delta, incr, &limits);
        if round % 500 == 0 {
            if let ZSetValue::Skip(s) = &set {
                s.list().check();
            }
        }
    }
    let ZSetValue::Skip(s) = &set else {
        panic!("should be a skiplist")
    };
    s.list().check();
    let all = set.to_vec();
    for (rank, (m, score)) in all.iter().enumerate().step_by(7) {
        assert_eq!(set.rank(m, false), Some(rank));
        assert_eq!(set.score(m), Some(*score));
    }
}
