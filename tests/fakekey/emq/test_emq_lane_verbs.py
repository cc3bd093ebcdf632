"""The lane verbs (spec emq.md 7.1) on fakekey alone: each verb's checks in the spec's
order (arity, EMQSHAPE, EMQLAYOUT, EMQKIND, EMQARG, NOPERM), every refusal writing nothing
(the keyspace, its events and a WATCH untouched), GENQUEUE's lane key naming its group,
REAP's two forms and its word limit, and the flat work the lane sweeps make claimable.
(Their replies and keyspace effects against the scripts: tests/conformance/test_emq_wires.py;
their keyspace events: test_queue_client_lanes.py.)"""

from __future__ import annotations

from typing import Any

import pytest
from test_emq_refusals import assert_writes_nothing, events, no_events, restrict, watcher

from fakekey.net.server import Server
from fakekey.testing.raw import RawClient, plain

__all__ = ["events", "watcher"]  # the fixtures, shared with the flat verbs' refusals

Q = "emq:{orders}:"
LANES = [Q + s for s in ("ring", "gpaused", "glimit", "gactive", "wake", "")]


def k(suffix: str) -> str:
    return Q + suffix


# verb -> (its keys with the suffix each position expects, its arguments: (name, valid
# value, the words of its EMQARG error or None for text))
POS, NONNEG = "a positive integer", "a non-negative integer"
VERBS: dict[str, tuple[list[str], list[tuple[str, Any, str | None]]]] = {
    "GENQUEUE": ([k("JOB9"), k("lane:g"), *LANES[:5]], [("payload", "p", None), ("group", "g", None)]),
    "GCLAIM": ([k("ring"), k("active"), Q], [("lease_ms", 1000, POS)]),
    "GEXTEND": ([k("JOB1"), k("active")], [("attempts", 1, POS), ("lease_ms", 1000, POS)]),
    "GCOMPLETE": ([k("JOB1"), k("active"), k("meta"), *LANES], [("attempts", 1, POS)]),
    "GFAIL": ([k("JOB1"), k("active"), k("schedule"), k("dead"), k("meta"), *LANES],
              [("attempts", 1, POS), ("backoff_ms", 0, NONNEG), ("reason", "r", None)]),
    "GPROMOTE": ([k("schedule"), k("pending"), *LANES], [("batch", 10, POS)]),
    "REAP": ([k("active"), k("pending"), *LANES], [("limit", 10, POS)]),
    "GSWEEP": ([k("active"), k("pending"), k("dead"), k("meta"), *LANES],
               [("limit", 10, POS), ("max_stalls", 1, NONNEG)]),
    "GREPROCESS": ([k("JOB3"), k("dead"), *LANES], []),
    "GREMOVE": ([k("JOB4"), k("schedule"), k("active"), k("dead"), *LANES], []),
    "GPAUSE": (LANES, [("group", "g", None)]),
    "GRESUME": (LANES, [("group", "g", None)]),
    "GLIMIT": (LANES, [("group", "g", None), ("limit", 1, NONNEG)]),
    "GMOVE": ([k("JOB4"), k("active"), *LANES], [("group", "h", None)]),
    "GREPAIR": ([k("active"), *LANES], [("group", "g", None)]),
}
ARITY = {"GENQUEUE": 11, "GCLAIM": 6, "GEXTEND": 6, "GCOMPLETE": 12, "GFAIL": 16, "GPROMOTE": 11,
         "REAP": -11, "GSWEEP": 14, "GREPROCESS": 10, "GREMOVE": 12, "GPAUSE": 9, "GRESUME": 9,
         "GLIMIT": 10, "GMOVE": 11, "GREPAIR": 10}
ROW_VERBS = {"GENQUEUE", "GEXTEND", "GCOMPLETE", "GFAIL", "GREPROCESS", "GREMOVE", "GMOVE"}


def call_of(verb: str, keys: list[str] | None = None, args: list[Any] | None = None) -> tuple:
    own_keys, spec = VERBS[verb]
    keys = own_keys if keys is None else keys
    args = [value for _, value, _ in spec] if args is None else args
    return (f"EMQ.{verb}", len(own_keys), *keys, *args)


def expected(suffix_key: str) -> str:
    """How EMQLAYOUT names what a key position of queue `orders` expects."""
    suffix = suffix_key[len(Q):]
    return "emq:{orders}:" + (suffix if not suffix.startswith("JOB") else "<job id>")


def populate(r: RawClient) -> None:
    """Queue `orders`: JOB1 and JOB2 (group g) leased and expired, JOB3 (group h) dead,
    JOB4 waiting in g's lane (g on the ring), JOBF a flat job due in schedule."""
    genqueue(r, "JOB1", "g")
    assert plain(gclaim(r))[0] == b"JOB1"
    genqueue(r, "JOB2", "g")
    genqueue(r, "JOB3", "h")
    r.call("HSET", k("JOB3"), "max_attempts", 1)
    assert plain(gclaim(r))[0] == b"JOB2"
    assert plain(gclaim(r))[0] == b"JOB3"
    assert r.call(*call_of("GFAIL", [k("JOB3"), *VERBS["GFAIL"][0][1:]], [1, 0, "no"])) == ("+", b"dead")
    genqueue(r, "JOB4", "g")
    assert r.call("EMQ.ENQUEUE", 3, k("JOBF"), k("pending"), k("schedule"), "f", 500, 0) == (":", 1)
    r.call("FAKEKEY.CLOCK", "ADVANCE", 2000)


def genqueue(r: RawClient, job: str, group: str, payload: str = "p") -> Any:
    keys = [k(job), k("lane:" + group), *LANES[:5]]
    return r.call("EMQ.GENQUEUE", 7, *keys, payload, group)


def gclaim(r: RawClient, lease_ms: int = 1000) -> Any:
    return r.call(*call_of("GCLAIM", args=[lease_ms]))


def refusals() -> list[tuple[str, str, tuple, str]]:
    """(verb, case, the call, its error): every check each verb makes, one case each."""
    out: list[tuple[str, str, tuple, str]] = []
    for verb, (keys, spec) in VERBS.items():
        good = call_of(verb)
        name = verb.lower()
        out.append((verb, "arity", good[:-1], f"ERR wrong number of arguments for 'emq.{name}' command"))
        out.append((verb, "shape", (good[0], len(keys) + 1, *good[2:]), f"EMQSHAPE numkeys must be {len(keys)}"))
        out.append((verb, "shape word", (good[0], "x", *good[2:]), f"EMQSHAPE numkeys must be {len(keys)}"))
        out.append((verb, "key 1", (good[0], good[1], "nope", *good[3:]),
                    f"EMQLAYOUT key 1 must be {expected(keys[0]).replace('orders', '<queue>')}"))
        last = len(keys)
        other = [*keys[:-1], keys[-1].replace("{orders}", "{other}")]
        out.append((verb, "another queue", call_of(verb, other), f"EMQLAYOUT key {last} must be {expected(keys[-1])}"))
        if verb in ROW_VERBS:
            out.append((verb, "kind", call_of(verb, [k("job9"), *keys[1:]]), "EMQKIND job id must be JOB-namespaced"))
            # layout before kind
            both = [k("job9"), *keys[1:-1], "emq:{orders}:nope"]
            out.append((verb, "layout before kind", call_of(verb, both),
                        f"EMQLAYOUT key {last} must be {expected(keys[-1])}"))
        for at, (arg, _, words) in enumerate(spec):
            if words is None:
                continue
            args = [value for _, value, _ in spec]
            for bad in ("x", "-1", "01"):
                args[at] = bad
                out.append((verb, f"{arg} {bad}", call_of(verb, args=args), f"EMQARG {arg} must be {words}"))
            if words == POS:
                args[at] = 0
                out.append((verb, f"{arg} 0", call_of(verb, args=args), f"EMQARG {arg} must be {words}"))
            if verb in ROW_VERBS:  # kind before arguments
                out.append((verb, f"kind before {arg}", call_of(verb, [k("job9"), *keys[1:]], args),
                            "EMQKIND job id must be JOB-namespaced"))
    return out


REFUSALS = refusals()


@pytest.mark.parametrize(("verb", "case", "call", "error"), REFUSALS,
                         ids=[f"{v}-{c}" for v, c, _, _ in REFUSALS])
def test_every_check_in_order_writes_nothing(r: RawClient, watcher: RawClient, events: RawClient,
                                             verb: str, case: str, call: tuple, error: str) -> None:
    populate(r)
    no_events(events)
    assert_writes_nothing(r, watcher, events, call, error)


def test_the_lane_verbs_are_declared_as_their_scripts_take_them(r: RawClient) -> None:
    for verb, arity in ARITY.items():
        (info,) = r.call("COMMAND", "INFO", f"emq.{verb.lower()}")[1]
        fields = plain(info)
        assert fields[1] == arity, verb
        assert sorted(fields[2]) == sorted([b"write", b"module", b"movablekeys"]), verb
        assert sorted(fields[6]) == sorted([b"@write", b"@slow"]), verb
        keys = VERBS[verb][0]
        assert plain(r.call("COMMAND", "GETKEYS", *call_of(verb))) == [w.encode() for w in keys], verb


def test_caps_lists_the_lane_verbs_after_the_sixteen(r: RawClient) -> None:
    caps = plain(r.call("EMQ.CAPS", 0))
    assert caps[16:31] == [b"genqueue", b"gclaim", b"gextend", b"gcomplete", b"gfail", b"gpromote",
                           b"reap", b"gsweep", b"greprocess", b"gremove", b"gpause", b"gresume",
                           b"glimit", b"gmove", b"grepair"]


# --- GENQUEUE's lane key, REAP's forms ----------------------------------------------------


def test_genqueue_refuses_another_groups_lane(r: RawClient, watcher: RawClient, events: RawClient) -> None:
    """The lane key must be the group argument's own: a job is never admitted to one
    group's lane while its row names another."""
    populate(r)
    no_events(events)
    keys = [k("JOB9"), k("lane:h"), *LANES[:5]]
    assert_writes_nothing(r, watcher, events, ("EMQ.GENQUEUE", 7, *keys, "p", "g"),
                          "EMQLAYOUT key 2 must be emq:{orders}:lane:g")
    keys = [k("JOB9"), k("lane:g"), k("nope"), *LANES[1:5]]
    assert_writes_nothing(r, watcher, events, ("EMQ.GENQUEUE", 7, *keys, "p", "g"),
                          "EMQLAYOUT key 3 must be emq:{orders}:ring")


def test_genqueue_admits_rings_once_and_refuses_a_duplicate(r: RawClient) -> None:
    assert genqueue(r, "JOB1", "g") == (":", 1)
    assert genqueue(r, "JOB2", "g") == (":", 1)
    assert genqueue(r, "JOB1", "g", "other") == (":", 0)
    assert plain(r.call("HGETALL", k("JOB1"))) in (
        [b"state", b"pending", b"attempts", b"0", b"payload", b"p", b"group", b"g"],
        {b"state": b"pending", b"attempts": b"0", b"payload": b"p", b"group": b"g"})
    assert plain(r.call("LRANGE", k("ring"), 0, -1)) == [b"g"]
    assert plain(r.call("LRANGE", k("wake"), 0, -1)) == [b"1"]
    assert plain(gclaim(r)) == [b"JOB1", b"p", 1, b"g"]


def test_reap_takes_an_optional_group_and_no_more(r: RawClient) -> None:
    populate(r)
    base = call_of("REAP")
    assert r.call(*base, "h", "x") == ("-", b"ERR wrong number of arguments for 'emq.reap' command")
    assert r.call(*base, "h") == (":", 0)  # h has no expired lease
    assert r.call(*base, "") == (":", 2)  # the empty group: every group
    assert plain(r.call("ZRANGE", k("lane:g"), 0, -1)) == [b"JOB1", b"JOB2", b"JOB4"]
    assert plain(r.call("HGET", k("gactive"), "g")) is None


def test_reap_one_group_leaves_the_others(r: RawClient) -> None:
    populate(r)
    genqueue(r, "JOB5", "h")
    assert plain(r.call(*call_of("GCLAIM", args=[1])))[0] == b"JOB4"  # the ring's head group g
    r.call("FAKEKEY.CLOCK", "ADVANCE", 10)
    assert r.call(*call_of("REAP", args=[1, "g"])) == (":", 1)
    assert plain(r.call("ZRANGE", k("active"), 0, -1)) == [b"JOB2", b"JOB4"]


# --- access -------------------------------------------------------------------------------

DECLARED = {verb: [f"~{key}" for key in keys] for verb, (keys, _) in VERBS.items()}
# verb -> a call that reaches a key it derives (a row, a lane, a lane key from the prefix)
DERIVED = {
    "GCLAIM": call_of("GCLAIM"),
    "GCOMPLETE": call_of("GCOMPLETE"),
    "GFAIL": call_of("GFAIL"),
    "GPROMOTE": call_of("GPROMOTE"),
    "REAP": call_of("REAP"),
    "GSWEEP": call_of("GSWEEP"),
    "GREPROCESS": call_of("GREPROCESS"),
    "GREMOVE": call_of("GREMOVE"),
    "GRESUME": call_of("GRESUME"),
    "GLIMIT": call_of("GLIMIT"),
    "GMOVE": call_of("GMOVE"),
    "GREPAIR": call_of("GREPAIR"),
}


@pytest.mark.parametrize("verb", list(DERIVED))
def test_a_derived_key_out_of_reach_is_noperm_and_nothing_written(
        server: Server, r: RawClient, watcher: RawClient, events: RawClient, verb: str) -> None:
    populate(watcher)
    no_events(events)
    restrict(server, r, DECLARED[verb])
    assert_writes_nothing(r, watcher, events, DERIVED[verb], "NOPERM No permissions to access a key")


@pytest.mark.parametrize("verb", ["GENQUEUE", "GCLAIM", "GEXTEND", "GPAUSE"])
def test_its_declared_keys_are_enough_where_it_derives_none(server: Server, r: RawClient,
                                                            watcher: RawClient, verb: str) -> None:
    populate(watcher)
    extra = {"GCLAIM": [f"~{k(s)}" for s in ("gpaused", "glimit", "gactive", "lane:g", "JOB4")]}
    restrict(server, r, DECLARED[verb] + extra.get(verb, []))
    assert r.call(*call_of(verb, args=[1, 1000] if verb == "GEXTEND" else None))[0] != "-"


def test_arguments_are_checked_before_access(server: Server, r: RawClient, watcher: RawClient,
                                             events: RawClient) -> None:
    """The declared keys are the server's to check (before the verb runs, as Valkey checks
    a module command's key specs); the keys a verb derives are checked after its arguments."""
    populate(watcher)
    no_events(events)
    restrict(server, r, DECLARED["REAP"] + DECLARED["GLIMIT"])
    assert_writes_nothing(r, watcher, events, call_of("REAP", args=[0]), "EMQARG limit must be a positive integer")
    assert_writes_nothing(r, watcher, events, call_of("GLIMIT", args=["g", "x"]),
                          "EMQARG limit must be a non-negative integer")
    assert_writes_nothing(r, watcher, events, call_of("REAP"), "NOPERM No permissions to access a key")
    assert_writes_nothing(r, watcher, events, call_of("GLIMIT"), "NOPERM No permissions to access a key")


# --- the flat work the lane sweeps make claimable -----------------------------------------


def test_lane_sweeps_move_flat_jobs_to_pending(r: RawClient) -> None:
    populate(r)
    assert r.call(*call_of("GPROMOTE")) == (":", 1)  # JOBF, due
    assert plain(r.call("ZRANGE", k("pending"), 0, -1)) == [b"JOBF"]
    assert plain(r.call("EMQ.CLAIM", 2, k("pending"), k("active"), 10))[0] == b"JOBF"
    r.call("FAKEKEY.CLOCK", "ADVANCE", 20)
    assert plain(r.call(*call_of("GSWEEP", args=[10, 5]))) == [3, 0, 0]  # JOB1, JOB2 and JOBF
    assert plain(r.call("ZRANGE", k("pending"), 0, -1)) == [b"JOBF"]
    assert plain(r.call("HGET", k("JOBF"), "stalls")) == b"1"
