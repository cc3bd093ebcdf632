"""Valkey's multi-part AOF, both ways: a real valkey-server loads the folder fakekey wrote
(`appendonly yes`, the same `dir` and `appenddirname`), fakekey loads the folder a real
server wrote (writes, BGREWRITEAOF, more writes), each with an RDB base and a RESP base
(`aof-use-rdb-preamble`); the folder of fakekey's former log migrates; damaged folders
are refused with Valkey's messages; a cut end is truncated under aof-load-truncated."""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from fakekey.net.server import Server
from fakekey.persistence import aof as aoflib
from fakekey.persistence.codec import frame
from fakekey.persistence.snapshot import LoadError, live_image, snapshot_bytes
from fakekey.testing.raw import RawClient
from fakekey.testing.targets import ValkeyTarget, find_valkey_binary

TTL_TOLERANCE_MS = 60_000  # the two servers read PTTL seconds apart
LIBRARY = ("#!lua name=aoflib\n"
           "server.register_function('two', function(keys, args)\n"
           "  server.call('set', keys[1], args[1]); return server.call('incr', keys[2]) end)")

Data = dict[str, dict[bytes, tuple[Any, Any, bool]]]


def valkey_binary() -> str:
    binary = find_valkey_binary()
    if binary is None:
        pytest.skip("no valkey-server binary")
    return binary


@contextmanager
def valkey_on(folder: Path, *flags: str) -> Iterator[ValkeyTarget]:
    target = ValkeyTarget(valkey_binary(), "--dir", str(folder), "--appendonly", "yes", *flags)
    try:
        target.start()
        yield target
    finally:
        target.stop()


def wait_for(condition: Any, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def rewrite(c: RawClient) -> None:
    """BGREWRITEAOF, and its end."""
    assert c.call("BGREWRITEAOF")[0] == "+"
    wait_for(lambda: b"aof_rewrite_in_progress:0" in c.call("INFO", "persistence")[1]
             and b"aof_rewrite_scheduled:0" in c.call("INFO", "persistence")[1])


def writes(c: RawClient, emq: bool) -> None:
    """Every type, expiries, a script, a function, transactions, random pops, a blocking
    pop served at once, hash field TTLs, a stream with a group (and EMQ verbs, which a
    real Valkey does not have: fakekey propagates them by their effect)."""
    c.call("SET", "s", "v", "EX", "1000")
    c.call("SET", "gone", "v", "PX", "1")
    c.call("INCRBYFLOAT", "f", "1.25")
    c.call("APPEND", "s", "w")
    c.call("PFADD", "hll", "a", "b", "c")
    c.call("RPUSH", "l", *[f"e{i}" for i in range(20)])
    c.call("BLPOP", "l", "0")
    c.call("HSET", "h", *[x for i in range(10) for x in (f"k{i}", f"v{i}")])
    c.call("HEXPIRE", "h", "1000", "FIELDS", "1", "k1")
    c.call("SADD", "set", *[f"m{i}" for i in range(30)])
    c.call("SPOP", "set", "3")
    c.call("ZADD", "z", "1", "a", "2", "b", "3", "c")
    c.call("ZINCRBY", "z", "5", "a")
    c.call("XADD", "st", "*", "f", "v")
    c.call("XGROUP", "CREATE", "st", "g", "0")
    c.call("XREADGROUP", "GROUP", "g", "c1", "COUNT", "1", "STREAMS", "st", ">")
    c.call("PEXPIREAT", "z", str(int(time.time() * 1000) + 3_000_000))
    c.call("EVAL", "redis.call('set', KEYS[1], ARGV[1]); redis.call('rpush', KEYS[2], 'x')", "2",
           "ev", "evl", "val")
    c.call("FUNCTION", "LOAD", "REPLACE", LIBRARY)
    c.call("FCALL", "two", "2", "fa", "fn", "v")
    c.call("MULTI")
    c.call("INCR", "counter")
    c.call("SELECT", "1")
    c.call("SET", "db1", "x", "EX", "5000")
    c.call("SELECT", "0")
    assert c.call("EXEC")[0] == "*"
    if emq:
        assert c.call("EMQ.ENQUEUE", "3", "emq:{q}:JOB1", "emq:{q}:pending", "emq:{q}:schedule",
                      "payload", "0", "0") == (":", 1)
        assert c.call("EMQ.CLAIM", "2", "emq:{q}:pending", "emq:{q}:active", "30000")[0] == "*"


def more_writes(c: RawClient) -> None:
    c.call("SET", "after", "1")
    c.call("LPUSH", "l", "front")
    c.call("DEL", "hll")
    c.call("SELECT", "1")
    c.call("HSET", "h1", "a", "b")
    c.call("SELECT", "0")


def data_of(c: RawClient) -> Data:
    """Each database's keys: type, DEBUG DIGEST-VALUE, PTTL."""
    out: Data = {}
    for db in ("0", "1"):
        c.call("SELECT", db)
        keys = sorted(item[1] for item in c.call("KEYS", "*")[1])
        out[db] = {key: (c.call("TYPE", key), c.call("DEBUG", "DIGEST-VALUE", key),
                         c.call("PTTL", key)[1]) for key in keys}
    c.call("SELECT", "0")
    return out


def assert_same(mine: Data, theirs: Data) -> None:
    for db in mine:
        assert mine[db].keys() == theirs[db].keys(), db
        for key, (kind, digest, ttl) in mine[db].items():
            other_kind, other_digest, other_ttl = theirs[db][key]
            assert (kind, digest) == (other_kind, other_digest), key
            assert (ttl < 0) == (other_ttl < 0) and abs(ttl - other_ttl) < TTL_TOLERANCE_MS, key


def functions_of(c: RawClient) -> Any:
    return c.call("FUNCTION", "LIST", "WITHCODE")


@pytest.mark.parametrize("preamble", ["yes", "no"])
def test_a_real_valkey_loads_the_folder_fakekey_wrote(tmp_path: Path, preamble: str) -> None:
    with Server(dir=str(tmp_path), appendonly="yes", aof_use_rdb_preamble=preamble,
                enable_debug_command="yes", aof_timestamp_enabled="yes") as server, \
            RawClient(server.host, server.port) as c:
        writes(c, emq=True)
        rewrite(c)
        more_writes(c)
        mine = data_of(c)
        libraries = functions_of(c)
    assert {b"s", b"h", b"st", b"z", b"ev", b"fa", b"after", b"emq:{q}:JOB1"} <= mine["0"].keys()
    assert b"gone" not in mine["0"] and mine["1"].keys() == {b"db1", b"h1"}
    folder = tmp_path / "appendonlydir"
    manifest = (folder / "appendonly.aof.manifest").read_text()
    suffix = "rdb" if preamble == "yes" else "aof"
    assert manifest == (f"file appendonly.aof.2.base.{suffix} seq 2 type b\n"
                        "file appendonly.aof.2.incr.aof seq 2 type i\n")
    assert sorted(os.listdir(folder)) == sorted([f"appendonly.aof.2.base.{suffix}", "appendonly.aof.2.incr.aof",
                                                 "appendonly.aof.manifest"])
    with valkey_on(tmp_path, "--aof-use-rdb-preamble", preamble) as valkey, valkey.raw() as theirs:
        assert_same(mine, data_of(theirs))
        assert functions_of(theirs) == libraries


@pytest.mark.parametrize("preamble", ["yes", "no"])
def test_fakekey_loads_the_folder_a_real_valkey_wrote(tmp_path: Path, preamble: str) -> None:
    with valkey_on(tmp_path, "--aof-use-rdb-preamble", preamble, "--aof-timestamp-enabled", "yes") as valkey, \
            valkey.raw() as theirs:
        writes(theirs, emq=False)
        rewrite(theirs)
        more_writes(theirs)
        expected = data_of(theirs)
        libraries = functions_of(theirs)
    assert {b"s", b"h", b"st", b"z", b"ev", b"fa", b"after"} <= expected["0"].keys()
    incr = tmp_path / "appendonlydir" / "appendonly.aof.2.incr.aof"
    assert b"*3\r\n$3\r\nSET\r\n$5\r\nafter" in incr.read_bytes()  # after the rewrite
    with Server(dir=str(tmp_path), appendonly="yes", enable_debug_command="yes") as server, \
            RawClient(server.host, server.port) as c:
        assert_same(expected, data_of(c))
        assert functions_of(c) == libraries
        c.call("SET", "mine", "1")  # and it goes on in Valkey's last incr file
        info = c.call("INFO", "persistence")[1].decode()
        assert "aof_enabled:1" in info
    incr = tmp_path / "appendonlydir" / "appendonly.aof.2.incr.aof"
    assert incr.read_bytes().endswith(b"*3\r\n$3\r\nSET\r\n$4\r\nmine\r\n$1\r\n1\r\n")


def test_info_and_the_files_after_rewrites(tmp_path: Path) -> None:
    with Server(dir=str(tmp_path), appendonly="yes") as server, RawClient(server.host, server.port) as c:
        for i in range(50):
            c.call("SET", f"k{i}", "x" * 20)
        rewrite(c)
        c.call("SET", "more", "1")
        folder = tmp_path / "appendonlydir"
        info = dict(line.split(":", 1) for line in c.call("INFO", "persistence")[1].decode().split("\r\n")
                    if ":" in line)
        sizes = {name: (folder / name).stat().st_size for name in os.listdir(folder)}
        assert info["aof_enabled"] == "1" and info["aof_rewrites"] == "1"
        assert info["aof_last_bgrewrite_status"] == "ok" and info["aof_rewrite_in_progress"] == "0"
        assert int(info["aof_current_size"]) == sizes["appendonly.aof.2.base.rdb"] + sizes["appendonly.aof.2.incr.aof"]
        assert int(info["aof_base_size"]) == sizes["appendonly.aof.2.base.rdb"]
        assert c.call("WAITAOF", "1", "0", "0") == ("*", [(":", 1), (":", 0)])


def test_a_rewrite_inside_a_transaction_is_scheduled(tmp_path: Path) -> None:
    with Server(dir=str(tmp_path), appendonly="yes") as server, RawClient(server.host, server.port) as c:
        c.call("MULTI")
        c.call("INCR", "c")
        c.call("BGREWRITEAOF")
        c.call("INCR", "c")
        assert c.call("EXEC")[1][0] == (":", 1)
        wait_for(lambda: b"aof_rewrites:1" in c.call("INFO", "persistence")[1])
    with Server(dir=str(tmp_path), appendonly="yes") as server, RawClient(server.host, server.port) as c:
        assert c.call("GET", "c") == ("$", b"2")


# --- fakekey's former log --------------------------------------------------------------------------


def test_the_former_log_loads_once_and_is_written_again_in_valkeys_form(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    folder = tmp_path / "appendonlydir"
    folder.mkdir()
    with Server() as source:  # the former base: an FKSNAP snapshot
        with RawClient(source.host, source.port) as c:
            c.call("RPUSH", "l", "a", "b")
            c.call("SET", "s", "1")
        state = source.state
        (folder / "appendonly.aof.1.base.fksnap").write_bytes(snapshot_bytes(live_image(state), state.now))
    now = int(time.time() * 1000)
    records = aoflib.HEADER + frame(aoflib.command_record(0, now, [b"INCR", b"s"])) \
        + frame(aoflib.command_record(2, now, [b"SET", b"k2", b"v"]))
    (folder / "appendonly.aof.1.incr.fkaof").write_bytes(records)
    (folder / "appendonly.aof.manifest").write_text(
        "fakekey-aof-manifest 1\nseq 1\nbase appendonly.aof.1.base.fksnap\nincr appendonly.aof.1.incr.fkaof\n")
    with caplog.at_level(logging.INFO, logger="fakekey.net.server"), \
            Server(dir=str(tmp_path), appendonly="yes", enable_debug_command="yes") as server, \
            RawClient(server.host, server.port) as c:
        assert c.call("LRANGE", "l", "0", "-1") == ("*", [("$", b"a"), ("$", b"b")])
        assert c.call("GET", "s") == ("$", b"2")
        c.call("SELECT", "2")
        assert c.call("GET", "k2") == ("$", b"v")
        mine = data_of(c)
    assert "in fakekey's former format" in caplog.text
    assert sorted(os.listdir(folder)) == ["appendonly.aof.1.base.rdb", "appendonly.aof.1.incr.aof",
                                          "appendonly.aof.manifest"]
    with valkey_on(tmp_path, "--databases", "16") as valkey, valkey.raw() as theirs:
        assert_same(mine, data_of(theirs))
        theirs.call("SELECT", "2")
        assert theirs.call("GET", "k2") == ("$", b"v")


# --- damaged folders -------------------------------------------------------------------------------


def folder_with(tmp_path: Path, manifest: str, files: dict[str, bytes]) -> Path:
    folder = tmp_path / "appendonlydir"
    folder.mkdir(exist_ok=True)
    (folder / "appendonly.aof.manifest").write_text(manifest)
    for name, data in files.items():
        (folder / name).write_bytes(data)
    return folder


def refusal(tmp_path: Path, *flags: tuple[str, str]) -> str:
    with pytest.raises(LoadError) as caught, Server(dir=str(tmp_path), appendonly="yes", **dict(flags)):
        pass
    return str(caught.value)


SET_A = b"*3\r\n$3\r\nSET\r\n$1\r\na\r\n$1\r\n1\r\n"
SET_B = b"*3\r\n$3\r\nSET\r\n$1\r\nb\r\n$1\r\n2\r\n"
TWO_INCRS = ("file appendonly.aof.1.incr.aof seq 1 type i\n"
             "file appendonly.aof.2.incr.aof seq 2 type i\n")


def test_a_manifest_with_a_bad_line_is_refused(tmp_path: Path) -> None:
    folder_with(tmp_path, "file appendonly.aof.1.incr.aof seq 1 type i\nfile x seq\n", {})
    message = refusal(tmp_path)
    assert "Reading the manifest file, at line 2: >>> 'file x seq'" in message
    assert message.endswith("Invalid AOF manifest file format")
    folder_with(tmp_path, "file ../x seq 1 type i\n", {})
    assert refusal(tmp_path).endswith("File can't be a path, just a filename")
    folder_with(tmp_path, "file a.aof seq 2 type i\nfile b.aof seq 1 type i\n", {})
    assert refusal(tmp_path).endswith("Found a non-monotonic sequence number")


def test_a_missing_file_is_refused(tmp_path: Path) -> None:
    folder_with(tmp_path, TWO_INCRS, {"appendonly.aof.1.incr.aof": SET_A})
    assert "The append log file appendonly.aof.2.incr.aof doesn't exist" in refusal(tmp_path)


def test_an_incr_file_with_garbage_is_refused(tmp_path: Path) -> None:
    folder_with(tmp_path, TWO_INCRS, {"appendonly.aof.1.incr.aof": SET_A + b"garbage\r\n",
                                      "appendonly.aof.2.incr.aof": SET_B})
    assert "Bad file format reading the append only file appendonly.aof.1.incr.aof" in refusal(tmp_path)


def test_a_cut_file_in_the_middle_is_refused(tmp_path: Path) -> None:
    folder = folder_with(tmp_path, TWO_INCRS, {"appendonly.aof.1.incr.aof": SET_A + SET_B[:-6],
                                               "appendonly.aof.2.incr.aof": SET_B})
    assert "the truncated file is not the last file" in refusal(tmp_path)
    assert (folder / "appendonly.aof.1.incr.aof").read_bytes() == SET_A + SET_B[:-6]


def test_a_cut_last_command_is_truncated_or_refused(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    folder = folder_with(tmp_path, TWO_INCRS, {"appendonly.aof.1.incr.aof": b"#TS:1700000000\r\n" + SET_A,
                                               "appendonly.aof.2.incr.aof": SET_B + SET_A[:-3]})
    assert "Unexpected end of file reading the append only file appendonly.aof.2.incr.aof" in \
        refusal(tmp_path, ("aof_load_truncated", "no"))
    with caplog.at_level(logging.INFO, logger="fakekey.net.server"), \
            Server(dir=str(tmp_path), appendonly="yes") as server, RawClient(server.host, server.port) as c:
        assert c.call("MGET", "a", "b") == ("*", [("$", b"1"), ("$", b"2")])
    assert (folder / "appendonly.aof.2.incr.aof").read_bytes() == SET_B
    assert f"!!! Truncating the AOF appendonly.aof.2.incr.aof at offset {len(SET_B)} !!!" in caplog.text
    assert "AOF appendonly.aof.2.incr.aof loaded anyway because aof-load-truncated is enabled" in caplog.text


def test_a_transaction_without_its_exec_is_reverted(tmp_path: Path) -> None:
    multi = b"*1\r\n$5\r\nMULTI\r\n"
    folder = folder_with(tmp_path, "file appendonly.aof.1.incr.aof seq 1 type i\n",
                         {"appendonly.aof.1.incr.aof": SET_A + multi + SET_B})
    with Server(dir=str(tmp_path), appendonly="yes") as server, RawClient(server.host, server.port) as c:
        assert c.call("MGET", "a", "b") == ("*", [("$", b"1"), ("$", None)])
    assert (folder / "appendonly.aof.1.incr.aof").read_bytes() == SET_A
