#!/usr/bin/env python3
"""Latency with many connections, and throughput with I/O threads: embedis beside other servers.

compare.py pins each server to one core and redis-benchmark to the other, with 50 connections,
and reports CPU per request. Issue 33 also asks two things that setting cannot show:

  latency  p50, p99 and p99.9 at -P 1 with 200 connections (servers on core 0, the client on
           core 1, as compare.py), read from redis-benchmark's own histogram: p50 and p99 from
           its CSV summary, p99.9 from the first line of its percentile distribution at or above
           99.9% (the histogram's buckets: an upper bound a few microseconds wide).
  threads  ops/s with `--io-threads N` on every server, nothing pinned (the servers' threads and
           redis-benchmark share the machine's cores), 64 connections.

Each round runs every server in turn, the order rotated per round; the tables give the medians.

Usage: benches/server/latency.py [--mode latency|threads] [--rounds 3] [--requests 200000]
                                 [--embedis target/release/embedis-server]
                                 [--reference NAME=PATH]... [--tests get,set] [--io-threads 2]
                                 [--clients 200]
"""

import argparse
import csv
import io
import os
import re
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compare  # noqa: E402  (ports, readiness probe, server directories)


def start(binary, is_embedis, cores, io_threads):
    port = compare.free_port()
    cmd = ["taskset", "-c", cores, binary, "--port", str(port), "--save", "", "--appendonly", "no",
           "--logfile", "/dev/null", "--dir", compare.server_dir()]
    if not is_embedis:
        cmd += ["--daemonize", "no", "--dbfilename", "embedis-bench-never-written.rdb"]
    if io_threads > 1:
        cmd += ["--io-threads", str(io_threads)]
        if not is_embedis:
            cmd += ["--io-threads-do-reads", "yes"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    compare.wait_ready(port, proc)
    return proc, port


def p999(text):
    """The first percentile line at or above 99.9% in redis-benchmark's distribution, in ms."""
    for line in text.splitlines():
        m = re.match(r"\s*([\d.]+)% <= ([\d.]+) milliseconds", line)
        if m and float(m.group(1)) >= 99.9:
            return float(m.group(2))
    return float("nan")


def run(port, test, args, cores):
    base = ["taskset", "-c", cores, "redis-benchmark", "-p", str(port), "-c", str(args.clients),
            "-r", "100000", "-n", str(args.requests), "-P", "1", "-t", test]
    summary = subprocess.run(base + ["--csv"], capture_output=True, text=True, check=True).stdout
    rows = list(csv.reader(io.StringIO(summary)))
    row = dict(zip(rows[0], rows[1]))
    result = {"rps": float(row["rps"]), "p50": float(row["p50_latency_ms"]),
              "p99": float(row["p99_latency_ms"])}
    if args.mode == "latency":
        # The distribution comes with the non-CSV report: a second run of the same length.
        text = subprocess.run(base, capture_output=True, text=True, check=True).stdout
        result["p999"] = p999(text)
    return result


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mode", default="latency", choices=["latency", "threads"])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--requests", type=int, default=200000)
    ap.add_argument("--embedis", default="target/release/embedis-server")
    ap.add_argument("--reference", action="append", default=[], help="NAME=PATH of a redis-server")
    ap.add_argument("--tests", default="get,set")
    ap.add_argument("--io-threads", type=int, default=2)
    ap.add_argument("--clients", type=int, default=0, help="default: 200 (latency), 64 (threads)")
    args = ap.parse_args()
    args.clients = args.clients or (200 if args.mode == "latency" else 64)
    threads = args.io_threads if args.mode == "threads" else 1
    server_cores, client_cores = ("0", "1") if args.mode == "latency" else ("0,1", "0,1")
    servers = [("embedis", args.embedis, True)]
    servers += [tuple(r.split("=", 1)) + (False,) for r in args.reference]
    running = {name: start(path, emb, server_cores, threads) for name, path, emb in servers}
    results = {}
    try:
        for test in args.tests.split(","):
            for r in range(args.rounds):
                names = list(running)
                for name in names[r % len(names):] + names[:r % len(names)]:
                    res = run(running[name][1], test, args, client_cores)
                    results.setdefault((test, name), []).append(res)
                    print(f"  {test} {name} round {r + 1}: {res}", file=sys.stderr, flush=True)
    finally:
        for proc, _ in running.values():
            proc.kill()
    keys = ["rps", "p50", "p99"] + (["p999"] if args.mode == "latency" else [])
    print(f"Medians of {args.rounds} rounds; -P 1, -c {args.clients}, -r 100000, {args.requests} "
          f"requests; io-threads {threads}; servers on cores {server_cores}, client on {client_cores}")
    print("| test | server | " + " | ".join(keys) + " |")
    print("|---|---|" + "---|" * len(keys))
    for test in args.tests.split(","):
        for name in running:
            med = [statistics.median(x[k] for x in results[(test, name)]) for k in keys]
            cells = [f"{med[0]:,.0f}"] + [f"{v:.3f} ms" for v in med[1:]]
            print(f"| {test.upper()} | {name} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
