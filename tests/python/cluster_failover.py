"""redis-py's RedisCluster across an automatic failover of an embedis cluster: it writes a key,
asks the driver (tests/it/cluster.rs) to kill the key's primary and move the cluster's clock
past the node timeout, then keeps using the cluster — the client finds the promoted replica by
itself (a connection error, then MOVED / a refreshed slot map) and reads the replicated key.

Usage: cluster_failover.py PORT...   (lines on stdout; the driver answers "done" on stdin)
"""
import sys
import time

from redis.cluster import ClusterNode, RedisCluster


def main():
    nodes = [ClusterNode("127.0.0.1", int(p)) for p in sys.argv[1:]]
    rc = RedisCluster(startup_nodes=nodes, decode_responses=True, cluster_error_retry_attempts=10)
    rc.set("order:{42}", "paid")
    primary = rc.get_node_from_key("order:{42}")
    # Replicated before the primary dies: the replica elected in its place has it.
    assert rc.get_redis_connection(primary).execute_command("WAIT", 1, 5000) >= 1
    port = primary.port
    print(f"KILL {port}", flush=True)
    assert sys.stdin.readline().strip() == "done"
    deadline = time.time() + 20
    while True:
        try:
            value = rc.get("order:{42}")
            rc.set("order:{43}", "new")
            break
        except Exception as e:  # noqa: BLE001 - the client reports the failover as it can
            if time.time() > deadline:
                raise
            print(f"retrying after {type(e).__name__}", flush=True)
            time.sleep(0.2)
    assert value == "paid", value
    new_port = rc.get_node_from_key("order:{42}").port
    assert new_port != port, (new_port, port)
    print("followed the failover", flush=True)


if __name__ == "__main__":
    main()
