"""The logical server: databases, clients, configuration, the clock, statistics, and the
one place a command is run (`call`), which every caller goes through: the network, MULTI,
scripts."""

from __future__ import annotations

import logging
import os
import threading
import time
from asyncio import _get_running_loop
from collections import Counter
from typing import TYPE_CHECKING, Any, Final

from fakekey._version import VALKEY_VERSION, __version__
from fakekey.codecs.errors import c_text, wrong_args
from fakekey.config.settings import Config, parse_obuf_limits
from fakekey.core.blocking import Blocking
from fakekey.core.channels import PubSub, parse_notify_flags
from fakekey.core.clock import REAL_TIME, Clock
from fakekey.core.cluster import READ_ONLY_REPLICA, ClusterView
from fakekey.core.commandlog import LARGE_REPLY, LARGE_REQUEST, SETTINGS, SLOW, CommandLog
from fakekey.core.expiry import ActiveExpiry
from fakekey.core.faults import Faults
from fakekey.core.field_expiry import expire_all_fields
from fakekey.core.keyspace import Database, Databases
from fakekey.core.latency import LatencyMonitor, threshold_ns
from fakekey.core.loop_metrics import LoopMetrics
from fakekey.core.monitor import (
    feed_monitors,
    feeds_monitor_after,
    log_command,
    refuse_for_monitor,
    stop_monitoring,
)
from fakekey.core.outbuf import PEAK_SLOTS
from fakekey.core.pause import Pause
from fakekey.core.registry import Command, CommandStats, Registry
from fakekey.core.replicas import NOREPLICAS, is_write_command, too_few_replicas
from fakekey.core.timers import Timers
from fakekey.core.tracking import Tracking
from fakekey.core.transactions import abort_exec, end_transaction
from fakekey.core.users import Users
from fakekey.core.wakes import WakeDetector
from fakekey.memory.eviction import MemoryTracker, maxmemory_changed, refuses
from fakekey.memory.lazyfree import Reclaimer
from fakekey.resp.replies import QUEUED, ReplyError

if TYPE_CHECKING:
    import asyncio
    from collections.abc import Callable

    from fakekey.core.client import Client
    from fakekey.core.upstream import Upstream
    from fakekey.core.version_gate import VersionGate
    from fakekey.net.server import Connection
    from fakekey.persistence.aof import AppendLog, Recorder
    from fakekey.persistence.manager import Persistence
    from fakekey.persistence.propagate import Propagation
    from fakekey.persistence.replication_primary import ReplicationPrimary
    from fakekey.scripting.bridge import ScriptRun, ScriptRunner
    from fakekey.scripting.libraries import Libraries
    from fakekey.scripting.scripts import EvalScripts

# the wall clock in ns, held as a constant: compiled code calls it without a dict lookup
_time_ns: Final = time.time_ns
_TIME_ATTRS: Final = vars(time)  # time.time read from here: one dict lookup, not a module's getattr

log = logging.getLogger("fakekey.net.server")  # the server's log (fakekey/cli.py sets it up)

NOAUTH = ReplyError("NOAUTH Authentication required.")
SLOW_LOG_OFF = (1 << 62) - 1  # ns: no command runs this long (and compiled code keeps it unboxed)
# With no normal-class output limit, a client stops being read while it has this much
# output unread (Valkey buffers without bound; see docs/differences.md).
UNREAD_OUTPUT_PAUSE = 32 << 20
# Run at once even inside MULTI (MULTI and WATCH are refused there by their no_multi flag).
NOT_QUEUED = frozenset({"exec", "discard", "quit", "reset"})
# What a RESP2 connection with subscriptions may still run.
SUBSCRIBED_RESP2 = frozenset({
    "subscribe", "psubscribe", "ssubscribe", "unsubscribe", "punsubscribe", "sunsubscribe",
    "ping", "quit", "reset",
})


class ServerState:
    """Everything a command can see, shared by all connections."""

    def __init__(self, registry: Registry, config: Config | None = None) -> None:
        """`registry`: the command declarations, loaded by whoever makes the server
        (fakekey.net.registry.load_all); everything counted or changed lives here."""
        self.config = config or Config()
        self.clock = Clock()
        # the servers that share this clock (a cluster's nodes: fakekey.Cluster), or empty
        self.clock_peers: list[ServerState] = []
        self.now = self.clock.now_ms()  # the current command's time snapshot (ms)
        # enable-emq-module no: the EMQ.* verbs are unknown and no module is listed (the
        # same for each emulated module and its own setting)
        self.emq_enabled = self.config["enable-emq-module"]
        if registry.modules_switched_off(self.config):
            registry = registry.with_modules(self.config)
        self.registry = registry
        # the commands by name as clients send them (any case): filled by lookups
        self._by_exact_name: dict[bytes, Command] = {}
        # the last command found there, by its name: a run of one command skips the hash
        self._last_name = b""
        self._last_cmd: Command | None = None
        # INFO commandstats' counters, by Command.index, each made on its first count
        # (`stats_of`): most servers run a few of the commands, a new one costs less
        self.command_stats: list[CommandStats | None] = self.registry.new_stats()
        self.commands_processed = 0
        self.dbs = Databases(self, self.config["databases"])  # each made on first use
        self.clients: dict[int, Client] = {}
        self.users = Users()  # users, their rules and the ACL log (fakekey/core/users.py)
        self.acl = self.users  # AUTH and CLIENT KILL USER ask it
        self.users.attach(self)
        self._next_client_id = 2  # ids 1 and 2 are the EVAL and FUNCTION engines' clients
        self.stats: Counter[str] = Counter()
        self.error_stats: Counter[str] = Counter()
        self.start_time = time.time()
        self.start_ms = self.clock.now_ms()
        self.lastsave = int(time.time())
        self.dirty = 0
        self.touch_keys = True
        self.counts_lookups = True  # the running command's lookups count (keyspace_hits)
        self.keyspace_hits = self.keyspace_misses = 0
        self.pubsub = PubSub(self)
        self.notify_flags = parse_notify_flags(self.config["notify-keyspace-events"])
        self.config.listeners.append(self._config_changed)
        # client-output-buffer-limit per class, and the unread output past which a write
        # looks at them (server.py Connection.check_output): one comparison per write
        self.obuf_limits, self.obuf_check_at = self._output_limits()
        # maxmemory (fakekey/memory/eviction.py): the used-memory tracker exists only while it is set
        self.maxmemory: int = self.config["maxmemory"]
        # an LFU maxmemory-policy: key accesses move Valkey's LFU counters (fakekey/memory/lfu.py)
        self.lfu_on = self.config["maxmemory-policy"].endswith("-lfu")
        self.memory: MemoryTracker | None = None
        self.pre_command_oom = False  # out of memory as the running command began (scripts)
        # min-replicas-to-write refuses writes: fakekey has no replicas (core/replicas.py)
        self.too_few_replicas = too_few_replicas(self.config)
        self.eviction_pool: list[tuple[int, int, bytes]] = []
        self.next_eviction_db = 0
        self.evicting = False  # eviction goes on between loop turns (memory/eviction.py)
        self.eviction_exceeded_at = 0  # perf_counter ns since memory is over maxmemory, or 0
        self.eviction_exceeded_us = 0  # INFO total_eviction_exceeded_time, before the current
        # the largest output (omem) the clients cron saw in each of the last 8 seconds
        # (INFO client_recent_max_output_buffer; net/server.py clients_cron)
        self.output_peaks = [0] * PEAK_SLOTS
        self.blocking = Blocking(self)
        self.timers = Timers(self)  # work the server does at due times (core/timers.py)
        self.timer_sources = self.timers.sources  # the same list: the hot path's one test
        self.module_state: dict[str, Any] = {}  # what an emulated module keeps per server
        self.deny_blocking = False  # inside EXEC or a script: blocking commands don't block
        self.scripts: EvalScripts | None = None  # the EVAL engine (scripting/scripts.py), made on first use
        self.script_runner: ScriptRunner | None = None  # runs scripts (scripting/bridge.py), made on first use
        self.functions: Libraries | None = None  # the FUNCTION engine (scripting/libraries.py), made on first use
        # a script past busy-reply-threshold: the server is BUSY until it ends (scripting/bridge.py)
        self.busy_script: ScriptRun | None = None
        # connections with output to send at the end of this loop iteration (net/server.py)
        self.uncork_queue: list[Connection] = []
        # the event loop serving this state, and its thread (set by Server): see running_loop
        self.loop: asyncio.AbstractEventLoop | None = None
        self.loop_ident = 0
        self.current_client: Client | None = None  # whose command is running now
        self.ended_ns = 0  # when run_command's last command ended (wall clock, ns)
        # a Connection's batch: when the request before ended (its ended_ns), the start of
        # the next, as EXEC's commands chain: one clock read a command (net/server.py)
        self.carried_ns = 0
        # True while a Connection's batch runs its 2nd and later requests with time.time
        # unpatched (net/server.py): `call` skips that check; a patch from the test's side
        # lands between batches
        self.time_unpatched = False
        self.memory_peak = 0  # INFO memory's used_memory_peak (commands/admin.py)
        self.migrate_links: dict[bytes, Any] = {}  # MIGRATE's cached connections (commands/dump.py)
        ids = os.urandom(40).hex()  # one system call for both (a new server's cost: bench/instances.py)
        self.run_id = ids[:40]
        self.replid = ids[40:]  # INFO replication's master_replid
        self.active_expire = True  # DEBUG SET-ACTIVE-EXPIRE 0 turns the cron's expiry off
        # DEBUG's switches that outlive the command (commands/debug.py), by subcommand
        self.debug_knobs: dict[str, int] = {}
        self.loop_metrics = LoopMetrics()  # INFO's eventloop_* and instantaneous_* figures
        self.expiry = ActiveExpiry(self)  # the cron's expiry of keys and fields (core/expiry.py)
        self._reclaimer: Reclaimer | None = None  # `reclaimer`, made on first use
        self.version = __version__
        self.valkey_version = VALKEY_VERSION
        # fakeredis's version= / server_type=: the older server this one answers as (core/version_gate.py)
        self.version_gate: VersionGate | None = None
        self.shutdown_requested: asyncio.Future[None] | None = None  # SHUTDOWN asked (net/server.py)
        self.persistence: Persistence | None = None  # snapshots and the log (fakekey/persistence), set by Server
        # a primary's in-process replicas: its changes, recorded as the log records them
        # and applied to them (persistence/replicas.py); the offset counts their bytes
        self.feed: Recorder | Propagation | None = None
        # while Valkey's propagation form has a consumer (a real replica: persistence/
        # propagate.py): the (db, key) the write funnel changed in the running unit
        self.journal: list[tuple[int, bytes]] | None = None
        # the primary side of replication to real replicas (persistence/replication_primary.py)
        self.repl_primary: ReplicationPrimary | None = None
        self.repl_offset = 0
        self.replica_of: ServerState | None = None  # an in-process replica's primary
        # REPLICAOF host port: the primary this server follows over the network, and the
        # link's state (core/upstream.py; the link is net/replica_link.py, which Server
        # sets `connect_upstream` to start); the replication id and offset a promotion
        # (REPLICAOF NO ONE) keeps as the secondary ones
        self.upstream: Upstream | None = None
        self.connect_upstream: Callable[[str, int, bool], Upstream] | None = None
        # the server at (host, port) that runs on this server's own loop (net/loop_thread.py)
        self.local_peer: Callable[[str, int], ServerState | None] | None = None
        self.replid2 = "0" * 40
        self.second_repl_offset = -1
        self.aof: AppendLog | None = None  # the append-only log while appendonly is on (persistence/aof.py)
        self.tcp_port = self.config["port"]
        self.fakekey_enabled = self.config["enable-fakekey-commands"]
        self.monitors: list[Client] = []  # MONITOR clients (core/monitor.py)
        self._commandlog: CommandLog | None = None  # `commandlog`, made on first use
        self.slow_ns = self._slow_threshold_ns()  # run_command logs runs at least this long
        self.latency = LatencyMonitor()  # LATENCY's event series (core/latency.py)
        # run_command samples runs at least this long (latency-monitor-threshold)
        self.latency_ns = threshold_ns(self.config["latency-monitor-threshold"])
        # a request or a reply bigger than these goes to COMMANDLOG (server.py Connection)
        self.large_request_at = self._size_threshold(LARGE_REQUEST)
        self.large_reply_at = self._size_threshold(LARGE_REPLY)
        # CLIENT TRACKING's table (fakekey/core/tracking.py); `tracking` is it only while in use
        self._tracking_table: Tracking | None = None  # `tracking_table`, made on first use
        self.tracking: Tracking | None = None
        self.paused: Pause | None = None  # CLIENT PAUSE in effect (fakekey/core/pause.py)
        # the lost-wake detector (FAKEKEY.WAKES, core/wakes.py); `wake_watch` is it only while armed
        self._wakes: WakeDetector | None = None  # `wakes`, made on first use
        self.wake_watch: WakeDetector | None = None
        # faults on demand (FAKEKEY.FAULT, core/faults.py); `fault_watch` is it only while a
        # rule or LATENCY is set: a connection tests only that (net/faults.py)
        self._faults: Faults | None = None  # `faults`, made on first use
        # cluster-enabled yes: this node's view of its cluster (core/cluster.py), else None
        self.cluster: ClusterView | None = None
        self.fault_watch: Faults | None = None

    # --- the parts most servers never use, made on first use ---------------------------
    # (an in-process server is made in a fraction of a millisecond, bench/instances.py: each
    # part made up front is objects the garbage collector walks for the server's life)

    @property
    def reclaimer(self) -> Reclaimer:
        """Frees big values in slices (fakekey/memory/lazyfree.py)."""
        if self._reclaimer is None:
            self._reclaimer = Reclaimer(self)
        return self._reclaimer

    @property
    def commandlog(self) -> CommandLog:
        """SLOWLOG and COMMANDLOG (fakekey/core/commandlog.py)."""
        if self._commandlog is None:
            self._commandlog = CommandLog()
        return self._commandlog

    @property
    def tracking_table(self) -> Tracking:
        """CLIENT TRACKING's table (fakekey/core/tracking.py)."""
        if self._tracking_table is None:
            self._tracking_table = Tracking(self)
        return self._tracking_table

    @property
    def wakes(self) -> WakeDetector:
        """The lost-wake detector (FAKEKEY.WAKES, core/wakes.py)."""
        if self._wakes is None:
            self._wakes = WakeDetector(self)
        return self._wakes

    @property
    def faults(self) -> Faults:
        """The fault rules (FAKEKEY.FAULT, core/faults.py)."""
        if self._faults is None:
            self._faults = Faults(self)
        return self._faults

    def running_loop(self) -> Any:
        """The event loop this thread is running, or None: asyncio.get_running_loop()'s
        answer without its cost (it asks the kernel for the process id, a system call,
        on every call: once per request here)."""
        loop = self.loop
        if loop is None:  # a state driven without a Server
            return _get_running_loop()
        if threading.get_ident() == self.loop_ident and loop.is_running():
            return loop
        return None

    # --- clients ------------------------------------------------------------------------

    def next_client_id(self) -> int:
        self._next_client_id += 1
        return self._next_client_id

    def add_client(self, client: Client) -> None:
        self.clients[client.id] = client
        self.stats["total_connections_received"] += 1

    def remove_client(self, client: Client) -> None:
        if self.busy_script is not None:  # the busy script owns the data until it ends
            self.busy_script.after(self.remove_client, client)
            return
        self.clients.pop(client.id, None)
        if self.repl_primary is not None:  # a real replica's link ends (persistence/replication_primary.py)
            self.repl_primary.client_gone(client)
        if client.monitor:
            stop_monitoring(client)
        self.blocking.forget(client)
        if self.paused is not None:
            self.paused.forget(client)
        self.unwatch_all(client)
        self.unsubscribe_all(client)
        if client.tracking is not None:
            self.tracking_table.disable(client)

    def unwatch_all(self, client: Client) -> None:
        for db, key in client.watching:
            watchers = db.watched.get(key)
            if watchers is not None:
                watchers.discard(client)
                if not watchers:
                    del db.watched[key]
        client.watching.clear()
        client.watch_dirty = False

    def unsubscribe_all(self, client: Client) -> None:
        """Drop every subscription of `client` (disconnect, RESET)."""
        self.pubsub.drop_client(client)

    def _output_limits(self) -> tuple[dict[str, tuple[int, int, int]], int]:
        """The limits by class, and the least backlog any of them (or, with no normal
        limit, fakekey's pause for unread output) can act on."""
        limits = self.config["client-output-buffer-limit"]
        if isinstance(limits, str):  # the default, as text
            limits = parse_obuf_limits(limits)
        normal = limits.get("normal", (0, 0, 0))
        thresholds = [size for klass in ("normal", "pubsub") for size in limits.get(klass, (0, 0, 0))[:2] if size]
        if not (normal[0] or normal[1]):
            thresholds.append(UNREAD_OUTPUT_PAUSE)
        return limits, min(thresholds)

    def output_hard_limit(self, klass: str) -> int:
        """client-output-buffer-limit's hard limit for a class of clients (0: none)."""
        return self.obuf_limits.get(klass, (0, 0, 0))[0]

    def _config_changed(self, name: str, value: Any) -> None:
        if name == "requirepass":  # the default user's password, as in Valkey
            self.users.set_default_password(value)
        elif name == "notify-keyspace-events":
            self.notify_flags = parse_notify_flags(value)
        elif name == "client-output-buffer-limit":
            self.obuf_limits, self.obuf_check_at = self._output_limits()
        elif name == "maxmemory":
            maxmemory_changed(self, value)
        elif name == "maxmemory-policy":
            self.lfu_on = value.endswith("-lfu")
        elif name == "min-replicas-to-write" or name == "min-replicas-max-lag":
            self.too_few_replicas = too_few_replicas(self.config)
            if self.repl_primary is not None:  # real replicas count (persistence/replication_primary.py)
                self.repl_primary.refresh_good_replicas()
        elif name == "latency-monitor-threshold":
            self.latency_ns = threshold_ns(value)
        elif name == "lua-enable-insecure-api" and self.scripts is not None:
            self.scripts.insecure_api_set(value)
        elif name in SETTINGS[SLOW]:
            self.slow_ns = self._slow_threshold_ns()
            self._trim_slow_log()
        elif name in SETTINGS[LARGE_REQUEST] or name in SETTINGS[LARGE_REPLY]:
            self.large_request_at = self._size_threshold(LARGE_REQUEST)
            self.large_reply_at = self._size_threshold(LARGE_REPLY)
            for kind in (LARGE_REQUEST, LARGE_REPLY):
                entries = self.commandlog.logs[kind].entries
                while len(entries) > max(0, self.config[SETTINGS[kind][1]]):
                    entries.pop()

    def _size_threshold(self, kind: str) -> int:
        """commandlog-request/reply-larger-than in bytes; off (-1, or a max-len of 0): a
        size nothing reaches."""
        threshold, max_len = (self.config[name] for name in SETTINGS[kind])
        return SLOW_LOG_OFF if threshold < 0 or max_len == 0 else threshold

    def _slow_threshold_ns(self) -> int:
        """commandlog-execution-slower-than in ns; off (-1, or a max-len of 0): never (an
        int past any duration: the per-command comparison stays int to int)."""
        threshold, max_len = (self.config[name] for name in SETTINGS[SLOW])
        return SLOW_LOG_OFF if threshold < 0 or max_len == 0 else threshold * 1000

    def _trim_slow_log(self) -> None:
        """Valkey trims a log to its max-len after each command (the CONFIG SET too)
        while the log is on."""
        if self.slow_ns != SLOW_LOG_OFF:
            entries = self.commandlog.logs[SLOW].entries
            while len(entries) > self.config[SETTINGS[SLOW][1]]:
                entries.pop()

    def modules(self) -> list[tuple[str, int]]:
        """(name, version) of the modules loaded: Lua's engine, then the emulated ones."""
        return [("lua", 1), *self.registry.modules.items()]

    def module_list(self) -> list[dict[bytes, object]]:
        """Modules as HELLO and MODULE LIST describe them."""
        return [{b"name": name.encode(), b"ver": version, b"path": name.encode(), b"args": []}
                for name, version in self.modules()]

    def stats_of(self, cmd: Command) -> CommandStats:
        """This server's counters of one command (made at the first ask)."""
        stats = self.command_stats[cmd.index]
        if stats is None:
            stats = self.command_stats[cmd.index] = CommandStats()
        return stats

    def lookup(self, name: bytes) -> Command | None:
        """The command named `name` in any case (this server's commands: with its module
        turned off, the module's are unknown)."""
        cmd = self._by_exact_name.get(name)
        if cmd is None:
            cmd = self.registry.commands.get(name.lower())
            if cmd is not None and len(self._by_exact_name) < 4096:
                self._by_exact_name[name] = cmd
        return cmd

    # --- time ---------------------------------------------------------------------------

    def tick(self) -> int:
        """Take the command's time snapshot; every reader during the command sees it."""
        self.now = now = self.clock.now_ms()
        return now

    def set_clock(self, ms: int) -> None:
        """Freeze the clock at `ms` (FAKEKEY.CLOCK SET, Server.freeze)."""
        self.clock.freeze(ms)
        self._clock_moved()

    def advance_clock(self, ms: int) -> None:
        """Move the clock on; the server's timers due on the way fire in due-time order,
        each at its due time (core/timers.py)."""
        if self.timer_sources:
            target = self.clock.now_ms() + ms
            self.timers.advance_to(target)
            ms = target - self.clock.now_ms()
        self.clock.advance(ms)
        self._clock_moved()

    def real_clock(self) -> None:
        self.clock.real()
        self._clock_moved()

    def _clock_moved(self) -> None:
        """After the clock changes: on every server that shares it (a cluster's nodes)."""
        for state in self.clock_peers or (self,):
            state.clock_moved_here()

    def clock_moved_here(self) -> None:
        """After the clock changes: expire what is due, time out waiters and fire the
        timers due, now."""
        if self.cluster is not None:  # node timeouts, MEETs nobody answered
            self.cluster.drop_stale_handshakes(self.clock.now_ms())
            if self.cluster.bus is not None:
                self.cluster.bus.tick(self.clock.now_ms())
        self.expire_all_due()
        self.blocking.clock_changed()
        self.blocking.serve()
        if self.timer_sources:
            self.timers.advance_to(self.clock.now_ms())
            self.timers.rearm()

    def expire_all_due(self) -> int:
        """Delete every key whose deadline has passed (the clock moved)."""
        now = self.tick()
        if self.paused is not None or self.upstream is not None:  # paused, or a replica: kept
            return 0
        removed = sum(db.expire_due(now) for db in self.dbs)
        for db in self.dbs:  # then the fields past their own deadline, as Valkey
            expire_all_fields(db, now)
        return removed

    def active_expire_cycle(self, fast: bool = False) -> None:
        """The cron's slow cycle, or (`fast`) the short one run between the loop's other
        work while a backlog of expired keys remains (fakekey/core/expiry.py)."""
        if self.busy_script is not None:  # the busy script owns the data and the clock
            return
        started = time.perf_counter()
        # keys do not expire while paused; a replica waits for its primary's DEL
        if (self.paused is None and self.active_expire and self.upstream is None
                and not self.debug_knobs.get("pause-cron")  # DEBUG PAUSE-CRON 1 stops the cron
                and not self.config["import-mode"]):  # an import keeps its expired keys
            self.expiry.cycle(fast)
        else:
            self.tick()
            upstream = self.upstream
            if (upstream is not None and upstream.own_volatile and self.active_expire
                    and self.paused is None and not fast):  # a writable replica's own keys
                upstream.expire_own_keys(self)
        self.blocking.serve()
        if not fast:  # the cron's tick: a turn of the loop, and its samples (core/loop_metrics.py)
            self.loop_metrics.tick(self, (time.perf_counter() - started) * 1e6)

    def latency_sample(self, event: str, ms: int) -> None:
        """LATENCY's monitor: an event that took `ms` (kept when past the threshold)."""
        threshold = self.config["latency-monitor-threshold"]
        if threshold and ms >= threshold:
            self.latency.add(event, ms, self.clock.now_ms() // 1000)

    # --- running commands --------------------------------------------------------------

    def lookup_command(self, argv: list[bytes]) -> Command | ReplyError:
        """The command (or subcommand) for argv, or the arity/unknown error."""
        cmd = self.lookup(argv[0])
        if cmd is None:
            return unknown_command(argv)
        if cmd.subcommands and (len(argv) >= 2 or cmd.handler is None):
            # a container alone is an arity error; COMMAND alone runs COMMAND itself
            if len(argv) < 2:
                self.stats_of(cmd).rejected_calls += 1  # counted on the container
                return wrong_args(cmd.name)
            sub = cmd.subcommands.get(argv[1].lower())
            if sub is None:
                return unknown_subcommand_error(cmd, argv[1])
            cmd = sub
        arity = cmd.arity
        argc = len(argv)
        if (arity > 0 and argc != arity) or argc < -arity:
            self.stats_of(cmd).rejected_calls += 1
            return wrong_args(cmd.name)
        return cmd

    def call(self, client: Client, argv: list[bytes]) -> Any:
        """Run one request from `client`: lookup, checks, MULTI queueing, execution."""
        name = argv[0]
        if name == self._last_name:  # the hot path: the name the request before sent
            cmd = self._last_cmd
        else:  # a known name, as sent
            cmd = self._by_exact_name.get(name)
            if cmd is not None:
                self._last_name, self._last_cmd = name, cmd
        if cmd is None or cmd.subcommands or (cmd.arity != len(argv) and (
                cmd.arity > 0 or len(argv) < -cmd.arity)):
            found = self.lookup_command(argv)
            if isinstance(found, ReplyError):
                if not client.authenticated and self._needs_auth(argv[0]):
                    found = NOAUTH  # an unauthenticated client learns nothing from the error
                return self._reject(client, found, argv[0].lower() == b"exec")
            cmd = found
        if not client.authenticated and "no_auth" not in cmd.flags and self.users.auth_required():
            return self._reject(client, NOAUTH, cmd.name == "exec")
        if cmd.protected_by and not protected_allowed(self.config[cmd.protected_by], client):
            self.stats_of(cmd).rejected_calls += 1  # after auth, before ACL, as Valkey 9
            return self._reject(client, protected_refusal(cmd), cmd.name == "exec")
        if not client.acl_unrestricted:  # the one ACL test an unrestricted client pays
            refusal = self.users.check_call(client, cmd, argv)
            if refusal is not None:
                self.stats_of(cmd).rejected_calls += 1
                return self._reject(client, refusal, cmd.name == "exec")
        if self.cluster is not None and (self.upstream is None or client is not self.upstream.client):
            # a slot another node serves: MOVED, ASK... (core/cluster.py); never for the
            # primary's stream on a replica (Valkey's CLIENT_PRIMARY)
            redirect = self.cluster.route(client, cmd, argv)
            if client.asking and cmd.name != "asking" and (not client.in_multi or cmd.name == "exec"):
                client.asking = False  # good for one command (or one whole transaction)
            if redirect is None and cmd.writes and not self.cluster.myself.is_primary:
                redirect = READ_ONLY_REPLICA  # a keyless write (FLUSHALL) on a replica
            if redirect is not None:
                return self._redirect(client, cmd, redirect)
        # evict, or refuse what may grow memory (not on a replica: replica-ignore-maxmemory)
        if self.maxmemory and self.busy_script is None and not self._ignores_maxmemory():
            refusal = refuses(self, client, cmd, argv)
            if refusal is not None:
                self.stats_of(cmd).rejected_calls += 1
                return self._reject(client, refusal, cmd.name == "exec")
        if self.tracking is not None:  # tracking-table-max-keys, as Valkey's processCommand
            self.tracking.evict_to_limit(client)
        if self.too_few_replicas and is_write_command(client, cmd, argv):
            self.stats_of(cmd).rejected_calls += 1
            return self._reject(client, NOREPLICAS, cmd.name == "exec")
        if self.upstream is not None:  # a replica: READONLY, MASTERDOWN (core/upstream.py)
            refusal = self.upstream.refusal(self, client, cmd, argv)
            if refusal is not None:
                self.stats_of(cmd).rejected_calls += 1
                return self._reject(client, refusal, cmd.name == "exec")
        # len(): a set's size is read inline by compiled code, its truth is a call
        if client.protocol == 2 and (len(client.channels) or len(client.patterns) or len(client.shard_channels)):
            if cmd.name not in SUBSCRIBED_RESP2:
                return self._reject(client, ReplyError(
                    f"ERR Can't execute '{cmd.name}': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE"
                    " / PING / QUIT / RESET are allowed in this context"
                ), cmd.name == "exec")
        if client.monitor:
            refusal = refuse_for_monitor(cmd)
            if refusal is not None:
                self.stats_of(cmd).rejected_calls += 1
                return self._reject(client, refusal, cmd.name == "exec")
        busy = self.busy_script
        if busy is not None:
            return self._call_while_busy(busy, client, cmd, argv)
        if self.paused is not None:  # CLIENT PAUSE: the one test paid when nothing is paused
            held = self.paused.hold(client, cmd, argv)
            if held is not None:
                return held
        if client.in_multi and cmd.name not in NOT_QUEUED:
            return self._queue(client, cmd, argv)
        # run it under its own clock snapshot; serve the blocked clients it made ready after.
        # One clock read gives the snapshot (the frozen time when the clock is frozen) and
        # the start of the command's duration (INFO commandstats, the slow log).
        # time_unpatched: a Connection's batch already saw time.time unpatched; there the
        # request before's end is this one's start (carried_ns), one read a command
        started = self.carried_ns
        if started:
            self.carried_ns = 0  # good for this command only, not for any it runs
        else:
            started = _time_ns()
        frozen = self.clock.frozen_us
        if frozen is None and (self.time_unpatched or _TIME_ATTRS["time"] is REAL_TIME[0]):
            self.now = started // 1_000_000
        else:  # frozen, or a test patched time.time (core/clock.py)
            self.now = self.clock.now_ms()
        self.current_client = client
        try:
            reply = self.run_command(client, cmd, argv, started)
        finally:
            self.current_client = None
        if self.wake_watch is not None:  # lost wakes, before the waiters are served (core/wakes.py)
            self.wake_watch.settle_call(argv)
        if self.blocking.ready:
            self.blocking.serve()
        if self.timer_sources:  # a write (a verb's, a script's) may have moved a due time
            self.timers.rearm()
        return reply

    def _redirect(self, client: Client, cmd: Command, redirect: ReplyError) -> ReplyError:
        """A command another node serves: inside MULTI it dooms the transaction; EXEC
        itself discards it and answers the redirect (Valkey's processCommand)."""
        self.stats_of(cmd).rejected_calls += 1
        if cmd.name == "exec":
            end_transaction(client)
        elif client.in_multi:
            client.doom_transaction()
        return self._count_error(redirect)

    def _ignores_maxmemory(self) -> bool:
        """A replica with replica-ignore-maxmemory yes neither evicts nor refuses: its
        primary's DELs keep its memory (Valkey's performEvictions)."""
        return self.upstream is not None and bool(self.config["replica-ignore-maxmemory"])

    def replicas(self) -> list[ServerState]:
        """This primary's in-process replicas that are attached and reachable."""
        return [] if self.feed is None else self.feed.followers()

    def _needs_auth(self, name: bytes) -> bool:
        """An unknown or malformed request from an unauthenticated client: NOAUTH unless
        the command is one allowed before AUTH."""
        cmd = self.lookup(name)
        return self.users.auth_required() and (cmd is None or "no_auth" not in cmd.flags)

    def _call_while_busy(self, busy: ScriptRun, client: Client, cmd: Command, argv: list[bytes]) -> Any:
        """A script past busy-reply-threshold owns the data and the clock: only commands
        flagged allow_busy run, without a clock snapshot or serving blocked clients."""
        refusal = busy.refuse(client, cmd, argv)
        if refusal is not None:
            return self._count_error(refusal)
        if client.in_multi and cmd.name not in NOT_QUEUED:
            return self._queue(client, cmd, argv)
        return self.run_command(client, cmd, argv)

    def run_command(self, client: Client, cmd: Command, argv: list[bytes], started: int = 0) -> Any:
        """The handler call alone: inside EXEC and scripts, commands share the clock
        snapshot of the outer command and wake nobody until it ends. `started`: the wall
        clock's ns when `call` began it (else read here), for the command's duration."""
        if not client.acl_unrestricted:  # EXEC and woken clients: the rules may have changed
            refusal = self._acl_recheck(client, cmd, argv)
            if refusal is not None:
                return self._count_error(refusal)
        client.cmd = cmd
        # CLIENT NO-TOUCH: this client's reads leave access times alone, except TOUCH
        self.touch_keys = not client.no_touch or cmd.name == "touch"
        self.counts_lookups = cmd.counts_lookups
        stats = self.command_stats[cmd.index]
        if stats is None:  # its first run on this server
            stats = self.stats_of(cmd)
        monitors = self.monitors
        if monitors and "skip_monitor" in cmd.flags:  # scripts are shown before they run
            feed_monitors(self, client, argv)
        if not started:
            started = _time_ns()
        try:
            if self.feed is not None:  # in-process replicas (and the log, when on) record it
                reply = self.feed.run(client, cmd, argv)
            elif self.aof is None:
                counted = cmd.counted
                if counted is None:
                    reply = cmd.handler(client, argv)  # type: ignore[misc]
                else:  # the same handler and its count, called natively
                    reply = counted.run(client, argv)
            else:  # appendonly: the log records what the command changed
                reply = self.aof.run(client, cmd, argv)
        except ReplyError as err:
            # many errors are shared instances (WRONGTYPE, SYNTAX...): each raise would
            # add its frames, and with them the request's arguments, to one traceback
            err.__traceback__ = None
            stats.failed_calls += 1
            reply = self._count_error(err)
        except Exception as err:  # noqa: BLE001 - a defect: the client still gets an answer
            stats.failed_calls += 1
            reply = self._count_error(internal_error(cmd, err))
        # the wall clock: a step back shortens one duration; EXEC starts its next command here
        self.ended_ns = ended = _time_ns()
        elapsed = ended - started
        # a call counts once it ran, as Valkey's (CONFIG RESETSTAT counts itself, INFO not)
        stats.calls += 1
        if client.blocked is None:
            stats.ns += elapsed
        else:  # it blocked: its time counts when it completes (Valkey's c->duration)
            self.blocking.hold_time(client, stats, elapsed)
        self.commands_processed += 1
        # tot-cmds: a command counts for the client it serves, as Valkey counts for its
        # current client: the caller of an EXEC or a script, a woken blocked client
        caller = self.current_client
        if caller is None or self.blocking.reprocessing is not None:
            caller = client
        caller.total_commands += 1
        if elapsed >= self.latency_ns and client.blocked is None:
            self.latency_sample("fast-command" if "fast" in cmd.flags else "command",
                                elapsed // 1_000_000)
        if elapsed >= self.slow_ns and "skip_commandlog" not in cmd.flags and client.blocked is None:
            log_command(self, client, argv, elapsed // 1000)
        if monitors and feeds_monitor_after(cmd) and self.blocking.reprocessing is None:
            feed_monitors(self, client, argv)
        if self.tracking is not None:  # client-side caching: the keys it read (fakekey/core/tracking.py)
            self.tracking.after_command(self.current_client or client, client, cmd, argv)
        return reply

    def _acl_recheck(self, client: Client, cmd: Command, argv: list[bytes]) -> ReplyError | None:
        """A restricted client's command run again after its first check: a queued one at
        EXEC, a blocked one when woken (Valkey checks both again). A refusal counts as
        Valkey's: a rejected call of the woken command, a failed call of EXEC."""
        waking = self.blocking.reprocessing
        if waking is not None and waking.client is client:
            refusal = self.users.check_call(client, cmd, argv)
            if refusal is not None:  # the time it spent blocked is dropped, as Valkey's
                self.stats_of(cmd).rejected_calls += 1
                waking.busy_ns = 0
            return refusal
        if self.deny_blocking and client is self.current_client:
            refusal = self.users.check_queued(client, cmd, argv)
            exec_cmd = self.lookup(b"exec") if refusal is not None else None
            if exec_cmd is not None:
                self.stats_of(exec_cmd).failed_calls += 1
            return refusal
        return None

    def _queue(self, client: Client, cmd: Command, argv: list[bytes]) -> Any:
        """Inside MULTI: queue the command, or refuse it and doom the transaction."""
        if "no_multi" in cmd.flags:
            client.doom_transaction()
            return self._count_error(
                ReplyError(f"ERR Command '{cmd.name}' not allowed inside a transaction")
            )
        if not (client.multi_error or client.watch_dirty):  # a doomed one keeps nothing, as Valkey
            client.multi_queue.append((cmd, argv))
        return QUEUED

    def _reject(self, client: Client, refusal: ReplyError, is_exec: bool) -> ReplyError:
        """A request refused before it runs dooms the transaction; refusing EXEC itself
        ends it (Valkey's rejectCommand)."""
        if is_exec:
            refusal = abort_exec(client, refusal)
        elif client.in_multi:
            client.doom_transaction()
        if client.tracking is not None and not client.in_multi:
            client.tracking.caching = False  # a refused request ends CLIENT CACHING too
        return self._count_error(refusal)

    def _count_error(self, err: ReplyError) -> ReplyError:
        self.stats["total_error_replies"] += 1
        self.error_stats[error_code(err.message)] += 1
        return err

    # --- notifications (keyspace events are emitted by the write funnel) -------------

    def notify_miss(self, db: Database, key: bytes) -> None:
        """A read found no key: `keymiss` (class m), for read-only commands' lookups."""
        cmd = self.current_client.cmd if self.current_client is not None else None
        if "m" in self.notify_flags and cmd is not None and "readonly" in cmd.flags:
            self.pubsub.notify(db, "m", "keymiss", key)

    def notify(self, db: Database, klass: str, event: str, key: bytes) -> None:
        """A keyspace notification (callers check `notify_flags` first: it is cheap)."""
        self.pubsub.notify(db, klass, event, key)


def protected_allowed(mode: str, client: Client) -> bool:
    """enable-debug-command, enable-module-command, enable-protected-configs: yes, no,
    or local (loopback and unix socket clients, and the server's own)."""
    if mode == "yes":
        return True
    local = client.addr.startswith(("127.", "[::1]", "/")) or not client.addr
    return mode == "local" and local


def protected_refusal(cmd: Command) -> ReplyError:
    name = (cmd.parent or cmd).name.upper()
    return ReplyError(
        f'ERR {name} command not allowed. If the {cmd.protected_by} option is set to "local", '
        "you can run it from a local connection, otherwise you need to set this option in the "
        "configuration file, and then restart the server.")


def internal_error(cmd: Command, err: Exception) -> ReplyError:
    """An unexpected exception in a handler: logged with its traceback, answered as an
    error on one line; the connection and the server go on."""
    log.error("internal error running %r", cmd.name, exc_info=err)
    err.__traceback__ = None  # the frames hold the request's arguments
    detail = str(err).replace("\r", " ").replace("\n", " ")[:128]
    return ReplyError(f"ERR internal error running '{cmd.name}': {type(err).__name__}"
                      + (f" ({detail})" if detail else ""))


def error_code(message: bytes) -> str:
    """INFO errorstats' name for an error: the word before a space in its first 32 bytes,
    else ERR (Valkey's afterErrorReply)."""
    message = message.replace(b"\r", b" ").replace(b"\n", b" ")  # as the reply shows it
    space = message.find(b" ", 0, 32)
    return (message[:space] if space > 0 else b"ERR").decode("utf-8", "replace")


def unknown_command(argv: list[bytes]) -> ReplyError:
    """Valkey's text: the name cut at 128 bytes, then quoted args up to 128 bytes in all."""
    args = b""
    for arg in argv[1:]:
        if len(args) >= 128:
            break
        args += b"'" + c_text(arg)[: 128 - len(args)] + b"' "
    return ReplyError(
        b"ERR unknown command '" + c_text(argv[0])[:128] + b"', with args beginning with: " + args
    )


def unknown_subcommand_error(cmd: Command, sub: bytes) -> ReplyError:
    text = sub.decode("utf-8", "replace")
    return ReplyError(f"ERR unknown subcommand '{text[:128]}'. Try {cmd.name.upper()} HELP.")
