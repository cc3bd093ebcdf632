"""Blocked clients, as Valkey serves them.

- Waiters on a key are served first come, first served.
- A key made ready by a command, a whole EXEC or a whole script is served after it ends:
  the write funnel only *signals* readiness; `serve()` runs when the outermost command
  returns (`ServerState.call`, after `run_command`; EXEC and scripts run their commands
  through `run_command` alone, so they serve nobody until the whole of them ends).
- A woken client re-runs its command against the keys as they are then (Valkey 7+): it
  may pop from another of its keys, or block again, keeping its deadline; it parks again
  at its keys' tails, as Valkey's blockForKeys does, so the waiters of one pass that block
  again keep their order behind those it did not serve.
- Serving one waiter can make another key ready (BLMOVE pushes); the same pass serves it.
- Deadlines follow the server clock: a real-clock deadline has a timer; a frozen clock
  times waiters out when it is advanced past them (`expire_timeouts`).
- A blocking command counts as one call when it completes (served, timed out or
  unblocked), in INFO commandstats, total_commands_processed and the client's tot-cmds,
  as Valkey counts it; a run that only blocks (or blocks again) counts nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import itertools
from collections import deque
from time import perf_counter_ns
from typing import TYPE_CHECKING, Any

from fakekey.core.monitor import log_command
from fakekey.resp.replies import NO_REPLY, NULL_ARRAY, ReplyError

if TYPE_CHECKING:
    from fakekey.core.client import Client
    from fakekey.core.keyspace import Database
    from fakekey.core.registry import Command
    from fakekey.core.state import ServerState

UNBLOCKED_ERROR = ReplyError("UNBLOCKED client unblocked via CLIENT UNBLOCK")


class Waiter:
    """One blocked client: what it waits on, until when, and how to answer a timeout."""

    __slots__ = ("client", "db", "keys", "deadline", "cmd", "argv", "timeout_reply", "seq",
                 "kinds", "wake_on_delete", "active", "busy_ns")

    def __init__(self, client: Client, db: Database, keys: list[bytes], deadline: int,
                 cmd: Command, argv: list[bytes], timeout_reply: Any, kinds: tuple[str, ...],
                 wake_on_delete: bool) -> None:
        self.client = client
        self.db = db
        self.keys = keys
        self.deadline = deadline  # unix ms; 0 = forever
        self.cmd = cmd
        self.argv = argv
        self.timeout_reply = timeout_reply
        self.kinds = kinds  # the value types this waiter can be served from
        self.wake_on_delete = wake_on_delete
        self.seq = 0
        self.active = True
        self.busy_ns = 0  # time spent running the command on the runs that blocked

    holds_output = False  # a blocked client's pub/sub messages go out as they come


class Blocking:
    """The registry of waiters and the queue of keys made ready."""

    def __init__(self, state: ServerState) -> None:
        self.state = state
        self.ready: list[tuple[Database, bytes]] = []
        self._ready_set: set[tuple[int, bytes]] = set()
        self._deadlines: list[tuple[int, int, Waiter]] = []
        self._seq = itertools.count(1)
        self._timer: asyncio.TimerHandle | None = None
        self._timer_at = 0
        self._count = 0
        self._serving = False
        self.reprocessing: Waiter | None = None  # the waiter whose command is re-running

    # --- blocking a client ------------------------------------------------------------

    def block(self, client: Client, keys: list[bytes], deadline: int, cmd: Command,
              argv: list[bytes], timeout_reply: Any, kinds: tuple[str, ...] = ("list",),
              wake_on_delete: bool = False) -> Any:
        """Park `client` on `keys` until served, timed out or unblocked. Returns NO_REPLY.

        A command being re-run after a wake-up that must wait again keeps its original
        deadline (and goes to its keys' tails, as any new waiter)."""
        again = self.reprocessing
        if again is not None and again.client is client:
            deadline = again.deadline
        waiter = Waiter(client, client.db, keys, deadline, cmd, argv, timeout_reply, kinds,
                        wake_on_delete)
        waiter.seq = next(self._seq)
        for key in dict.fromkeys(keys):
            queue = client.db.waiting.get(key)
            if queue is None:
                queue = client.db.waiting[key] = deque()
            queue.append(waiter)
        client.blocked = waiter
        self.state.wakes.parked(client, client.db, keys, kinds)  # an EMQ wake list arms core/wakes.py
        self._count += 1
        self._uncount_run(client, cmd)
        if deadline:
            heapq.heappush(self._deadlines, (deadline, waiter.seq, waiter))
            self._arm_timer()
        return NO_REPLY

    def _uncount_run(self, client: Client, cmd: Command) -> None:
        """The run that just blocked is not a call yet: take back what run_command counts
        after it."""
        self.state.stats_of(cmd).calls -= 1
        self.state.commands_processed -= 1
        client.total_commands -= 1

    def hold_time(self, client: Client, stats: Any, elapsed_ns: int) -> None:
        """A run that blocked: its time waits for the command's completion; a wait that is
        no Waiter counts it now."""
        waiter = client.blocked
        if isinstance(waiter, Waiter):
            waiter.busy_ns += elapsed_ns
        else:
            stats.ns += elapsed_ns

    def _count_completion(self, waiter: Waiter, elapsed_ns: int, ran: bool) -> None:
        """The blocking command completed: one call, with the time its runs took (`ran`:
        the last run already counted its call and its own time in run_command)."""
        cmd = waiter.cmd
        state = self.state
        if ran:
            state.stats_of(cmd).ns += waiter.busy_ns
        else:  # the runs that blocked, and the time answering the end
            stats = state.stats_of(cmd)
            stats.calls += 1
            state.commands_processed += 1
            stats.ns += waiter.busy_ns + elapsed_ns
            if waiter.busy_ns + elapsed_ns >= state.slow_ns:  # the slow log, at completion
                log_command(state, waiter.client, waiter.argv, (waiter.busy_ns + elapsed_ns) // 1000)
            waiter.client.total_commands += 1

    def wait_or_deny(self, client: Client, keys: list[bytes], deadline: int, argv: list[bytes],
                     denied_reply: Any, kinds: tuple[str, ...]) -> Any:
        """A blocking command found nothing to serve: park the client (a timeout answers a
        null array), or inside EXEC or a script answer `denied_reply` at once."""
        if self.state.deny_blocking:
            return denied_reply
        cmd = client.cmd
        assert cmd is not None  # the command running now
        return self.block(client, keys, deadline, cmd, argv, NULL_ARRAY, kinds)

    def _detach(self, waiter: Any) -> None:  # any `blocked` marker: a Waiter, a StreamedReply...
        """Remove a waiter from every key queue it is on."""
        if not waiter.active:
            return
        waiter.active = False
        self._count -= 1
        waiting = waiter.db.waiting
        for key in dict.fromkeys(waiter.keys):
            queue = waiting.get(key)
            if queue is None:
                continue
            with contextlib.suppress(ValueError):
                queue.remove(waiter)
            if not queue:
                del waiting[key]
        if waiter.client.blocked is waiter:
            waiter.client.blocked = None

    # --- readiness -----------------------------------------------------------------------

    def signal(self, db: Database, key: bytes) -> None:
        """A key that clients wait on received data: serve them after the command."""
        marker = (id(db), key)
        if marker not in self._ready_set:
            self._ready_set.add(marker)
            self.ready.append((db, key))

    def signal_deleted(self, db: Database, key: bytes) -> None:
        """A waited-on key was deleted: only waiters that care (XREADGROUP) are woken."""
        queue = db.waiting.get(key)
        if queue and any(w.wake_on_delete for w in queue):
            self.signal(db, key)

    def serve(self) -> None:
        """Serve the waiters of every ready key, in signal order, FIFO per key."""
        if self._serving or self.state.busy_script is not None:  # after the busy script
            return
        self._serving = True
        try:
            state = self.state
            while self.ready:
                db, key = self.ready.pop(0)
                self._ready_set.discard((id(db), key))
                # each key under a fresh clock snapshot, as Valkey's enterExecutionUnit: a
                # key that expired during the command that readied it (DEBUG SLEEP in
                # EXEC) is not served
                state.now = state.clock.now_ms()
                self._serve_key(db, key)
        finally:
            self._serving = False

    def _serve_key(self, db: Database, key: bytes) -> None:
        queue = db.waiting.get(key)
        if not queue:
            return
        for waiter in list(queue):
            if not waiter.active:
                continue
            value = db.data.get(key)
            if value is None and not waiter.wake_on_delete:
                continue  # a later waiter (XREADGROUP) may still want the deletion
            if value is not None and self._type_of(value) not in waiter.kinds and not waiter.wake_on_delete:
                continue
            self._rerun(waiter)

    @staticmethod
    def _type_of(value: Any) -> str:
        return "string" if isinstance(value, bytes | bytearray | int) else value.TYPE_NAME

    def _rerun(self, waiter: Waiter) -> None:
        """Wake a waiter: re-run its command; answer it unless it blocked again."""
        client = waiter.client
        self._detach(waiter)
        self.reprocessing = waiter
        prev_db = client.db
        client.db = waiter.db
        started = perf_counter_ns()
        try:
            reply = self.state.run_command(client, waiter.cmd, waiter.argv)
        finally:
            self.reprocessing = None
            if client.db is waiter.db:
                client.db = prev_db
        elapsed = perf_counter_ns() - started
        if client.blocked is None:
            self._count_completion(waiter, elapsed, ran=True)
            self._answer(client, reply)
        else:  # blocked again: the new wait carries the time spent so far
            again = client.blocked
            if isinstance(again, Waiter):
                again.busy_ns += waiter.busy_ns  # run_command gave it this run's time

    def _answer(self, client: Client, reply: Any) -> None:
        """Send a woken client its reply, then run what it pipelined meanwhile."""
        client.send(reply)
        connection = client.connection
        if connection is not None:
            self.state.running_loop().call_soon(connection.resume)

    # --- ending a wait otherwise -------------------------------------------------------

    def unblock(self, client: Client, reply: Any) -> bool:
        """CLIENT UNBLOCK: end the wait with `reply` (the timeout reply or an error)."""
        waiter = client.blocked
        if not isinstance(waiter, Waiter):  # CLIENT UNBLOCK ends active waits: Waiters
            return False
        self._detach(waiter)
        if reply is None:
            self._time_out(waiter)
            return True
        started = perf_counter_ns()
        self.state.stats_of(waiter.cmd).rejected_calls += 1
        self.state._count_error(reply)
        self._answer(client, reply)
        self._count_completion(waiter, perf_counter_ns() - started, ran=False)
        return True

    def _time_out(self, waiter: Waiter) -> None:
        """Answer a detached waiter its timeout reply; the command completes."""
        started = perf_counter_ns()
        self._answer(waiter.client, waiter.timeout_reply)
        self._count_completion(waiter, perf_counter_ns() - started, ran=False)

    def forget(self, client: Client) -> None:
        """A client went away: it no longer waits on anything."""
        if client.blocked is not None:
            self._detach(client.blocked)

    def expire_timeouts(self) -> None:
        """Time out every waiter whose deadline has passed on the server clock."""
        if self.state.busy_script is not None:  # Valkey times nobody out during a busy script
            return
        now = self.state.clock.now_ms()
        heap = self._deadlines
        while heap and heap[0][0] <= now:
            _, _, waiter = heapq.heappop(heap)
            if waiter.active:
                self._detach(waiter)
                self._time_out(waiter)
        self._arm_timer()

    def _arm_timer(self) -> None:
        """On the real clock, wake up at the earliest deadline."""
        heap = self._deadlines
        while heap and not heap[0][2].active:
            heapq.heappop(heap)
        if not heap or self.state.clock.frozen:
            return
        when = heap[0][0]
        if self._timer is not None and self._timer_at <= when:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        if self._timer is not None:
            self._timer.cancel()
        delay = max(0.0, (when - self.state.clock.now_ms()) / 1000 + 0.0005)
        self._timer_at = when
        self._timer = loop.call_later(delay, self._on_timer)

    def _on_timer(self) -> None:
        self._timer = None
        self._timer_at = 0
        self.expire_timeouts()

    def blocked_count(self) -> int:
        return self._count

    def keys_on_nokey(self) -> int:
        """Keys with a waiter that a deletion wakes (XREADGROUP): Valkey's
        total_blocking_keys_on_nokey."""
        return sum(
            any(w.wake_on_delete for w in queue)
            for db in self.state.dbs for queue in db.waiting.values()
        )

    def clock_changed(self) -> None:
        """The clock was frozen, advanced or released: re-arm timers, time out the due."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
            self._timer_at = 0
        self.expire_timeouts()
