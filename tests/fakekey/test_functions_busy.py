"""Long functions: BUSY replies past busy-reply-threshold, FUNCTION KILL, UNKILLABLE, the
cross errors with SCRIPT KILL and EVAL, FUNCTION STATS while a function runs. Each test has
a private server with a 50 ms threshold; the texts are Valkey 9.1's (checked against a real
server, where these take a server that must be shut down, hence fakekey-only here)."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from fakekey.net.server import Server
from fakekey.testing.raw import Background, RawClient, wait_until_reply

BUSY_FUNCTION = ("-", b"BUSY Valkey is busy running a script. You can only call FUNCTION KILL or SHUTDOWN NOSAVE.")
BUSY_EVAL = ("-", b"BUSY Valkey is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.")
UNKILLABLE = ("-", b"UNKILLABLE Sorry the script already executed write commands against the dataset. "
                   b"You can either wait the script termination or kill the server in a hard way using "
                   b"the SHUTDOWN NOSAVE command.")
NOTBUSY = ("-", b"NOTBUSY No scripts in execution right now.")


def killed(line: int) -> tuple[str, bytes]:
    return ("-", b"ERR Script killed by user with FUNCTION KILL. script: on @user_function:%d." % line)


LIBRARY = """#!lua name=busy
redis.register_function('spin', function(keys, args) while true do end end)
redis.register_function{function_name='rospin', callback=function() while true do end end, flags={'no-writes'}}
redis.register_function('pcall_spin', function() while true do pcall(function() while true do end end) end end)
redis.register_function('write_then_wait', function(keys, args)
  redis.call('set', keys[1], 'written')
  local t = os.clock() while os.clock() - t < tonumber(args[1]) do end
  return redis.call('get', keys[1])
end)
redis.register_function('count', function(keys, args)
  local x = 0 for i = 1, tonumber(args[1]) do x = x + 1 end return x
end)
"""


@pytest.fixture
def server() -> Iterator[Server]:
    with Server(busy_reply_threshold=50) as srv:
        yield srv


@pytest.fixture
def other(server: Server) -> Iterator[RawClient]:
    client = RawClient(server.host, server.port)
    assert client.call("FUNCTION", "LOAD", LIBRARY) == ("$", b"busy")
    yield client
    client.close()


def wait_busy(client: RawClient, busy: tuple[str, bytes] = BUSY_FUNCTION) -> None:
    wait_until_reply(client, busy)


def test_busy_function_then_function_kill(server, other):
    assert other.call("FUNCTION", "KILL") == NOTBUSY
    function = Background(server.host, server.port, ("FCALL", "spin", 1, "k", "a"), ("PING",))
    wait_busy(other)
    assert other.call("GET", "k") == BUSY_FUNCTION
    assert other.call("FUNCTION", "LIST") == BUSY_FUNCTION
    assert other.call("FCALL", "count", 0, 1) == BUSY_FUNCTION
    assert other.call("SCRIPT", "KILL") == BUSY_FUNCTION  # SCRIPT KILL is for EVAL
    assert other.call("MULTI") == ("+", b"OK")
    assert other.call("GET", "k") == BUSY_FUNCTION
    assert other.call("EXEC") == ("-", b"EXECABORT Transaction discarded because of: " + BUSY_FUNCTION[1])
    assert other.call("FUNCTION", "KILL") == ("+", b"OK")
    # the caller gets the kill error, then what it pipelined behind the function
    assert function.join() == [killed(2), ("+", b"PONG")]
    assert other.call("FUNCTION", "KILL") == NOTBUSY
    assert other.call("FCALL", "count", 0, 3) == (":", 3)


def test_function_stats_while_a_function_runs(server, other):
    function = Background(server.host, server.port, ("FCALL_RO", "rospin", 1, "k", "a1"))
    wait_busy(other)
    time.sleep(0.05)
    kind, fields = other.call("FUNCTION", "STATS")
    assert kind == "*"
    assert fields[0] == ("$", b"running_script")
    running = fields[1][1]
    assert running[:4] == [("$", b"name"), ("$", b"rospin"), ("$", b"command"),
                           ("*", [("$", b"FCALL_RO"), ("$", b"rospin"), ("$", b"1"), ("$", b"k"), ("$", b"a1")])]
    assert running[4] == ("$", b"duration_ms") and running[5][0] == ":" and running[5][1] >= 50
    assert fields[2:] == [("$", b"engines"), ("*", [("$", b"LUA"), (
        "*", [("$", b"libraries_count"), (":", 1), ("$", b"functions_count"), (":", 5)])])]
    resp3 = RawClient(server.host, server.port)
    resp3.call("HELLO", "3")
    kind, fields = resp3.call("FUNCTION", "STATS")
    assert kind == "%" and fields[0][1][0] == "%"
    assert fields[0][1][1][0] == (("$", b"name"), ("$", b"rospin"))
    resp3.close()
    assert other.call("FUNCTION", "KILL") == ("+", b"OK")
    assert function.join() == [killed(3)]


def test_cross_kills_between_eval_and_functions(server, other):
    script = Background(server.host, server.port, ("EVAL", "while true do end", 0))
    wait_busy(other, BUSY_EVAL)
    assert other.call("FUNCTION", "KILL") == BUSY_EVAL
    assert other.call("FUNCTION", "STATS") == BUSY_EVAL
    assert other.call("SCRIPT", "KILL") == ("+", b"OK")
    assert script.join() == [("-", b"ERR Script killed by user with SCRIPT KILL. script: on @user_script:1.")]


def test_pcall_cannot_swallow_the_kill(server, other):
    function = Background(server.host, server.port, ("FCALL", "pcall_spin", 0))
    wait_busy(other)
    assert other.call("FUNCTION", "KILL") == ("+", b"OK")
    assert function.join() == [killed(4)]


def test_unkillable_after_a_write(server, other):
    function = Background(server.host, server.port, ("FCALL", "write_then_wait", 1, "k", "0.3"))
    wait_busy(other)
    assert other.call("FUNCTION", "KILL") == UNKILLABLE
    assert other.call("SCRIPT", "KILL") == UNKILLABLE
    assert function.join() == [("$", b"written")]
    assert other.call("GET", "k") == ("$", b"written")


def test_a_quick_function_that_turns_slow_still_goes_busy(server, other):
    for _ in range(3):  # quick runs: from the second one on, it runs on the loop thread
        assert other.call("FCALL", "count", 0, 10) == (":", 10)
    function = Background(server.host, server.port, ("FCALL", "count", 0, "1e15"))
    wait_busy(other)
    assert other.call("FUNCTION", "KILL") == ("+", b"OK")
    assert function.join() == [killed(11)]


def test_log_at_load_time(server, other):
    # Valkey 9.1.2 asserts (and crashes) on server.log while FUNCTION LOAD runs; fakekey logs
    code = "#!lua name=logs\nredis.log(redis.LOG_WARNING, 'loading')\nredis.register_function('logs', function() end)"
    assert other.call("FUNCTION", "LOAD", code) == ("$", b"logs")
