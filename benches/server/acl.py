#!/usr/bin/env python3
"""The cost of ACL checks per request: GET, SET and EVALSHA run as the default user (who may do
everything: the check is one branch) and as a restricted user (key patterns, read/write key
permissions, categories and single commands), on embedis and on redis-server, side by side.

Counted in instructions under valgrind as instructions.py does (the difference of a short and a
long run, divided by the difference in requests): the count does not swing with whatever else
shares the machine, and the restricted user's extra cost is a few hundred instructions, well
below CPU-time noise. Each server starts with the same `user` line; redis-benchmark logs in with
--user/-a for the restricted runs.

Usage: benches/server/acl.py [--requests 20000] [--pipeline 1 --pipeline 16]
                             [--binary target/release/embedis-server]
       benches/server/acl.py --cpu [--rounds 5] [--cpu-requests 1000000] [--pipeline 16]
--cpu measures the servers' CPU time per request instead (user + system from /proc, the runs of
the default and the restricted user alternating), which counts the system calls the
instruction count leaves out.
"""
import argparse
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compare  # noqa: E402
import instructions  # noqa: E402

# A user as a service would have: its own key prefixes (the benchmark's keys match the last of
# three patterns, so the check walks the list), a read-only prefix, categories with one command
# taken away and one added.
USER_RULES = ["on", ">benchpw", "~session:*", "%R~config:*", "~key:*", "&events", "-@all", "+@read",
              "+@write", "+@scripting", "-flushall", "+ping"]
SCRIPT = "return redis.call('get', KEYS[1])"

TESTS = [
    ("GET", ["GET", "key:__rand_int__"]),
    ("SET", ["SET", "key:__rand_int__", "value"]),
    ("EVALSHA (one GET)", ["EVALSHA", None, "1", "key:__rand_int__"]),
]


def server_cmd(server, binary, port):
    """The command line of `server` ("embedis" or "redis") on `port`, with the bench user."""
    common = ["--port", str(port), "--save", "", "--appendonly", "no", "--logfile", "/dev/null",
              "--user", "bench", *USER_RULES]
    if server == "embedis":
        return [binary, *common, "--dir", compare.server_dir()]
    return ["redis-server", *common, "--daemonize", "no", "--dir", "/tmp",
            "--dbfilename", "embedis-bench-never-written.rdb"]


def start(server, binary, out_file):
    port = compare.free_port()
    valgrind = ["valgrind", "--tool=cachegrind", "--cache-sim=no", f"--cachegrind-out-file={out_file}"]
    proc = subprocess.Popen(valgrind + server_cmd(server, binary, port), stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    compare.wait_ready(port, proc, timeout=60)
    return proc, port


def run_once(server, binary, test_args, user, pipeline, requests):
    with tempfile.TemporaryDirectory() as tmp:
        out_file = os.path.join(tmp, "cachegrind.out")
        proc, port = start(server, binary, out_file)
        try:
            sha = compare.redis_cli(port, "SCRIPT", "LOAD", SCRIPT).strip()
            args = [sha if a is None else a for a in test_args]
            login = ["--user", "bench", "-a", "benchpw"] if user == "restricted" else []
            cmd = ["redis-benchmark", "-p", str(port), *login, "-c", "50", "-r", "100000", "-n", str(requests),
                   "-P", str(pipeline), "-q", *args]
            done = subprocess.run(cmd, capture_output=True, text=True, check=True)
            if "NOPERM" in done.stdout + done.stderr or "ERR" in done.stdout:
                raise RuntimeError(f"refused: {done.stdout} {done.stderr}")
            compare.redis_cli(port, "SHUTDOWN", "NOSAVE")
            proc.wait(timeout=120)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        return instructions.total_instructions(out_file)


def cpu_per_request(server, binary, test_args, user, pipeline, requests):
    """Server CPU time (user + system, from /proc) per request, without valgrind."""
    port = compare.free_port()
    cmd = server_cmd(server, binary, port)
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        compare.wait_ready(port, proc)
        sha = compare.redis_cli(port, "SCRIPT", "LOAD", SCRIPT).strip()
        args = [sha if a is None else a for a in test_args]
        login = ["--user", "bench", "-a", "benchpw"] if user == "restricted" else []
        before = compare.cpu_seconds(proc.pid)
        subprocess.run(["redis-benchmark", "-p", str(port), *login, "-c", "50", "-r", "100000", "-n", str(requests),
                        "-P", str(pipeline), "-q", *args], capture_output=True, check=True)
        return (compare.cpu_seconds(proc.pid) - before) / requests * 1e6
    finally:
        proc.kill()
        proc.wait()


def cpu_main(args):
    """--cpu: CPU microseconds per request, default and restricted user alternating A B A B."""
    import statistics
    print("| test | -P | server | default µs/req | restricted µs/req | ACL cost |")
    print("|---|---|---|---|---|---|")
    for pipeline in args.pipeline or [16]:
        for name, test_args in TESTS:
            for server in ("embedis", "redis"):
                runs = {"default": [], "restricted": []}
                for _ in range(args.rounds):
                    for user in ("default", "restricted"):
                        runs[user].append(cpu_per_request(server, args.binary, test_args, user, pipeline,
                                                          args.cpu_requests))
                d, r = statistics.median(runs["default"]), statistics.median(runs["restricted"])
                print(f"| {name} | {pipeline} | {server} | {d:.3f} | {r:.3f} | {(r - d) / d * 100:+.1f}% |",
                      flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--requests", type=int, default=20000)
    ap.add_argument("--pipeline", type=int, action="append")
    ap.add_argument("--binary", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                                     "target", "release", "embedis-server"))
    ap.add_argument("--cpu", action="store_true", help="measure CPU time per request instead of instructions")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--cpu-requests", type=int, default=1000000)
    args = ap.parse_args()
    if args.cpu:
        cpu_main(args)
        return
    base = instructions.BASE_REQUESTS
    print("| test | -P | embedis default | embedis restricted | ACL cost | redis default | redis restricted | ACL cost |")
    print("|---|---|---|---|---|---|---|---|")
    for pipeline in args.pipeline or [1, 16]:
        for name, test_args in TESTS:
            row = f"| {name} | {pipeline} |"
            for server in ("embedis", "redis"):
                per = {}
                for user in ("default", "restricted"):
                    short = run_once(server, args.binary, test_args, user, pipeline, base)
                    long = run_once(server, args.binary, test_args, user, pipeline, base + args.requests)
                    per[user] = (long - short) / args.requests
                d, r = per["default"], per["restricted"]
                row += f" {d:,.0f} | {r:,.0f} | {(r - d) / d * 100:+.1f}% |"
            print(row, flush=True)


if __name__ == "__main__":
    main()
