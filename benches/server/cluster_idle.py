#!/usr/bin/env python3
"""What the cluster bus costs when nothing else happens: six nodes (three primaries with a
replica each, every node of one implementation) formed with CLUSTER MEET / ADDSLOTSRANGE /
REPLICATE, left idle, and the CPU each node burns over a window (user + system from /proc),
for embedis and for redis-server (and a second reference with --redis8 / --valkey), the
implementations alternating A B A B, medians of the rounds.

Usage: benches/server/cluster_idle.py [--rounds 3] [--seconds 20] [--node-timeout 15000]
                                      [--binary target/release/embedis-server]
                                      [--reference redis=/usr/bin/redis-server ...]
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compare  # noqa: E402


def cli(port, *args):
    return subprocess.run(["redis-cli", "-p", str(port), *args], capture_output=True, text=True).stdout.strip()


def form_cluster(binary, node_timeout):
    nodes = []
    for _ in range(6):
        port, bus = compare.free_port(), compare.free_port()
        work = tempfile.mkdtemp(prefix="cluster-idle-")
        proc = subprocess.Popen([binary, "--port", str(port), "--cluster-enabled", "yes", "--cluster-port", str(bus),
                                 "--cluster-node-timeout", str(node_timeout), "--save", "", "--appendonly", "no",
                                 "--dir", work, "--logfile", ""],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        compare.wait_ready(port, proc)
        nodes.append((port, bus, proc, work))
    for i, (start, end) in enumerate([(0, 5460), (5461, 10922), (10923, 16383)]):
        cli(nodes[i][0], "CLUSTER", "ADDSLOTSRANGE", str(start), str(end))
    for port, bus, _, _ in nodes[1:]:
        cli(nodes[0][0], "CLUSTER", "MEET", "127.0.0.1", str(port), str(bus))
    deadline = time.time() + 30
    while time.time() < deadline:
        if all(len(cli(p, "CLUSTER", "NODES").splitlines()) == 6 for p, _, _, _ in nodes):
            break
        time.sleep(0.2)
    for i in range(3, 6):
        cli(nodes[i][0], "CLUSTER", "REPLICATE", cli(nodes[i - 3][0], "CLUSTER", "MYID"))
    while time.time() < deadline:
        if all("cluster_state:ok" in cli(p, "CLUSTER", "INFO") for p, _, _, _ in nodes):
            break
        time.sleep(0.2)
    return nodes


def idle_cpu_percent(binary, seconds, node_timeout):
    nodes = form_cluster(binary, node_timeout)
    try:
        time.sleep(2)
        before = [compare.cpu_seconds(proc.pid) for _, _, proc, _ in nodes]
        time.sleep(seconds)
        after = [compare.cpu_seconds(proc.pid) for _, _, proc, _ in nodes]
        return statistics.mean((a - b) / seconds * 100 for a, b in zip(after, before))
    finally:
        for _, _, proc, work in nodes:
            proc.kill()
            proc.wait()
            shutil.rmtree(work, ignore_errors=True)


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=20)
    ap.add_argument("--node-timeout", type=int, default=15000)
    ap.add_argument("--binary", default=os.path.join(here, "..", "..", "target", "release", "embedis-server"))
    ap.add_argument("--reference", action="append", default=[],
                    help="name=path of a redis-server-like binary (default: redis=redis-server on PATH)")
    args = ap.parse_args()
    servers = [("embedis", args.binary)]
    refs = args.reference or [f"redis={shutil.which('redis-server')}"]
    servers += [tuple(r.split("=", 1)) for r in refs]
    runs = {name: [] for name, _ in servers}
    for _ in range(args.rounds):
        for name, binary in servers:
            runs[name].append(idle_cpu_percent(binary, args.seconds, args.node_timeout))
    print(f"| 6 idle nodes, node timeout {args.node_timeout} ms | CPU % per node (median) | rounds |")
    print("|---|---|---|")
    for name, _ in servers:
        print(f"| {name} | {statistics.median(runs[name]):.3f} | {', '.join(f'{x:.3f}' for x in runs[name])} |")


if __name__ == "__main__":
    main()
