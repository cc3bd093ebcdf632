"""Server commands: INFO, TIME, DBSIZE, FLUSHDB, FLUSHALL, SWAPDB, CONFIG, DEBUG, SHUTDOWN,
LASTSAVE, WAIT, SAVE, BGSAVE, BGREWRITEAOF, ROLE."""

from __future__ import annotations

import math
import os
import platform
import re
import resource
import sys
import time
from typing import Any

from fakekey._version import REDIS_VERSION
from fakekey.codecs.digest import dataset_digest, value_digest
from fakekey.commands.args import SYNTAX, parse_int
from fakekey.config.settings import ConfigError
from fakekey.core.client import Client
from fakekey.core.keyspace import Database
from fakekey.core.registry import command, container
from fakekey.memory import estimate as memory_estimate
from fakekey.memory.lazyfree import STAT as LAZYFREED
from fakekey.memory.lazyfree import lazy_setting, released_keys
from fakekey.resp.replies import NO_REPLY, OK, BigNumber, Raw, ReplyError, SetReply, Simple, Verbatim

G = "server"


def help_lines(lines: list[str]) -> list[Simple]:
    """A HELP reply: one simple string per line, as Valkey's addReplyHelp sends it."""
    return [Simple(line.encode()) for line in lines]


# --- time and size ------------------------------------------------------------------------


@command("time", 1, "loading stale fast", group=G, since="2.6.0",
         tips="nondeterministic_output", summary="Answers the server's clock as seconds and "
         "microseconds.")
def time_(c: Client, argv: list[bytes]) -> Any:
    us = snapshot_us(c.state)
    return [str(us // 1_000_000).encode(), str(us % 1_000_000).encode()]


def snapshot_us(state: Any) -> int:
    """The clock in microseconds, held to the command's snapshot (inside EXEC or a script
    the outer command's time)."""
    us = state.clock.now_us()
    return us if us // 1000 == state.now else state.now * 1000


@command("dbsize", 1, "readonly fast", acl="keyspace", group=G, since="1.0.0",
         tips="request_policy:all_shards response_policy:agg_sum",
         summary="Counts the keys of the selected database.")
def dbsize(c: Client, argv: list[bytes]) -> Any:
    return len(c.db)


# --- flushing and swapping ----------------------------------------------------------------


def parse_flush_mode(c: Client, argv: list[bytes]) -> bool:
    """FLUSHDB/FLUSHALL [ASYNC|SYNC]: True for a flush Valkey runs in the background (ASYNC,
    or no mode with lazyfree-lazy-user-flush); anything else is a syntax error."""
    if len(argv) > 2 or (len(argv) == 2 and argv[1].upper() not in (b"ASYNC", b"SYNC")):
        raise SYNTAX
    if len(argv) == 2:
        return argv[1].upper() == b"ASYNC"
    return lazy_setting(c.state, "user-flush")


def flush_database(db: Database) -> int:
    """Empty one database; watchers of its keys become dirty. Returns the keys removed."""
    removed = len(db)
    db.flush()
    return removed


@command("flushdb", -1, "write", acl="keyspace dangerous", group=G, since="1.0.0",
         tips="request_policy:all_shards response_policy:all_succeeded",
         complexity="O(N) where N is the number of keys in the selected database",
         summary="Deletes every key of the selected database.")
def flushdb(c: Client, argv: list[bytes]) -> Any:
    lazy = parse_flush_mode(c, argv)
    removed = flush_database(c.db)
    c.state.dirty += removed
    if c.state.tracking:  # every tracking client: all keys invalid (fakekey/core/tracking.py)
        c.state.tracking.flushed()
    if lazy:
        released_keys(c.state, removed)
    return OK


@command("flushall", -1, "write", acl="keyspace dangerous", group=G, since="1.0.0",
         tips="request_policy:all_shards response_policy:all_succeeded",
         complexity="O(N) where N is the total number of keys in all databases",
         summary="Deletes every key of every database.")
def flushall(c: Client, argv: list[bytes]) -> Any:
    lazy = parse_flush_mode(c, argv)
    removed = sum(flush_database(db) for db in c.state.dbs)
    c.state.dirty += removed
    if c.state.tracking:
        c.state.tracking.flushed()
    if c.state.persistence is not None:  # a save of the old data ends; a save rule saves
        c.state.persistence.flushed_all()
    if lazy:
        released_keys(c.state, removed)
    return OK


INT_MIN, INT_MAX = -(2**31), 2**31 - 1


def parse_swap_index(raw: bytes, which: str) -> int:
    """A DB index as a C int (getIntFromObjectOrReply); the range is checked after both."""
    try:
        index = parse_int(raw)
    except ReplyError as err:
        err.__traceback__ = None  # a shared instance: its traceback would keep growing
        index = None
    if index is None or not INT_MIN <= index <= INT_MAX:
        raise ReplyError(f"ERR invalid {which} DB index")
    return index


def swap_databases(first: Database, second: Database) -> None:
    """Exchange the data of two databases. Watches and waiters stay with their index, so
    watchers of a key present on either side are dirtied, and waiters whose key now has
    data are served after the command."""
    for attr in ("data", "expires", "access", "numbers_as_text"):
        one, other = getattr(first, attr), getattr(second, attr)
        setattr(first, attr, other)
        setattr(second, attr, one)
    first.touch_all_watchers(second)
    second.touch_all_watchers(first)
    for db in (first, second):
        for key in list(db.waiting):
            if key in db.data:
                db.state.blocking.signal(db, key)


@command("swapdb", 3, "write fast", acl="keyspace dangerous", group=G, since="4.0.0",
         complexity="O(N) where N is the count of clients watching or blocking on keys "
         "from both databases.", summary="Exchanges the contents of two databases.")
def swapdb(c: Client, argv: list[bytes]) -> Any:
    dbs = c.state.dbs
    first = parse_swap_index(argv[1], "first")
    second = parse_swap_index(argv[2], "second")
    if not (0 <= first < len(dbs) and 0 <= second < len(dbs)):
        raise ReplyError("ERR DB index is out of range")
    if first != second:
        swap_databases(dbs[first], dbs[second])
    c.state.dirty += 1  # even a database swapped with itself, as Valkey counts it
    return OK


# --- CONFIG -------------------------------------------------------------------------------

container("config", group=G, since="2.0.0", summary="Holds the server configuration commands.")

CONFIG_HELP = [
    "CONFIG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "GET <pattern>",
    "    Return parameters matching the glob-like <pattern> and their values.",
    "SET <directive> <value>",
    "    Set the configuration <directive> to <value>.",
    "RESETSTAT",
    "    Reset statistics reported by the INFO command.",
    "REWRITE",
    "    Rewrite the configuration file.",
    "HELP",
    "    Print this help.",
]
CONFIG_ADMIN = "admin noscript loading stale"
ALL_NODES = "request_policy:all_nodes response_policy:all_succeeded"


@command("config|get", -3, CONFIG_ADMIN, acl="dangerous", since="2.0.0",
         complexity="O(N) when N is the number of configuration parameters provided",
         summary="Reads the settings matching one or more glob patterns.")
def config_get(c: Client, argv: list[bytes]) -> Any:
    patterns = [a.decode("utf-8", "replace") for a in argv[2:]]
    found = c.state.config.get(patterns)
    return {name.encode(): value.encode() for name, value in found.items()}


@command("config|set", -4, CONFIG_ADMIN, acl="dangerous", since="2.0.0", tips=ALL_NODES,
         complexity="O(N) when N is the number of configuration parameters provided",
         summary="Changes one or more settings, all of them or none.")
def config_set(c: Client, argv: list[bytes]) -> Any:
    if len(argv) % 2:
        raise SYNTAX
    pairs = [
        (argv[i].decode("utf-8", "replace"), argv[i + 1].decode("utf-8", "surrogateescape"))
        for i in range(2, len(argv), 2)
    ]
    try:
        c.state.config.set_many(pairs, option_allows(c, "enable-protected-configs"))
    except ConfigError as err:
        raise ReplyError(f"ERR {err}") from None
    return OK


@command("config|resetstat", 2, CONFIG_ADMIN, acl="dangerous", since="2.0.0", tips=ALL_NODES,
         summary="Zeroes the statistics INFO reports.")
def config_resetstat(c: Client, argv: list[bytes]) -> Any:
    reset_statistics(c.state)
    return OK


def reset_statistics(state: Any) -> None:
    """What CONFIG RESETSTAT zeroes: server counters, error counts, per-command stats."""
    state.stats.clear()
    state.error_stats.clear()
    state.commands_processed = 0
    for stats in state.command_stats:
        stats.reset()


@command("config|rewrite", 2, CONFIG_ADMIN, acl="dangerous", since="2.8.0", tips=ALL_NODES,
         summary="Writes the running settings back to the configuration file.")
def config_rewrite(c: Client, argv: list[bytes]) -> Any:
    # fakekey never keeps the file it read its settings from
    raise ReplyError("ERR The server is running without a config file")


@command("config|help", 2, "loading stale", since="5.0.0",
         summary="Describes the CONFIG subcommands.")
def config_help(c: Client, argv: list[bytes]) -> Any:
    return help_lines(CONFIG_HELP)


# --- DEBUG --------------------------------------------------------------------------------

DEBUG_NOT_ALLOWED = ReplyError(
    'ERR DEBUG command not allowed. If the enable-debug-command option is set to "local", '
    "you can run it from a local connection, otherwise you need to set this option in the "
    "configuration file, and then restart the server."
)
DEBUG_HELP = [
    "DEBUG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "DIGEST",
    "    Output a hex signature representing the current DB content.",
    "DIGEST-VALUE <key> [<key> ...]",
    "    Output a hex signature of the values of all the specified keys.",
    "ERROR <string>",
    "    Return a RESP protocol error with <string> as message. Useful for clients",
    "    unit tests to simulate error replies.",
    "LOG <message>",
    "    Write <message> to the server log.",
    "PROTOCOL <type>",
    "    Reply with a test value of the specified type. <type> can be: string,",
    "    integer, double, bignum, null, array, set, map, attrib, push, verbatim,",
    "    true, false.",
    "SET-ACTIVE-EXPIRE <0|1>",
    "    Setting it to 0 disables expiring keys in background when they are not",
    "    accessed (otherwise the behavior). Setting it to 1 reenables back the",
    "    default.",
    "SLEEP <seconds>",
    "    Stop the server for <seconds>. Decimals allowed.",
    "HELP",
    "    Print this help.",
]
_LEADING_FLOAT = re.compile(rb"\s*[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")


def debug_allowed(c: Client) -> bool:
    return option_allows(c, "enable-debug-command")


def option_allows(c: Client, option: str) -> bool:
    """enable-debug-command, enable-module-command: yes, no, or local (loopback and unix
    socket clients)."""
    mode = c.state.config[option]
    if mode == "yes":
        return True
    local = c.addr.startswith(("127.", "[::1]", "/")) or not c.addr
    return mode == "local" and local


def strtod_prefix(raw: bytes) -> float:
    """C strtod: the longest leading number, 0 when there is none."""
    match = _LEADING_FLOAT.match(raw)
    return float(match.group()) if match else 0.0


# C strtod's longest prefix: blanks, a sign, then inf/infinity, nan, a hex or a decimal
# number. Possessive quantifiers keep it linear on a long run of digits.
_STRTOD_PREFIX = re.compile(
    rb"[ \t\n\v\f\r]*+[+-]?+(?:inf(?:inity)?+|nan"
    rb"|0x(?:[0-9a-f]++(?:\.[0-9a-f]*+)?+|\.[0-9a-f]++)(?:p[+-]?+[0-9]++)?+"
    rb"|(?:[0-9]++(?:\.[0-9]*+)?+|\.[0-9]++)(?:e[+-]?+[0-9]++)?+)",
    re.I,
)
_LONGEST_SLEEP = float(2**33)  # seconds (~272 years): time.sleep refuses much longer


def strtod_value(raw: bytes) -> float:
    """What C strtod answers for `raw`: its longest numeric prefix (0 when none), with
    inf, nan and hex forms; past the double range, +-inf."""
    match = _STRTOD_PREFIX.match(raw)
    if match is None:
        return 0.0
    text = match.group().lstrip(b" \t\n\v\f\r").lower()
    sign = -1.0 if text[:1] == b"-" else 1.0
    body = text.lstrip(b"+-")
    if body.startswith(b"inf"):
        return sign * math.inf
    if body == b"nan":
        return math.nan
    if body.startswith(b"0x"):
        try:
            return sign * float.fromhex(body.decode())
        except OverflowError:
            return sign * math.inf
    return sign * float(body)


def debug_sleep_seconds(raw: bytes) -> float:
    """DEBUG SLEEP's pause as Valkey takes it: strtod, times 1e6 into a long long (x86
    makes NaN and out-of-range values LLONG_MIN), and nanosleep refuses a negative time,
    so nan, inf, 1e13 or -1 answer at once while 1e9 sleeps for good."""
    micros = strtod_value(raw) * 1_000_000
    if not -(2.0**63) <= micros < 2.0**63:  # NaN fails this too
        return 0.0
    whole = int(micros)  # truncated toward zero, as C converts
    if whole <= 0:
        return 0.0
    return min(whole / 1_000_000, _LONGEST_SLEEP)


def debug_protocol(c: Client, kind: bytes) -> Any:
    """DEBUG PROTOCOL: one sample reply of each RESP type."""
    samples: dict[bytes, Any] = {
        b"string": b"Hello World",
        b"integer": 12345,
        b"double": 3.141,
        b"bignum": BigNumber(b"1234567999999999999999999999999999999"),
        b"null": None,
        b"array": [0, 1, 2],
        b"set": SetReply([0, 1, 2]),
        b"map": {0: False, 1: True, 2: False},
        b"verbatim": Verbatim(b"This is a verbatim\nstring"),
        b"true": True,
        b"false": False,
    }
    if kind in samples:
        return samples[kind]
    if kind == b"attrib":
        text = b"Some real reply following the attribute"
        if c.protocol == 2:
            return text
        return Raw(b"|1\r\n$14\r\nkey-popularity\r\n*2\r\n$7\r\nkey:123\r\n:90\r\n" + _bulk(text))
    if kind == b"push":
        if c.protocol == 2:
            raise ReplyError("ERR RESP2 is not supported by this command")
        # Valkey delivers the push after the command's own reply
        text = b"Some real reply following the push reply"
        return Raw(_bulk(text) + b">2\r\n$16\r\nserver-cpu-usage\r\n:42\r\n")
    raise ReplyError(
        "ERR Wrong protocol type name. Please use one of the following: "
        "string|integer|double|bignum|null|array|set|map|attrib|push|verbatim|true|false"
    )


def _bulk(data: bytes) -> bytes:
    return b"$%d\r\n%s\r\n" % (len(data), data)


def debug_unknown(sub: bytes) -> ReplyError:
    name = sub.decode("utf-8", "replace")
    return ReplyError(
        f"ERR unknown subcommand or wrong number of arguments for '{name}'. Try DEBUG HELP."
    )


@command("debug", -2, "admin noscript loading stale", acl="dangerous", group=G,
         since="1.0.0", doc_flags="syscmd", complexity="Depends on subcommand.",
         summary="Holds the commands that help debug the server and its clients.")
def debug(c: Client, argv: list[bytes]) -> Any:
    if not debug_allowed(c):
        raise DEBUG_NOT_ALLOWED
    sub = argv[1].lower()
    argc = len(argv)
    if sub == b"help" and argc == 2:
        return help_lines(DEBUG_HELP)
    if sub == b"sleep" and argc == 3:
        # Valkey's DEBUG SLEEP stops the whole server; so does blocking the loop here
        time.sleep(debug_sleep_seconds(argv[2]))
        return OK
    if sub == b"error" and argc == 3:
        return ReplyError(argv[2])
    if sub == b"log" and argc == 3:
        return OK
    if sub == b"protocol" and argc == 3:
        return debug_protocol(c, argv[2].lower())
    if sub == b"set-active-expire" and argc == 3:
        c.state.active_expire = strtod_prefix(argv[2]) != 0
        return OK
    if sub == b"digest" and argc == 2:
        dbs = ((db.index, db.data, db.expires) for db in c.state.dbs)
        return Simple(dataset_digest(dbs, c.state.now))
    if sub == b"digest-value":
        # the raw value, as Valkey's dbFind: a logically expired key still counts
        db = c.db
        return [Simple(value_digest(db.data.get(key), key in db.expires, c.state.now))
                for key in argv[2:]]
    raise debug_unknown(argv[1])


# --- SHUTDOWN, persistence, replication -------------------------------------------------

_SHUTDOWN_FLAGS = {b"NOSAVE", b"SAVE", b"NOW", b"FORCE", b"ABORT"}


def parse_shutdown_flags(argv: list[bytes]) -> set[bytes]:
    flags = {arg.upper() for arg in argv[1:]}
    if len(flags) != len(argv) - 1 or not flags <= _SHUTDOWN_FLAGS:
        raise SYNTAX
    if {b"NOSAVE", b"SAVE"} <= flags or (b"ABORT" in flags and len(flags) > 1):
        raise SYNTAX
    return flags


@command("shutdown", -1, "admin noscript loading stale no_multi allow_busy", acl="dangerous",
         group=G, since="1.0.0", complexity="O(N) when saving, where N is the total number "
         "of keys in all databases when saving data, otherwise O(1)",
         summary="Stops the server, closing every connection.")
def shutdown(c: Client, argv: list[bytes]) -> Any:
    flags = parse_shutdown_flags(argv)
    if b"ABORT" in flags:
        # fakekey stops at once, so there is never a shutdown waiting to be aborted
        raise ReplyError("ERR No shutdown in progress.")
    persistence = c.state.persistence
    if persistence is not None:
        save = True if b"SAVE" in flags else False if b"NOSAVE" in flags else None
        if not persistence.shutdown(save, force=b"FORCE" in flags):
            raise ReplyError("ERR Errors trying to SHUTDOWN. Check logs.")
    request_shutdown(c.state)
    c.close_after_reply = True
    return NO_REPLY


def request_shutdown(state: Any) -> None:
    """Resolve the server's shutdown future (the loop then stops every connection); with
    no serving loop behind the state, close the connections directly."""
    future = state.shutdown_requested
    if future is not None:
        if not future.done():
            future.set_result(None)
        return
    for client in list(state.clients.values()):
        if client.connection is not None:
            client.connection.close()


@command("lastsave", 1, "loading stale fast", acl="admin dangerous", group=G, since="1.0.0",
         tips="nondeterministic_output",
         summary="Answers the Unix time of the last successful save.")
def lastsave(c: Client, argv: list[bytes]) -> Any:
    return c.state.lastsave


def record_save(c: Client) -> None:
    """A save of a state that no server runs (no persistence): the bookkeeping moves on."""
    state = c.state
    state.lastsave = state.now // 1000
    state.dirty = 0
    state.stats["rdb_saves"] += 1


@command("save", 1, "admin noscript no_async_loading no_multi", acl="dangerous", group=G,
         since="1.0.0", complexity="O(N) where N is the total number of keys in all databases",
         summary="Saves the databases synchronously.")
def save(c: Client, argv: list[bytes]) -> Any:
    persistence = c.state.persistence
    if persistence is None:
        record_save(c)
        return OK
    if persistence.bgsave_in_progress():
        raise ReplyError("ERR Background save already in progress")
    if not persistence.save():
        raise ReplyError("ERR")
    return OK


@command("bgsave", -1, "admin noscript no_async_loading", acl="dangerous", group=G,
         since="1.0.0", summary="Saves the databases in the background.")
def bgsave(c: Client, argv: list[bytes]) -> Any:
    if len(argv) > 2 or (len(argv) == 2 and argv[1].upper() != b"SCHEDULE"):
        raise SYNTAX
    persistence = c.state.persistence
    if persistence is None:
        record_save(c)
        return Simple(b"Background saving started")
    if persistence.bgsave_in_progress():
        raise ReplyError("ERR Background save already in progress")
    if persistence.rewrite_in_progress():
        if len(argv) == 2:
            persistence.bgsave_scheduled = True
            return Simple(b"Background saving scheduled")
        raise ReplyError("ERR Another child process is active (AOF?): can't BGSAVE right now. "
                         "Use BGSAVE SCHEDULE in order to schedule a BGSAVE whenever possible.")
    persistence.start_bgsave()
    return Simple(b"Background saving started")


@command("bgrewriteaof", 1, "admin noscript no_async_loading", acl="dangerous", group=G,
         since="1.0.0", summary="Rewrites the append-only file in the background.")
def bgrewriteaof(c: Client, argv: list[bytes]) -> Any:
    persistence = c.state.persistence
    if persistence is None:
        return Simple(b"Background append only file rewriting started")
    if persistence.rewrite_in_progress():
        raise ReplyError("ERR Background append only file rewriting already in progress")
    if persistence.bgsave_in_progress():
        persistence.rewrite_scheduled = True
        return Simple(b"Background append only file rewriting scheduled")
    persistence.start_rewrite()
    return Simple(b"Background append only file rewriting started")


@command("wait", 3, "blocking", acl="connection", group="generic", since="3.0.0",
         tips="request_policy:all_shards response_policy:agg_min",
         summary="Waits for replicas to acknowledge the connection's writes; fakekey has "
         "none, so it answers 0 at once.")
def wait(c: Client, argv: list[bytes]) -> Any:
    parse_int(argv[1])
    try:
        timeout = parse_int(argv[2])
    except ReplyError as err:
        err.__traceback__ = None  # a shared instance: its traceback would keep growing
        raise ReplyError("ERR timeout is not an integer or out of range") from None
    if timeout < 0:
        raise ReplyError("ERR timeout is negative")
    return 0


@command("role", 1, "noscript loading stale fast", acl="admin dangerous", group=G,
         since="2.8.12", summary="Answers the replication role: always a primary here.")
def role(c: Client, argv: list[bytes]) -> Any:
    return [b"master", 0, []]



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


def info_server(state: Any) -> InfoLines:
    uptime = max(0, state.now - state.start_ms) // 1000
    uname = platform.uname()
    return [
        f"redis_version:{REDIS_VERSION}",
        "server_name:valkey",
        f"valkey_version:{state.valkey_version}",
        "valkey_release_stage:ga",
        f"fakekey_version:{state.version}",
        "redis_git_sha1:00000000",
        "redis_git_dirty:0",
        "redis_build_id:0",
        "server_mode:standalone",
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
        f"listener0:name=tcp,bind={state.config['bind']},port={state.tcp_port}",
    ]


def info_tls(state: Any) -> InfoLines:
    return [
        "tls_server_cert_serial:none",
        "tls_server_cert_expires_in_seconds:0",
        "tls_client_cert_serial:none",
        "tls_client_cert_expires_in_seconds:0",
        "tls_ca_cert_serial:none",
        "tls_ca_cert_expires_in_seconds:0",
    ]


def info_clients(state: Any) -> InfoLines:
    from fakekey.core.pause import pause_info, postponed_count

    clients = list(state.clients.values())
    reason, actions, remaining = pause_info(state)  # CLIENT PAUSE (fakekey/core/pause.py)
    return [
        f"connected_clients:{len(clients)}",
        "cluster_connections:0",
        f"maxclients:{state.config['maxclients']}",
        "client_recent_max_input_buffer:0",
        "client_recent_max_output_buffer:0",
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


def dataset_bytes(state: Any) -> int:
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


def info_memory(state: Any) -> InfoLines:
    functions = state.functions.current if state.functions is not None else None
    dataset = dataset_bytes(state)
    used = STARTUP_MEMORY + dataset
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
        f"used_memory_overhead:{STARTUP_MEMORY}",
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
        "mem_not_counted_for_evict:0",
        "mem_replication_backlog:0",
        "mem_total_replication_buffers:0",
        "mem_replicas_repl_buffer:0",
        "mem_clients_slaves:0",
        "mem_clients_normal:0",
        "mem_cluster_links:0",
        "mem_cluster_slot_import:0",
        "mem_cluster_slot_export:0",
        "mem_aof_buffer:0",
        "mem_allocator:python",
        "mem_overhead_db_hashtable_rehashing:0",
        "active_defrag_running:0",
        "lazyfree_pending_objects:0",
        f"lazyfreed_objects:{state.stats[LAZYFREED]}",
    ]


def info_persistence(state: Any) -> InfoLines:
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


def info_stats(state: Any) -> InfoLines:
    stats = state.stats
    clients = list(state.clients.values())
    channels = {ch for c in clients for ch in c.channels}
    patterns = {p for c in clients for p in c.patterns}
    shard = {ch for c in clients for ch in c.shard_channels}
    lines = [f"{name}:{stats[name]}" for name in _STAT_COUNTERS_HEAD]
    lines.append(f"total_commands_processed:{state.commands_processed}")
    lines += [
        "instantaneous_ops_per_sec:0",
        f"total_net_input_bytes:{sum(c.net_in for c in clients)}",
        f"total_net_output_bytes:{sum(c.net_out for c in clients)}",
        "total_net_repl_input_bytes:0",
        "total_net_repl_output_bytes:0",
        "total_net_cluster_slot_import_bytes:0",
        "total_net_cluster_slot_export_bytes:0",
        "instantaneous_input_kbps:0.00",
        "instantaneous_output_kbps:0.00",
        "instantaneous_input_repl_kbps:0.00",
        "instantaneous_output_repl_kbps:0.00",
    ]
    lines += [f"{name}:{stats[name]}" for name in _STAT_COUNTERS_TAIL]
    lines += [
        "expired_stale_perc:0.00",
        "expired_keys_with_volatile_items_stale_perc:0.00",
        "expired_time_cap_reached_count:0",
        "expire_cycle_cpu_milliseconds:0",
        f"evicted_keys:{stats['evicted_keys']}",
        "evicted_clients:0",
        f"evicted_scripts:{state.stats['evicted_scripts']}",
        "total_eviction_exceeded_time:0",
        "current_eviction_exceeded_time:0",
        f"keyspace_hits:{stats['keyspace_hits']}",
        f"keyspace_misses:{stats['keyspace_misses']}",
        f"pubsub_channels:{len(channels)}",
        f"pubsub_patterns:{len(patterns)}",
        f"pubsubshard_channels:{len(shard)}",
        "latest_fork_usec:0",
        "total_forks:0",
        "migrate_cached_sockets:0",
        "slave_expires_tracked_keys:0",
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
        "eventloop_cycles:0",
        "eventloop_duration_sum:0",
        "eventloop_duration_cmd_sum:0",
        "instantaneous_eventloop_cycles_per_sec:0",
        "instantaneous_eventloop_duration_usec:0",
    ]
    lines += [
        f"acl_access_denied_{what}:{stats['acl_access_denied_' + what]}"
        for what in ("auth", "cmd", "key", "channel", "tls_cert", "db")
    ]
    return lines


def info_replication(state: Any) -> InfoLines:
    return [
        "role:master",
        "connected_slaves:0",
        "replicas_waiting_psync:0",
        "master_failover_state:no-failover",
        f"master_replid:{state.replid}",
        "master_replid2:0000000000000000000000000000000000000000",
        "master_repl_offset:0",
        "second_repl_offset:-1",
        "repl_backlog_active:0",
        "repl_backlog_size:10485760",
        "repl_backlog_first_byte_offset:0",
        "repl_backlog_histlen:0",
    ]


def info_cpu(state: Any) -> InfoLines:
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


def info_modules(state: Any) -> InfoLines:
    return [
        f"module:name={m[b'name'].decode()},ver={m[b'ver']},api=1,filters=0,"
        "usedby=[],using=[],options=[]"
        for m in state.module_list()
    ]


def info_commandstats(state: Any) -> InfoLines:
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


def info_latencystats(state: Any) -> InfoLines:
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


def info_scripting_engines(state: Any) -> InfoLines:
    """The one engine, Lua (Valkey 9's scripting engine registry)."""
    return [
        "engines_count:1",
        "engines_total_used_memory:0",
        "engines_total_memory_overhead:0",
        "engine_0:name=LUA,module=lua,abi_version=4,used_memory=0,memory_overhead=0",
    ]


def info_errorstats(state: Any) -> InfoLines:
    # Valkey keeps them in a radix tree: in byte order of the prefix, not first-seen order
    return [f"errorstat_{prefix}:count={count}" for prefix, count in sorted(state.error_stats.items()) if count]


def info_cluster(state: Any) -> InfoLines:
    return ["cluster_enabled:0"]


def average_ttl(db: Database, now: int) -> int:
    """The mean remaining time to live of the volatile keys, in ms."""
    if not db.expires:
        return 0
    return sum(max(0, when - now) for when in db.expires.values()) // len(db.expires)


def info_keyspace(state: Any) -> InfoLines:
    return [
        f"db{db.index}:keys={len(db)},expires={len(db.expires)},"
        f"avg_ttl={average_ttl(db, state.now)},keys_with_volatile_items=0"
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


def chosen_sections(args: list[bytes]) -> set[str]:
    """The section names INFO's arguments ask for (none = default)."""
    wanted = {a.decode("utf-8", "replace").lower() for a in args} or {"default"}
    chosen = {name for name, _h, _d, _f in INFO_SECTIONS if name in wanted}
    if wanted & {"all", "everything"}:
        chosen.update(name for name, _h, _d, _f in INFO_SECTIONS)
    if "default" in wanted:
        chosen.update(name for name, _h, default, _f in INFO_SECTIONS if default)
    return chosen


def info_text(state: Any, args: list[bytes]) -> bytes:
    """INFO's text: `# Header` then the lines of each section, a blank line between."""
    chosen = chosen_sections(args)
    blocks = [
        "\r\n".join([f"# {header}", *build(state)]) + "\r\n"
        for name, header, _d, build in INFO_SECTIONS
        if name in chosen
    ]
    return "\r\n".join(blocks).encode()


@command("info", -1, "loading stale", acl="dangerous", group=G, since="1.0.0",
         tips="nondeterministic_output request_policy:all_shards response_policy:special",
         summary="Reports the server's state and statistics, by section.")
def info(c: Client, argv: list[bytes]) -> Any:
    return Verbatim(info_text(c.state, argv[1:]))
