#!/usr/bin/env python3
"""Compares CONFIG SET's answers between two Redis servers (Redis 7.0 and 8.2 here) for every
parameter a third server (embedis) lists in CONFIG GET *, with a few probe values per
parameter: out-of-range numbers, negatives, junk, the empty string. Prints each (parameter,
value) whose answers differ, with both answers; the current value is restored after each probe.

    python3 tests/python/config_bounds.py OLD_PORT NEW_PORT EMBEDIS_PORT

Reads nothing but replies; every server must be one the caller started (with --save '').
"""
import subprocess
import sys

PROBES = ["-1", "0", "-2", "1", "abc", "", "2147483648", "9223372036854775808", "100000000000",
          "-100000000000", "yes", "1k", "-1k"]
SKIP = {"dir", "port", "bind", "save", "logfile", "unixsocket", "pidfile", "dbfilename",
        "appendfilename", "appenddirname", "requirepass", "masterauth", "masteruser",
        "replicaof", "slaveof", "daemonize", "cluster-config-file", "aclfile", "tls-port"}
# Values that would lock the script out of a server (a client limit of one).
UNSAFE = {"maxclients": {"0", "1", "yes", "1k"}}


def cli(port, *args):
    out = subprocess.run(["redis-cli", "-p", str(port), *args], capture_output=True, text=True)
    return out.stdout.strip()


def params(port):
    lines = cli(port, "CONFIG", "GET", "*").splitlines()
    return sorted(set(lines[0::2]))


def main():
    old, new, ours = sys.argv[1:4]
    for name in params(ours):
        # tls-*: the falkordb build of Redis 8.2.3 has no TLS and crashes on CONFIG SET
        # tls-cluster yes (signal 11), so TLS parameters are left out.
        if name in SKIP or name.startswith("tls-"):
            continue
        saved = {port: cli(port, "CONFIG", "GET", name).splitlines() for port in (old, new)}
        for value in PROBES:
            if value in UNSAFE.get(name, ()):
                continue
            answers = [cli(port, "CONFIG", "SET", name, value) for port in (old, new)]
            for port in (old, new):
                got = saved[port]
                if len(got) >= 2:
                    cli(port, "CONFIG", "SET", name, got[1])
            if not all(cli(port, "PING") == "PONG" for port in (old, new)):
                sys.exit(f"a server stopped answering after CONFIG SET {name} {value!r}")
            if answers[0] != answers[1]:
                print(f"{name} {value!r}\n  old: {answers[0]}\n  new: {answers[1]}")


if __name__ == "__main__":
    main()
