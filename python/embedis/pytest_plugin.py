"""pytest fixtures for embedis (registered through the ``pytest11`` entry point):

- ``embedis_server``: a fresh ``embedis.Server`` per test, stopped after it;
- ``embedis_url``: its ``redis://`` URL;
- ``embedis_client``: a ``redis.Redis`` connected to it (redis-py must be installed);
- ``embedis_nodes``: five independent servers (``embedis.Nodes(5)``), for Redlock;
- ``embedis_cluster``: a Redis Cluster of three primaries with a replica each.

A test that needs other settings starts its own: ``with embedis.Server(clock="manual") as s``.
"""

import pytest

import embedis


@pytest.fixture
def embedis_server():
    with embedis.Server() as server:
        yield server


@pytest.fixture
def embedis_url(embedis_server):
    return embedis_server.url


@pytest.fixture
def embedis_client(embedis_server):
    client = embedis_server.client()
    yield client
    client.close()


@pytest.fixture
def embedis_nodes():
    with embedis.Nodes(5) as nodes:
        yield nodes


@pytest.fixture
def embedis_cluster():
    with embedis.Cluster(3, replicas=1) as cluster:
        yield cluster
