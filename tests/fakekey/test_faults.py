"""FAKEKEY.FAULT and `Server.faults` (docs/faults.md): every action, every subcommand, the
rule options, bad input, INFO, the Python API and the fixture, on raw sockets where the exact
bytes matter. The real clients' recipes are in test_faults_clients.py.

No assertion bounds a duration from above tighter than seconds: "not answered yet" is read
as no bytes within a short wait, and delays are checked from below."""

from __future__ import annotations

import socket
import time

import pytest
import redis

import fakekey
from fakekey import Server
from fakekey.testing.raw import RawClient, plain

pytest_plugins = ["pytester"]

LOADING = "LOADING Valkey is loading the dataset in memory"


@pytest.fixture
def srv(fakekey_server):
    return fakekey_server


@pytest.fixture
def ctl(srv):
    """The controlling connection: it sends FAKEKEY.FAULT, so rules leave it alone."""
    with RawClient(srv.host, srv.port) as client:
        assert client.call("FAKEKEY.FAULT", "LIST") == ("*", [])
        yield client


@pytest.fixture
def app(srv):
    """The connection under test."""
    with RawClient(srv.host, srv.port) as client:
        yield client


def fault(ctl: RawClient, *args):
    return ctl.call("FAKEKEY.FAULT", *args)


def ok(reply):
    assert reply == ("+", b"OK"), reply


def silent(client: RawClient, wait: float = 0.3) -> bool:
    """Nothing arrived within `wait` and the connection is open."""
    quiet = not client.is_closed(wait) and client.buf == b""
    client.sock.settimeout(10)  # is_closed left its wait as the socket's timeout
    return quiet


def rules(ctl: RawClient) -> dict[str, dict]:
    """LIST's entries (RESP2: flat arrays, the name first) by name."""
    return {entry[1].decode(): dict(zip(entry[::2], entry[1::2], strict=True))
            for entry in plain(fault(ctl, "LIST"))}


def rule(ctl: RawClient, name: str) -> dict:
    return {k.decode(): v for k, v in rules(ctl)[name].items()}


# --- the actions --------------------------------------------------------------------------------


def test_error_answers_instead_of_running(ctl, app):
    ok(fault(ctl, "ADD", "e", "ACTION", "ERROR", LOADING, "MATCH", "set", "TIMES", "1"))
    assert app.call("SET", "k", "v") == ("-", LOADING.encode())
    assert app.call("EXISTS", "k") == (":", 0)  # not run: nothing written
    ok(app.call("SET", "k", "v"))  # TIMES 1: the rule is gone
    assert rules(ctl) == {}


@pytest.mark.parametrize("text", [
    "BUSY Valkey is busy running a script.", "READONLY You can't write against a read only replica.",
    "OOM command not allowed when used memory > 'maxmemory'.", "MASTERDOWN Link with MASTER is down",
    "TRYAGAIN Multiple keys request during rehashing of slot", "CLUSTERDOWN The cluster is down",
    "NOSCRIPT No matching script.",
])
def test_error_sends_any_error_text(ctl, app, text):
    ok(fault(ctl, "ADD", "e", "ACTION", "ERROR", text, "MATCH", "get"))
    assert app.call("GET", "k") == ("-", text.encode())


def test_error_inside_multi_dooms_it_and_on_exec_aborts_it(ctl, app):
    ok(fault(ctl, "ADD", "e", "ACTION", "ERROR", LOADING, "MATCH", "incr", "TIMES", "1"))
    assert app.pipeline(("MULTI",), ("INCR", "n"), ("EXEC",)) == [
        ("+", b"OK"), ("-", LOADING.encode()),
        ("-", b"EXECABORT Transaction discarded because of previous errors.")]
    ok(fault(ctl, "ADD", "x", "ACTION", "ERROR", LOADING, "MATCH", "exec", "TIMES", "1"))
    assert app.pipeline(("MULTI",), ("INCR", "n"), ("EXEC",))[2] == (
        "-", b"EXECABORT Transaction discarded because of: " + LOADING.encode())
    assert app.call("GET", "n") == ("$", None)  # neither transaction ran
    assert app.call("EXEC") == ("-", b"ERR EXEC without MULTI")  # and none is left open


def test_delay_holds_the_reply_not_the_server(srv, ctl, app):
    ok(fault(ctl, "ADD", "d", "ACTION", "DELAY", "1500", "MATCH", "set"))
    started = time.monotonic()
    app.send("SET", "k", "v")
    with RawClient(srv.host, srv.port) as other:  # served while app's reply waits
        assert other.call("GET", "k") == ("$", b"v")  # the command ran at once
    assert silent(app)
    ok(app.read())
    assert time.monotonic() - started >= 1.4


def test_delay_keeps_the_order_of_a_pipeline(ctl, app):
    ok(fault(ctl, "ADD", "d", "ACTION", "DELAY", "300", "MATCH", "incr", "TIMES", "1"))
    assert app.pipeline(("PING",), ("INCR", "n"), ("ECHO", "after"), ("INCR", "n")) == [
        ("+", b"PONG"), (":", 1), ("$", b"after"), (":", 2)]


def test_drop_closes_without_running(srv, ctl, app):
    ok(fault(ctl, "ADD", "d", "ACTION", "DROP", "MATCH", "set"))
    app.send_raw(b"*1\r\n$4\r\nPING\r\n*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n")
    assert app.read() == ("+", b"PONG")  # what came before is answered
    assert app.is_closed()
    assert app.buf == b""
    assert ctl.call("EXISTS", "k") == (":", 0)
    assert rule(ctl, "d")["fired"] == 1


def test_drop_after_runs_then_closes_without_the_reply(ctl, app):
    ok(fault(ctl, "ADD", "d", "ACTION", "DROP-AFTER", "MATCH", "incr"))
    app.send("INCR", "n")
    assert app.is_closed() and app.buf == b""
    assert ctl.call("GET", "n") == ("$", b"1")  # the write happened: the lost acknowledgement


def test_partial_sends_the_first_bytes_then_closes(ctl, app):
    ok(fault(ctl, "ADD", "p", "ACTION", "PARTIAL", "6", "MATCH", "getset"))
    ctl.call("SET", "k", "hello")
    app.send("GETSET", "k", "world")
    assert app.is_closed()
    assert app.buf == b"$5\r\nhe"
    assert ctl.call("GET", "k") == ("$", b"world")  # exactly the command's write


def test_hang_holds_until_the_rule_is_removed(srv, ctl, app):
    ok(fault(ctl, "ADD", "h", "ACTION", "HANG", "MATCH", "set"))
    app.send("SET", "k", "v")
    app.send("PING")  # waits behind it
    assert silent(app)
    with RawClient(srv.host, srv.port) as other:
        assert other.call("EXISTS", "k") == (":", 0)  # not run yet; others are served
    info = plain(ctl.call("INFO", "faults")).decode()
    assert "fault_held_requests:1" in info
    assert fault(ctl, "DEL", "h") == (":", 1)
    assert [app.read(), app.read()] == [("+", b"OK"), ("+", b"PONG")]
    assert ctl.call("GET", "k") == ("$", b"v")


def test_hang_used_up_by_times_holds_until_del(ctl, app):
    ok(fault(ctl, "ADD", "h", "ACTION", "HANG", "MATCH", "incr", "TIMES", "1"))
    app.send("INCR", "n")
    assert silent(app)
    assert rules(ctl) == {}  # used up, yet what it holds stays held
    assert fault(ctl, "DEL", "h") == (":", 1)
    assert app.read() == (":", 1)
    assert fault(ctl, "DEL", "h") == (":", 0)


def test_hang_then_disconnect_never_runs(srv, ctl):
    ok(fault(ctl, "ADD", "h", "ACTION", "HANG", "MATCH", "set"))
    app = RawClient(srv.host, srv.port)
    app.send("SET", "k", "v")
    assert silent(app)
    app.close()
    ok(fault(ctl, "RESET"))
    time.sleep(0.1)
    assert ctl.call("EXISTS", "k") == (":", 0)


def test_noreply_runs_and_answers_nothing(ctl, app):
    ok(fault(ctl, "ADD", "n", "ACTION", "NOREPLY", "MATCH", "incr", "TIMES", "1"))
    app.send("INCR", "n")
    assert app.call("PING") == ("+", b"PONG")  # the connection stays; INCR's reply never comes
    assert ctl.call("GET", "n") == ("$", b"1")


def test_latency_adds_to_every_reply_of_the_others(ctl, app):
    ok(fault(ctl, "LATENCY", "400"))
    started = time.monotonic()
    assert app.call("PING") == ("+", b"PONG")
    assert time.monotonic() - started >= 0.35
    assert ctl.call("PING") == ("+", b"PONG")  # the controller is left alone
    assert "fault_latency_ms:400" in plain(ctl.call("INFO", "faults")).decode()
    ok(fault(ctl, "LATENCY", "0"))
    app.send("PING")
    assert not app.is_closed(0.2) and app.buf == b"+PONG\r\n"


# --- the rule options ---------------------------------------------------------------------------


def test_match_is_a_glob_over_the_name_and_the_container(ctl, app):
    ok(fault(ctl, "ADD", "sub", "ACTION", "ERROR", "ERR sub", "MATCH", "CLIENT|ID"))
    ok(fault(ctl, "ADD", "all", "ACTION", "ERROR", "ERR all", "MATCH", "config"))
    ok(fault(ctl, "ADD", "glob", "ACTION", "ERROR", "ERR glob", "MATCH", "h[gs]et"))
    assert app.call("client", "id") == ("-", b"ERR sub")
    assert app.call("CLIENT", "GETNAME") == ("$", None)
    assert app.call("CONFIG", "GET", "hz") == ("-", b"ERR all")
    assert app.call("HGET", "h", "f") == ("-", b"ERR glob")
    assert app.call("HSET", "h", "f", "v") == ("-", b"ERR glob")
    assert app.call("HDEL", "h", "f") == (":", 0)


def test_unknown_commands_match_by_their_name(ctl, app):
    ok(fault(ctl, "ADD", "u", "ACTION", "ERROR", "ERR faulted", "MATCH", "nosuch*"))
    assert app.call("NOSUCHCMD") == ("-", b"ERR faulted")


def test_client_name_user_and_db_choose_the_connections(srv, ctl, app):
    with RawClient(srv.host, srv.port) as named, RawClient(srv.host, srv.port) as db3:
        ok(named.call("CLIENT", "SETNAME", "worker"))
        ok(db3.call("SELECT", "3"))
        app_id = app.call("CLIENT", "ID")[1]
        ok(fault(ctl, "ADD", "id", "ACTION", "ERROR", "ERR by id", "MATCH", "get", "CLIENT", app_id))
        ok(fault(ctl, "ADD", "nm", "ACTION", "ERROR", "ERR by name", "MATCH", "get", "NAME", "worker"))
        ok(fault(ctl, "ADD", "db", "ACTION", "ERROR", "ERR by db", "MATCH", "get", "DB", "3"))
        assert app.call("GET", "k") == ("-", b"ERR by id")
        assert named.call("GET", "k") == ("-", b"ERR by name")
        assert db3.call("GET", "k") == ("-", b"ERR by db")
        ok(db3.call("SELECT", "0"))
        assert db3.call("GET", "k") == ("$", None)
    ok(ctl.call("ACL", "SETUSER", "alice", "on", ">pw", "~*", "+@all"))
    ok(fault(ctl, "RESET"))
    ok(fault(ctl, "ADD", "u", "ACTION", "ERROR", "ERR by user", "MATCH", "get", "USER", "alice"))
    assert app.call("GET", "k") == ("$", None)
    ok(app.call("AUTH", "alice", "pw"))
    assert app.call("GET", "k") == ("-", b"ERR by user")


def test_after_skips_and_times_counts(ctl, app):
    ok(fault(ctl, "ADD", "r", "ACTION", "ERROR", "ERR hit", "MATCH", "ping", "AFTER", "2", "TIMES", "2"))
    replies = [app.call("PING")[1] for _ in range(6)]
    assert replies == [b"PONG", b"PONG", b"ERR hit", b"ERR hit", b"PONG", b"PONG"]
    assert rules(ctl) == {}


def test_the_first_rule_that_fires_acts(ctl, app):
    ok(fault(ctl, "ADD", "one", "ACTION", "ERROR", "ERR one", "MATCH", "get", "TIMES", "1"))
    ok(fault(ctl, "ADD", "two", "ACTION", "ERROR", "ERR two", "MATCH", "get"))
    assert [app.call("GET", "k")[1] for _ in range(2)] == [b"ERR one", b"ERR two"]
    assert rule(ctl, "two")["seen"] == 1


def test_the_controller_is_hit_only_when_named(ctl):
    ok(fault(ctl, "ADD", "all", "ACTION", "ERROR", "ERR all", "MATCH", "*"))
    assert ctl.call("PING") == ("+", b"PONG")
    my_id = ctl.call("CLIENT", "ID")[1]
    ok(fault(ctl, "ADD", "me", "ACTION", "ERROR", "ERR me", "MATCH", "ping", "CLIENT", my_id))
    assert ctl.call("PING") == ("-", b"ERR me")
    assert fault(ctl, "DEL", "me") == (":", 1)  # FAKEKEY.FAULT itself is never hit


def test_probability_draws_the_same_requests_with_the_same_seed(ctl, app):
    def run(seed: int) -> list[int]:
        ok(fault(ctl, "RESET"))
        ok(fault(ctl, "SEED", seed))
        ok(fault(ctl, "ADD", "p", "ACTION", "ERROR", "ERR p", "MATCH", "ping", "PROBABILITY", "0.3"))
        return [i for i in range(60) if app.call("PING")[0] == "-"]

    first, second = run(7), run(7)
    assert first == second
    assert 5 < len(first) < 40
    assert run(8) != first
    ok(fault(ctl, "RESET"))  # RESET goes back to the default seed
    ok(fault(ctl, "ADD", "p", "ACTION", "ERROR", "ERR p", "MATCH", "ping", "PROBABILITY", "0.3"))
    default = [i for i in range(60) if app.call("PING")[0] == "-"]
    assert default == run(0)


def test_probability_bounds(ctl, app):
    ok(fault(ctl, "ADD", "never", "ACTION", "ERROR", "ERR never", "MATCH", "ping", "PROBABILITY", "0"))
    ok(fault(ctl, "ADD", "always", "ACTION", "ERROR", "ERR always", "MATCH", "ping", "PROBABILITY", "1"))
    assert {app.call("PING")[1] for _ in range(20)} == {b"ERR always"}


# --- the subcommands ----------------------------------------------------------------------------


def test_list_del_reset_and_help(ctl):
    ok(fault(ctl, "ADD", "a", "ACTION", "DELAY", "10", "MATCH", "GET", "DB", "1", "AFTER", "3",
             "TIMES", "4", "PROBABILITY", "0.5"))
    ok(fault(ctl, "ADD", "b", "ACTION", "ERROR", LOADING))
    assert rule(ctl, "a") == {
        "name": b"a", "action": b"DELAY", "value": 10, "match": b"get", "client-id": None,
        "client-name": None, "user": None, "db": 1, "after": 3, "times": 4, "probability": b"0.5",
        "seen": 0, "fired": 0}
    assert rule(ctl, "b")["value"] == LOADING.encode() and rule(ctl, "b")["match"] == b"*"
    assert fault(ctl, "DEL", "a") == (":", 1)
    assert fault(ctl, "DEL", "a") == (":", 0)
    ok(fault(ctl, "RESET"))
    assert fault(ctl, "LIST") == ("*", [])
    kind, lines = fault(ctl, "HELP")
    assert kind == "*" and lines[0][1].startswith(b"FAKEKEY.FAULT <subcommand>")
    assert any(b"NETWORK DOWN" in line for _, line in lines)


def test_list_in_resp3_is_maps(ctl):
    ctl.call("HELLO", "3")
    ok(fault(ctl, "ADD", "a", "ACTION", "DROP"))
    kind, entries = fault(ctl, "LIST")
    assert kind == "*" and entries[0][0] == "%"


def test_info_shows_the_rules_in_force(ctl, app):
    assert "# Faults" not in plain(ctl.call("INFO")).decode()  # nothing in force: Valkey's INFO
    assert "fault_rules:0" in plain(ctl.call("INFO", "faults")).decode()
    ok(fault(ctl, "ADD", "e", "ACTION", "ERROR", LOADING, "MATCH", "get", "TIMES", "5"))
    app.call("GET", "k")
    app.call("GET", "k")
    for section in ((), ("faults",), ("everything",)):
        text = plain(ctl.call("INFO", *section)).decode()
        assert "# Faults\r\nfault_rules:1\r\n" in text
        assert "fault_rule_e:action=error,match=get,seen=2,fired=2,times=5\r\n" in text
    assert "# Faults" not in plain(ctl.call("INFO", "memory")).decode()


def test_client_list_is_unaffected(srv, ctl, app):
    ok(fault(ctl, "ADD", "h", "ACTION", "HANG", "MATCH", "get"))
    app.send("GET", "k")
    assert silent(app)
    listing = plain(ctl.call("CLIENT", "LIST")).decode()
    assert " flags=b " not in listing and " flags=N " in listing


def test_seed_and_latency_take_integers(ctl):
    ok(fault(ctl, "SEED", "-5"))
    assert "fault_seed:-5" in plain(ctl.call("INFO", "faults")).decode()
    ok(fault(ctl, "LATENCY", "0"))


# --- bad input ----------------------------------------------------------------------------------


@pytest.mark.parametrize(("args", "error"), [
    (("ADD", "x", "ACTION", "EXPLODE"), "unknown fault action 'EXPLODE'"),
    (("ADD", "x", "ACTION"), "ACTION needs an action"),
    (("ADD", "x", "MATCH", "get"), "needs ACTION"),
    (("ADD", "x", "ACTION", "DELAY"), "DELAY needs a value"),
    (("ADD", "x", "ACTION", "DELAY", "soon"), "DELAY must be an integer from 0 to 86400000, not 'soon'"),
    (("ADD", "x", "ACTION", "DELAY", "-1"), "DELAY must be an integer"),
    (("ADD", "x", "ACTION", "PARTIAL", "1.5"), "PARTIAL must be an integer"),
    (("ADD", "x", "ACTION", "ERROR", " "), "ERROR needs an error text"),
    (("ADD", "x", "ACTION", "ERROR", "ERR two\r\nlines"), "ERROR needs an error text on one line"),
    (("ADD", "x", "ACTION", "DROP", "TIMES", "0"), "TIMES must be an integer from 1"),
    (("ADD", "x", "ACTION", "DROP", "AFTER", "-2"), "AFTER must be an integer from 0"),
    (("ADD", "x", "ACTION", "DROP", "DB", "16"), "DB must be an integer from 0 to 15, not '16'"),
    (("ADD", "x", "ACTION", "DROP", "PROBABILITY", "1.01"), "PROBABILITY must be a number from 0 to 1"),
    (("ADD", "x", "ACTION", "DROP", "PROBABILITY", "-0.1"), "PROBABILITY must be"),
    (("ADD", "x", "ACTION", "DROP", "PROBABILITY", "nan"), "PROBABILITY must be"),
    (("ADD", "x", "ACTION", "DROP", "CLIENT", "987654"), "CLIENT 987654: no such client"),
    (("ADD", "x", "ACTION", "DROP", "CLIENT", "me"), "CLIENT must be an integer"),
    (("ADD", "x", "ACTION", "DROP", "NAME", "a", "USER", "b"), "CLIENT, NAME and USER are exclusive"),
    (("ADD", "x", "ACTION", "DROP", "COLOUR", "red"), "unknown option 'COLOUR'"),
    (("ADD", "x", "ACTION", "DROP", "TIMES"), "TIMES needs a value"),
    (("ADD", "bad name", "ACTION", "DROP"), "bad fault rule name 'bad name'"),
    (("SEED", "x"), "SEED must be an integer"),
    (("LATENCY", "-1"), "LATENCY must be an integer from 0"),
    (("NETWORK", "DOWN", "0"), "NETWORK DOWN must be an integer from 1"),
    (("NETWORK", "SIDEWAYS"), "unknown NETWORK argument 'SIDEWAYS'"),
    (("NETWORK", "UP", "now"), "wrong number of arguments for 'fakekey.fault'"),
    (("DEL",), "wrong number of arguments for 'fakekey.fault'"),
    (("LIST", "x"), "wrong number of arguments for 'fakekey.fault'"),
    (("EXPLODE",), "unknown subcommand 'EXPLODE'. Try FAKEKEY.FAULT ADD|DEL|LIST"),
])
def test_bad_input_names_the_argument_and_adds_nothing(ctl, args, error):
    kind, message = fault(ctl, *args)
    assert kind == "-" and message.startswith(b"ERR ") and error.encode() in message, message
    assert fault(ctl, "LIST") == ("*", [])
    assert "fault_latency_ms:0" in plain(ctl.call("INFO", "faults")).decode()


def test_a_name_in_use_is_refused(ctl):
    ok(fault(ctl, "ADD", "x", "ACTION", "DROP"))
    assert fault(ctl, "ADD", "x", "ACTION", "HANG") == (
        "-", b"ERR a fault rule named 'x' exists already")
    assert rule(ctl, "x")["action"] == b"DROP"


@pytest.mark.fakekey(enable_fakekey_commands=False)
def test_absent_with_the_other_fakekey_commands(srv):
    with RawClient(srv.host, srv.port) as client:
        assert client.call("FAKEKEY.FAULT", "LIST") == (
            "-", b"ERR unknown command 'FAKEKEY.FAULT', with args beginning with: 'LIST' ")


def test_not_in_scripts(ctl):
    kind, message = ctl.call("EVAL", "return redis.call('FAKEKEY.FAULT', 'LIST')", 0)
    assert kind == "-" and b"not allowed from script" in message


# --- the network ------------------------------------------------------------------------------


def refused(srv) -> bool:
    try:
        socket.create_connection((srv.host, srv.port), timeout=2).close()
    except ConnectionRefusedError:
        return True
    return False


def test_network_down_drops_everyone_until_up(srv, ctl, app):
    ok(fault(ctl, "NETWORK", "DOWN"))  # the sender gets its reply, then is dropped too
    assert ctl.is_closed() and app.is_closed()
    assert refused(srv)
    assert srv.faults.network_is_down
    srv.faults.network_up()
    with RawClient(srv.host, srv.port) as again:  # the same port
        assert again.call("PING") == ("+", b"PONG")
        assert "fault_network:up" in plain(again.call("INFO", "faults")).decode()


def test_network_down_for_ms_comes_back_by_itself(srv, ctl):
    ok(fault(ctl, "NETWORK", "DOWN", "200"))
    assert refused(srv)
    deadline = time.monotonic() + 10
    while refused(srv):
        assert time.monotonic() < deadline, "the network never came back"
        time.sleep(0.05)
    with RawClient(srv.host, srv.port) as again:
        assert again.call("PING") == ("+", b"PONG")


def test_network_up_when_up_is_fine(ctl):
    ok(fault(ctl, "NETWORK", "UP"))
    assert ctl.call("PING") == ("+", b"PONG")


def test_network_down_without_a_network():
    from fakekey.core.client import Client
    from fakekey.net.server import new_state

    state = new_state()
    client = Client(state)
    state.add_client(client)
    reply = state.call(client, [b"FAKEKEY.FAULT", b"NETWORK", b"DOWN"])
    assert reply.message == b"ERR this server has no network to take down"


# --- from Python ----------------------------------------------------------------------------------


def test_python_handles_count_and_remove_on_exit(srv, app):
    with srv.faults.error("get", LOADING, times=3) as rule:
        assert app.call("GET", "k") == ("-", LOADING.encode())
        assert rule.fired == 1 and rule.seen == 1
        assert [r["name"] for r in srv.faults.rules()] == [rule.name]
    assert srv.faults.rules() == []
    assert app.call("GET", "k") == ("$", None)


def test_python_actions_match_the_wire(srv, app):
    srv.faults.delay("echo", 10, times=1)
    assert app.call("ECHO", "x") == ("$", b"x")
    srv.faults.noreply("incr", times=1)
    app.send("INCR", "n")
    assert app.call("PING") == ("+", b"PONG")
    with srv.faults.hang("get"):
        app.send("GET", "n")
        assert silent(app)
    assert app.read() == ("$", b"1")
    srv.faults.partial("get", 2, name="half", times=1)
    app.send("GET", "n")
    assert app.is_closed() and app.buf == b"$1"
    with RawClient(srv.host, srv.port) as other:
        srv.faults.drop_after("set", times=1)
        other.send("SET", "k", "v")
        assert other.is_closed() and other.buf == b""
    with RawClient(srv.host, srv.port) as other:
        assert other.call("GET", "k") == ("$", b"v")
        srv.faults.drop("get", times=1)
        other.send("GET", "k")
        assert other.is_closed() and other.buf == b""


def test_python_bad_input_raises_value_error(srv):
    with pytest.raises(ValueError, match="PROBABILITY must be a number from 0 to 1"):
        srv.faults.drop("get", probability=2)
    with pytest.raises(ValueError, match="unknown fault action 'explode'"):
        srv.faults.add("explode")
    with pytest.raises(ValueError, match="LATENCY must be"):
        srv.faults.latency(-1)
    assert srv.faults.rules() == []


def test_python_seed_latency_and_network(srv):
    srv.faults.seed(3)
    srv.faults.latency(5)
    r = redis.Redis(host=srv.host, port=srv.port)
    assert r.ping() is True
    assert r.info("faults")["fault_seed"] == 3
    with srv.faults.network_outage():
        assert refused(srv)
    assert r.ping() is True  # redis-py reconnects
    srv.faults.network_down(ms=150)
    deadline = time.monotonic() + 10
    while srv.faults.network_is_down:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    srv.faults.reset()
    assert r.info("faults")["fault_latency_ms"] == 0
    r.close()


def test_reset_releases_hung_requests_and_brings_the_network_up(srv, app):
    srv.faults.hang("get")
    app.send("GET", "k")
    assert silent(app)
    srv.faults.reset()
    assert app.read() == ("$", None)
    srv.faults.network_down()
    srv.faults.reset()
    assert not refused(srv)


def test_rules_are_not_persisted(tmp_path):
    with Server(dir=str(tmp_path), appendonly=True) as first:
        first.faults.drop("get")
        redis.Redis(port=first.port).save()
    with Server(dir=str(tmp_path), appendonly=True) as second:
        assert second.faults.rules() == []
        assert redis.Redis(port=second.port).get("k") is None


def test_two_servers_share_no_faults():
    with Server() as a, Server() as b:
        a.faults.error("ping", "ERR from a")
        assert redis.Redis(port=b.port).ping() is True
        with pytest.raises(redis.ResponseError, match="from a"):
            redis.Redis(port=a.port).ping()


def test_fakeredis_connected_false_is_network_down():
    server = fakekey.FakeServer()
    r = fakekey.FakeRedis(server=server)
    assert r.ping() is True
    server.connected = False
    assert server.server.faults.network_is_down and not server.connected
    with pytest.raises(redis.ConnectionError):
        r.ping()
    server.connected = True
    assert r.ping() is True
    server.close()


# --- the fixture ---------------------------------------------------------------------------------

FIXTURE = """
import redis

def test_a_leaves_a_rule(fakekey_faults, fakekey_client):
    fakekey_faults.error("get", "LOADING loading")
    fakekey_faults.latency(1)
    try:
        fakekey_client.get("k")
    except redis.exceptions.BusyLoadingError:
        pass
    else:
        raise AssertionError("the rule did not fire")

def test_b_finds_none(fakekey_server, fakekey_client):
    assert fakekey_server.faults.rules() == []
    assert fakekey_client.get("k") is None

def test_c_leaves_the_network_down(fakekey_server):
    fakekey_server.faults.network_down()

def test_d_finds_it_up(fakekey_client):
    assert fakekey_client.ping() is True
"""


@pytest.mark.parametrize("scope", ["function", "session"])
def test_the_fixture_resets_after_each_test(pytester, monkeypatch, scope):
    monkeypatch.delenv("FAKEKEY_TARGET", raising=False)
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    pytester.makepyfile(FIXTURE)
    result = pytester.runpytest("--fakekey-scope", scope)
    result.assert_outcomes(passed=4)


def test_quit_and_subscribe_under_faults(srv, app):
    srv.faults.latency(200)
    app.send("SUBSCRIBE", "ch")
    assert app.read() == ("*", [("$", b"subscribe"), ("$", b"ch"), (":", 1)])
    srv.faults.latency(0)
    srv.faults.noreply("unsubscribe", times=1)
    app.send("UNSUBSCRIBE", "ch")
    assert app.call("PING") == ("+", b"PONG")  # unsubscribed, and its confirmation never sent
    srv.faults.delay("quit", 5000)
    assert app.call("QUIT") == ("+", b"OK")  # a closing connection's reply is not held
    assert app.is_closed()
