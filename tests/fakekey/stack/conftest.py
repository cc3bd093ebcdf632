"""The stack modules' tests: one server with the modules on per test module, and (for the
tests that compare both protocols) a raw client in RESP2 and RESP3 on an emptied server."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from fakekey.net.server import Server
from fakekey.testing.raw import RawClient


@pytest.fixture(scope="module")
def server() -> Iterator[Server]:
    with Server(enable_stack_modules="yes") as srv:
        yield srv


@pytest.fixture(params=[2, 3], ids=["resp2", "resp3"])
def proto(request: pytest.FixtureRequest) -> int:
    return int(request.param)


@pytest.fixture
def r(proto: int, server: Server) -> Iterator[RawClient]:
    client = RawClient(server.host, server.port)
    client.call("HELLO", proto)
    client.call("FLUSHALL")
    yield client
    client.close()
