"""The five lock-failure stories of docs/testing.md, in Python: redis-py's Lock and pottery's
Redlock against embedis servers whose clocks and faults the test controls. No sleeps: time
passes when the test moves the servers' clocks."""

import threading
import time

import pytest
import redis
from redis.exceptions import LockNotOwnedError

import embedis

pottery = pytest.importorskip("pottery")


def test_1_a_holder_past_its_lease_loses_the_lock_and_its_late_release_spares_the_new_owner():
    with embedis.Server(clock="manual") as server:
        first, second = server.client(), server.client()
        lock1 = first.lock("lock:order", timeout=10)
        assert lock1.acquire(blocking=False)
        server.clock.advance(10_001)
        lock2 = second.lock("lock:order", timeout=10)
        assert lock2.acquire(blocking=False), "the lease ran out"
        with pytest.raises(LockNotOwnedError):
            lock1.release()
        assert lock2.owned(), "the late release left the new owner's lock"


def test_2_a_watchdog_keeps_the_lock_for_many_leases_and_it_ends_one_lease_after_renewals_stop():
    with embedis.Server(clock="manual") as server:
        holder, other = server.client(), server.client()
        lock = holder.lock("lock:job", timeout=9)
        assert lock.acquire(blocking=False)
        for _ in range(30):  # ten leases, renewed every third of one
            server.clock.advance(3_000)
            assert lock.reacquire()
        assert not other.lock("lock:job", timeout=9).acquire(blocking=False)
        server.clock.advance(9_001)
        assert other.lock("lock:job", timeout=9).acquire(blocking=False)


def redlock(nodes, key="resource", seconds=10):
    masters = {node.client() for node in nodes}
    return pottery.Redlock(key=key, masters=masters, auto_release_time=seconds)


def test_3_redlock_needs_a_majority_of_five_nodes():
    with embedis.Nodes(5) as nodes:
        for node in nodes[:2]:
            node.faults.error("set", "redlock:*", "ERR injected", 1)
        lock = redlock(nodes)
        assert lock.acquire(blocking=False), "three of five grant it"
        lock.release()
        for node in nodes[:3]:
            node.faults.error("set", "redlock:*", "ERR injected", 1)
        assert not redlock(nodes).acquire(blocking=False), "two of five are not a majority"
        assert [node.command("EXISTS", "redlock:resource") for node in nodes] == [0] * 5


def wait_until_held(server, command):
    """Waits until a client's `command` is held by the paused server (CLIENT LIST, asked
    in-process: it answers during the pause)."""
    for _ in range(10_000):
        listing = server.command("CLIENT", "LIST").decode()
        if any(" flags=b " in line and f" cmd={command} " in line for line in listing.splitlines()):
            return
        time.sleep(0.001)
    raise AssertionError(f"no {command} held: {listing}")


def test_4_after_a_pause_past_the_lease_the_late_release_spares_the_new_owner():
    with embedis.Server(clock="manual") as server:
        first, second = server.client(), server.client()
        lock1 = first.lock("lock:pay", timeout=10, thread_local=False)
        assert lock1.acquire(blocking=False)
        assert second.ping()  # connected (and introduced) before the pause
        server.faults.pause(12_000)  # a 12 s stop-the-world, on the server's clock
        results = {}
        lock2 = second.lock("lock:pay", timeout=10, thread_local=False)
        t2 = threading.Thread(target=lambda: results.update(second=lock2.acquire(blocking=False)))
        t2.start()
        wait_until_held(server, "set")

        def release():
            try:
                lock1.release()
                results["first"] = "released"
            except LockNotOwnedError:
                results["first"] = "not owned"

        t1 = threading.Thread(target=release)
        t1.start()
        wait_until_held(server, "evalsha")
        server.clock.advance(12_000)  # the pause ends; the queued requests run in order
        t2.join()
        t1.join()
        assert results == {"second": True, "first": "not owned"}
        assert lock2.owned()


def test_5_a_node_clock_running_fast_lets_two_clients_hold_a_redlock_majority():
    with embedis.Nodes(5, clock="manual") as nodes:
        a, b, c, d, e = nodes
        c.clock.rate = 1.05  # C's clock runs 5% fast
        for node in (d, e):
            node.faults.error("set", "redlock:*", "ERR injected", 1)
        client1 = redlock(nodes)
        assert client1.acquire(blocking=False)  # on A, B and C
        nodes.advance(9_600)  # 9.6 s for A, B, D, E; 10.08 s for C: its copy is gone
        assert c.command("EXISTS", "redlock:resource") == 0
        client2 = redlock(nodes)
        assert client2.acquire(blocking=False), "C, D and E: a second majority"
        assert a.command("EXISTS", "redlock:resource") == 1, "client 1 still holds A and B"


def test_1b_python_redis_lock_loses_an_expired_lease_and_refuses_the_late_release():
    redis_lock = pytest.importorskip("redis_lock")
    with embedis.Server(clock="manual") as server:
        first, second = server.client(), server.client()
        lock1 = redis_lock.Lock(first, "order", expire=10)
        assert lock1.acquire(blocking=False)
        server.clock.advance(10_001)
        lock2 = redis_lock.Lock(second, "order", expire=10)
        assert lock2.acquire(blocking=False), "the lease ran out"
        with pytest.raises(redis_lock.NotAcquired):
            lock1.release()
        assert lock2.locked(), "the late release left the new owner's lock"
        lock2.release()
