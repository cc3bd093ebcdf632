"""The EMQ job verbs against a plain model of ../shared/spec/emq.md, step by step.

A Hypothesis state machine drives random job lifecycles through the verbs of one queue
(admission with and without delay and priority, duplicates, claims, heartbeats, settles
with right and stale fences, the two sweeps while the frozen clock moves, reprocess,
removal, the pause switch, the counters) and, after every step, compares the verb's reply
(its exact wire type) and the whole keyspace (every key's type, hash fields in order, zset
members with scores, TTLs) with `QueueModel`. The model is written from the spec and the
lead's decisions alone; it imports nothing of the implementation.

A few steps write the keyspace with built-ins, as an operator or another client could: a
`max_attempts` on meta or on a row, a row deleted behind the queue's back (its set members
are then rowless), a row turned into a lane row (a `group` field) and back, a non-integer
written into one of a row's integer fields (EMQHOST for the verbs that read it).

The same machine also drives the wire-4 scripts (fakekey/emq/scripts/*.lua) through
EVALSHA on fakekey, passing the model's clock as `now`: the scripts are the verbs' twins,
so one model judges both.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule, run_state_machine_as_test

from fakekey.emq.scripts import SCRIPTS
from fakekey.net.server import Server
from fakekey.testing.raw import RawClient

NOW = 1_700_000_000_000
QUEUE = "q"
PREFIX = f"emq:{{{QUEUE}}}:"
META, PENDING, SCHEDULE, ACTIVE, DEAD = (PREFIX + s for s in ("meta", "pending", "schedule", "active", "dead"))
SETS = {"pending": PENDING, "schedule": SCHEDULE, "active": ACTIVE, "dead": DEAD}
IDS = ("JOB1", "JOB2", "JOB3", "JOB4", "JOB5")

Reply = tuple[str, Any]


# --- the model ------------------------------------------------------------------------------


def strict_int(word: str) -> int | None:
    """Valkey's string2ll: optional '-', no '+', no leading zero, 64-bit."""
    if not re.fullmatch(r"0|-?[1-9][0-9]*", word):
        return None
    value = int(word)
    return value if -(2**63) <= value < 2**63 else None


def err(text: str) -> Reply:
    return ("-", text.encode())


def integer(n: int) -> Reply:
    return (":", n)


def bulk(b: bytes) -> Reply:
    return ("$", b)


KIND = err("EMQKIND job id must be JOB-namespaced")
NOT_ACTIVE = err("EMQSTATE job is not active")
NOT_DEAD = err("EMQSTATE job is not dead")
STALE = err("EMQFENCE stale fence")
HOST = err("EMQHOST unexpected reply from host")

# Argument kinds: the test of a parsed value and the words of EMQARG.
POSITIVE = (lambda n: n >= 1, "a positive integer")
NON_NEGATIVE = (lambda n: n >= 0, "a non-negative integer")
ANY_INT = (lambda n: True, "an integer")


class Refused(Exception):
    """A verb's error reply: nothing is written."""

    def __init__(self, reply: Reply | LaneSweepRefusal) -> None:
        self.reply = reply


def check_args(*specs: tuple[str, str, tuple[Any, str]]) -> list[int]:
    """Check 5: each integer argument in order; EMQARG names the first that fails."""
    values = []
    for name, word, (accept, what) in specs:
        value = strict_int(word)
        if value is None or not accept(value):
            raise Refused(err(f"EMQARG {name} must be {what}"))
        values.append(value)
    return values


def check_kind(job: str) -> None:
    if not job.startswith("JOB"):
        raise Refused(KIND)


@dataclass
class QueueModel:
    """One queue as the spec describes it: rows and meta as ordered dicts (the order HGETALL
    shows: a new field is appended, a rewritten one keeps its place), each set as a dict
    member -> integer score."""

    now: int = NOW
    rows: dict[str, dict[str, bytes]] = field(default_factory=dict)
    meta: dict[str, bytes] = field(default_factory=dict)
    sets: dict[str, dict[str, int]] = field(default_factory=lambda: {name: {} for name in SETS})

    # -- reading ----------------------------------------------------------------------------

    def ordered(self, name: str) -> list[tuple[int, str]]:
        return sorted((score, member) for member, score in self.sets[name].items())

    def due(self, name: str, count: int) -> list[str]:
        """ZRANGE key -inf now BYSCORE LIMIT 0 count."""
        return [m for score, m in self.ordered(name) if score <= self.now][:count]

    @staticmethod
    def int_field(h: dict[str, bytes] | None, name: str, default: int | None = 0) -> int | None:
        raw = None if h is None else h.get(name)
        if raw is None:
            return default
        value = strict_int(raw.decode("latin-1"))
        if value is None:
            raise Refused(HOST)
        return value

    def max_attempts(self, row: dict[str, bytes]) -> int:
        own = self.int_field(row, "max_attempts", None)
        queue = self.int_field(self.meta, "max_attempts", 3)
        return own if own is not None else queue

    def lease_checks(self, job: str, fence: int, verb: str) -> dict[str, bytes]:
        """EXTEND/COMPLETE/FAIL/RELEASE: row, lane, state, fence, in that order."""
        row = self.rows.get(job)
        if row is None:
            raise Refused(NOT_ACTIVE)
        if "group" in row:
            raise Refused(err(f"EMQLANE lane row {job} is {verb} by the lane scripts"))
        if row.get("state") != b"active" or job not in self.sets["active"]:
            raise Refused(NOT_ACTIVE)
        held = row.get("fence")
        if held is None or strict_int(held.decode("latin-1")) != fence:
            raise Refused(STALE)
        return row

    # -- writing (the built-ins the verbs are made of) -----------------------------------------

    def hincrby(self, h: dict[str, bytes], name: str, by: int = 1) -> int:
        value = (self.int_field(h, name) or 0) + by
        h[name] = b"%d" % value
        return value

    def zadd(self, name: str, member: str, score: int) -> None:
        self.sets[name][member] = score

    def zrem(self, name: str, member: str) -> None:
        self.sets[name].pop(member, None)

    # -- the verbs ------------------------------------------------------------------------------

    def enqueue(self, job: str, payload: bytes, delay_w: str, priority_w: str) -> Reply:
        check_kind(job)
        delay, priority = check_args(("delay_ms", delay_w, NON_NEGATIVE), ("priority", priority_w, ANY_INT))
        if job in self.rows:
            return integer(0)
        state = b"pending" if delay == 0 else b"scheduled"
        self.rows[job] = {"state": state, "attempts": b"0", "payload": payload, "priority": b"%d" % priority}
        if delay == 0:
            self.zadd("pending", job, priority)
        else:
            self.zadd("schedule", job, self.now + delay)
        return integer(1)

    def claim(self, lease_w: str) -> Reply:
        (lease,) = check_args(("lease_ms", lease_w, POSITIVE))
        if "paused" in self.meta or not self.sets["pending"]:
            return ("*", [])
        _, job = self.ordered("pending")[0]
        row = self.rows.get(job)
        if row is None:
            self.zrem("pending", job)
            return ("*", [])
        self.int_field(self.meta, "fence")
        self.int_field(row, "attempts")
        self.zrem("pending", job)
        fence = self.hincrby(self.meta, "fence")
        attempts = self.hincrby(row, "attempts")
        row["state"] = b"active"
        row["fence"] = b"%d" % fence
        self.zadd("active", job, self.now + lease)
        payload = row.get("payload")
        return ("*", [bulk(job.encode()), ("$", payload), integer(attempts), integer(fence)])

    def extend(self, job: str, fence_w: str, lease_w: str) -> Reply:
        check_kind(job)
        fence, lease = check_args(("fence", fence_w, POSITIVE), ("lease_ms", lease_w, POSITIVE))
        self.lease_checks(job, fence, "extended")
        self.zadd("active", job, self.now + lease)
        return integer(self.now + lease)

    def complete(self, job: str, fence_w: str) -> Reply:
        check_kind(job)
        (fence,) = check_args(("fence", fence_w, POSITIVE))
        self.lease_checks(job, fence, "completed")
        self.int_field(self.meta, "completed")
        self.zrem("active", job)
        del self.rows[job]
        self.hincrby(self.meta, "completed")
        return integer(1)

    def fail(self, job: str, fence_w: str, backoff_w: str, reason: bytes) -> Reply:
        check_kind(job)
        fence, backoff = check_args(("fence", fence_w, POSITIVE), ("backoff_ms", backoff_w, NON_NEGATIVE))
        row = self.lease_checks(job, fence, "failed")
        attempts = self.int_field(row, "attempts") or 0
        retry = attempts < self.max_attempts(row)
        if not retry:
            self.int_field(self.meta, "dead")
        self.zrem("active", job)
        row["state"] = b"scheduled" if retry else b"dead"
        row["error"] = reason
        row.pop("fence", None)
        if retry:
            self.zadd("schedule", job, self.now + backoff)
            return ("+", b"scheduled")
        self.zadd("dead", job, self.now)
        self.hincrby(self.meta, "dead")
        return ("+", b"dead")

    def release(self, job: str, fence_w: str) -> Reply:
        check_kind(job)
        (fence,) = check_args(("fence", fence_w, POSITIVE))
        row = self.lease_checks(job, fence, "released")
        row["restart"] = b"1"
        return integer(1)

    def promote(self, batch_w: str) -> Reply:
        (batch,) = check_args(("batch", batch_w, POSITIVE))
        due = self.due("schedule", batch)
        priorities = {}
        for job in due:
            row = self.rows.get(job)
            if row is None:
                continue
            if "group" in row:
                raise Refused(err(f"EMQLANE due lane row {job} needs the lane promotion"))
            priorities[job] = self.int_field(row, "priority")
        for job in due:
            self.zrem("schedule", job)
            if job in priorities:
                self.rows[job]["state"] = b"pending"
                self.zadd("pending", job, priorities[job])
        return integer(len(priorities))

    def stalled_check(self, limit_w: str, max_stalls_w: str) -> Reply:
        limit, max_stalls = check_args(("limit", limit_w, POSITIVE), ("max_stalls", max_stalls_w, NON_NEGATIVE))
        expired = self.due("active", limit)
        seen = {}
        for job in expired:
            row = self.rows.get(job)
            if row is None:
                continue
            if "group" in row:
                raise Refused(LaneSweepRefusal(job))
            seen[job] = (self.int_field(row, "priority"), self.int_field(row, "stalls"))
        self.int_field(self.meta, "dead")
        recovered = died = exempt = 0
        for job in expired:
            self.zrem("active", job)
            if job not in seen:
                continue
            row, (priority, stalls) = self.rows[job], seen[job]
            if "restart" in row:
                row.pop("restart")
                row.pop("fence", None)
                row["state"] = b"pending"
                self.zadd("pending", job, priority)
                exempt += 1
                continue
            stalls = self.hincrby(row, "stalls")
            if stalls > max_stalls:
                row["state"] = b"dead"
                row["error"] = b"stalled"
                row.pop("fence", None)
                self.zadd("dead", job, self.now)
                self.hincrby(self.meta, "dead")
                died += 1
            else:
                row["state"] = b"pending"
                row.pop("fence", None)
                self.zadd("pending", job, priority)
                recovered += 1
        return ("*", [integer(recovered), integer(died), integer(exempt)])

    def reprocess(self, job: str) -> Reply:
        check_kind(job)
        row = self.rows.get(job)
        if row is None:
            raise Refused(NOT_DEAD)
        if "group" in row:
            raise Refused(err(f"EMQLANE lane row {job} is reprocessed by the lane scripts"))
        if row.get("state") != b"dead" or job not in self.sets["dead"]:
            raise Refused(NOT_DEAD)
        priority = self.int_field(row, "priority")
        row["attempts"] = b"0"
        row["stalls"] = b"0"
        row["state"] = b"pending"
        row.pop("error", None)
        self.zrem("dead", job)
        self.zadd("pending", job, priority)
        return integer(1)

    def remove(self, job: str) -> Reply:
        check_kind(job)
        row = self.rows.get(job)
        if row is None:
            return integer(0)
        if "group" in row:
            raise Refused(err(f"EMQLANE lane row {job} is removed by the lane scripts"))
        for name in SETS:
            self.zrem(name, job)
        del self.rows[job]
        return integer(1)

    def pause(self) -> Reply:
        self.meta["paused"] = b"1"
        return ("+", b"OK")

    def resume(self) -> Reply:
        self.meta.pop("paused", None)
        return ("+", b"OK")

    def stats(self) -> list[tuple[bytes, int]]:
        completed = self.int_field(self.meta, "completed")
        return [(b"pending", len(self.sets["pending"])), (b"scheduled", len(self.sets["schedule"])),
                (b"active", len(self.sets["active"])), (b"dead", len(self.sets["dead"])),
                (b"paused", int("paused" in self.meta)), (b"completed", completed or 0)]

    # -- the keyspace as the server should hold it -----------------------------------------------

    def keyspace(self) -> dict[bytes, tuple[str, list[tuple[bytes, bytes]]]]:
        """key -> (type, content); empty containers do not exist."""
        out: dict[bytes, tuple[str, list[tuple[bytes, bytes]]]] = {}
        for job, row in self.rows.items():
            if row:
                out[(PREFIX + job).encode()] = ("hash", [(k.encode(), v) for k, v in row.items()])
        if self.meta:
            out[META.encode()] = ("hash", [(k.encode(), v) for k, v in self.meta.items()])
        for name, key in SETS.items():
            if self.sets[name]:
                out[key.encode()] = ("zset", [(m.encode(), b"%d" % s) for s, m in self.ordered(name)])
        return out


class LaneSweepRefusal:
    """The counted sweep's refusal of an expired lane row. The spec says only "EMQLANE, as
    PROMOTE"; the text past the id is not fixed, so the id and the code are what is judged."""

    def __init__(self, job: str) -> None:
        self.job = job

    def matches(self, reply: Reply) -> bool:
        kind, text = reply
        return kind == "-" and text.startswith(b"EMQLANE ") and f" {self.job} ".encode() in text

    def __repr__(self) -> str:
        return f"<EMQLANE error naming {self.job}>"


# --- the wires: verbs, or their wire-4 scripts --------------------------------------------------


class VerbWire:
    """Each operation as its EMQ verb."""

    name = "verbs"

    def __init__(self, client: RawClient) -> None:
        self.client = client

    def enqueue(self, now: int, job: str, payload: bytes, delay: str, priority: str) -> Reply:
        return self.client.call("EMQ.ENQUEUE", 3, PREFIX + job, PENDING, SCHEDULE, payload, delay, priority)

    def claim(self, now: int, lease: str) -> Reply:
        return self.client.call("EMQ.CLAIM", 2, PENDING, ACTIVE, lease)

    def extend(self, now: int, job: str, fence: str, lease: str) -> Reply:
        return self.client.call("EMQ.EXTEND", 2, PREFIX + job, ACTIVE, fence, lease)

    def complete(self, now: int, job: str, fence: str) -> Reply:
        return self.client.call("EMQ.COMPLETE", 2, PREFIX + job, ACTIVE, fence)

    def fail(self, now: int, job: str, fence: str, backoff: str, reason: bytes) -> Reply:
        return self.client.call("EMQ.FAIL", 4, PREFIX + job, ACTIVE, SCHEDULE, DEAD, fence, backoff, reason)

    def release(self, now: int, job: str, fence: str) -> Reply:
        return self.client.call("EMQ.RELEASE", 2, PREFIX + job, ACTIVE, fence)

    def promote(self, now: int, batch: str) -> Reply:
        return self.client.call("EMQ.PROMOTE", 3, SCHEDULE, PENDING, PREFIX, batch)

    def stalled_check(self, now: int, limit: str, max_stalls: str) -> Reply:
        return self.client.call("EMQ.STALLED.CHECK", 4, ACTIVE, PENDING, DEAD, PREFIX, limit, max_stalls)

    def reprocess(self, now: int, job: str) -> Reply:
        return self.client.call("EMQ.REPROCESS", 3, PREFIX + job, DEAD, PENDING)

    def remove(self, now: int, job: str) -> Reply:
        return self.client.call("EMQ.REMOVE", 1, PREFIX + job)

    def pause(self, now: int) -> Reply:
        return self.client.call("EMQ.PAUSE", 1, META)

    def resume(self, now: int) -> Reply:
        return self.client.call("EMQ.RESUME", 1, META)

    def stats(self, now: int) -> Reply:
        return self.client.call("EMQ.STATS", 1, META)


class ScriptWire:
    """Each operation as its wire-4 script (EVALSHA), `now` passed as the last argument."""

    name = "scripts"
    NAMES = ("enqueue", "claim", "extend", "complete", "fail", "release", "promote",
             "sweep_stalled", "reprocess", "remove", "pause", "resume", "stats")

    def __init__(self, client: RawClient) -> None:
        self.client = client
        self.sha: dict[str, bytes] = {}
        for name in self.NAMES:
            kind, sha = client.call("SCRIPT", "LOAD", SCRIPTS[name].source)
            assert kind == "$", (name, sha)
            self.sha[name] = sha

    def run(self, name: str, keys: tuple[str, ...], *argv: Any) -> Reply:
        return self.client.call("EVALSHA", self.sha[name], len(keys), *keys, *argv)

    def enqueue(self, now: int, job: str, payload: bytes, delay: str, priority: str) -> Reply:
        return self.run("enqueue", (PREFIX + job, PENDING, SCHEDULE), payload, delay, priority, now)

    def claim(self, now: int, lease: str) -> Reply:
        return self.run("claim", (PENDING, ACTIVE, META, PREFIX), lease, now)

    def extend(self, now: int, job: str, fence: str, lease: str) -> Reply:
        return self.run("extend", (PREFIX + job, ACTIVE), fence, lease, now)

    def complete(self, now: int, job: str, fence: str) -> Reply:
        return self.run("complete", (PREFIX + job, ACTIVE, META), fence, now)

    def fail(self, now: int, job: str, fence: str, backoff: str, reason: bytes) -> Reply:
        return self.run("fail", (PREFIX + job, ACTIVE, SCHEDULE, DEAD, META), fence, backoff, reason, now)

    def release(self, now: int, job: str, fence: str) -> Reply:
        return self.run("release", (PREFIX + job, ACTIVE), fence, now)

    def promote(self, now: int, batch: str) -> Reply:
        return self.run("promote", (SCHEDULE, PENDING, PREFIX), batch, now)

    def stalled_check(self, now: int, limit: str, max_stalls: str) -> Reply:
        return self.run("sweep_stalled", (ACTIVE, PENDING, DEAD, PREFIX, META), limit, max_stalls, now)

    def reprocess(self, now: int, job: str) -> Reply:
        return self.run("reprocess", (PREFIX + job, DEAD, PENDING), now)

    def remove(self, now: int, job: str) -> Reply:
        return self.run("remove", (PREFIX + job, PENDING, SCHEDULE, ACTIVE, DEAD), now)

    def pause(self, now: int) -> Reply:
        return self.run("pause", (META,), now)

    def resume(self, now: int) -> Reply:
        return self.run("resume", (META,), now)

    def stats(self, now: int) -> Reply:
        return self.run("stats", (META, PENDING, SCHEDULE, ACTIVE, DEAD), now)


# --- the machine ---------------------------------------------------------------------------------

# Arguments: mostly valid, now and then a word the checks refuse (one draw in `odds`).


def mostly(valid: st.SearchStrategy[Any], invalid: st.SearchStrategy[Any], odds: int = 10) -> st.SearchStrategy[Any]:
    return st.integers(0, odds - 1).flatmap(lambda k: invalid if k == odds - 1 else valid)


BAD_WORDS = ("x", "1.5", "01", "+1", "", "9223372036854775808")
jobs = mostly(st.sampled_from(IDS), st.just("BAD1"), odds=15)
leases = mostly(st.integers(1, 5000).map(str), st.sampled_from(("0", "-3", *BAD_WORDS)))
delays = mostly(st.just("0") | st.integers(1, 5000).map(str), st.sampled_from(("-1", *BAD_WORDS)))
priorities = mostly(st.integers(-3, 3).map(str), st.sampled_from(BAD_WORDS))
backoffs = mostly(st.just("0") | st.integers(0, 3000).map(str), st.sampled_from(("-1", *BAD_WORDS)))
counts = mostly(st.integers(1, 4).map(str), st.sampled_from(("0", *BAD_WORDS)))
max_stalls_words = mostly(st.integers(0, 2).map(str), st.sampled_from(("-1", "x")))
# Which job a step names: an index that picks a member of a set the step cares about
# (e.g. a leased job for a settle) while there is one, else one of IDS, rarely a bad id.
picks = st.integers(0, 15)
# A fence: the row's own ("right", most often), another number (mostly stale), a bad word.
fences = mostly(st.just("right") | st.just("right") | st.integers(1, 12).map(str), st.sampled_from(("0", "x")))
payloads = st.sampled_from((b"p", b"", b"payload \x00\xff", b"{\"k\": 1}"))
reasons = st.sampled_from((b"boom", b"", b"timeout"))


@dataclass
class Target:
    """The server the machine drives and its clients, made once per test module."""

    server: Server
    clients: dict[int, RawClient]  # protocol -> client for the steps
    inspector: RawClient  # RESP2, reads the keyspace
    wires: dict[tuple[str, int], Any] = field(default_factory=dict)

    def wire(self, kind: str, protocol: int) -> Any:
        if (kind, protocol) not in self.wires:
            client = self.clients[protocol]
            self.wires[(kind, protocol)] = VerbWire(client) if kind == "verbs" else ScriptWire(client)
        return self.wires[(kind, protocol)]


TARGET: Target | None = None


class EMQMachine(RuleBasedStateMachine):
    wire_kind = "verbs"

    def __init__(self) -> None:
        super().__init__()
        assert TARGET is not None
        self.target = TARGET
        self.model = QueueModel()
        self.protocol = 2
        self.wire: Any = None

    # -- comparing ------------------------------------------------------------------------------

    def expect(self, reply: Reply, run: Any) -> None:
        """Run the model's operation; an error reply leaves the model untouched."""
        try:
            expected: Any = run()
        except Refused as refused:
            expected = refused.reply
        if isinstance(expected, LaneSweepRefusal):
            assert expected.matches(reply), (reply, expected)
            return
        assert reply == expected, (reply, expected)

    def pick(self, choice: int, favourite: str) -> str:
        """A job for a step: a member of `favourite` (a set name) for most choices while the
        set has members, else one of IDS; the last choice is an id the kind check refuses."""
        if choice == 15:
            return "BAD1"
        members = sorted(self.model.sets[favourite])
        if members and choice < 10:
            return members[choice % len(members)]
        return IDS[choice % len(IDS)]

    def fence_word(self, job: str, choice: str) -> str:
        if choice != "right":
            return choice
        row = self.model.rows.get(job)
        held = None if row is None else row.get("fence")
        return held.decode() if held else "1"

    @invariant()
    def keyspace_matches(self) -> None:
        if self.wire is None:
            return
        assert self.server_keyspace() == self.model.keyspace()

    def server_keyspace(self) -> dict[bytes, tuple[str, list[tuple[bytes, bytes]]]]:
        inspector = self.target.inspector
        kind, keys = inspector.call("KEYS", "*")
        names = sorted(name for _, name in keys)
        replies = inspector.pipeline(*(c for key in names for c in (("TYPE", key), ("PTTL", key))))
        out = {}
        reads = []
        for key, (type_reply, ttl_reply) in zip(names, zip(replies[::2], replies[1::2], strict=True), strict=True):
            assert ttl_reply == (":", -1), (key, ttl_reply)
            reads.append((key, type_reply[1].decode()))
        contents = inspector.pipeline(*(
            ("HGETALL", key) if kind == "hash" else ("ZRANGE", key, 0, -1, "WITHSCORES") if kind == "zset"
            else ("TYPE", key) for key, kind in reads))
        for (key, kind), (_, flat) in zip(reads, contents, strict=True):
            values = [v for _, v in flat] if isinstance(flat, list) else [flat]
            out[key] = (kind, list(zip(values[::2], values[1::2], strict=True)))
        return out

    # -- the steps ------------------------------------------------------------------------------
    # Hypothesis enables a random subset of the rules in each example (swarm testing), so
    # the calls that only mean something together share a rule: a worker's claim and its
    # calls on the lease, a job's whole turn, the two sweeps with the clock that makes
    # members due, the operator's writes.

    @initialize(protocol=st.sampled_from((2, 3)),
                seed=st.lists(st.tuples(st.sampled_from(IDS), st.sampled_from(("0", "0", "700"))), max_size=4),
                claims=st.integers(0, 3), max_attempts=st.integers(0, 3))
    def start(self, protocol: int, seed: list[tuple[str, str]], claims: int, max_attempts: int) -> None:
        """An empty server in the example's protocol, then a queue with a few jobs, some
        already leased, and often a low max attempts (so that failures reach dead)."""
        self.protocol = protocol
        inspector = self.target.inspector
        assert inspector.call("FLUSHALL") == ("+", b"OK")
        assert inspector.call("FAKEKEY.CLOCK", "SET", NOW)[0] != "-"
        self.wire = self.target.wire(self.wire_kind, protocol)
        self.meta_max_attempts("", max_attempts)
        for i, (job, delay) in enumerate(seed):
            self.do_enqueue(job, b"seed", delay, str(i % 3 - 1))
        for _ in range(claims):
            self.do_claim("1000")

    def do_enqueue(self, job: str, payload: bytes, delay: str, priority: str) -> None:
        reply = self.wire.enqueue(self.model.now, job, payload, delay, priority)
        self.expect(reply, lambda: self.model.enqueue(job, payload, delay, priority))

    def do_claim(self, lease: str) -> None:
        self.expect(self.wire.claim(self.model.now, lease), lambda: self.model.claim(lease))

    def on_lease(self, op: str, job: str, fence: str, lease: str, backoff: str, reason: bytes) -> None:
        """EXTEND, COMPLETE, FAIL or RELEASE of `job`, with its own fence ("right") or `fence`."""
        word = self.fence_word(job, fence)
        now = self.model.now
        if op == "extend":
            reply = self.wire.extend(now, job, word, lease)
            self.expect(reply, lambda: self.model.extend(job, word, lease))
        elif op == "complete":
            self.expect(self.wire.complete(now, job, word), lambda: self.model.complete(job, word))
        elif op == "fail":
            reply = self.wire.fail(now, job, word, backoff, reason)
            self.expect(reply, lambda: self.model.fail(job, word, backoff, reason))
        else:
            self.expect(self.wire.release(now, job, word), lambda: self.model.release(job, word))

    @rule(job=jobs, payload=payloads, delay=delays, priority=priorities)
    def enqueue(self, job: str, payload: bytes, delay: str, priority: str) -> None:
        self.do_enqueue(job, payload, delay, priority)

    @rule(op=st.sampled_from(("claim", "claim", "extend", "complete", "fail", "release")), choice=picks,
          fence=fences, lease=leases, backoff=backoffs, reason=reasons)
    def worker(self, op: str, choice: int, fence: str, lease: str, backoff: str, reason: bytes) -> None:
        """A worker's call: a claim, or a call on a lease (mostly a leased job, with its
        fence or a stale one); a worker with no lease out claims."""
        if op == "claim" or not self.model.sets["active"]:
            self.do_claim(lease)
        else:
            self.on_lease(op, self.pick(choice, "active"), fence, lease, backoff, reason)

    @rule(job=st.sampled_from(IDS), delay=st.sampled_from(("0", "0", "0", "300")), priority=st.integers(-2, 2),
          lease=st.sampled_from(("100", "1000", "5000")),
          op=st.sampled_from(("extend", "complete", "fail", "release", "expire", "release+expire")),
          fence=fences, backoff=backoffs, own_max=st.sampled_from((0, 0, 1, 2)), revive=st.booleans())
    def lifecycle(self, job: str, delay: str, priority: int, lease: str, op: str, fence: str, backoff: str,
                  own_max: int, revive: bool) -> None:
        """A job's turn in one step: admit it (with its own max attempts, unless own_max is
        0), claim the head of pending, call on the lease just taken or let it expire (the
        counted sweep runs, max_stalls 0 or 1), and when that killed the job, maybe
        reprocess it; the keyspace is compared after each call."""
        self.do_enqueue(job, b"life", delay, str(priority))
        if own_max:
            self.row_max_attempts(job, own_max)
        self.keyspace_matches()
        before = set(self.model.sets["active"])
        self.do_claim(lease)
        leased = sorted(set(self.model.sets["active"]) - before)
        if not leased:
            return
        self.keyspace_matches()
        if op.startswith("release"):
            self.on_lease("release", leased[0], fence, lease, backoff, b"life")
        if op.endswith("expire"):
            self.keyspace_matches()
            self.do_sweep(int(lease), "stalled_check", "4", str(priority % 2))
        elif op != "release":
            self.on_lease(op, leased[0], fence, lease, backoff, b"life")
        if revive and leased[0] in self.model.sets["dead"]:
            self.keyspace_matches()
            self.do_reprocess(leased[0])

    @rule(ms=st.sampled_from((0, 1, 500, 1000, 5000, 20_000)) | st.integers(0, 6000),
          op=st.sampled_from(("promote", "stalled_check", "none")), count=counts,
          max_stalls=max_stalls_words)
    def sweep(self, ms: int, op: str, count: str, max_stalls: str) -> None:
        """The clock moves on, then (mostly) a sweep runs: PROMOTE with `count` as its batch,
        or STALLED.CHECK with `count` as its limit."""
        self.do_sweep(ms, op, count, max_stalls)

    def do_sweep(self, ms: int, op: str, count: str, max_stalls: str) -> None:
        assert self.target.inspector.call("FAKEKEY.CLOCK", "ADVANCE", ms)[0] != "-"
        self.model.now += ms
        if op == "promote":
            self.expect(self.wire.promote(self.model.now, count), lambda: self.model.promote(count))
        elif op == "stalled_check":
            reply = self.wire.stalled_check(self.model.now, count, max_stalls)
            self.expect(reply, lambda: self.model.stalled_check(count, max_stalls))

    @rule(choice=picks)
    def reprocess(self, choice: int) -> None:
        self.do_reprocess(self.pick(choice, "dead"))

    def do_reprocess(self, job: str) -> None:
        self.expect(self.wire.reprocess(self.model.now, job), lambda: self.model.reprocess(job))

    @rule(choice=picks, favourite=st.sampled_from(tuple(SETS)))
    def remove(self, choice: int, favourite: str) -> None:
        job = self.pick(choice, favourite)
        reply = self.wire.remove(self.model.now, job)
        self.expect(reply, lambda: self.model.remove(job))

    @rule(op=st.sampled_from(("stats", "stats", "resume", "resume", "pause")))
    def control(self, op: str) -> None:
        """The queue's switch and counters (pausing less often than resuming, so that
        claims have work)."""
        if op == "stats":
            self.check_stats(self.wire.stats(self.model.now))
        else:
            self.expect(getattr(self.wire, op)(self.model.now), getattr(self.model, op))

    def check_stats(self, reply: Reply) -> None:
        want = [(bulk(k), integer(v)) for k, v in self.model.stats()]
        if self.protocol == 3:
            assert reply[0] == "%", reply
            got = reply[1]
        else:
            assert reply[0] == "*", reply
            got = list(zip(reply[1][::2], reply[1][1::2], strict=True))
        if self.wire.name == "scripts":  # a script's map lists its pairs in Lua's order
            got, want = sorted(got), sorted(want)
        assert got == want, (reply, want)

    # -- the outside world: built-ins an operator or another client sends ------------------------

    @rule(op=st.sampled_from(("meta_max_attempts", "row_max_attempts", "delete_row", "toggle_lane", "corrupt")),
          job=st.sampled_from(IDS), n=st.integers(0, 4))
    def operator(self, op: str, job: str, n: int) -> None:
        """Set or lift the queue's max attempts (n = 0 lifts it); set a row's own; delete a
        row behind the queue's back (its set members are then rowless); turn a row into a
        lane row (a `group` field, refused by the flat verbs) or back; write a non-integer
        into one of a row's integer fields (the verbs that read it answer EMQHOST)."""
        getattr(self, op)(job, n)

    def corrupt(self, job: str, n: int) -> None:
        row = self.model.rows.get(job)
        if row is not None:
            name = ("attempts", "priority", "stalls", "max_attempts", "fence")[n]
            self.target.inspector.call("HSET", PREFIX + job, name, "x")
            row[name] = b"x"

    def meta_max_attempts(self, job: str, n: int) -> None:
        if n == 0:
            self.raw("HDEL", META, "max_attempts")
            self.model.meta.pop("max_attempts", None)
        else:
            self.raw("HSET", META, "max_attempts", n)
            self.model.meta["max_attempts"] = b"%d" % n

    def row_max_attempts(self, job: str, n: int) -> None:
        row = self.model.rows.get(job)
        if row is not None:
            self.raw("HSET", PREFIX + job, "max_attempts", max(n, 1))
            row["max_attempts"] = b"%d" % max(n, 1)

    def delete_row(self, job: str, n: int) -> None:
        self.raw("DEL", PREFIX + job)
        self.model.rows.pop(job, None)

    def toggle_lane(self, job: str, n: int) -> None:
        row = self.model.rows.get(job)
        if row is None:
            return
        if "group" in row:
            self.raw("HDEL", PREFIX + job, "group")
            del row["group"]
        else:
            self.raw("HSET", PREFIX + job, "group", "g")
            row["group"] = b"g"

    def raw(self, *args: Any) -> None:
        kind, value = self.target.inspector.call(*args)
        assert kind == ":", (args, value)


class ScriptMachine(EMQMachine):
    wire_kind = "scripts"


@pytest.fixture(scope="module")
def model_target() -> Iterator[Target]:
    global TARGET
    with Server() as server:
        clients = {}
        for protocol in (2, 3):
            clients[protocol] = RawClient(server.host, server.port)
            clients[protocol].call("HELLO", protocol)
        inspector = RawClient(server.host, server.port)
        TARGET = Target(server, clients, inspector)
        try:
            yield TARGET
        finally:
            TARGET = None
            for client in (*clients.values(), inspector):
                client.close()


def machine_settings(share: int = 1) -> settings:
    """The loaded profile (ci quick, deep long) with longer lifecycles than the default;
    `share` divides its number of examples."""
    profile = settings()
    return settings(profile, max_examples=max(10, profile.max_examples // share), stateful_step_count=100)


def test_verbs_follow_the_model(model_target: Target) -> None:
    run_state_machine_as_test(EMQMachine, settings=machine_settings())


def test_scripts_follow_the_model(model_target: Target) -> None:
    """The scripts' twin run: a quarter of the examples (the verbs are what this file is for)."""
    run_state_machine_as_test(ScriptMachine, settings=machine_settings(share=4))
