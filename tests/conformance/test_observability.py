"""MONITOR, SLOWLOG, COMMANDLOG, LOLWUT and the time INFO commandstats measures, on both
targets in both protocols. Times and ports vary: lines are compared with them taken out."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator

import pytest

from fakekey.testing.raw import RawClient
from fakekey.testing.targets import Target

LINE = re.compile(rb"^(\d{10})\.(\d{6}) \[(\d+) (lua|127\.0\.0\.1:\d+)\] (.*)$", re.S)
SENTINEL = ("ECHO", "the-end")


@pytest.fixture
def other(target: Target) -> Iterator[RawClient]:
    client = target.raw(2)
    yield client
    client.close()


@pytest.fixture
def slowlog_all(r2: RawClient) -> Iterator[RawClient]:
    """Every command goes to the slow log for the test; the defaults come back after."""
    assert r2.call("CONFIG", "SET", "slowlog-log-slower-than", "0") == ("+", b"OK")
    r2.call("SLOWLOG", "RESET")
    yield r2
    r2.call("CONFIG", "SET", "slowlog-log-slower-than", "10000", "slowlog-max-len", "128")
    r2.call("SLOWLOG", "RESET")


def addr_of(client: RawClient) -> bytes:
    info = client.call("CLIENT", "INFO")[1]
    return re.search(rb"\baddr=(\S+)", info).group(1)


def watch(monitor: RawClient, sender: RawClient, *commands: tuple) -> list[tuple[bytes, bytes, bytes]]:
    """Run `commands` from `sender`; MONITOR's lines up to the sentinel, as (db, origin,
    arguments), with each line's format checked."""
    for command in (*commands, SENTINEL):
        sender.call(*command)
    seen = []
    while True:
        kind, text = monitor.read()
        assert kind == "+", (kind, text)
        match = LINE.match(text)
        assert match, text
        db, origin, args = match.group(3), match.group(4), match.group(5)
        if args == b'"ECHO" "the-end"':
            return seen
        seen.append((db, origin, args))


def start_monitor(r: RawClient) -> None:
    assert r.call("MONITOR") == ("+", b"OK")


def test_monitor_shows_commands_as_valkey_quotes_them(r, other):
    me = addr_of(other)
    start_monitor(r)
    lines = watch(r, other, ("SET", "k", 'v\x00\n"\\ \xe9\x7f\x01\t\r\x07\x08'), ("GET", "k"),
                  ("SELECT", "3"), ("SET", "x", "1"), ("SELECT", "0"))
    assert lines == [
        (b"0", me, b'"SET" "k" "v\\x00\\n\\"\\\\ \\xc3\\xa9\\x7f\\x01\\t\\r\\a\\b"'),
        (b"0", me, b'"GET" "k"'),
        (b"3", me, b'"SELECT" "3"'),
        (b"3", me, b'"SET" "x" "1"'),
        (b"0", me, b'"SELECT" "0"'),
    ]


def test_monitor_hides_admin_rejected_and_redacted(r, other):
    start_monitor(r)
    lines = watch(r, other,
                  ("AUTH", "secret"), ("AUTH", "user", "secret"), ("AUTH", "a", "b", "c"),
                  ("HELLO", "2", "AUTH", "default", "pw"), ("HELLO", "9", "AUTH", "a", "b"),
                  ("HELLO", "2", "AUTH", "a"), ("ACL", "WHOAMI"), ("ACL", "SETUSER", "u", "on"),
                  ("ACL", "DELUSER", "u"), ("CONFIG", "GET", "port"), ("CLIENT", "LIST"),
                  ("CLIENT", "ID"), ("SLOWLOG", "LEN"), ("NOSUCH", "x"), ("GET",),
                  ("MIGRATE", "127.0.0.1", "1", "k", "0", "5", "AUTH2", "us", "pw"))
    assert [args for _, _, args in lines] == [
        b'"AUTH" "(redacted)"',
        b'"AUTH" "(redacted)" "(redacted)"',
        b'"AUTH" "a" "b" "c"',  # refused before AUTH reads its arguments
        b'"HELLO" "2" "AUTH" "(redacted)" "(redacted)"',
        b'"HELLO" "9" "AUTH" "a" "b"',
        b'"HELLO" "2" "AUTH" "a"',
        b'"ACL" "WHOAMI"',
        b'"CLIENT" "ID"',
        b'"MIGRATE" "127.0.0.1" "1" "k" "0" "5" "AUTH2" "(redacted)" "(redacted)"',
    ]


def test_monitor_shows_transactions_and_scripts_in_order(r, other):
    me = addr_of(other)
    start_monitor(r)
    lines = watch(r, other,
                  ("MULTI",), ("SET", "a", "1"), ("INCR", "a"), ("EXEC",),
                  ("EVAL", "redis.call('select', '5'); return redis.call('set', 'b', '\\1')", "0"),
                  ("EVAL", "return redis.call('hello')", "0"),
                  ("EVALSHA", "0" * 40, "0"),
                  ("MULTI",), ("EVAL", "return redis.call('incr', 'n')", "0"), ("PING",), ("EXEC",),
                  ("MULTI",), ("GET",), ("EXEC",))
    assert lines == [
        (b"0", me, b'"MULTI"'),
        (b"0", me, b'"SET" "a" "1"'),
        (b"0", me, b'"INCR" "a"'),
        (b"0", me, b'"EXEC"'),
        (b"0", me, b'"EVAL" "redis.call(\'select\', \'5\'); return redis.call(\'set\', \'b\', \'\\\\1\')" "0"'),
        (b"5", b"lua", b'"select" "5"'),
        (b"5", b"lua", b'"set" "b" "\\x01"'),
        (b"0", me, b'"EVAL" "return redis.call(\'hello\')" "0"'),
        (b"0", me, b'"EVALSHA" "' + b"0" * 40 + b'" "0"'),
        (b"0", me, b'"MULTI"'),
        (b"0", me, b'"EVAL" "return redis.call(\'incr\', \'n\')" "0"'),
        (b"0", b"lua", b'"incr" "n"'),
        (b"0", me, b'"PING"'),
        (b"0", me, b'"EXEC"'),
        (b"0", me, b'"MULTI"'),
        (b"0", me, b'"EXEC"'),
    ]


def test_monitor_line_times_are_the_servers(r, other):
    start_monitor(r)
    other.call("SET", "t", "1")
    _, text = r.read()
    seconds = int(LINE.match(text).group(1))
    server_time = int(other.call("TIME")[1][0][1])
    assert abs(server_time - seconds) <= 2


def test_monitor_client_is_a_replica_of_sorts(r, other):
    monitor_id = r.call("CLIENT", "ID")[1]
    start_monitor(r)
    assert r.call("GET", "k") == ("-", b"ERR Replica can't interact with the keyspace")
    assert r.call("EVAL", "return 1", "0") == ("-", b"ERR Replica can't interact with the keyspace")
    assert r.call("PUBLISH", "c", "m") == ("-", b"ERR Replica can't interact with the keyspace")
    clients = other.call("CLIENT", "LIST")[1].decode()
    me = next(line for line in clients.splitlines() if line.startswith(f"id={monitor_id} "))
    assert " flags=O " in me
    # a monitor's own command shows after its reply
    r.send("PING")
    assert r.read() == ("+", b"PONG")
    assert LINE.match(r.read()[1]).group(5) == b'"PING"'
    r.send("MONITOR")  # ignored: no reply at all
    assert r.call("ECHO", "x") == ("$", b"x")
    assert LINE.match(r.read()[1]).group(5) == b'"ECHO" "x"'
    assert r.call("RESET") == ("+", b"RESET")
    assert r.call("SET", "k", "v") == ("+", b"OK")  # monitor mode is over
    assert other.call("GET", "k") == ("$", b"v")
    assert r.call("ECHO", "y") == ("$", b"y")  # and no more lines come


def test_monitor_is_refused_inside_exec(r2):
    assert r2.call("MULTI") == ("+", b"OK")
    assert r2.call("MONITOR") == ("+", b"QUEUED")
    assert r2.call("EXEC") == ("*", [("-", b"ERR MONITOR isn't allowed for DENY BLOCKING client")])


# --- SLOWLOG and COMMANDLOG -----------------------------------------------------------------


def entries(client: RawClient, *get: str) -> list[list]:
    kind, items = client.call(*(get or ("SLOWLOG", "GET", "-1")))
    assert kind == "*"
    out = []
    for kind, fields in items:
        assert kind == "*" and len(fields) == 6
        (k1, eid), (k2, stamp), (k3, micros), (k4, args), (k5, peer), (k6, name) = fields
        assert (k1, k2, k3, k4, k5, k6) == (":", ":", ":", "*", "$", "$")
        assert eid >= 0 and micros >= 0 and stamp > 1_600_000_000
        out.append([eid, stamp, micros, [a for _, a in args], peer, name])
    return out


def test_slowlog_logs_everything_at_zero(slowlog_all, target):
    log = slowlog_all
    log.call("CLIENT", "SETNAME", "watcher")
    me = addr_of(log)
    for command in [("SET", "k", "v"), ("AUTH", "x"), ("HELLO", "2", "AUTH", "default", "pw"),
                    ("RPUSH", "l", *map(str, range(40))), ("SET", "big", "y" * 200),
                    ("MULTI",), ("INCR", "n"), ("PING",), ("EXEC",),
                    ("EVAL", "return redis.call('get', 'k')", "0"), ("GET",), ("NOSUCH",),
                    ("BLPOP", "nothing", "0.01"), ("ACL", "SETUSER", "someone", ">pw"),
                    ("CONFIG", "SET", "requirepass", "", "maxmemory", "0", "masteruser", "")]:
        log.call(*command)
    got = list(reversed(entries(log)))
    log.call("ACL", "DELUSER", "someone")
    assert [e[3] for e in got] == [
        [b"SLOWLOG", b"RESET"],
        [b"CLIENT", b"SETNAME", b"watcher"],
        [b"CLIENT", b"INFO"],
        [b"SET", b"k", b"v"],
        [b"AUTH", b"(redacted)"],
        [b"HELLO", b"2", b"AUTH", b"(redacted)", b"(redacted)"],
        [b"RPUSH", b"l", *[str(i).encode() for i in range(29)], b"... (11 more arguments)"],
        [b"SET", b"big", b"y" * 128 + b"... (72 more bytes)"],
        [b"MULTI"],
        [b"INCR", b"n"],  # EXEC itself is never logged, what it ran is
        [b"PING"],
        [b"get", b"k"],  # a script's command, under its caller's address and name
        [b"EVAL", b"return redis.call('get', 'k')", b"0"],
        [b"BLPOP", b"nothing", b"0.01"],
        [b"ACL", b"SETUSER", b"(redacted)", b"(redacted)"],
        [b"CONFIG", b"SET", b"requirepass", b"(redacted)", b"maxmemory", b"0", b"masteruser", b"(redacted)"],
    ]
    ids = [e[0] for e in got]
    assert ids == list(range(ids[0], ids[0] + len(ids)))
    assert {e[4] for e in got} == {me}
    assert [e[5] for e in got[:2]] == [b"", b"watcher"] and {e[5] for e in got[2:]} == {b"watcher"}
    stamps = [e[1] for e in got]
    assert stamps == sorted(stamps) and abs(int(log.call("TIME")[1][0][1]) - stamps[-1]) <= 2
    # then the SLOWLOG GET itself, ACL DELUSER and TIME
    assert log.call("SLOWLOG", "LEN") == (":", len(got) + 3)


def test_slowlog_get_count_len_reset_and_max_len(slowlog_all):
    log = slowlog_all
    for i in range(5):
        log.call("SET", f"k{i}", "v")
    newest = entries(log, "SLOWLOG", "GET", "2")
    assert [e[3] for e in newest] == [[b"SET", b"k4", b"v"], [b"SET", b"k3", b"v"]]
    assert len(entries(log, "SLOWLOG", "GET")) == 7  # RESET, the SETs, the GET above
    assert log.call("SLOWLOG", "GET", "0") == ("*", [])
    assert log.call("CONFIG", "SET", "slowlog-max-len", "3") == ("+", b"OK")
    assert log.call("SLOWLOG", "LEN") == (":", 3)
    assert [e[3][0] for e in entries(log)] == [b"SLOWLOG", b"CONFIG", b"SLOWLOG"]
    assert log.call("SLOWLOG", "RESET") == ("+", b"OK")
    assert [e[3] for e in entries(log)] == [[b"SLOWLOG", b"RESET"]]
    assert log.call("CONFIG", "SET", "slowlog-log-slower-than", "-1") == ("+", b"OK")
    log.call("SLOWLOG", "RESET")
    log.call("SET", "k", "v")
    assert log.call("SLOWLOG", "LEN") == (":", 0)


def test_commandlog_slow_is_the_slowlog(slowlog_all):
    log = slowlog_all
    log.call("SET", "k", "v")
    assert entries(log, "COMMANDLOG", "GET", "1", "slow")[0][3] == [b"SET", b"k", b"v"]
    assert log.call("COMMANDLOG", "LEN", "SLOW") == (":", 3)  # RESET, SET, GET
    assert log.call("SLOWLOG", "LEN") == (":", 4)  # and the LEN before
    assert log.call("COMMANDLOG", "RESET", "slow") == ("+", b"OK")
    assert [e[3] for e in entries(log)] == [[b"COMMANDLOG", b"RESET", b"slow"]]
    for kind in ("large-request", "large-reply"):  # (other tests may have filled them)
        assert log.call("COMMANDLOG", "RESET", kind) == ("+", b"OK")
        assert log.call("COMMANDLOG", "LEN", kind) == (":", 0)
        assert log.call("COMMANDLOG", "GET", "-1", kind) == ("*", [])


@pytest.mark.parametrize(("args", "error"), [
    (("SLOWLOG", "GET", "-2"), b"ERR count should be greater than or equal to -1"),
    (("SLOWLOG", "GET", "x"), b"ERR count should be greater than or equal to -1"),
    (("SLOWLOG", "GET", "1", "2"),
     b"ERR unknown subcommand or wrong number of arguments for 'GET'. Try SLOWLOG HELP."),
    (("SLOWLOG", "LEN", "x"), b"ERR wrong number of arguments for 'slowlog|len' command"),
    (("SLOWLOG", "FOO"), b"ERR unknown subcommand 'FOO'. Try SLOWLOG HELP."),
    (("SLOWLOG",), b"ERR wrong number of arguments for 'slowlog' command"),
    (("COMMANDLOG", "GET", "1"), b"ERR wrong number of arguments for 'commandlog|get' command"),
    (("COMMANDLOG", "GET", "x", "bad"), b"ERR count should be greater than or equal to -1"),
    (("COMMANDLOG", "GET", "1", "bad"),
     b"ERR type should be one of the following: slow, large-request, large-reply"),
    (("COMMANDLOG", "LEN", "bad"),
     b"ERR type should be one of the following: slow, large-request, large-reply"),
    (("COMMANDLOG", "RESET"), b"ERR wrong number of arguments for 'commandlog|reset' command"),
    (("COMMANDLOG", "FOO", "x"), b"ERR unknown subcommand 'FOO'. Try COMMANDLOG HELP."),
])
def test_log_errors(r, args, error):
    assert r.call(*args) == ("-", error)


def test_log_help(r):
    kind, lines = r.call("SLOWLOG", "HELP")
    assert kind == "*" and lines[0] == ("+", b"SLOWLOG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:")
    assert lines[-2:] == [("+", b"HELP"), ("+", b"    Print this help.")] and len(lines) == 12
    kind, lines = r.call("COMMANDLOG", "HELP")
    assert kind == "*" and len(lines) == 16
    assert lines[1] == ("+", b"GET <count> <type>")


def test_config_aliases_of_the_slow_log(r2):
    for old, new in (("slowlog-log-slower-than", "commandlog-execution-slower-than"),
                     ("slowlog-max-len", "commandlog-slow-execution-max-len")):
        assert r2.call("CONFIG", "GET", old)[1][1] == r2.call("CONFIG", "GET", new)[1][1]


# --- INFO commandstats -----------------------------------------------------------------------


def test_commandstats_measure_time(r2):
    r2.call("CONFIG", "RESETSTAT")
    for _ in range(20):
        r2.call("SET", "k", "v" * 1000)
    stats = r2.call("INFO", "commandstats")[1].decode()
    line = re.search(r"cmdstat_set:calls=(\d+),usec=(\d+),usec_per_call=([\d.]+),", stats)
    calls, usec, per_call = int(line.group(1)), int(line.group(2)), float(line.group(3))
    assert calls == 20 and usec > 0
    assert per_call == pytest.approx(usec / calls, abs=0.01)


# --- LOLWUT -----------------------------------------------------------------------------------


def lolwut(r: RawClient, *args: str) -> bytes:
    kind, text = r.call("LOLWUT", *args)
    if kind == "=":
        assert text[:4] == b"txt:"
        return text[4:]
    assert kind == "$"
    return text


@pytest.mark.parametrize("args", [
    ("20", "10", "-0.7", "0.27"), ("VERSION", "9", "33", "7", "0.285", "0.01"),
    ("1", "1", "0", "0"), ("500", "200", "-0.8", "0.156"), ("7", "5", "inf", "1"),
    ("7", "5", "0x10", "1"), ("VERSION", "4294967305", "3", "2", "0.1", "0.2"),
])
def test_lolwut_julia_set_with_given_constants(r, args):
    art = lolwut(r, *args)
    assert art.endswith(b"Don't forget to have fun! Valkey ver. 9.1.2\n")
    # the same constants draw the same bytes: the checksums of Valkey 9.1.2's drawings
    assert hashlib.sha256(art).hexdigest()[:16] == JULIA_SHA256[args]


JULIA_SHA256 = {
    ("20", "10", "-0.7", "0.27"): "735db99b83f1e2f2",
    ("VERSION", "9", "33", "7", "0.285", "0.01"): "9651878a3423b67b",
    ("1", "1", "0", "0"): "e8a150fde502b993",
    ("500", "200", "-0.8", "0.156"): "3dbbc7e1017fc1b9",
    ("7", "5", "inf", "1"): "6dadd3a1f1646869",
    ("7", "5", "0x10", "1"): "e2f417bd5d2476ff",
    ("VERSION", "4294967305", "3", "2", "0.1", "0.2"): "230e11019e9b6f59",
}


def test_lolwut_default_is_an_80_by_40_julia_set(r):
    art = lolwut(r).split(b"\n")
    assert [len(line) for line in art[:40]] == [80] * 40
    assert all(set(line) <= set(b" .:-=+*%#&@") for line in art[:40])
    assert re.fullmatch(rb"Ascii representation of Julia set with constant -?\d\.\d\d \+ -?\d\.\d\di", art[40])
    assert art[41:] == [b"Don't forget to have fun! Valkey ver. 9.1.2", b""]


@pytest.mark.parametrize("version", ["7", "10", "0", "-1", "4"])
def test_lolwut_other_versions_name_the_server(r, version):
    assert lolwut(r, "VERSION", version) == b"Valkey ver.9.1.2\n"


@pytest.mark.parametrize(("args", "error"), [
    (("5",), b"ERR Syntax error. Use: LOLWUT [columns rows] [real imaginary]"),
    (("5", "5", "1"), b"ERR Syntax error. Use: LOLWUT [columns rows] [real imaginary]"),
    (("5", "5", "1", "2", "3"), b"ERR Syntax error. Use: LOLWUT [columns rows] [real imaginary]"),
    (("VERSION",), b"ERR Syntax error. Use: LOLWUT [columns rows] [real imaginary]"),
    (("x", "5"), b"ERR value is not an integer or out of range"),
    (("VERSION", "x"), b"ERR value is not an integer or out of range"),
    (("2", "2", "x", "1"), b"ERR value is not a valid float"),
    (("2", "2", " 1", "1"), b"ERR value is not a valid float"),
    (("2", "2", "1", "nan"), b"ERR value is not a valid float"),
])
def test_lolwut_errors(r, args, error):
    assert r.call("LOLWUT", *args) == ("-", error)


@pytest.mark.fakekey_only
def test_frozen_clock_stamps_monitor_and_slow_log(slowlog_all, r, other):
    """fakekey's choice: MONITOR and the logs read the server's clock, frozen or not."""
    assert slowlog_all.call("FAKEKEY.CLOCK", "SET", "1700000000123") == ("+", b"OK")
    try:
        start_monitor(r)
        other.call("SET", "frozen", "1")
        assert r.read()[1].startswith(b"1700000000.123000 [0 ")
        assert entries(slowlog_all, "SLOWLOG", "GET", "1")[0][1:4:2] == [1700000000, [b"SET", b"frozen", b"1"]]
    finally:
        slowlog_all.call("FAKEKEY.CLOCK", "REAL")


@pytest.fixture
def size_logs(r: RawClient) -> Iterator[RawClient]:
    """COMMANDLOG's size kinds with a 100-byte threshold, emptied first."""
    for kind in ("large-request", "large-reply"):
        r.call("COMMANDLOG", "RESET", kind)
    r.call("CONFIG", "SET", "commandlog-request-larger-than", "100")  # each request under 100
    r.call("CONFIG", "SET", "commandlog-reply-larger-than", "100")
    yield r
    r.call("CONFIG", "SET", "commandlog-request-larger-than", "1048576",
           "commandlog-reply-larger-than", "1048576")
    for kind in ("large-request", "large-reply"):
        r.call("COMMANDLOG", "RESET", kind)


def test_commandlog_large_request_and_reply(size_logs):
    """A request's bytes as read; a reply's bytes as sent, inside EXEC counted from the
    start of EXEC's reply (the array header included); queued commands are logged when
    they run, not when queued; small ones never."""
    r = size_logs
    big, other = "x" * 200, "z" * 150
    r.call("SET", "k", big)
    r.call("SET", "small", "y")
    r.call("GET", "k")
    r.call("MULTI")
    r.call("GET", "k")
    r.call("SET", "k2", other)
    r.call("EXEC")
    requests = [(e[2], e[3]) for e in entries(r, "COMMANDLOG", "GET", "-1", "large-request")]
    cut = big[:128].encode() + b"... (72 more bytes)"
    assert requests == [(228, [b"SET", b"k", cut])]
    header = 4  # EXEC's "*2\r\n", in both protocols
    replies = [(e[2], e[3][:2]) for e in entries(r, "COMMANDLOG", "GET", "-1", "large-reply")
               if e[3][0] != b"COMMANDLOG"]  # the large-request listing's own reply
    assert replies == [(208 + header + 5, [b"SET", b"k2"]), (208 + header, [b"GET", b"k"]), (208, [b"GET", b"k"])]


def test_commandlog_large_reply_of_a_long_exec_keeps_the_newest_and_counts_them_all(size_logs):
    """Past the threshold every later command of an EXEC is logged: only the newest
    max-len entries stay, and the ids count every one of them."""
    r = size_logs

    def newest(count: str) -> list[list]:  # read with the threshold out of reach
        r.call("CONFIG", "SET", "commandlog-reply-larger-than", "1000000")
        got = entries(r, "COMMANDLOG", "GET", count, "large-reply")
        r.call("CONFIG", "SET", "commandlog-reply-larger-than", "100")
        return got

    r.call("CONFIG", "SET", "commandlog-large-reply-max-len", "3")
    try:
        r.call("SET", "big", "x" * 200)
        r.call("SET", "n", "0")
        r.call("GET", "big")
        [marker] = newest("1")
        count = 60  # ":N\r\n" replies: past 100 bytes after about twenty of them
        r.pipeline(("MULTI",), *[("INCR", "n")] * count, ("EXEC",))
        kept = newest("-1")
        header = len(b"*%d\r\n" % count)
        sent = [header + sum(len(b":%d\r\n" % i) for i in range(1, n + 1)) for n in range(1, count + 1)]
        logged = sum(1 for size in sent if size > 100)
        assert [(e[0], e[2], e[3]) for e in kept] == [
            (marker[0] + logged - j, sent[-1 - j], [b"INCR", b"n"]) for j in range(3)]
    finally:
        r.call("CONFIG", "SET", "commandlog-large-reply-max-len", "128")
