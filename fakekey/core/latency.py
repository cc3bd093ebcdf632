"""LATENCY's monitor (Valkey's latency.c): one series of samples per event ("command",
"fast-command", "expire-cycle", ...), kept when an event took at least
latency-monitor-threshold milliseconds. A series holds one sample a second (the worst of
that second), the last 160 seconds that had one, and its all-time max, sum and count.

Independent of the server: the caller passes the time (unix seconds) and the settings the
doctor's report reads."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from fakekey.core.commandlog import SETTINGS, SLOW

if TYPE_CHECKING:
    from fakekey.config.settings import Config

SERIES_LEN = 160  # LATENCY_TS_LEN: samples kept per event
GRAPH_COLUMNS = 80
GRAPH_ROWS = 4
OFF = (1 << 62) - 1  # no duration reaches it; the largest int compiled code keeps unboxed


def threshold_ns(threshold_ms: int) -> int:
    """latency-monitor-threshold as the ns a command must take to be sampled."""
    return threshold_ms * 1_000_000 if threshold_ms > 0 else OFF


@dataclass(slots=True)
class Series:
    """One event's samples, oldest first: [unix seconds, ms] (one per second)."""

    samples: list[list[int]] = field(default_factory=list)
    max: int = 0
    sum: int = 0
    count: int = 0

    def add(self, now_s: int, ms: int) -> None:
        self.max = max(self.max, ms)
        self.sum += ms
        self.count += 1
        if self.samples and self.samples[-1][0] == now_s:  # the same second: keep its worst
            self.samples[-1][1] = max(self.samples[-1][1], ms)
            return
        self.samples.append([now_s, ms])
        if len(self.samples) > SERIES_LEN:
            del self.samples[0]


class LatencyMonitor:
    def __init__(self) -> None:
        self.events: dict[str, Series] = {}

    def add(self, event: str, ms: int, now_s: int) -> None:
        series = self.events.get(event)
        if series is None:
            series = self.events[event] = Series()
        series.add(now_s, ms)

    def reset(self, events: list[bytes]) -> int:
        """Forget the named events (case-insensitively), or all; how many were forgotten."""
        if not events:
            count = len(self.events)
            self.events.clear()
            return count
        count = 0
        for wanted in events:
            name = wanted.decode("utf-8", "replace").lower()
            for event in [e for e in self.events if e.lower() == name]:
                del self.events[event]
                count += 1
        return count

    def history(self, event: bytes) -> list[list[int]]:
        series = self.events.get(event.decode("utf-8", "surrogateescape"))
        return [list(sample) for sample in series.samples] if series is not None else []

    def latest(self) -> list[list[Any]]:
        return [[event.encode(), *series.samples[-1], series.max, series.sum, series.count]
                for event, series in self.events.items()]

    def graph(self, event: bytes, now_s: int) -> str | None:
        """LATENCY GRAPH's text, or None when the event has no samples."""
        name = event.decode("utf-8", "surrogateescape")
        series = self.events.get(name)
        if series is None:
            return None
        values = [ms for _, ms in series.samples]
        labels = [_age_label(now_s - when) for when, _ in series.samples]
        head = (f"{name} - high {max(values)} ms, low {min(values)} ms "
                f"(all time high {series.max} ms)\n" + "-" * GRAPH_COLUMNS + "\n")
        return head + sparkline(values, labels)

    def report(self, now_s: int, config: Config) -> str:
        """LATENCY DOCTOR's report."""
        threshold = config["latency-monitor-threshold"]
        if not self.events and threshold == 0:
            return MONITOR_OFF_REPORT
        advice: set[str] = set()
        lines = []
        for number, (event, series) in enumerate(self.events.items(), 1):
            lines.append(_event_line(number, event, series, now_s))
            advice |= _advice_for(event, config)
        text = "Latency spikes are observed in this Valkey instance.\n\n" if lines else ""
        text += "".join(line + "\n" for line in lines)
        if not advice:
            return text + (NOT_EASY_REPORT if lines else NO_SPIKE_REPORT)
        # advice Valkey counts but prints only under a setting (hz, appendfsync) still
        # brings the heading
        shown = [_ADVICE_TEXT[key].format(threshold=threshold * 1000)
                 for key in _ADVICE_ORDER if key in advice and _applies(key, config)]
        return text + "\nHere is some advice for you:\n\n" + "".join(shown)


def _age_label(seconds: int) -> str:
    """How long ago, as the graph labels a sample."""
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m"
    if seconds < 86400:
        return f"{seconds // 3600}h"
    return f"{seconds // 86400}d"


def _event_line(number: int, event: str, series: Series, now_s: int) -> str:
    values = [ms for _, ms in series.samples]
    count = len(values)
    average = sum(values) // count
    deviation = sum(abs(average - v) for v in values) // count
    period = max(1, now_s - min(when for when, _ in series.samples))
    return (f"{number}. {event}: {count} latency spikes (average {average}ms, mean deviation "
            f"{deviation}ms, period {period / count:.2f} sec). Worst all time event {series.max}ms.")


def _advice_for(event: str, config: Config) -> set[str]:
    """The advice keys an event calls for (Valkey's createLatencyReport)."""
    event = event.lower()
    if event == "command":
        slow_threshold, slow_len = (config[name] for name in SETTINGS[SLOW])
        found = {"slowlog_inspect", "large_objects"}
        if slow_threshold < 0 or slow_len == 0:
            found.add("slowlog_enabled")
        elif slow_threshold // 1000 > config["latency-monitor-threshold"]:
            found.add("slowlog_tuning")
        return found
    return set(_EVENT_ADVICE.get(event, ()))


def _applies(key: str, config: Config) -> bool:
    """Advice that Valkey counts but prints only under a setting."""
    if key == "hz":
        return bool(config["hz"] < 100)
    if key == "relax_fsync_policy":
        return bool(config["appendfsync"] == "always")
    return True


_EVENT_ADVICE: dict[str, tuple[str, ...]] = {
    "fast-command": ("scheduler",),
    "aof-write-pending-fsync": ("local_disk", "disk_contention", "ssd", "data_writeback"),
    "aof-write-active-child": ("no_appendfsync", "data_writeback", "ssd"),
    "aof-write-alone": ("local_disk", "data_writeback", "ssd"),
    "aof-fsync-always": ("relax_fsync_policy",),
    "aof-fstat": ("disk_contention", "local_disk"),
    "rdb-unlink-temp-file": ("disk_contention", "local_disk"),
    "aof-rewrite-diff-write": ("write_load_info", "data_writeback", "ssd", "local_disk"),
    "aof-rename": ("write_load_info", "data_writeback", "ssd", "local_disk"),
    "expire-cycle": ("hz", "large_objects"),
    "eviction-del": ("large_objects",),
    "eviction-cycle": ("mass_eviction",),
}

MONITOR_OFF_REPORT = (
    "I'm sorry, Dave, I can't do that. Latency monitoring is disabled in this Valkey "
    "instance. You may use \"CONFIG SET latency-monitor-threshold <milliseconds>.\" in "
    "order to enable it.\n"
)
NO_SPIKE_REPORT = (
    "No latency spike was observed during the lifetime of this Valkey instance, not in the "
    "slightest bit.\n"
)
NOT_EASY_REPORT = (
    "\nThere are latency events logged that are not easy to fix. Please get some help from "
    "Valkey community, providing this report in your help request.\n"
)

_ADVICE_ORDER = (
    "better_vm", "slowlog_enabled", "slowlog_tuning", "slowlog_inspect", "scheduler",
    "local_disk", "ssd", "data_writeback", "disk_contention", "no_appendfsync",
    "relax_fsync_policy", "write_load_info", "hz", "large_objects", "mass_eviction",
)
_ADVICE_TEXT = {
    "better_vm":
        "- If you are using a virtual machine, consider upgrading it with a faster one using a "
        "hypervisior that provides less latency during fork() calls. Xen is known to have poor "
        "fork() performance. Even in the context of the same VM provider, certain kinds of "
        "instances can execute fork faster than others.\n",
    "slowlog_enabled":
        "- There are latency issues with potentially slow commands you are using. Try to enable "
        "the Slow Log Valkey feature using the command 'CONFIG SET slowlog-log-slower-than "
        "{threshold}'. If the Slow log is disabled Valkey is not able to log slow commands "
        "execution for you.\n",
    "slowlog_tuning":
        "- Your current Slow Log configuration only logs events that are slower than your "
        "configured latency monitor threshold. Please use 'CONFIG SET slowlog-log-slower-than "
        "{threshold}'.\n",
    "slowlog_inspect":
        "- Check your Slow Log to understand what are the commands you are running which are too "
        "slow to execute. Please check https://valkey.io/commands/slowlog for more information.\n",
    "scheduler":
        "- The system is slow to execute Valkey code paths not containing system calls. This "
        "usually means the system does not provide Valkey CPU time to run for long periods. You "
        "should try to:\n"
        "  1) Lower the system load.\n"
        "  2) Use a computer / VM just for Valkey if you are running other software in the same "
        "system.\n"
        "  3) Check if you have a \"noisy neighbour\" problem.\n"
        "  4) Check with 'valkey-cli --intrinsic-latency 100' what is the intrinsic latency in "
        "your system.\n"
        "  5) Check if the problem is allocator-related by recompiling Valkey with MALLOC=libc, "
        "if you are using Jemalloc. However this may create fragmentation problems.\n",
    "local_disk":
        "- It is strongly advised to use local disks for persistence, especially if you are "
        "using AOF. Remote disks provided by platform-as-a-service providers are known to be "
        "slow.\n",
    "ssd":
        "- SSD disks are able to reduce fsync latency, and total time needed for snapshotting "
        "and AOF log rewriting (resulting in smaller memory usage). With extremely high write "
        "load SSD disks can be a good option. However Valkey should perform reasonably with high "
        "load using normal disks. Use this advice as a last resort.\n",
    "data_writeback":
        "- Mounting ext3/4 filesystems with data=writeback can provide a performance boost "
        "compared to data=ordered, however this mode of operation provides less guarantees, and "
        "sometimes it can happen that after a hard crash the AOF file will have a half-written "
        "command at the end and will require to be repaired before Valkey restarts.\n",
    "disk_contention":
        "- Try to lower the disk contention. This is often caused by other disk intensive "
        "processes running in the same computer (including other Valkey instances).\n",
    "no_appendfsync":
        "- Assuming from the point of view of data safety this is viable in your environment, "
        "you could try to enable the 'no-appendfsync-on-rewrite' option, so that fsync will not "
        "be performed while there is a child rewriting the AOF file or producing an RDB file "
        "(the moment where there is high disk contention).\n",
    "relax_fsync_policy":
        "- Your fsync policy is set to 'always'. It is very hard to get good performances with "
        "such a setup, if possible try to relax the fsync policy to 'onesec'.\n",
    "write_load_info":
        "- Latency during the AOF atomic rename operation or when the final difference is "
        "flushed to the AOF file at the end of the rewrite, sometimes is caused by very high "
        "write load, causing the AOF buffer to get very large. If possible try to send less "
        "commands to accomplish the same work, or use Lua scripts to group multiple operations "
        "into a single EVALSHA call.\n",
    "hz":
        "- In order to make the Valkey keys expiring process more incremental, try to set the "
        "'hz' configuration parameter to 100 using 'CONFIG SET hz 100'.\n",
    "large_objects":
        "- Deleting, expiring or evicting (because of maxmemory policy) large objects is a "
        "blocking operation. If you have very large objects that are often deleted, expired, or "
        "evicted, try to fragment those objects into multiple smaller objects.\n",
    "mass_eviction":
        "- Sudden changes to the 'maxmemory' setting via 'CONFIG SET', or allocation of large "
        "objects via sets or sorted sets intersections, STORE option of SORT, Valkey Cluster "
        "large keys migrations (RESTORE command), may create sudden memory pressure forcing the "
        "server to block trying to evict keys. \n",
}


# --- the graph: Valkey's ASCII sparklines (sparkline.c), filled, 4 rows ----------------------

_FILL = "_o#"


def sparkline(values: list[int], labels: list[str]) -> str:
    """The samples drawn in rows of at most 80 columns, each with its label below."""
    parts = []
    for start in range(0, len(values), GRAPH_COLUMNS):
        parts.append(_sparkline_range(values, labels, start, min(len(values) - start, GRAPH_COLUMNS)))
    return "\n".join(parts)


def _sparkline_range(values: list[int], labels: list[str], offset: int, width: int) -> str:
    low, high = min(values), max(values)
    span = (high - low) or 1
    steps = len(_FILL) * GRAPH_ROWS
    cells = []
    for value in values[offset:offset + width]:
        step = int(int((value - low) * steps) / span)
        cells.append(min(max(step, 0), steps - 1))
    rows = []
    for row in range(GRAPH_ROWS):
        line = []
        for step in cells:
            at = step - (GRAPH_ROWS - row - 1) * len(_FILL)
            line.append(_FILL[at] if 0 <= at < len(_FILL) else "|" if at >= len(_FILL) else " ")
        rows.append("".join(line))
    shown = labels[offset:offset + width]
    rows.append(" " * width)  # the margin above the labels
    for depth in range(max((len(label) for label in shown), default=0)):
        rows.append("".join(label[depth] if depth < len(label) else " " for label in shown))
    return "".join(row + "\n" for row in rows)
