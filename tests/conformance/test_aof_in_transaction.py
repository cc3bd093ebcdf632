"""`CONFIG SET appendonly yes` inside MULTI/EXEC: the append-only log is not started in the
middle of the transaction; the server logs Valkey's line and its cron starts the rewrite
(Valkey's startAppendOnly when `in_exec`). Each kind runs as its own process, for its log."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fakekey.testing.raw import RawClient
from fakekey.testing.targets import find_valkey_binary, free_port

KINDS = [k.strip() for k in os.environ.get("FAKEKEY_TARGETS", "fakekey,valkey").split(",") if k.strip()]
SCHEDULED = ("AOF was enabled during a transaction. An AOF background was scheduled to start "
             "when possible.")
DEADLINE_S = 30.0


@pytest.fixture(params=KINDS)
def server(request: pytest.FixtureRequest, tmp_path: Path):
    """A server process of the kind, logging to tmp_path/log: (a client, the log's path)."""
    if request.param == "valkey":
        binary = find_valkey_binary()
        if binary is None:
            pytest.skip("no valkey-server binary")
        command = [binary]
    else:
        command = [sys.executable, "-m", "fakekey"]
    port = free_port()
    log = tmp_path / "log"
    proc = subprocess.Popen([*command, "--port", str(port), "--dir", str(tmp_path), "--save", "",
                             "--logfile", str(log)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        yield connect(proc, port), log
    finally:
        proc.terminate()
        proc.wait(30)


def connect(proc: subprocess.Popen[bytes], port: int) -> RawClient:
    deadline = time.monotonic() + DEADLINE_S
    while time.monotonic() < deadline:
        assert proc.poll() is None, "the server exited"
        try:
            return RawClient("127.0.0.1", port, timeout=10)
        except OSError:
            time.sleep(0.05)
    raise AssertionError("the server did not answer")


def persistence(client: RawClient) -> dict[str, str]:
    text = client.call("INFO", "persistence")[1].decode()
    return dict(line.split(":", 1) for line in text.split("\r\n") if ":" in line)


def wait_until(predicate) -> None:
    deadline = time.monotonic() + DEADLINE_S
    while not predicate():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.05)


def test_appendonly_turned_on_inside_exec_is_scheduled(server):
    client, log = server
    assert client.call("PING") == ("+", b"PONG")
    client.call("MULTI")
    client.call("SET", "foo", "bar")
    client.call("CONFIG", "SET", "appendonly", "yes")
    assert client.call("EXEC") == ("*", [("+", b"OK"), ("+", b"OK")])
    wait_until(lambda: SCHEDULED in log.read_text())
    wait_until(lambda: persistence(client)["aof_rewrite_in_progress"] == "0"
               and persistence(client)["aof_rewrite_scheduled"] == "0"
               and persistence(client)["aof_last_bgrewrite_status"] == "ok"
               and persistence(client)["aof_rewrites"] == "1")
    assert persistence(client)["aof_enabled"] == "1"
    client.close()
