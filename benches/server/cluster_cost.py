#!/usr/bin/env python3
"""What cluster mode costs per request: GET and SET on one embedis started plain and the same
binary started with `cluster-enabled yes` (a fresh node serves every slot, so every request is
routed by its key's slot and served), CPU time per request (user + system from /proc), the
two alternating A B A B, medians of the rounds. The key-slot check (the hash of the key and the
redirection gate) is the whole difference.

Usage: benches/server/cluster_cost.py [--rounds 5] [--requests 1000000] [--pipeline 16 --pipeline 1]
                                      [--binary target/release/embedis-server]
"""
import argparse
import os
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compare  # noqa: E402

TESTS = [("GET", ["GET", "key:__rand_int__"]), ("SET", ["SET", "key:__rand_int__", "value"])]


def cpu_per_request(binary, cluster, test_args, pipeline, requests):
    port = compare.free_port()
    cmd = [binary, "--port", str(port), "--save", "", "--appendonly", "no", "--logfile", "/dev/null"]
    if cluster:
        cmd += ["--cluster-enabled", "yes", "--cluster-port", str(compare.free_port()),
                "--dir", compare.server_dir()]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        compare.wait_ready(port, proc)
        before = compare.cpu_seconds(proc.pid)
        subprocess.run(["redis-benchmark", "-p", str(port), "-c", "50", "-r", "100000", "-n", str(requests),
                        "-P", str(pipeline), "-q", *test_args], capture_output=True, check=True)
        return (compare.cpu_seconds(proc.pid) - before) / requests * 1e6
    finally:
        proc.kill()
        proc.wait()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--requests", type=int, default=1000000)
    ap.add_argument("--pipeline", type=int, action="append")
    ap.add_argument("--binary", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                                     "target", "release", "embedis-server"))
    args = ap.parse_args()
    print("| test | -P | plain µs/req | cluster µs/req | cluster/plain | rounds (plain; cluster) |")
    print("|---|---|---|---|---|---|")
    for pipeline in args.pipeline or [16, 1]:
        for name, test_args in TESTS:
            runs = {False: [], True: []}
            for _ in range(args.rounds):
                for cluster in (False, True):
                    runs[cluster].append(cpu_per_request(args.binary, cluster, test_args, pipeline, args.requests))
            p, c = statistics.median(runs[False]), statistics.median(runs[True])
            detail = "; ".join(", ".join(f"{x:.3f}" for x in runs[k]) for k in (False, True))
            print(f"| {name} | {pipeline} | {p:.3f} | {c:.3f} | {c / p:.3f} | {detail} |", flush=True)


if __name__ == "__main__":
    main()
