//! The vector set against a model: a map from element to its vector, searched by brute force.

use super::*;
use proptest::prelude::*;
use std::collections::BTreeMap;

#[derive(Clone, Debug)]
enum Op {
    Add(u8, Vec<i8>),
    Remove(u8),
    Attr(u8, bool),
}

fn ops(dim: usize) -> impl Strategy<Value = Vec<Op>> {
    let v = prop::collection::vec(-20i8..20, dim);
    prop::collection::vec(
        prop_oneof![
            6 => (0u8..40, v).prop_map(|(n, v)| Op::Add(n, v)),
            2 => (0u8..40).prop_map(Op::Remove),
            1 => (0u8..40, any::<bool>()).prop_map(|(n, b)| Op::Attr(n, b)),
        ],
        1..80,
    )
}

fn name(n: u8) -> Vec<u8> {
    format!("e{n}").into_bytes()
}

fn floats(v: &[i8]) -> Vec<f32> {
    v.iter().map(|&c| c as f32).collect()
}

/// Runs `ops` on a set and on the model, checking the graph after each step.
fn replay(set: &mut VectorSet, model: &mut BTreeMap<Vec<u8>, Vec<f32>>, ops: &[Op]) {
    for op in ops {
        match op {
            Op::Add(n, v) => {
                let added = set.add(&name(*n), floats(v), None, DEFAULT_BUILD_EF);
                assert_eq!(added, model.insert(name(*n), floats(v)).is_none());
            }
            Op::Remove(n) => {
                assert_eq!(set.remove(&name(*n)), model.remove(&name(*n)).is_some());
            }
            Op::Attr(n, on) => {
                let text: &[u8] = if *on { br#"{"n":1}"# } else { b"" };
                assert_eq!(
                    set.set_attributes(&name(*n), text),
                    model.contains_key(&name(*n))
                );
            }
        }
        set.check().unwrap();
        assert_eq!(set.len(), model.len());
    }
}

/// The model's answer: every element with its distance to `q`, computed on stored vectors.
fn brute_force(set: &VectorSet, q: &[f32]) -> Vec<(Vec<u8>, f32)> {
    let query = Stored::query(q, set.quant());
    let mut all: Vec<(Vec<u8>, f32)> = set
        .names
        .keys()
        .map(|n| {
            let d = set.stored(n).unwrap().distance(&query, set.dim());
            (n.to_vec(), d)
        })
        .collect();
    all.sort_by(|a, b| a.1.total_cmp(&b.1));
    all
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn graph_holds_its_invariants_and_small_searches_are_exact(
        ops in ops(6), quant in prop::sample::select(vec![Quant::F32, Quant::Q8, Quant::Bin]),
        q in prop::collection::vec(-20i8..20, 6), seed in any::<u64>()
    ) {
        let mut set = VectorSet::new(6, quant, 4, None, 0, seed);
        let mut model = BTreeMap::new();
        replay(&mut set, &mut model, &ops);
        for n in model.keys() {
            prop_assert!(set.contains(n));
        }
        let expected = brute_force(&set, &floats(&q));
        let k = set.len();
        let got: Vec<(Vec<u8>, f32)> = set
            .search(&floats(&q), k, None, 0, false)
            .into_iter()
            .map(|h| (h.name.to_vec(), h.distance))
            .collect();
        // Same distances in the same order (ties may come in another order).
        let dist = |v: &[(Vec<u8>, f32)]| v.iter().map(|x| x.1).collect::<Vec<_>>();
        prop_assert_eq!(dist(&got), dist(&expected));
        let exact = set.search(&floats(&q), k, None, 0, true);
        prop_assert_eq!(exact.len(), k);
    }

    #[test]
    fn stored_vectors_round_trip_within_quantisation(
        v in prop::collection::vec(-100i8..100, 1..20),
        quant in prop::sample::select(vec![Quant::F32, Quant::Q8]),
    ) {
        let mut set = VectorSet::new(v.len(), quant, 16, None, 0, 1);
        set.add(b"a", floats(&v), None, 200);
        let back = set.vector(b"a").unwrap();
        let norm = floats(&v).iter().map(|x| x * x).sum::<f32>().sqrt();
        for (a, b) in back.iter().zip(floats(&v)) {
            prop_assert!((a - b).abs() <= norm / 100.0 + 1e-3, "{a} vs {b}");
        }
    }

    #[test]
    fn filters_return_only_matching_elements(ops in ops(4), q in prop::collection::vec(-20i8..20, 4)) {
        let mut set = VectorSet::new(4, Quant::Q8, 8, None, 0, 7);
        let mut model = BTreeMap::new();
        replay(&mut set, &mut model, &ops);
        let program = expr::Program::compile(b".n == 1").unwrap();
        let with_attr: Vec<Vec<u8>> = model
            .keys()
            .filter(|n| set.attributes(n).unwrap().is_some())
            .cloned()
            .collect();
        let k = set.len().max(1);
        let hits = set.search(&floats(&q), k, Some(&program), 0, true);
        let mut got: Vec<Vec<u8>> = hits.iter().map(|h| h.name.to_vec()).collect();
        got.sort();
        prop_assert_eq!(got, with_attr);
    }

    #[test]
    fn saved_nodes_load_back_the_same_set(ops in ops(5), q in prop::collection::vec(-20i8..20, 5)) {
        let mut set = VectorSet::new(5, Quant::Q8, 4, None, 3, 11);
        let mut model = BTreeMap::new();
        replay(&mut set, &mut model, &ops);
        let nodes: Vec<_> = set
            .saved_nodes()
            .map(|n| {
                let layers = n.layers.iter().map(|(ids, l)| (ids.clone(), (*l).clone())).collect();
                (n.element.clone(), n.id, n.vector.clone(), layers)
            })
            .collect();
        let header = SavedHeader { dim: 5, quant: Quant::Q8, m: 4, projection: None };
        let mut loaded = VectorSet::from_saved(header, nodes, 3, 5).unwrap();
        loaded.check().unwrap();
        prop_assert_eq!(loaded.len(), set.len());
        let k = set.len();
        let a: Vec<(Vec<u8>, f32)> = set.search(&floats(&q), k, None, 0, true)
            .iter().map(|h| (h.name.to_vec(), h.distance)).collect();
        let b: Vec<(Vec<u8>, f32)> = loaded.search(&floats(&q), k, None, 0, true)
            .iter().map(|h| (h.name.to_vec(), h.distance)).collect();
        prop_assert_eq!(a, b);
    }
}

#[test]
fn a_loaded_graph_with_a_one_way_link_is_refused() {
    let mut set = VectorSet::new(2, Quant::F32, 4, None, 0, 1);
    set.add(b"a", vec![1.0, 0.0], None, 200);
    set.add(b"b", vec![0.0, 1.0], None, 200);
    let mut nodes: Vec<_> = set
        .saved_nodes()
        .map(|n| {
            let layers: Vec<_> = n
                .layers
                .iter()
                .map(|(ids, l)| (ids.clone(), (*l).clone()))
                .collect();
            (n.element.clone(), n.id, n.vector.clone(), layers)
        })
        .collect();
    nodes[0].3[0].0.clear();
    let header = SavedHeader {
        dim: 2,
        quant: Quant::F32,
        m: 4,
        projection: None,
    };
    assert!(VectorSet::from_saved(header, nodes, 0, 1).is_err());
}
