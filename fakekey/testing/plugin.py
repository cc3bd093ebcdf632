"""The pytest plugin (entry point `fakekey`): fixtures for tests that need a server.

    def test_cache(fakekey_client):        # a redis.Redis bound to a fresh server
        fakekey_client.set("k", "v", ex=10)

    def test_expiry(fakekey_server, fakekey_client):
        fakekey_server.freeze()
        fakekey_server.advance(10_000)     # keys expire, waiters time out, at once
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from fakekey.server import Server


@pytest.fixture
def fakekey_server() -> Iterator[Server]:
    """A fresh fakekey server for one test, in a background thread."""
    with Server() as server:
        yield server


@pytest.fixture(scope="session")
def fakekey_session_server() -> Iterator[Server]:
    """One fakekey server shared by the whole session."""
    with Server() as server:
        yield server


@pytest.fixture
def fakekey_client(fakekey_server: Server) -> Iterator[Any]:
    """A `redis.Redis` client (decoded responses off) bound to `fakekey_server`."""
    import redis

    client = redis.Redis(host=fakekey_server.host, port=fakekey_server.port)
    yield client
    client.close()


@pytest.fixture
def fakekey_clock(fakekey_server: Server) -> Server:
    """The server whose clock the test controls: frozen at the current time."""
    fakekey_server.freeze()
    return fakekey_server
