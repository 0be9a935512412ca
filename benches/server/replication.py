#!/usr/bin/env python3
"""Replication side by side: an embedis primary with an embedis replica against a redis-server
primary with a redis-server replica, on this machine, in alternating rounds (A B, B A, ...).

  full sync    1,000,000 keys (DEBUG POPULATE) on the primary; the time from REPLICAOF on the
               empty replica until its link is up with every key (both diskless: Redis with
               repl-diskless-sync-delay 0, embedis always builds the image at once)
  under load   redis-benchmark SET -P 16 -c 50 on the primary (1,000,000 random keys); the
               primary's ops/s with its replica attached, the replica's lag in bytes of stream
               (the primary's master_repl_offset read just after the replica's
               slave_repl_offset, every 50 ms: an upper bound; median and maximum), and how long after the load the replica has
               caught up; CPU seconds each process spent per million SETs (from /proc, so
               less sensitive to other load on the machine than the times)

The primaries run on core 0 (as compare.py pins servers), replicas and the benchmark client on
core 1: the same placement for both.

Usage: benches/server/replication.py [--rounds 3] [--embedis target/release/embedis-server]
                                     [--requests 2000000]
"""

import argparse
import os
import statistics
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(__file__))
from compare import free_port, wait_ready, redis_cli, cpu_seconds, server_dir, CLIENT_CORE, SERVER_CORE  # noqa: E402


def start(kind, binary, core):
    port = free_port()
    # A directory of its own: a replica saves its full sync's image there.
    common = ["--port", str(port), "--save", "", "--appendonly", "no", "--logfile", "/dev/null",
              "--enable-debug-command", "yes", "--repl-diskless-sync-delay", "0",
              "--dir", server_dir()]
    if kind == "redis":
        cmd = ["taskset", "-c", core, "redis-server", *common, "--daemonize", "no"]
    else:
        cmd = ["taskset", "-c", core, binary, *common]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_ready(port, proc)
    return proc, port


def info(port, section="replication"):
    out = {}
    for line in redis_cli(port, "INFO", section).splitlines():
        if ":" in line:
            k, v = line.split(":", 1)
            out[k] = v.strip()
    return out


def full_sync(primary, replica):
    """Seconds from REPLICAOF until the replica's link is up with every key."""
    redis_cli(replica, "REPLICAOF", "NO", "ONE")
    redis_cli(replica, "FLUSHALL")
    before = int(info(primary, "stats")["sync_full"])
    want = redis_cli(primary, "DBSIZE").strip()
    start = time.perf_counter()
    redis_cli(replica, "REPLICAOF", "127.0.0.1", str(primary))
    while True:
        i = info(replica)
        if i.get("master_link_status") == "up" and redis_cli(replica, "DBSIZE").strip() == want:
            break
        time.sleep(0.005)
    elapsed = time.perf_counter() - start
    if int(info(primary, "stats")["sync_full"]) != before + 1:
        raise RuntimeError("the replica did not do a full sync")
    return elapsed


def under_load(primary, replica, requests, pids):
    lags = []
    cpu_before = [cpu_seconds(pid) for pid in pids]
    stop = threading.Event()

    def sample():
        while not stop.is_set():
            # The replica first, then the primary: the difference is an upper bound of the lag
            # (the primary moves on while we ask), never an underestimate.
            r = int(info(replica).get("slave_repl_offset", "0"))
            p = int(info(primary)["master_repl_offset"])
            lags.append(max(0, p - r))
            time.sleep(0.05)

    t = threading.Thread(target=sample)
    t.start()
    cmd = ["taskset", "-c", CLIENT_CORE, "redis-benchmark", "-p", str(primary), "-c", "50", "-r", "1000000",
           "-n", str(requests), "-P", "16", "--csv", "-t", "set"]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    ended = time.perf_counter()
    stop.set()
    t.join()
    target = int(info(primary)["master_repl_offset"])
    while int(info(replica).get("slave_repl_offset", "0")) < target:
        time.sleep(0.001)
    catch_up = time.perf_counter() - ended
    cpu = [(cpu_seconds(pid) - b) * 1e6 / requests for pid, b in zip(pids, cpu_before)]
    lines = [l.split('","') for l in out.strip().splitlines()]
    row = dict(zip([h.strip('"') for h in lines[0]], [v.strip('"') for v in lines[1]]))
    if redis_cli(primary, "DEBUG", "DIGEST") != redis_cli(replica, "DEBUG", "DIGEST"):
        raise RuntimeError("the replica's dataset differs from the primary's")
    return float(row["rps"]), statistics.median(lags), max(lags), catch_up, cpu


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--embedis", default="target/release/embedis-server")
    ap.add_argument("--requests", type=int, default=2000000)
    args = ap.parse_args()
    pairs = {}
    try:
        for kind in ("embedis", "redis"):
            primary = start(kind, args.embedis, SERVER_CORE)
            replica = start(kind, args.embedis, CLIENT_CORE)
            pairs[kind] = (primary, replica)
            redis_cli(primary[1], "DEBUG", "POPULATE", "1000000")
        figures = {k: {"sync": [], "rps": [], "lag50": [], "lagmax": [], "catchup": [], "pcpu": [], "rcpu": []}
                   for k in pairs}
        for r in range(args.rounds):
            order = ["embedis", "redis"] if r % 2 == 0 else ["redis", "embedis"]
            for kind in order:
                (pproc, p), (rproc, rep) = pairs[kind]
                figures[kind]["sync"].append(full_sync(p, rep))
                rps, lag50, lagmax, catchup, cpu = under_load(p, rep, args.requests, [pproc.pid, rproc.pid])
                figures[kind]["pcpu"].append(cpu[0])
                figures[kind]["rcpu"].append(cpu[1])
                figures[kind]["rps"].append(rps)
                figures[kind]["lag50"].append(lag50)
                figures[kind]["lagmax"].append(lagmax)
                figures[kind]["catchup"].append(catchup)
                # Back to 1,000,000 keys for the next full sync.
                redis_cli(p, "FLUSHALL")
                redis_cli(p, "DEBUG", "POPULATE", "1000000")
        med = {k: {m: statistics.median(v) for m, v in f.items()} for k, f in figures.items()}
        e, rd = med["embedis"], med["redis"]
        print("| figure | embedis | Redis 7.0.15 | ratio |")
        print("| --- | ---: | ---: | ---: |")
        print(f"| full sync of 1,000,000 keys | {e['sync'] * 1000:.0f} ms | {rd['sync'] * 1000:.0f} ms | "
              f"{e['sync'] / rd['sync']:.2f} |")
        print(f"| SET -P 16 ops/s on the primary, replica attached | {e['rps']:.0f} | {rd['rps']:.0f} | "
              f"{e['rps'] / rd['rps']:.2f} |")
        print(f"| replica lag during the load, median | {e['lag50']:.0f} B | {rd['lag50']:.0f} B | |")
        print(f"| replica lag during the load, max | {e['lagmax']:.0f} B | {rd['lagmax']:.0f} B | |")
        print(f"| primary CPU s per 1M SETs | {e['pcpu']:.2f} | {rd['pcpu']:.2f} | {e['pcpu'] / rd['pcpu']:.2f} |")
        print(f"| replica CPU s per 1M SETs applied | {e['rcpu']:.2f} | {rd['rcpu']:.2f} | "
              f"{e['rcpu'] / rd['rcpu']:.2f} |")
        print(f"| caught up after the load | {e['catchup'] * 1000:.1f} ms | {rd['catchup'] * 1000:.1f} ms | |")
    finally:
        for (pp, _), (rp, _) in pairs.values():
            for proc in (pp, rp):
                proc.kill()
                proc.wait()


if __name__ == "__main__":
    main()
