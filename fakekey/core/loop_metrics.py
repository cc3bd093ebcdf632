"""INFO stats' event-loop figures and instantaneous metrics, as Valkey keeps them.

Valkey counts each turn of its event loop (eventloop_cycles) and the time it took
(eventloop_duration_sum, of which commands: eventloop_duration_cmd_sum), and every 100 ms
its cron samples counters (server.c trackInstantaneousMetric): an instantaneous figure is
the mean of the last 16 samples. fakekey's loop is asyncio's, so a turn here is a command
run or a cron tick; the cron's tick (ServerState.active_expire_cycle) takes the samples.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from fakekey.core.state import ServerState

SAMPLES = 16  # STATS_METRIC_SAMPLES
PERIOD_MS = 100  # the cron's run_with_period(100)


class Series:
    """One metric: the counter at the last sample and the last SAMPLES rates."""

    __slots__ = ("last_value", "last_base", "rates", "oldest")

    def __init__(self) -> None:
        self.last_value = 0.0
        self.last_base = 0.0
        self.rates: list[float] = []  # up to SAMPLES, then a ring: `oldest` is replaced next
        self.oldest = 0

    def sample(self, value: float, base: float, factor: float) -> None:
        """trackInstantaneousMetric: (value delta) * factor / (base delta)."""
        delta_base = base - self.last_base
        delta_value = max(0.0, value - self.last_value)  # a reset counter starts again
        rate = delta_value * factor / delta_base if delta_base > 0 else 0.0
        if len(self.rates) < SAMPLES:
            self.rates.append(rate)
        else:
            self.rates[self.oldest] = rate
            self.oldest = (self.oldest + 1) % SAMPLES
        self.last_value, self.last_base = value, base

    def mean(self) -> float:
        return sum(self.rates) / len(self.rates) if self.rates else 0.0


class LoopMetrics:
    """One server's event-loop counters and instantaneous series."""

    def __init__(self) -> None:
        self.cron_ticks = 0
        self.cron_us = 0.0
        self.cron_max_us = 0.0
        self.last_sample_ms = 0
        self.series = {name: Series() for name in ("ops", "net_in", "net_out", "cycles", "duration")}

    def reset(self) -> None:
        """CONFIG RESETSTAT: the series start again."""
        self.series = {name: Series() for name in self.series}

    # --- the cron's side ---

    def tick(self, state: ServerState, spent_us: float) -> None:
        """A cron tick that took `spent_us`; every PERIOD_MS, one sample of each series."""
        self.cron_ticks += 1
        self.cron_us += spent_us
        self.cron_max_us = max(self.cron_max_us, spent_us)
        now_ms = int(time.monotonic() * 1000)
        if now_ms - self.last_sample_ms < PERIOD_MS:
            return
        self.last_sample_ms = now_ms
        net_in, net_out = net_bytes(state)
        series = self.series
        series["ops"].sample(state.commands_processed, now_ms, 1000)
        series["net_in"].sample(net_in, now_ms, 1000 / 1024)
        series["net_out"].sample(net_out, now_ms, 1000 / 1024)
        series["cycles"].sample(self.cycles(state), now_ms, 1000)
        series["duration"].sample(self.duration_sum(state), self.cycles(state), 1)

    # --- INFO's side ---

    def cycles(self, state: ServerState) -> int:
        return state.commands_processed + self.cron_ticks

    def command_us(self, state: ServerState) -> int:
        # filter(None, ...) skips the commands never counted (most of them) at C speed:
        # the cron's tick asks every PERIOD_MS, on every server of the process
        return sum(stats.usec + stats.ns // 1000 for stats in filter(None, state.command_stats))

    def duration_sum(self, state: ServerState) -> int:
        return self.command_us(state) + int(self.cron_us)

    def info_lines(self, state: ServerState) -> list[str]:
        """INFO stats' eventloop_* and instantaneous_eventloop_* lines."""
        return [
            f"eventloop_cycles:{self.cycles(state)}",
            f"eventloop_duration_sum:{self.duration_sum(state)}",
            f"eventloop_duration_cmd_sum:{self.command_us(state)}",
            f"instantaneous_eventloop_cycles_per_sec:{int(self.series['cycles'].mean())}",
            f"instantaneous_eventloop_duration_usec:{int(self.series['duration'].mean())}",
        ]

    def debug_lines(self, state: ServerState) -> list[str]:
        """INFO debug: the cron's share, the longest turn (a cron tick here) and the most
        commands a turn ran (one: each command is a turn of its own here)."""
        return [
            "eventloop_duration_aof_sum:0",
            f"eventloop_duration_cron_sum:{int(self.cron_us)}",
            f"eventloop_duration_max:{int(self.cron_max_us)}",
            f"eventloop_cmd_per_cycle_max:{min(1, state.commands_processed)}",
            "io_threaded_reads_pending:0",
            "io_threaded_writes_pending:0",
        ]

    def instantaneous(self, name: str) -> float:
        return self.series[name].mean()


def net_bytes(state: ServerState) -> tuple[int, int]:
    clients = state.clients.values()
    return sum(c.net_in for c in clients), sum(c.net_out for c in clients)
