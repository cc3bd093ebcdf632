"""`Queue`: a small typed client for one EMQ queue, on either wire.

- `wire=4` sends the package's Lua scripts with EVALSHA (loading them on NOSCRIPT) and
  passes the server's `TIME`, in ms, as `now`, so every transition runs on the server's
  clock as the verbs do.
- `wire=6` sends the module's verbs `EMQ.*` with the keys the spec lists, the lane
  operations included: each lane script has its twin verb (`EMQ.GENQUEUE`, `EMQ.GCLAIM`,
  ..., spec 7.1), which takes the script's KEYS and its ARGV less `now`. The forward
  verbs (the claims that wait, the queue's timer) are wire 6's alone: asked on wire 4 they
  raise `WireError`; the doorbell rule (`set_ring`) has both forms.

The client is anything with redis-py's `execute_command` (redis-py's `Redis`, RESP2 or
RESP3, `decode_responses` either way), or a cluster client (redis-py's `RedisCluster`): a
queue's keys share one slot, so the queue lives on the shard serving it
(`fakekey.emq.connections` says how each command gets there).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, cast

from fakekey.emq.connections import send_verb
from fakekey.emq.scripts import run_script

# Key positions: "row" is the job's row, "prefix" the queue's `emq:{Q}:`, any other word is
# the suffix of a queue key.
_ROW, _PREFIX = "row", "prefix"
_LANE_KEYS = ("ring", "gpaused", "glimit", "gactive", "wake", _PREFIX)

# Flat transitions: script name -> (verb, the verb's keys, the keys the script adds after
# them). A script's KEYS are the verb's keys followed by its own; its ARGV the verb's
# arguments followed by `now`.
_FLAT: dict[str, tuple[str, tuple[str, ...], tuple[str, ...]]] = {
    "enqueue": ("ENQUEUE", (_ROW, "pending", "schedule"), ()),
    "claim": ("CLAIM", ("pending", "active"), ("meta", _PREFIX)),
    "extend": ("EXTEND", (_ROW, "active"), ()),
    "complete": ("COMPLETE", (_ROW, "active"), ("meta",)),
    "fail": ("FAIL", (_ROW, "active", "schedule", "dead"), ("meta",)),
    "release": ("RELEASE", (_ROW, "active"), ()),
    "promote": ("PROMOTE", ("schedule", "pending", _PREFIX), ()),
    "sweep_stalled": ("STALLED.CHECK", ("active", "pending", "dead", _PREFIX), ("meta",)),
    "reprocess": ("REPROCESS", (_ROW, "dead", "pending"), ()),
    "remove": ("REMOVE", (_ROW,), ("pending", "schedule", "active", "dead")),
    "pause": ("PAUSE", ("meta",), ()),
    "resume": ("RESUME", ("meta",), ()),
    "stats": ("STATS", ("meta",), ("pending", "schedule", "active", "dead")),
}

# Lane scripts: name -> their KEYS (the lane block last, as each script's header says);
# the twin verb takes the same keys.
_LANES: dict[str, tuple[str, ...]] = {
    "gextend": (_ROW, "active"),
    "gcomplete": (_ROW, "active", "meta", *_LANE_KEYS),
    "gfail": (_ROW, "active", "schedule", "dead", "meta", *_LANE_KEYS),
    "gpromote": ("schedule", "pending", *_LANE_KEYS),
    "reap": ("active", "pending", *_LANE_KEYS),
    "gsweep": ("active", "pending", "dead", "meta", *_LANE_KEYS),
    "greprocess": (_ROW, "dead", *_LANE_KEYS),
    "gremove": (_ROW, "schedule", "active", "dead", *_LANE_KEYS),
    "gpause": _LANE_KEYS,
    "gresume": _LANE_KEYS,
    "glimit": _LANE_KEYS,
    "gmove": (_ROW, "active", *_LANE_KEYS),
    "grepair": ("active", *_LANE_KEYS),
}


# Lane scripts -> their twin verbs (wire 6).
_LANE_VERBS = {
    "genqueue": "GENQUEUE", "gclaim2": "GCLAIM", "gextend": "GEXTEND", "gcomplete": "GCOMPLETE",
    "gfail": "GFAIL", "gpromote": "GPROMOTE", "reap": "REAP", "gsweep": "GSWEEP",
    "greprocess": "GREPROCESS", "gremove": "GREMOVE", "gpause": "GPAUSE", "gresume": "GRESUME",
    "glimit": "GLIMIT", "gmove": "GMOVE", "grepair": "GREPAIR",
}


class WireError(Exception):
    """An operation the chosen wire cannot carry: the forward verbs (EMQ.BCLAIM,
    EMQ.GBCLAIM, EMQ.TIMER) have no script."""


@dataclass(frozen=True)
class ClaimedJob:
    """A flat job leased by `claim`: settle it with its `fence`."""

    id: str
    payload: bytes
    attempts: int
    fence: int


@dataclass(frozen=True)
class LaneJob:
    """A lane job leased by `claim_lane`: settle it with its `attempts` (the lease token)."""

    id: str
    payload: bytes
    attempts: int
    group: str


@dataclass(frozen=True)
class SweepResult:
    """What a counted sweep did: back to pending, dead-lettered, exempt (restart)."""

    recovered: int
    dead: int
    exempt: int


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _bytes(value: Any) -> bytes:
    """A payload as bytes (a client that decodes replies hands back str)."""
    if value is None or isinstance(value, bytes):
        return cast(bytes, value)  # None: a job without its payload, as the server sent it
    return str(value).encode()


def claimed_job(reply: Any) -> ClaimedJob | None:
    """A flat claim's reply as a job (None: no work)."""
    if not reply:
        return None
    job_id, payload, attempts, fence = reply
    return ClaimedJob(_text(job_id), _bytes(payload), int(attempts), int(fence))


def lane_job(reply: Any) -> LaneJob | None:
    """A lane claim's reply as a job (None: no work)."""
    if not reply:
        return None
    job_id, payload, attempts, group = reply
    return LaneJob(_text(job_id), _bytes(payload), int(attempts), _text(group))


def _as_dict(reply: Any) -> dict[str, int]:
    """A map reply (RESP3) or its flat field/value form (RESP2) as a dict."""
    if isinstance(reply, dict):
        return {_text(k): int(v) for k, v in reply.items()}
    return {_text(reply[i]): int(reply[i + 1]) for i in range(0, len(reply), 2)}


class Queue:
    """One EMQ queue `name` (keys `emq:{name}:...`) on a redis-py style client."""

    def __init__(self, client: Any, name: str, wire: int = 4) -> None:
        if wire not in (4, 6):
            raise ValueError("wire must be 4 (scripts) or 6 (verbs)")
        if not name or "{" in name or "}" in name:
            raise ValueError("a queue name is non-empty and has no '{' or '}'")
        self.client = client
        self.name = name
        self.wire = wire

    # keys

    @property
    def prefix(self) -> str:
        """The queue's key prefix, `emq:{name}:`."""
        return f"emq:{{{self.name}}}:"

    def key(self, suffix: str) -> str:
        """The queue key with this suffix (`pending`, `meta`, a job id, ...)."""
        return self.prefix + suffix

    def _keys(self, names: tuple[str, ...], job_id: str | None = None) -> list[str]:
        out = []
        for name in names:
            if name == _ROW:
                out.append(self.key(job_id or ""))
            elif name == _PREFIX:
                out.append(self.prefix)
            else:
                out.append(self.key(name))
        return out

    # transport

    def now_ms(self) -> int:
        """The server's clock (TIME) in ms since the epoch."""
        seconds, micros = self.client.execute_command("TIME")
        return int(seconds) * 1000 + int(micros) // 1000

    def _verb(self, *argv: Any) -> Any:
        """A verb of this queue (on a cluster, sent to the queue's shard)."""
        return send_verb(self.client, self.prefix, *argv)

    def _flat(self, name: str, args: list[Any], job_id: str | None = None) -> Any:
        verb, verb_keys, extra_keys = _FLAT[name]
        if self.wire == 6:
            keys = self._keys(verb_keys, job_id)
            return self._verb(f"EMQ.{verb}", len(keys), *keys, *args)
        keys = self._keys(verb_keys + extra_keys, job_id)
        return run_script(self.client, name, keys, [*args, self.now_ms()])

    def _lane(self, name: str, args: list[Any], job_id: str | None = None,
              keys: list[str] | None = None, now: bool = True) -> Any:
        """A lane transition: its script (ARGV: `args`, then `now` unless `now` is False)
        on wire 4, its twin verb (`args` alone) on wire 6."""
        if keys is None:
            keys = self._keys(_LANES[name], job_id)
        if self.wire == 6:
            return self._verb(f"EMQ.{_LANE_VERBS[name]}", len(keys), *keys, *args)
        return run_script(self.client, name, keys, [*args, self.now_ms()] if now else args)

    # flat jobs

    def enqueue(self, job_id: str, payload: bytes | str, *, delay_ms: int = 0,
                priority: int = 0, group: str | None = None) -> bool:
        """Admits a job (a lane job when `group` is given); False when it is a duplicate."""
        if group is not None:
            return self._genqueue(job_id, payload, group)
        return self._flat("enqueue", [payload, delay_ms, priority], job_id) == 1

    def claim(self, lease_ms: int) -> ClaimedJob | None:
        """Leases the head of pending, or None when there is nothing to claim."""
        return claimed_job(self._flat("claim", [lease_ms]))

    def claim_wait(self, lease_ms: int, timeout_ms: int = 0, *, via: Any = None) -> ClaimedJob | None:
        """EMQ.BCLAIM (wire 6): leases the head of pending, or waits for one up to
        `timeout_ms` (0: forever); None at the timeout. `via`: the connection to wait on
        (something with `execute_command`, or a callable taking the command's words)."""
        reply = self._wait("BCLAIM", [self.key("pending"), self.key("active")], lease_ms, timeout_ms, via)
        return claimed_job(reply)

    def claim_lane_wait(self, lease_ms: int, timeout_ms: int = 0, *, via: Any = None) -> LaneJob | None:
        """EMQ.GBCLAIM (wire 6): a ring turn that leases, or waits for a group to join the
        ring (a paused queue waits too); None at the timeout."""
        keys = [self.key("ring"), self.key("active"), self.prefix]
        return lane_job(self._wait("GBCLAIM", keys, lease_ms, timeout_ms, via))

    def _wait(self, verb: str, keys: list[str], lease_ms: int, timeout_ms: int, via: Any) -> Any:
        if self.wire != 6:
            raise WireError(f"EMQ.{verb} is a verb: the claims that wait need wire=6")
        argv = [f"EMQ.{verb}", len(keys), *keys, lease_ms, timeout_ms]
        if via is None:
            return self._verb(*argv)
        return via(*argv) if callable(via) else via.execute_command(*argv)

    def set_ring(self, rule: str) -> None:
        """The queue's doorbell rule: `lanes` (the seed's) or `all` (every claimable
        transition pushes a token): EMQ.RING on wire 6, @ring on wire 4."""
        if self.wire == 6:
            self._verb("EMQ.RING", 1, self.key("meta"), rule)
        else:
            run_script(self.client, "ring", [self.key("meta")], [rule, self.now_ms()])

    def set_timer(self, on: bool, *, batch: int = 100, limit: int = 100, max_stalls: int = 1) -> None:
        """EMQ.TIMER (wire 6): arm the queue's timer in the server (promotion and the
        counted sweep at each due time), or disarm it."""
        if self.wire != 6:
            raise WireError("EMQ.TIMER is a verb: the server's timer needs wire=6")
        meta = self.key("meta")
        if on:
            self._verb("EMQ.TIMER", 1, meta, "ON", batch, limit, max_stalls)
        else:
            self._verb("EMQ.TIMER", 1, meta, "OFF")

    def extend(self, job_id: str, fence: int, lease_ms: int) -> int:
        """Extends a lease; returns the new deadline (ms)."""
        return int(self._flat("extend", [fence, lease_ms], job_id))

    def complete(self, job_id: str, fence: int) -> None:
        """Settles success."""
        self._flat("complete", [fence], job_id)

    def fail(self, job_id: str, fence: int, reason: str, backoff_ms: int = 0) -> str:
        """Settles failure; returns `scheduled` (retried) or `dead`."""
        return _text(self._flat("fail", [fence, backoff_ms, reason], job_id))

    def release(self, job_id: str, fence: int) -> None:
        """Announces a restart: an expiry of this lease then counts no stall."""
        self._flat("release", [fence], job_id)

    def promote(self, batch: int = 100) -> int:
        """Moves due flat jobs to pending; returns how many moved."""
        return int(self._flat("promote", [batch]))

    def sweep(self, limit: int = 100, max_stalls: int = 1) -> SweepResult:
        """The counted stall sweep of flat leases."""
        recovered, dead, exempt = self._flat("sweep_stalled", [limit, max_stalls])
        return SweepResult(int(recovered), int(dead), int(exempt))

    def reprocess(self, job_id: str) -> None:
        """A dead flat job back to pending."""
        self._flat("reprocess", [], job_id)

    def remove(self, job_id: str) -> bool:
        """Removes a flat job in any state; False when there was no row."""
        return self._flat("remove", [], job_id) == 1

    def pause(self) -> None:
        """Pauses the queue: claims answer empty."""
        self._flat("pause", [])

    def resume(self) -> None:
        """Resumes the queue."""
        self._flat("resume", [])

    def stats(self) -> dict[str, int]:
        """pending, scheduled, active, dead, paused, completed."""
        return _as_dict(self._flat("stats", []))

    def is_paused(self) -> bool:
        """Whether the queue is paused (meta `paused` present)."""
        return bool(self.client.execute_command("HEXISTS", self.key("meta"), "paused"))

    def park(self, beat_seconds: float) -> bool:
        """Waits on the wake list (BLPOP) up to `beat_seconds`; True when a token came."""
        return self.client.execute_command("BLPOP", self.key("wake"), beat_seconds) is not None

    # lanes

    def _genqueue(self, job_id: str, payload: bytes | str, group: str) -> bool:
        keys = [self.key(job_id), self.key("lane:" + group), self.key("ring"), self.key("gpaused"),
                self.key("glimit"), self.key("gactive"), self.key("wake")]
        if self.wire == 6:  # the verb takes the job id from its row key
            return self._lane("genqueue", [payload, group], keys=keys) == 1
        return self._lane("genqueue", [job_id, payload, group], keys=keys, now=False) == 1

    def claim_lane(self, lease_ms: int) -> LaneJob | None:
        """One turn of the ring (the queue's pause checked first), or None."""
        if self.is_paused():
            return None
        keys = [self.key("ring"), self.key("active"), self.prefix]
        return lane_job(self._lane("gclaim2", [lease_ms], keys=keys))

    def extend_lane(self, job_id: str, attempts: int, lease_ms: int) -> int:
        """Extends a lane lease (token: the claim's attempts); returns the new deadline."""
        return int(self._lane("gextend", [attempts, lease_ms], job_id))

    def complete_lane(self, job_id: str, attempts: int) -> None:
        """Settles a lane job's success."""
        self._lane("gcomplete", [attempts], job_id)

    def fail_lane(self, job_id: str, attempts: int, reason: str, backoff_ms: int = 0) -> str:
        """Settles a lane job's failure; returns `scheduled` or `dead`."""
        return _text(self._lane("gfail", [attempts, backoff_ms, reason], job_id))

    def promote_lanes(self, batch: int = 100) -> int:
        """Moves due jobs, lane rows included, back to work; returns how many moved."""
        return int(self._lane("gpromote", [batch]))

    def reap(self, limit: int = 100, group: str | None = None) -> int:
        """The uncounted recovery of expired leases (one group's when given)."""
        if self.wire == 6 and not group:  # the verb's all-groups form takes no group
            return int(self._lane("reap", [limit]))
        return int(self._lane("reap", [limit, group or ""]))

    def sweep_lanes(self, limit: int = 100, max_stalls: int = 1) -> SweepResult:
        """The counted stall sweep, lane rows included."""
        recovered, dead, exempt = self._lane("gsweep", [limit, max_stalls])
        return SweepResult(int(recovered), int(dead), int(exempt))

    def reprocess_lane(self, job_id: str) -> None:
        """A dead lane job back to its lane."""
        self._lane("greprocess", [], job_id)

    def remove_lane(self, job_id: str) -> bool:
        """Removes a lane job in any state; False when there was no row."""
        return self._lane("gremove", [], job_id) == 1

    def pause_group(self, group: str) -> None:
        """Pauses a group: its lane leaves the ring."""
        self._lane("gpause", [group])

    def resume_group(self, group: str) -> None:
        """Resumes a group: its lane rejoins the ring when serviceable."""
        self._lane("gresume", [group])

    def limit_group(self, group: str, limit: int | None) -> None:
        """Sets a group's concurrency limit, or lifts it (None)."""
        self._lane("glimit", [group, 0 if limit is None else limit])

    def move_group(self, job_id: str, group: str) -> bool:
        """Moves a lane job to another group; False when there was no row."""
        return self._lane("gmove", [group], job_id) == 1

    def repair_group(self, group: str) -> int:
        """Recounts a group's active count from `active`; returns it."""
        return int(self._lane("grepair", [group]))
