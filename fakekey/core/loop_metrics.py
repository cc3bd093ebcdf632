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
    from fakekey.core.registry import CommandStats
    from fakekey.core.state import ServerState

SAMPLES = 16  # STATS_METRIC_SAMPLES
PERIOD_MS = 100  # the cron's run_with_period(100)


# the series, sampled together every PERIOD_MS (INFO names them through `instantaneous`)
NAMES = ("ops", "net_in", "net_out", "cycles", "duration")
_INDEX = {name: i for i, name in enumerate(NAMES)}
_FACTORS = (1000, 1000 / 1024, 1000 / 1024, 1000, 1)  # per second, KB per second, per cycle


class LoopMetrics:
    """One server's event-loop counters and instantaneous series. The series are sampled
    together, so they share one ring position; their rates are one flat list (series i's
    at [i * SAMPLES, (i + 1) * SAMPLES)): two lists, not a dozen objects per server."""

    def __init__(self) -> None:
        self.cron_ticks = 0
        self.cron_us = 0.0
        self.cron_max_us = 0.0
        self.last_sample_ms = 0
        self._counted: tuple[tuple[int, CommandStats], ...] = ()  # (index, stats) of the commands counted
        self._start_series()

    def _start_series(self) -> None:
        self.last = [0.0] * (2 * len(NAMES))  # series i's last (value, base) at 2i, 2i + 1
        self.rates = [0.0] * (SAMPLES * len(NAMES))
        self.taken = 0  # samples in the ring, up to SAMPLES
        self.oldest = 0  # the ring position replaced next once full

    def reset(self) -> None:
        """CONFIG RESETSTAT: the series start again."""
        self._start_series()

    # --- the cron's side ---

    def tick(self, state: ServerState, spent_us: float) -> None:
        """A cron tick that took `spent_us`; every PERIOD_MS, one sample of each series
        (every server of the process samples `hz` times a second: kept cheap)."""
        self.cron_ticks += 1
        self.cron_us += spent_us
        if spent_us > self.cron_max_us:
            self.cron_max_us = spent_us
        now_ms = int(time.monotonic() * 1000)
        if now_ms - self.last_sample_ms < PERIOD_MS:
            return
        self.last_sample_ms = now_ms
        net_in = net_out = 0
        for client in state.clients.values():
            net_in += client.net_in
            net_out += client.net_out
        cycles = state.commands_processed + self.cron_ticks
        values = (state.commands_processed, net_in, net_out, cycles, self.command_us(state) + int(self.cron_us))
        bases = (now_ms, now_ms, now_ms, now_ms, cycles)
        position = self.taken if self.taken < SAMPLES else self.oldest
        last, rates = self.last, self.rates
        for series in range(len(NAMES)):  # trackInstantaneousMetric: (value delta) * factor / (base delta)
            value, base = values[series], bases[series]
            delta_base = base - last[2 * series + 1]
            delta_value = max(0.0, value - last[2 * series])  # a reset counter starts again
            rates[series * SAMPLES + position] = (delta_value * _FACTORS[series] / delta_base
                                                  if delta_base > 0 else 0.0)
            last[2 * series], last[2 * series + 1] = value, base
        if self.taken < SAMPLES:
            self.taken += 1
        else:
            self.oldest = (self.oldest + 1) % SAMPLES

    def _mean(self, series: int) -> float:
        if not self.taken:
            return 0.0
        first = series * SAMPLES
        return sum(self.rates[first:first + self.taken]) / self.taken

    # --- INFO's side ---

    def cycles(self, state: ServerState) -> int:
        return state.commands_processed + self.cron_ticks

    def command_us(self, state: ServerState) -> int:
        """The time of every command counted. The cron's tick asks every PERIOD_MS, on
        every server of the process, and a server counts a few of its five hundred
        commands: the ones counted are kept, looked for again only when their number
        changed or one of them is no longer in place (CONFIG RESETSTAT)."""
        table = state.command_stats
        total = 0
        if len(table) - table.count(None) == len(self._counted):
            for index, stats in self._counted:
                if table[index] is not stats:
                    break
                total += stats.usec + stats.ns // 1000
            else:
                return total
        self._counted = tuple((index, stats) for index, stats in enumerate(table) if stats is not None)
        return sum(stats.usec + stats.ns // 1000 for _, stats in self._counted)

    def duration_sum(self, state: ServerState) -> int:
        return self.command_us(state) + int(self.cron_us)

    def info_lines(self, state: ServerState) -> list[str]:
        """INFO stats' eventloop_* and instantaneous_eventloop_* lines."""
        return [
            f"eventloop_cycles:{self.cycles(state)}",
            f"eventloop_duration_sum:{self.duration_sum(state)}",
            f"eventloop_duration_cmd_sum:{self.command_us(state)}",
            f"instantaneous_eventloop_cycles_per_sec:{int(self._mean(_INDEX['cycles']))}",
            f"instantaneous_eventloop_duration_usec:{int(self._mean(_INDEX['duration']))}",
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
        return self._mean(_INDEX[name])


def net_bytes(state: ServerState) -> tuple[int, int]:
    clients = state.clients.values()
    return sum(c.net_in for c in clients), sum(c.net_out for c in clients)
