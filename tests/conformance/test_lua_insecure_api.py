"""lua-enable-insecure-api: Valkey's protected, hidden setting that gives EVAL's scripts
getfenv, setfenv and newproxy; a CONFIG SET that changes it starts a new Lua state (the script
cache is emptied), and FUNCTION's libraries never get them."""

from __future__ import annotations

import pytest

NO_GETFENV = b"Script attempted to access nonexistent global variable 'getfenv'"
GETFENV_TYPE = "return type(getfenv)"


def error_text(reply) -> bytes:
    assert reply[0] == "-", reply
    return reply[1]


@pytest.fixture
def open_configs(private_target):
    server = private_target("--enable-protected-configs", "yes")
    client = server.raw(2)
    yield client
    client.close()


def test_off_by_default_and_hidden(r2):
    assert NO_GETFENV in error_text(r2.call("EVAL", GETFENV_TYPE, "0"))
    assert r2.call("CONFIG", "GET", "lua-enable-insecure-api") == (
        "*", [("$", b"lua-enable-insecure-api"), ("$", b"no")])
    assert r2.call("CONFIG", "GET", "*insecure*") == ("*", [])


def test_protected(r2):
    assert error_text(r2.call("CONFIG", "SET", "lua-enable-insecure-api", "yes")) == (
        b"ERR CONFIG SET failed (possibly related to argument 'lua-enable-insecure-api')"
        b" - can't set protected config")


def test_on_and_off_at_run_time(open_configs):
    r = open_configs
    assert r.call("CONFIG", "SET", "lua-enable-insecure-api", "yes") == ("+", b"OK")
    assert r.call("EVAL", "return {type(getfenv), type(setfenv), type(newproxy)}", "0") == (
        "*", [("$", b"function")] * 3)
    assert r.call("EVAL", "return tostring(getfenv() == _G)", "0") == ("$", b"true")
    assert r.call("EVAL", "return type(getmetatable(newproxy(true)))", "0") == ("$", b"table")
    assert r.call("CONFIG", "SET", "lua-enable-insecure-api", "no") == ("+", b"OK")
    assert NO_GETFENV in error_text(r.call("EVAL", GETFENV_TYPE, "0"))


def test_a_change_empties_the_script_cache(open_configs):
    r = open_configs
    sha = r.call("SCRIPT", "LOAD", "return 1")[1]
    r.call("CONFIG", "SET", "lua-enable-insecure-api", "no")  # no change: kept
    assert r.call("SCRIPT", "EXISTS", sha) == ("*", [(":", 1)])
    r.call("CONFIG", "SET", "lua-enable-insecure-api", "yes")
    assert r.call("SCRIPT", "EXISTS", sha) == ("*", [(":", 0)])


def test_functions_never_get_it(open_configs):
    r = open_configs
    r.call("CONFIG", "SET", "lua-enable-insecure-api", "yes")
    r.call("FUNCTION", "LOAD",
           "#!lua name=insecurelib\nserver.register_function('f', function() return type(getfenv) end)")
    assert NO_GETFENV in error_text(r.call("FCALL", "f", "0"))


def test_on_from_the_command_line(private_target):
    server = private_target("--lua-enable-insecure-api", "yes")
    client = server.raw(2)
    try:
        assert client.call("EVAL", GETFENV_TYPE, "0") == ("$", b"function")
    finally:
        client.close()
