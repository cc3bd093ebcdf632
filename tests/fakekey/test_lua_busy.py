"""Long scripts: BUSY replies past busy-reply-threshold, SCRIPT KILL, UNKILLABLE, SHUTDOWN
NOSAVE, and the run giving the event loop back at the threshold. Each test
has a private server with a 50 ms threshold; the texts are Valkey 9.1's (checked against a
real server)."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from fakekey.net.server import Server
from fakekey.testing.raw import Background, RawClient, wait_until_reply

BUSY = ("-", b"BUSY Valkey is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.")
KILLED = ("-", b"ERR Script killed by user with SCRIPT KILL. script: on @user_script:1.")
UNKILLABLE = ("-", b"UNKILLABLE Sorry the script already executed write commands against the dataset. "
                   b"You can either wait the script termination or kill the server in a hard way using "
                   b"the SHUTDOWN NOSAVE command.")
FOREVER = "while true do end"


@pytest.fixture
def server() -> Iterator[Server]:
    with Server(busy_reply_threshold=50) as srv:
        yield srv


@pytest.fixture
def other(server: Server) -> Iterator[RawClient]:
    client = RawClient(server.host, server.port)
    yield client
    client.close()


def wait_busy(client: RawClient) -> None:
    wait_until_reply(client, BUSY)


def assert_script_ended(server: Server, run: object) -> None:
    """The server stopped: its BUSY run ended with it, unanswered (nothing is left
    suspended to run later)."""
    assert server._stopped.wait(5)
    assert run.ended and run.aborted
    assert server.state.busy_script is None


def test_busy_then_script_kill(server, other):
    assert other.call("SCRIPT", "KILL") == ("-", b"NOTBUSY No scripts in execution right now.")
    script = Background(server.host, server.port, ("EVAL", FOREVER, 0), ("PING",))
    wait_busy(other)
    assert other.call("GET", "x") == BUSY
    assert other.call("NOSUCH") == ("-", b"ERR unknown command 'NOSUCH', with args beginning with: ")
    assert other.call("SCRIPT", "KILL") == ("+", b"OK")
    # the script's client gets the kill error, then what it pipelined behind the script
    assert script.join() == [KILLED, ("+", b"PONG")]
    assert other.call("PING") == ("+", b"PONG")


def test_pcall_cannot_swallow_the_kill(server, other):
    loops = [
        "while true do pcall(function() while true do end end) end",
        "local x = 0 while true do local ok = pcall(function() for i = 1, 1e9 do x = x + 1 end end) end",
        "while true do coroutine.wrap(function() while true do end end)() end",
    ]
    for loop in loops:
        script = Background(server.host, server.port, ("EVAL", loop, 0))
        wait_busy(other)
        assert other.call("SCRIPT", "KILL") == ("+", b"OK")
        assert script.join() == [KILLED], loop


def test_commands_allowed_while_busy(server, other):
    script = Background(server.host, server.port, ("EVAL", FOREVER, 0))
    wait_busy(other)
    kind, _ = other.call("HELLO", "3")
    assert kind == "%"
    assert other.call("CLIENT", "SETNAME", "busy-watcher") == ("+", b"OK")
    assert other.call("SELECT", "1") == ("+", b"OK")
    assert other.call("MULTI") == ("+", b"OK")
    assert other.call("GET", "x") == BUSY
    assert other.call("EXEC") == ("-", b"EXECABORT Transaction discarded because of: " + BUSY[1])
    assert other.call("EXEC") == ("-", b"EXECABORT Transaction discarded because of: " + BUSY[1])
    assert other.call("SHUTDOWN") == BUSY  # only SHUTDOWN NOSAVE may stop a busy server
    assert other.call("SCRIPT", "KILL") == ("+", b"OK")
    assert script.join() == [KILLED]
    assert other.call("CLIENT", "GETNAME") == ("$", b"busy-watcher")


def test_unkillable_after_a_write_then_shutdown_nosave(server, other):
    script = Background(server.host, server.port, ("EVAL", "redis.call('del', 'nokey') " + FOREVER, 0))
    wait_busy(other)
    run = server.state.busy_script
    assert other.call("SCRIPT", "KILL") == UNKILLABLE
    other.send("SHUTDOWN", "NOSAVE")
    replies = script.join()
    assert len(replies) == 1 and isinstance(replies[0], OSError), replies  # the server went away
    assert_script_ended(server, run)


def test_blocked_clients_are_served_after_the_busy_script(server, other):
    waiter = Background(server.host, server.port, ("BLPOP", "q", 5))
    time.sleep(0.05)
    busy_push = "redis.call('rpush', KEYS[1], 'a', 'b') local t = os.clock() while os.clock() - t < 0.3 do end " \
                "return redis.call('llen', KEYS[1])"
    script = Background(server.host, server.port, ("EVAL", busy_push, 1, "q"))
    wait_busy(other)
    assert other.call("SCRIPT", "KILL") == UNKILLABLE
    assert script.join() == [(":", 2)]  # nobody popped while the script ran
    assert waiter.join() == [("*", [("$", b"q"), ("$", b"a")])]
    assert other.call("LRANGE", "q", 0, -1) == ("*", [("$", b"b")])


def test_a_quick_script_that_turns_slow_still_goes_busy(server, other):
    count = "local n = tonumber(ARGV[1]) local x = 0 for i = 1, n do x = x + 1 end return x"
    for _ in range(3):  # quick runs first
        assert other.call("EVAL", count, 0, 10) == (":", 10)
    script = Background(server.host, server.port, ("EVAL", count, 0, "1e15"))
    wait_busy(other)
    assert other.call("SCRIPT", "KILL") == ("+", b"OK")
    assert script.join() == [KILLED]


def test_a_quick_script_that_wrote_is_never_run_twice(server, other):
    incr_then_wait = "redis.call('incr', KEYS[1]) local t = os.clock() " \
                     "while os.clock() - t < tonumber(ARGV[1]) do end return redis.call('get', KEYS[1])"
    for expected in (b"1", b"2", b"3"):
        assert other.call("EVAL", incr_then_wait, 1, "n", 0) == ("$", expected)
    # past the threshold after its write: it finishes where it is, exactly once
    assert other.call("EVAL", incr_then_wait, 1, "n", "0.2") == ("$", b"4")
    assert other.call("GET", "n") == ("$", b"4")
    # and again, with BUSY replies meanwhile
    script = Background(server.host, server.port, ("EVAL", incr_then_wait, 1, "n", "0.3"))
    wait_busy(other)
    assert script.join() == [("$", b"5")]


def test_a_slow_run_draws_the_same_random_numbers_as_a_quick_one(server, other):
    draw = "math.randomseed(tonumber(ARGV[2])) local r = math.random(1000000) " \
           "local t = os.clock() while os.clock() - t < tonumber(ARGV[1]) do end return r"
    expected = other.call("EVAL", draw, 0, 0, 7)
    other.call("EVAL", draw, 0, 0, 7)
    assert other.call("EVAL", draw, 0, "0.2", 7) == expected


def test_a_client_leaving_during_a_busy_script(server, other):
    leaver = RawClient(server.host, server.port)
    leaver.call("WATCH", "w")
    script = Background(server.host, server.port, ("EVAL", FOREVER, 0))
    wait_busy(other)
    leaver.close()
    time.sleep(0.05)
    assert other.call("SCRIPT", "KILL") == ("+", b"OK")
    assert script.join() == [KILLED]
    assert other.call("PING") == ("+", b"PONG")
    deadline = time.monotonic() + 2
    while len(server.state.clients) > 1 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert len(server.state.clients) == 1  # the leaver was forgotten once the script ended


def test_stopping_the_server_stops_its_busy_script():
    server = Server(busy_reply_threshold=50).start()
    script = Background(server.host, server.port, ("EVAL", "redis.call('set', 'k', 'v') " + FOREVER, 0))
    other = RawClient(server.host, server.port)
    wait_busy(other)
    run = server.state.busy_script
    started = time.monotonic()
    server.stop()
    assert time.monotonic() - started < 5
    script.join()
    other.close()
    assert_script_ended(server, run)


def test_no_busy_mode_with_a_zero_threshold(server, other):
    other.call("CONFIG", "SET", "busy-reply-threshold", "0")
    wait = "local t = os.clock() while os.clock() - t < 0.15 do end return 1"
    script = Background(server.host, server.port, ("EVAL", wait, 0))
    time.sleep(0.05)
    assert other.call("PING") == ("+", b"PONG")  # waited for the script, never BUSY
    assert script.join() == [(":", 1)]
