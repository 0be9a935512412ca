//! Property tests for the protocol: values survive encode → decode, requests survive any split of
//! the byte stream, down-conversion to RESP2 follows Redis's mapping, and no input makes the
//! decoders panic.

use bytes::{Bytes, BytesMut};
use embedis_protocol::{decode_value, RequestDecoder, Value, Version, Writer};
use proptest::prelude::*;

fn bytes_strategy() -> impl Strategy<Value = Bytes> {
    proptest::collection::vec(any::<u8>(), 0..40).prop_map(Bytes::from)
}

/// Text that is valid inside a simple string or error line (no CR/LF).
fn line_strategy() -> impl Strategy<Value = Bytes> {
    "[a-zA-Z0-9 _:.-]{0,30}".prop_map(|s| Bytes::from(s.into_bytes()))
}

fn value_strategy() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        line_strategy().prop_map(Value::Simple),
        line_strategy().prop_map(|l| Value::Error(Bytes::from([&b"ERR "[..], &l].concat()))),
        any::<i64>().prop_map(Value::Integer),
        bytes_strategy().prop_map(Value::Bulk),
        Just(Value::Null),
        any::<bool>().prop_map(Value::Boolean),
        // Doubles that %.17g prints exactly enough to parse back to the same value.
        any::<f64>()
            .prop_filter("finite", |d| d.is_finite())
            .prop_map(Value::Double),
        Just(Value::Double(f64::INFINITY)),
        Just(Value::Double(f64::NEG_INFINITY)),
        "-?[1-9][0-9]{0,40}".prop_map(|s| Value::BigNumber(Bytes::from(s.into_bytes()))),
        bytes_strategy().prop_map(|text| Value::Verbatim {
            format: *b"txt",
            text
        }),
    ];
    leaf.prop_recursive(3, 40, 6, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            proptest::collection::vec(inner.clone(), 0..6).prop_map(Value::Set),
            proptest::collection::vec(inner.clone(), 0..6).prop_map(Value::Push),
            proptest::collection::vec((inner.clone(), inner.clone()), 0..4).prop_map(Value::Map),
            (
                proptest::collection::vec((inner.clone(), inner.clone()), 1..3),
                inner
            )
                .prop_map(|(attributes, value)| Value::Attribute {
                    attributes,
                    value: Box::new(value)
                }),
        ]
    })
}

fn encode(value: &Value, version: Version) -> Bytes {
    let mut buf = BytesMut::new();
    value.write_to(&mut Writer::new(&mut buf, version));
    buf.freeze()
}

/// What a RESP2 client sees for `value` (Redis's down-conversion), written as a value.
fn resp2_view(value: &Value) -> Value {
    match value {
        Value::Map(pairs) => Value::Array(
            pairs
                .iter()
                .flat_map(|(k, v)| [resp2_view(k), resp2_view(v)])
                .collect(),
        ),
        Value::Set(items) | Value::Push(items) | Value::Array(items) => {
            Value::Array(items.iter().map(resp2_view).collect())
        }
        Value::Double(d) => Value::Bulk(Bytes::from(
            embedis_protocol::float::format_g17(*d).into_bytes(),
        )),
        Value::Boolean(b) => Value::Integer(*b as i64),
        Value::BigNumber(n) => Value::Bulk(n.clone()),
        Value::Verbatim { text, .. } => Value::Bulk(text.clone()),
        Value::Attribute { value, .. } => resp2_view(value),
        other => other.clone(),
    }
}

proptest! {
    #[test]
    fn resp3_values_round_trip(value in value_strategy()) {
        let wire = encode(&value, Version::Resp3);
        let (decoded, used) = decode_value(&wire).unwrap().unwrap();
        prop_assert_eq!(used, wire.len());
        prop_assert_eq!(decoded, value);
    }

    #[test]
    fn resp2_down_conversion_is_redis_mapping(value in value_strategy()) {
        let wire = encode(&value, Version::Resp2);
        let (decoded, used) = decode_value(&wire).unwrap().unwrap();
        prop_assert_eq!(used, wire.len());
        prop_assert_eq!(decoded, resp2_view(&value));
    }

    #[test]
    fn every_prefix_of_a_value_needs_more(value in value_strategy()) {
        let wire = encode(&value, Version::Resp3);
        for cut in 0..wire.len() {
            prop_assert_eq!(decode_value(&wire.slice(..cut)), Ok(None));
        }
    }

    /// Pipelined requests decode to the same commands however the stream is cut into reads.
    #[test]
    fn requests_survive_any_split(
        commands in proptest::collection::vec(proptest::collection::vec(bytes_strategy(), 1..6), 1..8),
        cuts in proptest::collection::vec(any::<prop::sample::Index>(), 0..10),
    ) {
        let mut wire = Vec::new();
        for args in &commands {
            wire.extend_from_slice(format!("*{}\r\n", args.len()).as_bytes());
            for a in args {
                wire.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
                wire.extend_from_slice(a);
                wire.extend_from_slice(b"\r\n");
            }
        }
        let mut points: Vec<usize> = cuts.iter().map(|i| i.index(wire.len() + 1)).collect();
        points.push(wire.len());
        points.sort();
        let mut decoder = RequestDecoder::default();
        let mut buf = BytesMut::new();
        let mut got = Vec::new();
        let mut start = 0;
        for end in points {
            buf.extend_from_slice(&wire[start..end]);
            start = end;
            while let Some(args) = decoder.decode(&mut buf, true).unwrap() {
                got.push(args);
            }
        }
        prop_assert_eq!(got, commands);
    }

    /// Inline commands written with redis-cli quoting decode to the original arguments.
    #[test]
    fn inline_quoting_round_trips(args in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..12), 1..5)) {
        let mut line = Vec::new();
        for (i, arg) in args.iter().enumerate() {
            if i > 0 {
                line.push(b' ');
            }
            line.push(b'"');
            for &b in arg {
                line.extend_from_slice(format!("\\x{b:02x}").as_bytes());
            }
            line.push(b'"');
        }
        line.extend_from_slice(b"\r\n");
        let mut buf = BytesMut::from(&line[..]);
        let decoded = RequestDecoder::default().decode(&mut buf, true).unwrap().unwrap();
        let decoded: Vec<Vec<u8>> = decoded.into_iter().map(|b| b.to_vec()).collect();
        prop_assert_eq!(decoded, args);
    }

    /// Arbitrary bytes never panic either decoder (a quick, always-on cousin of the fuzz targets).
    #[test]
    fn garbage_never_panics(data in proptest::collection::vec(any::<u8>(), 0..300), authenticated in any::<bool>()) {
        let mut buf = BytesMut::from(&data[..]);
        let mut decoder = RequestDecoder::default();
        while let Ok(Some(_)) = decoder.decode(&mut buf, authenticated) {}
        let _ = decode_value(&Bytes::from(data));
    }
}
