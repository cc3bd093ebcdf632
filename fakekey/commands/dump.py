"""DUMP, RESTORE, RESTORE-ASKING and MIGRATE: values in Valkey's serialization format
(`fakekey.persistence.rdb`), and the synchronous transfer of keys to another server."""

from __future__ import annotations

import dataclasses
import random
import socket
from typing import TYPE_CHECKING, Any

import fakekey.memory.lfu as lfu
from fakekey.commands.args import LLONG_MAX, SYNTAX, parse_int, try_int
from fakekey.commands.keys import KEYSPACE, lfu_policy, notify
from fakekey.core.client import Client
from fakekey.core.keyspace import STRING_TYPES
from fakekey.core.registry import command, keys_keyword, keys_range
from fakekey.persistence import rdb
from fakekey.resp.parser import RequestParser
from fakekey.resp.replies import OK, ReplyError, Simple

if TYPE_CHECKING:
    from fakekey.core.state import ServerState

G = "generic"
BUSYKEY = ReplyError("BUSYKEY Target key name already exists.")
BAD_PAYLOAD = ReplyError("ERR DUMP payload version or checksum are wrong")
BAD_FORMAT = ReplyError("ERR Bad data format")
BAD_TTL = ReplyError("ERR Invalid TTL value, must be >= 0")
BAD_IDLETIME = ReplyError("ERR Invalid IDLETIME value, must be >= 0")
BAD_FREQ = ReplyError("ERR Invalid FREQ value, must be >= 0 and <= 255")
KEYS_NEED_EMPTY_KEY = ReplyError(
    "ERR When using MIGRATE KEYS option, the key argument must be set to the empty string"
)
RESTORE_COMPLEXITY = (
    "O(1) to create the new key and additional O(N*M) to reconstruct the serialized value, "
    "where N is the number of objects composing the value and M their average size. For "
    "small string values the time complexity is thus O(1)+O(1*M) where M is small, so "
    "simply O(1). However for sorted set values the complexity is O(N*M*log(N)) because "
    "inserting values into sorted sets is O(log(N))."
)


def limits_of(c: Client) -> rdb.Limits:
    limits = rdb.Limits.of(c.state.config)
    if c.state.debug_knobs.get("set-skip-checksum-validation"):
        limits = dataclasses.replace(limits, skip_checksum=True)
    return limits


def dump_value(c: Client, value: Any) -> bytes:
    if isinstance(value, STRING_TYPES):
        value = bytes(value)
    return rdb.dump(value, limits_of(c))


@command("dump", 2, "readonly", keys=keys_range(1, flags="RO access"), acl=KEYSPACE, group=G,
         since="2.6.0", tips="nondeterministic_output",
         complexity="O(1) to access the key and additional O(N*M) to serialize it, where N is "
         "the number of objects composing the value and M their average size. For small "
         "string values the time complexity is thus O(1)+O(1*M) where M is small, so simply "
         "O(1).",
         summary="Serializes a key's value in Valkey's DUMP format.")
def dump(c: Client, argv: list[bytes]) -> Any:
    value = c.db.lookup(argv[1])
    if value is None:
        return None
    return dump_value(c, value)


def _restore_options(argv: list[bytes]) -> tuple[bool, bool, int | None, int | None]:
    """(replace, absttl, idle seconds, frequency), checked in Valkey's order."""
    replace = absttl = False
    idle: int | None = None
    freq: int | None = None
    i = 4
    while i < len(argv):
        opt = argv[i].lower()
        more = len(argv) - i - 1
        if opt == b"replace":
            replace = True
        elif opt == b"absttl":
            absttl = True
        elif opt == b"idletime" and more >= 1 and freq is None:
            idle = parse_int(argv[i + 1])
            if idle < 0:
                raise BAD_IDLETIME
            i += 1
        elif opt == b"freq" and more >= 1 and idle is None:
            freq = parse_int(argv[i + 1])
            if not 0 <= freq <= 255:
                raise BAD_FREQ
            i += 1
        else:
            raise SYNTAX
        i += 1
    return replace, absttl, idle, freq


def restore_command(c: Client, argv: list[bytes]) -> Any:
    replace, absttl, idle, freq = _restore_options(argv)
    db = c.db
    key = argv[1]
    if not replace and db.lookup(key) is not None:
        raise BUSYKEY
    ttl = parse_int(argv[2])
    if ttl < 0:
        raise BAD_TTL
    limits = limits_of(c)
    try:
        value = rdb.restore(argv[3], limits)
    except rdb.PayloadError:
        raise BAD_PAYLOAD from None
    except rdb.ForeignTypeError as err:
        raise ReplyError(f"ERR Unsupported foreign data type: {err.rdb_type}") from None
    except rdb.FormatError:
        raise BAD_FORMAT from None
    deleted = db.delete(key, event=None) if replace else False
    now = c.state.now
    if ttl and not absttl:
        ttl += now
        if ttl > LLONG_MAX:  # Valkey's addition wraps, and the key is then already expired
            ttl -= 1 << 64
    if ttl and ttl <= now:
        if deleted:
            notify(db, "del", key)
        return OK
    db.set_value(key, value, event=None)
    if ttl:
        db.set_expire(key, ttl)
    if idle is not None and not lfu_policy(c):
        db.access[key] = now - idle * 1000
    if freq is not None and c.state.lfu_on:  # objectSetLRUOrLFU: the counter, stamped now
        db.lfu[key] = lfu.minutes(now) << 8 | freq
    notify(db, "restore", key)
    return OK


@command("restore", -4, "write denyoom", keys=keys_range(1, flags="OW update"),
         acl=f"{KEYSPACE} dangerous", group=G, since="2.6.0", complexity=RESTORE_COMPLEXITY,
         summary="Creates a key from a DUMP payload (REPLACE, ABSTTL, IDLETIME, FREQ).")
def restore(c: Client, argv: list[bytes]) -> Any:
    return restore_command(c, argv)


@command("restore-asking", -4, "write denyoom asking", keys=keys_range(1, flags="OW update"),
         acl=f"{KEYSPACE} dangerous", group="server", since="3.0.0",
         complexity=RESTORE_COMPLEXITY, doc_flags="syscmd",
         summary="RESTORE as sent by a cluster migration; outside a cluster, the same as RESTORE.")
def restore_asking(c: Client, argv: list[bytes]) -> Any:
    return restore_command(c, argv)


# --- MIGRATE ---------------------------------------------------------------------------------

_SKIP_AFTER = {b"copy": 0, b"replace": 0, b"auth": 1, b"auth2": 2}


def migrate_keys(argv: list[bytes]) -> list[int]:
    """migrateGetKeys: the key argument, or the keys after KEYS (skipping AUTH's values)."""
    i = 6
    while i < len(argv):
        word = argv[i].lower()
        if word == b"keys":
            if argv[3]:
                return []
            return list(range(i + 1, len(argv)))
        i += _SKIP_AFTER.get(word, 0) + 1
    return [3]


class _Options:
    __slots__ = ("copy", "replace", "username", "password", "first_key")

    def __init__(self) -> None:
        self.copy = self.replace = False
        self.username: bytes | None = None
        self.password: bytes | None = None
        self.first_key = 3


def _migrate_options(argv: list[bytes]) -> _Options:
    opts = _Options()
    i = 6
    while i < len(argv):
        word = argv[i].lower()
        more = len(argv) - 1 - i
        if word == b"copy":
            opts.copy = True
        elif word == b"replace":
            opts.replace = True
        elif word == b"auth":
            if not more:
                raise SYNTAX
            i += 1
            opts.password = argv[i]
        elif word == b"auth2":
            if more < 2:
                raise SYNTAX
            opts.username, opts.password = argv[i + 1], argv[i + 2]
            i += 2
        elif word == b"keys":
            if argv[3]:
                raise KEYS_NEED_EMPTY_KEY
            opts.first_key = i + 1
            break
        else:
            raise SYNTAX
        i += 1
    return opts


def _bulk_command(*parts: bytes) -> bytes:
    out = [b"*%d\r\n" % len(parts)]
    for part in parts:
        out.append(b"$%d\r\n%s\r\n" % (len(part), part))
    return b"".join(out)


class _IOError(Exception):
    def __init__(self, writing: bool, timed_out: bool = False) -> None:
        super().__init__(writing)
        self.writing = writing
        self.timed_out = timed_out
        self.replied = False  # some RESTORE was answered before the failure


def _io_reply(writing: bool) -> ReplyError:
    verb = "writing" if writing else "reading"
    return ReplyError(f"IOERR error or timeout {verb} to target instance")


class _Link:
    """A blocking connection to a target, kept for reuse as Valkey's MIGRATE keeps its
    sockets (up to 64, closed after 10 s unused), with the database last selected."""

    def __init__(self, host: bytes, port: bytes, timeout_ms: int) -> None:
        self.timeout = timeout_ms / 1000
        self.buffer = b""
        self.last_db = -1
        self.last_use = 0
        try:
            number = int(port)
            self.sock = socket.create_connection((host.decode("latin-1"), number), self.timeout)
        except (OSError, ValueError, OverflowError, UnicodeError):
            raise _IOError(writing=True) from None

    def send(self, data: bytes) -> None:
        try:
            self.sock.settimeout(self.timeout)
            for start in range(0, len(data), 64 * 1024):
                self.sock.sendall(data[start : start + 64 * 1024])
        except TimeoutError:
            raise _IOError(writing=True, timed_out=True) from None
        except OSError:
            raise _IOError(writing=True) from None

    def read_line(self) -> bytes:
        """One reply line without CRLF (connSyncReadLine)."""
        while b"\n" not in self.buffer:
            try:
                chunk = self.sock.recv(4096)
            except TimeoutError:
                raise _IOError(writing=False, timed_out=True) from None
            except OSError:
                raise _IOError(writing=False) from None
            if not chunk:
                raise _IOError(writing=False)
            self.buffer += chunk
        line, _, self.buffer = self.buffer.partition(b"\n")
        return line[:1023].rstrip(b"\r")

    def close(self) -> None:
        self.sock.close()


_LINKS_MAX = 64
_LINK_IDLE_MS = 10_000


class _LocalLink(_Link):
    """A link to a server on this server's own loop (a node of this process's cluster, an
    in-process server): its requests run on that server's state directly, replies read
    back as from a socket (a socket would wait on this very loop)."""

    def __init__(self, target: ServerState) -> None:  # no socket: _Link's __init__ is not run
        self.timeout = 0.0
        self.buffer = b""
        self.last_db = -1
        self.last_use = 0
        self.target = target
        self.client = Client(target)
        target.add_client(self.client)  # in its CLIENT LIST, as a connection would be
        self.parser = RequestParser()

    def send(self, data: bytes) -> None:
        self.parser.feed(data)
        while (argv := self.parser.next_request()) is not None:
            reply = self.target.call(self.client, argv)
            self.buffer += self.client.encoder.encode(reply)

    def close(self) -> None:
        self.target.remove_client(self.client)


def _local_peer(c: Client, host: bytes, port: bytes) -> ServerState | None:
    """The server at host:port that runs on this server's own loop, if any: a node of
    this process's cluster, or an in-process server sharing the loop (a socket to it
    would wait on this very loop)."""
    number = try_int(port)
    if number is None:
        return None
    view = c.state.cluster
    if view is not None and view.bus is not None:
        peer = view.bus.at(host.decode("latin-1"), number)
        if peer is not None:
            return peer.state
    local = c.state.local_peer
    return None if local is None else local(host.decode("latin-1"), number)


def close_idle_links(state: ServerState, now: int) -> int:
    """migrateCloseTimedoutSockets: the cached connections idle too long are closed (done
    when one is used or INFO counts them, where Valkey's cron does it). How many remain."""
    links = state.migrate_links
    for name, idle in list(links.items()):
        if now - idle.last_use > _LINK_IDLE_MS:
            idle.close()
            del links[name]
    return len(links)


def _link_for(c: Client, host: bytes, port: bytes, timeout: int) -> _Link:
    """migrateGetSocket: the cached connection to host:port, or a new one."""
    links = c.state.migrate_links
    now = c.state.now
    close_idle_links(c.state, now)
    name = host + b":" + port
    link = links.get(name)
    if link is None:
        if len(links) >= _LINKS_MAX:
            links.pop(random.choice(list(links))).close()
        peer = _local_peer(c, host, port)
        link = _LocalLink(peer) if peer is not None else _Link(host, port, timeout)
        links[name] = link
    link.timeout = timeout / 1000
    link.last_use = now
    return link


def _drop_link(c: Client, host: bytes, port: bytes) -> None:
    link = c.state.migrate_links.pop(host + b":" + port, None)
    if link is not None:
        link.close()


@command("migrate", -6, "write movablekeys",
         keys=(keys_range(3, flags="RW access delete"),
               keys_keyword("KEYS", -2, last=-1, flags="RW access delete incomplete")),
         get_keys=migrate_keys, acl=f"{KEYSPACE} dangerous", group=G, since="2.6.0",
         tips="nondeterministic_output",
         complexity="This command actually executes a DUMP+DEL in the source instance, and a "
         "RESTORE in the target instance. See the pages of these commands for time complexity. "
         "Also an O(N) data transfer between the two instances is performed.",
         summary="Moves keys to another server (DUMP there, RESTORE here), optionally keeping "
         "them (COPY) or overwriting (REPLACE).")
def migrate(c: Client, argv: list[bytes]) -> Any:
    opts = _migrate_options(argv)
    timeout = parse_int(argv[5])
    dbid = parse_int(argv[4])
    if timeout <= 0:
        timeout = 1000
    db = c.db
    named = argv[3:4] if opts.first_key == 3 else argv[opts.first_key :]
    keys = [k for k in named if db.lookup(k) is not None]
    if not keys:
        return Simple(b"NOKEY")
    try:
        return _transfer(c, argv, opts, keys, dbid, timeout, may_retry=True)
    except _IOError as err:
        raise _io_reply(err.writing) from None


def _transfer(c: Client, argv: list[bytes], opts: _Options, keys: list[bytes], dbid: int,
              timeout: int, may_retry: bool) -> Any:
    host, port = argv[1], argv[2]
    try:
        link = _link_for(c, host, port, timeout)
        return _exchange(c, link, opts, keys, dbid)
    except _IOError as err:
        # a cached connection the target closed: try once more on a new one, unless it
        # timed out or a reply already arrived
        _drop_link(c, host, port)
        if may_retry and not err.timed_out and not err.replied:
            return _transfer(c, argv, opts, keys, dbid, timeout, may_retry=False)
        raise


def _request(c: Client, opts: _Options, keys: list[bytes], select: bytes | None) -> tuple[bytes, list[bytes]]:
    """AUTH, SELECT when needed, and a RESTORE per key still alive (with its TTL)."""
    db = c.db
    now = c.state.now
    parts: list[bytes] = []
    if opts.password is not None:
        auth = (opts.username, opts.password) if opts.username is not None else (opts.password,)
        parts.append(_bulk_command(b"AUTH", *auth))
    if select is not None:
        parts.append(_bulk_command(b"SELECT", select))
    sent: list[bytes] = []
    for key in keys:
        value = db.lookup(key)
        if value is None:
            continue
        ttl = 0
        when = db.expires.get(key)
        if when is not None:
            ttl = max(when - now, 1)
        # in cluster mode the target may be importing the slot: RESTORE-ASKING, as Valkey
        restore = b"RESTORE" if c.state.cluster is None else b"RESTORE-ASKING"
        args = [restore, key, b"%d" % ttl, dump_value(c, value)]
        if opts.replace:
            args.append(b"REPLACE")
        parts.append(_bulk_command(*args))
        sent.append(key)
    return b"".join(parts), sent


def _exchange(c: Client, link: _Link, opts: _Options, keys: list[bytes], dbid: int) -> Any:
    select = link.last_db != dbid
    request, sent = _request(c, opts, keys, b"%d" % dbid if select else None)
    link.send(request)
    auth_reply = link.read_line() if opts.password is not None else b""
    select_reply = link.read_line() if select else b""
    first_error: bytes | None = None
    for index, key in enumerate(sent):
        try:
            reply = link.read_line()
        except _IOError as err:
            err.replied = index > 0
            raise
        failed = next((r for r in (auth_reply, select_reply, reply) if r[:1] == b"-"), None)
        if failed is not None:
            if first_error is None:
                first_error = failed
                link.last_db = -1
        elif not opts.copy:
            c.db.delete(key)
    if first_error is not None:
        raise ReplyError(b"ERR Target instance replied with error: " + first_error[1:])
    link.last_db = dbid
    return OK
