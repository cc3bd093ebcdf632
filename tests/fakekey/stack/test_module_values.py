"""An emulated module's value (here a Bloom filter) wherever Valkey carries a module's:
DUMP/RESTORE, SAVE and a restart, DEBUG RELOAD, the AOF (its rewritten base and its incr
file), Server.snapshot()/restore(), COPY, MEMORY USAGE, OBJECT ENCODING, DEBUG OBJECT,
DEBUG DIGEST, SCAN ... TYPE and a replica's stream. Written as Valkey's RDB_TYPE_MODULE_2,
so a real valkey-server without the module refuses it with its own message."""

import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import redis

from fakekey import Server
from fakekey.modules.stack.bloom_filter import ScalableBloom
from fakekey.modules.stack.cuckoo_filter import CuckooFilter
from fakekey.modules.stack.module_io import ModuleWriter
from fakekey.persistence import codec, rdb, rdbfile
from fakekey.persistence.snapshot import LoadError
from fakekey.testing.raw import RawClient
from fakekey.testing.targets import find_valkey_binary, free_port
from fakekey.types.module_value import module_type_id

VALKEY = find_valkey_binary()
ITEMS = [f"item{i}" for i in range(300)]  # past the first filter's 100: a chain of links
DEADLINE = 10.0


def until(check: Callable[[], Any], what: str) -> Any:
    deadline = time.monotonic() + DEADLINE
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.02)
    raise AssertionError(f"timed out waiting for {what}")


def filled(r: redis.Redis, key: str = "bf") -> list[Any]:
    r.execute_command("BF.RESERVE", key, "0.01", "100")
    r.execute_command("BF.MADD", key, *ITEMS)
    return r.execute_command("BF.INFO", key)  # type: ignore[no-any-return]


def same_filter(r: redis.Redis, key: str, info: Any) -> bool:
    return bool(r.execute_command("BF.INFO", key) == info
                and all(r.execute_command("BF.MEXISTS", key, *ITEMS)))


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    with Server(enable_stack_modules="yes", enable_debug_command="yes", dir=str(tmp_path)) as srv:
        yield srv


@pytest.fixture
def r(server: Server) -> Iterator[redis.Redis]:
    client = redis.Redis(port=server.port)
    yield client
    client.close()


def test_dump_is_a_module_2_value_and_restores(r: redis.Redis) -> None:
    info = filled(r)
    payload = r.dump("bf")
    ident = module_type_id("MBbloom--", 4)
    assert payload[0] == rdb.T_MODULE_2 and payload[1:10] == b"\x81" + ident.to_bytes(8, "big")
    assert payload[-11] == rdb.MODULE_OPCODE_EOF
    # then RedisBloom's own rdb_save, field by field: items, filters, options (FORCE64 |
    # NOROUND), growth, each an unsigned behind its opcode...
    items, filters = info[b"Number of items inserted"], info[b"Number of filters"]
    uint = bytes((rdb.MODULE_OPCODE_UINT,))
    assert payload[10:].startswith(uint + rdb._len(items) + uint + rdb._len(filters) + uint + b"\x05"
                                   + uint + b"\x02")
    assert r.restore("again", 0, payload) == b"OK"
    assert same_filter(r, "again", info)
    assert r.type("again") == b"MBbloom--"


def test_a_server_without_the_module_refuses_the_payload(r: redis.Redis) -> None:
    filled(r)
    payload = r.dump("bf")
    with Server() as plain, RawClient(plain.host, plain.port) as c:
        assert c.call("RESTORE", "bf", "0", payload) == ("-", b"ERR Bad data format")


def test_save_and_a_restart_and_debug_reload(tmp_path: Path, r: redis.Redis) -> None:
    info = filled(r)
    r.execute_command("CF.INSERT", "cf", "ITEMS", "a", "b")
    assert r.execute_command("DEBUG", "RELOAD") == b"OK"
    assert same_filter(r, "bf", info) and r.execute_command("CF.COUNT", "cf", "a") == 1
    assert r.save() is True
    with Server(enable_stack_modules="yes", dir=str(tmp_path)) as again:
        client = redis.Redis(port=again.port)
        assert same_filter(client, "bf", info) and client.execute_command("CF.EXISTS", "cf", "b") == 1
        client.close()


def test_a_file_with_a_module_value_and_the_module_off(r: redis.Redis, tmp_path: Path) -> None:
    filled(r)
    r.save()
    data = (tmp_path / "dump.rdb").read_bytes()
    options = rdbfile.LoadOptions(rdb.Limits(module_types=False), databases=16)
    with pytest.raises(LoadError) as raised:
        rdbfile.parse_rdb("dump.rdb", data, options)
    assert "The RDB file contains module data I can't load: no matching module type 'MBbloom--'" in str(
        raised.value)


@pytest.mark.skipif(VALKEY is None, reason="no valkey-server binary")
def test_valkey_reads_the_file_and_names_the_module_type_it_lacks(r: redis.Redis, tmp_path: Path) -> None:
    filled(r)
    r.save()
    assert VALKEY is not None
    with subprocess.Popen([VALKEY, "--port", str(free_port()), "--dir", str(tmp_path), "--save", ""],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT) as process:
        try:
            out = process.communicate(timeout=20)[0].decode()
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
    assert "no matching module type 'MBbloom--'" in out
    assert "RDB looks OK" in out  # its checker walked the module value's opcodes to the end


@pytest.mark.parametrize("preamble", ["no", "yes"])
def test_the_aof_base_and_incr_file_carry_it(tmp_path: Path, preamble: str) -> None:
    settings = {"enable_stack_modules": "yes", "dir": str(tmp_path), "appendonly": "yes",
                "aof_use_rdb_preamble": preamble}
    with Server(**settings) as first:
        r = redis.Redis(port=first.port)
        info = filled(r)
        r.execute_command("CF.INSERT", "cf", "ITEMS", *ITEMS)
        r.bgrewriteaof()
        until(lambda: r.info("persistence")["aof_rewrites"] >= 1
              and not r.info("persistence")["aof_rewrite_in_progress"], "the rewrite")
        if preamble == "no":  # the base is commands: the module's own, as Valkey asks it
            base = next((tmp_path / "appendonlydir").glob("*.base.aof")).read_bytes()
            assert b"BF.LOADCHUNK" in base and b"RESTORE" not in base
        r.execute_command("BF.ADD", "bf", "after the rewrite")
        r.execute_command("BF.ADD", "later", "x")
        info_after = r.execute_command("BF.INFO", "bf")
        r.close()
    assert info_after != info
    with Server(**settings) as second:
        r = redis.Redis(port=second.port)
        assert r.execute_command("BF.INFO", "bf") == info_after
        assert r.execute_command("BF.EXISTS", "bf", "after the rewrite") == 1
        assert r.execute_command("BF.EXISTS", "later", "x") == 1
        assert all(r.execute_command("CF.MEXISTS", "cf", *ITEMS))
        r.close()


def test_fakekeys_former_snapshot_codec_carries_it() -> None:
    chain = ScalableBloom.create(100, 0.01, 2, nonscaling=False)
    assert chain is not None
    for item in ITEMS:
        chain.add(item.encode())
    w = codec.Writer()
    codec.encode_value(w, chain)
    back = codec.decode_value(codec.Reader(bytes(w.buf)))
    assert isinstance(back, ScalableBloom) and back.payload() == chain.payload()


def test_older_encoding_versions_load_as_redisbloom_loads_them() -> None:
    chain = ScalableBloom.create(100, 0.01, 4, nonscaling=False)
    assert chain is not None and chain.add(b"x") == 1
    fields = ModuleWriter()  # encoding version 2: options, and no growth (then 2)
    for number in (1, 1, chain.options):
        fields.unsigned(number)
    link = chain.links[0]
    for put, number in ((fields.unsigned, link.entries), (fields.double, link.error),
                        (fields.unsigned, link.hashes), (fields.double, link.bpe),
                        (fields.unsigned, link.bits), (fields.unsigned, link.n2)):
        put(number)
    fields.buffer(bytes(link.bf))
    fields.unsigned(1)
    old = ScalableBloom.from_payload(fields.payload(), 2)
    assert old.growth == 2 and old.check(b"x") and not old.check(b"y")
    with pytest.raises(ValueError):
        ScalableBloom.from_payload(chain.payload(), 5)  # a newer module's: refused
    cf = CuckooFilter.create(64, 2, 20, 1)
    assert cf is not None and cf.insert(b"x", unique=False) == 1
    fields = ModuleWriter()  # encoding version 3: no deletes, bucket size, iterations...
    for number in (1, cf.num_buckets, 1):
        fields.unsigned(number)
    fields.buffer(bytes(cf.filters[0]))
    old_cf = CuckooFilter.from_payload(fields.payload(), 3)
    assert old_cf.count(b"x") == 1 and old_cf.bucket_size == 2 and old_cf.max_iterations == 20


def test_a_newer_encoding_version_is_bad_data(r: redis.Redis) -> None:
    filled(r)
    body = bytearray(r.dump("bf")[:-10])
    body[1:10] = b"\x81" + module_type_id("MBbloom--", 5).to_bytes(8, "big")
    body += (80).to_bytes(2, "little")
    payload = bytes(body) + rdb.crc64(bytes(body)).to_bytes(8, "little")
    with pytest.raises(redis.ResponseError, match="Bad data format"):
        r.restore("newer", 0, payload)


def test_server_snapshot_and_restore(server: Server, r: redis.Redis) -> None:
    info = filled(r)
    snap = server.snapshot()
    r.flushall()
    server.restore(snap)
    assert same_filter(r, "bf", info)


def test_copy_memory_encoding_debug_object_and_digest(r: redis.Redis) -> None:
    info = filled(r)
    assert r.copy("bf", "twin") is True
    r.execute_command("BF.ADD", "twin", "only in the copy")
    assert r.execute_command("BF.EXISTS", "bf", "only in the copy") == 0  # a deep copy
    assert r.memory_usage("bf") >= info[b"Size"]
    assert r.object("encoding", "bf") == b"raw"
    debug = r.execute_command("DEBUG", "OBJECT", "bf").decode()
    assert "encoding:raw" in debug
    assert f"serializedlength:{len(r.dump('bf')) - 11}" in debug  # less the type byte and footer
    # no module digest callback: Valkey folds only the type code (and the TTL mark) in
    r.execute_command("BF.ADD", "other", "x")
    assert r.execute_command("DEBUG", "DIGEST-VALUE", "bf", "other") == \
        2 * [r.execute_command("DEBUG", "DIGEST-VALUE", "twin")[0]]
    before = r.execute_command("DEBUG", "DIGEST")
    r.delete("other")
    assert r.execute_command("DEBUG", "DIGEST") != before


def test_scan_type_takes_a_module_type_name_in_any_case(r: redis.Redis) -> None:
    filled(r)
    r.execute_command("CF.ADD", "cf", "a")
    r.set("s", "v")
    assert r.scan(0, _type="MBbloom--", count=100) == (0, [b"bf"])
    assert r.scan(0, _type="mbbloomcf", count=100) == (0, [b"cf"])
    with pytest.raises(redis.ResponseError, match="unknown type name 'MBbloomXX'"):
        r.scan(0, _type="MBbloomXX")


def test_a_replica_gets_the_filters(r: redis.Redis, server: Server) -> None:
    info = filled(r)
    r.config_set("repl-diskless-sync-delay", 0)  # the full sync at once
    with Server(enable_stack_modules="yes") as replica:
        follower = redis.Redis(port=replica.port)
        follower.replicaof(server.host, server.port)
        until(lambda: follower.exists("bf"), "the full sync")
        assert same_filter(follower, "bf", info)
        r.execute_command("BF.ADD", "bf", "streamed")
        r.execute_command("CF.ADD", "cf", "streamed")
        until(lambda: follower.execute_command("CF.EXISTS", "cf", "streamed"), "the stream")
        assert follower.execute_command("BF.EXISTS", "bf", "streamed") == 1
        follower.replicaof("NO", "ONE")
        follower.close()
