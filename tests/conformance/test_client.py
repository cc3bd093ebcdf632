"""CLIENT: ID, GETNAME, SETNAME, LIST, INFO, KILL, SETINFO, CAPA, NO-EVICT, NO-TOUCH, REPLY,
HELP, with two connections where it matters."""

import re
import time

import pytest

from fakekey.testing.raw import RawClient

FIELDS = ["id", "addr", "laddr", "fd", "name", "age", "idle", "flags", "capa", "db", "sub",
          "psub", "ssub", "multi", "watch", "qbuf", "qbuf-free", "argv-mem", "multi-mem", "rbs",
          "rbp", "obl", "oll", "omem", "tot-mem", "events", "cmd", "user", "redir", "resp",
          "lib-name", "lib-ver", "tot-net-in", "tot-net-out", "tot-cmds"]
NUMERIC = {"id", "fd", "age", "idle", "db", "sub", "psub", "ssub", "watch", "qbuf", "qbuf-free",
           "argv-mem", "multi-mem", "rbs", "rbp", "obl", "oll", "omem", "tot-mem", "resp",
           "tot-net-in", "tot-net-out", "tot-cmds"}


def text_of(reply, proto) -> str:
    """CLIENT LIST/INFO: a bulk string in RESP2, a `txt` verbatim string in RESP3."""
    kind, data = reply
    if proto == 3:
        assert kind == "=" and data.startswith(b"txt:")
        return data[4:].decode()
    assert kind == "$"
    return data.decode()


def parse_lines(text: str) -> list[dict[str, str]]:
    assert text == "" or text.endswith("\n")
    return [dict(field.split("=", 1) for field in line.split(" ")) for line in text.splitlines()]


def client_info(r, proto=2) -> dict[str, str]:
    (line,) = parse_lines(text_of(r.call("CLIENT", "INFO"), proto))
    return line


def listed(r, *filters, proto=2) -> list[dict[str, str]]:
    return parse_lines(text_of(r.call("CLIENT", "LIST", *filters), proto))


def my_id(client: RawClient) -> int:
    kind, value = client.call("CLIENT", "ID")
    assert kind == ":"
    return value


# --- ID, INFO, names --------------------------------------------------------------------------


def test_client_info_line(r, proto, target):
    kind, client_id = r.call("CLIENT", "ID")
    assert kind == ":" and client_id > 0
    text = text_of(r.call("CLIENT", "INFO"), proto)
    assert text.count("\n") == 1
    line = parse_lines(text)[0]
    assert list(line) == FIELDS
    assert all(line[name].lstrip("-").isdigit() for name in NUMERIC)
    assert line["id"] == str(client_id)
    assert re.fullmatch(r"127\.0\.0\.1:\d+", line["addr"])
    assert line["laddr"] == f"127.0.0.1:{target.port}"
    assert (line["name"], line["flags"], line["capa"], line["db"]) == ("", "N", "", "0")
    assert (line["multi"], line["redir"], line["events"]) == ("-1", "-1", "r")
    assert (line["cmd"], line["user"], line["resp"]) == ("client|info", "default", str(proto))
    assert line["argv-mem"] == "10"  # "client" + "info"
    assert (line["lib-name"], line["lib-ver"]) == ("", "")


def test_list_follows_the_other_connection(target, r2):
    with target.raw() as other:
        other_id = str(my_id(other))
        other.pipeline(("SELECT", "3"), ("WATCH", "a", "b"), ("MULTI",), ("PING",), ("PING",))
        (line,) = listed(r2, "ID", other_id)
        assert (line["db"], line["watch"], line["multi"], line["flags"]) == ("3", "2", "2", "x")
        assert listed(r2, "ID", other_id, "FLAGS", "x") == [line]
        other.call("DISCARD")
        (line,) = listed(r2, "ID", other_id)
        assert (line["flags"], line["cmd"]) == ("N", "discard")


def test_setname_getname(r, proto):
    null = ("_", None) if proto == 3 else ("$", None)
    assert r.call("CLIENT", "GETNAME") == null
    assert r.call("CLIENT", "SETNAME", "worker-1") == ("+", b"OK")
    assert r.call("CLIENT", "GETNAME") == ("$", b"worker-1")
    assert client_info(r, proto)["name"] == "worker-1"
    assert r.call("CLIENT", "SETNAME", "") == ("+", b"OK")
    assert r.call("CLIENT", "GETNAME") == null


@pytest.mark.parametrize("name", ["a b", "a\nb", "caf\u00e9", "tab\there"])
def test_setname_refuses_special_characters(r2, name):
    error = ("-", b"ERR Client names cannot contain spaces, newlines or special characters.")
    assert r2.call("CLIENT", "SETNAME", name) == error
    assert r2.call("HELLO", "2", "SETNAME", name) == error


def test_names_may_hold_punctuation(r2):
    assert r2.call("CLIENT", "SETNAME", "a{b}(c)~") == ("+", b"OK")
    assert r2.call("CLIENT", "GETNAME") == ("$", b"a{b}(c)~")


def test_arity_errors(r2):
    for sub in ("ID", "GETNAME", "INFO", "HELP"):
        assert r2.call("CLIENT", sub, "x") == (
            "-", f"ERR wrong number of arguments for 'client|{sub.lower()}' command".encode())
    assert r2.call("CLIENT", "SETNAME", "a", "b") == (
        "-", b"ERR wrong number of arguments for 'client|setname' command")
    assert r2.call("CLIENT") == ("-", b"ERR wrong number of arguments for 'client' command")
    assert r2.call("CLIENT", "NOPE") == ("-", b"ERR unknown subcommand 'NOPE'. Try CLIENT HELP.")


def test_setinfo(r2):
    assert r2.call("CLIENT", "SETINFO", "LIB-NAME", "redis-py(x)") == ("+", b"OK")
    assert r2.call("CLIENT", "SETINFO", "lib-ver", "5.0.1") == ("+", b"OK")
    line = client_info(r2)
    assert (line["lib-name"], line["lib-ver"]) == ("redis-py(x)", "5.0.1")
    assert r2.call("CLIENT", "SETINFO", "lib-name", "a b") == (
        "-", b"ERR lib-name cannot contain spaces, newlines or special characters.")
    assert r2.call("CLIENT", "SETINFO", "lib-ver", "1\n2") == (
        "-", b"ERR lib-ver cannot contain spaces, newlines or special characters.")
    assert r2.call("CLIENT", "SETINFO", "foo", "bar") == ("-", b"ERR Unrecognized option 'foo'")


def test_capa_redirect(r2):
    assert r2.call("CLIENT", "CAPA", "redirect") == ("+", b"OK")
    assert r2.call("CLIENT", "CAPA", "unknown-capability") == ("+", b"OK")
    assert client_info(r2)["capa"] == "r"


def test_no_evict_and_no_touch_flags(r2):
    assert r2.call("CLIENT", "NO-EVICT", "on") == ("+", b"OK")
    assert client_info(r2)["flags"] == "e"
    assert r2.call("CLIENT", "NO-TOUCH", "ON") == ("+", b"OK")
    assert client_info(r2)["flags"] == "eT"
    assert r2.call("CLIENT", "NO-EVICT", "off") == ("+", b"OK")
    assert r2.call("CLIENT", "NO-TOUCH", "off") == ("+", b"OK")
    assert client_info(r2)["flags"] == "N"
    assert r2.call("CLIENT", "NO-EVICT", "maybe") == ("-", b"ERR syntax error")
    assert r2.call("CLIENT", "NO-TOUCH", "maybe") == ("-", b"ERR syntax error")


@pytest.mark.fakekey_only
def test_no_touch_leaves_idle_time(r2):
    """With NO-TOUCH on, reads leave OBJECT IDLETIME alone; TOUCH still touches."""
    r2.call("FAKEKEY.CLOCK", "SET", "1000000")
    r2.call("SET", "k", "v")
    r2.call("FAKEKEY.CLOCK", "ADVANCE", "5000")
    r2.call("CLIENT", "NO-TOUCH", "on")
    assert r2.call("GET", "k") == ("$", b"v")
    assert r2.call("OBJECT", "IDLETIME", "k") == (":", 5)
    assert r2.call("TOUCH", "k") == (":", 1)
    assert r2.call("OBJECT", "IDLETIME", "k") == (":", 0)
    r2.call("FAKEKEY.CLOCK", "ADVANCE", "3000")
    r2.call("CLIENT", "NO-TOUCH", "off")
    r2.call("GET", "k")
    assert r2.call("OBJECT", "IDLETIME", "k") == (":", 0)


def test_reply_off_skip_on(r2):
    r2.send_raw(b"".join([
        b"*3\r\n$6\r\nCLIENT\r\n$5\r\nREPLY\r\n$3\r\nOFF\r\n",
        b"*2\r\n$4\r\nECHO\r\n$6\r\nhidden\r\n",
        b"*3\r\n$6\r\nCLIENT\r\n$5\r\nREPLY\r\n$2\r\nON\r\n",
        b"*3\r\n$6\r\nCLIENT\r\n$5\r\nREPLY\r\n$4\r\nSKIP\r\n",
        b"*2\r\n$4\r\nECHO\r\n$7\r\nskipped\r\n",
        b"*2\r\n$4\r\nECHO\r\n$5\r\nshown\r\n",
    ]))
    assert r2.read() == ("+", b"OK")
    assert r2.read() == ("$", b"shown")
    assert r2.call("CLIENT", "REPLY", "maybe") == ("-", b"ERR syntax error")


def test_help(r2):
    kind, lines = r2.call("CLIENT", "HELP")
    assert kind == "*" and all(k == "+" for k, _ in lines)
    assert lines[0] == ("+", b"CLIENT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:")
    assert ("+", b"SETNAME <name>") in lines


# --- LIST -------------------------------------------------------------------------------------


def test_list_two_connections(target, r, proto):
    with target.raw() as other:
        other.call("CLIENT", "SETNAME", "second")
        other.call("SELECT", "2")
        ids = [my_id(r), my_id(other)]
        lines = listed(r, "ID", *map(str, ids), proto=proto)
        assert [int(line["id"]) for line in lines] == ids
        assert all(list(line) == FIELDS for line in lines)
        assert lines[0]["cmd"] == "client|list"
        assert (lines[1]["name"], lines[1]["db"], lines[1]["cmd"]) == ("second", "2", "client|id")
        assert [line["name"] for line in listed(r, "NAME", "second", proto=proto)] == ["second"]
        assert listed(r, "ID", str(ids[1]), "TYPE", "normal", "DB", "2", proto=proto)[0]["id"] == str(ids[1])
        assert listed(r, "ID", str(ids[1]), "TYPE", "pubsub", proto=proto) == []
        assert listed(r, "ID", str(ids[0]), "SKIPME", "yes", proto=proto) == []
        assert listed(r, "ID", *map(str, ids), "NOT-NAME", "second", proto=proto)[0]["id"] == str(ids[0])


def test_list_without_filters_includes_the_caller(r2):
    assert str(my_id(r2)) in {line["id"] for line in listed(r2)}


def test_list_filters_that_match_nobody(r2):
    for filters in (("TYPE", "master"), ("TYPE", "replica"), ("TYPE", "slave"),
                    ("ID", "999999"), ("ADDR", "1.2.3.4:5"), ("NAME", "nobody"),
                    ("FLAGS", "T"), ("MAXAGE", "100000")):
        assert listed(r2, *filters) == [], filters


@pytest.mark.parametrize(
    ("filters", "error"),
    [
        (("TYPE", "foo"), b"ERR Unknown client type 'foo'"),
        (("ID", "0"), b"ERR client-id should be greater than 0"),
        (("ID", "abc"), b"ERR syntax error"),
        (("ID", "1", "abc"), b"ERR syntax error"),
        (("ID",), b"ERR syntax error"),
        (("TYPE",), b"ERR syntax error"),
        (("SKIPME", "maybe"), b"ERR syntax error"),
        (("BOGUS", "x"), b"ERR syntax error"),
        (("MAXAGE", "0"), b"ERR maxage should be greater than 0"),
        (("MAXAGE", "abc"), b"ERR maxage is not an integer or out of range"),
        (("IDLE", "-1"), b"ERR idle should be greater than 0"),
        (("FLAGS", "z"), b"ERR Unknown flags found in the provided filter: z"),
        (("DB", "16"), b"ERR DB number should be between 0 and 15"),
        (("DB", "x"), b"ERR DB is not an integer or out of range"),
        (("USER", "nobody"), b"ERR No such user 'nobody'"),
        (("CAPA", "redirect"), b"ERR Unknown capa found in the provided filter: redirect"),
        (("NOT-CAPA", "redirect"), b"ERR Unknown capa found in the NOT-CAPA filter: redirect"),
        (("NOT-MAXAGE", "1"), b"ERR syntax error"),
    ],
)
def test_list_filter_errors(r2, filters, error):
    assert r2.call("CLIENT", "LIST", *filters) == ("-", error)


# --- KILL -------------------------------------------------------------------------------------


def test_kill_by_id_closes_the_other_connection(target, r2):
    with target.raw() as other:
        victim = my_id(other)
        assert r2.call("CLIENT", "KILL", "ID", str(victim)) == (":", 1)
        assert other.is_closed()
        assert r2.call("CLIENT", "KILL", "ID", str(victim)) == (":", 0)
        assert listed(r2, "ID", str(victim)) == []


def test_kill_old_form_by_address(target, r2):
    with target.raw() as other:
        (line,) = listed(r2, "ID", str(my_id(other)))
        assert r2.call("CLIENT", "KILL", line["addr"]) == ("+", b"OK")
        assert other.is_closed()
    assert r2.call("CLIENT", "KILL", "1.2.3.4:5") == ("-", b"ERR No such client")


def test_kill_filters_combine(target, r2):
    with target.raw() as a, target.raw() as b:
        a.call("CLIENT", "SETNAME", "keep")
        b.call("CLIENT", "SETNAME", "drop")
        ids = [str(my_id(a)), str(my_id(b))]
        assert r2.call("CLIENT", "KILL", "ID", *ids, "NAME", "drop") == (":", 1)
        assert b.is_closed()
        assert a.call("PING") == ("+", b"PONG")
        assert r2.call("CLIENT", "KILL", "ID", ids[0], "USER", "default", "TYPE", "normal") == (":", 1)
        assert a.is_closed()


def test_repeated_filter_keeps_its_last_value_and_ids_add_up(target, r2):
    """Valkey's tests/unit/introspection.tcl: `NAME a NAME b` is `NAME b`, `ID x ID y` is
    both; a NOT- filter is its own slot; every value is still checked."""
    with target.raw() as a, target.raw() as b, target.raw() as c:
        for client, name in ((a, "a"), (b, "b"), (c, "c")):
            client.call("CLIENT", "SETNAME", name)
        ida, idb, idc = (str(my_id(client)) for client in (a, b, c))

        def names(*filters):
            return sorted(line["name"] for line in listed(r2, *filters))

        assert names("NAME", "a", "NAME", "b") == ["b"]
        assert names("ID", ida, "ID", idb) == ["a", "b"]
        assert names("ID", ida, idb, "ID", idc) == ["a", "b", "c"]
        assert names("NOT-NAME", "a", "NOT-NAME", "b", "ID", ida, idb, idc) == ["a", "c"]
        assert names("NOT-ID", ida, "NOT-ID", idb, "ID", ida, idb, idc) == ["c"]
        assert names("NAME", "a", "NOT-NAME", "a") == []
        assert names("TYPE", "pubsub", "TYPE", "normal", "ID", ida) == ["a"]
        assert names("FLAGS", "r", "FLAGS", "N", "ID", ida) == ["a"]
        assert names("NAME", "a", "SKIPME", "yes", "NAME", "b") == ["b"]
        for users in (("nobody", "default"), ("default", "nobody")):
            assert r2.call("CLIENT", "LIST", "USER", users[0], "USER", users[1]) == (
                "-", b"ERR No such user 'nobody'")
        assert r2.call("CLIENT", "KILL", "NAME", "x", "NAME", "c") == (":", 1)
        assert c.is_closed()
        assert r2.call("CLIENT", "KILL", "ID", ida, "ID", idb) == (":", 2)
        assert a.is_closed() and b.is_closed()


def test_kill_skips_the_caller_unless_told(r2):
    me = str(my_id(r2))
    assert r2.call("CLIENT", "KILL", "ID", me) == (":", 0)
    assert r2.call("PING") == ("+", b"PONG")
    assert r2.call("CLIENT", "KILL", "ID", me, "SKIPME", "no") == (":", 1)
    assert r2.is_closed()


@pytest.mark.parametrize(
    ("args", "error"),
    [
        (("ID", "0"), b"ERR client-id should be greater than 0"),
        (("ID", "abc"), b"ERR syntax error"),
        (("TYPE", "foo"), b"ERR Unknown client type 'foo'"),
        (("SKIPME", "maybe"), b"ERR syntax error"),
        (("USER", "nobody"), b"ERR No such user 'nobody'"),
        (("FOO", "bar"), b"ERR syntax error"),
        (("ID", "1", "TYPE"), b"ERR syntax error"),
        (("MAXAGE", "-1"), b"ERR maxage should be greater than 0"),
        (("MAXAGE", "abc"), b"ERR maxage is not an integer or out of range"),
        ((), b"ERR wrong number of arguments for 'client|kill' command"),
        # every illegal MAXAGE, IDLE and ID, as Valkey's introspection tests give them
        (("ID", "-1"), b"ERR client-id should be greater than 0"),
        (("ID", "1", "ID", "0"), b"ERR client-id should be greater than 0"),
        (("NOT-ID", "0"), b"ERR client-id should be greater than 0"),
        (("ID", "10", "wrong_arg"), b"ERR syntax error"),
        (("ID", "1.5"), b"ERR syntax error"),
        (("MAXAGE", "0"), b"ERR maxage should be greater than 0"),
        (("MAXAGE", "1.5"), b"ERR maxage is not an integer or out of range"),
        (("MAXAGE", "9999999999999999999"), b"ERR maxage is not an integer or out of range"),
        (("IDLE", "0"), b"ERR idle should be greater than 0"),
    ],
)
def test_kill_errors(r2, args, error):
    assert r2.call("CLIENT", "KILL", *args) == ("-", error)


def test_kill_a_blocked_client(target, r2):
    with target.raw() as blocked:
        victim = str(my_id(blocked))
        blocked.send("BLPOP", "nothing", "0")
        for _ in range(50):  # until the server has it blocked
            if listed(r2, "ID", victim, "FLAGS", "b"):
                break
            time.sleep(0.01)
        assert r2.call("CLIENT", "KILL", "ID", victim) == (":", 1)
        assert blocked.is_closed()
    assert r2.call("RPUSH", "nothing", "x") == (":", 1)
    assert r2.call("LLEN", "nothing") == (":", 1)
