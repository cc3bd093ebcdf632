"""Valkey 9's atomic slot migration (CLUSTER MIGRATESLOTS, GETSLOTMIGRATIONS,
CANCELSLOTMIGRATIONS, SYNCSLOTS as a client meets it) and CLUSTER FLUSHSLOT, on fakekey's
cluster and on a real Valkey cluster (3 primaries, a replica each): the refusals byte for
byte, a migration's jobs as each node lists them (RESP2 and RESP3), the keys and their TTLs
on the target, MOVED from the source; every slot moved is moved back."""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from fakekey.core.cluster import key_slot
from fakekey.testing.clusters import cluster_client, cluster_for_tests, cluster_targets
from fakekey.testing.raw import RawClient

TARGETS = cluster_targets()


@pytest.fixture(scope="module", params=TARGETS)
def cluster(request: pytest.FixtureRequest) -> Iterator[Any]:
    with cluster_for_tests(request.param) as started:
        yield started


def call(node: Any, *args: Any, proto: int = 2) -> Any:
    with RawClient(node.host, node.port) as raw:
        if proto == 3:
            assert raw.call("HELLO", "3")[0] == "%"
        return raw.call(*args)


def err(text: bytes) -> tuple[str, bytes]:
    return ("-", text)


def my_id(node: Any) -> bytes:
    return bytes(call(node, "CLUSTER", "MYID")[1])


def role_of(node: Any) -> bytes:
    return bytes(call(node, "ROLE")[1][0][1])


def primaries(cluster: Any) -> list[Any]:
    """The primaries by the slots they serve now, first slot first."""
    _kind, ranges = call(cluster.nodes[0], "CLUSTER", "SLOTS")
    ports = []
    for _k, entry in sorted(ranges, key=lambda e: e[1][0][1]):
        port = entry[2][1][1][1]
        if port not in ports:
            ports.append(port)
    return [next(n for n in cluster.nodes if n.port == port) for port in ports]


def replica_of(cluster: Any, primary: Any) -> Any:
    primary_id = my_id(primary)
    for node in cluster.nodes:
        fields = next(line.split() for line in call(node, "CLUSTER", "NODES")[1].splitlines()
                      if b"myself" in line.split()[2])
        if fields[3] == primary_id:
            return node
    raise LookupError(primary_id)


def wait_until(check: Callable[[], Any], what: str) -> Any:
    deadline = time.monotonic() + 15
    while not (found := check()):
        assert time.monotonic() < deadline, what
        time.sleep(0.02)
    return found


def jobs(node: Any, proto: int = 2) -> list[dict[bytes, Any]]:
    """GETSLOTMIGRATIONS as field -> value, newest first (RESP2: pairs of a flat array)."""
    kind, entries = call(node, "CLUSTER", "GETSLOTMIGRATIONS", proto=proto)
    assert kind == "*"
    out = []
    for entry_kind, fields in entries:
        if proto == 3:
            assert entry_kind == "%"
            out.append({k[1]: v for k, v in fields})
        else:
            assert entry_kind == "*"
            out.append({fields[i][1]: fields[i + 1] for i in range(0, len(fields), 2)})
    return out


def finished_job(node: Any, name: bytes | None = None) -> dict[bytes, Any]:
    """The newest job (or the one named), once it has ended."""
    def ended() -> dict[bytes, Any] | None:
        listed = jobs(node)
        job = next((j for j in listed if name is None or j[b"name"][1] == name), None)
        if job is None or job[b"state"][1] not in (b"success", b"failed", b"cancelled"):
            return None
        return job
    return wait_until(ended, "the slot migration to end")


def migrate(source: Any, target: Any, first: int, last: int) -> dict[bytes, Any]:
    """MIGRATESLOTS of first-last to `target`, and its export job once it has ended."""
    before = {j[b"name"][1] for j in jobs(source)}
    assert call(source, "CLUSTER", "MIGRATESLOTS", "SLOTSRANGE", str(first), str(last),
                "NODE", my_id(target)) == ("+", b"OK")
    name = wait_until(lambda: next((j[b"name"][1] for j in jobs(source) if j[b"name"][1] not in before), None),
                      "the new job")
    return finished_job(source, name)


def keys_in(slot: int, count: int) -> list[str]:
    found = []
    for i in range(200_000):
        key = f"asm:{i}"
        if key_slot(key.encode()) == slot:
            found.append(key)
            if len(found) == count:
                return found
    raise LookupError(slot)


# --- refusals ------------------------------------------------------------------------------------


def test_the_refusals_of_migrateslots(cluster):
    first, second = primaries(cluster)[:2]
    replica = replica_of(cluster, first)
    me, other = my_id(first), my_id(second)
    last = call(first, "CLUSTER", "SLOTS")  # the first primary serves 0 to its last slot
    end = next(e[1][1] for _k, e in last[1] if e[0][1] == 0)

    def ms(*args: Any) -> Any:
        return call(first, "CLUSTER", "MIGRATESLOTS", *args)
    assert ms() == err(b"ERR wrong number of arguments for 'cluster|migrateslots' command")
    assert ms("SLOTSRANGE") == err(b"ERR wrong number of arguments for 'cluster|migrateslots' command")
    assert ms("SLOTSRANGE", "0") == err(b"ERR No end slot for final slot range")
    assert ms("SLOTSRANGE", "0", "10") == err(b"ERR syntax error")
    assert ms("SLOTSRANGE", "0", "10", "NODE") == err(b"ERR syntax error")
    assert ms("SLOTSRANGE", "0", "10", "NODE", "abc") == err(b"ERR Invalid node name: abc")
    assert ms("SLOTSRANGE", "0", "10", "NODE", "f" * 40) == err(b"ERR Unknown node name: " + b"f" * 40)
    assert ms("SLOTSRANGE", "0", "10", "NODE", me) == err(b"ERR Target node can not be this node.")
    assert ms("SLOTSRANGE", "10", "0", "NODE", other) == \
        err(b"ERR Start slot number 10 is greater than end slot number 0.")
    for bad in ("x", "16384", "-1"):
        assert ms("SLOTSRANGE", "0", bad, "NODE", other) == err(b"ERR Invalid or out of range slot")
    assert ms("SLOTSRANGE", "0", "10", "5", "7", "NODE", other) == \
        err(b"ERR Slot range 5-7 overlaps with previous range 0-10.")
    assert ms("SLOTSRANGE", "0", "10", "NODE", other, "SLOTSRANGE", "5", "7", "NODE", other) == \
        err(b"ERR Slot ranges in migrations overlap")
    assert ms("SLOTSRANGE", str(end), str(end + 1), "NODE", other) == \
        err(b"ERR Requested slots span multiple shards")
    assert ms("SLOTSRANGE", str(end + 1), str(end + 1), "NODE", other) == \
        err(b"ERR Slots are not served by this node.")
    assert ms("BOGUS", "0", "10") == err(b"ERR syntax error")
    assert ms("SLOTSRANGE", "NODE", other) == err(b"ERR No slot ranges specified")
    assert ms("SLOTSRANGE", "0", "10", "NODE", other, "extra") == err(b"ERR syntax error")
    assert call(replica, "CLUSTER", "MIGRATESLOTS", "SLOTSRANGE", "0", "0", "NODE", other) == \
        err(b"ERR Slot migration can only be used on primary nodes.")
    assert call(first, "CLUSTER", "SETSLOT", "0", "MIGRATING", other) == ("+", b"OK")
    try:
        assert ms("SLOTSRANGE", "1", "1", "NODE", other) == err(b"ERR Slots are being manually migrated")
    finally:
        assert call(first, "CLUSTER", "SETSLOT", "0", "STABLE") == ("+", b"OK")
    assert call(second, "CLUSTER", "SETSLOT", "0", "IMPORTING", me) == ("+", b"OK")
    try:
        assert call(second, "CLUSTER", "MIGRATESLOTS", "SLOTSRANGE", "0", "0", "NODE", me) == \
            err(b"ERR Slots are being manually imported")
    finally:
        assert call(second, "CLUSTER", "SETSLOT", "0", "STABLE") == ("+", b"OK")


def test_the_refusals_of_the_other_subcommands(cluster):
    node = primaries(cluster)[0]
    wrong = b"ERR wrong number of arguments for 'cluster|%s' command"
    assert call(node, "CLUSTER", "CANCELSLOTMIGRATIONS") == err(b"ERR No migrations ongoing")
    assert call(node, "CLUSTER", "CANCELSLOTMIGRATIONS", "ALL") == err(wrong % b"cancelslotmigrations")
    assert call(node, "CLUSTER", "GETSLOTMIGRATIONS", "x") == err(wrong % b"getslotmigrations")
    assert call(node, "CLUSTER", "SYNCSLOTS") == err(wrong % b"syncslots")
    for sub in ("ACK", "snapshot-eof", "PAUSED", "REQUEST-PAUSE", "REQUEST-FAILOVER", "FAILOVER-GRANTED"):
        assert call(node, "CLUSTER", "SYNCSLOTS", sub) == \
            err(b"ERR CLUSTER SYNCSLOTS %s should only be used by slot migration clients" % sub.upper().encode())
    for args in (("BOGUS",), ("ESTABLISH",), ("FINISH",), ("FINISH", "NAME", "x", "STATE", "success")):
        assert call(node, "CLUSTER", "SYNCSLOTS", *args) == err(b"ERR syntax error")
    assert call(node, "CLUSTER", "SYNCSLOTS", "FINISH", "NAME", "0" * 40, "STATE", "success") == \
        err(b"ERR No such slot migration job")


# --- a migration ---------------------------------------------------------------------------------


@pytest.mark.parametrize("proto", [2, 3])
def test_migrateslots_moves_the_slots_and_their_keys(cluster, proto):
    source, target = primaries(cluster)[:2]
    slot = 100 + proto
    keys = keys_in(slot, 3)
    for key in keys:
        assert call(source, "SET", key, key) == ("+", b"OK")
    assert call(source, "PEXPIRE", keys[0], "100000") == (":", 1)
    client = cluster_client(cluster)
    try:
        assert client.get(keys[1]) == keys[1].encode()  # the client knows the slot's owner
        job = migrate(source, target, slot, slot)
        assert job[b"state"] == ("$", b"success") and job[b"message"] == ("$", b"")
        moved = b"MOVED %d %s:%d" % (slot, target.host.encode(), target.port)
        wait_until(lambda: call(source, "GET", keys[1]) == err(moved), "MOVED from the source")
        assert call(source, "CLUSTER", "COUNTKEYSINSLOT", str(slot)) == (":", 0)
        assert call(target, "CLUSTER", "COUNTKEYSINSLOT", str(slot)) == (":", 3)
        gone = replica_of(cluster, source)  # the source's replica dropped them too
        wait_until(lambda: call(gone, "CLUSTER", "COUNTKEYSINSLOT", str(slot)) == (":", 0), "the replica")
        assert [call(target, "GET", key) for key in keys] == [("$", key.encode()) for key in keys]
        assert 0 < call(target, "PTTL", keys[0])[1] <= 100000  # the TTL went with the key
        assert call(target, "PTTL", keys[1]) == (":", -1)
        assert [client.get(key) for key in keys] == [key.encode() for key in keys]  # MOVED followed
        described(cluster, source, target, job, slot, proto)
    finally:
        client.close()
        back = migrate(target, source, slot, slot)
        assert back[b"state"] == ("$", b"success")
        wait_until(lambda: call(source, "GET", keys[1]) == ("$", keys[1].encode()), "the slot back")
        for key in keys:
            call(source, "DEL", key)


def described(cluster: Any, source: Any, target: Any, job: dict[bytes, Any], slot: int, proto: int) -> None:
    """The job as the source, the target and the target's replica list it."""
    name = job[b"name"][1]
    assert re.fullmatch(rb"[0-9a-f]{40}", name)
    ids = {"source": my_id(source), "target": my_id(target)}
    [export] = [j for j in jobs(source, proto) if j[b"name"][1] == name]
    fields = [b"name", b"operation", b"slot_ranges", b"target_node", b"source_node", b"create_time",
              b"last_update_time", b"last_ack_time", b"state", b"message", b"cow_size", b"remaining_repl_size"]
    assert list(export) == fields
    assert export[b"operation"] == ("$", b"EXPORT") and export[b"slot_ranges"] == ("$", b"%d-%d" % (slot, slot))
    assert (export[b"target_node"], export[b"source_node"]) == (("$", ids["target"]), ("$", ids["source"]))
    assert all(export[f][0] == ":" for f in (b"create_time", b"last_update_time", b"last_ack_time"))
    assert abs(export[b"create_time"][1] - time.time()) < 60
    assert export[b"remaining_repl_size"] == (":", 0) and export[b"cow_size"][0] == ":"
    imported = wait_until(lambda: next((j for j in jobs(target, proto) if j[b"name"][1] == name
                                        and j[b"state"][1] == b"success"), None), "the import job")
    assert list(imported) == fields and imported[b"operation"] == ("$", b"IMPORT")
    assert (imported[b"target_node"], imported[b"source_node"]) == (("$", ids["target"]), ("$", ids["source"]))
    replica = replica_of(cluster, target)
    tracking = wait_until(lambda: next((j for j in jobs(replica, proto) if j[b"name"][1] == name
                                        and j[b"state"][1] == b"success"), None), "the replica's job")
    assert list(tracking) == [f for f in fields if f not in (b"target_node", b"source_node")]
    assert not [j for j in jobs(replica_of(cluster, source), proto) if j[b"name"][1] == name]


def test_an_import_the_target_refuses_fails_the_job(cluster):
    source = primaries(cluster)[0]
    replica = replica_of(cluster, primaries(cluster)[1])
    job = migrate(source, replica, 0, 0)
    assert job[b"state"] == ("$", b"failed")
    assert job[b"message"] == ("$", b"Received error during handshake to target: -ERR Slot migration can "
                                    b"only be used on primary nodes.\r\n")
    assert job[b"target_node"] == ("$", my_id(replica))
    assert call(source, "CLUSTER", "COUNTKEYSINSLOT", "0") == (":", 0)
    assert primaries(cluster)[0] is source  # slot 0 stayed


# --- FLUSHSLOT -----------------------------------------------------------------------------------


def test_flushslot_deletes_the_keys_of_a_slot(cluster):
    primary = primaries(cluster)[0]
    replica = replica_of(cluster, primary)
    slot = 7
    keys = keys_in(slot, 2)
    neighbour = keys_in(8, 1)[0]
    for key in [*keys, neighbour]:
        assert call(primary, "SET", key, "v") == ("+", b"OK")
    assert call(primary, "EXPIRE", keys[0], "100") == (":", 1)
    assert call(primary, "WAIT", "1", "5000") == (":", 1)
    assert call(replica, "CLUSTER", "COUNTKEYSINSLOT", str(slot)) == (":", 2)
    dirty = persistence_changes(primary)
    assert call(primary, "CLUSTER", "FLUSHSLOT", str(slot)) == ("+", b"OK")
    assert persistence_changes(primary) == dirty + 2  # one change a key
    assert call(primary, "CLUSTER", "COUNTKEYSINSLOT", str(slot)) == (":", 0)
    assert call(primary, "EXISTS", neighbour) == (":", 1)
    assert call(primary, "WAIT", "1", "5000") == (":", 1)
    assert call(replica, "CLUSTER", "COUNTKEYSINSLOT", str(slot)) == (":", 0)  # the replica follows
    for how in ("ASYNC", "sync"):
        assert call(primary, "CLUSTER", "FLUSHSLOT", str(slot), how) == ("+", b"OK")
    assert call(primary, "CLUSTER", "FLUSHSLOT", "9000") == ("+", b"OK")  # a slot of another node
    assert call(primary, "DEL", neighbour) == (":", 1)


def test_the_refusals_of_flushslot(cluster):
    primary = primaries(cluster)[0]
    assert call(primary, "CLUSTER", "FLUSHSLOT") == \
        err(b"ERR wrong number of arguments for 'cluster|flushslot' command")
    for bad in ("x", "16384", "-1"):
        assert call(primary, "CLUSTER", "FLUSHSLOT", bad) == err(b"ERR Invalid or out of range slot")
    assert call(primary, "CLUSTER", "FLUSHSLOT", "3", "bogus") == err(b"ERR syntax error")
    assert call(primary, "CLUSTER", "FLUSHSLOT", "x", "bogus") == err(b"ERR Invalid or out of range slot")
    assert call(primary, "CLUSTER", "FLUSHSLOT", "x", "ASYNC", "extra") == \
        err(b"ERR unknown subcommand or wrong number of arguments for 'FLUSHSLOT'. Try CLUSTER HELP.")
    assert call(replica_of(cluster, primary), "CLUSTER", "FLUSHSLOT", "3") == \
        err(b"READONLY You can't write against a read only replica.")


def persistence_changes(node: Any) -> int:
    text = call(node, "INFO", "persistence")[1].decode()
    return int(re.search(r"rdb_changes_since_last_save:(\d+)", text).group(1))
