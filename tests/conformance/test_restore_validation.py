"""RESTORE under DEBUG SET-SKIP-CHECKSUM-VALIDATION 1 (the CRC is not looked at, the
version still is), and the payloads Valkey's own tests hand it: a zipmap whose length
uses the long form for a short length (CVE-2026-25243), and a stream whose consumers
share one pending entry. Both are "Bad data format"."""

from __future__ import annotations

import pytest

BAD_FORMAT = ("-", b"ERR Bad data format")
BAD_PAYLOAD = ("-", b"ERR DUMP payload version or checksum are wrong")
# type 9 (zipmap), 24 bytes; the first field's length 3 in the 5-byte form; RDB version
# 80 and a CRC of zero
OVERLONG_ZIPMAP = (b"\x09\x18\x02\xfe\x03\x00\x00\x00abc\x03\x00def\x03ghi\x03\x00jkl\xff"
                   b"\x50\x00" + b"\x00" * 8)


@pytest.fixture
def skipping(r2):
    r2.call("DEBUG", "SET-SKIP-CHECKSUM-VALIDATION", "1")
    yield r2
    r2.call("DEBUG", "SET-SKIP-CHECKSUM-VALIDATION", "0")


def test_a_wrong_checksum_is_refused_by_default(r2):
    r2.call("SET", "s", "v")
    payload = r2.call("DUMP", "s")[1]
    broken = payload[:-1] + bytes([payload[-1] ^ 0xFF])
    assert r2.call("RESTORE", "t", "0", broken) == BAD_PAYLOAD


def test_skipping_the_checksum_takes_a_wrong_one(skipping):
    skipping.call("SET", "s", "v")
    payload = skipping.call("DUMP", "s")[1]
    broken = payload[:-1] + bytes([payload[-1] ^ 0xFF])
    assert skipping.call("RESTORE", "t", "0", broken) == ("+", b"OK")
    assert skipping.call("GET", "t") == ("$", b"v")


def test_skipping_keeps_the_version_check(skipping):
    skipping.call("SET", "s", "v")
    payload = skipping.call("DUMP", "s")[1]
    future = payload[:-10] + (0xFFFF).to_bytes(2, "little") + payload[-8:]
    assert skipping.call("RESTORE", "t", "0", future) == BAD_PAYLOAD


def test_overlong_zipmap_length_is_bad_data(skipping):
    assert skipping.call("RESTORE", "zipmap_test", "0", OVERLONG_ZIPMAP) == BAD_FORMAT


def test_stream_with_a_pending_entry_shared_by_two_consumers_is_bad_data(skipping):
    r = skipping
    r.call("XADD", "mystream", "1-1", "f", "v")
    r.call("XADD", "mystream", "2-1", "f", "v")
    r.call("XGROUP", "CREATE", "mystream", "grp", "0")
    r.call("XREADGROUP", "GROUP", "grp", "consumer1", "COUNT", "1", "STREAMS", "mystream", ">")
    r.call("XREADGROUP", "GROUP", "grp", "consumer2", "COUNT", "1", "STREAMS", "mystream", ">")
    dump = r.call("DUMP", "mystream")[1]
    r.call("DEL", "mystream")
    id_2_1 = (2).to_bytes(8, "big") + (1).to_bytes(8, "big")
    id_1_1 = (1).to_bytes(8, "big") + (1).to_bytes(8, "big")
    last = dump.rindex(id_2_1)  # consumer2's own pending list, after the group's
    corrupt = dump[:last] + id_1_1 + dump[last + 16:]
    assert r.call("RESTORE", "mystream", "0", corrupt) == BAD_FORMAT
