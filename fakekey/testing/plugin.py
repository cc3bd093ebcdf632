"""The pytest plugin (entry point `fakekey`): servers and clients for a project's own tests,
on fakekey, on a real valkey-server, or on both. The reference is docs/pytest.md.

    def test_cache(fakekey_client):            # a redis.Redis bound to this test's server
        fakekey_client.set("k", "v", ex=10)

    def test_expiry(fakekey_clock, fakekey_client):
        fakekey_clock.advance(seconds=1)       # fakekey: at once; a real Valkey: a 1 s sleep

    def test_retry(fakekey_faults, fakekey_client):
        fakekey_faults.drop("get", times=1)    # the next GET's connection drops (docs/faults.md)

EMQ queues: `fakekey_no_lost_wakes` fails a test that loses a wake (fakekey/testing/wakes.py
has `assert_no_lost_wakes(server_or_client)` for any point of a test).

Clusters: `fakekey_cluster` (a fakekey.Cluster, or a real Valkey cluster on the valkey
target) and `fakekey_cluster_client` (a RedisCluster on it); docs/cluster.md.

Options: `--fakekey-target fakekey|valkey|valkey-cluster|both|URL` (or FAKEKEY_TARGET, or the ini option
`fakekey_target`), `--fakekey-scope function|session` (or `fakekey_scope`),
`fakekey_frozen_guard` and `fakekey_clock_sleep_cap` (ini; fakekey/testing/clocks.py).

Async clients follow the test's event loop under pytest-asyncio (fakekey/testing/async_clients.py).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import pytest

from fakekey.net.faults import ServerFaults
from fakekey.net.server import Server
from fakekey.testing.clients import client_options, plain_async_client, valkey_module
from fakekey.testing.clocks import (
    GUARD_SECONDS,
    SLEEP_CAP_SECONDS,
    FrozenClockGuard,
    RemoteClock,
    SleepingClock,
    clock_settings,
)
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
    "fakekey_clock(guard=10, sleep_cap=2): the frozen clock's wall-clock guard (s, 0: none) "
    "and the longest advance a real Valkey sleeps for (s)",
)
SCOPES = ("function", "session")
T = TypeVar("T")
_POOL = pytest.StashKey[ServerPool]()
_CLUSTERS = pytest.StashKey[ClusterPool]()
_TARGETS = pytest.StashKey[list[str]]()
_GUARD = pytest.StashKey[FrozenClockGuard]()


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
    parser.addini("fakekey_frozen_guard", "seconds a client may stay blocked under a frozen "
                  "fakekey clock before its test fails (0: no guard)", default=str(GUARD_SECONDS))
    parser.addini("fakekey_clock_sleep_cap", "the longest fakekey_clock.advance() that sleeps "
                  "on a real Valkey (s); a longer one skips the test", default=str(SLEEP_CAP_SECONDS))


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
    if config.pluginmanager.hasplugin("asyncio"):
        from fakekey.testing import async_clients  # imports pytest_asyncio

        config.pluginmanager.register(async_clients, "fakekey-async-clients")
    else:
        config.pluginmanager.register(PlainAsyncClients(), "fakekey-async-clients")


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
    guard = None
    try:
        if fakekey_only and not running.is_fakekey:  # a URL target may be fakekey
            pytest.skip(not_fakekey)
        if running.server is not None:
            guard = FrozenClockGuard(running.server, clock_settings(request).guard).start()
            request.node.stash[_GUARD] = guard
        yield running
    finally:
        if guard is not None:
            guard.stop()
        if own:
            running.stop()
        elif running.is_fakekey:  # a shared server: real time again, however it was frozen
            restore_real_clock(running)


def restore_real_clock(running: RunningServer) -> None:
    if running.server is not None:
        running.server.real_time()
        return
    with contextlib.suppress(ValueError, OSError):  # FAKEKEY.* off, or the server is gone
        RemoteClock(running).real_time()


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
def fakekey_clock(request: pytest.FixtureRequest, fakekey_running: RunningServer) -> Iterator[Any]:
    """The test's server's clock, frozen at the current time: `advance(seconds=, ms=)`,
    `freeze(at=)`, `with frozen(at=):`, `real_time()`, `time_ms()`. The `fakekey.Server`
    in-process, FAKEKEY.CLOCK on a URL target that is a fakekey; on a real Valkey the clock
    runs on: a short advance sleeps, a longer one or a freeze skips the test
    (fakekey/testing/clocks.py)."""
    settings = clock_settings(request, getattr(request, "param", None))
    guard = request.node.stash.get(_GUARD, None)
    if guard is not None:
        guard.seconds = settings.guard  # the fixture's own parameter, if any
    if not fakekey_running.is_fakekey:
        yield SleepingClock(fakekey_running, settings.sleep_cap)
        return
    clock = fakekey_running.server or RemoteClock(fakekey_running)
    clock.freeze()
    yield clock
    clock.real_time()


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
    clock_guard = item.stash.get(_GUARD, None)
    try:
        result = yield
    except BaseException:
        if clock_guard is None or not clock_guard.trips:
            raise
    # a wait the frozen clock's guard ended fails the test with the guard's message (not
    # the client's error it caused), also when the test caught that error
    if clock_guard is not None and clock_guard.trips:
        pytest.fail("fakekey: " + "; ".join(clock_guard.trips), pytrace=False)
    guard = getattr(item, "funcargs", {}).get("fakekey_no_lost_wakes")
    if isinstance(guard, LostWakeGuard):
        guard.check()
    return result


# --- clients -----------------------------------------------------------------------------


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
    valkey = valkey_module("valkey")
    client = valkey.Valkey(**client_options(request, fakekey_running))
    yield client
    client.close()


class PlainAsyncClients:
    """The async client fixtures without pytest-asyncio: the client is made here and
    connects in whatever loop uses it (`asyncio.run`, anyio, ...)."""

    @pytest.fixture
    def fakekey_async_client(self, request: pytest.FixtureRequest,
                             fakekey_running: RunningServer) -> Any:
        """A `redis.asyncio.Redis` on this test's server."""
        return plain_async_client(request, fakekey_running, "redis")

    @pytest.fixture
    def fakekey_async_valkey_client(self, request: pytest.FixtureRequest,
                                    fakekey_running: RunningServer) -> Any:
        """A `valkey.asyncio.Valkey` on this test's server (skipped without `valkey`)."""
        return plain_async_client(request, fakekey_running, "valkey")
