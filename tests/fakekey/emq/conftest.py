"""Fixtures for the EMQ verbs' tests: one fakekey server per module, emptied and with its
clock frozen at `NOW` before each test; a raw client in RESP2 and in RESP3."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from fakekey.net.server import Server
from fakekey.testing.raw import RawClient

NOW = 1_700_000_000_000  # the frozen clock every test starts from (ms)


@pytest.fixture(scope="module")
def server() -> Iterator[Server]:
    with Server() as srv:
        yield srv


@pytest.fixture(params=[2, 3], ids=["resp2", "resp3"])
def r(request: pytest.FixtureRequest, server: Server) -> Iterator[RawClient]:
    """A raw client (exact wire types) in the test's protocol, on an empty server whose
    clock is frozen at NOW."""
    client = RawClient(server.host, server.port)
    client.call("HELLO", request.param)
    client.call("FLUSHALL")
    client.call("FAKEKEY.CLOCK", "SET", NOW)
    yield client
    client.close()


@pytest.fixture
def now() -> int:
    """The clock's frozen time at the start of each test (advance it with
    `r.call("FAKEKEY.CLOCK", "ADVANCE", ms)`)."""
    return NOW
