"""HyperLogLog commands: PFADD, PFCOUNT, PFMERGE, PFDEBUG, PFSELFTEST.

A HyperLogLog is a string value in Valkey's own layout (fakekey/codecs/hll.py), edited
in place as a bytearray, so GET, SET, DUMP-like copies and APPEND see Valkey's bytes.
"""

from __future__ import annotations

import dataclasses
import random
from typing import Any

from fakekey.codecs import hll
from fakekey.commands.strings import unshare
from fakekey.core.client import Client
from fakekey.core.registry import KeySpec, command, keys_range
from fakekey.resp.replies import ReplyError, Simple

G = "hyperloglog"

NOT_HLL = ReplyError("WRONGTYPE Key is not a valid HyperLogLog string value.")
CORRUPTED = ReplyError("INVALIDOBJ Corrupted HLL object detected")
_INT64 = 1 << 63


def _hll_at(c: Client, key: bytes) -> bytes | bytearray | None:
    """The HyperLogLog at `key`, None if absent; WRONGTYPE for any other value (a string
    that is not a HyperLogLog gets its own text)."""
    value = c.db.lookup_string(key)
    if value is not None and not hll.is_hll(value):
        raise NOT_HLL
    return value


def _signed(card: int) -> int:
    """The uint64 Valkey stores, as the long long it replies."""
    return card - (1 << 64) if card >= _INT64 else card


def _sparse_max(c: Client) -> int:
    return c.state.config["hll-sparse-max-bytes"]


@command("pfadd", -2, "write denyoom fast", keys=keys_range(1, flags="RW insert"), acl=G, group=G,
         since="2.8.9", complexity="O(1) to add every element.",
         summary="Adds elements to a HyperLogLog, creating it if needed; answers 1 if it changed.")
def pfadd(c: Client, argv: list[bytes]) -> Any:
    key = argv[1]
    value = _hll_at(c, key)
    created = value is None
    data = hll.new_sparse() if value is None else unshare(c, key, value)
    try:
        updated = hll.add(data, argv[2:], _sparse_max(c)) + created
    except hll.Corrupted:
        raise CORRUPTED from None  # the registers changed before the bad opcode stay
    if created:
        hll.invalidate(data)
        c.db.set_value(key, data, event="pfadd", klass="$")
    elif updated:
        c.db.written(key, "pfadd", "$")
    if updated > 1:
        c.state.dirty += updated - 1  # Valkey counts each register changed
    return 1 if updated else 0


_PFCOUNT_KEYS = dataclasses.replace(
    keys_range(1, -1, flags="RW access"),
    notes="RW because it may change the internal representation of the key, and propagate to replicas",
)


@command("pfcount", -2, "readonly", keys=_PFCOUNT_KEYS, acl=G, group=G, since="2.8.9",
         complexity="O(1) with a very small average constant time when called with a single key. "
                    "O(N) with N being the number of keys, and much bigger constant times, when "
                    "called with multiple keys.",
         summary="Answers the estimated number of distinct elements in the union of HyperLogLogs.")
def pfcount(c: Client, argv: list[bytes]) -> Any:
    if len(argv) > 2:
        return _signed(hll.estimate(hll.raw_histogram(_merged(c, argv[1:])[0])))
    key = argv[1]
    value = _hll_at(c, key)
    if value is None:
        return 0
    data = unshare(c, key, value)
    card = hll.cached_card(data)
    if card is not None:
        return card
    try:
        card = hll.count(data)
    except hll.Corrupted:
        raise CORRUPTED from None
    # the cache lives in the value: Valkey writes it back (WATCH sees it, no event)
    hll.store_card(data, card)
    c.db.written(key)
    return _signed(card)


def _merged(c: Client, keys: list[bytes], misses: bool = False) -> tuple[bytearray, bool]:
    """The register-wise maximum of the HyperLogLogs at `keys` (missing ones are empty),
    and whether one of them is dense. With `misses`, a missing key is announced as
    `keymiss` (Valkey reads PFMERGE's sources as a read-only command reads)."""
    merged = bytearray(hll.REGISTERS)
    any_dense = False
    for key in keys:
        value = _hll_at(c, key)
        if value is None:
            if misses and "m" in c.state.notify_flags:
                c.state.notify(c.db, "m", "keymiss", key)
            continue
        any_dense = any_dense or value[4] == hll.DENSE
        try:
            merged = hll.raw_max(merged, hll.registers(value))
        except hll.Corrupted:
            raise CORRUPTED from None
    return merged, any_dense


@command("pfmerge", -2, "write denyoom",
         keys=(keys_range(1, flags="RW access insert"), keys_range(2, -1, flags="RO access")),
         acl=G, group=G, since="2.8.9", complexity="O(N) to merge N HyperLogLogs, but with high constant times.",
         summary="Merges HyperLogLogs, the destination's own included, into the destination.")
def pfmerge(c: Client, argv: list[bytes]) -> Any:
    merged, use_dense = _merged(c, argv[1:], misses=True)
    key = argv[1]
    value = c.db.lookup_write(key)  # read once already, as a source: counted there
    created = value is None
    data = hll.new_sparse() if created else unshare(c, key, value)
    hll.merge_into(data, merged, use_dense, _sparse_max(c))
    if created:
        c.db.set_value(key, data, event="pfadd", klass="$")  # Valkey announces a merge as pfadd
    else:
        c.db.written(key, "pfadd", "$")
    return Simple(b"OK")


# --- debugging -------------------------------------------------------------------------------


@command("pfdebug", 3, "write denyoom admin", keys=KeySpec(2, 2, 1, ("RW", "access")), acl=f"{G} dangerous",
         group=G, since="2.8.9", complexity="N/A", doc_flags="syscmd",
         summary="Inspects or converts the representation of a HyperLogLog (for debugging).")
def pfdebug(c: Client, argv: list[bytes]) -> Any:
    sub = argv[1].lower()
    if sub == b"simd":
        if argv[2].lower() not in (b"on", b"off"):
            raise ReplyError("ERR Argument must be ON or OFF")
        return Simple(b"disabled")  # no vector registers in pure Python
    key = argv[2]
    value = _hll_at(c, key)
    if value is None:
        raise ReplyError("ERR The specified key does not exist")
    data = unshare(c, key, value)
    if sub == b"getreg":
        _to_dense(c, data)
        return list(hll.dense_to_raw(data[hll.HEADER:]))
    if sub == b"decode":
        if data[4] != hll.SPARSE:
            raise ReplyError("ERR HLL encoding is not sparse")
        return hll.decode(data)
    if sub == b"encoding":
        return Simple(b"sparse" if data[4] == hll.SPARSE else b"dense")
    if sub == b"todense":
        return 1 if _to_dense(c, data) else 0
    raise ReplyError(f"ERR Unknown PFDEBUG subcommand '{argv[1].decode(errors='replace')}'")


def _to_dense(c: Client, data: bytearray) -> bool:
    """Valkey converts in place and counts a change, without telling WATCH or events."""
    try:
        converted = hll.to_dense(data)
    except hll.Corrupted:
        raise CORRUPTED from None
    if converted:
        c.state.dirty += 1
    return converted


@command("pfselftest", 1, "admin", acl=f"{G} dangerous", group=G, since="2.8.9", complexity="N/A",
         doc_flags="syscmd", summary="Checks the HyperLogLog implementation against itself.")
def pfselftest(c: Client, argv: list[bytes]) -> Any:
    failure = hll.self_test(random.Random(), _sparse_max(c))
    if failure:
        raise ReplyError(f"TESTFAILED {failure}")
    return Simple(b"OK")
