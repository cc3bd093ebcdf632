"""The pytest plugin (entry point `fakekey`): servers and clients for a project's own tests,
on fakekey, on a real valkey-server, or on both. The reference is docs/pytest.md.

    def test_cache(fakekey_client):            # a redis.Redis bound to this test's server
        fakekey_client.set("k", "v", ex=10)

    @pytest.mark.fakekey_only
    def test_expiry(fakekey_clock, fakekey_client):
        fakekey_clock.advance(seconds=10)      # keys expire, waiters time out, at once

    def test_retry(fakekey_faults, fakekey_client):
        fakekey_faults.drop("get", times=1)    # the next GET's connection drops (docs/faults.md)

EMQ queues: `fakekey_no_lost_wakes` fails a test that loses a wake (fakekey/testing/wakes.py
has `assert_no_lost_wakes(server_or_client)` for any point of a test).

Clusters: `fakekey_cluster` (a fakekey.Cluster, or a real Valkey cluster on the valkey
target) and `fakekey_cluster_client` (a RedisCluster on it); docs/cluster.md.

Options: `--fakekey-target fakekey|valkey|valkey-cluster|both|URL` (or FAKEKEY_TARGET, or the ini option
`fakekey_target`), `--fakekey-scope function|session` (or `fakekey_scope`).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any, TypeVar

import pytest

from fakekey.net.faults import ServerFaults
from fakekey.net.server import Server
from fakekey.testing.clusters import ClusterPool, cluster_client
from fakekey.testing.servers import (
    RunningServer,
    ServerPool,
    SettingsError,
    TargetSkip,
    parse_targets,
    target_id,
)
from fakekey.testing.wakes import LostWakeGuard

MARKERS = (
    "fakekey_only: needs fakekey's own commands or clock; skipped on other targets",
    "fakekey(**settings): start this test's server with these settings (valkey's names, "
    "underscores for dashes)",
    "fakekey_client(**options): constructor options for the plugin's client fixtures "
    "(decode_responses=True, protocol=3, ...)",
    "fakekey_cluster(primaries=3, replicas=1, **settings): the shape and settings of the "
    "test's cluster",
)
SCOPES = ("function", "session")
T = TypeVar("T")
_POOL = pytest.StashKey[ServerPool]()
_CLUSTERS = pytest.StashKey[ClusterPool]()
_TARGETS = pytest.StashKey[list[str]]()


# --- options -----------------------------------------------------------------------------


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("fakekey", "fakekey: servers for tests")
    group.addoption("--fakekey-target", dest="fakekey_target", default=None,
                    help="where the fakekey fixtures connect: fakekey (default), valkey (a real "
                    "valkey-server started here), both, or a URL (redis://host:port). "
                    "Also FAKEKEY_TARGET.")
    group.addoption("--fakekey-scope", dest="fakekey_scope", default=None, choices=SCOPES,
                    help="function (default): a fresh fakekey server per test; session: one "
                    "server, emptied between tests.")
    parser.addini("fakekey_target", "default for --fakekey-target", default="fakekey")
    parser.addini("fakekey_scope", "default for --fakekey-scope", default="function")


def pytest_configure(config: pytest.Config) -> None:
    for marker in MARKERS:
        config.addinivalue_line("markers", marker)
    spec = (config.getoption("fakekey_target") or os.environ.get("FAKEKEY_TARGET")
            or config.getini("fakekey_target"))
    scope = config.getoption("fakekey_scope") or config.getini("fakekey_scope")
    if scope not in SCOPES:
        raise pytest.UsageError(f"fakekey_scope must be one of {', '.join(SCOPES)}, not {scope!r}")
    try:
        config.stash[_TARGETS] = parse_targets(spec)
    except ValueError as err:
        raise pytest.UsageError(str(err)) from None
    config.stash[_POOL] = ServerPool(scope)
    config.stash[_CLUSTERS] = ClusterPool()
    # async fixtures are pytest-asyncio's when it runs in this session, plain ones otherwise
    async_clients = asyncio_clients() if config.pluginmanager.hasplugin("asyncio") else PlainAsyncClients()
    config.pluginmanager.register(async_clients, "fakekey-async-clients")


def pytest_unconfigure(config: pytest.Config) -> None:
    pool = config.stash.get(_POOL, None)
    if pool is not None:
        pool.close()
    clusters = config.stash.get(_CLUSTERS, None)
    if clusters is not None:
        clusters.close()


def pytest_report_header(config: pytest.Config) -> str:
    pool = config.stash[_POOL]
    targets: list[str] = config.stash[_TARGETS]
    return f"fakekey: target {', '.join(targets)}, scope {pool.scope}"


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """With several targets, each test that uses the fixtures runs once per target."""
    targets = metafunc.config.stash[_TARGETS]
    if "fakekey_target" in metafunc.fixturenames and len(targets) > 1:
        metafunc.parametrize("fakekey_target", targets, ids=[target_id(t) for t in targets],
                             indirect=True)


# --- servers -----------------------------------------------------------------------------


@pytest.fixture
def fakekey_target(request: pytest.FixtureRequest) -> str:
    """The target this test runs on: `fakekey`, `valkey`, or the URL."""
    return getattr(request, "param", None) or request.config.stash[_TARGETS][0]


@pytest.fixture
def fakekey_running(request: pytest.FixtureRequest, fakekey_target: str) -> Iterator[RunningServer]:
    """This test's server (any target), started or emptied for it."""
    pool = request.config.stash[_POOL]
    marker = request.node.get_closest_marker("fakekey")
    settings = dict(marker.kwargs) if marker else {}
    fakekey_only = request.node.get_closest_marker("fakekey_only") is not None
    not_fakekey = f"needs fakekey (target: {target_id(fakekey_target)})"
    if fakekey_only and fakekey_target == "valkey":
        pytest.skip(not_fakekey)  # before starting a server for nothing
    running, own = _server_or_skip(lambda: pool.for_test(fakekey_target, settings))
    try:
        if fakekey_only and not running.is_fakekey:  # a URL target may be fakekey
            pytest.skip(not_fakekey)
        yield running
    finally:
        if own:
            running.stop()


def _server_or_skip(start: Callable[[], T]) -> T:
    """start(): a server for the test; a target that cannot serve it skips the test, and
    settings no server takes fail it (on every target: they are the test's mistake)."""
    try:
        return start()
    except TargetSkip as reason:
        pytest.skip(str(reason))
    except SettingsError as err:
        failure = str(err)
    pytest.fail(failure, pytrace=False)  # out of the except: no chained traceback to read


@pytest.fixture
def fakekey_server(fakekey_running: RunningServer) -> Server | RunningServer:
    """This test's server: a `fakekey.Server` on the fakekey target (clock, settings, the
    Python API); elsewhere a handle with `host`, `port`, `url`, `password`."""
    return fakekey_running.server or fakekey_running


@pytest.fixture(scope="session")
def fakekey_session_server() -> Iterator[Server]:
    """One fakekey server shared by the whole session (not emptied between tests)."""
    with Server() as server:
        yield server


@pytest.fixture
def fakekey_factory(request: pytest.FixtureRequest,
                    fakekey_target: str) -> Iterator[Callable[..., Server | RunningServer]]:
    """`fakekey_factory(**settings)` starts another server on this test's target (several
    nodes, another configuration); all are stopped after the test."""
    pool = request.config.stash[_POOL]
    started: list[RunningServer] = []

    def start(**settings: Any) -> Server | RunningServer:
        running = _server_or_skip(lambda: pool.dedicated(fakekey_target, settings))
        started.append(running)
        return running.server or running

    yield start
    for running in started:
        running.stop()


@pytest.fixture
def fakekey_clock(fakekey_running: RunningServer) -> Iterator[Server]:
    """The test's fakekey server with its clock frozen at the current time: `advance(seconds=,
    ms=)`, `freeze(at=)`, `with frozen(at=):`, `real_time()`. Skipped on other targets."""
    server = fakekey_running.server
    if server is None:
        pytest.skip(f"the clock needs fakekey (target: {target_id(fakekey_running.target)})")
    server.freeze()
    yield server
    server.real_time()


@pytest.fixture
def fakekey_faults(fakekey_running: RunningServer) -> Iterator[ServerFaults]:
    """The test's fakekey server's faults (`Server.faults`, docs/faults.md): `error()`,
    `delay()`, `drop()`, `network_down()`...; all reset after the test (rules, latency, the
    network, the seed). Skipped on other targets."""
    server = fakekey_running.server
    if server is None:
        pytest.skip(f"faults need fakekey (target: {target_id(fakekey_running.target)})")
    yield server.faults
    server.faults.reset()


@pytest.fixture
def fakekey_cluster(request: pytest.FixtureRequest, fakekey_target: str) -> Iterator[Any]:
    """This test's cluster (docs/cluster.md): a fresh `fakekey.Cluster` on the fakekey
    target (its clock, kill, failover, partition...), a real Valkey cluster on the valkey
    target (shared, emptied between tests). 3 primaries with a replica each, or as the
    `fakekey_cluster(primaries=, replicas=, **settings)` marker says."""
    marker = request.node.get_closest_marker("fakekey_cluster")
    options = dict(marker.kwargs) if marker else {}
    primaries, replicas = options.pop("primaries", 3), options.pop("replicas", 1)
    pool = request.config.stash[_CLUSTERS]
    cluster, own = _server_or_skip(lambda: pool.for_test(fakekey_target, primaries, replicas, options))
    try:
        yield cluster
    finally:
        if own:
            cluster.stop()


@pytest.fixture
def fakekey_cluster_client(request: pytest.FixtureRequest, fakekey_cluster: Any) -> Iterator[Any]:
    """A `redis.cluster.RedisCluster` on this test's cluster (options from the
    `fakekey_client` marker)."""
    marker = request.node.get_closest_marker("fakekey_client")
    client = cluster_client(fakekey_cluster, **(dict(marker.kwargs) if marker else {}))
    yield client
    client.close()


@pytest.fixture
def fakekey_no_lost_wakes(fakekey_running: RunningServer) -> LostWakeGuard:
    """Fails the test, after its body, when a wake was lost on its server (an EMQ claimable
    transition that pushed no token while a client was parked on the queue's wake list;
    docs/emq.md). The detector is emptied when the test starts. On a target that is not
    fakekey it checks nothing."""
    return LostWakeGuard(fakekey_running)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Any:
    """A test that asked for `fakekey_no_lost_wakes` and passed is checked for lost wakes:
    a lost wake fails the test itself (not its teardown)."""
    result = yield
    guard = getattr(item, "funcargs", {}).get("fakekey_no_lost_wakes")
    if isinstance(guard, LostWakeGuard):
        guard.check()
    return result


# --- clients -----------------------------------------------------------------------------


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


def _valkey_module(name: str) -> Any:
    """The `valkey` package's module, or a skip saying how to get it."""
    try:
        return __import__(name, fromlist=["_"])
    except ImportError:
        pytest.skip("the valkey package is not installed (pip install valkey)")


@pytest.fixture
def fakekey_client(request: pytest.FixtureRequest, fakekey_running: RunningServer) -> Iterator[Any]:
    """A `redis.Redis` on this test's server."""
    import redis

    client = redis.Redis(**client_options(request, fakekey_running))
    yield client
    client.close()


@pytest.fixture
def fakekey_valkey_client(request: pytest.FixtureRequest,
                          fakekey_running: RunningServer) -> Iterator[Any]:
    """A `valkey.Valkey` on this test's server (skipped when `valkey` is not installed)."""
    valkey = _valkey_module("valkey")
    client = valkey.Valkey(**client_options(request, fakekey_running))
    yield client
    client.close()


def _async_redis_class() -> Any:
    import redis.asyncio

    return redis.asyncio.Redis


def _async_valkey_class() -> Any:
    return _valkey_module("valkey.asyncio").Valkey


def close_async_client_later(client: Any) -> None:
    """Close an async client outside any loop (no pytest-asyncio): its connections belong
    to the loop the test ran, so they are closed on a new loop when they can be, and left
    to the garbage collector when that loop is gone."""
    with contextlib.suppress(Exception):
        asyncio.run(_aclose(client))


async def _aclose(client: Any) -> None:
    close = getattr(client, "aclose", None) or client.close
    await close()


class PlainAsyncClients:
    """The async client fixtures without pytest-asyncio: the client is made here and
    connects in whatever loop uses it (`asyncio.run`, anyio, ...)."""

    @pytest.fixture
    def fakekey_async_client(self, request: pytest.FixtureRequest,
                             fakekey_running: RunningServer) -> Iterator[Any]:
        """A `redis.asyncio.Redis` on this test's server."""
        client = _async_redis_class()(**client_options(request, fakekey_running))
        yield client
        close_async_client_later(client)

    @pytest.fixture
    def fakekey_async_valkey_client(self, request: pytest.FixtureRequest,
                                    fakekey_running: RunningServer) -> Iterator[Any]:
        """A `valkey.asyncio.Valkey` on this test's server (skipped without `valkey`)."""
        client = _async_valkey_class()(**client_options(request, fakekey_running))
        yield client
        close_async_client_later(client)


def asyncio_clients() -> object:
    """The async client fixtures for pytest-asyncio: async fixtures, closed in the test's loop."""
    import pytest_asyncio

    class AsyncioClients:
        @pytest_asyncio.fixture(loop_scope="function")
        async def fakekey_async_client(self, request: pytest.FixtureRequest,
                                       fakekey_running: RunningServer) -> AsyncIterator[Any]:
            """A `redis.asyncio.Redis` on this test's server."""
            client = _async_redis_class()(**client_options(request, fakekey_running))
            yield client
            await _aclose(client)

        @pytest_asyncio.fixture(loop_scope="function")
        async def fakekey_async_valkey_client(self, request: pytest.FixtureRequest,
                                              fakekey_running: RunningServer) -> AsyncIterator[Any]:
            """A `valkey.asyncio.Valkey` on this test's server (skipped without `valkey`)."""
            client = _async_valkey_class()(**client_options(request, fakekey_running))
            yield client
            await _aclose(client)

    return AsyncioClients()
