"""INFO: every section Valkey's has, built from the server's state."""

from __future__ import annotations

import os
import platform
import resource
import sys
import time
from typing import TYPE_CHECKING, Any

from fakekey._version import REDIS_VERSION
from fakekey.commands.admin import replication_address, snapshot_us
from fakekey.commands.clients import clients_memory_split
from fakekey.commands.dump import close_idle_links
from fakekey.core.client import Client
from fakekey.core.field_expiry import keys_with_volatile_items
from fakekey.core.keyspace import Database
from fakekey.core.registry import command
from fakekey.memory import estimate as memory_estimate
from fakekey.memory.eviction import eviction_exceeded_ms
from fakekey.memory.lazyfree import STAT as LAZYFREED
from fakekey.persistence.failover import failover_state
from fakekey.resp.replies import Verbatim

if TYPE_CHECKING:
    from fakekey.core.state import ServerState

G = "server"


# --- INFO ---------------------------------------------------------------------------------
# Each section is a function of the state answering its "field:value" lines, in Valkey's
# order and with the fields clients parse; figures fakekey has no notion of (forks, the
# allocator, replication offsets) read as Valkey's idle server shows them.

InfoLines = list[str]


def human_bytes(n: int) -> str:
    """Valkey's bytesToHuman: 1019.92K, 1.45M, ..."""
    if n < 1024:
        return f"{n}B"
    for unit, power in (("K", 1), ("M", 2), ("G", 3), ("T", 4), ("P", 5)):
        if n < 1024 ** (power + 1):
            return f"{n / 1024**power:.2f}{unit}"
    return f"{n}B"


def server_identity(state: ServerState) -> InfoLines:
    """INFO server's first lines: Valkey's, or a Redis's when a fakeredis user asked for
    one (`server_type="redis"`, core/version_gate.py): a Redis names no Valkey."""
    gate = state.version_gate
    if gate is not None and gate.server_type == "redis":
        return [f"redis_version:{gate.text}"]
    return [f"redis_version:{REDIS_VERSION}", "server_name:valkey",
            f"valkey_version:{state.valkey_version}", "valkey_release_stage:ga"]


def info_server(state: ServerState) -> InfoLines:
    uptime = max(0, state.now - state.start_ms) // 1000
    uname = platform.uname()
    return [
        *server_identity(state),
        f"fakekey_version:{state.version}",
        "redis_git_sha1:00000000",
        "redis_git_dirty:0",
        "redis_build_id:0",
        # extended-redis-compatibility: Redis's name for the line
        f"{'redis' if state.config['extended-redis-compatibility'] else 'server'}_mode:standalone",
        f"os:{uname.system} {uname.release} {uname.machine}",
        f"arch_bits:{64 if sys.maxsize > 2**32 else 32}",
        "monotonic_clock:POSIX clock_gettime",
        "multiplexing_api:asyncio",
        "gcc_version:0.0.0",
        f"process_id:{os.getpid()}",
        "process_supervised:no",
        f"run_id:{state.run_id}",
        f"tcp_port:{state.tcp_port}",
        f"server_time_usec:{snapshot_us(state)}",
        f"uptime_in_seconds:{uptime}",
        f"uptime_in_days:{uptime // 86400}",
        f"hz:{state.config['hz']}",
        f"configured_hz:{state.config['hz']}",
        f"clients_hz:{state.config['hz']}",
        f"lru_clock:{(state.now // 1000) & (2**24 - 1)}",
        f"executable:{sys.executable}",
        f"config_file:{getattr(state.config, 'config_file', '')}",
        "io_threads_active:0",
        "availability_zone:",
        *listener_lines(state),
    ]


def listener_lines(state: ServerState) -> InfoLines:
    """Valkey's listeners by connection type: TCP is listener0 (a `bind=` per address), the
    Unix socket listener1 (a server on its Unix socket only, port 0, shows listener1 alone)."""
    config = state.config
    lines = []
    if state.tcp_port or not config["unixsocket"]:
        binds = "".join(f",bind={address}" for address in config["bind"].split())
        lines.append(f"listener0:name=tcp{binds},port={state.tcp_port}")
    if config["unixsocket"]:
        lines.append(f"listener1:name=unix,bind={config['unixsocket']}")
    return lines


def info_tls(state: ServerState) -> InfoLines:
    return [
        "tls_server_cert_serial:none",
        "tls_server_cert_expires_in_seconds:0",
        "tls_client_cert_serial:none",
        "tls_client_cert_expires_in_seconds:0",
        "tls_ca_cert_serial:none",
        "tls_ca_cert_expires_in_seconds:0",
    ]


def info_clients(state: ServerState) -> InfoLines:
    from fakekey.core.pause import pause_info, postponed_count

    clients = list(state.clients.values())
    reason, actions, remaining = pause_info(state)  # CLIENT PAUSE (fakekey/core/pause.py)
    return [
        f"connected_clients:{len(clients)}",
        "cluster_connections:0",
        f"maxclients:{state.config['maxclients']}",
        "client_recent_max_input_buffer:0",
        f"client_recent_max_output_buffer:{max(state.output_peaks)}",
        f"blocked_clients:{state.blocking.blocked_count() + postponed_count(state)}",
        f"tracking_clients:{sum(1 for c in clients if c.tracking is not None)}",
        f"pubsub_clients:{sum(1 for c in clients if c.subscriptions or c.shard_channels)}",
        f"watching_clients:{sum(1 for c in clients if c.watching)}",
        "clients_in_timeout_table:0",
        f"total_watched_keys:{sum(len(db.watched) for db in state.dbs)}",
        f"total_blocking_keys:{sum(len(db.waiting) for db in state.dbs)}",
        f"total_blocking_keys_on_nokey:{state.blocking.keys_on_nokey()}",
        f"paused_reason:{reason}",
        f"paused_actions:{actions}",
        f"paused_timeout_milliseconds:{remaining}",
    ]


STARTUP_MEMORY = 1024 * 1024  # what an empty server reports, about Valkey's figure


def dataset_bytes(state: ServerState) -> int:
    return memory_estimate.dataset_bytes(state)  # the maxmemory tracker's figure (fakekey/memory/estimate.py)


def resident_bytes(fallback: int) -> int:
    """The process's resident set from /proc where there is one."""
    try:
        with open("/proc/self/statm") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return fallback


def total_system_memory() -> int:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (OSError, ValueError):
        return 0


def info_memory(state: ServerState) -> InfoLines:
    functions = state.functions.current if state.functions is not None else None
    dataset = dataset_bytes(state)
    clients, replicas, _ = clients_memory_split(state)  # their buffers are memory too
    used = STARTUP_MEMORY + dataset + clients + replicas
    peak = max(used, state.memory_peak)
    state.memory_peak = peak
    rss = resident_bytes(used)
    system = total_system_memory()
    maxmemory = state.config["maxmemory"]
    return [
        f"used_memory:{used}",
        f"used_memory_human:{human_bytes(used)}",
        f"used_memory_rss:{rss}",
        f"used_memory_rss_human:{human_bytes(rss)}",
        f"used_memory_peak:{peak}",
        f"used_memory_peak_human:{human_bytes(peak)}",
        f"used_memory_peak_perc:{100 * used / peak:.2f}%",
        f"used_memory_overhead:{STARTUP_MEMORY + clients + replicas}",
        f"used_memory_startup:{STARTUP_MEMORY}",
        f"used_memory_dataset:{dataset}",
        f"used_memory_dataset_perc:{100 * dataset / used:.2f}%",
        f"allocator_allocated:{used}",  # Valkey 9's allocator lines, as its libc build shows them
        f"allocator_active:{rss}",
        f"allocator_resident:{rss}",
        "allocator_muzzy:0",
        f"total_system_memory:{system}",
        f"total_system_memory_human:{human_bytes(system)}",
        "used_memory_lua:0",
        "used_memory_vm_eval:0",
        "used_memory_lua_human:0B",
        "used_memory_scripts_eval:0",
        f"number_of_cached_scripts:{len(state.scripts.cache) if state.scripts is not None else 0}",
        f"number_of_functions:{len(functions.functions) if functions is not None else 0}",
        f"number_of_libraries:{len(functions.libraries) if functions is not None else 0}",
        "used_memory_vm_functions:0",
        "used_memory_vm_total:0",
        "used_memory_vm_total_human:0B",
        "used_memory_functions:0",
        "used_memory_scripts:0",
        "used_memory_scripts_human:0B",
        f"maxmemory:{maxmemory}",
        f"maxmemory_human:{human_bytes(maxmemory)}",
        f"maxmemory_policy:{state.config['maxmemory-policy']}",
        "allocator_frag_ratio:1.00",
        "allocator_frag_bytes:0",
        "allocator_rss_ratio:1.00",
        "allocator_rss_bytes:0",
        "rss_overhead_ratio:1.00",
        "rss_overhead_bytes:0",
        f"mem_fragmentation_ratio:{rss / used:.2f}",
        f"mem_fragmentation_bytes:{rss - used}",
        f"mem_not_counted_for_evict:{replicas}",  # the replicas' output, as Valkey's
        "mem_replication_backlog:0",
        "mem_total_replication_buffers:0",
        "mem_replicas_repl_buffer:0",
        f"mem_clients_slaves:{replicas}",
        f"mem_clients_normal:{clients}",
        "mem_cluster_links:0",
        "mem_cluster_slot_import:0",
        "mem_cluster_slot_export:0",
        "mem_aof_buffer:0",
        "mem_allocator:python",
        "mem_overhead_db_hashtable_rehashing:0",
        "active_defrag_running:0",
        f"lazyfree_pending_objects:{state.reclaimer.pending}",
        f"lazyfreed_objects:{state.stats[LAZYFREED]}",
    ]


def info_persistence(state: ServerState) -> InfoLines:
    if state.persistence is not None:
        return state.persistence.info_lines()
    return [
        "loading:0",
        "async_loading:0",
        "current_cow_peak:0",
        "current_cow_size:0",
        "current_cow_size_age:0",
        "current_fork_perc:0.00",
        "current_save_keys_processed:0",
        "current_save_keys_total:0",
        f"rdb_changes_since_last_save:{state.dirty}",
        "rdb_bgsave_in_progress:0",
        f"rdb_last_save_time:{state.lastsave}",
        "rdb_last_bgsave_status:ok",
        "rdb_last_bgsave_time_sec:-1",
        "rdb_current_bgsave_time_sec:-1",
        f"rdb_saves:{state.stats['rdb_saves']}",
        "rdb_last_cow_size:0",
        "rdb_last_load_keys_expired:0",
        "rdb_last_load_keys_loaded:0",
        f"aof_enabled:{int(state.config['appendonly'])}",
        "aof_rewrite_in_progress:0",
        "aof_rewrite_scheduled:0",
        "aof_last_rewrite_time_sec:-1",
        "aof_current_rewrite_time_sec:-1",
        "aof_last_bgrewrite_status:ok",
        "aof_rewrites:0",
        "aof_rewrites_consecutive_failures:0",
        "aof_last_write_status:ok",
        "aof_last_cow_size:0",
        "module_fork_in_progress:0",
        "module_fork_last_cow_size:0",
        "slot_migration_fork_in_progress:0",
    ]


# Stats fields that are plain counters in state.stats (0 until something counts them).
_STAT_COUNTERS_HEAD = ("total_connections_received",)
_STAT_COUNTERS_TAIL = (
    "rejected_connections", "sync_full", "sync_partial_ok", "sync_partial_err",
    "expired_keys", "expired_fields",
)


def info_stats(state: ServerState) -> InfoLines:
    stats = state.stats
    clients = list(state.clients.values())
    channels = {ch for c in clients for ch in c.channels}
    patterns = {p for c in clients for p in c.patterns}
    shard = {ch for c in clients for ch in c.shard_channels}
    lines = [f"{name}:{stats[name]}" for name in _STAT_COUNTERS_HEAD]
    lines.append(f"total_commands_processed:{state.commands_processed}")
    lines += [
        f"instantaneous_ops_per_sec:{int(state.loop_metrics.instantaneous('ops'))}",
        f"total_net_input_bytes:{sum(c.net_in for c in clients)}",
        f"total_net_output_bytes:{sum(c.net_out for c in clients)}",
        "total_net_repl_input_bytes:0",
        "total_net_repl_output_bytes:0",
        "total_net_cluster_slot_import_bytes:0",
        "total_net_cluster_slot_export_bytes:0",
        f"instantaneous_input_kbps:{state.loop_metrics.instantaneous('net_in'):.2f}",
        f"instantaneous_output_kbps:{state.loop_metrics.instantaneous('net_out'):.2f}",
        "instantaneous_input_repl_kbps:0.00",
        "instantaneous_output_repl_kbps:0.00",
    ]
    lines += [f"{name}:{stats[name]}" for name in _STAT_COUNTERS_TAIL]
    lines += [
        f"expired_stale_perc:{state.expiry.stale_perc * 100:.2f}",
        f"expired_keys_with_volatile_items_stale_perc:{state.expiry.fields_stale_perc * 100:.2f}",
        f"expired_time_cap_reached_count:{state.expiry.time_cap_reached}",
        f"expire_cycle_cpu_milliseconds:{state.expiry.used_ns // 1_000_000}",
        f"evicted_keys:{stats['evicted_keys']}",
        f"evicted_clients:{stats['evicted_clients']}",
        f"evicted_scripts:{state.stats['evicted_scripts']}",
        f"total_eviction_exceeded_time:{eviction_exceeded_ms(state, total=True)}",
        f"current_eviction_exceeded_time:{eviction_exceeded_ms(state, total=False)}",
        f"keyspace_hits:{state.keyspace_hits}",
        f"keyspace_misses:{state.keyspace_misses}",
        f"pubsub_channels:{len(channels)}",
        f"pubsub_patterns:{len(patterns)}",
        f"pubsubshard_channels:{len(shard)}",
        "latest_fork_usec:0",
        f"total_forks:{stats['total_forks']}",  # the background saves and rewrites
        f"migrate_cached_sockets:{close_idle_links(state, state.clock.now_ms())}",
        f"slave_expires_tracked_keys:{tracked_keys(state)}",
        "active_defrag_hits:0",
        "active_defrag_misses:0",
        "active_defrag_key_hits:0",
        "active_defrag_key_misses:0",
        "total_active_defrag_time:0",
        "current_active_defrag_time:0",
        *state.tracking_table.info_stats(),
        "unexpected_error_replies:0",
        f"total_error_replies:{stats['total_error_replies']}",
        "dump_payload_sanitizations:0",
        f"total_reads_processed:{state.commands_processed}",
        f"total_writes_processed:{state.commands_processed}",
        "io_threaded_reads_processed:0",
        "io_threaded_writes_processed:0",
        "io_threaded_freed_objects:0",
        "io_threaded_accept_processed:0",
        "io_threaded_poll_processed:0",
        "io_threaded_total_prefetch_batches:0",
        "io_threaded_total_prefetch_entries:0",
        f"client_query_buffer_limit_disconnections:{state.stats['client_query_buffer_limit_disconnections']}",
        f"client_output_buffer_limit_disconnections:{state.stats['client_output_buffer_limit_disconnections']}",
        "reply_buffer_shrinks:0",
        "reply_buffer_expands:0",
        *state.loop_metrics.info_lines(state),
    ]
    lines += [
        f"acl_access_denied_{what}:{stats['acl_access_denied_' + what]}"
        for what in ("auth", "cmd", "key", "channel", "tls_cert", "db")
    ]
    return lines


def tracked_keys(state: ServerState) -> int:
    """slave_expires_tracked_keys: a writable replica's own keys with a deadline (kept
    when it became a primary, as Valkey keeps them)."""
    if state.upstream is not None:
        return len(state.upstream.own_volatile)
    return len(state.repl_primary.own_volatile) if state.repl_primary is not None else 0


def info_replication(state: ServerState) -> InfoLines:
    """Valkey's fields; a primary's in-process replicas and a replica's link (a fakekey
    cluster's), which are always up and caught up."""
    offset = state.repl_offset
    if state.upstream is not None:  # a replica of a real primary (core/upstream.py)
        lines = state.upstream.info_lines(state, time.time_ns() // 1_000_000)
    else:
        lines = replica_lines(state) if state.replica_of is not None else ["role:master"]
    replicas = state.replicas()
    real = state.repl_primary  # real replicas (persistence/replication_primary.py)
    linked = real.info_lines(len(replicas)) if real is not None else []
    lines.append(f"connected_slaves:{len(replicas) + len(linked)}")
    for i, replica in enumerate(replicas):
        host, port = replication_address(replica)
        lines.append(f"slave{i}:ip={host},port={port},state=online,offset={replica.repl_offset},"
                     "lag=0,type=replica")
    lines += linked
    backlog = offset > 0  # a primary with replicas keeps a backlog from the first byte
    lines += [
        "replicas_waiting_psync:0",
        f"master_failover_state:{failover_state(state)}",
        f"master_replid:{state.replid}",
        f"master_replid2:{state.replid2}",
        f"master_repl_offset:{offset}",
        f"second_repl_offset:{state.second_repl_offset}",
    ]
    if real is not None and real.backlog is not None:
        lines += real.backlog_lines()
    else:
        lines += [
            f"repl_backlog_active:{int(backlog)}",
            "repl_backlog_size:10485760",
            f"repl_backlog_first_byte_offset:{int(backlog)}",
            f"repl_backlog_histlen:{offset}",
        ]
    return lines


def replica_lines(state: ServerState) -> InfoLines:
    primary = state.replica_of
    assert primary is not None
    host, port = replication_address(primary)
    return [
        "role:slave", f"master_host:{host}", f"master_port:{port}", "master_link_status:up",
        "master_last_io_seconds_ago:0", "master_sync_in_progress:0",
        f"slave_read_repl_offset:{state.repl_offset}", f"slave_repl_offset:{state.repl_offset}",
        "replicas_repl_buffer_size:0", "replicas_repl_buffer_peak:0", "slave_priority:100",
        "slave_read_only:1", "replica_announced:1",
    ]


def info_cpu(state: ServerState) -> InfoLines:
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return [
        f"used_cpu_sys:{own.ru_stime:.6f}",
        f"used_cpu_user:{own.ru_utime:.6f}",
        f"used_cpu_sys_children:{children.ru_stime:.6f}",
        f"used_cpu_user_children:{children.ru_utime:.6f}",
        f"used_cpu_sys_main_thread:{own.ru_stime:.6f}",
        f"used_cpu_user_main_thread:{own.ru_utime:.6f}",
        f"used_active_time_main_thread:{own.ru_stime + own.ru_utime:.6f}",
    ]


# a module's options as INFO modules shows them (Valkey 9.1's Lua engine is a module)
MODULE_OPTIONS = {"lua": "handle-repl-async-load|handle-atomic-slot-migration"}


def info_modules(state: ServerState) -> InfoLines:
    return [
        f"module:name={name},ver={version},api=1,filters=0,usedby=[],using=[],"
        f"options=[{MODULE_OPTIONS.get(name, '')}]"
        for name, version in state.modules()
    ]


def info_commandstats(state: ServerState) -> InfoLines:
    lines = []
    for cmd in state.registry.all():
        for each in (cmd, *cmd.subcommands.values()):
            stats = state.stats_of(each)
            if stats.calls or stats.failed_calls or stats.rejected_calls:
                usec = stats.usec + stats.ns // 1000
                per_call = usec / stats.calls if stats.calls else 0
                lines.append(
                    f"cmdstat_{each.name}:calls={stats.calls},usec={usec},"
                    f"usec_per_call={per_call:.2f},rejected_calls={stats.rejected_calls},"
                    f"failed_calls={stats.failed_calls}"
                )
    return lines


def info_latencystats(state: ServerState) -> InfoLines:
    """Each command's latency percentiles. fakekey keeps no histogram: every percentile
    shows the command's mean time per call (docs/differences.md)."""
    config = state.config
    percentiles = config["latency-tracking-info-percentiles"] if config["latency-tracking"] else ()
    if isinstance(percentiles, str):  # the default, as text
        percentiles = tuple(float(p) for p in percentiles.split())
    if not percentiles:
        return []
    names = [f"p{p:f}".rstrip("0").rstrip(".") for p in percentiles]
    lines = []
    for cmd in state.registry.all():
        for each in (cmd, *cmd.subcommands.values()):
            stats = state.stats_of(each)
            if stats.calls:
                mean = (stats.usec + stats.ns // 1000) / stats.calls
                values = ",".join(f"{name}={mean:.3f}" for name in names)
                lines.append(f"latency_percentiles_usec_{each.name}:{values}")
    return lines


def info_scripting_engines(state: ServerState) -> InfoLines:
    """The one engine, Lua (Valkey 9's scripting engine registry)."""
    return [
        "engines_count:1",
        "engines_total_used_memory:0",
        "engines_total_memory_overhead:0",
        "engine_0:name=LUA,module=lua,abi_version=4,used_memory=0,memory_overhead=0",
    ]


def info_errorstats(state: ServerState) -> InfoLines:
    # Valkey keeps them in a radix tree: in byte order of the prefix, not first-seen order
    return [f"errorstat_{prefix}:count={count}" for prefix, count in sorted(state.error_stats.items()) if count]


def info_cluster(state: ServerState) -> InfoLines:
    return [f"cluster_enabled:{0 if state.cluster is None else 1}"]


def average_ttl(db: Database, now: int) -> int:
    """The mean remaining time to live of the volatile keys, in ms."""
    if not db.expires:
        return 0
    return sum(max(0, when - now) for when in db.expires.values()) // len(db.expires)


def info_keyspace(state: ServerState) -> InfoLines:
    return [
        f"db{db.index}:keys={len(db)},expires={len(db.expires)},"
        f"avg_ttl={average_ttl(db, state.now)},"
        f"keys_with_volatile_items={keys_with_volatile_items(db)}"
        for db in state.dbs
        if len(db)
    ]


# (name, header, in `default`): Valkey's order; `all` is every section, `everything` too.
INFO_SECTIONS: tuple[tuple[str, str, bool, Any], ...] = (
    ("server", "Server", True, info_server),
    ("tls", "TLS", False, info_tls),
    ("clients", "Clients", True, info_clients),
    ("memory", "Memory", True, info_memory),
    ("persistence", "Persistence", True, info_persistence),
    ("stats", "Stats", True, info_stats),
    ("replication", "Replication", True, info_replication),
    ("cpu", "CPU", True, info_cpu),
    ("modules", "Modules", True, info_modules),
    ("commandstats", "Commandstats", False, info_commandstats),
    ("errorstats", "Errorstats", True, info_errorstats),
    ("latencystats", "Latencystats", False, info_latencystats),
    ("cluster", "Cluster", True, info_cluster),
    ("cluster_info", "Cluster Info", False, lambda state: []),
    ("scriptingengines", "Scripting Engines", False, info_scripting_engines),
    ("keyspace", "Keyspace", True, info_keyspace),
)


# Sections an emulated module adds (fakekey/modules), declared as its verbs are, at import:
# (name, header, lines or None when the module is off). Shown when asked for by name or
# with `everything`, as Valkey shows a module's INFO sections.
MODULE_SECTIONS: list[tuple[str, str, Any]] = []


def chosen_sections(args: list[bytes]) -> set[str]:
    """The section names INFO's arguments ask for (none = default)."""
    wanted = {a.decode("utf-8", "replace").lower() for a in args} or {"default"}
    chosen = {name for name, _h, _d, _f in INFO_SECTIONS if name in wanted}
    if wanted & {"all", "everything"}:
        chosen.update(name for name, _h, _d, _f in INFO_SECTIONS)
    if "default" in wanted:
        chosen.update(name for name, _h, default, _f in INFO_SECTIONS if default)
    for name, _h, _f in MODULE_SECTIONS:
        if name in wanted or "everything" in wanted:
            chosen.add(name)
    return chosen


def info_text(state: ServerState, args: list[bytes]) -> bytes:
    """INFO's text: `# Header` then the lines of each section, a blank line between."""
    chosen = chosen_sections(args)
    blocks = [
        "\r\n".join([f"# {header}", *build(state)]) + "\r\n"
        for name, header, _d, build in INFO_SECTIONS
        if name in chosen
    ]
    for name, header, build in MODULE_SECTIONS:
        lines = build(state) if name in chosen else None
        if lines is not None:
            blocks.append("\r\n".join([f"# {header}", *lines]) + "\r\n")
    if any(arg.lower() == b"debug" for arg in args):  # only when named, as Valkey's
        blocks.append("\r\n".join(["# Debug", *state.loop_metrics.debug_lines(state)]) + "\r\n")
    if faults_wanted(state, args):
        blocks.append("\r\n".join(["# Faults", *state.faults.info_lines()]) + "\r\n")
    return "\r\n".join(blocks).encode()


def faults_wanted(state: ServerState, args: list[bytes]) -> bool:
    """fakekey's own section (FAKEKEY.FAULT, docs/faults.md): asked by name, or in the
    default, `all` and `everything` while a fault is in force (else INFO is Valkey's)."""
    wanted = {a.lower() for a in args} or {b"default"}
    if b"faults" in wanted:
        return True
    return bool(wanted & {b"default", b"all", b"everything"}) and state.faults.in_force()


@command("info", -1, "loading stale", acl="dangerous", group=G, since="1.0.0",
         tips="nondeterministic_output request_policy:all_shards response_policy:special",
         summary="Reports the server's state and statistics, by section.")
def info(c: Client, argv: list[bytes]) -> Any:
    return Verbatim(info_text(c.state, argv[1:]))
