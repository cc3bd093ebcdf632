"""The plugin's client fixtures' pieces: a test's connection options, and the client
classes (redis-py, valkey-py, sync and async), shared by the sync fixtures, the plain
async ones and pytest-asyncio's (fakekey/testing/async_clients.py)."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import pytest

from fakekey.testing.servers import RunningServer


def client_options(request: pytest.FixtureRequest, running: RunningServer) -> dict[str, Any]:
    """Where to connect, then the `fakekey_client` marker's options, then an indirect
    parameter's (a dict) on top."""
    options: dict[str, Any] = {"host": running.host, "port": running.port}
    if running.password is not None:
        options["password"] = running.password
    if running.username is not None:
        options["username"] = running.username
    marker = request.node.get_closest_marker("fakekey_client")
    if marker is not None:
        options.update(marker.kwargs)
    param = getattr(request, "param", None)
    if param is not None:
        if not isinstance(param, dict):
            raise TypeError(f"an indirect parameter of a fakekey client fixture is a dict of "
                            f"client options, not {param!r}")
        options.update(param)
    return options


def valkey_module(name: str) -> Any:
    """The `valkey` package's module, or a skip saying how to get it."""
    try:
        return __import__(name, fromlist=["_"])
    except ImportError:
        pytest.skip("the valkey package is not installed (pip install valkey)")


def async_client_class(kind: str) -> Any:
    """`redis`: redis.asyncio.Redis; `valkey`: valkey.asyncio.Valkey (or a skip)."""
    if kind == "valkey":
        return valkey_module("valkey.asyncio").Valkey
    import redis.asyncio

    return redis.asyncio.Redis


def close_async_client_later(client: Any) -> None:
    """Close an async client outside any loop (a sync test that ran its own loop): its
    connections belong to the loop the test ran, so they are closed on a new loop when
    they can be, and left to the garbage collector when that loop is gone."""
    with contextlib.suppress(Exception):
        asyncio.run(aclose(client))


async def aclose(client: Any) -> None:
    close = getattr(client, "aclose", None) or client.close
    await close()


def plain_async_client(request: pytest.FixtureRequest, running: RunningServer, kind: str) -> Any:
    """An async client made outside any loop: it connects in whatever loop uses it
    (`asyncio.run`, anyio, ...), and is closed after the test as far as that loop allows."""
    client = async_client_class(kind)(**client_options(request, running))
    request.addfinalizer(lambda: close_async_client_later(client))
    return client
