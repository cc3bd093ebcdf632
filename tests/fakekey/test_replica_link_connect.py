"""A primary the replica cannot reach (net/replica_link.py `connect`): logged as Valkey's
connectWithPrimary logs it, tried again every second, and a name lookup that outlives its
link (REPLICAOF changed meanwhile) never reported by asyncio as an unretrieved failure."""

from __future__ import annotations

import gc
import logging
import socket
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import redis

from fakekey import Server
from fakekey.cli import ValkeyLogFormat

DEADLINE = 10.0  # s: the most any asynchronous outcome is waited for
UNRESOLVABLE = "no-such-host.invalid"  # RFC 6761: never resolves


def until(check: Callable[[], Any], what: str) -> Any:
    end = time.monotonic() + DEADLINE
    while not (value := check()):
        if time.monotonic() > end:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)
    return value


@pytest.fixture
def client(caplog: pytest.LogCaptureFixture) -> Iterator[redis.Redis]:
    caplog.set_level(logging.INFO)
    with Server() as server:
        r = redis.Redis(port=server.port)
        yield r
        r.execute_command("REPLICAOF", "NO", "ONE")
        r.close()


def lines(caplog: pytest.LogCaptureFixture, start: str) -> list[str]:
    return [rec.getMessage() for rec in caplog.records if rec.getMessage().startswith(start)]


def test_an_unresolvable_primary_is_logged_and_tried_again(
        client: redis.Redis, caplog: pytest.LogCaptureFixture) -> None:
    assert client.execute_command("REPLICAOF", UNRESOLVABLE, "6379") == b"OK"
    until(lambda: len(lines(caplog, "Unable to connect to PRIMARY: ")) >= 2, "a second try")
    assert len(lines(caplog, f"Connecting to PRIMARY {UNRESOLVABLE}:6379")) >= 2
    assert client.info("replication")["master_link_status"] == "down"


def free_closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_a_refused_connection_is_logged_as_valkey(
        client: redis.Redis, caplog: pytest.LogCaptureFixture) -> None:
    client.execute_command("REPLICAOF", "127.0.0.1", str(free_closed_port()))
    until(lambda: lines(caplog, "Error condition on socket for SYNC: "), "the refusal")
    assert lines(caplog, "Error condition on socket for SYNC: ")[0].endswith("Connection refused")
    assert lines(caplog, "PRIMARY <-> REPLICA sync started")


def test_a_lookup_outliving_its_link_is_not_reported(
        client: redis.Redis, caplog: pytest.LogCaptureFixture) -> None:
    for _ in range(5):  # each link dropped while its name is looked up
        client.execute_command("REPLICAOF", UNRESOLVABLE, "6379")
        client.execute_command("REPLICAOF", "NO", "ONE")
    client.execute_command("REPLICAOF", UNRESOLVABLE, "6379")
    until(lambda: lines(caplog, "Unable to connect to PRIMARY: ") or lines(caplog, "Error condition"),
          "a lookup's failure")
    gc.collect()  # asyncio reports an unretrieved failure when its future is collected
    assert not lines(caplog, "Future exception was never retrieved")


def test_a_replica_logs_with_its_role_letter() -> None:
    class State:
        upstream: object = None

    state = State()
    record = logging.LogRecord("fakekey", logging.INFO, __file__, 0, "text", None, None)
    assert ":M " in ValkeyLogFormat(state).format(record)
    state.upstream = object()
    assert ":S " in ValkeyLogFormat(state).format(record)
