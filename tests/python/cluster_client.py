"""redis-py's RedisCluster against a cluster of embedis nodes (driven by tests/it/cluster.rs).

Arguments: the nodes' ports. The script asks the test to change the cluster by printing
MIGRATE-BEGIN <slot> <from-port> <to-port>, MIGRATE-KEY <key> and MIGRATE-FINISH, each answered
by a line on stdin once done.
"""

import sys
import uuid

from redis.cluster import ClusterNode, RedisCluster

RELEASE = """
if redis.call('get', KEYS[1]) == ARGV[1] then
    return redis.call('del', KEYS[1])
else
    return 0
end
"""


def ask(line):
    print(line, flush=True)
    sys.stdin.readline()


def check(condition, what):
    if not condition:
        raise AssertionError(what)


ports = [int(p) for p in sys.argv[1:]]
rc = RedisCluster(
    startup_nodes=[ClusterNode("127.0.0.1", port) for port in ports],
    decode_responses=True,
)
check(len(rc.get_primaries()) == 3, "three primaries")

# Reads and writes over every shard.
for i in range(200):
    rc.set(f"key:{i}", f"value:{i}")
for i in range(200):
    check(rc.get(f"key:{i}") == f"value:{i}", f"key:{i}")
owners = {rc.get_node_from_key(f"key:{i}").port for i in range(200)}
check(owners == set(ports), "keys on every shard")
print("reads and writes on every shard", flush=True)

# A pipeline spanning shards (redis-py splits it per node).
pipe = rc.pipeline()
for i in range(50):
    pipe.incr(f"counter:{i}")
    pipe.get(f"key:{i}")
results = pipe.execute()
check(results[0::2] == [1] * 50, "pipeline INCRs")
check(results[1::2] == [f"value:{i}" for i in range(50)], "pipeline GETs")
print("pipeline across shards", flush=True)

# A Redlock-style lock: SET NX PX to take it, a Lua compare-and-delete to release it.
lock = "lock:{orders}"
token = str(uuid.uuid4())
check(rc.set(lock, token, nx=True, px=10000) is True, "lock taken")
check(rc.set(lock, "other", nx=True, px=10000) is None, "lock refused while held")
check(rc.eval(RELEASE, 1, lock, "not-mine") == 0, "release by a stranger refused")
check(rc.eval(RELEASE, 1, lock, token) == 1, "released by its owner")
check(rc.set(lock, "next", nx=True, px=10000) is True, "lock free again")
# redis-py's own Lock (its scripts run with EVALSHA).
with rc.lock("lock:{py}", timeout=5, blocking_timeout=1):
    check(rc.exists("lock:{py}") == 1, "Lock held")
check(rc.exists("lock:{py}") == 0, "Lock released")
print("SET NX PX lock with a Lua release", flush=True)

# A migration: ASK while the slot moves, MOVED once it has.
key, other = "mig:{7}", "mig2:{7}"
rc.set(key, "before")
rc.set(other, "stays")
slot = rc.keyslot(key)
source = rc.get_node_from_key(key).port
target = next(p for p in ports if p != source)
ask(f"MIGRATE-BEGIN {slot} {source} {target}")
ask(f"MIGRATE-KEY {key}")
check(rc.get(key) == "before", "read after ASK")
check(rc.get(other) == "stays", "a key still on the source")
check(rc.set("new:{7}", "created") is True, "write after ASK")
check(rc.get("new:{7}") == "created", "read of a key created during the migration")
print("followed ASK during a migration", flush=True)
ask("MIGRATE-FINISH")
check(rc.get(key) == "before", "read after MOVED")
check(rc.get(other) == "stays", "moved key")
check(rc.get_node_from_key(key).port == target, "slot map refreshed")
print("followed MOVED after resharding", flush=True)

# Cross-slot requests stay refused as Redis refuses them.
try:
    rc.execute_command("MSET", "a", "1", "b", "2", target_nodes=rc.get_node_from_key("a"))
    check(False, "CROSSSLOT expected")
except Exception as error:  # redis-py raises its own error class for it
    check("CROSSSLOT" in str(error) or "hash to the same slot" in str(error), str(error))

print("all cluster-client checks passed", flush=True)
