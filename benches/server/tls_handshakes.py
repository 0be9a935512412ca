#!/usr/bin/env python3
"""CPU per new TLS connection: a full handshake and one PING, for embedis (and an earlier embedis
binary, e.g. one on another TLS library) against redis-server.

Each server is started as compare.py starts it (pinned to one core, a TLS port with the
certificates compare.py makes: RSA 2048, X.509 v3, the default `tls-auth-clients yes`), then
redis-benchmark, pinned to the other core, opens a new connection per request
(`--tls ... -k 0 -c 10 -n N -t ping`, which runs PING_INLINE then PING_MBULK: 2N connections,
none resumed). The server's CPU (utime+stime from /proc/PID/stat) before and after, divided by the
connections, is the figure; the servers take turns in rotating order, and the medians of the
rounds are printed.

Usage: benches/server/tls_handshakes.py [--embedis target/release/embedis-server]
                                        [--baseline OLD-BINARY] [--rounds 5] [--requests 2000]
"""

import argparse
import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compare  # noqa: E402


def handshakes(port, pid, requests):
    """CPU µs per connection and connections per second for one run."""
    cmd = ["taskset", "-c", compare.CLIENT_CORE, "redis-benchmark", *compare.benchmark_target(port),
           "-k", "0", "-c", "10", "-n", str(requests), "-t", "ping", "-q"]
    before = compare.cpu_seconds(pid)
    start = time.monotonic()
    subprocess.run(cmd, check=True, capture_output=True)
    wall = time.monotonic() - start
    cpu = compare.cpu_seconds(pid) - before
    connections = 2 * requests
    return cpu * 1e6 / connections, connections / wall


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--embedis", default="target/release/embedis-server")
    ap.add_argument("--baseline")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--requests", type=int, default=2000)
    args = ap.parse_args()
    compare.TLS["dir"] = compare.make_tls_certs()
    servers = [("embedis", compare.start_embedis(args.embedis, 1))]
    if args.baseline:
        servers.append(("baseline", compare.start_embedis(args.baseline, 1)))
    servers.append(("redis", compare.start_redis()))
    results = {name: [] for name, _ in servers}
    try:
        for r in range(args.rounds):
            order = servers[r % len(servers):] + servers[:r % len(servers)]
            for name, (proc, port) in order:
                results[name].append(handshakes(port, proc.pid, args.requests))
    finally:
        for _, (proc, _) in servers:
            proc.kill()
    print("| server | CPU µs per connection | connections/s | rounds (µs) |")
    print("|---|---|---|---|")
    for name, runs in results.items():
        cpu = statistics.median(c for c, _ in runs)
        rate = statistics.median(r for _, r in runs)
        print(f"| {name} | {cpu:.0f} | {rate:.0f} | {', '.join(f'{c:.0f}' for c, _ in runs)} |")


if __name__ == "__main__":
    main()
