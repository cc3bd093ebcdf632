"""The pytest plugin's targets: a user's tests on fakekey, on a real valkey-server, on both,
or on a server given by URL; `fakekey_only`; isolation on a shared server."""

import pytest

from fakekey import Server
from fakekey.testing.targets import find_valkey_binary

pytest_plugins = ["pytester"]

needs_valkey = pytest.mark.skipif(find_valkey_binary() is None, reason="no valkey-server binary")

TARGET_PROBE = """
import pytest
from fakekey import Server

def test_where(fakekey_target, fakekey_server, fakekey_client):
    info = fakekey_client.info("server")
    assert ("fakekey_version" in info) == (fakekey_target == "fakekey")
    assert isinstance(fakekey_server, Server) == (fakekey_target == "fakekey")
    assert fakekey_client.ping() is True

@pytest.mark.fakekey_only
def test_only_on_fakekey(fakekey_client):
    assert fakekey_client.execute_command("FAKEKEY.CLOCK", "GET") > 0

def test_without_the_plugin():
    pass
"""


INI = "[pytest]\nasyncio_default_fixture_loop_scope = function\n"


@pytest.fixture(autouse=True)
def user_project(pytester, monkeypatch):
    """A user's project: no target from outside; its ini sets pytest-asyncio's loop scope."""
    monkeypatch.delenv("FAKEKEY_TARGET", raising=False)
    pytester.makeini(INI)


def test_default_target_is_a_fresh_fakekey_per_test(pytester):
    pytester.makepyfile(TARGET_PROBE)
    result = pytester.runpytest("-v")
    result.assert_outcomes(passed=3)
    result.stdout.fnmatch_lines(["*fakekey: target fakekey, scope function*",
                                 "*::test_where PASSED*", "*::test_only_on_fakekey PASSED*"])


@needs_valkey
def test_both_runs_each_test_on_each_target_with_ids(pytester):
    pytester.makepyfile(TARGET_PROBE)
    result = pytester.runpytest("-v", "-rs", "--fakekey-target", "both")
    result.assert_outcomes(passed=4, skipped=1)
    result.stdout.fnmatch_lines_random([
        "*::test_where?fakekey? PASSED*",
        "*::test_where?valkey? PASSED*",
        "*::test_only_on_fakekey?fakekey? PASSED*",
        "*::test_only_on_fakekey?valkey? SKIPPED*",
        "*::test_without_the_plugin PASSED*",
        "SKIPPED*needs fakekey (target: valkey)*",
    ])


@needs_valkey
def test_target_from_the_environment_and_the_ini_file(pytester, monkeypatch):
    pytester.makepyfile(TARGET_PROBE)
    pytester.makeini(INI + "fakekey_target = fakekey\n")
    monkeypatch.setenv("FAKEKEY_TARGET", "valkey")
    result = pytester.runpytest()
    result.assert_outcomes(passed=2, skipped=1)
    monkeypatch.delenv("FAKEKEY_TARGET")
    pytester.makeini(INI + "fakekey_target = valkey\n")
    pytester.runpytest().assert_outcomes(passed=2, skipped=1)


def test_url_target_is_shared_and_emptied_between_tests(pytester):
    pytester.makepyfile("""
        import pytest

        def test_fill(fakekey_client):
            fakekey_client.set("k", "v")
            fakekey_client.function_load(
                "#!lua name=lib\\nserver.register_function('f', function() return 1 end)")
            fakekey_client.script_load("return 2")

        def test_empty(fakekey_target, fakekey_client):
            assert fakekey_target.startswith("redis://")
            assert fakekey_client.dbsize() == 0
            assert fakekey_client.function_list() == []
            assert fakekey_client.script_exists("e0e1f9fabfc9d4800c877a703b823ac0578ff8db") == [False]

        @pytest.mark.fakekey_only  # the URL's server is a fakekey: it runs
        def test_fakekey_only(fakekey_client):
            assert fakekey_client.execute_command("FAKEKEY.CLOCK", "GET") > 0
        """)
    with Server(requirepass="secret") as server:
        url = f"redis://:secret@{server.host}:{server.port}"
        result = pytester.runpytest("-p", "no:randomly", "--fakekey-target", url)
        result.assert_outcomes(passed=3)


def test_url_target_refuses_per_test_settings(pytester):
    pytester.makepyfile("""
        import pytest

        @pytest.mark.fakekey(maxclients=10)
        def test_settings(fakekey_client):
            pass

        def test_clock(fakekey_clock):  # a fakekey by URL: FAKEKEY.CLOCK (test_plugin_clock.py)
            fakekey_clock.advance(ms=5)
        """)
    with Server() as server:
        result = pytester.runpytest("-rs", "--fakekey-target", server.url)
    result.assert_outcomes(skipped=1, passed=1)
    result.stdout.fnmatch_lines(["*cannot start a server with its own settings on a URL target*"])


def test_unknown_target_is_a_usage_error(pytester):
    pytester.makepyfile(TARGET_PROBE)
    result = pytester.runpytest("--fakekey-target", "memcached")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*unknown fakekey target 'memcached'*"])
