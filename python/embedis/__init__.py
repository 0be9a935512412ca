"""embedis: a Redis-compatible server for tests, started inside the Python process in
milliseconds, with a clock and faults the test controls.

    import embedis

    with embedis.Server(clock="manual") as server:
        r = server.client()                 # a redis.Redis (pip install embedis[redis])
        r.set("lock", "me", px=30_000, nx=True)
        server.clock.advance(30_000)        # 30 s pass for the server, none for the test
        assert r.get("lock") is None

``Nodes(5)`` gives five independent servers (a Redlock test), ``ReplicaSet(2)`` a primary
and two replicas with ``fail_over``, ``Cluster(3, replicas=1)`` a Redis Cluster whose failure
detection runs on the clock it is given. Each server's ``faults`` inject the failures that
break locks. The pytest plugin provides the fixtures ``embedis_server``, ``embedis_url``,
``embedis_client``, ``embedis_nodes`` and ``embedis_cluster``.
"""

from embedis._embedis import (
    Clock,
    Cluster,
    EmbedisError,
    Faults,
    Nodes,
    ReplicaSet,
    Server,
    __version__,
    slot_of,
)

__all__ = [
    "Clock",
    "Cluster",
    "EmbedisError",
    "Faults",
    "Nodes",
    "ReplicaSet",
    "Server",
    "__version__",
    "slot_of",
]
