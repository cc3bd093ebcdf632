"""The pytest plugin's fixtures: per-test settings (`@pytest.mark.fakekey`), more servers
(`fakekey_factory`), and the clients (redis and valkey, sync and async, options by marker
or indirect parametrization), with and without pytest-asyncio."""

import socket
import sys

import pytest

from fakekey.net.server import Server
from fakekey.testing.targets import find_valkey_binary

pytest_plugins = ["pytester"]

needs_valkey = pytest.mark.skipif(find_valkey_binary() is None, reason="no valkey-server binary")
INI = "[pytest]\nasyncio_default_fixture_loop_scope = function\n"


@pytest.fixture(autouse=True)
def user_project(pytester, monkeypatch, earlier_garbage_collected):
    """A user's project: no target from outside; its ini sets pytest-asyncio's loop scope."""
    monkeypatch.delenv("FAKEKEY_TARGET", raising=False)
    pytester.makeini(INI)


SETTINGS = """
import pytest
import redis
from fakekey.testing.raw import RawClient

@pytest.mark.fakekey(requirepass="pw", notify_keyspace_events="KEA", maxmemory_policy="allkeys-lru")
def test_settings_apply_and_the_client_authenticates(fakekey_server, fakekey_client):
    assert fakekey_client.config_get("notify-keyspace-events") == {"notify-keyspace-events": "AKE"}
    assert fakekey_client.config_get("maxmemory-policy") == {"maxmemory-policy": "allkeys-lru"}
    with RawClient(fakekey_server.host, fakekey_server.port) as anonymous:
        assert anonymous.call("PING") == ("-", b"NOAUTH Authentication required.")

@pytest.mark.fakekey(enable_fakekey_commands=False)
def test_a_fakekey_setting(fakekey_client):
    with pytest.raises(redis.ResponseError, match="unknown command 'FAKEKEY.CLOCK'"):
        fakekey_client.execute_command("FAKEKEY.CLOCK", "GET")

@pytest.mark.fakekey(dynamic_hz="yes")
def test_a_deprecated_setting_is_ignored(fakekey_client):
    assert fakekey_client.config_get("dynamic-hz") == {}

def test_the_next_test_has_the_defaults(fakekey_client):
    assert fakekey_client.config_get("notify-keyspace-events") == {"notify-keyspace-events": ""}
"""


@needs_valkey
def test_settings_marker_on_both_targets(pytester):
    pytester.makepyfile(SETTINGS)
    result = pytester.runpytest("-v", "-rs", "--fakekey-target", "both")
    result.assert_outcomes(passed=7, skipped=1)
    result.stdout.fnmatch_lines_random([
        "*test_settings_apply_and_the_client_authenticates?valkey? PASSED*",
        "*test_a_fakekey_setting?valkey? SKIPPED*",
        "SKIPPED*fakekey's own settings, which valkey-server has not: enable_fakekey_commands=False*",
    ])


WRONG_SETTINGS = """
import pytest

@pytest.mark.fakekey(maxmemory_polcy="allkeys-lru")
def test_a_typo(fakekey_client):
    pass

@pytest.mark.fakekey(maxmemory_policy="nope")
def test_a_bad_value(fakekey_client):
    pass

def test_a_typo_in_the_factory(fakekey_factory):
    fakekey_factory(maxmemroy="1mb")
"""
TYPO = ("unknown setting maxmemory_polcy='allkeys-lru': Valkey 9.1.2 has no setting "
        "maxmemory-polcy; did you mean maxmemory_policy?")
FACTORY_TYPO = ("unknown setting maxmemroy='1mb': Valkey 9.1.2 has no setting maxmemroy; "
                "did you mean maxmemory?")


@needs_valkey
def test_settings_valkey_has_not_fail_on_every_target(pytester):
    """A typo is the test's error on fakekey and on valkey alike (never a skip), and says
    which setting and which value; so is a value the target refuses."""
    pytester.makepyfile(WRONG_SETTINGS)
    result = pytester.runpytest("--fakekey-target", "both")
    result.assert_outcomes(errors=4, failed=2)
    result.stdout.fnmatch_lines([
        "*ERROR at setup of test_a_typo?fakekey?*", TYPO,
        "*ERROR at setup of test_a_typo?valkey?*", TYPO,
        "*ERROR at setup of test_a_bad_value?fakekey?*",
        "fakekey refused the settings: maxmemory_policy='nope': argument(s) must be one of the "
        "following: volatile-lru, *",
        "*ERROR at setup of test_a_bad_value?valkey?*",
        "valkey-server refused the settings {'maxmemory_policy': 'nope'}: >>> 'maxmemory-policy "
        "\"nope\"' argument(s) must be one of the following: volatile-lru, *",
        "*test_a_typo_in_the_factory?fakekey?*", FACTORY_TYPO,
        "*test_a_typo_in_the_factory?valkey?*", FACTORY_TYPO,
    ])


def test_a_typo_fails_on_a_url_target_too(pytester):
    """There a server with settings of its own cannot be started (a skip), but a name
    Valkey has not is still the test's error."""
    pytester.makepyfile(WRONG_SETTINGS)
    with Server() as server:
        result = pytester.runpytest("--fakekey-target", server.url)
    result.assert_outcomes(errors=1, failed=1, skipped=1)
    result.stdout.fnmatch_lines(["*ERROR at setup of test_a_typo *", TYPO, "*test_a_typo_in_the_factory*",
                                 FACTORY_TYPO])


FACTORY = """
import redis

def test_nodes(fakekey_factory, fakekey_server, tmp_path_factory):
    first = fakekey_factory()
    second = fakekey_factory(maxclients=50, requirepass="pw")
    assert len({first.port, second.port, fakekey_server.port}) == 3
    redis.Redis(host=first.host, port=first.port).set("k", "first")
    assert redis.Redis(host=fakekey_server.host, port=fakekey_server.port).get("k") is None
    other = redis.Redis(host=second.host, port=second.port, password="pw")
    assert other.config_get("maxclients") == {"maxclients": "50"}
    (tmp_path_factory.getbasetemp() / "ports").write_text(f"{first.port} {second.port}")
"""


@pytest.mark.parametrize("target", ["fakekey", pytest.param("valkey", marks=needs_valkey)])
def test_factory_starts_servers_and_stops_them_after_the_test(pytester, target):
    pytester.makepyfile(FACTORY)
    base = pytester.path / "base"
    pytester.runpytest("--fakekey-target", target, "--basetemp", str(base)).assert_outcomes(passed=1)
    for port in (base / "ports").read_text().split():
        with pytest.raises(ConnectionRefusedError):
            socket.create_connection(("127.0.0.1", int(port)), timeout=1).close()


CLIENTS = """
import pytest

def test_defaults(fakekey_client):
    fakekey_client.set("k", "v")
    assert fakekey_client.get("k") == b"v"

@pytest.mark.fakekey_client(decode_responses=True, protocol=3)
def test_marker_options(fakekey_client):
    fakekey_client.hset("h", "f", "v")
    assert fakekey_client.hgetall("h") == {"f": "v"}
    assert fakekey_client.client_info()["resp"] == "3"

@pytest.mark.parametrize("fakekey_client", [{"protocol": 2}, {"protocol": 3}], indirect=True,
                         ids=["resp2", "resp3"])
def test_indirect(fakekey_client):
    assert fakekey_client.client_info()["resp"] in ("2", "3")
    assert fakekey_client.connection_pool.connection_kwargs["protocol"] in (2, 3)

@pytest.mark.fakekey_client(decode_responses=True)
def test_valkey_client(fakekey_valkey_client):
    import valkey
    assert isinstance(fakekey_valkey_client, valkey.Valkey)
    fakekey_valkey_client.set("k", "v")
    assert fakekey_valkey_client.get("k") == "v"

@pytest.mark.asyncio
@pytest.mark.fakekey_client(protocol=3)
async def test_async_redis(fakekey_async_client):
    import redis.asyncio
    assert isinstance(fakekey_async_client, redis.asyncio.Redis)
    await fakekey_async_client.set("k", "v")
    assert await fakekey_async_client.get("k") == b"v"
    assert (await fakekey_async_client.client_info())["resp"] == "3"

@pytest.mark.asyncio
async def test_async_valkey(fakekey_async_valkey_client):
    import valkey.asyncio
    assert isinstance(fakekey_async_valkey_client, valkey.asyncio.Valkey)
    await fakekey_async_valkey_client.rpush("l", "a", "b")
    assert await fakekey_async_valkey_client.lrange("l", 0, -1) == [b"a", b"b"]
"""


@pytest.mark.parametrize(("target", "runs"), [("fakekey", 1), pytest.param("both", 2, marks=needs_valkey)])
def test_clients_with_pytest_asyncio_in_strict_mode(pytester, target, runs):
    pytester.makepyfile(CLIENTS)
    result = pytester.runpytest("--fakekey-target", target, "-W", "error::ResourceWarning",
                                "-W", "error::pytest.PytestUnraisableExceptionWarning")
    result.assert_outcomes(passed=7 * runs)


def test_async_clients_without_pytest_asyncio(pytester):
    pytester.makeini("[pytest]\n")  # no asyncio option: the plugin is off in this run
    pytester.makepyfile("""
        import asyncio

        def test_redis(fakekey_async_client):
            async def scenario():
                await fakekey_async_client.set("k", "v")
                return await fakekey_async_client.get("k")
            assert asyncio.run(scenario()) == b"v"

        def test_valkey(fakekey_async_valkey_client):
            async def scenario():
                await fakekey_async_valkey_client.incr("n")
                return await fakekey_async_valkey_client.incr("n")
            assert asyncio.run(scenario()) == 2
        """)
    result = pytester.runpytest("-p", "no:asyncio")
    result.assert_outcomes(passed=2)


def test_valkey_clients_skip_with_a_reason_when_valkey_is_missing(pytester, monkeypatch):
    monkeypatch.setitem(sys.modules, "valkey", None)  # as if the package were not installed
    monkeypatch.setitem(sys.modules, "valkey.asyncio", None)
    pytester.makepyfile("""
        import pytest

        def test_sync(fakekey_valkey_client):
            pass

        @pytest.mark.asyncio
        async def test_async(fakekey_async_valkey_client):
            pass
        """)
    result = pytester.runpytest("-rs")
    result.assert_outcomes(skipped=2)
    result.stdout.fnmatch_lines(["*the valkey package is not installed (pip install valkey)*"])
