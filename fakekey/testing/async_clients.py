"""The async client fixtures under pytest-asyncio: each client is made, used and closed in
the event loop of the test that asks for it, whatever its loop scope (function, class,
module, package, session; from `@pytest.mark.asyncio(loop_scope=...)` or
`asyncio_default_test_loop_scope`), in strict and auto mode.

pytest-asyncio runs an async fixture in the loop of the fixture's own `loop_scope`, not
the test's: a client closed in a function loop after a test that ran in the session loop
fails ("attached to a different loop"). So the public fixtures are sync ones that pick,
for the requesting test, one of the hidden async fixtures below, one per loop scope."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any, Literal

import pytest
import pytest_asyncio

from fakekey.testing.clients import aclose, async_client_class, client_options, plain_async_client
from fakekey.testing.servers import RunningServer

LoopScope = Literal["function", "class", "module", "package", "session"]
LOOP_SCOPES: tuple[LoopScope, ...] = ("function", "class", "module", "package", "session")
KINDS = ("redis", "valkey")


def loop_scope_of(item: pytest.Item) -> str | None:
    """The loop scope pytest-asyncio runs this test in; None for a test it does not run
    (a sync test: the client then connects in whatever loop the test starts)."""
    if not pytest_asyncio.is_async_test(item):
        return None
    marker = item.get_closest_marker("asyncio")
    scope = marker.kwargs.get("loop_scope") or marker.kwargs.get("scope") if marker else None
    return scope or item.config.getini("asyncio_default_test_loop_scope") or "function"


def hidden_fixture_name(kind: str, scope: str) -> str:
    return f"_fakekey_async_{kind}_in_{scope}_loop"


def client_for_test(request: pytest.FixtureRequest, running: RunningServer, kind: str) -> Any:
    scope = loop_scope_of(request.node)
    if scope is None:
        return plain_async_client(request, running, kind)
    return request.getfixturevalue(hidden_fixture_name(kind, scope))


def _in_loop(kind: str, scope: LoopScope) -> Callable[..., Any]:
    """An async client fixture run in the `scope` loop (made and closed there)."""

    @pytest_asyncio.fixture(loop_scope=scope, name=hidden_fixture_name(kind, scope))
    async def client_in_loop(request: pytest.FixtureRequest,
                             fakekey_running: RunningServer) -> AsyncIterator[Any]:
        client = async_client_class(kind)(**client_options(request, fakekey_running))
        yield client
        await aclose(client)

    return client_in_loop


for _kind in KINDS:
    for _scope in LOOP_SCOPES:
        globals()[hidden_fixture_name(_kind, _scope)] = _in_loop(_kind, _scope)


@pytest.fixture
def fakekey_async_client(request: pytest.FixtureRequest, fakekey_running: RunningServer) -> Any:
    """A `redis.asyncio.Redis` on this test's server, in the test's event loop."""
    return client_for_test(request, fakekey_running, "redis")


@pytest.fixture
def fakekey_async_valkey_client(request: pytest.FixtureRequest, fakekey_running: RunningServer) -> Any:
    """A `valkey.asyncio.Valkey` on this test's server (skipped without `valkey`)."""
    return client_for_test(request, fakekey_running, "valkey")
