"""ACL: users, rules, descriptions, authentication, checks and the log, as Valkey 9.1.2."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from fakekey.testing.raw import RawClient

PW_HASH = b"30c952fab122c3f9759f02a6d95c3758b246b4fee239957b2d4fee46e26170c4"  # sha256("pw")


@pytest.fixture(autouse=True)
def clean_acl(target) -> Iterator[None]:
    """Every test starts and ends with the default user alone and an empty log."""
    yield
    with RawClient(target.host, target.port) as admin:
        admin.call("AUTH", "sec")  # the password tests give the default user, if still set
        admin.call("CONFIG", "SET", "requirepass", "")
        names = [n for (_, n) in admin.call("ACL", "USERS")[1] if n != b"default"]
        if names:
            admin.call("ACL", "DELUSER", *names)
        admin.call("ACL", "SETUSER", "default", "reset", "on", "nopass", "~*", "&*", "+@all")
        admin.call("ACL", "LOG", "RESET")


def line_of(client: RawClient, name: str) -> tuple[str, bytes]:
    """The ACL LIST line of user `name`."""
    prefix = b"user " + name.encode() + b" "
    return next(line for line in client.call("ACL", "LIST")[1] if line[1].startswith(prefix))


def login(target, proto: int, user: str, password: str = "pw") -> RawClient:
    client = target.raw(proto)
    assert client.call("AUTH", user, password) == ("+", b"OK")
    return client


def test_setuser_list_and_getuser_describe_as_valkey(r, proto):
    assert r.call("ACL", "SETUSER", "u", "on", ">pw", "~a*", "%R~r*", "&ch*", "+get", "-@all",
                  "+set", "+client|id") == ("+", b"OK")
    assert r.call("ACL", "LIST") == ("*", [
        ("$", b"user default on nopass ~* &* +@all"),
        ("$", b"user u on #" + PW_HASH + b" ~a* %R~r* resetchannels &ch* -@all +set +client|id"),
    ])
    r.call("ACL", "SETUSER", "g", "reset", "db=3,1,1", "%W~w*", "~a*", "%R~a*", "(+get ~x)",
           "(%RW~y", "resetdbs", "&c)")
    assert line_of(r, "g") == ("$", b"user g off %W~w* ~a* resetchannels db=1,3 -@all "
                                                 b"(~x resetchannels -@all +get) "
                                                 b"(~y resetchannels &c resetdbs -@all)")
    reply = r.call("ACL", "GETUSER", "g")
    flags = ("~" if proto == 3 else "*", [("$", b"off")])
    fields = [
        (b"flags", flags), (b"passwords", ("*", [])), (b"commands", ("$", b"-@all")),
        (b"keys", ("$", b"%W~w* ~a*")), (b"channels", ("$", b"")), (b"databases", ("$", b"db=1,3")),
    ]
    first = [(b"commands", ("$", b"-@all +get")), (b"keys", ("$", b"~x")), (b"channels", ("$", b"")),
             (b"databases", ("$", b"alldbs"))]
    second = [(b"commands", ("$", b"-@all")), (b"keys", ("$", b"~y")), (b"channels", ("$", b"&c")),
              (b"databases", ("$", b""))]
    if proto == 3:
        def as_map(pairs):
            return ("%", [(("$", k), v) for k, v in pairs])
        expected = as_map([*fields, (b"selectors", ("*", [as_map(first), as_map(second)]))])
    else:
        def as_array(pairs):
            return ("*", [item for k, v in pairs for item in (("$", k), v)])
        expected = as_array([*fields, (b"selectors", ("*", [as_array(first), as_array(second)]))])
    assert reply == expected
    assert r.call("ACL", "GETUSER", "nobody") == (("_", None) if proto == 3 else ("$", None))
    assert r.call("ACL", "USERS") == ("*", [("$", b"default"), ("$", b"g"), ("$", b"u")])


def test_command_rules_keep_their_order(r2):
    r2.call("ACL", "SETUSER", "c", "+@all", "-get", "+get", "-@read", "-client|kill", "+client",
            "+select|0", "-@all", "+set", "-set", "+@string")
    assert line_of(r2, "c") == ("$", b"user c off resetchannels -@all -set +@string")
    r2.call("ACL", "SETUSER", "c", "+@all", "-client|kill", "-@read", "+client", "+select|0")
    assert line_of(r2, "c") == ("$", b"user c off resetchannels +@all -@read +client +select|0")


@pytest.mark.parametrize(("rule", "why"), [
    ("foo", "Syntax error"),
    ("+nosuch", "Unknown command or category name in ACL"),
    ("+@nope", "Unknown command or category name in ACL"),
    ("-select|1", "Unknown command or category name in ACL"),
    ("+select|0|1", "Unknown command or category name in ACL"),
    ("+client|id|x", "Allowing first-arg of a subcommand is not supported"),
    ("+get|", "Syntax error"),
    ("%RR~x", "Syntax error"),
    ("%Rx~x", "Syntax error"),
    ("~a b", "Syntax error"),
    ("db=", "Syntax error"),
    ("db=x", "Syntax error"),
    ("db=-1", "The provided database ID is out of range"),
    ("<nopw", "The password you are trying to remove from the user does not exist"),
    ("#abc", "The password hash must be exactly 64 characters and contain only lowercase "
             "hexadecimal characters"),
])
def test_setuser_errors(r2, rule, why):
    assert r2.call("ACL", "SETUSER", "bad", "on", rule) == (
        "-", f"ERR Error in ACL SETUSER modifier '{rule}': {why}".encode())
    assert r2.call("ACL", "GETUSER", "bad") == ("$", None)  # nothing applied


def test_setuser_pattern_after_star_and_parenthesis_errors(r2):
    assert r2.call("ACL", "SETUSER", "bad", "~*", "~a") == ("-", (
        b"ERR Error in ACL SETUSER modifier '~a': Adding a pattern after the * pattern (or the "
        b"'allkeys' flag) is not valid and does not have any effect. Try 'resetkeys' to start "
        b"with an empty list of patterns"))
    assert r2.call("ACL", "SETUSER", "bad", "&*", "&a")[1].startswith(
        b"ERR Error in ACL SETUSER modifier '&a': Adding a pattern after the * pattern (or the "
        b"'allchannels' flag)")
    assert r2.call("ACL", "SETUSER", "bad", "(~a") == (
        "-", b"ERR Unmatched parenthesis in acl selector starting at '(~a'.")
    assert r2.call("ACL", "SETUSER", "a b") == ("-", b"ERR Usernames can't contain spaces or null characters")


def test_auth_with_users(target, r, proto):
    r.call("ACL", "SETUSER", "k", "on", ">p1", "+@all", "~*")
    k = target.raw(proto)
    assert k.call("AUTH", "k", "bad") == ("-", b"WRONGPASS invalid username-password pair or user is disabled.")
    assert k.call("AUTH", "nobody", "p1")[0] == "-"
    assert k.call("AUTH", "k", "p1") == ("+", b"OK")
    assert k.call("ACL", "WHOAMI") == ("$", b"k")
    # a password change or `off` keeps the connection; `reset` takes its rights at once
    r.call("ACL", "SETUSER", "k", "resetpass", ">p3", "off")
    assert k.call("PING") == ("+", b"PONG")
    assert k.call("AUTH", "k", "p3")[0] == "-"  # disabled users cannot log in
    r.call("ACL", "SETUSER", "k", "reset")
    assert k.call("PING") == ("-", b"NOPERM User k has no permissions to run the 'ping' command")
    assert r.call("ACL", "DELUSER", "k", "zz") == (":", 1)
    assert k.is_closed()
    assert r.call("ACL", "DELUSER", "default") == ("-", b"ERR The 'default' user cannot be removed")
    hello = target.raw(2)
    r.call("ACL", "SETUSER", "h", "on", ">pw", "+@all")
    reply = hello.call("HELLO", "3", "AUTH", "h", "pw")
    assert reply[0] == "%"
    assert hello.call("ACL", "WHOAMI") == ("$", b"h")
    assert hello.call("HELLO", "3", "AUTH", "h", "no") == (
        "-", b"WRONGPASS invalid username-password pair or user is disabled.")


def test_requirepass_is_the_default_users_password(target, r, proto):
    r.call("CONFIG", "SET", "requirepass", "sec")
    assert line_of(r, "default") == ("$", b"user default on #" + (
        b"add93534eeb463800fe0ed0946048d33636dd2a014fab92e8a37f77ce98c740b") + b" ~* &* +@all")
    other = RawClient(target.host, target.port)
    # before AUTH nothing but NOAUTH: not even unknown-command or arity errors
    for request in (("NOSUCH",), ("GET",), ("GET", "a"), ("CLIENT", "NOSUCH")):
        assert other.call(*request) == ("-", b"NOAUTH Authentication required.")
    assert other.call("AUTH", "a", "b", "c") == ("-", b"ERR syntax error")
    assert other.call("AUTH", "x") == ("-", b"WRONGPASS invalid username-password pair or user is disabled.")
    assert other.call("HELLO", str(proto))[1].startswith(b"NOAUTH HELLO must be called")
    assert other.call("AUTH", "sec") == ("+", b"OK")
    r.call("CONFIG", "SET", "requirepass", "")
    assert r.call("AUTH", "x") == ("-", b"ERR AUTH <password> called without any password "
                                        b"configured for the default user. Are you sure your "
                                        b"configuration is correct?")


def test_noperm_texts_and_dryrun(target, r, proto):
    r.call("ACL", "SETUSER", "w", "on", ">pw", "~a*", "%R~r*", "&ch*", "+@all", "-flushall", "db=0,2")
    w = login(target, proto, "w")
    assert w.call("GET", "b1") == ("-", b"NOPERM No permissions to access a key")
    assert w.call("SET", "r1", "x") == ("-", b"NOPERM No permissions to access a key")
    assert w.call("GET", "r1")[0] != "-"
    assert w.call("FLUSHALL") == ("-", b"NOPERM No permissions to access database")
    assert w.call("PUBLISH", "zz", "m") == ("-", b"NOPERM No permissions to access a channel")
    assert w.call("SELECT", "1") == ("-", b"NOPERM No permissions to access database")
    assert w.call("MOVE", "a1", "1") == ("-", b"NOPERM No permissions to access database")
    assert w.call("COPY", "a1", "a2", "DB", "1") == ("-", b"NOPERM No permissions to access database")
    dry = [
        (("get", "b"), b"User w has no permissions to access the 'b' key"),
        (("get", "a"), b"OK"),
        (("FlushAll",), b"User w has no permissions to access database FlushAll"),
        (("publish", "zz", "m"), b"User w has no permissions to access the 'zz' channel"),
        (("select", "1"), b"User w has no permissions to access database 1"),
        (("swapdb", "0", "1"), b"User w has no permissions to access database 1"),
        (("psubscribe", "ch*"), b"OK"),
        (("psubscribe", "ch1*"), b"User w has no permissions to access the 'ch1*' channel"),
    ]
    for request, answer in dry:
        reply = r.call("ACL", "DRYRUN", "w", *request)
        assert reply == (("+", answer) if answer == b"OK" else ("$", answer)), request
    r.call("ACL", "SETUSER", "x", "on", "nopass", "~*", "&*", "+@all", "-get", "db=0")
    r.call("SELECT", "1")
    assert r.call("ACL", "DRYRUN", "x", "get", "a") == ("$", b"User x has no permissions to access database get")
    assert r.call("ACL", "DRYRUN", "x", "ping") == ("+", b"OK")
    r.call("SELECT", "0")
    assert r.call("ACL", "DRYRUN", "x", "get", "a") == ("$", b"User x has no permissions to run the 'get' command")
    assert r.call("ACL", "DRYRUN", "nosuch", "get", "a") == ("-", b"ERR User 'nosuch' not found")
    assert r.call("ACL", "DRYRUN", "x", "nosuchcmd") == ("-", b"ERR Command 'nosuchcmd' not found")
    assert r.call("ACL", "DRYRUN", "x", "get") == ("-", b"ERR wrong number of arguments for 'get' command")
    assert r.call("ACL", "DRYRUN", "x", "client") == ("-", b"ERR wrong number of arguments for 'client' command")
    assert r.call("ACL", "DRYRUN", "x", "client", "nosuch") == ("-", b"ERR Command 'client' not found")
    assert r.call("ACL", "DRYRUN", "x", "client", "id") == ("+", b"OK")


def test_selectors_report_the_most_relevant_refusal(r2):
    r2.call("ACL", "SETUSER", "m1", "on", "nopass", "~*", "+@all", "db=0", "(~* +@all -get)")
    r2.call("ACL", "SETUSER", "m2", "on", "nopass", "~a*", "+@all", "db=0", "(~* -@all +set db=0)")
    r2.call("ACL", "SETUSER", "m3", "on", "nopass", "~a*", "+@all", "db=0", "(~b* +@all)")
    r2.call("SELECT", "1")
    assert r2.call("ACL", "DRYRUN", "m1", "get", "a") == ("$", b"User m1 has no permissions to run the 'get' command")
    assert r2.call("ACL", "DRYRUN", "m1", "set", "a", "b") == ("+", b"OK")
    assert r2.call("ACL", "DRYRUN", "m2", "get", "z") == ("$", b"User m2 has no permissions to access database get")
    assert r2.call("ACL", "DRYRUN", "m3", "mget", "z", "a") == ("$", b"User m3 has no permissions to access the 'z' key")
    r2.call("SELECT", "0")
    assert r2.call("ACL", "DRYRUN", "m2", "get", "z") == ("$", b"User m2 has no permissions to access the 'z' key")
    assert r2.call("ACL", "DRYRUN", "m3", "mget", "b", "a", "z") == ("$", b"User m3 has no permissions to access the 'a' key")
    assert r2.call("ACL", "DRYRUN", "m3", "mget", "c", "a") == ("$", b"User m3 has no permissions to access the 'c' key")


def test_log_records_denials(target, r, proto):
    r.call("ACL", "SETUSER", "s", "on", "nopass", "~a*", "&ch1", "+@all")
    s = login(target, proto, "s")
    s.call("GET", "b")
    s.call("GET", "b")
    s.call("PUBLISH", "zz", "m")
    s.call("AUTH", "s2", "x")
    entries = r.call("ACL", "LOG")
    assert entries[0] == "*" and len(entries[1]) == 3
    def fields(entry):
        pairs = entry[1] if proto == 3 else list(zip(entry[1][0::2], entry[1][1::2]))
        return {k[1]: v for k, v in pairs}
    auth, channel, key = (fields(e) for e in entries[1])
    assert [k for k in key] == [b"count", b"reason", b"context", b"object", b"username", b"age-seconds",
                                b"client-info", b"entry-id", b"timestamp-created", b"timestamp-last-updated"]
    assert (key[b"count"], key[b"reason"], key[b"context"], key[b"object"], key[b"username"]) == (
        (":", 2), ("$", b"key"), ("$", b"toplevel"), ("$", b"b"), ("$", b"s"))
    # entry ids count every entry ever made (ACL LOG RESET keeps counting)
    assert channel[b"entry-id"][1] == key[b"entry-id"][1] + 1 == auth[b"entry-id"][1] - 1
    assert key[b"age-seconds"][0] == ("," if proto == 3 else "$")
    assert b" user=s " in key[b"client-info"][1] and b" cmd=get " in key[b"client-info"][1]
    assert (channel[b"reason"], channel[b"object"]) == (("$", b"channel"), ("$", b"zz"))
    assert (auth[b"reason"], auth[b"object"], auth[b"username"]) == (("$", b"auth"), ("$", b"AUTH"), ("$", b"s2"))
    assert len(r.call("ACL", "LOG", "1")[1]) == 1
    assert r.call("ACL", "LOG", "-1") == ("*", [])
    assert r.call("ACL", "LOG", "x") == ("-", b"ERR value is not an integer or out of range")
    assert r.call("ACL", "LOG", "RESET") == ("+", b"OK")
    assert r.call("ACL", "LOG") == ("*", [])


def test_multi_exec_and_scripts_under_a_user(target, r, proto):
    r.call("ACL", "SETUSER", "s", "on", "nopass", "~a*", "&*", "+@all")
    s = login(target, proto, "s", "x")
    s.call("MULTI")
    assert s.call("GET", "b") == ("-", b"NOPERM No permissions to access a key")
    s.call("GET", "a")
    assert s.call("EXEC") == ("-", b"EXECABORT Transaction discarded because of previous errors.")
    s.call("MULTI")
    s.call("GET", "a")
    s.call("SET", "a2", "v")
    r.call("ACL", "SETUSER", "s", "resetkeys", "~a")
    nil = ("_", None) if proto == 3 else ("$", None)
    assert s.call("EXEC") == ("*", [nil, ("-", (
        b"NOPERM ACLs rules changed between the moment the transaction was accumulated and the "
        b"EXEC call. This command is no longer allowed for the following reason: no permission "
        b"to touch the specified keys"))])
    assert s.call("EVAL", "return redis.call('get','b')", "0") == (
        "-", b"ERR ACL failure in script: No permissions to access a key script: on @user_script:1.")
    assert s.call("EVAL", "return redis.pcall('get','b')", "0") == (
        "-", b"ERR ACL failure in script: No permissions to access a key")
    assert s.call("EVAL", "return redis.call('get',KEYS[1])", "1", "b") == (
        "-", b"NOPERM No permissions to access a key")
    contexts = {e[1][5][1] if proto == 2 else e[1][2][1][1] for e in r.call("ACL", "LOG")[1]}
    assert contexts == {b"multi", b"lua", b"toplevel"}


def test_subscriber_losing_its_channel_is_disconnected(target, r, proto):
    r.call("ACL", "SETUSER", "s", "on", "nopass", "~*", "&ch1", "&ch2", "+@all")
    s = login(target, proto, "s", "x")
    s.call("SUBSCRIBE", "ch1")
    r.call("ACL", "SETUSER", "s", "&ch3")
    assert not s.is_closed(0.2)
    r.call("ACL", "SETUSER", "s", "resetchannels", "&ch2")
    assert s.is_closed()


def test_cat_genpass_whoami_help_and_file_errors(r2):
    assert r2.call("ACL", "CAT")[1][:3] == [("$", b"keyspace"), ("$", b"read"), ("$", b"write")]
    strings = {n for _, n in r2.call("ACL", "CAT", "string")[1]}
    assert {b"get", b"set", b"append"} <= strings and b"hset" not in strings
    assert r2.call("ACL", "CAT", "nope") == ("-", b"ERR Unknown category 'nope'")
    assert len(r2.call("ACL", "GENPASS")[1]) == 64
    assert len(r2.call("ACL", "GENPASS", "5")[1]) == 2
    assert r2.call("ACL", "GENPASS", "0") == ("-", b"ERR ACL GENPASS argument must be the number "
                                                    b"of bits for the output password, a positive "
                                                    b"number up to 4096")
    assert r2.call("ACL", "WHOAMI") == ("$", b"default")
    assert r2.call("ACL", "HELP")[1][0] == ("+", b"ACL <subcommand> [<arg> [value] [opt] ...]. Subcommands are:")
    for sub in ("SAVE", "LOAD"):
        assert r2.call("ACL", sub)[1].startswith(b"ERR This instance is not configured to use an ACL file.")
    assert r2.call("ACL", "NOPE") == ("-", b"ERR unknown subcommand 'NOPE'. Try ACL HELP.")
    assert r2.call("ACL", "LIST", "x") == ("-", b"ERR wrong number of arguments for 'acl|list' command")


def test_client_kill_user(target, r2):
    r2.call("ACL", "SETUSER", "k", "on", ">pw", "+@all")
    k = login(target, 2, "k")
    assert r2.call("CLIENT", "KILL", "USER", "k") == (":", 1)
    assert k.is_closed()
    assert r2.call("CLIENT", "KILL", "USER", "zz") == ("-", b"ERR No such user 'zz'")


def test_functions_and_acl_check_cmd_run_under_the_callers_user(target, r, proto):
    r.call("FUNCTION", "LOAD", "REPLACE", "#!lua name=acltest\n"
           "server.register_function('g', function(k, a) return server.call('get', a[1]) end)")
    r.call("ACL", "SETUSER", "f", "on", "nopass", "~a*", "+@all", "-lpush")
    f = login(target, proto, "f", "x")
    nil = ("_", None) if proto == 3 else ("$", None)
    try:
        assert f.call("FCALL", "g", "0", "b") == (
            "-", b"ERR ACL failure in script: No permissions to access a key script: on @user_function:2.")
        assert f.call("FCALL", "g", "0", "a") == nil
        assert f.call("EVAL", "return redis.acl_check_cmd('get','b')", "0") == nil
        assert f.call("EVAL", "return redis.acl_check_cmd('get','a')", "0") == (":", 1)
        assert f.call("EVAL", "return redis.call('lpush','a','x')", "0") == (
            "-", b"ERR ACL failure in script: User f has no permissions to run the 'lpush' command "
                 b"script: on @user_script:1.")
        # acl_check_cmd asks without logging: only the two refused calls are in the log
        entries = r.call("ACL", "LOG")[1]
        assert [e[1][1] if proto == 2 else e[1][0][1] for e in entries] == [(":", 1), (":", 1)]
    finally:
        r.call("FUNCTION", "DELETE", "acltest")


def test_a_woken_blocked_client_is_checked_again(target, r, proto):
    r.call("ACL", "SETUSER", "bl", "on", "nopass", "~a*", "+@all")
    b = login(target, proto, "bl", "x")
    b.send("BLPOP", "a1", "0")
    deadline = time.monotonic() + 5
    while b"cmd=blpop" not in r.call("CLIENT", "LIST", "USER", "bl")[1]:  # until it waits
        assert time.monotonic() < deadline
        time.sleep(0.01)
    r.call("ACL", "SETUSER", "bl", "resetkeys", "~z")
    assert r.call("LPUSH", "a1", "v") == (":", 1)
    assert b.read() == ("-", b"NOPERM No permissions to access a key")
    assert r.call("LLEN", "a1") == (":", 1)  # the value stays for others


def cmdstat(r, name: str) -> bytes | None:
    """The INFO commandstats line of one command, None when it has none."""
    info = r.call("INFO", "commandstats")[1]
    text = info if isinstance(info, bytes) else info.split(b":", 1)[1]
    prefix = b"cmdstat_" + name.encode() + b":"
    return next((line[len(prefix):] for line in text.split(b"\r\n") if line.startswith(prefix)), None)


def test_a_refusal_on_recheck_counts_as_valkey(target, r):
    """tests/unit/acl.tcl: a woken BLPOP refused is a rejected call (no call, no time), an
    EXEC whose queued command is refused at EXEC a failed one."""
    r.call("CONFIG", "RESETSTAT")
    r.call("ACL", "SETUSER", "bl", "on", "nopass", "~*", "+@all")
    b = login(target, 2, "bl", "x")
    b.send("BLPOP", "a1", "0")
    deadline = time.monotonic() + 5
    while b"cmd=blpop" not in r.call("CLIENT", "LIST", "USER", "bl")[1]:  # until it waits
        assert time.monotonic() < deadline
        time.sleep(0.01)
    r.call("ACL", "SETUSER", "bl", "resetkeys")
    r.call("LPUSH", "a1", "v")
    assert b.read() == ("-", b"NOPERM No permissions to access a key")
    blpop = cmdstat(r, "blpop")
    assert blpop is not None and blpop.startswith(b"calls=0,usec=0,")  # its wait dropped
    assert blpop.endswith(b",rejected_calls=1,failed_calls=0")
    r.call("ACL", "SETUSER", "bl", "allkeys")
    b.call("MULTI")
    b.call("GET", "k")
    r.call("ACL", "SETUSER", "bl", "resetkeys")
    assert b.call("EXEC")[1][0][0] == "-"
    assert cmdstat(r, "exec").endswith(b",rejected_calls=0,failed_calls=1")
    assert cmdstat(r, "get") is None


def test_info_counts_each_kind_of_denial(r, target, proto):
    """INFO stats lists the six acl_access_denied_* counters, in Valkey's order."""
    info = r.call("INFO", "stats")[1]
    text = info if isinstance(info, bytes) else info.split(b":", 1)[1]
    names = [line.split(b":")[0] for line in text.split(b"\r\n") if line.startswith(b"acl_access_denied_")]
    assert names == [b"acl_access_denied_" + w for w in (b"auth", b"cmd", b"key", b"channel", b"tls_cert", b"db")]
    r.call("ACL", "SETUSER", "nodb", "on", ">pw", "+@all", "~*", "db=1")
    client = login(target, proto, "nodb")
    assert client.call("GET", "k")[0] == "-"
    info = r.call("INFO", "stats")[1]
    text = info if isinstance(info, bytes) else info.split(b":", 1)[1]
    assert b"acl_access_denied_db:" in text and b"acl_access_denied_db:0\r\n" not in text


@pytest.mark.parametrize(
    ("request_", "key"),
    [
        (("SET", "w1", "v"), None),  # SET writes its key only (OW update)
        (("SET", "w1", "get"), None),  # a value "get" is not the GET option
        (("SET", "w1", "v", "GET"), "w1"),  # with GET it reads it too
        (("SET", "r1", "v"), "r1"),
        (("BITFIELD", "r1", "GET", "u8", "0"), None),  # only GETs: it only reads
        (("BITFIELD", "r1"), None),
        (("BITFIELD", "r1", "GET", "u8"), "r1"),  # what it cannot parse may write
        (("BITFIELD", "r1", "SET", "u8", "0", "1"), "r1"),
        (("BITFIELD", "w1", "INCRBY", "u8", "0", "1"), "w1"),  # reads and writes
    ],
)
def test_variable_key_flags_decide_the_key_permissions(r2, request_, key):
    r2.call("ACL", "SETUSER", "v", "on", "nopass", "%W~w*", "%R~r*", "+@all")
    answer = ("+", b"OK") if key is None else (
        "$", b"User v has no permissions to access the '%s' key" % key.encode())
    assert r2.call("ACL", "DRYRUN", "v", *request_) == answer
