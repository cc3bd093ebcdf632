"""CLIENT: ID, GETNAME, SETNAME, LIST, INFO, KILL, SETINFO, CAPA, NO-EVICT, NO-TOUCH,
REPLY, HELP, UNBLOCK, PAUSE, UNPAUSE, IMPORT-SOURCE, and the client-side caching ones: TRACKING, CACHING, GETREDIR,
TRACKINGINFO (their table and messages: fakekey/core/tracking.py)."""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from fakekey.commands.args import SYNTAX, help_lines, parse_int, try_int
from fakekey.core.blocking import UNBLOCKED_ERROR
from fakekey.core.client import Client
from fakekey.core.outbuf import CLIENT_STRUCT, STATIC_BUFFER, pubsub_memory
from fakekey.core.pause import end_pause, start_pause
from fakekey.core.registry import command, container
from fakekey.resp.replies import NO_REPLY, OK, ReplyError, SetReply, Verbatim

if TYPE_CHECKING:
    from fakekey.core.state import ServerState

G = "connection"
BASIC = "noscript loading stale allow_busy"
ADMIN = "admin noscript loading stale"
ALL_NODES = "request_policy:all_nodes response_policy:all_succeeded"

container("client", group=G, since="2.4.0", summary="Holds the commands about client connections.")

CLIENT_HELP = """\
CLIENT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:
CACHING (YES|NO)
    Enable/disable tracking of the keys for next command in OPTIN/OPTOUT modes.
CAPA <option> [options...]
    The client claims its some capability options. Options are:
    * REDIRECT
      The client can handle redirection during primary and replica failover in standalone mode.
GETREDIR
    Return the client ID we are redirecting to when tracking is enabled.
GETNAME
    Return the name of the current connection.
ID
    Return the ID of the current connection.
INFO
    Return information about the current client connection.
KILL <ip:port>
    Kill connection made from <ip:port>.
KILL <option> <value> [<option> <value> [...]]
    Kill connections. Options are:
    * ADDR (<ip:port>|<unixsocket>:0)
      Kill connections made from the specified address.
    * LADDR (<ip:port>|<unixsocket>:0)
      Kill connections made to the specified local address.
    * TYPE (NORMAL|PRIMARY|REPLICA|PUBSUB)
      Kill connections by type.
    * USER <username>
      Kill connections authenticated by <username>.
    * SKIPME (YES|NO)
      Skip killing current connection (default: yes).
    * ID <client-id> [<client-id>...]
      Kill connections by client IDs.
    * MAXAGE <maxage>
      Kill connections older than the specified age.
    * FLAGS <flags>
      Kill connections that include the specified flags.
    * NAME <client-name>
      Kill connections with the specified name.
    * IDLE <idle>
      Kill connections with idle time greater than or equal to <idle> seconds.
    * LIB-NAME <library-name>
      Kill connections with the specified library name.
    * LIB-VER <library-version>
      Kill connections with the specified library version.
    * DB <db-id>
      Kill connections currently operating on the specified database ID.
    * CAPA <capa>
      Kill connections currently with the specified capa.
    * IP <ip>
      Kill connections made from the specified ip.
LIST [options ...]
    Return information about client connections. Options:
    * TYPE (NORMAL|PRIMARY|REPLICA|PUBSUB)
      Return clients of specified type.
    * USER <username>
      Return clients authenticated by <username>.
    * ADDR <ip:port>
      Return clients connected from the specified address.
    * LADDR <ip:port>
      Return clients connected to the specified local address.
    * ID <client-id> [<client-id>...]
      Return clients with the specified IDs.
    * SKIPME (YES|NO)
      Exclude the current client from the list (default: no).
    * MAXAGE <maxage>
      List connections older than the specified age.
    * FLAGS <flags>
      Return clients with the specified flags.
    * NAME <client-name>
      Return clients with the specified name.
    * IDLE <idle>
      Return clients with idle time greater than or equal to <idle> seconds.
    * LIB-NAME <lib-name>
      Return clients with the specified lib name.
    * LIB-VER <lib-version>
      Return clients with the specified lib version.
    * DB <db-id>
      Return clients currently operating on the specified database ID.
    * CAPA <capa>
      Return connections currently with the specified capa.
    * IP <ip>
      Return connections made from the specified ip.
UNPAUSE
    Stop the current client pause, resuming traffic.
PAUSE <timeout> [WRITE|ALL]
    Suspend all, or just write, clients for <timeout> milliseconds.
REPLY (ON|OFF|SKIP)
    Control the replies sent to the current connection.
SETNAME <name>
    Assign the name <name> to the current connection.
SETINFO <option> <value>
    Set client meta attr. Options are:
    * LIB-NAME: the client lib name.
    * LIB-VER: the client lib version.
UNBLOCK <clientid> [TIMEOUT|ERROR]
    Unblock the specified blocked client.
TRACKING (ON|OFF) [REDIRECT <id>] [BCAST] [PREFIX <prefix> [...]]
         [OPTIN] [OPTOUT] [NOLOOP]
    Control server assisted client side caching.
TRACKINGINFO
    Report tracking status for the current connection.
NO-EVICT (ON|OFF)
    Protect current client connection from eviction.
NO-TOUCH (ON|OFF)
    Will not touch LRU/LFU stats when this mode is on.
IMPORT-SOURCE (ON|OFF)
    Mark this connection as an import source if import-mode is enabled.
    Sync tools can set their connections into 'import-source' state to visit
    expired keys.
HELP
    Print this help.""".splitlines()


# --- names and attributes ---------------------------------------------------------------


def printable(value: bytes) -> bool:
    """Valkey's rule for names and library attributes: visible ASCII, no spaces."""
    return all(33 <= ch <= 126 for ch in value)


def validate_name(name: bytes) -> None:
    """CLIENT SETNAME / HELLO SETNAME: raise Valkey's error for an unusable name."""
    if not printable(name):
        raise ReplyError("ERR Client names cannot contain spaces, newlines or special characters.")


@command("client|id", 2, BASIC, acl="connection", since="5.0.0",
         summary="Answers the connection's unique id.")
def client_id(c: Client, argv: list[bytes]) -> Any:
    return c.id


@command("client|getname", 2, BASIC, acl="connection", since="2.6.9",
         summary="Answers the connection's name, or null when it has none.")
def client_getname(c: Client, argv: list[bytes]) -> Any:
    return c.name or None


@command("client|setname", 3, BASIC, acl="connection", since="2.6.9", tips=ALL_NODES,
         summary="Names the connection (an empty name removes it).")
def client_setname(c: Client, argv: list[bytes]) -> Any:
    validate_name(argv[2])
    c.name = argv[2]
    return OK


@command("client|setinfo", 4, BASIC, acl="connection", since="7.2.0", tips=ALL_NODES,
         summary="Records the client library's name or version for CLIENT LIST.")
def client_setinfo(c: Client, argv: list[bytes]) -> Any:
    option = argv[2].lower()
    if option not in (b"lib-name", b"lib-ver"):
        raise ReplyError(f"ERR Unrecognized option '{argv[2].decode('utf-8', 'replace')}'")
    if not printable(argv[3]):
        raise ReplyError(
            f"ERR {option.decode()} cannot contain spaces, newlines or special characters."
        )
    if option == b"lib-name":
        c.lib_name = argv[3]
    else:
        c.lib_ver = argv[3]
    return OK


@command("client|capa", -3, BASIC, acl="connection", since="8.0.0",
         summary="Declares the capabilities the client handles (REDIRECT).")
def client_capa(c: Client, argv: list[bytes]) -> Any:
    if any(arg.lower() == b"redirect" for arg in argv[2:]):
        c.capa = "r"  # unknown capabilities are ignored, as Valkey does
    return OK


def parse_on_off(raw: bytes) -> bool:
    word = raw.lower()
    if word not in (b"on", b"off"):
        raise SYNTAX
    return word == b"on"


@command("client|no-evict", 3, ADMIN + " allow_busy", acl="connection dangerous", since="7.0.0",
         summary="Exempts the connection from client eviction, or not.")
def client_no_evict(c: Client, argv: list[bytes]) -> Any:
    c.no_evict = parse_on_off(argv[2])
    return OK


@command("client|no-touch", 3, BASIC, acl="connection", since="7.2.0",
         summary="Makes the connection's reads leave the keys' access times alone, or not.")
def client_no_touch(c: Client, argv: list[bytes]) -> Any:
    # ServerState.run_command sets state.touch_keys from this flag before each command
    c.no_touch = parse_on_off(argv[2])
    return OK


@command("client|reply", 3, "noscript loading stale no_multi allow_busy", acl="connection",
         since="3.2.0", summary="Turns the server's replies to this connection on, off, or "
         "off for the next command only.")
def client_reply(c: Client, argv: list[bytes]) -> Any:
    mode = argv[2].lower()
    if mode == b"on":
        c.reply_mode = "on"
        return OK
    if mode in (b"off", b"skip"):
        # no reply to this command; the connection skips the next one's in "skip" mode
        c.reply_mode = mode.decode()
        return NO_REPLY
    raise SYNTAX


@command("client|help", 2, "loading stale", acl="connection", since="5.0.0",
         summary="Describes the CLIENT subcommands.")
def client_help(c: Client, argv: list[bytes]) -> Any:
    return help_lines(CLIENT_HELP)


# --- CLIENT LIST / INFO -------------------------------------------------------------------

def client_type(client: Client) -> str:
    """replica (a real replica's link: persistence/replication_primary.py), pubsub or normal."""
    primary = client.state.repl_primary
    if primary is not None and primary.is_replica(client):
        return "replica"
    return "pubsub" if client.subscriptions or client.shard_channels else "normal"


def list_flags(client: Client) -> str:
    """CLIENT LIST's flags; a replica's link starts with S, as Valkey's."""
    flags = client.flags()
    if client_type(client) == "replica":
        return "S" + (flags if flags != "N" else "")
    return flags


def queue_slots_memory(queued: int) -> int:
    """The MULTI queue's array: 2 slots of 32 bytes for the first command, doubled when
    full (Valkey's multiCmd array, counted in tot-mem)."""
    slots = 0 if not queued else max(2, 1 << (queued - 1).bit_length())
    return 32 * slots


def output_figures(client: Client) -> tuple[int, int, int]:
    """obl, oll and omem: the output the client has not taken, as Valkey buffers it
    (fakekey/core/outbuf.py)."""
    connection = client.connection
    return (0, 0, 0) if connection is None else connection.output_figures()


def pending_arguments(client: Client) -> tuple[int, int]:
    """The bytes and count of the arguments read so far of a request not yet whole (Valkey
    keeps them in the client's argv: argv-mem)."""
    parser = client.parser
    if not parser.remaining:
        return 0, 0
    return sum(map(len, parser.argv)), len(parser.argv)


def client_memory(client: Client, omem: int, argv_mem: int = 0, argc: int = 0) -> int:
    """getClientMemoryUsage (tot-mem): the client struct, its static reply buffer, its
    output (omem), query buffer, running command's arguments, MULTI queue and
    subscription tables."""
    connection = client.connection
    queued = len(client.queued_commands())
    if not argc:
        argv_mem, argc = pending_arguments(client)
    return (CLIENT_STRUCT + (STATIC_BUFFER if connection is None else connection.buf_size)
            + omem + client.parser.buffered() + argv_mem + 8 * argc
            + client.multi_memory() + queue_slots_memory(queued)
            + pubsub_memory(len(client.channels), len(client.patterns), len(client.shard_channels)))


def clients_memory(clients: list[Client]) -> int:
    """INFO mem_clients_normal, MEMORY STATS clients.normal: every client's tot-mem as
    Valkey's cron counts it (no command running)."""
    return sum(client_memory(client, output_figures(client)[2]) for client in clients)


def clients_memory_split(state: ServerState) -> tuple[int, int, list[tuple[int, Client]]]:
    """The normal and pub/sub clients' memory, the replicas' links', and each client that
    client eviction may close (not a replica, not the primary's link, not CLIENT
    NO-EVICT), with its memory."""
    counted = replicas = 0
    evictable: list[tuple[int, Client]] = []
    upstream = state.upstream
    primary_link = upstream.client if upstream is not None else None
    for client in list(state.clients.values()):
        size = client_memory(client, output_figures(client)[2])
        if client_type(client) == "replica":
            replicas += size
            continue
        counted += size
        if not client.no_evict and client is not primary_link and client.connection is not None:
            evictable.append((size, client))
    return counted, replicas, evictable


def client_line(client: Client, argv_mem: int = 0, argc: int = 0) -> str:
    """One CLIENT LIST line, with every field Valkey 9.1 prints, in its order."""
    now = client.state.now
    if not argc:  # not the caller: a request it has only in part
        argv_mem, argc = pending_arguments(client)
    queued = len(client.queued_commands())
    multi_mem = client.multi_memory()
    qbuf = client.parser.buffered()
    connection = client.connection
    obl, oll, omem = output_figures(client)
    rbs, rbp = (STATIC_BUFFER, STATIC_BUFFER) if connection is None else (connection.buf_size, connection.buf_peak)
    unsent = 0 if connection is None else connection.output_backlog()
    fields = (
        ("id", client.id),
        ("addr", client.addr),
        ("laddr", client.laddr),
        ("fd", client.fd),
        ("name", client.name.decode("utf-8", "replace")),
        ("age", max(0, now - client.created_ms) // 1000),
        ("idle", max(0, now - client.last_interaction_ms) // 1000),
        ("flags", list_flags(client)),
        ("capa", client.capa),
        ("db", client.db.index),
        ("sub", len(client.channels)),
        ("psub", len(client.patterns)),
        ("ssub", len(client.shard_channels)),
        ("multi", queued if client.has_multi_state else -1),
        ("watch", len(client.watching)),
        ("qbuf", qbuf),
        ("qbuf-free", 0),
        ("argv-mem", argv_mem),
        ("multi-mem", multi_mem),
        ("rbs", rbs),
        ("rbp", rbp),
        ("obl", obl),
        ("oll", oll),
        ("omem", omem),
        ("tot-mem", client_memory(client, omem, argv_mem, argc)),
        ("events", "rw" if unsent else "r"),  # a write handler waits for the socket
        ("cmd", client.last_command),
        ("user", client.user),
        ("redir", tracking_redirect(client)),
        ("resp", client.protocol),
        ("lib-name", client.lib_name.decode("utf-8", "replace")),
        ("lib-ver", client.lib_ver.decode("utf-8", "replace")),
        ("tot-net-in", client.net_in),
        ("tot-net-out", client.net_out - unsent),  # what the socket took
        ("tot-cmds", client.total_commands),
    )
    return " ".join(f"{name}={value}" for name, value in fields) + "\n"


def lines_for(c: Client, clients: list[Client], argv: list[bytes]) -> Verbatim:
    """The lines of `clients` (the caller's own shows its current arguments' size)."""
    own = sum(len(arg) for arg in argv)
    text = "".join(client_line(cl, own, len(argv)) if cl is c else client_line(cl) for cl in clients)
    return Verbatim(text.encode("utf-8", "surrogateescape"))


@command("client|info", 2, "noscript loading stale", acl="connection", since="6.2.0",
         tips="nondeterministic_output", summary="Describes this connection as one CLIENT "
         "LIST line.")
def client_info(c: Client, argv: list[bytes]) -> Any:
    return lines_for(c, [c], argv)


@command("client|list", -2, ADMIN, acl="connection dangerous", since="2.4.0",
         tips="nondeterministic_output", complexity="O(N) where N is the number of client "
         "connections", summary="Describes the connections, optionally filtered.")
def client_list(c: Client, argv: list[bytes]) -> Any:
    selector = parse_filters(c, argv[2:], skipme=False)
    clients = sorted(c.state.clients.values(), key=lambda cl: cl.id)
    return lines_for(c, [cl for cl in clients if selector.matches(cl, c)], argv)


# --- filters (CLIENT LIST and CLIENT KILL share them) ------------------------------------

Predicate = Callable[[Client], bool]
CLIENT_TYPES = {
    b"normal": "normal", b"pubsub": "pubsub", b"master": "master", b"primary": "master",
    b"slave": "replica", b"replica": "replica",
}
KNOWN_FLAGS = set("AbBcdeIMNOPrRSTtuUx")
KNOWN_CAPA = set("r")


@dataclass
class Selector:
    """The filters of one CLIENT LIST/KILL: every predicate must hold."""

    skipme: bool
    predicates: list[Predicate] = field(default_factory=list)

    def matches(self, client: Client, caller: Client) -> bool:
        if self.skipme and client is caller:
            return False
        return all(test(client) for test in self.predicates)


def parse_positive(raw: bytes, what: str) -> int:
    value = try_int(raw)
    if value is None:
        raise ReplyError(f"ERR {what} is not an integer or out of range")
    if value <= 0:
        raise ReplyError(f"ERR {what} should be greater than 0")
    return value


def user_exists(c: Client, name: bytes) -> bool:
    acl = getattr(c.state, "acl", None)
    users = getattr(acl, "users", None)
    if users is None:
        return name == b"default"
    return name.decode("utf-8", "replace") in users or name in users


def parse_ids(args: list[bytes], i: int) -> tuple[set[int], int]:
    """ID id [id ...]: the ids that follow, up to the first non-integer."""
    ids: set[int] = set()
    while i < len(args) and (value := try_int(args[i])) is not None:
        if value <= 0:
            raise ReplyError("ERR client-id should be greater than 0")
        ids.add(value)
        i += 1
    if not ids:
        raise SYNTAX
    return ids, i


def value_test(c: Client, option: bytes, raw: bytes, negated: bool) -> Predicate:
    """The predicate of one single-valued filter, with Valkey's checks and errors."""
    text = raw.decode("utf-8", "surrogateescape")
    where = "the NOT-" + option.upper().decode() + " filter" if negated else "the provided filter"
    if option == b"type":
        kind = CLIENT_TYPES.get(raw.lower())
        if kind is None:
            raise ReplyError(f"ERR Unknown client type '{text}'")
        return lambda cl: client_type(cl) == kind
    if option == b"user":
        if not user_exists(c, raw):
            raise ReplyError(f"ERR No such user '{text}'")
        return lambda cl: cl.user == text
    if option == b"addr":
        return lambda cl: cl.addr == text
    if option == b"laddr":
        return lambda cl: cl.laddr == text
    if option == b"ip":
        return lambda cl: cl.addr.rsplit(":", 1)[0] == text
    if option == b"name":
        return lambda cl: bool(cl.name) and cl.name == raw
    if option == b"lib-name":
        return lambda cl: bool(cl.lib_name) and cl.lib_name == raw
    if option == b"lib-ver":
        return lambda cl: bool(cl.lib_ver) and cl.lib_ver == raw
    if option == b"flags":
        if not set(text) <= KNOWN_FLAGS:
            raise ReplyError(f"ERR Unknown flags found in {where}: {text}")
        return lambda cl: set(text) <= set(cl.flags())
    if option == b"capa":
        if not set(text) <= KNOWN_CAPA:
            raise ReplyError(f"ERR Unknown capa found in {where}: {text}")
        return lambda cl: set(text) <= set(getattr(cl, "capa", ""))
    if option == b"db":
        index = try_int(raw)
        if index is None:
            raise ReplyError("ERR DB is not an integer or out of range")
        if not 0 <= index < len(c.state.dbs):
            raise ReplyError(f"ERR DB number should be between 0 and {len(c.state.dbs) - 1}")
        return lambda cl: cl.db.index == index
    if option in (b"maxage", b"idle") and not negated:
        seconds = parse_positive(raw, option.decode())
        if option == b"maxage":
            return lambda cl: (cl.state.now - cl.created_ms) // 1000 >= seconds
        return lambda cl: (cl.state.now - cl.last_interaction_ms) // 1000 >= seconds
    raise SYNTAX


def _id_in(ids: set[int]) -> Predicate:
    return lambda cl: cl.id in ids


def _negation(test: Predicate) -> Predicate:
    return lambda cl: not test(cl)


_NEGATABLE = {b"id", b"type", b"user", b"addr", b"laddr", b"flags", b"ip", b"lib-name",
              b"lib-ver", b"db", b"capa", b"name"}


def parse_filters(c: Client, args: list[bytes], skipme: bool) -> Selector:
    """Option/value pairs (ID takes several values) into a Selector. As Valkey, each filter
    (and each NOT- filter) holds one value, the last one given, every one still checked;
    the ids of repeated ID (or NOT-ID) filters add up."""
    selector = Selector(skipme)
    tests: dict[tuple[bool, bytes], Predicate] = {}
    ids: dict[bool, set[int]] = {}
    i = 0
    while i < len(args):
        option = args[i].lower()
        negated = option.startswith(b"not-") and option[4:] in _NEGATABLE
        if negated:
            option = option[4:]
        if i + 1 >= len(args):
            raise SYNTAX
        if option == b"id":
            more, i = parse_ids(args, i + 1)
            ids.setdefault(negated, set()).update(more)
            tests[(negated, option)] = _id_in(ids[negated])
        elif option == b"skipme" and not negated:
            answer = args[i + 1].lower()
            if answer not in (b"yes", b"no"):
                raise SYNTAX
            selector.skipme = answer == b"yes"
            i += 2
        else:
            tests[(negated, option)] = value_test(c, option, args[i + 1], negated)
            i += 2
    selector.predicates = [_negation(test) if negated else test
                           for (negated, _), test in tests.items()]
    return selector


# --- CLIENT KILL --------------------------------------------------------------------------


def kill(c: Client, victim: Client) -> None:
    """Close a client's connection; the caller itself is closed after its reply."""
    victim.killed = True
    if victim is not c and victim.connection is not None:
        victim.connection.close()


@command("client|kill", -3, ADMIN, acl="connection dangerous", since="2.4.0",
         complexity="O(N) where N is the number of client connections",
         summary="Closes the connections chosen by address or by filters.")
def client_kill(c: Client, argv: list[bytes]) -> Any:
    clients = sorted(c.state.clients.values(), key=lambda cl: cl.id)
    if len(argv) == 3:  # the old form: one address, the caller included
        addr = argv[2].decode("utf-8", "surrogateescape")
        victims = [cl for cl in clients if cl.addr == addr]
        if not victims:
            raise ReplyError("ERR No such client")
        for victim in victims:
            kill(c, victim)
        return OK
    selector = parse_filters(c, argv[2:], skipme=True)
    victims = [cl for cl in clients if selector.matches(cl, c)]
    for victim in victims:
        kill(c, victim)
    return len(victims)


@command("client|unblock", -3, ADMIN, acl="connection dangerous", since="5.0.0",
         complexity="O(log N) where N is the number of client connections",
         summary="Ends another connection's blocking command, as a timeout or an error.")
def client_unblock(c: Client, argv: list[bytes]) -> Any:
    client_id = parse_int(argv[2])
    reply: Any = None  # the waiter's own timeout reply
    if len(argv) == 4:
        how = argv[3].upper()
        if how == b"ERROR":
            reply = UNBLOCKED_ERROR
        elif how != b"TIMEOUT":
            raise ReplyError("ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR")
    target = c.state.clients.get(client_id)
    if target is None or target.blocked is None or not target.blocked.active:
        return 0  # not blocked (a long reply it is being sent is no wait)
    return int(c.state.blocking.unblock(target, reply))


# --- CLIENT PAUSE / UNPAUSE (the pause itself: fakekey/core/pause.py) ---------------------------

PAUSE_MODES = {b"write": False, b"all": True}  # -> holds back everything


@command("client|pause", -3, ADMIN, acl="connection dangerous", since="3.0.0",
         summary="Holds back other clients' commands (all, or those that write) for a while.")
def client_pause(c: Client, argv: list[bytes]) -> Any:
    everything = True
    if len(argv) == 4:  # Valkey reads the mode only from a 4-argument request
        mode = PAUSE_MODES.get(argv[3].lower())
        if mode is None:
            raise ReplyError("ERR CLIENT PAUSE mode must be WRITE or ALL")
        everything = mode
    timeout = try_int(argv[2])
    if timeout is None:
        raise ReplyError("ERR timeout is not an integer or out of range")
    if timeout < 0:
        raise ReplyError("ERR timeout is negative")
    if timeout > 0 and timeout > (1 << 63) - 1 - c.state.now:
        raise ReplyError("ERR timeout is out of range")
    start_pause(c.state, timeout, everything)
    return OK


@command("client|unpause", 2, ADMIN, acl="connection dangerous", since="6.2.0",
         complexity="O(N) Where N is the number of paused clients",
         summary="Ends a CLIENT PAUSE: the held-back commands run.")
def client_unpause(c: Client, argv: list[bytes]) -> Any:
    end_pause(c.state)
    return OK


@command("client|import-source", 3, "noscript loading stale", acl="connection", since="8.1.0",
         summary="Marks the connection as an import source (only with import-mode yes).")
def client_import_source(c: Client, argv: list[bytes]) -> Any:
    switch = argv[2].lower()
    if switch == b"off":
        c.import_source = False
        return OK
    if not c.state.config["import-mode"]:
        raise ReplyError("ERR Server is not in import mode")
    if switch != b"on":
        raise SYNTAX
    c.import_source = True
    return OK


# --- client-side caching (the table and the messages: fakekey/core/tracking.py) ------------------

TRACKING_OPTIONS = {b"bcast": "bcast", b"optin": "optin", b"optout": "optout", b"noloop": "noloop"}
SWITCH_BCAST = ("ERR You can't switch BCAST mode on/off before disabling tracking for this "
                "client, and then re-enabling it with a different mode.")
SWITCH_OPTIN = ("ERR You can't switch OPTIN/OPTOUT mode before disabling tracking for this "
                "client, and then re-enabling it with a different mode.")


def parse_tracking_options(c: Client, argv: list[bytes]) -> tuple[int, set[str], list[bytes]]:
    """CLIENT TRACKING's options after on|off, in Valkey's order of checks: the redirect
    target must exist now (it may leave later)."""
    redirect = 0
    options: set[str] = set()
    prefixes: list[bytes] = []
    i = 3
    while i < len(argv):
        word = argv[i].lower()
        more = i + 1 < len(argv)
        if word == b"redirect" and more:
            i += 1
            if redirect:
                raise ReplyError("ERR A client can only redirect to a single other client")
            redirect = parse_int(argv[i])
            if redirect not in c.state.clients:
                raise ReplyError("ERR The client ID you want redirect to does not exist")
        elif word in TRACKING_OPTIONS:
            options.add(TRACKING_OPTIONS[word])
        elif word == b"prefix" and more:
            i += 1
            prefixes.append(argv[i])
        else:
            raise SYNTAX
        i += 1
    return redirect, options, prefixes


def check_tracking_on(c: Client, options: set[str], prefixes: list[bytes]) -> None:
    """The options of CLIENT TRACKING on, among themselves and against the current mode."""
    if "bcast" not in options and prefixes:
        raise ReplyError("ERR PREFIX option requires BCAST mode to be enabled")
    t = c.tracking
    if t is not None and t.bcast != ("bcast" in options):
        raise ReplyError(SWITCH_BCAST)
    if "bcast" in options and options & {"optin", "optout"}:
        raise ReplyError("ERR OPTIN and OPTOUT are not compatible with BCAST")
    if {"optin", "optout"} <= options:
        raise ReplyError("ERR You can't specify both OPTIN mode and OPTOUT mode")
    if t is not None and (("optin" in options and t.optout) or ("optout" in options and t.optin)):
        raise ReplyError(SWITCH_OPTIN)
    if "bcast" in options:
        check_prefix_overlaps(t.prefixes if t is not None else set(), prefixes)


def overlap(a: bytes, b: bytes) -> bool:
    """Two prefixes overlap when one starts the other (one key would match both)."""
    return a.startswith(b) or b.startswith(a)


def check_prefix_overlaps(existing: set[bytes], prefixes: list[bytes]) -> None:
    """Valkey checks each new prefix in turn against the client's prefixes (in byte
    order), then against the new ones after it, and names the first overlap it meets.
    The same answer, found in O(n log n) rather than Valkey's pairwise scan, so a request
    with many prefixes cannot hold the server."""
    clash = first_overlap_with(existing, prefixes)
    pair = first_overlapping_pair(prefixes)
    if clash is not None and (pair is None or clash[0] <= pair[0]):
        i, old = clash
        raise ReplyError(
            b"ERR Prefix '" + prefixes[i] + b"' overlaps with an existing prefix '" + old
            + b"'. Prefixes for a single client must not overlap."
        )
    if pair is not None:
        i, j = pair
        raise ReplyError(
            b"ERR Prefix '" + prefixes[i] + b"' overlaps with another provided prefix '"
            + prefixes[j] + b"'. Prefixes for a single client must not overlap."
        )


def first_overlap_with(existing: set[bytes], prefixes: list[bytes]) -> tuple[int, bytes] | None:
    """The first new prefix overlapping a current one, with the first current one (in byte
    order) it overlaps. The current ones never overlap each other, except the empty prefix
    a bare BCAST adds unchecked: it overlaps everything and sorts first."""
    if not existing or not prefixes:
        return None
    if b"" in existing:
        return 0, b""
    ordered = sorted(existing)
    for i, prefix in enumerate(prefixes):
        at = bisect_left(ordered, prefix)
        if at and prefix.startswith(ordered[at - 1]):  # the one current prefix it extends
            return i, ordered[at - 1]
        if at < len(ordered) and ordered[at].startswith(prefix):
            return i, ordered[at]
    return None


def first_overlapping_pair(prefixes: list[bytes]) -> tuple[int, int] | None:
    """(i, j): the first prefix overlapping a later one, and the first such later one.

    Every overlap is a prefix and a longer string starting with it (or twice the same
    string), and in byte order a string's own prefixes are the chain still open when it
    comes: one pass with a stack finds the smallest index in any overlapping pair."""
    first: dict[bytes, int] = {}
    best: int | None = None
    for i, prefix in enumerate(prefixes):
        if prefix in first:
            best = first[prefix] if best is None else min(best, first[prefix])
        else:
            first[prefix] = i
    chain: list[tuple[bytes, int]] = []  # (prefix, lowest first index along the chain)
    for prefix in sorted(first):
        while chain and not prefix.startswith(chain[-1][0]):
            chain.pop()
        low = first[prefix]
        if chain:
            low = min(low, chain[-1][1])
            best = low if best is None else min(best, low)
        chain.append((prefix, low))
    if best is None:
        return None
    later = next(j for j in range(best + 1, len(prefixes)) if overlap(prefixes[best], prefixes[j]))
    return best, later


@command("client|tracking", -3, "noscript loading stale", acl="connection", since="6.0.0",
         complexity="O(1). Some options may introduce additional complexity.",
         summary="Turns server-assisted client-side caching on or off for the connection.")
def client_tracking(c: Client, argv: list[bytes]) -> Any:
    redirect, options, prefixes = parse_tracking_options(c, argv)
    status = argv[2].lower()
    table = c.state.tracking_table
    if status == b"on":
        check_tracking_on(c, options, prefixes)
        table.enable(c, redirect, "bcast" in options, "optin" in options, "optout" in options,
                     "noloop" in options, prefixes)
    elif status == b"off":
        table.disable(c)
    else:
        raise SYNTAX
    return OK


@command("client|caching", 3, "noscript loading stale allow_busy", acl="connection",
         since="6.0.0", summary="Says whether the keys of the next request are tracked "
         "(OPTIN and OPTOUT modes).")
def client_caching(c: Client, argv: list[bytes]) -> Any:
    t = c.tracking
    if t is None:
        raise ReplyError("ERR CLIENT CACHING can be called only when the client is in tracking "
                         "mode with OPTIN or OPTOUT mode enabled")
    answer = argv[2].lower()
    if answer == b"yes":
        if not t.optin:
            raise ReplyError("ERR CLIENT CACHING YES is only valid when tracking is enabled in "
                             "OPTIN mode.")
    elif answer == b"no":
        if not t.optout:
            raise ReplyError("ERR CLIENT CACHING NO is only valid when tracking is enabled in "
                             "OPTOUT mode.")
    else:
        raise SYNTAX
    t.caching = True  # ServerState.run_command's tracking hook clears it after the next request
    return OK


@command("client|getredir", 2, "noscript loading stale allow_busy", acl="connection",
         since="6.0.0", summary="Answers the id invalidations are redirected to (0: none, "
         "-1: tracking is off).")
def client_getredir(c: Client, argv: list[bytes]) -> Any:
    return tracking_redirect(c)


def tracking_redirect(c: Client) -> int:
    """CLIENT GETREDIR, TRACKINGINFO's redirect and CLIENT LIST's redir."""
    return -1 if c.tracking is None else c.tracking.redirect


@command("client|trackinginfo", 2, "noscript loading stale", acl="connection", since="6.2.0",
         summary="Describes the connection's client-side caching state.")
def client_trackinginfo(c: Client, argv: list[bytes]) -> Any:
    t = c.tracking
    flags = [b"off"] if t is None else [b"on", *t.flag_names()]
    prefixes = sorted(t.prefixes) if t is not None else []
    return {b"flags": SetReply(flags), b"redirect": tracking_redirect(c), b"prefixes": prefixes}
