#!/usr/bin/env python3
"""Side-by-side server benchmark: embedis against redis-server on this machine.

Starts both servers pinned to one core (taskset), runs redis-benchmark pinned to the other core
against each in turn -- alternating A B A B so that machine noise hits both -- and prints the
medians as a Markdown table: ops/s, p50/p99 latency, and the server's CPU time per request
(utime+stime from /proc/PID/stat before and after each run, divided by the requests). On 2 cores
redis-benchmark saturates its own core before either server does at -P 1, so ops/s there hides
differences and CPU per request is the figure that tells the servers apart.

Also measures memory for 1,000,000 small string keys (`SET key:%012d xxx`): RSS growth per key
for both servers, and Redis's own used_memory growth per key.

Usage: benches/server/compare.py [--rounds 3] [--seconds 2.5] [--embedis target/release/embedis-server]
                                 [--io-threads 1] [--only SET,GET] [--no-memory] [--no-pipeline]
"""

import argparse
import csv
import io
import os
import socket
import statistics
import subprocess
import sys
import time

CLK_TCK = os.sysconf("SC_CLK_TCK")
SERVER_CORE = "0"
CLIENT_CORE = "1"

TESTS = [
    # (label, redis-benchmark arguments selecting the test)
    ("PING_MBULK", ["-t", "ping_mbulk"]),
    ("SET", ["-t", "set"]),
    ("GET", ["-t", "get"]),
    ("INCR", ["-t", "incr"]),
    ("MSET (10 keys)", ["-t", "mset"]),
    ("SET NX PX 30000", ["SET", "lock:__rand_int__", "token", "NX", "PX", "30000"]),
]


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def wait_ready(port, proc, timeout=10):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server on port {port} exited early")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5) as s:
                s.sendall(b"PING\r\n")
                if s.recv(64).startswith(b"+PONG"):
                    return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"server on port {port} did not start")


def start_embedis(binary, io_threads):
    port = free_port()
    cmd = ["taskset", "-c", SERVER_CORE, binary, "--port", str(port), "--save", "", "--appendonly", "no",
           "--logfile", "/dev/null", "--io-threads", str(io_threads)]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_ready(port, proc)
    return proc, port


def start_redis():
    port = free_port()
    cmd = ["taskset", "-c", SERVER_CORE, "redis-server", "--port", str(port), "--save", "", "--appendonly", "no",
           "--logfile", "/dev/null", "--daemonize", "no", "--dir", "/tmp",
           "--dbfilename", "embedis-bench-never-written.rdb"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_ready(port, proc)
    return proc, port


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    # fields[11], fields[12] are utime and stime (14th and 15th of the full line)
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def rss_bytes(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


def redis_cli(port, *args):
    return subprocess.run(["redis-cli", "-p", str(port), *args], capture_output=True, text=True).stdout


def bench(port, pid, test_args, pipeline, requests):
    before = cpu_seconds(pid)
    cmd = ["taskset", "-c", CLIENT_CORE, "redis-benchmark", "-p", str(port), "-c", "50", "-r", "100000",
           "-n", str(requests), "-P", str(pipeline), "--csv", *test_args]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    after = cpu_seconds(pid)
    rows = list(csv.reader(io.StringIO(out)))
    header, data = rows[0], rows[1]
    row = dict(zip(header, data))
    return {
        "rps": float(row["rps"]),
        "p50": float(row["p50_latency_ms"]),
        "p99": float(row["p99_latency_ms"]),
        "cpu_us": (after - before) * 1e6 / requests,
    }


def calibrate(port, test_args, pipeline, seconds):
    """Picks a request count that runs for about `seconds`."""
    probe = 20000 if pipeline == 1 else 100000
    start = time.time()
    subprocess.run(["taskset", "-c", CLIENT_CORE, "redis-benchmark", "-p", str(port), "-c", "50", "-r", "100000",
                    "-n", str(probe), "-P", str(pipeline), "-q", *test_args], capture_output=True, check=True)
    elapsed = max(time.time() - start, 0.01)
    return max(int(probe * seconds / elapsed), 10000)


def memory(start, label):
    proc, port = start()
    try:
        time.sleep(0.3)
        base_rss = rss_bytes(proc.pid)
        base_used = parse_info(redis_cli(port, "info", "memory")).get("used_memory")
        n = 1_000_000
        payload = "".join(f"SET key:{i:012d} xxx\r\n" for i in range(n)).encode()
        subprocess.run(["redis-cli", "-p", str(port), "--pipe"], input=payload, capture_output=True, check=True)
        time.sleep(0.5)
        dbsize = int(redis_cli(port, "dbsize").strip() or 0)
        rss = rss_bytes(proc.pid)
        used = parse_info(redis_cli(port, "info", "memory")).get("used_memory")
        result = {"label": label, "keys": dbsize, "rss_per_key": (rss - base_rss) / n, "rss_total": rss}
        if used and base_used:
            result["used_per_key"] = (int(used) - int(base_used)) / n
        return result
    finally:
        proc.kill()
        proc.wait()


def parse_info(text):
    out = {}
    for line in text.splitlines():
        if ":" in line and not line.startswith("#"):
            k, v = line.split(":", 1)
            out[k] = v.strip()
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=2.5)
    ap.add_argument("--embedis", default="target/release/embedis-server")
    ap.add_argument("--io-threads", type=int, default=1)
    ap.add_argument("--only", default="")
    ap.add_argument("--pipelines", default="1,16")
    ap.add_argument("--no-memory", action="store_true")
    args = ap.parse_args()

    tests = [t for t in TESTS if not args.only or t[0].split()[0] in args.only.split(",")]
    pipelines = [int(p) for p in args.pipelines.split(",")]
    servers = {
        "embedis": lambda: start_embedis(args.embedis, args.io_threads),
        "redis": start_redis,
    }
    running = {name: start() for name, start in servers.items()}
    results = {}
    try:
        for pipeline in pipelines:
            for label, test_args in tests:
                n = calibrate(running["redis"][1], test_args, pipeline, args.seconds)
                for r in range(args.rounds):
                    order = ["embedis", "redis"] if r % 2 == 0 else ["redis", "embedis"]
                    for name in order:
                        proc, port = running[name]
                        res = bench(port, proc.pid, test_args, pipeline, n)
                        results.setdefault((label, pipeline, name), []).append(res)
                        print(f"  P{pipeline:<2} {label:<16} {name:<8} round {r + 1}: {res['rps']:>10.0f} ops/s "
                              f"p50 {res['p50']:.3f} ms  p99 {res['p99']:.3f} ms  cpu {res['cpu_us']:.2f} us/req",
                              file=sys.stderr, flush=True)
    finally:
        for proc, _ in running.values():
            proc.kill()
            proc.wait()

    def med(label, pipeline, name, key):
        return statistics.median(r[key] for r in results[(label, pipeline, name)])

    print(f"Medians of {args.rounds} alternating rounds; -c 50 -r 100000; servers on core {SERVER_CORE}, "
          f"redis-benchmark on core {CLIENT_CORE}; embedis io-threads {args.io_threads}.\n")
    print("| test | -P | embedis ops/s | redis ops/s | ratio | embedis p50/p99 ms | redis p50/p99 ms "
          "| embedis CPU µs/req | redis CPU µs/req | CPU ratio |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for pipeline in pipelines:
        for label, _ in tests:
            e_rps, r_rps = med(label, pipeline, "embedis", "rps"), med(label, pipeline, "redis", "rps")
            e_cpu, r_cpu = med(label, pipeline, "embedis", "cpu_us"), med(label, pipeline, "redis", "cpu_us")
            print(f"| {label} | {pipeline} | {e_rps:,.0f} | {r_rps:,.0f} | {e_rps / r_rps:.2f} "
                  f"| {med(label, pipeline, 'embedis', 'p50'):.3f} / {med(label, pipeline, 'embedis', 'p99'):.3f} "
                  f"| {med(label, pipeline, 'redis', 'p50'):.3f} / {med(label, pipeline, 'redis', 'p99'):.3f} "
                  f"| {e_cpu:.2f} | {r_cpu:.2f} | {e_cpu / r_cpu:.2f} |")

    if not args.no_memory:
        print("\nMemory after 1,000,000 `SET key:%012d xxx`:\n")
        print("| server | keys | RSS growth per key | used_memory growth per key | RSS total |")
        print("|---|---|---|---|---|")
        for name, start in servers.items():
            m = memory(start, name)
            used = f"{m['used_per_key']:.1f} B" if "used_per_key" in m else "n/a"
            print(f"| {name} | {m['keys']:,} | {m['rss_per_key']:.1f} B | {used} | {m['rss_total'] / 1e6:.1f} MB |")


if __name__ == "__main__":
    main()
