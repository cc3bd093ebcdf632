"""The Python API: the Server object, its clock, the pytest plugin and the CLI."""

import asyncio
import os
import subprocess
import sys
import time

import pytest
import redis

from fakekey import Server
from fakekey.config.directives import StartupRefused
from fakekey.config.settings import ConfigError
from fakekey.testing.raw import RawClient
from fakekey.testing.targets import free_port


def test_thread_server_starts_serves_and_stops():
    server = Server().start()
    try:
        assert server.url == f"redis://127.0.0.1:{server.port}"
        client = redis.Redis.from_url(server.url)
        assert client.ping() is True
        assert client.set("k", "v") is True
        assert client.get("k") == b"v"
        client.close()
    finally:
        server.stop()
    with pytest.raises(redis.ConnectionError):
        redis.Redis(port=server.port, socket_connect_timeout=0.5).ping()


def test_context_manager_and_fresh_state():
    with Server() as first:
        redis.Redis(port=first.port).set("k", "v")
    with Server() as second:
        assert redis.Redis(port=second.port).get("k") is None


def test_starts_in_milliseconds():
    started = time.perf_counter()
    with Server():
        elapsed = time.perf_counter() - started
    assert elapsed < 1.0  # generous: typically a few ms


def test_async_server_in_running_loop():
    async def scenario():
        async with Server() as server:
            reader, writer = await asyncio.open_connection(server.host, server.port)
            writer.write(b"*1\r\n$4\r\nPING\r\n")
            await writer.drain()
            line = await reader.readline()
            writer.close()
            return line

    assert asyncio.run(scenario()) == b"+PONG\r\n"


def test_clock_freeze_and_advance_from_python(fakekey_server, fakekey_client):
    fakekey_server.freeze(1_700_000_000_000)
    assert fakekey_server.time_ms() == 1_700_000_000_000
    assert fakekey_client.execute_command("FAKEKEY.CLOCK", "GET") == 1_700_000_000_000
    fakekey_client.set("k", "v", px=1000)
    fakekey_server.advance(999)
    assert fakekey_client.get("k") == b"v"
    assert fakekey_client.pttl("k") == 1
    fakekey_server.advance(1)
    assert fakekey_client.pttl("k") == 0  # at the deadline the key still lives
    fakekey_server.advance(1)
    assert fakekey_client.get("k") is None
    assert fakekey_client.time() == (1_700_000_001, 1000)
    fakekey_server.real_time()
    assert abs(fakekey_server.time_ms() - time.time() * 1000) < 1000


def test_advance_expires_keys_at_once_without_access(fakekey_server, fakekey_client):
    fakekey_server.freeze()
    fakekey_client.set("k", "v", ex=10)
    assert fakekey_client.dbsize() == 1
    fakekey_server.advance(10_001)
    info = fakekey_client.info("stats")
    assert info["expired_keys"] == 1
    assert fakekey_client.dbsize() == 0


def test_fakekey_clock_command(fakekey_client):
    c = fakekey_client
    assert c.execute_command("FAKEKEY.CLOCK", "SET", "1000") == b"OK"
    assert c.execute_command("FAKEKEY.CLOCK", "GET") == 1000
    assert c.execute_command("FAKEKEY.CLOCK", "ADVANCE", "500") == b"OK"
    assert c.execute_command("FAKEKEY.CLOCK", "GET") == 1500
    with pytest.raises(redis.ResponseError, match="only moves forward"):
        c.execute_command("FAKEKEY.CLOCK", "ADVANCE", "-1")
    with pytest.raises(redis.ResponseError, match="not an integer"):
        c.execute_command("FAKEKEY.CLOCK", "SET", "soon")
    with pytest.raises(redis.ResponseError, match="unknown subcommand"):
        c.execute_command("FAKEKEY.CLOCK", "STOP")
    assert c.execute_command("FAKEKEY.CLOCK", "REAL") == b"OK"
    assert abs(c.execute_command("FAKEKEY.CLOCK", "GET") - time.time() * 1000) < 1000


def test_fakekey_commands_can_be_left_out():
    """As on Valkey: unknown commands, absent from COMMAND and from scripts."""
    with Server(enable_fakekey_commands=False) as server, RawClient(server.host, server.port) as client:
        assert client.call("FAKEKEY.CLOCK", "GET") == (
            "-", b"ERR unknown command 'FAKEKEY.CLOCK', with args beginning with: 'GET' ")
        assert client.call("COMMAND", "INFO", "fakekey.clock") == ("*", [("$", None)])
        assert client.call("COMMAND", "DOCS", "fakekey.clock") == ("*", [])
        names = [name for _kind, name in client.call("COMMAND", "LIST")[1]]
        assert not [name for name in names if name.startswith(b"fakekey.")]
        assert client.call("EVAL", "return redis.call('fakekey.clock', 'GET')", 0)[1].startswith(
            b"ERR Unknown command called from script")


def test_clock_fixture_is_frozen(fakekey_clock, fakekey_client):
    first = fakekey_client.execute_command("FAKEKEY.CLOCK", "GET")
    time.sleep(0.02)
    assert fakekey_client.execute_command("FAKEKEY.CLOCK", "GET") == first


def test_session_server_fixture(fakekey_session_server):
    assert redis.Redis(port=fakekey_session_server.port).ping()


def _wait_ready(port, proc, timeout=10.0):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if proc.poll() is not None:
            raise AssertionError(proc.stderr.read().decode())
        try:
            with RawClient("127.0.0.1", port, timeout=1) as client:
                return client.call("PING")
        except OSError:
            time.sleep(0.05)
    raise AssertionError("server did not start")


@pytest.mark.parametrize("entry", [["-m", "fakekey"], ["-m", "fakekey.cli"]])
def test_cli_starts_with_valkey_style_flags(entry, tmp_path):
    port = free_port()
    conf = tmp_path / "fakekey.conf"
    conf.write_text("# a valkey.conf-style file\nrequirepass secret\nhz 20\n")
    proc = subprocess.Popen(
        [sys.executable, *entry, str(conf), "--port", str(port), "--bind", "127.0.0.1"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        assert _wait_ready(port, proc) == ("-", b"NOAUTH Authentication required.")
        with RawClient("127.0.0.1", port) as client:
            assert client.call("AUTH", "secret") == ("+", b"OK")
            assert client.call("CONFIG", "GET", "hz") == ("*", [("$", b"hz"), ("$", b"20")])
    finally:
        proc.terminate()
        proc.wait(10)


def test_cli_rejects_unknown_setting():
    proc = subprocess.run(
        [sys.executable, "-m", "fakekey", "--no-such-setting", "1", "--port", str(free_port())],
        capture_output=True,
        timeout=30,
    )
    assert proc.returncode == 1
    assert b"FATAL CONFIG FILE ERROR" in proc.stderr


def test_a_setting_it_refuses_is_named_with_its_value():
    """Server(**settings) says which setting, with which value, and why (Valkey's reason)."""
    with pytest.raises(ConfigError, match=r"^maxmemory_polcy='allkeys-lru': Bad directive or wrong "
                       r"number of arguments \(did you mean maxmemory_policy\?\)$"):
        Server(maxmemory_polcy="allkeys-lru")
    with pytest.raises(ConfigError, match=r"^maxmemory_policy='nope': argument\(s\) must be one of "):
        Server(maxmemory_policy="nope")
    with pytest.raises(ConfigError, match=r"^hz 'x': argument couldn't be parsed into an integer$"):
        Server(config={"hz": "x"})
    with pytest.raises(ConfigError, match=r"^rename-command \['get'\]: Bad directive or wrong number"):
        Server(config=[("rename-command", ["get"])])


def test_the_directives_valkey_takes_besides_settings():
    """Deprecated names are ignored, rename-command renames, loadmodule refuses to start."""
    with Server(dynamic_hz="yes", config=[("rename-command", ["get", "fetch"])]) as server, \
            RawClient(server.host, server.port) as client:
        assert client.call("CONFIG", "GET", "dynamic-hz") == ("*", [])
        client.call("SET", "k", "v")
        assert client.call("FETCH", "k") == ("$", b"v")
    with pytest.raises(StartupRefused, match="^Module /nonexistent/m.so failed to load: "):
        Server(loadmodule="/nonexistent/m.so").start()
