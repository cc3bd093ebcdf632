"""EMQ.TIMER: a queue's timer in the server (spec emq.md 7.4).

While a queue's timer is armed, the server itself runs, at each due time (the head of
`schedule`, the head of `active`), what a consumer's beat would: the promotion of due rows
of both kinds (EMQ.GPROMOTE, at most `batch`) and the counted stall sweep of both kinds
(EMQ.GSWEEP, at most `limit`, with `max_stalls`). A firing runs those verbs as a command
would, through `run_command` as the timer's own client, so it reads the clock once and
writes like a verb: keyspace events, WATCH, the append-only log (a record per verb, with
the firing's time), the doorbell rule, and the clients it made ready served after it.

The settings live in meta (`timer_batch`, `timer_limit`, `timer_max_stalls`), so a
restart with persistence arms the timer again (`rearm_after_load`). The server keeps a
table of the armed queues (per server, in `state.module_state`); a row whose meta no
longer holds the settings (DEL, FLUSHALL, HDEL) is dropped when it next falls due.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from fakekey.codecs.errors import wrong_args
from fakekey.commands import info
from fakekey.core.client import Client
from fakekey.modules.emq import host
from fakekey.modules.emq.layout import NON_NEGATIVE, POSITIVE, Arg, Call, parse_args, verb
from fakekey.resp.replies import OK, ReplyError
from fakekey.types.hash import HashValue
from fakekey.types.zset import ZSet

if TYPE_CHECKING:
    from fakekey.core.keyspace import Database
    from fakekey.core.state import ServerState

FIELDS = (b"timer_batch", b"timer_limit", b"timer_max_stalls")
SETTINGS = (Arg("batch", POSITIVE), Arg("limit", POSITIVE), Arg("max_stalls", NON_NEGATIVE))
BAD_SWITCH = ReplyError("EMQARG switch must be ON or OFF")
RETRY_MS = 1000  # a firing the queue refused (WRONGTYPE, EMQHOST) is tried again this late
LANE_KEYS = (b"ring", b"gpaused", b"glimit", b"gactive", b"wake")
STATE_KEY = "emq.timers"


class QueueTimer:
    """One armed queue: where it is and what a firing may do."""

    __slots__ = ("db", "prefix", "batch", "limit", "max_stalls", "retry_at")

    def __init__(self, db: int, prefix: bytes, batch: int, limit: int, max_stalls: int) -> None:
        self.db = db
        self.prefix = prefix
        self.batch = batch
        self.limit = limit
        self.max_stalls = max_stalls
        self.retry_at = 0  # after a refused firing: not before this time

    def promote_argv(self) -> list[bytes]:
        p = self.prefix
        return [b"EMQ.GPROMOTE", b"8", p + b"schedule", p + b"pending",
                *(p + k for k in LANE_KEYS), p, b"%d" % self.batch]

    def sweep_argv(self) -> list[bytes]:
        p = self.prefix
        return [b"EMQ.GSWEEP", b"10", p + b"active", p + b"pending", p + b"dead", p + b"meta",
                *(p + k for k in LANE_KEYS), p, b"%d" % self.limit, b"%d" % self.max_stalls]


class QueueTimers:
    """The armed queues of one server: a timer source (core/timers.py)."""

    def __init__(self, state: ServerState) -> None:
        self.state = state
        self.armed: dict[tuple[int, bytes], QueueTimer] = {}
        self.firings = 0
        self.promoted = 0
        self.recovered = 0
        self.dead = 0
        self.refused = 0
        self._client: Client | None = None

    # --- arming ----------------------------------------------------------------------------

    def arm(self, timer: QueueTimer) -> None:
        self.armed[(timer.db, timer.prefix)] = timer
        self.state.timers.add(self)
        self.state.timers.rearm()

    def disarm(self, db: int, prefix: bytes) -> None:
        self.armed.pop((db, prefix), None)
        self.state.timers.rearm()

    # --- the timer source -------------------------------------------------------------------

    def next_due(self) -> int | None:
        due: int | None = None
        for timer in self.armed.values():
            at = self.due(timer)
            if at is not None and (due is None or at < due):
                due = at
        return due

    def due(self, timer: QueueTimer) -> int | None:
        """The earliest of the heads of schedule and active (None: nothing to wait for)."""
        db = self.state.dbs[timer.db]
        at: int | None = None
        for suffix in (b"schedule", b"active"):
            zs = db.data.get(timer.prefix + suffix)
            if type(zs) is ZSet and len(zs):
                head = int(zs.pairs(0, 1)[0][1])
                if at is None or head < at:
                    at = head
        if at is not None and timer.retry_at > at:
            return timer.retry_at
        return at

    def fire_due(self, now: int) -> None:
        for timer in list(self.armed.values()):
            at = self.due(timer)
            if at is not None and at <= now:
                self.fire(timer, now)

    def fire(self, timer: QueueTimer, now: int) -> None:
        """One firing: promote, then sweep, each bounded; a refusal retries later."""
        state = self.state
        db = state.dbs[timer.db]
        if not still_armed(db, timer):
            self.armed.pop((timer.db, timer.prefix), None)
            return
        client = self.client()
        client.db = db
        self.firings += 1
        promoted = self.run(client, timer.promote_argv())
        swept = self.run(client, timer.sweep_argv())
        if isinstance(promoted, int):
            self.promoted += promoted
        if isinstance(swept, list) and len(swept) == 3:
            self.recovered += int(swept[0]) + int(swept[2])
            self.dead += int(swept[1])
        if isinstance(promoted, ReplyError) or isinstance(swept, ReplyError):
            self.refused += 1
            timer.retry_at = now + RETRY_MS
        else:
            timer.retry_at = 0
        state.wakes.settle("emq.timer")  # the firing is one unit for the lost-wake detector

    def run(self, client: Client, argv: list[bytes]) -> Any:
        state = self.state
        cmd = state.lookup(argv[0])
        assert cmd is not None  # the lane verbs are loaded with the module
        state.current_client = client
        try:
            return state.run_command(client, cmd, argv)
        finally:
            state.current_client = None

    def client(self) -> Client:
        """The timer's own client (a module's timer context): every key, never blocks."""
        if self._client is None:
            client = Client(self.state)
            client.authenticated = True
            client.acl_unrestricted = True
            self._client = client
        return self._client

    def info_lines(self) -> list[str]:
        return [
            f"emq_timers_armed:{len(self.armed)}",
            f"emq_timer_firings:{self.firings}",
            f"emq_timer_jobs_promoted:{self.promoted}",
            f"emq_timer_leases_recovered:{self.recovered}",
            f"emq_timer_jobs_dead:{self.dead}",
            f"emq_timer_firings_refused:{self.refused}",
        ]


def timers_of(state: ServerState) -> QueueTimers:
    timers = state.module_state.get(STATE_KEY)
    if timers is None:
        timers = state.module_state[STATE_KEY] = QueueTimers(state)
    return timers  # type: ignore[no-any-return]


def settings_of(meta: HashValue | None) -> tuple[int, int, int] | None:
    """The timer settings meta holds (None when it holds none, or holds them spoilt)."""
    if meta is None:
        return None
    raw = [meta.get(name) for name in FIELDS]
    values: list[int] = []
    for word, arg in zip(raw, SETTINGS, strict=True):
        if word is None:
            return None
        try:
            values.append(parse_args([word], (arg,))[0])
        except ReplyError:
            return None
    return values[0], values[1], values[2]


def still_armed(db: Database, timer: QueueTimer) -> bool:
    meta = db.data.get(timer.prefix + b"meta")
    return type(meta) is HashValue and settings_of(meta) is not None


def rearm_after_load(state: ServerState) -> None:
    """After the data is loaded: arm every queue whose meta holds timer settings (one pass
    over the keys, as the load itself made)."""
    if not state.emq_enabled:
        return
    for db in state.dbs:
        for key, value in db.data.items():
            if type(value) is not HashValue or not key.endswith(b":meta") or not key.startswith(b"emq:{"):
                continue
            found = settings_of(value)
            if found is not None:
                timers_of(state).arm(QueueTimer(db.index, key[:-4], *found))


# --- the verb -------------------------------------------------------------------------------


@verb("timer", ("meta",), (Arg("switch"),), arity=-4,
      summary="Arm a queue's timer in the server (ON batch limit max_stalls: promotion and the "
      "counted sweep at each due time), or disarm it (OFF)",
      complexity="O(1)")
def timer(call: Call) -> Any:
    switch = call.args[0].upper()
    words = call.rest
    meta_key = call.keys[0]
    if switch == b"ON" and len(words) == 3:
        batch, limit, max_stalls = parse_args(words, SETTINGS)
        meta = host.read_hash(call, meta_key)
        host.hset(call, meta_key, meta, b"timer_batch", words[0], b"timer_limit", words[1],
                  b"timer_max_stalls", words[2])
        timers_of(call.c.state).arm(QueueTimer(call.db.index, call.prefix, batch, limit, max_stalls))
        return OK
    if switch == b"OFF" and not words:
        host.hdel(call, meta_key, host.read_hash(call, meta_key), *FIELDS)
        timers_of(call.c.state).disarm(call.db.index, call.prefix)
        return OK
    if switch in (b"ON", b"OFF"):
        raise wrong_args("emq.timer")
    raise BAD_SWITCH


def info_emq(state: ServerState) -> list[str] | None:
    """INFO's `emq` section (None when the module is off)."""
    if not state.emq_enabled:
        return None
    return timers_of(state).info_lines()


info.MODULE_SECTIONS.append(("emq", "emq", info_emq))
