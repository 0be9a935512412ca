//! The HLL against a model (one byte per register): sparse and dense forms of the same data hold
//! the same registers and count the same; merging is commutative and idempotent; the sparse code
//! always covers exactly 16384 registers and stays within its byte limit.

use super::*;
use proptest::prelude::*;

/// Register writes: mostly small values (the sparse form's range), sometimes big ones.
fn writes() -> impl Strategy<Value = Vec<(usize, u8)>> {
    proptest::collection::vec(
        (
            prop_oneof![0..REGISTERS, 0..64usize, (REGISTERS - 64)..REGISTERS],
            prop_oneof![9 => 1u8..=8, 1 => 1u8..=51],
        ),
        0..600,
    )
}

fn model_of(writes: &[(usize, u8)]) -> Vec<u8> {
    let mut model = vec![0u8; REGISTERS];
    for &(i, v) in writes {
        model[i] = model[i].max(v);
    }
    model
}

fn build(writes: &[(usize, u8)], sparse_max: usize) -> Hll {
    let mut hll = Hll::new();
    for &(i, v) in writes {
        hll.raise(i, v, sparse_max).unwrap();
    }
    hll
}

fn sparse_covers_all_registers(hll: &Hll) -> bool {
    let (_, valid) = sparse::histogram(&hll.as_bytes()[HEADER..]);
    valid
}

proptest! {
    #[test]
    fn sparse_and_dense_hold_the_model(writes in writes(), sparse_max in 20usize..4000) {
        let model = model_of(&writes);
        let mut hll = build(&writes, sparse_max);
        prop_assert_eq!(hll.registers().unwrap(), model.clone());
        if hll.encoding() == Encoding::Sparse {
            prop_assert!(sparse_covers_all_registers(&hll));
            prop_assert!(hll.len() <= sparse_max.max(HEADER + 2));
            prop_assert!(writes.iter().all(|&(_, v)| v <= sparse::VAL_MAX_VALUE));
        }
        // The same writes in dense form from the start.
        let mut dense = Hll::new();
        dense.to_dense().unwrap();
        // Counting now makes it keep its histogram through the writes that follow.
        prop_assert_eq!(dense.estimate(), Ok(0));
        for &(i, v) in &writes {
            dense.raise(i, v, sparse_max).unwrap();
        }
        prop_assert_eq!(dense.registers().unwrap(), model.clone());
        prop_assert_eq!(dense.estimate(), hll.estimate());
        let raw: [u8; REGISTERS] = model.clone().try_into().unwrap();
        prop_assert_eq!(dense.estimate().unwrap(), count_registers(&raw));
        // Converting keeps the registers and the count; the kept histogram matches a fresh one.
        let mut converted = hll.clone();
        converted.to_dense().unwrap();
        // Same registers; the header differs only in the cache (the converted one keeps its own).
        prop_assert_eq!(&converted.as_bytes()[HEADER..], &dense.as_bytes()[HEADER..]);
        prop_assert_eq!(&converted.as_bytes()[..8], &dense.as_bytes()[..8]);
        let mut rebuilt = Hll::from_bytes(dense.as_bytes().to_vec()).unwrap();
        prop_assert_eq!(rebuilt.histogram(), dense.histogram());
    }

    #[test]
    fn raise_reports_changes(writes in writes()) {
        let mut hll = Hll::new();
        let mut model = vec![0u8; REGISTERS];
        for (i, v) in writes {
            let changed = hll.raise(i, v, DEFAULT_SPARSE_MAX_BYTES).unwrap();
            prop_assert_eq!(changed, v > model[i]);
            model[i] = model[i].max(v);
        }
    }

    #[test]
    fn merge_is_commutative_and_idempotent(a in writes(), b in writes(), dense_a: bool) {
        let mut x = build(&a, DEFAULT_SPARSE_MAX_BYTES);
        if dense_a {
            x.to_dense().unwrap();
        }
        let y = build(&b, DEFAULT_SPARSE_MAX_BYTES);
        let merged = |first: &Hll, second: &Hll| {
            let mut max = [0u8; REGISTERS];
            first.merge_into(&mut max).unwrap();
            second.merge_into(&mut max).unwrap();
            max
        };
        let xy = merged(&x, &y);
        prop_assert_eq!(&xy[..], &merged(&y, &x)[..]);
        prop_assert_eq!(&xy[..], &merged(&x, &x).iter().zip(merged(&y, &y).iter())
            .map(|(p, q)| *p.max(q)).collect::<Vec<u8>>()[..]);
        // PFMERGE into x: the registers become the union, and doing it again changes nothing.
        let mut target = x.clone();
        target.raise_all(&xy, DEFAULT_SPARSE_MAX_BYTES);
        let once = target.clone();
        target.raise_all(&xy, DEFAULT_SPARSE_MAX_BYTES);
        prop_assert_eq!(&target, &once);
        prop_assert_eq!(target.registers().unwrap(), model_of(&[a, b].concat()));
        prop_assert_eq!(target.cached_count(), None);
    }
}

#[test]
fn a_new_hll_is_redis_empty_hll() {
    let hll = Hll::new();
    let mut expected = b"HYLL\x01\x00\x00\x00".to_vec();
    expected.extend_from_slice(&[0; 8]);
    expected.extend_from_slice(&[0x7f, 0xff]);
    assert_eq!(hll.as_bytes(), &expected[..]);
    assert_eq!(hll.cached_count(), Some(0));
    assert_eq!(hll.decode_sparse().unwrap(), "Z:16384");
}

#[test]
fn sparse_updates_split_and_merge_opcodes() {
    let mut hll = Hll::new();
    hll.raise(100, 3, 3000).unwrap();
    assert_eq!(hll.decode_sparse().unwrap(), "Z:100 v:3,1 Z:16283");
    hll.raise(101, 3, 3000).unwrap();
    assert_eq!(hll.decode_sparse().unwrap(), "Z:100 v:3,2 Z:16282");
    hll.raise(0, 1, 3000).unwrap();
    assert_eq!(hll.decode_sparse().unwrap(), "v:1,1 Z:99 v:3,2 Z:16282");
    hll.raise(102, 2, 3000).unwrap();
    hll.raise(101, 2, 3000).unwrap();
    assert_eq!(
        hll.decode_sparse().unwrap(),
        "v:1,1 Z:99 v:3,2 v:2,1 Z:16281"
    );
    hll.raise(5, 33, 3000).unwrap();
    assert_eq!(hll.encoding(), Encoding::Dense);
    assert_eq!(hll.registers().unwrap()[5], 33);
}

#[test]
fn validity_follows_redis_checks() {
    assert!(Hll::is_hll(Hll::new().as_bytes()));
    assert!(!Hll::is_hll(b"HYLL"));
    assert!(!Hll::is_hll(
        b"HYLX\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
    ));
    assert!(!Hll::is_hll(
        b"HYLL\x02\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
    ));
    // Dense must be exactly 12304 bytes; sparse of any length passes until used.
    assert!(!Hll::is_hll(
        b"HYLL\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
    ));
    let mut corrupt =
        Hll::from_bytes(b"HYLL\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x80\x00".to_vec())
            .unwrap();
    assert_eq!(corrupt.count(), Err(Corrupt));
    assert_eq!(corrupt.add(b"x", 3000), Err(Corrupt));
}

#[test]
fn counts_are_close_and_cached() {
    let mut hll = Hll::new();
    for i in 0..20_000u32 {
        hll.add(&i.to_le_bytes(), DEFAULT_SPARSE_MAX_BYTES).unwrap();
    }
    hll.invalidate_cache();
    assert_eq!(hll.encoding(), Encoding::Dense);
    let (count, changed) = hll.count().unwrap();
    assert!(changed);
    assert!((count as f64 - 20_000.0).abs() < 20_000.0 * 0.05, "{count}");
    assert_eq!(hll.count().unwrap(), (count, false));
}

#[test]
fn self_test_passes() {
    self_test(200_000, DEFAULT_SPARSE_MAX_BYTES, 0x1234_5678_9abc_def0).unwrap();
}

/// Writes that make long codes and many merges: registers anywhere, or packed into a few narrow
/// windows (neighbouring VALs of equal value merge), values mostly 1..=4, sometimes above 32.
fn dense_writes() -> impl Strategy<Value = Vec<(usize, u8)>> {
    proptest::collection::vec(
        (
            prop_oneof![
                0..REGISTERS,
                0..40usize,
                8000..8100usize,
                (REGISTERS - 40)..REGISTERS
            ],
            prop_oneof![12 => 1u8..=4, 4 => 1u8..=32, 1 => 33u8..=51],
        ),
        0..1500,
    )
}

/// Drives the same writes through [`sparse::set_reference`] (the plain scan, verbatim) and
/// through `set`, with the index of `blocks` blocks when given or as [`Hll::raise`] keeps it
/// otherwise; the strings must agree after every write, and the kept index must be the one a
/// fresh build gives.
fn check_against_reference(
    start: &[u8],
    writes: &[(usize, u8)],
    max_bytes: usize,
    blocks: Option<usize>,
) -> Result<(), TestCaseError> {
    let mut reference = start.to_vec();
    let mut hll = Hll::from_bytes(start.to_vec()).unwrap();
    if let Some(blocks) = blocks {
        hll.index = sparse::Index::build(&start[HEADER..], blocks);
    }
    for &(i, v) in writes {
        let expected = sparse::set_reference(&mut reference, HEADER, i, v, max_bytes);
        let got = match blocks {
            Some(_) => sparse::set(&mut hll.bytes, HEADER, &mut hll.index, i, v, max_bytes),
            None => {
                sparse::Index::keep_up(&mut hll.index, &hll.bytes[HEADER..]);
                sparse::set(&mut hll.bytes, HEADER, &mut hll.index, i, v, max_bytes)
            }
        };
        prop_assert_eq!(got, expected);
        prop_assert_eq!(&hll.bytes, &reference);
        if let Some(index) = &hll.index {
            let fresh = sparse::Index::build(&hll.bytes[HEADER..], index.blocks());
            prop_assert_eq!(Some(index), fresh.as_ref());
        }
        if got != Ok(sparse::SetOutcome::Updated) && got != Ok(sparse::SetOutcome::Unchanged) {
            // Promoted (dense from here on, no sparse code to compare) or corrupt.
            break;
        }
    }
    Ok(())
}

/// A well-formed code that Redis would not write: random opcodes (short XZEROs, unmerged VALs)
/// covering exactly 16384 registers.
fn odd_code() -> impl Strategy<Value = Vec<u8>> {
    proptest::collection::vec((0u8..3, 1usize..=600, 1u8..=32, 1usize..=4), 1..400).prop_map(
        |ops| {
            let mut code = Vec::new();
            let mut left = REGISTERS;
            for (kind, n, value, len) in ops {
                if left == 0 {
                    break;
                }
                match kind {
                    0 => {
                        let n = n.min(64).min(left);
                        code.push((n - 1) as u8);
                        left -= n;
                    }
                    1 => {
                        let n = n.min(left);
                        code.extend_from_slice(&[0x40 | ((n - 1) >> 8) as u8, (n - 1) as u8]);
                        left -= n;
                    }
                    _ => {
                        let len = len.min(left);
                        code.push(0x80 | (value - 1) << 2 | (len - 1) as u8);
                        left -= len;
                    }
                }
            }
            while left > 0 {
                let n = left.min(XZERO_LIMIT);
                code.extend_from_slice(&[0x40 | ((n - 1) >> 8) as u8, (n - 1) as u8]);
                left -= n;
            }
            code
        },
    )
}

const XZERO_LIMIT: usize = sparse::XZERO_MAX_LEN;

fn with_header(code: &[u8]) -> Vec<u8> {
    let mut bytes = Hll::new().as_bytes()[..HEADER].to_vec();
    bytes.extend_from_slice(code);
    bytes
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn indexed_set_writes_the_reference_bytes(
        writes in dense_writes(),
        max_bytes in prop_oneof![20usize..300, 300usize..5000],
    ) {
        check_against_reference(Hll::new().as_bytes(), &writes, max_bytes, None)?;
    }

    #[test]
    fn any_index_size_writes_the_reference_bytes(
        writes in dense_writes(),
        max_bytes in prop_oneof![20usize..300, 300usize..5000],
        blocks_log2 in 0u32..=10,
    ) {
        check_against_reference(Hll::new().as_bytes(), &writes, max_bytes, Some(1 << blocks_log2))?;
    }

    #[test]
    fn odd_codes_are_updated_as_redis_would(
        code in odd_code(),
        writes in dense_writes(),
        blocks_log2 in proptest::option::of(0u32..=10),
    ) {
        let start = with_header(&code);
        prop_assert!(sparse::Index::build(&code, 16).is_some());
        check_against_reference(&start, &writes, 40_000, blocks_log2.map(|b| 1 << b))?;
    }

    #[test]
    fn corrupt_codes_are_updated_as_redis_would(
        code in proptest::collection::vec(any::<u8>(), 0..300),
        writes in dense_writes(),
    ) {
        check_against_reference(&with_header(&code), &writes, 40_000, None)?;
    }
}

#[test]
fn the_index_costs_at_most_the_code() {
    let mut hll = Hll::new();
    for i in 0..1_500u64 {
        let (index, value) = position(&i.to_le_bytes());
        hll.raise(index, value.min(32), 1 << 20).unwrap();
        let code = hll.len() - HEADER;
        let cost = hll.index.as_ref().map_or(0, sparse::Index::heap_bytes);
        assert!(cost <= code, "{cost} > {code}");
        assert!(code < 256 || cost * 4 <= code + 64, "{cost} for {code}");
    }
    assert!(hll.index.is_some());
    hll.to_dense().unwrap();
    assert!(hll.index.is_none());
}
