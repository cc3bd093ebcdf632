"""MEMORY and LATENCY: memory introspection from fakekey's estimates, and the latency
monitor's event series (fakekey/core/latency.py; LATENCY HISTOGRAM counts calls without
latency buckets)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from fakekey.commands.args import SYNTAX, help_lines, parse_int
from fakekey.commands.clients import clients_memory
from fakekey.commands.info import (
    STARTUP_MEMORY,
    dataset_bytes,
    resident_bytes,
)
from fakekey.core.client import Client
from fakekey.core.registry import command, container, keys_range
from fakekey.memory.estimate import key_usage
from fakekey.resp.replies import OK, ReplyError, Verbatim

if TYPE_CHECKING:
    from fakekey.core.registry import Command

G = "server"
DIAGNOSTIC = "nondeterministic_output request_policy:all_shards response_policy:special"
LATENCY_ADMIN = "admin noscript loading stale"
LATENCY_TIPS = "nondeterministic_output request_policy:all_nodes response_policy:special"
DEFAULT_SAMPLES = 5
LITTLE_MEMORY = 5 * 1024 * 1024  # below this MEMORY DOCTOR declines to judge

# --- MEMORY ---------------------------------------------------------------------------------

container("memory", group=G, since="4.0.0", summary="Holds the memory diagnostics commands.")

MEMORY_HELP = [
    "MEMORY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "DOCTOR",
    "    Return memory problems reports.",
    "MALLOC-STATS",
    "    Return internal statistics report from the memory allocator.",
    "PURGE",
    "    Attempt to purge dirty pages for reclamation by the allocator.",
    "STATS",
    "    Return information about the memory usage of the server.",
    "USAGE <key> [SAMPLES <count>]",
    "    Return memory in bytes used by <key> and its value. Nested values are",
    "    sampled up to <count> times (default: 5, 0 means sample all).",
    "HELP",
    "    Print this help.",
]

EMPTY_REPORT = (
    "Hi Sam, this instance is empty or is using very little memory, my issues detector "
    "can't be used in these conditions. Please, leave for your mission on Earth and fill "
    "it with some data. The new Sam and I will be back to our programming as soon as I "
    "finished rebooting.\n"
)
HEALTHY_REPORT = (
    "Hi Sam, I can't find any memory issue in your instance. I can only account for what "
    "occurs on this base.\n"
)


@command("memory|help", 2, "loading stale", since="4.0.0",
         summary="Describes the MEMORY subcommands.")
def memory_help(c: Client, argv: list[bytes]) -> Any:
    return help_lines(MEMORY_HELP)


def parse_samples(argv: list[bytes]) -> int:
    """MEMORY USAGE's options: SAMPLES <count> (0: every element), checked in order."""
    samples = DEFAULT_SAMPLES
    i = 3
    while i < len(argv):
        if argv[i].lower() != b"samples" or i + 1 >= len(argv):
            raise SYNTAX
        samples = parse_int(argv[i + 1])
        if samples < 0:
            raise SYNTAX
        i += 2
    return samples or 2**63 - 1


@command("memory|usage", -3, "readonly", keys=keys_range(2, flags="RO"), since="4.0.0",
         complexity="O(N) where N is the number of samples.",
         summary="Estimates the bytes a key and its value take.")
def memory_usage(c: Client, argv: list[bytes]) -> Any:
    samples = parse_samples(argv)
    key = argv[2]
    if not c.db.exists(key):
        return None
    return key_usage(key, c.db.data[key], c.state, samples)


@command("memory|doctor", 2, "", since="4.0.0", tips=DIAGNOSTIC,
         summary="Reports memory problems, if it finds any.")
def memory_doctor(c: Client, argv: list[bytes]) -> Any:
    used = STARTUP_MEMORY + dataset_bytes(c.state)
    return Verbatim((EMPTY_REPORT if used < LITTLE_MEMORY else HEALTHY_REPORT).encode())


@command("memory|malloc-stats", 2, "loading", since="4.0.0", tips=DIAGNOSTIC,
         complexity="Depends on how much memory is allocated, could be slow",
         summary="Answers the allocator's statistics (none for this allocator).")
def memory_malloc_stats(c: Client, argv: list[bytes]) -> Any:
    return b"Stats not supported for the current allocator"


@command("memory|purge", 2, "loading", since="4.0.0",
         tips="request_policy:all_shards response_policy:all_succeeded",
         complexity="Depends on how much memory is allocated, could be slow",
         summary="Asks the allocator to give memory back (nothing to do here).")
def memory_purge(c: Client, argv: list[bytes]) -> Any:
    return OK


EMPTY_TABLE = 112  # Valkey's hashtable without buckets (a database made, no key in it)


def table_overhead(count: int) -> int:
    """A key table's own bytes: its struct and a bucket array sized to a power of two."""
    buckets = 4
    while buckets < count:
        buckets *= 2
    return 64 + 8 * buckets if count else EMPTY_TABLE


@command("memory|stats", 2, "", since="4.0.0", tips=DIAGNOSTIC,
         summary="Answers the server's memory figures, overall and per database.")
def memory_stats(c: Client, argv: list[bytes]) -> Any:
    state = c.state
    dataset = dataset_bytes(state)
    used = STARTUP_MEMORY + dataset
    peak = max(used, state.memory_peak)
    state.memory_peak = peak
    rss = resident_bytes(used)
    keys = sum(len(db.data) for db in state.dbs)
    stats: dict[bytes, Any] = {
        b"peak.allocated": peak, b"total.allocated": used, b"startup.allocated": STARTUP_MEMORY,
        b"replication.backlog": 0, b"replicas.repl.buffer": 0, b"clients.slaves": 0,
        b"clients.normal": clients_memory(list(state.clients.values())), b"cluster.links": 0, b"cluster.slot_import": 0,
        b"cluster.slot_export": 0, b"aof.buffer": 0, b"lua.caches": 0, b"functions.caches": 0,
    }
    overhead = STARTUP_MEMORY
    for db in state.dbs:  # every database made so far, as Valkey's (an empty one too)
        main, expires = table_overhead(len(db.data)), table_overhead(len(db.expires))
        overhead += main + expires
        stats[b"db.%d" % db.index] = {b"overhead.hashtable.main": main,
                                      b"overhead.hashtable.expires": expires}
    net = max(used - STARTUP_MEMORY, 1)
    stats.update({
        b"overhead.db.hashtable.lut": 0, b"overhead.db.hashtable.rehashing": 0,
        b"overhead.total": overhead, b"db.dict.rehashing.count": 0, b"keys.count": keys,
        b"keys.bytes-per-key": (used - STARTUP_MEMORY) // keys if keys else 0,
        b"dataset.bytes": used - overhead,
        b"dataset.percentage": 100.0 * max(used - overhead, 0) / net,
        b"peak.percentage": 100.0 * used / peak,
        b"allocator.allocated": used, b"allocator.active": rss, b"allocator.resident": rss,
        b"allocator.muzzy": 0, b"allocator-fragmentation.ratio": 1.0,
        b"allocator-fragmentation.bytes": 0, b"allocator-rss.ratio": 1.0,
        b"allocator-rss.bytes": 0, b"rss-overhead.ratio": 1.0, b"rss-overhead.bytes": 0,
        b"fragmentation": rss / used, b"fragmentation.bytes": rss - used,
    })
    return stats


# --- LATENCY ----------------------------------------------------------------------------------

container("latency", group=G, since="2.8.13", summary="Holds the latency diagnostics commands.")

LATENCY_HELP = [
    "LATENCY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "DOCTOR",
    "    Return a human readable latency analysis report.",
    "GRAPH <event>",
    "    Return an ASCII latency graph for the <event> class.",
    "HISTORY <event>",
    "    Return time-latency samples for the <event> class.",
    "LATEST",
    "    Return the latest latency samples for all events.",
    "RESET [<event> ...]",
    "    Reset latency data of one or more <event> classes.",
    "    (default: reset all data for all event classes)",
    "HISTOGRAM [COMMAND ...]",
    "    Return a cumulative distribution of latencies in the format of a histogram for the "
    "specified command names.",
    "    If no commands are specified then all histograms are replied.",
    "HELP",
    "    Print this help.",
]

@command("latency|help", 2, "loading stale", since="2.8.13",
         summary="Describes the LATENCY subcommands.")
def latency_help(c: Client, argv: list[bytes]) -> Any:
    return help_lines(LATENCY_HELP)


@command("latency|latest", 2, LATENCY_ADMIN, acl="dangerous", since="2.8.13", tips=LATENCY_TIPS,
         summary="Answers the latest latency sample of each event, with its all-time max, "
         "sum and count.")
def latency_latest(c: Client, argv: list[bytes]) -> Any:
    return c.state.latency.latest()


@command("latency|history", 3, LATENCY_ADMIN, acl="dangerous", since="2.8.13", tips=LATENCY_TIPS,
         summary="Answers an event's latency samples, one a second at most.")
def latency_history(c: Client, argv: list[bytes]) -> Any:
    return c.state.latency.history(argv[2])


@command("latency|reset", -2, LATENCY_ADMIN, acl="dangerous", since="2.8.13",
         tips="request_policy:all_nodes response_policy:agg_sum",
         summary="Forgets the latency samples of some or all events; answers how many.")
def latency_reset(c: Client, argv: list[bytes]) -> Any:
    return c.state.latency.reset(argv[2:])


@command("latency|graph", 3, LATENCY_ADMIN, acl="dangerous", since="2.8.13", tips=LATENCY_TIPS,
         summary="Draws an event's latency samples.")
def latency_graph(c: Client, argv: list[bytes]) -> Any:
    graph = c.state.latency.graph(argv[2], c.state.now // 1000)
    if graph is None:
        event = argv[2].decode("utf-8", "replace")
        raise ReplyError(f"ERR No samples available for event '{event}'")
    return Verbatim(graph.encode("utf-8", "surrogateescape"))


@command("latency|doctor", 2, LATENCY_ADMIN, acl="dangerous", since="2.8.13", tips=LATENCY_TIPS,
         summary="Reports on the latency samples in words.")
def latency_doctor(c: Client, argv: list[bytes]) -> Any:
    return Verbatim(c.state.latency.report(c.state.now // 1000, c.state.config).encode())


def histogram_commands(c: Client, names: list[bytes]) -> list[Any]:
    """The commands LATENCY HISTOGRAM reports on: the named ones (a container stands for
    its subcommands), or all; only those called since the last reset."""
    registry = c.state.registry
    chosen: list[Command]
    if names:
        chosen = []
        for name in names:
            cmd = registry.lookup(name.lower().split(b"|", 1)[0])
            if cmd is not None and b"|" in name:
                cmd = cmd.subcommands.get(name.lower().split(b"|", 1)[1])
            if cmd is not None:
                chosen.extend(cmd.subcommands.values() if cmd.subcommands else (cmd,))
    else:
        chosen = [sub for cmd in registry.all() for sub in (cmd, *cmd.subcommands.values())]
    return [cmd for cmd in chosen if c.state.stats_of(cmd).calls]


@command("latency|histogram", -2, LATENCY_ADMIN, acl="dangerous", since="7.0.0",
         tips=LATENCY_TIPS,
         complexity="O(N) where N is the number of commands with latency information being "
         "retrieved.",
         summary="Answers each command's calls and latency distribution (calls only: fakekey "
         "does not time commands).")
def latency_histogram(c: Client, argv: list[bytes]) -> Any:
    if not c.state.config["latency-tracking"]:
        return {}
    return {cmd.name.encode(): {b"calls": c.state.stats_of(cmd).calls, b"histogram_usec": {}}
            for cmd in histogram_commands(c, argv[2:])}
