"""redis-py's Sentinel client writing across a failover (driven by tests/it/sentinel.rs).

Arguments: the sentinels' ports. The client asks them for the primary of "mymaster" and writes
k:0, k:1, ... through `master_for`, retrying a write that fails while the primary is gone (the
same key and value again, so a retry is harmless). It prints "ready" after 20 writes (the test
then kills the primary), "new master <port>" when the sentinels report another primary, and
"after <first> <last>" for the writes that succeeded once the new primary was known, then
exits after 50 of those.
"""

import sys
import time

import redis
from redis.sentinel import MasterNotFoundError, Sentinel

ports = [int(p) for p in sys.argv[1:]]
sentinel = Sentinel([("127.0.0.1", p) for p in ports], socket_timeout=0.5)
master = sentinel.master_for(
    "mymaster", socket_timeout=0.5, socket_connect_timeout=0.5
)
first = sentinel.discover_master("mymaster")
print(f"first master {first[1]}", flush=True)

i = 0
errors = 0
after = None
deadline = time.time() + 25
while time.time() < deadline:
    try:
        master.set(f"k:{i}", i)
    except (redis.ConnectionError, redis.TimeoutError, redis.ReadOnlyError):
        # The primary is gone or was demoted: the pool finds the new one on the next try.
        errors += 1
        time.sleep(0.05)
        continue
    i += 1
    if i == 20:
        print("ready", flush=True)
    if after is None and i > 20 and i % 5 == 0:
        try:
            now = sentinel.discover_master("mymaster")
        except MasterNotFoundError:
            continue
        if now != first:
            after = i
            print(f"new master {now[1]}", flush=True)
    elif after is not None and i >= after + 50:
        break
    time.sleep(0.005)

print(f"errors {errors}", flush=True)
if after is None:
    sys.exit("no failover seen")
print(f"after {after} {i - 1}", flush=True)
