"""EMQ.PAUSE, EMQ.RESUME, EMQ.STATS and EMQ.CAPS: a queue's switch and its counters."""

from __future__ import annotations

from typing import Any

from fakekey.modules.emq import doorbell, host
from fakekey.modules.emq.layout import TEXT, Arg, Call, verb
from fakekey.resp.replies import OK, ReplyError

BAD_RULE = ReplyError("EMQARG ring must be lanes or all")

# EMQ.CAPS: one capability per verb, in the spec's order.
CAPABILITIES = (
    b"enqueue", b"claim", b"extend", b"complete", b"fail", b"release", b"promote",
    b"stalled.check", b"reprocess", b"remove", b"pause", b"resume", b"stats", b"publish",
    b"append", b"failures.incr",
    b"genqueue", b"gclaim", b"gextend", b"gcomplete", b"gfail", b"gpromote", b"reap",
    b"gsweep", b"greprocess", b"gremove", b"gpause", b"gresume", b"glimit", b"gmove",
    b"grepair", b"bclaim", b"gbclaim", b"ring", b"timer",
)


@verb("pause", ("meta",), summary="Pause a queue: claims answer empty until it is resumed",
      complexity="O(1)")
def pause(call: Call) -> Any:
    meta_key = call.keys[0]
    host.hset(call, meta_key, host.read_hash(call, meta_key), b"paused", b"1")
    return OK


@verb("resume", ("meta",), rings=True,
      summary="Resume a paused queue; parked claimers look again; rings under `ring all` only",
      complexity="O(1)")
def resume(call: Call) -> Any:
    meta_key = call.keys[0]
    # claimers parked while paused also wait on meta: this write wakes them
    if host.hdel(call, meta_key, host.read_hash(call, meta_key), b"paused"):
        call.claimable = doorbell.pending_size(call) > 0
    return OK


@verb("ring", ("meta",), (Arg("rule", TEXT),),
      summary="Set the queue's doorbell rule: `lanes` (the seed's) or `all` (every claimable "
      "transition rings) (@ring)",
      complexity="O(1)")
def ring(call: Call) -> Any:
    (rule,) = call.args
    if rule not in doorbell.RULES:
        raise BAD_RULE
    meta_key = call.keys[0]
    host.hset(call, meta_key, host.read_hash(call, meta_key), b"ring", rule)
    return OK


def _stats_access(call: Call) -> None:
    call.may_read(*(call.key(s) for s in (b"pending", b"schedule", b"active", b"dead")))


@verb("stats", ("meta",), write=False, fast=True, access=_stats_access,
      summary="A queue's set sizes, pause flag and completed counter",
      complexity="O(1)")
def stats(call: Call) -> Any:
    meta = host.read_hash(call, call.keys[0])
    sizes = [host.read_zset(call, call.key(s)) for s in (b"pending", b"schedule", b"active", b"dead")]
    completed = host.int_field(meta, b"completed")
    pending, scheduled, active, dead = (0 if zs is None else len(zs) for zs in sizes)
    return {
        b"pending": pending,
        b"scheduled": scheduled,
        b"active": active,
        b"dead": dead,
        b"paused": int(meta is not None and b"paused" in meta),
        b"completed": completed,
    }


@verb("caps", (), write=False, fast=True,
      summary="The capabilities this server's EMQ module serves, one per verb",
      complexity="O(1)")
def caps(call: Call) -> Any:
    return list(CAPABILITIES)
