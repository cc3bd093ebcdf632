"""RedisBloom's t-digest verbs (TDIGEST.*) as Redis Stack answers them: the estimates of
its documented examples, doubles in RESP2 (bulk) and RESP3 (double) with nan and inf,
the merging rules of TDIGEST.MERGE, INFO, the error texts, and a lone observation's
NaN quantiles (Redis Stack's t-digest never compresses one)."""

from __future__ import annotations

import pytest

from fakekey.modules.stack.tdigest_sketch import TDigest, _quicksort
from fakekey.net.server import Server
from fakekey.testing.raw import RawClient, plain

EXAMPLE = ["1", "2", "2", "3", "3", "3", "4", "4", "4", "4", "5", "5", "5", "5", "5"]


def doubles(proto: int, *texts: str) -> tuple[str, list[tuple[str, bytes]]]:
    kind = "," if proto == 3 else "$"
    return ("*", [(kind, text.encode()) for text in texts])


def info(r: RawClient, key: str) -> dict[bytes, int]:
    reply = plain(r.call("TDIGEST.INFO", key))
    return reply if isinstance(reply, dict) else dict(zip(reply[::2], reply[1::2], strict=True))


def test_documented_quantiles_cdf_and_ranks(r: RawClient, proto: int) -> None:
    assert r.call("TDIGEST.CREATE", "t", "COMPRESSION", 1000) == ("+", b"OK")
    assert r.call("TDIGEST.ADD", "t", *EXAMPLE) == ("+", b"OK")
    assert r.call("TDIGEST.QUANTILE", "t", *["0", "0.1", "0.2", "0.3", "0.4", "0.5", "0.6", "0.7", "0.8", "0.9", "1"]) == doubles(
        proto, "1", "2", "3", "3", "4", "4", "4", "5", "5", "5", "5")
    assert r.call("TDIGEST.CDF", "t", *range(7)) == doubles(
        proto, "0", "0.03333333333333333", "0.13333333333333333", "0.3", "0.5333333333333333",
        "0.8333333333333334", "1")
    assert r.call("TDIGEST.BYRANK", "t", *range(16)) == doubles(
        proto, *["1", "2", "2", "3", "3", "3", "4", "4", "4", "4", "5", "5", "5", "5", "5", "inf"])
    assert r.call("TDIGEST.BYREVRANK", "t", *range(16)) == doubles(
        proto, *["5", "5", "5", "5", "5", "4", "4", "4", "4", "3", "3", "3", "2", "2", "1", "-inf"])
    assert r.call("TDIGEST.MIN", "t") == doubles(proto, "1")[1][0]
    assert r.call("TDIGEST.MAX", "t") == doubles(proto, "5")[1][0]


def test_documented_ranks(r: RawClient) -> None:
    r.call("TDIGEST.CREATE", "s", "COMPRESSION", 1000)
    r.call("TDIGEST.ADD", "s", 10, 20, 30, 40, 50, 60)
    assert plain(r.call("TDIGEST.RANK", "s", *range(0, 80, 10))) == [-1, 0, 1, 2, 3, 4, 5, 6]
    assert plain(r.call("TDIGEST.REVRANK", "s", *range(0, 80, 10))) == [6, 5, 4, 3, 2, 1, 0, -1]
    r.call("TDIGEST.CREATE", "d", "COMPRESSION", 1000)
    r.call("TDIGEST.ADD", "d", 10, 10, 10, 10, 20, 20)
    assert plain(r.call("TDIGEST.RANK", "d", 10, 20)) == [2, 5]
    assert plain(r.call("TDIGEST.REVRANK", "d", 10, 20)) == [4, 1]


def test_info_counts_merged_and_unmerged_nodes(r: RawClient, proto: int) -> None:
    r.call("TDIGEST.CREATE", "t")
    r.call("TDIGEST.ADD", "t", 1, 2, 3, 4, 5)
    assert info(r, "t") == {b"Compression": 100, b"Capacity": 610, b"Merged nodes": 0,
                            b"Unmerged nodes": 5, b"Merged weight": 0, b"Unmerged weight": 5,
                            b"Observations": 5, b"Total compressions": 0, b"Memory usage": 9768}
    r.call("TDIGEST.QUANTILE", "t", 0.5)  # a query compresses
    assert info(r, "t")[b"Merged nodes"] == 5
    assert info(r, "t")[b"Total compressions"] == 1
    assert r.call("TDIGEST.INFO", "t")[0] == ("%" if proto == 3 else "*")


def test_info_after_ten_thousand_observations(r: RawClient) -> None:
    """RedisBloom's own suite pins these counts for 1..10000 added in turn."""
    r.call("TDIGEST.CREATE", "t")
    r.call("TDIGEST.ADD", "t", *range(1, 10001))
    assert info(r, "t") == {b"Compression": 100, b"Capacity": 610, b"Merged nodes": 51,
                            b"Unmerged nodes": 422, b"Merged weight": 9578,
                            b"Unmerged weight": 422, b"Observations": 10000,
                            b"Total compressions": 17, b"Memory usage": 9768}


def test_large_digest_compresses_as_it_fills(r: RawClient) -> None:
    r.call("TDIGEST.CREATE", "t")
    for start in range(1, 5001, 1000):
        r.call("TDIGEST.ADD", "t", *range(start, start + 1000))
    summary = info(r, "t")
    assert summary[b"Observations"] == 5000
    assert summary[b"Merged nodes"] + summary[b"Unmerged nodes"] < 610
    assert summary[b"Total compressions"] >= 8
    low, middle, high = (float(v) for v in plain(r.call("TDIGEST.QUANTILE", "t", 0.01, 0.5, 0.99)))
    assert abs(low - 50) < 5 and abs(middle - 2500) < 25 and abs(high - 4950) < 5
    assert plain(r.call("TDIGEST.QUANTILE", "t", 0, 1)) == [b"1", b"5000"]
    assert abs(float(plain(r.call("TDIGEST.TRIMMED_MEAN", "t", 0.1, 0.9))) - 2500.5) < 5


def test_empty_and_single_observation(r: RawClient, proto: int) -> None:
    r.call("TDIGEST.CREATE", "t")
    assert r.call("TDIGEST.MIN", "t") == doubles(proto, "nan")[1][0]
    assert r.call("TDIGEST.QUANTILE", "t", 0.5) == doubles(proto, "nan")
    assert r.call("TDIGEST.CDF", "t", 1) == doubles(proto, "nan")
    assert r.call("TDIGEST.BYRANK", "t", 0) == doubles(proto, "nan")
    assert r.call("TDIGEST.RANK", "t", 1) == ("*", [(":", -2)])
    assert r.call("TDIGEST.TRIMMED_MEAN", "t", 0.1, 0.9) == doubles(proto, "nan")[1][0]
    r.call("TDIGEST.ADD", "t", 123)
    # one observation weighs 1: Redis Stack's t-digest never compresses it
    assert r.call("TDIGEST.QUANTILE", "t", 0, 0.5, 1) == doubles(proto, "nan", "nan", "nan")
    assert r.call("TDIGEST.CDF", "t", 123) == doubles(proto, "nan")
    assert r.call("TDIGEST.BYRANK", "t", 0, 1) == doubles(proto, "123", "inf")
    assert r.call("TDIGEST.MAX", "t") == doubles(proto, "123")[1][0]
    assert plain(r.call("TDIGEST.RANK", "t", 100, 200)) == [-1, 1]
    assert info(r, "t")[b"Unmerged nodes"] == 1
    r.call("TDIGEST.ADD", "t", 124)
    assert r.call("TDIGEST.QUANTILE", "t", 0, 1) == doubles(proto, "123", "124")


def test_reset_keeps_the_compression(r: RawClient) -> None:
    r.call("TDIGEST.CREATE", "t", "compression", 50)
    r.call("TDIGEST.ADD", "t", 1, 2, 3)
    assert r.call("TDIGEST.RESET", "t") == ("+", b"OK")
    assert info(r, "t")[b"Observations"] == 0
    assert info(r, "t")[b"Compression"] == 50


def test_merge(r: RawClient) -> None:
    r.call("TDIGEST.CREATE", "a", "COMPRESSION", 50)
    r.call("TDIGEST.CREATE", "b", "COMPRESSION", 200)
    r.call("TDIGEST.ADD", "a", 1, 2, 3)
    r.call("TDIGEST.ADD", "b", 4, 5)
    assert r.call("TDIGEST.MERGE", "new", 2, "a", "b") == ("+", b"OK")
    assert info(r, "new")[b"Compression"] == 200  # the largest of the sources'
    assert info(r, "new")[b"Observations"] == 5
    assert r.call("TDIGEST.MERGE", "new", 1, "a") == ("+", b"OK")  # into it: adds
    assert info(r, "new")[b"Observations"] == 8
    assert r.call("TDIGEST.MERGE", "new", 1, "a", "OVERRIDE") == ("+", b"OK")
    assert (info(r, "new")[b"Observations"], info(r, "new")[b"Compression"]) == (3, 50)
    assert r.call("TDIGEST.MERGE", "new", 2, "new", "b", "COMPRESSION", 70) == ("+", b"OK")
    assert (info(r, "new")[b"Observations"], info(r, "new")[b"Compression"]) == (8, 70)
    r.call("TDIGEST.CREATE", "one")
    r.call("TDIGEST.ADD", "one", 9)
    assert r.call("TDIGEST.MERGE", "with-one", 1, "one") == ("+", b"OK")  # its lone node too
    assert plain(r.call("TDIGEST.MAX", "with-one")) == b"9"


@pytest.mark.parametrize(("args", "error"), [
    (("TDIGEST.CREATE", "x", "COMPRESSION"), b"ERR wrong number of arguments for 'tdigest.create' command"),
    (("TDIGEST.CREATE", "x", "LEVEL", 10), b"ERR T-Digest: wrong keyword"),
    (("TDIGEST.CREATE", "x", "COMPRESSION", "z"), b"ERR T-Digest: error parsing compression parameter"),
    (("TDIGEST.CREATE", "x", "COMPRESSION", 0),
     b"ERR T-Digest: compression parameter needs to be a positive integer"),
    (("TDIGEST.CREATE", "t"), b"ERR T-Digest: key already exists"),
    (("TDIGEST.ADD", "x", 1), b"ERR T-Digest: key does not exist"),
    (("TDIGEST.ADD", "t", "nan"), b"ERR T-Digest: error parsing val parameter"),
    (("TDIGEST.ADD", "t", "inf"), b"ERR T-Digest: val parameter needs to be a finite number"),
    (("TDIGEST.QUANTILE", "t", "q"), b"ERR T-Digest: error parsing quantile"),
    (("TDIGEST.QUANTILE", "t", 1.5), b"ERR T-Digest: quantile should be in [0,1]"),
    (("TDIGEST.CDF", "t", "v"), b"ERR T-Digest: error parsing cdf"),
    (("TDIGEST.RANK", "t", "v"), b"ERR T-Digest: error parsing value"),
    (("TDIGEST.BYRANK", "t", 1.5), b"ERR T-Digest: error parsing rank"),
    (("TDIGEST.BYREVRANK", "t", -1), b"ERR T-Digest: rank needs to be non negative"),
    (("TDIGEST.TRIMMED_MEAN", "t", "l", 1), b"ERR T-Digest: error parsing low_cut_percentile"),
    (("TDIGEST.TRIMMED_MEAN", "t", 0, "h"), b"ERR T-Digest: error parsing high_cut_percentile"),
    (("TDIGEST.TRIMMED_MEAN", "t", 0, 2),
     b"ERR T-Digest: low_cut_percentile and high_cut_percentile should be in [0,1]"),
    (("TDIGEST.TRIMMED_MEAN", "t", 0.5, 0.5),
     b"ERR T-Digest: low_cut_percentile should be lower than high_cut_percentile"),
    (("TDIGEST.MERGE", "d", "n", "t"), b"ERR T-Digest: error parsing numkeys"),
    (("TDIGEST.MERGE", "d", 0, "t"), b"ERR T-Digest: numkeys needs to be a positive integer"),
    (("TDIGEST.MERGE", "d", 3, "t"), b"ERR wrong number of arguments for 'tdigest.merge' command"),
    (("TDIGEST.MERGE", "d", 1, "t", "BOGUS"), b"ERR T-Digest: wrong keyword"),
    (("TDIGEST.MERGE", "d", 1, "t", "COMPRESSION"), b"ERR wrong number of arguments for 'tdigest.merge' command"),
    (("TDIGEST.MERGE", "d", 1, "missing"), b"ERR T-Digest: key does not exist"),
    (("TDIGEST.MERGE", "d", 1, "d"), b"ERR T-Digest: key does not exist"),
    (("TDIGEST.MERGE", "s", 1, "t"), b"WRONGTYPE Operation against a key holding the wrong kind of value"),
    (("TDIGEST.MIN", "s"), b"WRONGTYPE Operation against a key holding the wrong kind of value"),
    (("TDIGEST.CREATE", "s"), b"WRONGTYPE Operation against a key holding the wrong kind of value"),
])
def test_errors(r: RawClient, args: tuple[object, ...], error: bytes) -> None:
    r.call("TDIGEST.CREATE", "t")
    r.call("SET", "s", "v")
    assert r.call(*args) == ("-", error)


def test_dump_restore_and_type(r: RawClient) -> None:
    r.call("TDIGEST.CREATE", "t")
    r.call("TDIGEST.ADD", "t", *EXAMPLE)
    assert r.call("TYPE", "t") == ("+", b"TDIS-TYPE")
    assert r.call("RESTORE", "u", 0, r.call("DUMP", "t")[1]) == ("+", b"OK")
    assert r.call("TDIGEST.QUANTILE", "u", 0.5) == r.call("TDIGEST.QUANTILE", "t", 0.5)
    assert info(r, "u")[b"Observations"] == 15


def test_payload_round_trip() -> None:
    digest = TDigest(100)
    for value in range(50):
        digest.add(float(value), 1)
    again = TDigest.from_payload(digest.payload(), 0)
    assert again.quantile(0.5) == digest.quantile(0.5)
    assert (again.merged_nodes, again.size()) == (digest.merged_nodes, 50)
    with pytest.raises(ValueError):
        TDigest.from_payload(digest.payload()[:30], 0)


def test_estimates_are_the_librarys_to_the_last_bit() -> None:
    """Numbers taken from RedisBloom's t-digest library (built from its C) for the same
    5000 observations: every estimate the same double."""
    digest = TDigest(50)
    for i in range(1, 5001):
        digest.add(((i * 7919) % 1000) / 7.0, 1)
    assert digest.quantiles([0.001, 0.1, 0.5, 0.9, 0.999]) == [
        0.076190476190476183, 15.023299812678694, 71.186703761243152, 128.06385580242019,
        142.65119047619049]
    assert digest.quantile(0.25) == 36.519410204530857
    assert [digest.cdf(x) for x in (10.0, 70.0, 130.0)] == [
        0.065817584207933919, 0.49138264495408923, 0.91317894496328078]
    assert digest.trimmed_mean(0.1, 0.9) == 71.319186418059687
    assert (digest.merged_nodes, digest.unmerged_nodes, digest.merged_weight,
            digest.total_compressions) == (34, 0, 5000, 18)


def test_quicksort_orders_equal_means_as_td_qsort() -> None:
    """Lomuto around the middle node, by hand: the order equal means end up in."""
    means, weights = [3.0, 3.0, 3.0], [1, 2, 3]
    _quicksort(means, weights)
    assert weights == [2, 3, 1]
    means, weights = [2.0, 1.0, 2.0, 1.0], [1, 2, 3, 4]
    _quicksort(means, weights)
    assert (means, weights) == ([1.0, 1.0, 2.0, 2.0], [2, 4, 3, 1])


def test_equal_means_of_unequal_weights_sort_as_redisbloom() -> None:
    digest = TDigest(100)
    for value in [3.0] * 40 + [1.0, 2.0, 4.0, 5.0]:
        digest.add(value, 1)
    digest.compress()
    for _ in range(5):
        digest.add(3.0, 1)
    assert digest.cdf(3.0) == pytest.approx(0.5, abs=0.05)
    assert digest.quantile(0.5) == 3.0


def test_verbs_unknown_without_the_setting() -> None:
    with Server() as srv, RawClient(srv.host, srv.port) as client:
        kind, text = client.call("TDIGEST.CREATE", "t")
        assert kind == "-" and text.startswith(b"ERR unknown command 'TDIGEST.CREATE'")
