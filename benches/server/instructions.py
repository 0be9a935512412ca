#!/usr/bin/env python3
"""Instructions per request, embedis against redis-server, counted by valgrind.

compare.py measures ops/s and CPU time, which swing by ±15% when other work shares the machine's
two cores. This script counts the user-space instructions each server executes per request
instead: valgrind's count is the same whatever else the machine is doing, so small differences
(a few hundred instructions per request) can be seen and kept track of on a busy machine.

Each server runs under `valgrind --tool=cachegrind --cache-sim=no` twice per test: once serving
a few requests, once serving many more. The difference of the two totals, divided by the
difference of the request counts, is the cost of one request; start-up, script loading,
prefilling and the 50 connections of redis-benchmark cancel out. Kernel time (read/write
system calls) is not counted: at -P 16 it is shared by 16 requests, at -P 1 it is a large part
of the real cost, so read this beside compare.py's CPU per request, not instead of it.

Usage: benches/server/instructions.py [--suite locks,strings,collections,hll,events,geo_sort_bits,streams] [--only NAME] [--pipeline 16]
                                      [--requests 20000] [--binary target/release/embedis-server]
                                      [--baseline OLD-BINARY] [--config "NAME VALUE"]...
                                      [--embedis-config "NAME VALUE"]... [--reference REDIS-SERVER]

--config starts both servers with a setting: the `events` suite run with and without
`--config "notify-keyspace-events KEA"` gives the cost of keyspace notifications per event.

--baseline also counts an earlier embedis-server binary, for the before/after of a change.
--reference counts another redis-server binary instead of the one on PATH (Redis 8.2 for issue 18).
"""

import argparse
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compare  # noqa: E402  (the side-by-side script: test lists, prefill, readiness probe)

# Requests served by the short run; the long run serves this plus --requests.
BASE_REQUESTS = 2000


# Extra configuration given to both servers at start (`--config "notify-keyspace-events KEA"`).
SERVER_CONFIG = []
# Settings for the embedis under test only, not the baseline (`--embedis-config "cluster-enabled
# yes"` with `--baseline` the same binary: the cost of cluster mode per request).
EMBEDIS_CONFIG = []


def start(server, binary, out_file, label=None):
    port = compare.free_port()
    valgrind = ["valgrind", "--tool=cachegrind", "--cache-sim=no", f"--cachegrind-out-file={out_file}"]
    if server == "embedis":
        cmd = [binary, "--port", str(port), "--save", "", "--appendonly", "no", "--logfile", "/dev/null",
               "--dir", compare.server_dir()]
    else:
        cmd = [compare.REDIS_BINARY[0], "--port", str(port), "--save", "", "--appendonly", "no", "--logfile", "/dev/null",
               "--daemonize", "no", "--dir", "/tmp", "--dbfilename", "embedis-bench-never-written.rdb"]
    cmd += SERVER_CONFIG
    if label == "embedis":
        cmd += EMBEDIS_CONFIG
    proc = subprocess.Popen(valgrind + cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    compare.wait_ready(port, proc, timeout=60)
    return proc, port


def total_instructions(out_file):
    with open(out_file) as f:
        for line in f:
            if line.startswith("summary:"):
                return int(line.split()[1])
    raise RuntimeError(f"no summary in {out_file}")


def run_once(server, binary, test_args, prepare, pipeline, requests, label=None):
    """Total instructions of a server that started, was prepared and served `requests`."""
    with tempfile.TemporaryDirectory() as tmp:
        out_file = os.path.join(tmp, "cachegrind.out")
        proc, port = start(server, binary, out_file, label)
        try:
            if prepare:
                compare.prefill(port, prepare, 100000)
            cmd = ["redis-benchmark", "-p", str(port), "-c", "50", "-r", "100000", "-n", str(requests),
                   "-P", str(pipeline), "-q", *test_args]
            subprocess.run(cmd, capture_output=True, check=True)
            for sub in compare.SUBSCRIBERS.pop(port, []):
                sub.kill()
                sub.wait()
            compare.redis_cli(port, "SHUTDOWN", "NOSAVE")
            proc.wait(timeout=120)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        return total_instructions(out_file)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--suite", default="locks")
    ap.add_argument("--only", default=None, help="run only tests whose name contains this")
    ap.add_argument("--pipeline", type=int, action="append", help="-P values (default: 1 and 16)")
    ap.add_argument("--requests", type=int, default=20000)
    ap.add_argument("--binary", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                                     "target", "release", "embedis-server"))
    ap.add_argument("--baseline", default="", help="an earlier embedis-server binary to count beside")
    ap.add_argument("--config", action="append", default=[],
                    help='a setting both servers start with, e.g. "notify-keyspace-events KEA"')
    ap.add_argument("--embedis-config", action="append", default=[],
                    help='a setting only the embedis under test starts with (not redis, not --baseline)')
    ap.add_argument("--reference", default="", help="another redis-server binary to count (e.g. Redis 8.2)")
    args = ap.parse_args()
    if args.reference:
        compare.REDIS_BINARY[0] = args.reference
    for setting in args.embedis_config:
        name, _, value = setting.partition(" ")
        EMBEDIS_CONFIG.extend([f"--{name}", value])
        if name == "cluster-enabled":
            # Its own bus port: the client port + 10000 may be past 65535.
            EMBEDIS_CONFIG.extend(["--cluster-port", str(compare.free_port())])
    for setting in args.config:
        name, _, value = setting.partition(" ")
        SERVER_CONFIG.extend([f"--{name}", value])
    tests = []
    for suite in args.suite.split(","):
        tests += {"locks": compare.lock_tests, "strings": lambda: compare.STRING_TESTS,
                  "events": lambda: compare.EVENT_TESTS,
                  "geo_sort_bits": lambda: compare.GEO_SORT_BITS_TESTS,
                  "streams": lambda: compare.STREAM_TESTS,
                  "collections": lambda: compare.COLLECTION_TESTS,
                  "hll": lambda: compare.HLL_TESTS}[suite]()
    if args.only:
        tests = [t for t in tests if args.only.lower() in t[0].lower()]
    pipelines = args.pipeline or [1, 16]
    servers = [("embedis", args.binary), ("redis", None)]
    if args.baseline:
        servers.append(("before", args.baseline))
        print("| test | -P | embedis instr/req | redis instr/req | ratio | before instr/req | embedis/before |")
        print("|---|---|---|---|---|---|---|")
    else:
        print("| test | -P | embedis instr/req | redis instr/req | ratio |")
        print("|---|---|---|---|---|")
    for pipeline in pipelines:
        for name, test_args, prepare in tests:
            per_request = {}
            for label, binary in servers:
                server = "redis" if label == "redis" else "embedis"
                short = run_once(server, binary, test_args, prepare, pipeline, BASE_REQUESTS, label)
                long = run_once(server, binary, test_args, prepare, pipeline, BASE_REQUESTS + args.requests, label)
                per_request[label] = (long - short) / args.requests
            e, r = per_request["embedis"], per_request["redis"]
            row = f"| {name} | {pipeline} | {e:,.0f} | {r:,.0f} | {e / r:.2f} |"
            if args.baseline:
                b = per_request["before"]
                row += f" {b:,.0f} | {e / b:.3f} |"
            print(row, flush=True)


if __name__ == "__main__":
    main()
