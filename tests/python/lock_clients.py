"""Real lock clients against a server: redis-py's Lock on one server, pottery's Redlock over five.

Usage: python3 tests/python/lock_clients.py <port> <port1> <port2> <port3> <port4> <port5>

Run by tests/it/lock_clients.rs against embedis (and, to check this script itself, against real
redis-server). Prints one line per check and exits non-zero on the first failure. Time is real
here (the clients sleep and poll), so leases are short and every wait is bounded.
"""

import sys
import threading
import time

import redis
from pottery import ReleaseUnlockedLock, Redlock
from redis.exceptions import LockError, LockNotOwnedError


def check(what, condition):
    if not condition:
        print(f"FAIL {what}", flush=True)
        sys.exit(1)
    print(f"ok   {what}", flush=True)


def redis_py_lock(port):
    r = redis.Redis(port=port)
    r.delete("resource", "lost", "blocking")

    lock = r.lock("resource", timeout=5)
    check("Lock.acquire (SET NX PX)", lock.acquire(blocking=False))
    check("the lock key holds the token", r.get("resource") == lock.local.token)
    check("a second Lock cannot acquire", not r.lock("resource", timeout=5).acquire(blocking=False))
    check("owned()", lock.owned())
    check("locked()", lock.locked())
    before = r.pttl("resource")
    check("extend(10) adds to the TTL (Lua)", lock.extend(10) and r.pttl("resource") > before)
    check("reacquire() resets the TTL (Lua)", lock.reacquire() and 0 < r.pttl("resource") <= 5000)
    check("extend(10, replace_ttl=True)", lock.extend(10, replace_ttl=True) and r.pttl("resource") > 5000)
    lock.release()
    check("release() deletes the key (Lua)", r.exists("resource") == 0)
    try:
        lock.release()
        check("release of an unlocked Lock raises", False)
    except LockError:
        check("release of an unlocked Lock raises LockError", True)

    # A lease that ran out: another owner took the key; the old owner's release must not delete it.
    lost = r.lock("lost", timeout=5)
    check("acquire the soon-lost lock", lost.acquire(blocking=False))
    r.delete("lost")
    r.set("lost", "someone-else", px=5000)
    try:
        lost.extend(5)
        check("extend of a lost lock raises LockNotOwnedError", False)
    except LockNotOwnedError:
        check("extend of a lost lock raises LockNotOwnedError", True)

    try:
        lost.release()
        check("release of a lost lock raises LockNotOwnedError", False)
    except LockNotOwnedError:
        check("release of a lost lock raises LockNotOwnedError", True)
    check("the new owner's key survives", r.get("lost") == b"someone-else")
    # Blocking acquire: waits while another holder has it, succeeds once it is released.
    holder = r.lock("blocking", timeout=5, thread_local=False)
    check("holder acquires", holder.acquire(blocking=False))
    threading.Timer(0.3, holder.release).start()
    waiter = r.lock("blocking", timeout=5, sleep=0.02)
    started = time.monotonic()
    got = waiter.acquire(blocking=True, blocking_timeout=3)
    check("blocking acquire succeeds after the release", got and time.monotonic() - started >= 0.2)
    check("blocking acquire with a timeout gives up", not r.lock("blocking", timeout=5, sleep=0.02).acquire(blocking_timeout=0.2))
    waiter.release()
    r.close()


def eventually_free(masters, key, seconds=2.0):
    """pottery releases on the masters concurrently and returns once a quorum has answered, so
    the last masters may still hold the key for a moment: poll, bounded."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not any(m.exists(key) for m in masters):
            return True
        time.sleep(0.01)
    return False


def pottery_redlock(ports):
    masters = {redis.Redis(port=p) for p in ports}
    for m in masters:
        m.delete("redlock:shared")
    lock = Redlock(key="shared", masters=masters, auto_release_time=5)
    check("Redlock.acquire over five masters", lock.acquire(blocking=False))
    holders = sum(1 for m in masters if m.exists("redlock:shared"))
    check(f"the key is on a majority of masters ({holders}/5)", holders >= 3)
    check("locked() gives the remaining validity", lock.locked() > 0)
    other = Redlock(key="shared", masters=masters, auto_release_time=5)
    check("a second Redlock cannot acquire", not other.acquire(blocking=False))
    lock.extend()
    check("extend() keeps it locked", lock.locked() > 0)
    lock.release()
    check("release() frees every master", not lock.locked() and eventually_free(masters, "redlock:shared"))
    check("the second Redlock acquires now", other.acquire(blocking=False))
    other.release()
    try:
        other.release()
        check("release of an unlocked Redlock raises", False)
    except ReleaseUnlockedLock:
        check("release of an unlocked Redlock raises ReleaseUnlockedLock", True)
    with Redlock(key="shared", masters=masters, auto_release_time=5) as held:
        check("context manager holds the lock", held.locked() > 0)
    check("context manager releases it", not held.locked() and eventually_free(masters, "redlock:shared"))
    for m in masters:
        m.close()


def main():
    ports = [int(p) for p in sys.argv[1:]]
    if len(ports) != 6:
        sys.exit(__doc__)
    redis_py_lock(ports[0])
    pottery_redlock(ports[1:])
    print("all lock-client checks passed", flush=True)


if __name__ == "__main__":
    main()
