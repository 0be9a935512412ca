"""embedis.Server from Python: it answers redis-py, its manual clock expires keys only when the
test moves it, its faults fail exactly the commands they name, a full disk refuses writes until
it has room, and a stopped server says so."""

import datetime
import errno
import socket
import time

import pytest
import redis

import embedis


def test_a_server_answers_redis_py_and_stops_with_its_block():
    with embedis.Server() as server:
        port = server.port
        assert server.url == f"redis://127.0.0.1:{port}/"
        r = server.client()
        assert r.ping() is True
        assert r.set("k", "v") is True
        assert server.command("GET", "k") == b"v"
        r.close()
    with pytest.raises(embedis.EmbedisError, match="stopped"):
        server.command("PING")
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", port), timeout=1)


def test_command_returns_python_values_and_raises_redis_errors():
    with embedis.Server() as server:
        assert server.command("PING") == "PONG"
        assert server.command("RPUSH", "l", 1, 2.5, b"x") == 3
        assert server.command("LRANGE", "l", 0, -1) == [b"1", b"2.5", b"x"]
        assert server.command("GET", "missing") is None
        assert server.command("SET", "n", "1", db=3) == "OK"
        assert server.command("GET", "n") is None
        with pytest.raises(embedis.EmbedisError, match="^WRONGTYPE"):
            server.command("GET", "l")


def test_options_reach_the_server_and_bad_ones_get_redis_errors():
    users = {"app": "on >app-secret ~app:* +@all"}
    with embedis.Server(password="s3cret", users=users, config={"maxmemory": "10mb"}) as server:
        with pytest.raises(redis.AuthenticationError):
            redis.Redis(port=server.port).ping()
        assert server.client(password="s3cret").config_get("maxmemory") == {
            "maxmemory": "10485760"
        }
        app = server.client(username="app", password="app-secret")
        assert app.set("app:1", "x")
        with pytest.raises(redis.exceptions.NoPermissionError):
            app.set("other", "x")
    with pytest.raises(embedis.EmbedisError, match="must be one of"):
        embedis.Server(config={"maxmemory-policy": "sometimes"})
    with pytest.raises(ValueError, match="unknown option"):
        embedis.Server(maxmemory="1mb")


def test_a_manual_clock_moves_only_when_the_test_moves_it():
    with embedis.Server(clock="manual") as server:
        r = server.client()
        assert r.set("lease", "me", px=30_000, nx=True)
        server.clock.advance(29_999)
        assert r.get("lease") == b"me"
        server.clock.advance(datetime.timedelta(milliseconds=2))  # expired once past its time
        assert r.get("lease") is None
        before = server.clock.now_ms()
        server.clock.skew(5_000)
        assert server.clock.offset_ms == 5_000
        assert server.clock.now_ms() - before == 5_000
        server.clock.rate = 2.0
        assert server.clock.rate == 2.0
        r.close()


def test_the_system_clock_cannot_be_moved():
    with embedis.Server() as server:
        with pytest.raises(embedis.EmbedisError, match="cannot be moved"):
            server.clock.advance(1000)


def test_one_clock_shared_by_servers_moves_them_together():
    clock = embedis.Clock.manual()
    with embedis.Server(clock=clock) as a, embedis.Server(clock=clock) as b:
        a.command("SET", "k", "v", "PX", "1000")
        b.command("SET", "k", "v", "PX", "1000")
        clock.advance(1001)
        assert a.command("EXISTS", "k") == 0
        assert b.command("EXISTS", "k") == 0


def test_faults_fail_exactly_the_commands_they_name():
    with embedis.Server() as server:
        r = server.client()
        server.faults.error("set", "lock:*", "ERR injected", 2)
        assert r.set("other", "x")
        for _ in range(2):
            with pytest.raises(redis.ResponseError, match="injected"):
                r.set("lock:a", "x")
        assert r.set("lock:a", "x")
        assert server.faults.list() == []
        server.faults.close("get", "lock:*")
        with pytest.raises(redis.ConnectionError):
            redis.Redis(port=server.port, retry=None).get("lock:a")
        server.faults.clear()
        assert r.get("lock:a") == b"x"
        assert server.faults.drop_connections() >= 1
        r.close()


def test_a_paused_server_accepts_but_answers_nothing():
    with embedis.Server() as server:
        server.faults.pause(datetime.timedelta(seconds=5))
        # No retries: redis-py's default ones would outlast the pause.
        r = redis.Redis(port=server.port, socket_timeout=0.3, retry=None)
        with pytest.raises(redis.TimeoutError):
            r.ping()


def test_restart_keeps_the_data():
    with embedis.Server() as server:
        server.command("SET", "k", "v")
        port = server.port
        server.restart()
        assert server.port == port
        assert server.command("GET", "k") == b"v"


def test_the_fixtures_of_the_pytest_plugin(embedis_server, embedis_url, embedis_client):
    assert embedis_url == embedis_server.url
    assert embedis_client.ping()
    embedis_client.set("k", "v")
    assert embedis_server.command("GET", "k") == b"v"


def test_a_full_disk_refuses_writes_until_it_has_room(tmp_path):
    with embedis.Server(dir=str(tmp_path), appendonly=True) as server:
        r = server.client()
        server.faults.disk_write_error(errno.ENOSPC)
        # Acknowledged: the write waits in the AOF's buffer, as on Redis.
        assert r.set("a", "1")
        refused = "MISCONF Errors writing to the AOF file: No space left on device"
        with pytest.raises(redis.ResponseError, match=refused):
            r.set("b", "1")
        assert r.get("a") == b"1"
        server.faults.clear()
        # The server retries on its tick; once the disk takes the bytes, writes resume.
        deadline = time.monotonic() + 5
        while True:
            try:
                assert r.set("b", "1")
                break
            except redis.ResponseError:
                assert time.monotonic() < deadline, "writes were not accepted again"
                time.sleep(0.02)
