"""Active expiry, as Valkey's activeExpireCycle: keys (and hash fields) whose deadline
passed and that no command touches are deleted by the cron, a few at a time, within a
time budget, so that a keyspace of any size never holds the event loop for long.

The cron runs a slow cycle each tick (25% of a tick at the default active-expire-effort);
when it ran out of time, or the keys it looked at were mostly expired, fast cycles (1 ms
each, at most every 2 ms) follow between the loop's other work until the backlog is
gone."""

from __future__ import annotations

import time
from collections.abc import Callable, Collection
from typing import TYPE_CHECKING, Final

from fakekey.core.field_expiry import expire_fields_some

if TYPE_CHECKING:
    from fakekey.core.keyspace import Database
    from fakekey.core.state import ServerState

_monotonic_ns: Final = time.monotonic_ns
Step = Callable[["Database", int, int], "tuple[int, int]"]  # (db, now, count) -> (looked, deleted)

KEYS_PER_LOOP = 20  # ACTIVE_EXPIRE_CYCLE_KEYS_PER_LOOP
FAST_DURATION_US = 1000  # ACTIVE_EXPIRE_CYCLE_FAST_DURATION
SLOW_TIME_PERC = 25  # ACTIVE_EXPIRE_CYCLE_SLOW_TIME_PERC
ACCEPTABLE_STALE = 10  # ACTIVE_EXPIRE_CYCLE_ACCEPTABLE_STALE
DBS_PER_CALL = 16  # CRON_DBS_PER_CALL
TIME_CHECK_EVERY = 16  # steps between two looks at the clock


class Effort:
    """The cycle's parameters at one active-expire-effort (1..10), as Valkey derives them."""

    __slots__ = ("keys_per_loop", "fast_duration_ns", "slow_time_perc", "acceptable_stale")

    def __init__(self, effort: int) -> None:
        extra = effort - 1
        self.keys_per_loop = KEYS_PER_LOOP + KEYS_PER_LOOP // 4 * extra
        self.fast_duration_ns = (FAST_DURATION_US + FAST_DURATION_US // 4 * extra) * 1000
        self.slow_time_perc = SLOW_TIME_PERC + 2 * extra
        self.acceptable_stale = ACCEPTABLE_STALE - extra


class ActiveExpiry:
    """One server's active expiry and the statistics INFO shows of it."""

    __slots__ = (
        "state", "next_db", "timed_out", "last_fast_ns", "stale_perc", "fields_stale_perc",
        "time_cap_reached", "used_ns",
    )

    def __init__(self, state: ServerState) -> None:
        self.state = state
        self.next_db = 0  # the databases are visited in turn across cycles
        self.timed_out = False  # the last cycle stopped on its time budget
        self.last_fast_ns = 0
        self.stale_perc = 0.0  # INFO expired_stale_perc: a moving average, as Valkey's
        self.fields_stale_perc = 0.0  # ... expired_keys_with_volatile_items_stale_perc
        self.time_cap_reached = 0  # INFO expired_time_cap_reached_count
        self.used_ns = 0  # INFO expire_cycle_cpu_milliseconds

    def reset_stats(self) -> None:
        """CONFIG RESETSTAT."""
        self.stale_perc = self.fields_stale_perc = 0.0
        self.time_cap_reached = self.used_ns = 0

    def wants_fast_cycle(self) -> bool:
        """A backlog is likely: the last cycle ran out of time or found mostly expired keys."""
        acceptable = Effort(self.state.config["active-expire-effort"]).acceptable_stale
        # Valkey compares its stale fraction (0..1) with a percentage: in effect, only a
        # cycle that ran out of time calls for fast ones
        return self.timed_out or self.stale_perc > acceptable or self.fields_stale_perc > acceptable

    def cycle(self, fast: bool) -> None:
        """Delete expired keys and fields from the databases in turn until the budget is
        spent or every database looked mostly clean."""
        state = self.state
        effort = Effort(state.config["active-expire-effort"])
        started = _monotonic_ns()
        if fast:
            if not self.wants_fast_cycle() or started < self.last_fast_ns + 2 * effort.fast_duration_ns:
                return
            self.last_fast_ns = started
            budget = effort.fast_duration_ns
        else:
            budget = effort.slow_time_perc * 10_000_000 // state.config["hz"]
        deadline = started + budget
        now = state.tick()
        dbs = state.dbs.slots  # None for a database never made (core/keyspace.py Databases)
        count = len(dbs)
        visits = count if self.timed_out else min(DBS_PER_CALL, count)
        self.timed_out = False
        sampled = expired = fields_sampled = fields_expired = 0
        for _ in range(visits):
            db = dbs[self.next_db % count]
            self.next_db += 1
            if db is None or not (db.expires or db.field_ttl_keys):
                continue  # nothing to sample (most databases of an idle server): no steps
            looked, gone = self._expire_keys(db, now, effort, deadline)
            sampled += looked
            expired += gone
            if not self.timed_out:
                looked, gone = self._expire_fields(db, now, effort, deadline)
                fields_sampled += looked
                fields_expired += gone
            if self.timed_out:
                self.time_cap_reached += 1
                break
        elapsed = _monotonic_ns() - started
        self.used_ns += elapsed
        self.stale_perc = moving_stale_perc(self.stale_perc, sampled, expired)
        self.fields_stale_perc = moving_stale_perc(self.fields_stale_perc, fields_sampled, fields_expired)
        state.latency_sample("expire-cycle", elapsed // 1_000_000)

    def _expire_keys(self, db: Database, now: int, effort: Effort, deadline: int) -> tuple[int, int]:
        """Steps of a few keys each while the keys met are mostly expired."""
        return self._steps(db, db.expires, expire_keys_some, now, effort, deadline)

    def _expire_fields(self, db: Database, now: int, effort: Effort, deadline: int) -> tuple[int, int]:
        """The same for the hashes with field TTLs: a few hashes a step."""
        return self._steps(db, db.field_ttl_keys, expire_fields_some, now, effort, deadline)

    def _steps(self, db: Database, pending: Collection[bytes], step: Step, now: int,
               effort: Effort, deadline: int) -> tuple[int, int]:
        """Run `step` over a few of `pending` at a time until most of those met were not
        due, or the deadline passed (looked at every few steps). (looked at, deleted)"""
        total_sampled = total_expired = steps = 0
        while pending:
            sampled, expired = step(db, now, effort.keys_per_loop)
            total_sampled += sampled
            total_expired += expired
            steps += 1
            if steps % TIME_CHECK_EVERY == 0 and _monotonic_ns() > deadline:
                self.timed_out = True
                break
            if expired * 100 <= sampled * effort.acceptable_stale:
                break
        return total_sampled, total_expired


def expire_keys_some(db: Database, now: int, count: int) -> tuple[int, int]:
    return db.expire_some(now, count)


def moving_stale_perc(average: float, sampled: int, expired: int) -> float:
    """Valkey's stat_expired_stale_perc: 5% this cycle's share of expired keys met."""
    current = expired / sampled if sampled else 0.0
    return current * 0.05 + average * 0.95
