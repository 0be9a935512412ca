"""Groups from Python: five Redlock nodes, a replica set failing over, a cluster whose failure
detection runs on the test's clock — and the fixtures that give them."""

import redis

import embedis


def test_nodes_are_independent_servers(embedis_nodes):
    assert len(embedis_nodes) == 5
    ports = {node.port for node in embedis_nodes}
    assert len(ports) == 5
    embedis_nodes[0].command("SET", "k", "v")
    assert embedis_nodes[1].command("GET", "k") is None
    assert embedis_nodes[-1].url == embedis_nodes.urls[4]


def test_nodes_advance_their_clocks_together():
    with embedis.Nodes(3, clock="manual") as nodes:
        for node in nodes:
            node.command("SET", "k", "v", "PX", "1000")
        nodes.advance(1001)
        assert [node.command("EXISTS", "k") for node in nodes] == [0, 0, 0]


def test_a_replica_set_replicates_and_fails_over():
    with embedis.ReplicaSet(2) as rs:
        primary = rs.primary.client()
        primary.set("k", "v")
        assert rs.wait_for_replicas()
        assert all(r.command("GET", "k") == b"v" for r in rs.replicas)
        old_port = rs.primary.port
        rs.fail_over(0)
        assert rs.primary.port != old_port
        assert rs.primary.command("SET", "after", "1") == "OK"
        assert len(rs.replicas) == 1
        assert rs.wait_for_replicas()
        assert rs.replicas[0].command("GET", "after") == b"1"


def test_a_cluster_client_carries_on_across_an_automatic_failover():
    with embedis.Cluster(3, replicas=1, clock="manual",
                         config={"cluster-node-timeout": "5000"}) as cluster:
        rc = cluster.client()
        rc.set("order:{42}", "paid")
        slot = embedis.slot_of(b"order:{42}")
        owner = cluster.owner_of(slot)
        primary = cluster.nodes[owner].client()
        assert primary.execute_command("WAIT", 1, 5000) == 1  # the replica has it
        primary.close()
        cluster.kill(owner)
        cluster.advance_clock(8000)
        cluster.wait_for_owner(slot, owner + 3)
        value = None
        for _ in range(50):
            try:
                value = rc.get("order:{42}")
                break
            except (redis.ConnectionError, redis.exceptions.ClusterError):
                pass
        assert value == b"paid"
        assert rc.get_node_from_key("order:{42}").port == cluster.nodes[owner + 3].port
        rc.close()


def test_the_cluster_fixture(embedis_cluster):
    assert len(embedis_cluster.nodes) == 6
    assert len(embedis_cluster.startup_nodes) == 6
    rc = embedis_cluster.client()
    for i in range(20):
        rc.set(f"key:{i}", i)
    assert {embedis_cluster.owner_of(embedis.slot_of(f"key:{i}".encode())) for i in range(20)} == {0, 1, 2}
    rc.close()
