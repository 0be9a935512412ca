#!/usr/bin/env python3
"""RDB persistence side by side: embedis against redis-server on this machine.

For each dataset (1,000,000 small string keys from DEBUG POPULATE; one sorted set of 1,000,000
members; 1,000 dense HyperLogLogs) both servers are started in their own temporary directory
(pinned to core 0, as compare.py does; Redis's fork child and embedis's writer thread inherit that
core), filled alike, and measured in alternating rounds (A B, B A, ...):

  SAVE         wall time of SAVE, and the file's size
  load         wall time of DEBUG RELOAD NOSAVE (empties the dataset, loads the file)
  BGSAVE       time from BGSAVE's reply until INFO shows it finished

With --latency, GET and SET p99 (redis-benchmark -P 1 -c 50, on core 1) are measured with no save
running and while BGSAVE runs back to back, and the memory a save adds at its peak: for embedis the
highest RSS sampled during BGSAVE minus the RSS before; for Redis the child's copy-on-write size
INFO reports (rdb_last_cow_size), plus nothing for the pages the child shares.

Usage: benches/server/persistence.py [--rounds 3] [--embedis target/release/embedis-server]
                                     [--datasets keys,zset,hll] [--latency]
"""

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(__file__))
from compare import free_port, wait_ready, redis_cli, pipe, rss_bytes, CLIENT_CORE, SERVER_CORE  # noqa: E402


def start(kind, binary, directory):
    port = free_port()
    common = ["--port", str(port), "--save", "", "--appendonly", "no", "--logfile", "/dev/null",
              "--dir", directory, "--dbfilename", "bench.rdb", "--enable-debug-command", "yes"]
    if kind == "redis":
        cmd = ["taskset", "-c", SERVER_CORE, "redis-server", *common, "--daemonize", "no"]
    else:
        cmd = ["taskset", "-c", SERVER_CORE, binary, *common]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_ready(port, proc)
    return proc, port


def fill(port, dataset):
    if dataset == "keys":
        redis_cli(port, "DEBUG", "POPULATE", "1000000")
    elif dataset == "zset":
        pipe(port, ["ZADD bigzset " + " ".join(f"{i * 1.5} member:{i:010d}" for i in range(j, j + 500))
                    for j in range(0, 1000000, 500)])
    elif dataset == "hll":
        pipe(port, ["PFADD hll:0 " + " ".join(f"e:{i}" for i in range(j, j + 500)) for j in range(0, 20000, 500)])
        pipe(port, [f"COPY hll:0 hll:{i}" for i in range(1, 1000)])
    else:
        raise ValueError(dataset)


def timed(port, *args):
    start = time.perf_counter()
    out = redis_cli(port, *args)
    elapsed = time.perf_counter() - start
    if out.startswith("ERR") or "ERR" in out.split("\n")[0]:
        raise RuntimeError(f"{args}: {out}")
    return elapsed


def info_field(port, field):
    for line in redis_cli(port, "INFO", "persistence").splitlines():
        if line.startswith(field + ":"):
            return line.split(":", 1)[1].strip()
    return None


def bgsave(port, pid=None):
    """Runs one BGSAVE; returns (seconds until finished, peak RSS sampled during it)."""
    start = time.perf_counter()
    out = redis_cli(port, "BGSAVE")
    if "started" not in out:
        raise RuntimeError(out)
    peak = 0
    while info_field(port, "rdb_bgsave_in_progress") != "0":
        if pid:
            peak = max(peak, rss_bytes(pid))
        time.sleep(0.002)
    return time.perf_counter() - start, peak


def latency_run(port, test, requests):
    cmd = ["taskset", "-c", CLIENT_CORE, "redis-benchmark", "-p", str(port), "-c", "50", "-r", "1000000",
           "-n", str(requests), "-P", "1", "--csv", "-t", test]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    lines = [l.split('","') for l in out.strip().splitlines()]
    row = dict(zip([h.strip('"') for h in lines[0]], [v.strip('"') for v in lines[1]]))
    return float(row["rps"]), float(row["p99_latency_ms"]), float(row["max_latency_ms"])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--embedis", default="target/release/embedis-server")
    ap.add_argument("--datasets", default="keys,zset,hll")
    ap.add_argument("--latency", action="store_true")
    args = ap.parse_args()
    rows = []
    for dataset in args.datasets.split(","):
        dirs = {k: tempfile.mkdtemp(prefix=f"persist-{k}-") for k in ("embedis", "redis")}
        servers = {k: start(k, args.embedis, dirs[k]) for k in ("embedis", "redis")}
        try:
            for kind, (_, port) in servers.items():
                fill(port, dataset)
            figures = {k: {"save": [], "load": [], "bgsave": [], "size": 0} for k in servers}
            for r in range(args.rounds):
                order = ["embedis", "redis"] if r % 2 == 0 else ["redis", "embedis"]
                for kind in order:
                    proc, port = servers[kind]
                    figures[kind]["save"].append(timed(port, "SAVE"))
                    figures[kind]["size"] = os.path.getsize(os.path.join(dirs[kind], "bench.rdb"))
                    figures[kind]["load"].append(timed(port, "DEBUG", "RELOAD", "NOSAVE"))
                    figures[kind]["bgsave"].append(bgsave(port)[0])
            for metric in ("save", "load", "bgsave"):
                e = statistics.median(figures["embedis"][metric])
                rd = statistics.median(figures["redis"][metric])
                rows.append((dataset, metric, f"{e * 1000:.0f} ms", f"{rd * 1000:.0f} ms", f"{e / rd:.2f}"))
            rows.append((dataset, "file size", str(figures["embedis"]["size"]), str(figures["redis"]["size"]),
                         f"{figures['embedis']['size'] / figures['redis']['size']:.3f}"))
            if args.latency and dataset == "keys":
                for kind in ["embedis", "redis"]:
                    proc, port = servers[kind]
                    for test in ("get", "set"):
                        quiet = [latency_run(port, test, 300000) for _ in range(args.rounds)]
                        stop = threading.Event()
                        peaks = []

                        def saver():
                            while not stop.is_set():
                                peaks.append(bgsave(port, proc.pid if kind == "embedis" else None)[1])

                        before_rss = rss_bytes(proc.pid)
                        t = threading.Thread(target=saver)
                        t.start()
                        busy = [latency_run(port, test, 300000) for _ in range(args.rounds)]
                        stop.set()
                        t.join()
                        q99 = statistics.median(x[1] for x in quiet)
                        b99 = statistics.median(x[1] for x in busy)
                        bmax = max(x[2] for x in busy)
                        extra = (max(peaks) - before_rss) if kind == "embedis" and peaks else int(
                            info_field(port, "rdb_last_cow_size") or 0)
                        rows.append((dataset, f"{test.upper()} p99 quiet / during BGSAVE ({kind})",
                                     f"{q99:.3f} ms", f"{b99:.3f} ms (max {bmax:.1f})", f"{len(peaks)} saves"))
                        rows.append((dataset, f"extra memory at peak ({kind})", f"{extra / 1e6:.1f} MB", "", ""))
        finally:
            for proc, _ in servers.values():
                proc.kill()
                proc.wait()
            for d in dirs.values():
                shutil.rmtree(d, ignore_errors=True)
    print("| dataset | figure | embedis | Redis 7.0.15 | ratio |")
    print("| --- | --- | ---: | ---: | ---: |")
    for row in rows:
        print("| " + " | ".join(row) + " |")


if __name__ == "__main__":
    main()
