"""The async client fixtures follow the test's event loop under every pytest-asyncio
setup: each loop scope (function, class, module, package, session), from the marker or
from `asyncio_default_test_loop_scope`, in strict and auto mode, whatever
`asyncio_default_fixture_loop_scope` says. Each case runs a small project with pytester:
two tests per file (a session or module loop is shared), closed without a warning."""

import pytest

pytest_plugins = ["pytester"]

LOOP_SCOPES = ["function", "class", "module", "package", "session"]
STRICT_ERRORS = ("-W", "error::ResourceWarning", "-W", "error::pytest.PytestUnraisableExceptionWarning")

TESTS = """
import asyncio
import pytest

{mark}
class TestInOneClass:
    {method_mark}
    async def test_first(self, fakekey_async_client, fakekey_async_valkey_client):
        await fakekey_async_client.set("k", "v")
        assert await fakekey_async_valkey_client.get("k") == b"v"
        # a blocking command's connection belongs to this loop too
        assert await fakekey_async_client.blpop(["nothing"], timeout=0.01) is None

    {method_mark}
    async def test_second(self, fakekey_async_client):
        assert await fakekey_async_client.get("k") is None
        await fakekey_async_client.rpush("l", "a")
        assert await fakekey_async_client.lrange("l", 0, -1) == [b"a"]
"""


@pytest.fixture(autouse=True)
def user_project(monkeypatch, earlier_garbage_collected):
    monkeypatch.delenv("FAKEKEY_TARGET", raising=False)


def project(pytester, ini: str, mark: str = "", method_mark: str = "") -> None:
    pytester.makeini("[pytest]\n" + ini)
    package = pytester.mkpydir("suite")  # the package loop scope needs a package
    for name in ("test_a.py", "test_b.py"):
        (package / name).write_text(TESTS.format(mark=mark, method_mark=method_mark))


@pytest.mark.parametrize("scope", LOOP_SCOPES)
def test_strict_mode_with_the_marker(pytester, scope):
    project(pytester, "asyncio_default_fixture_loop_scope = function\n",
            method_mark=f"@pytest.mark.asyncio(loop_scope={scope!r})")
    result = pytester.runpytest("-p", "no:randomly", *STRICT_ERRORS)
    result.assert_outcomes(passed=4)


@pytest.mark.parametrize("scope", LOOP_SCOPES)
def test_auto_mode_with_the_default_test_loop_scope(pytester, scope):
    project(pytester, f"asyncio_mode = auto\nasyncio_default_test_loop_scope = {scope}\n"
            "asyncio_default_fixture_loop_scope = function\n")
    result = pytester.runpytest("-p", "no:randomly", *STRICT_ERRORS)
    result.assert_outcomes(passed=4)


@pytest.mark.parametrize(("test_scope", "fixture_scope"), [("function", "session"), ("session", "module")])
def test_the_default_fixture_loop_scope_does_not_matter(pytester, test_scope, fixture_scope):
    project(pytester, f"asyncio_default_fixture_loop_scope = {fixture_scope}\n"
            f"asyncio_default_test_loop_scope = {test_scope}\n", mark="@pytest.mark.asyncio")
    result = pytester.runpytest("-p", "no:randomly", *STRICT_ERRORS)
    result.assert_outcomes(passed=4)


def test_a_class_marker_gives_its_loop_scope(pytester):
    project(pytester, "asyncio_default_fixture_loop_scope = function\n",
            mark='@pytest.mark.asyncio(loop_scope="class")')
    result = pytester.runpytest("-p", "no:randomly", *STRICT_ERRORS)
    result.assert_outcomes(passed=4)


def test_a_sync_test_runs_its_own_loop(pytester):
    """With pytest-asyncio on, a sync test may still drive the client in `asyncio.run`."""
    pytester.makeini("[pytest]\nasyncio_mode = auto\nasyncio_default_fixture_loop_scope = function\n")
    pytester.makepyfile("""
        import asyncio

        def test_sync(fakekey_async_client):
            async def scenario():
                await fakekey_async_client.set("k", "v")
                return await fakekey_async_client.get("k")
            assert asyncio.run(scenario()) == b"v"
        """)
    pytester.runpytest(*STRICT_ERRORS).assert_outcomes(passed=1)
