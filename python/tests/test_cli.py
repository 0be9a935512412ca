"""The `embedis-server` console script: the server as a process of its own, for the stories
where the process is the point (SIGKILL), with redis-server's command line."""

import os
import signal
import subprocess
import sys

import redis


def embedis_server():
    return os.path.join(os.path.dirname(sys.executable), "embedis-server")


def test_the_console_script_serves_until_killed(tmp_path):
    server = subprocess.Popen(
        [embedis_server(), "--port", "auto", "--dir", str(tmp_path), "--save", ""],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        # The log goes to standard output too, as redis-server's does; the port has its line.
        line = ""
        while not line.startswith("port="):
            line = server.stdout.readline().strip()
            assert line or server.poll() is None, "the server ended"
        r = redis.Redis(port=int(line[len("port="):]))
        assert r.ping()
        # The default version (compat-version 7.4).
        assert r.info("server")["redis_version"] == "7.4.1"
        r.close()
    finally:
        server.send_signal(signal.SIGKILL)
        server.wait(10)
    assert server.returncode == -signal.SIGKILL


def test_the_console_script_refuses_unknown_options_as_redis_does():
    done = subprocess.run([embedis_server(), "--no-such-option", "1"], capture_output=True, text=True)
    assert done.returncode == 1
    assert "no-such-option" in done.stderr
