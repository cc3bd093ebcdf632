"""Server commands: TIME, DBSIZE, FLUSHDB/FLUSHALL, SWAPDB, INFO, DEBUG, SHUTDOWN, SAVE,
LASTSAVE, WAIT, ROLE."""

import re
import time

import pytest

from fakekey import Server
from fakekey.testing.raw import RawClient

DEFAULT_SECTIONS = ["Server", "Clients", "Memory", "Persistence", "Stats", "Replication", "CPU",
                    "Modules", "Errorstats", "Cluster", "Keyspace"]


def info(r, *sections) -> str:
    """INFO's text: a bulk string in RESP2, a `txt` verbatim string in RESP3."""
    kind, data = r.call("INFO", *sections)
    if kind == "=":
        assert data.startswith(b"txt:")
        data = data[4:]
    else:
        assert kind == "$"
    return data.decode()


def info_fields(r, section) -> dict[str, str]:
    text = info(r, section)
    return dict(line.split(":", 1) for line in text.split("\r\n")[1:] if line)


def headers(text: str) -> list[str]:
    return [line[2:] for line in text.split("\r\n") if line.startswith("# ")]


# --- TIME, DBSIZE ---------------------------------------------------------------------------


def test_time(r2):
    kind, (seconds, micros) = r2.call("TIME")
    assert kind == "*" and seconds[0] == micros[0] == "$"
    assert abs(int(seconds[1]) - time.time()) < 5
    assert 0 <= int(micros[1]) < 1_000_000
    assert r2.call("TIME", "x") == ("-", b"ERR wrong number of arguments for 'time' command")


def test_dbsize_counts_the_selected_database(r2):
    assert r2.call("DBSIZE") == (":", 0)
    r2.call("SET", "a", "1")
    r2.call("SET", "b", "1")
    assert r2.call("DBSIZE") == (":", 2)
    r2.call("SELECT", "1")
    assert r2.call("DBSIZE") == (":", 0)


# --- FLUSHDB, FLUSHALL, SWAPDB --------------------------------------------------------------


def test_flushdb_empties_only_the_selected_database(r2):
    r2.pipeline(("SET", "a", "1"), ("SELECT", "1"), ("SET", "b", "1"))
    assert r2.call("FLUSHDB") == ("+", b"OK")
    assert r2.call("DBSIZE") == (":", 0)
    r2.call("SELECT", "0")
    assert r2.call("DBSIZE") == (":", 1)


def test_flushall_empties_every_database(r2):
    r2.pipeline(("SET", "a", "1"), ("SELECT", "3"), ("SET", "b", "1"))
    for mode in ((), ("ASYNC",), ("SYNC",), ("async",)):
        assert r2.call("FLUSHALL", *mode) == ("+", b"OK")
    assert r2.call("DBSIZE") == (":", 0)
    r2.call("SELECT", "0")
    assert r2.call("DBSIZE") == (":", 0)


@pytest.mark.parametrize("cmd", ["FLUSHDB", "FLUSHALL"])
def test_flush_syntax_errors(r2, cmd):
    assert r2.call(cmd, "FOO") == ("-", b"ERR syntax error")
    assert r2.call(cmd, "ASYNC", "SYNC") == ("-", b"ERR syntax error")


def test_flushall_dirties_watchers(target, r2):
    r2.call("SET", "k", "1")
    assert r2.call("WATCH", "k") == ("+", b"OK")
    with target.raw() as other:
        assert other.call("FLUSHALL") == ("+", b"OK")
    r2.call("MULTI")
    r2.call("SET", "k", "2")
    assert r2.call("EXEC") == ("*", None)


def test_swapdb_exchanges_data(r2):
    r2.pipeline(("SET", "in0", "a"), ("SELECT", "1"), ("SET", "in1", "b"), ("SET", "x", "y"))
    assert r2.call("SWAPDB", "0", "1") == ("+", b"OK")
    assert r2.call("DBSIZE") == (":", 1)
    assert r2.call("GET", "in0") == ("$", b"a")
    r2.call("SELECT", "0")
    assert r2.call("GET", "in1") == ("$", b"b")
    assert r2.call("SWAPDB", "0", "0") == ("+", b"OK")
    assert r2.call("DBSIZE") == (":", 2)


def test_swapdb_keeps_ttls(r2):
    r2.pipeline(("SELECT", "2"), ("SET", "k", "v", "EX", "100"), ("SWAPDB", "2", "0"), ("SELECT", "0"))
    kind, ttl = r2.call("TTL", "k")
    assert kind == ":" and 90 < ttl <= 100


def test_swapdb_dirties_watchers_of_both(target, r2):
    r2.pipeline(("SELECT", "1"), ("SET", "k", "1"), ("SELECT", "0"))
    assert r2.call("WATCH", "k") == ("+", b"OK")
    with target.raw() as other:
        assert other.call("SWAPDB", "0", "1") == ("+", b"OK")
    r2.call("MULTI")
    r2.call("GET", "k")
    assert r2.call("EXEC") == ("*", None)


def test_swapdb_serves_a_blocked_client(target, r2):
    with target.raw() as blocked:
        blocked.send("BLPOP", "list", "5")
        time.sleep(0.1)  # let the BLPOP arrive and block
        r2.pipeline(("SELECT", "1"), ("RPUSH", "list", "x"))
        assert r2.call("SWAPDB", "0", "1") == ("+", b"OK")
        assert blocked.read() == ("*", [("$", b"list"), ("$", b"x")])


@pytest.mark.parametrize(
    ("args", "error"),
    [
        (("a", "1"), b"ERR invalid first DB index"),
        (("0", "a"), b"ERR invalid second DB index"),
        (("0", "16"), b"ERR DB index is out of range"),
        (("-1", "0"), b"ERR DB index is out of range"),
        (("0",), b"ERR wrong number of arguments for 'swapdb' command"),
    ],
)
def test_swapdb_errors(r2, args, error):
    assert r2.call("SWAPDB", *args) == ("-", error)


# --- INFO -------------------------------------------------------------------------------------


def test_info_wire_type(r, proto):
    kind, data = r.call("INFO", "server")
    assert kind == ("=" if proto == 3 else "$")
    assert data.startswith(b"txt:# Server\r\n" if proto == 3 else b"# Server\r\n")


def test_info_default_sections_and_format(r):
    text = info(r)
    assert headers(text) == DEFAULT_SECTIONS
    assert text.endswith("\r\n") and not text.endswith("\r\n\r\n")
    for block in text.split("\r\n\r\n"):
        lines = block.rstrip("\r\n").split("\r\n")
        assert lines[0].startswith("# ")
        assert all(":" in line for line in lines[1:])


def test_info_all_and_everything_add_commandstats(r):
    for name in ("all", "everything"):
        found = headers(info(r, name))
        assert "Commandstats" in found
        assert [h for h in found if h in DEFAULT_SECTIONS] == DEFAULT_SECTIONS


def test_info_sections_keep_valkeys_order(r):
    assert headers(info(r, "keyspace", "CLIENTS", "server")) == ["Server", "Clients", "Keyspace"]
    assert headers(info(r, "default", "commandstats")) == [*DEFAULT_SECTIONS[:-3], "Commandstats",
                                                           *DEFAULT_SECTIONS[-3:]]
    assert info(r, "no-such-section") == ""


def test_info_server_fields(target, r):
    fields = info_fields(r, "server")
    assert fields["redis_version"] == "7.2.4"
    assert fields["server_name"] == "valkey"
    assert fields["valkey_version"].startswith("9.")
    assert fields["server_mode"] == "standalone"
    assert fields["tcp_port"] == str(target.port)
    assert re.fullmatch(r"[0-9a-f]{40}", fields["run_id"])
    for name in ("process_id", "uptime_in_seconds", "uptime_in_days", "hz", "arch_bits",
                 "server_time_usec", "lru_clock"):
        assert fields[name].isdigit(), name
    assert {"os", "executable", "config_file"} <= fields.keys()


def test_info_clients_memory_persistence_replication(r):
    clients = info_fields(r, "clients")
    assert int(clients["connected_clients"]) >= 1
    assert clients["blocked_clients"] == "0"
    assert clients["maxclients"] == "10000"
    memory = info_fields(r, "memory")
    assert int(memory["used_memory"]) > 0
    assert re.fullmatch(r"\d+(\.\d\d[KMGTP])?B?", memory["used_memory_human"])
    assert memory["maxmemory"] == "0" and memory["maxmemory_policy"] == "noeviction"
    persistence = info_fields(r, "persistence")
    assert persistence["loading"] == "0" and persistence["aof_enabled"] == "0"
    assert persistence["rdb_changes_since_last_save"].isdigit()
    assert persistence["rdb_last_save_time"].isdigit()
    replication = info_fields(r, "replication")
    assert replication["role"] == "master" and replication["connected_slaves"] == "0"
    assert re.fullmatch(r"[0-9a-f]{40}", replication["master_replid"])


def test_info_stats_counts_commands_and_errors(r):
    before = info_fields(r, "stats")
    for name in ("total_connections_received", "total_commands_processed", "expired_keys",
                 "keyspace_hits", "keyspace_misses", "total_error_replies", "evicted_keys"):
        assert before[name].isdigit(), name
    r.call("GET", "x")
    r.call("GET")
    after = info_fields(r, "stats")
    assert int(after["total_commands_processed"]) >= int(before["total_commands_processed"]) + 2
    assert int(after["total_error_replies"]) == int(before["total_error_replies"]) + 1


def test_info_keyspace(r):
    assert info(r, "keyspace") == "# Keyspace\r\n"
    r.pipeline(("SET", "a", "1"), ("SET", "b", "1", "EX", "100"), ("SELECT", "2"), ("SET", "c", "1"))
    lines = info(r, "keyspace").split("\r\n")
    assert re.fullmatch(r"db0:keys=2,expires=1,avg_ttl=\d+,keys_with_volatile_items=0", lines[1])
    assert lines[2] == "db2:keys=1,expires=0,avg_ttl=0,keys_with_volatile_items=0"
    assert lines[3:] == [""]


def test_info_commandstats_and_errorstats_after_resetstat(r2):
    assert r2.call("CONFIG", "RESETSTAT") == ("+", b"OK")
    r2.pipeline(("GET", "x"), ("GET", "x"), ("GET",), ("CONFIG", "SET", "hz", "abc"))
    stats = info_fields(r2, "commandstats")
    assert re.fullmatch(r"calls=2,usec=\d+,usec_per_call=\d+\.\d\d,rejected_calls=1,failed_calls=0",
                        stats["cmdstat_get"])
    assert re.fullmatch(r"calls=1,usec=\d+,usec_per_call=\d+\.\d\d,rejected_calls=0,failed_calls=1",
                        stats["cmdstat_config|set"])
    assert info_fields(r2, "errorstats") == {"errorstat_ERR": "count=2"}


# --- DEBUG ------------------------------------------------------------------------------------


def test_debug_sleep_blocks_the_server(target, r2):
    assert r2.call("DEBUG", "SLEEP", "0") == ("+", b"OK")
    assert r2.call("DEBUG", "SLEEP", "abc") == ("+", b"OK")
    with target.raw() as other:
        r2.send("DEBUG", "SLEEP", "0.3")
        time.sleep(0.05)
        started = time.monotonic()
        assert other.call("PING") == ("+", b"PONG")
        assert time.monotonic() - started > 0.15
    assert r2.read() == ("+", b"OK")


def test_debug_errors_and_help(r2):
    assert r2.call("DEBUG", "FOO") == (
        "-", b"ERR unknown subcommand or wrong number of arguments for 'FOO'. Try DEBUG HELP.")
    assert r2.call("DEBUG", "SLEEP") == (
        "-", b"ERR unknown subcommand or wrong number of arguments for 'SLEEP'. Try DEBUG HELP.")
    assert r2.call("DEBUG") == ("-", b"ERR wrong number of arguments for 'debug' command")
    kind, lines = r2.call("DEBUG", "HELP")
    assert kind == "*"
    assert lines[0] == ("+", b"DEBUG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:")
    assert ("+", b"SLEEP <seconds>") in lines


def test_debug_error_and_log(r2):
    assert r2.call("DEBUG", "ERROR", "WRONG custom text") == ("-", b"WRONG custom text")
    assert r2.call("DEBUG", "LOG", "hello") == ("+", b"OK")


def test_debug_set_active_expire(r2):
    assert r2.call("DEBUG", "SET-ACTIVE-EXPIRE", "0") == ("+", b"OK")
    assert r2.call("DEBUG", "SET-ACTIVE-EXPIRE", "1") == ("+", b"OK")


def test_debug_protocol(r, proto):
    expected = {
        "string": ("$", b"Hello World"),
        "integer": (":", 12345),
        "double": (",", b"3.141") if proto == 3 else ("$", b"3.141"),
        "bignum": ("(" if proto == 3 else "$", b"1234567999999999999999999999999999999"),
        "null": ("_", None) if proto == 3 else ("$", None),
        "array": ("*", [(":", 0), (":", 1), (":", 2)]),
        "set": ("~" if proto == 3 else "*", [(":", 0), (":", 1), (":", 2)]),
        "verbatim": ("=", b"txt:This is a verbatim\nstring") if proto == 3
        else ("$", b"This is a verbatim\nstring"),
        "true": ("#", True) if proto == 3 else (":", 1),
        "false": ("#", False) if proto == 3 else (":", 0),
    }
    for kind, reply in expected.items():
        assert r.call("DEBUG", "PROTOCOL", kind) == reply, kind
    if proto == 3:
        assert r.call("DEBUG", "PROTOCOL", "map") == (
            "%", [((":", 0), ("#", False)), ((":", 1), ("#", True)), ((":", 2), ("#", False))])
        assert r.call("DEBUG", "PROTOCOL", "attrib")[0] == "|"
        assert r.read() == ("$", b"Some real reply following the attribute")
        assert r.call("DEBUG", "PROTOCOL", "push") == ("$", b"Some real reply following the push reply")
        assert r.read() == (">", [("$", b"server-cpu-usage"), (":", 42)])
    else:
        assert r.call("DEBUG", "PROTOCOL", "map") == (
            "*", [(":", 0), (":", 0), (":", 1), (":", 1), (":", 2), (":", 0)])
        assert r.call("DEBUG", "PROTOCOL", "attrib") == ("$", b"Some real reply following the attribute")
        assert r.call("DEBUG", "PROTOCOL", "push") == ("-", b"ERR RESP2 is not supported by this command")
    kind, text = r.call("DEBUG", "PROTOCOL", "nope")
    assert (kind, text.split(b":")[0]) == ("-", b"ERR Wrong protocol type name. Please use one of the following")


def test_debug_is_refused_by_default():
    """Valkey's default (enable-debug-command no) on a private server: the test targets
    both run with it set to yes."""
    with Server() as srv, RawClient(srv.host, srv.port) as client:
        assert client.call("DEBUG", "SLEEP", "0") == (
            "-", b'ERR DEBUG command not allowed. If the enable-debug-command option is set to '
            b'"local", you can run it from a local connection, otherwise you need to set this '
            b"option in the configuration file, and then restart the server.")
        assert client.call("CONFIG", "GET", "enable-debug-command") == (
            "*", [("$", b"enable-debug-command"), ("$", b"no")])
    with Server(enable_debug_command="local") as srv, RawClient(srv.host, srv.port) as client:
        assert client.call("DEBUG", "SLEEP", "0") == ("+", b"OK")


DEBUG_REFUSED = (
    "-", b'ERR DEBUG command not allowed. If the enable-debug-command option is set to '
    b'"local", you can run it from a local connection, otherwise you need to set this '
    b"option in the configuration file, and then restart the server.")


def test_debug_refused_before_acl_and_auth(private_target):
    """The enable-debug-command check comes before authentication and ACL (Valkey's
    PROTECTED flag in processCommand): no ACL LOG entry, a refusal counted, and a queued
    DEBUG dooms its transaction."""
    server = private_target("--enable-debug-command", "no")
    with server.raw() as admin, server.raw() as user:
        assert admin.call("ACL", "SETUSER", "u", "on", "nopass", "+@all", "-debug") == ("+", b"OK")
        assert user.call("DEBUG", "HELP") == DEBUG_REFUSED  # the default user, unrestricted
        assert user.call("AUTH", "u", "x") == ("+", b"OK")
        assert user.call("DEBUG", "HELP") == DEBUG_REFUSED
        assert admin.call("ACL", "LOG") == ("*", [])
        assert user.call("MULTI") == ("+", b"OK")
        assert user.call("DEBUG", "SLEEP", "0") == DEBUG_REFUSED
        assert user.call("EXEC") == ("-", b"EXECABORT Transaction discarded because of previous errors.")
        stats = admin.call("INFO", "commandstats")[1]
        assert b"cmdstat_debug:calls=0,usec=0,usec_per_call=0.00,rejected_calls=3,failed_calls=0" in stats
        assert admin.call("MODULE", "UNLOAD", "x")[1].startswith(b"ERR MODULE command not allowed.")


# --- SHUTDOWN, SAVE, LASTSAVE, WAIT, ROLE -----------------------------------------------------


def test_shutdown_errors(r2):
    assert r2.call("SHUTDOWN", "FOO") == ("-", b"ERR syntax error")
    assert r2.call("SHUTDOWN", "NOSAVE", "SAVE") == ("-", b"ERR syntax error")
    assert r2.call("SHUTDOWN", "ABORT", "NOW") == ("-", b"ERR syntax error")
    assert r2.call("SHUTDOWN", "ABORT") == ("-", b"ERR No shutdown in progress.")


def test_shutdown_stops_a_private_server():
    srv = Server().start()
    thread = srv.loop_thread
    assert thread is not None
    with RawClient(srv.host, srv.port) as client, RawClient(srv.host, srv.port) as other:
        assert other.call("PING") == ("+", b"PONG")
        client.send("SHUTDOWN", "NOSAVE", "NOW")
        assert client.is_closed()
        assert other.is_closed()
    assert srv._stopped.wait(5)
    assert thread.is_alive()  # the loop thread every in-process server shares goes on
    srv.stop()


def test_save_and_lastsave(r2):
    kind, before = r2.call("LASTSAVE")
    assert kind == ":" and abs(before - time.time()) < 24 * 3600 * 365
    assert r2.call("SAVE") == ("+", b"OK")
    kind, after = r2.call("LASTSAVE")
    assert after >= before and abs(after - time.time()) < 5
    assert info_fields(r2, "persistence")["rdb_changes_since_last_save"] == "0"
    assert r2.call("BGSAVE", "FOO") == ("-", b"ERR syntax error")


def test_wait_answers_zero(r2):
    assert r2.call("WAIT", "0", "0") == (":", 0)
    assert r2.call("WAIT", "a", "0") == ("-", b"ERR value is not an integer or out of range")
    assert r2.call("WAIT", "0", "a") == ("-", b"ERR timeout is not an integer or out of range")
    assert r2.call("WAIT", "0", "-1") == ("-", b"ERR timeout is negative")


def test_role(r2):
    kind, (role, offset, replicas) = r2.call("ROLE")
    assert kind == "*" and role == ("$", b"master")
    assert offset[0] == ":" and replicas == ("*", [])



def test_errorstats_names_the_error_code(r2):
    r2.call("CONFIG", "RESETSTAT")
    r2.call("EVAL", "return redis.error_reply('MYCODE with a message')", "0")
    r2.call("EVAL", "return redis.error_reply('a\\r\\nb c')", "0")  # sanitized: code is 'a'
    r2.call("EVAL", "return redis.error_reply('" + "X" * 40 + " tail')", "0")  # no space in 32
    lines = r2.call("INFO", "errorstats")[1].decode().split("\r\n")
    assert "errorstat_MYCODE:count=1" in lines
    assert "errorstat_a:count=1" in lines
    assert "errorstat_ERR:count=1" in lines


def test_errorstats_in_byte_order_of_the_code(r2):
    r2.call("CONFIG", "RESETSTAT")
    r2.call("SET", "a", "b")
    r2.call("LPUSH", "a", "x")  # WRONGTYPE first
    r2.call("INCR", "a")  # then ERR
    r2.call("EVAL", "return redis.error_reply('BUSYGROUP x')", "0")
    lines = [line for line in r2.call("INFO", "errorstats")[1].decode().split("\r\n")
             if line.startswith("errorstat_")]
    assert lines == ["errorstat_BUSYGROUP:count=1", "errorstat_ERR:count=1", "errorstat_WRONGTYPE:count=1"]


def test_unknown_command_text_stops_at_nul(r2):
    assert r2.call("FO\0O", "a\0b", "c") == (
        "-", b"ERR unknown command 'FO', with args beginning with: 'a' 'c' ")


def test_info_counts_cached_scripts(r2):
    r2.call("SCRIPT", "FLUSH")
    r2.call("EVAL", "return 1", "0")
    r2.call("SCRIPT", "LOAD", "return 2")
    lines = r2.call("INFO", "memory")[1].decode().split("\r\n")
    assert "number_of_cached_scripts:2" in lines


def test_info_counts_functions_and_libraries(r2):
    r2.call("FUNCTION", "FLUSH")
    r2.call("FUNCTION", "LOAD", "#!lua name=infolib\n"
            "redis.register_function('f1', function() return 1 end)\n"
            "redis.register_function('f2', function() return 2 end)")
    lines = r2.call("INFO", "memory")[1].decode().split("\r\n")
    r2.call("FUNCTION", "FLUSH")
    assert "number_of_functions:2" in lines
    assert "number_of_libraries:1" in lines
