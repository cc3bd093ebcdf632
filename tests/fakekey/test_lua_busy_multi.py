"""Long scripts beyond what a real server shows: scripts inside EXEC stopped with the
server, quick scripts that turn slow after a write, the rule that only the loop thread
touches the data while the server is BUSY (under load), and the
scrubbing of fakekey's own chunk name from Lua errors. Each test has a private server
with a 50 ms busy-reply-threshold."""

from __future__ import annotations

import contextlib
import random
import threading
import time
from collections.abc import Iterator

import pytest

from fakekey.net.server import Server
from fakekey.scripting.runtime import LuaSandbox
from fakekey.testing.raw import Background, RawClient, wait_until_reply

BUSY = ("-", b"BUSY Valkey is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.")
UNKILLABLE = ("-", b"UNKILLABLE Sorry the script already executed write commands against the dataset. "
                   b"You can either wait the script termination or kill the server in a hard way using "
                   b"the SHUTDOWN NOSAVE command.")
WRITE_THEN_SPIN = "redis.call('incr', KEYS[1]) local n = tonumber(ARGV[1]) local x = 0 " \
                  "for i = 1, n do x = x + 1 end return x"


@pytest.fixture
def server() -> Iterator[Server]:
    with Server(busy_reply_threshold=50) as srv:
        yield srv


@pytest.fixture
def other(server: Server) -> Iterator[RawClient]:
    client = RawClient(server.host, server.port)
    yield client
    client.close()


def assert_gone(server: Server, job: Background, run: object) -> None:
    """The server stopped: the job's connection was closed, its BUSY run ended with it."""
    replies = job.join()
    assert len(replies) >= 1 and isinstance(replies[-1], OSError), replies
    assert server._stopped.wait(5)
    assert run.ended and run.aborted


def test_shutdown_nosave_stops_an_unkillable_script_inside_exec():
    server = Server(busy_reply_threshold=50).start()
    other = RawClient(server.host, server.port)
    job = Background(server.host, server.port, ("MULTI",), ("EVAL", WRITE_THEN_SPIN, 1, "n", "1e15"),
                     ("EXEC",))
    wait_until_reply(other, BUSY)
    run = server.state.busy_script
    assert other.call("SCRIPT", "KILL") == UNKILLABLE
    other.send("SHUTDOWN", "NOSAVE")
    assert_gone(server, job, run)
    other.close()
    server.stop()


def test_shutdown_nosave_stops_a_quick_script_that_turned_slow_after_a_write():
    server = Server(busy_reply_threshold=50).start()
    other = RawClient(server.host, server.port)
    sha = other.call("SCRIPT", "LOAD", WRITE_THEN_SPIN)[1]
    for _ in range(5):
        assert other.call("EVALSHA", sha, 1, "n", 10) == (":", 10)
    job = Background(server.host, server.port, ("EVALSHA", sha, 1, "n", "1e15"))
    wait_until_reply(other, BUSY)
    run = server.state.busy_script
    assert other.call("SCRIPT", "KILL") == UNKILLABLE
    other.send("SHUTDOWN", "NOSAVE")
    assert_gone(server, job, run)
    other.close()
    server.stop()


def test_stopping_the_server_while_its_busy_script_waits_for_a_command():
    server = Server(busy_reply_threshold=50).start()
    other = RawClient(server.host, server.port)
    job = Background(server.host, server.port, ("EVAL", "while true do redis.call('incr', 'n') end", 0))
    wait_until_reply(other, BUSY)
    run = server.state.busy_script
    started = time.monotonic()
    server.stop()
    assert time.monotonic() - started < 5
    assert_gone(server, job, run)
    other.close()


def test_a_script_that_writes_runs_once_per_call(server, other):
    sha = other.call("SCRIPT", "LOAD", "redis.call('rpush', KEYS[1], ARGV[1]) return redis.call('llen', KEYS[1])")[1]
    for count in range(1, 6):
        assert other.call("EVALSHA", sha, 1, "l", count) == (":", count)
    assert other.call("LRANGE", "l", 0, -1) == ("*", [("$", b"%d" % i) for i in range(1, 6)])


def test_a_write_inside_a_coroutine_then_busy(server, other):
    """A write in a coroutine under pcall, then past the threshold: the run goes on where
    it was (BUSY meanwhile) and its write happened once."""
    script = "if ARGV[1] == 'w' then pcall(coroutine.wrap(function() redis.call('incr', KEYS[1]) end)) " \
             "local t = os.clock() while os.clock() - t < 0.3 do end end return redis.call('get', KEYS[1])"
    for _ in range(3):
        assert other.call("EVAL", script, 1, "n", "r") == ("$", None)
    job = Background(server.host, server.port, ("EVAL", script, 1, "n", "w"))
    wait_until_reply(other, BUSY)
    assert job.join() == [("$", b"1")]


def test_keyspace_events_of_a_busy_script(server, other):
    """The script's commands run on the loop thread while BUSY, as the script's caller's:
    a read that misses still sends keymiss."""
    listener = RawClient(server.host, server.port)
    other.call("CONFIG", "SET", "notify-keyspace-events", "KEm")
    listener.call("SUBSCRIBE", "__keyevent@0__:keymiss")
    script = "local t = os.clock() while os.clock() - t < 0.2 do end return redis.call('get', 'nokey')"
    job = Background(server.host, server.port, ("EVAL", script, 0))
    wait_until_reply(other, BUSY)
    assert job.join() == [("$", None)]
    assert listener.read() == ("*", [("$", b"message"), ("$", b"__keyevent@0__:keymiss"), ("$", b"nokey")])
    listener.close()


def test_the_exec_client_leaving_while_its_script_is_busy(server, other):
    leaver = RawClient(server.host, server.port)
    leaver.send("MULTI")
    leaver.send("EVAL", "while true do end", 0)
    leaver.send("SET", "after", "1")
    leaver.send("EXEC")
    wait_until_reply(other, BUSY)
    leaver.close()
    time.sleep(0.05)
    assert other.call("SCRIPT", "KILL") == ("+", b"OK")
    wait_until_reply(other, ("+", b"PONG"))
    # the transaction ran to its end; the client was forgotten after it
    assert other.call("GET", "after") == ("$", b"1")
    deadline = time.monotonic() + 2
    while len(server.state.clients) > 1 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert list(server.state.clients) == [int(other.call("CLIENT", "ID")[1])]


# --- the loop thread owns the data while the server is BUSY -------------------------------------


BUSY_WRITER = """
local n = 0
local t = os.clock()
while os.clock() - t < tonumber(ARGV[1]) do
  redis.call('incr', 'counter')
  redis.call('rpush', 'list', n)
  redis.call('hset', 'h', n % 50, n)
  n = n + 1
end
return n
"""


@contextlib.contextmanager
def record_threads(server: Server) -> Iterator[list[str]]:
    """Wrap every command's handler (the server's classes may be compiled: their methods
    cannot be replaced): the violations of the rule that no command runs off the loop
    thread while the server is BUSY."""
    state = server.state
    violations: list[str] = []
    loop_thread = server.loop_thread.ident
    commands = [cmd for top in state.registry.commands.values()
                for cmd in (top, *top.subcommands.values()) if cmd.handler is not None]
    originals = [cmd.handler for cmd in commands]

    def watched(cmd, handler):
        def run(client, argv):
            if state.busy_script is not None and threading.get_ident() != loop_thread:
                violations.append(cmd.name)
            return handler(client, argv)
        return run

    for cmd, handler in zip(commands, originals):
        cmd.handler = watched(cmd, handler)
    try:
        yield violations
    finally:
        for cmd, handler in zip(commands, originals):
            cmd.handler = handler


def hammer(server: Server, stop: threading.Event, errors: list[BaseException], seed: int) -> None:
    """One client's allow_busy commands, reconnecting now and then, until `stop`."""
    rng = random.Random(seed)
    client = RawClient(server.host, server.port)
    try:
        while not stop.is_set():
            step = rng.randrange(10)
            if step == 0:
                client.close()
                client = RawClient(server.host, server.port)
            elif step == 1:
                assert client.call("WATCH", "counter", "k%d" % rng.randrange(5)) == ("+", b"OK")
            elif step == 2:
                assert client.call("UNWATCH") == ("+", b"OK")
            elif step == 3:
                assert client.call("SELECT", rng.randrange(3)) == ("+", b"OK")
            elif step == 4:
                assert client.call("RESET") == ("+", b"RESET")
            elif step == 5:
                kind, _ = client.call("HELLO", rng.choice((2, 3)))
                assert kind in "*%"
            elif step == 6:
                assert client.call("CLIENT", "SETNAME", "h%d" % seed) == ("+", b"OK")
                assert client.call("CLIENT", "GETNAME") == ("$", b"h%d" % seed)
                listing = client.call("CLIENT", "LIST")  # not allow_busy: BUSY until the end
                assert listing == BUSY or listing[0] in "$=", listing
            elif step == 7:
                assert client.call("MULTI") == ("+", b"OK")
                client.call("GET", "counter")  # BUSY while the script runs: dooms the transaction
                client.call("DISCARD")
            else:
                client.call("GET", "counter")
    except BaseException as err:  # noqa: BLE001 - reported by the test
        errors.append(err)
    finally:
        client.close()


def test_busy_script_under_a_storm_of_allowed_commands(server, other):
    watcher = RawClient(server.host, server.port)
    assert watcher.call("WATCH", "counter") == ("+", b"OK")
    with record_threads(server) as violations:
        job = Background(server.host, server.port, ("EVAL", BUSY_WRITER, 0, "1.0"), timeout=30)
        wait_until_reply(other, BUSY)
        stop, errors = threading.Event(), []
        storm = [threading.Thread(target=hammer, args=(server, stop, errors, seed)) for seed in range(6)]
        for thread in storm:
            thread.start()
        replies = job.join(30)
        stop.set()
        for thread in storm:
            thread.join(10)
    assert errors == []
    assert violations == []
    (kind, runs), = replies
    assert kind == ":" and runs > 0
    # every command of the script ran exactly once
    assert other.call("GET", "counter") == ("$", b"%d" % runs)
    assert other.call("LLEN", "list") == (":", runs)
    assert other.call("HLEN", "h") == (":", min(runs, 50))
    # the watch taken before the script saw its writes
    assert watcher.call("MULTI") == ("+", b"OK")
    assert watcher.call("PING") == ("+", b"QUEUED")
    assert watcher.call("EXEC") == ("*", None)
    watcher.close()
    # the client table and the watch lists hold only what is still connected
    me = int(other.call("CLIENT", "ID")[1])
    deadline = time.monotonic() + 5
    while list(server.state.clients) != [me] and time.monotonic() < deadline:
        time.sleep(0.01)
    assert list(server.state.clients) == [me]
    assert all(not db.watched for db in server.state.dbs)
    # and the server serves as usual
    assert other.call("SET", "k", "v") == ("+", b"OK")
    assert other.call("EVAL", "return redis.call('get', KEYS[1])", 1, "k") == ("$", b"v")


# --- errors never name fakekey's own chunk ------------------------------------------------------


class BrokenHost:
    """A sandbox host with a broken callable, as a host bug would make: calling it is a
    Lua error positioned in fakekey's own chunk."""

    random = None  # not callable

    def call(self, *args):
        return (False, 0, None)

    def call_packed(self, count, args):
        return (False, 0, None)

    def setresp(self, resp):
        pass

    def acl_check(self, *args):
        return (True, True)

    def acl_check_packed(self, count, args):
        return (True, True)

    def log(self, level, message):
        pass

    def should_stop(self):
        return None

    def randomseed(self, seed):
        pass


def test_errors_from_the_host_read_as_the_scripts_own():
    sandbox = LuaSandbox(BrokenHost(), "eval", redis_version="7.2.4", valkey_version="9.1.2")
    fn, err = sandbox.compile(b"return math.random()", b"@user_script")
    assert err is None
    outcome = sandbox.run(fn, [], [])
    assert outcome[0] == 2
    message = outcome[2]
    assert b"fakekey" not in message
    assert message.startswith(b"ERR user_script:1: ")
    fn, _ = sandbox.compile(b"local ok, e = pcall(math.random) return e", b"@user_script")
    outcome = sandbox.run(fn, [], [])
    assert outcome[0] == 0 and outcome[2].startswith(b"user_script:1: "), outcome
