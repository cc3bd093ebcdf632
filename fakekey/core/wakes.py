"""The lost-wake detector: fakekey's own test aid for EMQ queues (shared/spec/emq.md 7.5,
docs/emq.md "The lost-wake detector").

A *lost wake* is a claimable transition of queue `Q` (a flat job entering
`emq:{Q}:pending`, a group joining `emq:{Q}:ring`, a resume of a paused queue whose pending
set is non-empty) made while a client is parked on `emq:{Q}:wake` (a list-blocking
command: BLPOP, BRPOP, BLMPOP, BLMOVE...) by a command, transaction or script that pushes
no token onto that wake list. A *wasted wake* is a token popped from `emq:{Q}:wake` by a
connection that then leases no job of `Q` before it pops from or parks on that wake list
again.

Why it lives in the core: it needs only the EMQ key naming and the built-in value types,
and its hooks are the core's own single points (the write funnel, `Blocking.block`, the end
of `ServerState.call`); the core must not import `fakekey/modules/`, and it needs nothing
from there.

Cost: `ServerState.wake_watch` is None while the detector is idle, and the write funnel
(`Database.written`) tests only that. It is this detector ("armed") from the moment a client
parks on an EMQ wake list until the end of a command that finds no client parked on a
watched wake list and no popped token awaiting its judgement. While armed, a write to a
key outside `emq:{...}` costs one prefix comparison. Everything here belongs to one server
(`ServerState.wakes`); two servers share nothing.
"""

from __future__ import annotations

import hashlib
from collections import deque
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from fakekey.types.hash import HashValue

if TYPE_CHECKING:
    from fakekey.core.client import Client
    from fakekey.core.keyspace import Database
    from fakekey.core.state import ServerState

RECORDS_KEPT = 128  # the most recent lost wakes FAKEKEY.WAKES GET shows
LOOKS_KEPT = 4096  # popped tokens awaiting judgement, at most (the oldest are dropped)
PREFIX = b"emq:{"
WAKE_SUFFIX = b"}:wake"
SCRIPT_COMMANDS = {b"eval": "sha", b"eval_ro": "sha", b"evalsha": "sha", b"evalsha_ro": "sha",
                   b"fcall": "function", b"fcall_ro": "function"}


@dataclass(frozen=True)
class LostWake:
    """One lost wake: when (server clock, ms), on which queue, which transition, made by
    which command (for a script: `command` is `evalsha`, `eval` or `fcall`..., `script` its
    SHA1 or function name), and the id of the client parked on the wake list (the first)."""

    time: int
    queue: str
    transition: str  # "pending", "ring" or "resume"
    command: str
    script: str | None
    client: int

    def reply(self) -> dict[bytes, Any]:
        return {b"time": self.time, b"queue": self.queue.encode(),
                b"transition": self.transition.encode(), b"command": self.command.encode(),
                b"script": None if self.script is None else self.script.encode(),
                b"client": self.client}


@dataclass(frozen=True)
class WakeReport:
    """The detector's counts, and the most recent lost wakes, oldest first."""

    lost: int
    wasted: int
    records: tuple[LostWake, ...]

    def reply(self) -> dict[bytes, Any]:
        """FAKEKEY.WAKES GET's reply: a map (RESP2: a flat field/value array)."""
        return {b"lost": self.lost, b"wasted": self.wasted,
                b"records": [record.reply() for record in self.records]}

    @classmethod
    def from_reply(cls, reply: Any) -> WakeReport:
        """FAKEKEY.WAKES GET's reply as a client library returns it: RESP2 or RESP3,
        bytes or decoded strings."""
        top = _as_map(reply)
        records = []
        for item in top["records"] or []:
            fields = _as_map(item)
            script = fields["script"]
            records.append(LostWake(int(fields["time"]), _text(fields["queue"]),
                                    _text(fields["transition"]), _text(fields["command"]),
                                    None if script is None else _text(script),
                                    int(fields["client"])))
        return cls(int(top["lost"]), int(top["wasted"]), tuple(records))

    def describe(self) -> str:
        """The records, one line each, for an assertion message."""
        lines = [f"{self.lost} lost wake(s), {self.wasted} wasted"]
        for r in self.records:
            made_by = r.command if r.script is None else f"{r.command} {r.script}"
            lines.append(f"  at {r.time}: queue {r.queue!r}, transition {r.transition}, "
                         f"made by {made_by}, client {r.client} parked")
        return "\n".join(lines)


def _text(value: Any) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes | bytearray) else str(value)


def _as_map(value: Any) -> dict[str, Any]:
    if isinstance(value, dict):
        return {_text(k): v for k, v in value.items()}
    items = list(value)
    return {_text(items[i]): items[i + 1] for i in range(0, len(items) - 1, 2)}


def wake_queue(key: bytes) -> bytes | None:
    """`Q` when `key` is `emq:{Q}:wake` (a well-formed queue name), else None."""
    if not (key.startswith(PREFIX) and key.endswith(WAKE_SUFFIX)):
        return None
    name = key[5:-6]
    if not name or b"{" in name or b"}" in name:
        return None
    return name


def _size(value: Any) -> int:
    """The number of elements of a container (0 for none, or for a string: an int is a
    counter INCR left)."""
    if value is None or isinstance(value, bytes | bytearray | int):
        return 0
    return len(value)


def _is_paused(meta: Any) -> bool:
    return type(meta) is HashValue and b"paused" in meta


class QueueWatch:
    """One queue whose wake list has (or had) a client parked on it: the last seen value
    and size of each key the detector follows, and this command's findings."""

    __slots__ = ("db", "name", "prefix", "wake_key", "pending", "pending_len", "ring",
                 "ring_len", "active", "active_len", "wake", "wake_len", "meta", "paused",
                 "transition", "rang", "label", "touched")

    def __init__(self, db: Database, name: bytes) -> None:
        self.db = db
        self.name = name
        self.prefix = PREFIX + name + b"}:"
        self.wake_key = self.prefix + b"wake"
        data = db.data
        self.pending: Any = data.get(self.prefix + b"pending")
        self.pending_len = _size(self.pending)
        self.ring: Any = data.get(self.prefix + b"ring")
        self.ring_len = _size(self.ring)
        self.active: Any = data.get(self.prefix + b"active")
        self.active_len = _size(self.active)
        self.wake: Any = data.get(self.wake_key)
        self.wake_len = _size(self.wake)
        self.meta: Any = data.get(self.prefix + b"meta")
        self.paused = _is_paused(self.meta)
        self.transition: str | None = None  # the first claimable transition of this command
        self.rang = False  # a token reached the wake list in this command
        self.label: str | None = None  # the served command that made the transition
        self.touched = False  # in the detector's list of watches to settle

    def parked_client(self) -> Client | None:
        """The first client parked on the wake list with a list-blocking command."""
        queue = self.db.waiting.get(self.wake_key)
        if queue:
            for waiter in queue:
                if waiter.active and "list" in waiter.kinds:
                    return waiter.client  # type: ignore[no-any-return]
        return None


class WakeDetector:
    """One server's lost-wake detector (`ServerState.wakes`)."""

    __slots__ = ("state", "lost", "wasted", "records", "watches", "touched", "looks")

    def __init__(self, state: ServerState) -> None:
        self.state = state
        self.lost = 0
        self.wasted = 0
        self.records: deque[LostWake] = deque(maxlen=RECORDS_KEPT)
        self.watches: dict[tuple[int, bytes], QueueWatch] = {}  # (db index, queue) -> watch
        self.touched: list[QueueWatch] = []  # watches with findings in this command
        # popped tokens awaiting judgement: (who, db index, queue) -> the popper's client id;
        # who is the connection's name when it has one (CLIENT SETNAME), else its id
        self.looks: dict[tuple[Any, int, bytes], int] = {}

    # --- what users see -------------------------------------------------------------------

    def report(self) -> WakeReport:
        return WakeReport(self.lost, self.wasted, tuple(self.records))

    def reset(self) -> None:
        """FAKEKEY.WAKES RESET: counts, records and the tokens awaiting judgement."""
        self.lost = 0
        self.wasted = 0
        self.records.clear()
        self.looks.clear()

    # --- hooks ------------------------------------------------------------------------------

    def parked(self, client: Client, db: Database, keys: list[bytes], kinds: tuple[str, ...]) -> None:
        """Blocking.block: a client parks. On an EMQ wake list it arms the detector, and
        judges the token it popped from that list before, if any (no lease since: wasted)."""
        if "list" not in kinds:
            return
        for key in keys:
            name = wake_queue(key)
            if name is None:
                continue
            if self.looks.pop((_who(client), db.index, name), None) is not None:
                self.wasted += 1
            self._watch(db, name)

    def _watch(self, db: Database, name: bytes) -> QueueWatch:
        watch = self.watches.get((db.index, name))
        if watch is None:
            watch = self.watches[(db.index, name)] = QueueWatch(db, name)
        self.state.wake_watch = self
        return watch

    def written(self, db: Database, key: bytes, event: str | None) -> None:
        """The write funnel, while armed: a change to a watched queue's key."""
        if not key.startswith(PREFIX):
            return
        end = key.find(b"}:", 5)
        if end < 0:
            return
        watch = self.watches.get((db.index, key[5:end]))
        if watch is None:
            return
        suffix = key[end + 2:]
        value = db.data.get(key)
        size = _size(value)
        if suffix == b"pending":
            grew = size > (watch.pending_len if value is watch.pending else 0)
            watch.pending, watch.pending_len = value, size
            if grew and not _is_paused(db.data.get(watch.prefix + b"meta")):
                self._transition(watch, "pending")
        elif suffix == b"ring":
            grew = size > (watch.ring_len if value is watch.ring else 0)
            watch.ring, watch.ring_len = value, size
            if grew and not _is_paused(db.data.get(watch.prefix + b"meta")):
                self._transition(watch, "ring")
        elif suffix == b"wake":
            grew = size > (watch.wake_len if value is watch.wake else 0)
            watch.wake, watch.wake_len = value, size
            if grew:
                watch.rang = True
                self._touch(watch)
            elif event == "lpop" or event == "rpop":
                self._popped(watch)
        elif suffix == b"active":
            grew = size > (watch.active_len if value is watch.active else 0)
            watch.active, watch.active_len = value, size
            if grew:
                self._leased(watch)
        elif suffix == b"meta":
            # paused before: the value seen then, unless the key was replaced meanwhile
            # (deleted and written anew: not paused); emptied by this write: it was
            was_paused = watch.paused and (value is watch.meta or value is None)
            watch.meta = value
            watch.paused = _is_paused(value)
            if was_paused and not watch.paused and _size(db.data.get(watch.prefix + b"pending")):
                self._transition(watch, "resume")

    def _touch(self, watch: QueueWatch) -> None:
        if not watch.touched:
            watch.touched = True
            self.touched.append(watch)

    def _transition(self, watch: QueueWatch, kind: str) -> None:
        if watch.transition is None:
            watch.transition = kind
            waking = self.state.blocking.reprocessing  # made by a served blocked command
            if waking is not None:
                watch.label = waking.cmd.name
        self._touch(watch)

    def _writer(self) -> Client | None:
        """The client whose command writes now: a served blocked client, or the caller of
        the running command, transaction or script (None: the server itself)."""
        waking = self.state.blocking.reprocessing
        if waking is not None:
            return waking.client  # type: ignore[no-any-return]
        return self.state.current_client

    def _popped(self, watch: QueueWatch) -> None:
        """A token popped from the wake list: judged at the popper's next lease (useful),
        or its next pop from or park on this wake list (wasted)."""
        client = self._writer()
        if client is None:
            return
        look = (_who(client), watch.db.index, watch.name)
        if self.looks.pop(look, None) is not None:
            self.wasted += 1
        self.looks[look] = client.id
        if len(self.looks) > LOOKS_KEPT:
            del self.looks[next(iter(self.looks))]

    def _leased(self, watch: QueueWatch) -> None:
        """A job entered the queue's active set: a lease, by the writing client."""
        client = self._writer()
        if client is not None:
            self.looks.pop((_who(client), watch.db.index, watch.name), None)

    # --- the end of a command ---------------------------------------------------------------

    def settle_call(self, argv: list[bytes]) -> None:
        """ServerState.call, after the command, transaction or script (before serving the
        blocked clients): its lost wakes, named after it."""
        if self.touched:
            name = argv[0].lower()
            script: str | None = None
            if name in SCRIPT_COMMANDS and len(argv) > 1:
                if name == b"eval" or name == b"eval_ro":
                    script = hashlib.sha1(argv[1]).hexdigest()
                else:
                    script = _text(argv[1].lower() if SCRIPT_COMMANDS[name] == "sha" else argv[1])
            self._settle(_text(name), script)
        self._prune()

    def settle(self, label: str) -> None:
        """The end of writes the server made by itself (a timer's firing, labelled e.g.
        `emq.timer`): call it after them, before serving the blocked clients."""
        if self.touched:
            self._settle(label, None)
        self._prune()

    def _settle(self, command: str, script: str | None) -> None:
        now = self.state.clock.now_ms()
        for watch in self.touched:
            if watch.transition is not None and not watch.rang:
                client = watch.parked_client()
                if client is not None:
                    self.lost += 1
                    by_label = watch.label is not None
                    self.records.append(LostWake(
                        now, _text(watch.name), watch.transition,
                        watch.label if watch.label is not None else command,
                        None if by_label else script, client.id))
            watch.transition = None
            watch.rang = False
            watch.label = None
            watch.touched = False
        self.touched.clear()

    def _prune(self) -> None:
        """Forget the queues nobody parks on and no popped token awaits; disarm when none
        is left."""
        looks = self.looks
        if looks:
            clients = self.state.clients
            for look in [look for look, owner in looks.items() if owner not in clients]:
                del looks[look]  # the popper is gone: never judged
        awaited = {(look[1], look[2]) for look in looks}
        for place in [place for place, watch in self.watches.items()
                      if place not in awaited and watch.parked_client() is None]:
            del self.watches[place]
        if not self.watches and not self.touched:
            self.state.wake_watch = None


def _who(client: Client) -> Any:
    """A connection, as the wasted-wake judgement pairs a pop with a lease: its name when
    it has one (so a consumer that parks on a connection of its own and claims on another
    can name both alike), else its id."""
    return client.name or client.id
