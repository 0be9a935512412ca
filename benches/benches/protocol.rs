//! Request decoding and reply encoding: a pipeline of 16 SETs (redis-benchmark -P 16), an
//! inline command, bulk replies, and Redis's %.17g double formatting.

use bytes::BytesMut;
use criterion::{black_box, criterion_group, criterion_main, Criterion, Throughput};
use embedis_protocol::{float, RequestDecoder, Version, Writer};

fn pipeline(n: usize) -> Vec<u8> {
    let mut wire = Vec::new();
    for i in 0..n {
        let key = format!("key:{i:012}");
        wire.extend_from_slice(
            format!(
                "*3\r\n$3\r\nSET\r\n${}\r\n{key}\r\n$3\r\nxxx\r\n",
                key.len()
            )
            .as_bytes(),
        );
    }
    wire
}

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("protocol");
    let wire = pipeline(16);
    group.throughput(Throughput::Elements(16));
    group.bench_function("decode 16 pipelined SETs", |b| {
        b.iter(|| {
            let mut buf = BytesMut::from(&wire[..]);
            let mut decoder = RequestDecoder::default();
            let mut n = 0;
            while let Some(args) = decoder.decode(&mut buf, true).unwrap() {
                n += args.len();
            }
            black_box(n)
        })
    });
    group.throughput(Throughput::Elements(1));
    group.bench_function("decode inline SET with quotes", |b| {
        b.iter(|| {
            let mut buf = BytesMut::from(&b"SET \"key with space\" value\r\n"[..]);
            black_box(RequestDecoder::default().decode(&mut buf, true).unwrap())
        })
    });
    group.bench_function("encode 16 bulk replies", |b| {
        let mut out = BytesMut::with_capacity(4096);
        b.iter(|| {
            out.clear();
            let mut w = Writer::new(&mut out, Version::Resp2);
            for _ in 0..16 {
                w.bulk(b"xxx");
            }
            black_box(out.len())
        })
    });
    group.bench_function("format double %.17g", |b| {
        let mut out = Vec::with_capacity(32);
        b.iter(|| {
            out.clear();
            float::push_g17(&mut out, black_box(1234.5678));
            black_box(out.len())
        })
    });
    group.bench_function("format integral double %.17g", |b| {
        let mut out = Vec::with_capacity(32);
        b.iter(|| {
            out.clear();
            float::push_g17(&mut out, black_box(1234.0));
            black_box(out.len())
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
