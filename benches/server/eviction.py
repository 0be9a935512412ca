#!/usr/bin/env python3
"""CPU per evicted key: embedis against redis-server under the same eviction workload.

Each run starts a fresh server pinned to core 0 with `maxmemory 64mb` and
`maxmemory-policy allkeys-lru`, runs redis-benchmark pinned to core 1

    redis-benchmark -p PORT -t set -r 5000000 -n 2000000 -d 100 -q

and reads the server's CPU time (utime + stime from /proc/PID/stat) and INFO's evicted_keys.
The same workload without maxmemory gives each server's CPU for the SETs alone, so that the
difference divided by evicted_keys is the eviction loop's own cost per key. Servers alternate run
by run (A B A B …); medians are quoted. Usage:

    cargo build --release
    python3 benches/server/eviction.py --rounds 2 --port 23300
"""

import argparse
import os
import socket
import statistics
import subprocess
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EMBEDIS = os.path.join(ROOT, "target", "release", "embedis-server")
TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def info_field(port, name):
    out = subprocess.run(
        ["redis-cli", "-p", str(port), "INFO", "everything"],
        capture_output=True, text=True, check=True,
    ).stdout
    for line in out.splitlines():
        if line.startswith(name + ":"):
            return line.split(":", 1)[1].strip()
    raise KeyError(name)


def wait_up(port):
    for _ in range(200):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.1).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"server on {port} did not start")


def run(server, port, maxmemory):
    args = ["--port", str(port), "--save", "", "--appendonly", "no",
            "--dir", tempfile.mkdtemp(prefix="embedis-bench-")]
    if maxmemory:
        args += ["--maxmemory", "64mb", "--maxmemory-policy", "allkeys-lru"]
    binary = EMBEDIS if server == "embedis" else "redis-server"
    proc = subprocess.Popen(["taskset", "-c", "0", binary] + args,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_up(port)
        before = cpu_seconds(proc.pid)
        started = time.time()
        subprocess.run(
            ["taskset", "-c", "1", "redis-benchmark", "-p", str(port), "-t", "set",
             "-r", "5000000", "-n", "2000000", "-d", "100", "-q"],
            check=True, capture_output=True,
        )
        wall = time.time() - started
        cpu = cpu_seconds(proc.pid) - before
        evicted = int(info_field(port, "evicted_keys"))
        keys = info_field(port, "db0").split(",")[0] if maxmemory else ""
        return cpu, evicted, wall, keys
    finally:
        proc.terminate()
        proc.wait()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--port", type=int, default=23300)
    opts = parser.parse_args()
    results = {(s, m): [] for s in ("embedis", "redis") for m in (True, False)}
    for r in range(opts.rounds):
        for maxmemory in (True, False):
            order = ("embedis", "redis") if r % 2 == 0 else ("redis", "embedis")
            for server in order:
                cpu, evicted, wall, keys = run(server, opts.port, maxmemory)
                results[(server, maxmemory)].append((cpu, evicted))
                print(f"round {r} {server:8} maxmemory={'64mb' if maxmemory else 'off '} "
                      f"cpu {cpu:6.2f} s  wall {wall:6.2f} s  evicted {evicted:8}  {keys}",
                      flush=True)
    print()
    summary = {}
    for server in ("embedis", "redis"):
        cpu_evict = statistics.median(c for c, _ in results[(server, True)])
        evicted = statistics.median(e for _, e in results[(server, True)])
        cpu_plain = statistics.median(c for c, _ in results[(server, False)])
        per_key = cpu_evict / evicted * 1e6
        loop = (cpu_evict - cpu_plain) / evicted * 1e6
        summary[server] = (per_key, loop)
        print(f"{server:8} CPU {cpu_evict:.2f} s with eviction, {cpu_plain:.2f} s without; "
              f"{evicted:.0f} evicted; {per_key:.2f} µs CPU per evicted key overall, "
              f"{loop:.2f} µs for the eviction itself")
    e, r = summary["embedis"], summary["redis"]
    print(f"ratio embedis/redis: overall {e[0] / r[0]:.2f}, eviction itself {e[1] / r[1]:.2f}")


if __name__ == "__main__":
    main()
