"""The EMQ verbs under a real ACL user, logged in through AUTH / HELLO AUTH: a worker
confined to queue `a` (`~emq:{a}:* +@all`) is refused queue `b` with NOPERM and writes
nothing, while its own queue works; ACL DRYRUN and ACL LOG see the verbs as Valkey sees a
module's commands."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from emq_jobs_helpers import claim, enqueue
from test_emq_refusals import B_CALLS, assert_writes_nothing, events, no_events, watcher

from fakekey.net.server import Server
from fakekey.testing.raw import RawClient, plain

__all__ = ["events", "watcher"]  # fixtures shared with the refusal tests
NOPERM_KEY = "NOPERM No permissions to access a key"


@pytest.fixture
def worker(server: Server, r: RawClient) -> Iterator[RawClient]:
    """`r` logged in as `worker`, confined to queue `a`, through the real AUTH path."""
    with RawClient(server.host, server.port) as admin:
        assert admin.call("ACL", "SETUSER", "worker", "on", ">pw", "~emq:{a}:*", "+@all") == ("+", b"OK")
        assert r.call("AUTH", "worker", "pw") == ("+", b"OK")
        assert r.call("ACL", "WHOAMI") == ("$", b"worker")
        yield r
        admin.call("ACL", "DELUSER", "worker")
        admin.call("ACL", "LOG", "RESET")


@pytest.mark.parametrize("name", list(B_CALLS))
def test_a_worker_of_queue_a_is_refused_queue_b(
        worker: RawClient, watcher: RawClient, events: RawClient, name: str) -> None:
    enqueue(watcher, "JOB1", queue="b")
    claim(watcher, 1000, queue="b")
    watcher.call("FAKEKEY.CLOCK", "ADVANCE", 5000)
    no_events(events)
    assert_writes_nothing(worker, watcher, events, B_CALLS[name], NOPERM_KEY)


def test_the_worker_runs_its_own_queue(worker: RawClient) -> None:
    assert enqueue(worker, "JOB1") == (":", 1)
    assert claim(worker)[1][0] == ("$", b"JOB1")


def test_dryrun_and_the_log_see_the_refusal(server: Server, worker: RawClient) -> None:
    call = B_CALLS["claim"]
    assert worker.call(*call) == ("-", NOPERM_KEY.encode())
    with RawClient(server.host, server.port) as admin:
        verdict = admin.call("ACL", "DRYRUN", "worker", *call)
        assert verdict == ("$", f"User worker has no permissions to access the '{call[2]}' key".encode())
        entry = dict(zip(*[iter(plain(admin.call("ACL", "LOG", "1"))[0])] * 2))
        assert (entry[b"reason"], entry[b"object"], entry[b"username"]) == (
            b"key", call[2].encode(), b"worker")


def test_hello_auth_logs_the_worker_in_too(server: Server, worker: RawClient) -> None:
    with RawClient(server.host, server.port) as other:
        assert other.call("HELLO", "3", "AUTH", "worker", "pw")[0] == "%"
        assert other.call(*B_CALLS["enqueue"]) == ("-", NOPERM_KEY.encode())
        assert other.call("HELLO", "3", "AUTH", "worker", "bad") == (
            "-", b"WRONGPASS invalid username-password pair or user is disabled.")
