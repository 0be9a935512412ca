#!/usr/bin/env python3
"""Vector sets, embedis against Redis 8.2.3: cross-loading of DUMP payloads, recall, speed and
memory.

    /work/venv/bin/python benches/server/vector_sets.py \
        --redis /path/to/redis-server-8.2.3 --embedis target/release/embedis-server \
        [--vectors 10000] [--dim 64] [--queries 200] [--runs 3]

1. Cross-loading: a set of 300 vectors with attributes is built in each server, DUMPed and
   RESTOREd into the other; VEMB, VGETATTR and VSIM TRUTH (exact) must agree with the source.
2. Recall: --vectors seeded random vectors (uniform in [-1, 1]) go into both servers (VADD, Q8
   default); --queries random queries ask VSIM COUNT 10; recall is the share of the exact top 10
   (VSIM … TRUTH, Redis's own brute force over the same quantised vectors) found.
3. Speed and memory: VADD throughput (one pipelined client, 100 commands per batch), VSIM
   COUNT 10 throughput, and used_memory/RSS growth per vector, alternating the servers over
   --runs runs and reporting medians.
"""

import argparse
import random
import statistics
import struct
import subprocess
import sys
import tempfile
import time

import redis


def start(binary, port, extra):
    d = tempfile.mkdtemp()
    args = [binary, "--port", str(port), "--save", "", "--appendonly", "no", "--dir", d] + extra
    p = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    c = redis.Redis(port=port)
    for _ in range(200):
        try:
            c.ping()
            return p, c
        except redis.ConnectionError:
            time.sleep(0.05)
    raise RuntimeError(f"{binary} did not start")


def vectors(n, dim, seed):
    rng = random.Random(seed)
    return [[rng.uniform(-1, 1) for _ in range(dim)] for _ in range(n)]


def fp32(v):
    return struct.pack(f"<{len(v)}f", *v)


def fill(c, key, vecs, attrs=False, batch=100):
    t0 = time.perf_counter()
    for i in range(0, len(vecs), batch):
        p = c.pipeline(transaction=False)
        for j, v in enumerate(vecs[i:i + batch], i):
            args = ["VADD", key, "FP32", fp32(v), f"e{j}"]
            if attrs:
                args += ["SETATTR", f'{{"i": {j}, "odd": {str(j % 2 == 1).lower()}}}']
            p.execute_command(*args)
        p.execute_command("PING")
        p.execute()
    return time.perf_counter() - t0


def cross_load(a, b, name_a, name_b):
    vecs = vectors(300, 16, 7)
    fill(a, "x", vecs, attrs=True)
    payload = a.dump("x")
    b.delete("x")
    b.restore("x", 0, payload)
    bad = 0
    for j in range(0, 300, 7):
        e = f"e{j}"
        if a.execute_command("VEMB", "x", e) != b.execute_command("VEMB", "x", e):
            bad += 1
        if a.execute_command("VGETATTR", "x", e) != b.execute_command("VGETATTR", "x", e):
            bad += 1
    for q in vectors(20, 16, 8):
        args = ["VSIM", "x", "FP32", fp32(q), "WITHSCORES", "COUNT", "20", "TRUTH"]
        if a.execute_command(*args) != b.execute_command(*args):
            bad += 1
        args = ["VSIM", "x", "FP32", fp32(q), "COUNT", "20", "FILTER", ".odd", "TRUTH"]
        if a.execute_command(*args) != b.execute_command(*args):
            bad += 1
    print(f"cross-load {name_a} -> {name_b}: {'OK' if bad == 0 else f'{bad} differences'}")
    return bad


def recall(c, queries, key):
    hits = total = 0
    for q in queries:
        blob = fp32(q)
        got = c.execute_command("VSIM", key, "FP32", blob, "COUNT", 10)
        exact = c.execute_command("VSIM", key, "FP32", blob, "COUNT", 10, "TRUTH")
        hits += len(set(got) & set(exact))
        total += len(exact)
    return hits / total


def vsim_rate(c, key, queries, batch=50):
    t0 = time.perf_counter()
    for i in range(0, len(queries), batch):
        p = c.pipeline(transaction=False)
        for q in queries[i:i + batch]:
            p.execute_command("VSIM", key, "FP32", fp32(q), "COUNT", 10)
        p.execute()
    return len(queries) / (time.perf_counter() - t0)


def rss(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--redis", required=True)
    ap.add_argument("--embedis", required=True)
    ap.add_argument("--vectors", type=int, default=10000)
    ap.add_argument("--dim", type=int, default=64)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--seed", type=int, default=42)
    a = ap.parse_args()
    servers = {
        "redis": (a.redis, []),
        "embedis": (a.embedis, ["--compat-version", "8.2"]),
    }
    port = 23000
    procs = {}
    for i, (name, (binary, extra)) in enumerate(servers.items()):
        procs[name] = start(binary, port + i, extra)
    r, e = procs["redis"][1], procs["embedis"][1]
    bad = cross_load(r, e, "redis", "embedis") + cross_load(e, r, "embedis", "redis")

    data = vectors(a.vectors, a.dim, a.seed)
    queries = vectors(a.queries, a.dim, a.seed + 1)
    results = {name: {"vadd": [], "vsim": [], "mem": [], "rss": [], "recall": []} for name in servers}
    for run in range(a.runs):
        order = list(servers) if run % 2 == 0 else list(reversed(servers))
        for name in order:
            p, c = procs[name]
            c.flushall()
            time.sleep(0.2)
            m0, r0 = c.info("memory")["used_memory"], rss(p.pid)
            secs = fill(c, "v", data)
            m1, r1 = c.info("memory")["used_memory"], rss(p.pid)
            res = results[name]
            res["vadd"].append(a.vectors / secs)
            res["mem"].append((m1 - m0) / a.vectors)
            res["rss"].append((r1 - r0) / a.vectors)
            res["vsim"].append(vsim_rate(c, "v", queries))
            res["recall"].append(recall(c, queries, "v"))
    print(f"{a.vectors} vectors of {a.dim} dims (seed {a.seed}), {a.queries} queries, "
          f"{a.runs} alternating runs, medians:")
    print(f"{'server':8} {'VADD/s':>9} {'VSIM/s':>9} {'used_memory B/vec':>18} "
          f"{'RSS B/vec':>10} {'recall@10':>10}")
    for name, res in results.items():
        med = {k: statistics.median(v) for k, v in res.items()}
        print(f"{name:8} {med['vadd']:9.0f} {med['vsim']:9.0f} {med['mem']:18.0f} "
              f"{med['rss']:10.0f} {med['recall']:10.4f}")
    for p, _ in procs.values():
        p.terminate()
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
