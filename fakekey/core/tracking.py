"""Client-side caching (CLIENT TRACKING): the table of the keys tracking clients read,
the broadcast prefixes, and the invalidation messages, as Valkey's tracking.c does them.

The table maps a key name (for every database alike, as Valkey) to the ids of the clients
that read it. A write to the key (the keyspace funnel calls `invalidate`) sends each of
them one invalidation and forgets the key; entries of clients that left or turned
tracking off are dropped lazily, on the key's next invalidation, as Valkey does (INFO's
`tracking_total_items` counts them until then). Clients in BCAST mode read nothing into
the table: they subscribe to prefixes, and the keys written under a prefix go out to them
in one message per prefix at the end of the event loop's turn.

`ServerState.tracking` is the table while anything needs it (a tracking client, a key in
the table, a prefix), else None: the keyspace funnel and `run_command` test only that.
This module imports nothing of the commands, the state or the server: clients are taken
as objects with `id`, `protocol`, `push`, `tracking` and the pub/sub sets.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
from typing import TYPE_CHECKING, Any

from fakekey.resp.replies import Raw

if TYPE_CHECKING:
    from fakekey.core.client import Client
    from fakekey.core.state import ServerState

CHANNEL = b"__redis__:invalidate"  # RESP2 redirect targets get messages on it
EVICTION_SLICE_NS = 5_000_000  # the longest one call of evict_to_limit runs
# "every key" after a flush: the null of the *tracking* client's protocol, even when the
# message goes to a redirect target speaking the other one (Valkey's shared.null[c->resp])
FLUSH_NULL = {2: Raw(b"$-1\r\n"), 3: Raw(b"_\r\n")}
# read-only scripts: the commands they run are tracked, not the script's own keys
SCRIPTS_RO = frozenset({"eval_ro", "evalsha_ro", "fcall_ro"})


class ClientTracking:
    """One client's CLIENT TRACKING state (Valkey's CLIENT_TRACKING_* flags)."""

    __slots__ = ("redirect", "bcast", "optin", "optout", "noloop", "caching", "broken", "prefixes")

    def __init__(self) -> None:
        self.redirect = 0  # the client id invalidations go to; 0: this connection
        self.bcast = False
        self.optin = False
        self.optout = False
        self.noloop = False
        self.caching = False  # CLIENT CACHING yes/no given for the next command
        self.broken = False  # the redirect target is gone
        self.prefixes: set[bytes] = set()  # BCAST prefixes

    def flag_names(self) -> list[bytes]:
        """CLIENT TRACKINGINFO's flags after `on`, in Valkey's order."""
        names = []
        if self.bcast:
            names.append(b"bcast")
        if self.optin:
            names.append(b"optin")
            if self.caching:
                names.append(b"caching-yes")
        if self.optout:
            names.append(b"optout")
            if self.caching:
                names.append(b"caching-no")
        if self.noloop:
            names.append(b"noloop")
        if self.broken:
            names.append(b"broken_redirect")
        return names

    def list_flags(self) -> str:
        """CLIENT LIST's letters: t tracking, R broken redirect, B broadcast."""
        return "t" + ("R" if self.broken else "") + ("B" if self.bcast else "")


class Prefix:
    """A BCAST prefix: its subscribers, and the keys written under it this turn, each
    with the client that wrote it last (NOLOOP leaves a client's own writes out)."""

    __slots__ = ("clients", "keys")

    def __init__(self) -> None:
        self.clients: dict[Client, None] = {}
        self.keys: dict[bytes, Client | None] = {}


class Tracking:
    """The server's tracking table (one per ServerState)."""

    def __init__(self, state: ServerState) -> None:
        self.state = state
        self.keys: dict[bytes, set[int]] = {}  # key -> ids of the clients that read it
        self.items = 0  # ids across the table (INFO tracking_total_items)
        self.prefixes: dict[bytes, Prefix] = {}
        # prefix length -> how many prefixes have it: a write looks up one slice per length
        self.prefix_lengths: dict[int, int] = {}
        self.clients = 0  # clients with tracking on (INFO tracking_clients)
        self.loop: asyncio.AbstractEventLoop | None = None
        self.broadcast_due = False
        self._victims: list[bytes] = []  # a snapshot of the keys to draw evictions from
        self._evict_effort = 0  # Valkey's timeout_counter: rounds still over the limit
        self._held: list[tuple[Client, Any]] = []  # woken clients' invalidations (`_hold`)
        self._written: list[tuple[Prefix, bytes]] = []  # this command's broadcast keys

    # --- turning tracking on and off --------------------------------------------------------

    def enable(self, client: Client, redirect: int, bcast: bool, optin: bool, optout: bool,
               noloop: bool, prefixes: list[bytes]) -> None:
        """CLIENT TRACKING on (the options already checked): Valkey's enableTracking."""
        t = client.tracking
        if t is None:
            t = client.tracking = ClientTracking()
            self.clients += 1
        t.redirect = redirect
        t.broken = False
        t.bcast, t.optin, t.optout, t.noloop = bcast, optin, optout, noloop  # CACHING stays
        if bcast:
            for prefix in prefixes or [b""]:
                self._subscribe(client, prefix)
        with contextlib.suppress(RuntimeError):  # for writes made on the script thread
            self.loop = asyncio.get_running_loop()
        self.state.tracking = self

    def disable(self, client: Client) -> None:
        """CLIENT TRACKING off, RESET, a disconnection: the client's prefixes go now; its
        entries in the table go lazily."""
        t = client.tracking
        if t is None:
            return
        for prefix in t.prefixes:
            bcast = self.prefixes[prefix]
            bcast.clients.pop(client, None)
            if not bcast.clients:
                del self.prefixes[prefix]
                self._count_length(len(prefix), -1)
        client.tracking = None
        self.clients -= 1
        self._settle()

    def _subscribe(self, client: Client, prefix: bytes) -> None:
        bcast = self.prefixes.get(prefix)
        if bcast is None:
            bcast = self.prefixes[prefix] = Prefix()
            self._count_length(len(prefix), 1)
        bcast.clients[client] = None
        client.tracking.prefixes.add(prefix)  # type: ignore[union-attr]

    def _count_length(self, length: int, change: int) -> None:
        count = self.prefix_lengths.get(length, 0) + change
        if count:
            self.prefix_lengths[length] = count
        else:
            del self.prefix_lengths[length]

    def _settle(self) -> None:
        """Off the hot paths once nothing is left to track."""
        if not (self.keys or self.prefixes or self.clients):
            self.state.tracking = None

    # --- reads ------------------------------------------------------------------------------

    def after_command(self, tracker: Client, client: Client, cmd: Any, argv: list[bytes]) -> None:
        """After any command run (`tracker` is the connection whose request it is, `client`
        the one running it: a script's own client inside a script). A read-only command
        adds its keys to the table for a tracking client (Valkey's trackingRememberKeys);
        the end of a request clears CLIENT CACHING, except inside MULTI and after CLIENT
        subcommands."""
        t = tracker.tracking
        if t is not None:
            self._after_tracking_command(t, tracker, client, cmd, argv)
        if self._written:
            self._credit_writes(tracker, client)

    def _credit_writes(self, tracker: Client, client: Client) -> None:
        """The keys the command queued for broadcast were written by `client`, the one
        running it: a script's own client inside a script, not its caller (Valkey hands
        signalModifiedKey the running client), so NOLOOP leaves none of a script's writes
        out of its caller's broadcast."""
        written, self._written = self._written, []
        if client is tracker:
            return
        for bcast, key in written:
            if bcast.keys.get(key) is tracker:
                bcast.keys[key] = client

    def _after_tracking_command(self, t: ClientTracking, tracker: Client, client: Client,
                                cmd: Any, argv: list[bytes]) -> None:
        caching = t.caching
        if "readonly" in cmd.flags and not t.bcast and cmd.name not in SCRIPTS_RO:
            if not ((t.optin and not caching) or (t.optout and caching)):
                self._remember(tracker.id, cmd, argv)
        if caching and client is tracker and not tracker.in_multi and not self.state.deny_blocking:
            parent = cmd.parent
            if parent is None or parent.name != "client":
                t.caching = False

    def _remember(self, client_id: int, cmd: Any, argv: list[bytes]) -> None:
        if "pubsub" in cmd.flags:  # shard channels are keys for routing, not data
            return
        try:
            positions = cmd.key_positions(argv)
        except (IndexError, ValueError):  # arguments the key finder cannot read: no keys
            return
        table = self.keys
        for at in positions:
            key = argv[at]
            ids = table.get(key)
            if ids is None:
                ids = table[key] = set()
            if client_id not in ids:
                ids.add(client_id)
                self.items += 1

    # --- tracking-table-max-keys -----------------------------------------------------------

    def evict_to_limit(self, current: Client | None = None) -> None:
        """Hold the table to tracking-table-max-keys, as Valkey's trackingLimitUsedSlots
        (from the cron, and before each command): random keys go, each with its
        invalidation as if written. A call evicts at most 100 keys, 100 more for each call
        before it that ended still over the limit, and stops after EVICTION_SLICE_NS (the
        invalidations cost far more here than in C), so a huge table shrinks over several
        calls without holding the server. `current`: the client whose command is about to
        run (Valkey's server.current_client: NOLOOP leaves it out of the invalidations)."""
        if not self.clients:  # Valkey looks only while some client is tracking
            return
        limit = self.state.config.values["tracking-table-max-keys"]
        table = self.keys
        if not limit:
            return
        if len(table) <= limit:
            self._evict_effort = 0
            return
        deadline = time.perf_counter_ns() + EVICTION_SLICE_NS
        for done in range(1, 100 * (self._evict_effort + 1) + 1):
            self._drop(self._random_key(), current)
            if len(table) <= limit:
                self._evict_effort = 0
                return
            if done % 64 == 0 and time.perf_counter_ns() > deadline:
                break
        self._evict_effort += 1

    def _random_key(self) -> bytes:
        """A random key of the (non-empty) table: drawn from a snapshot of its keys, taken
        again once used up, where keys invalidated since are passed over. Each draw costs
        O(1) (swap with the last, pop), the snapshot one list copy per table's worth."""
        table = self.keys
        victims = self._victims
        while True:
            if not victims:
                victims = self._victims = list(table)
            at = random.randrange(len(victims))
            key = victims[at]
            victims[at] = victims[-1]
            victims.pop()
            if key in table:
                return key

    # --- writes -----------------------------------------------------------------------------

    def invalidate(self, key: bytes, by_server: bool = False) -> None:
        """`key` changed: tell the clients that read it, and queue it for the BCAST prefixes
        it falls under (Valkey's trackingInvalidateKey). `by_server`: an expiry or an
        eviction, which no client wrote (Valkey's signalModifiedKey(NULL, ...)), so NOLOOP
        leaves nobody's broadcast out. NOLOOP readers are left out while their own command
        runs, whatever changed the key (Valkey compares them with server.current_client).
        A client's own message waits for the end of its command (Client.push defers it)."""
        waking = self.state.blocking.reprocessing  # a woken client's command runs again
        current = waking.client if waking is not None else self.state.current_client
        if self.prefixes:
            self._queue_broadcast(key, None if by_server else current)
        if key in self.keys:
            self._drop(key, current)

    def _drop(self, key: bytes, current: Client | None) -> None:
        """Forget `key`, with one invalidation to each client that read it and still
        tracks it in the same mode (but a NOLOOP one whose command is `current`)."""
        ids = self.keys.pop(key)
        self.items -= len(ids)
        clients = self.state.clients
        for client_id in ids:
            target = clients.get(client_id)
            if target is None:  # gone
                continue
            t = target.tracking
            if t is None or t.bcast:  # off, or switched to BCAST since it read
                continue
            if t.noloop and target is current:
                continue
            self.send(target, [key])
        self._settle()

    def flushed(self) -> None:
        """FLUSHALL/FLUSHDB (ASYNC too): every tracking client, BCAST ones included, is
        told that every key is invalid (a null), and the table is emptied."""
        for client in list(self.state.clients.values()):
            if client.tracking is not None:
                self.send(client, FLUSH_NULL[client.protocol])
        self.keys.clear()
        self.items = 0
        self._victims = []
        self._settle()

    def _queue_broadcast(self, key: bytes, writer: Client | None) -> None:
        queued = False
        for length in self.prefix_lengths:
            bcast = self.prefixes.get(key[:length]) if length <= len(key) else None
            if bcast is not None:
                bcast.keys[key] = writer
                queued = True
                if writer is not None:  # to credit at the command's end (`_credit_writes`)
                    self._written.append((bcast, key))
        if queued and not self.broadcast_due:
            self.broadcast_due = True
            self._schedule_broadcast()

    def _schedule_broadcast(self) -> None:
        """`broadcast` at the end of this turn of the event loop, after the replies of the
        batch being run (Valkey sends them from beforeSleep)."""
        try:
            running = self.loop = asyncio.get_running_loop()
        except RuntimeError:  # the script thread: the loop thread waits for it
            loop = self.loop
            if loop is not None and not loop.is_closed():
                loop.call_soon_threadsafe(self.broadcast)
                return
        else:
            running.call_soon(self.broadcast)
            return
        self.broadcast()  # a state driven by hand, without a loop

    def broadcast(self) -> None:
        """The end of the loop's turn: each prefix's keys to its subscribers, one message
        per prefix, keys and prefixes in byte order (Valkey's radix trees)."""
        self.broadcast_due = False
        for prefix in sorted(self.prefixes):
            bcast = self.prefixes[prefix]
            if not bcast.keys:
                continue
            written, bcast.keys = bcast.keys, {}
            every = sorted(written)
            for client in list(bcast.clients):
                t = client.tracking
                if t is not None and t.noloop:
                    keys = [key for key in every if written[key] is not client]
                    if keys:
                        self.send(client, keys)
                else:
                    self.send(client, every)

    # --- sending ----------------------------------------------------------------------------

    def send(self, client: Client, payload: Any) -> None:
        """One invalidation for tracking client `client` (Valkey's sendTrackingMessage):
        a RESP3 push to itself or to its redirect target, or, for a RESP2 redirect target
        in pub/sub mode, a message on __redis__:invalidate. A RESP2 client without a
        redirect gets nothing; a gone target leaves the client `broken_redirect` (told by
        a push if it speaks RESP3)."""
        waking = self.state.blocking.reprocessing
        if waking is not None and waking.client is client and self._hold(client, payload):
            return
        t = client.tracking
        target = client
        redirected = False
        if t is not None and t.redirect:
            redirect = self.state.clients.get(t.redirect)
            if redirect is None:
                t.broken = True
                if client.protocol == 3:
                    client.push([b"tracking-redir-broken", t.redirect])
                return
            target = redirect
            redirected = True
        if target.protocol == 3:
            target.push([b"invalidate", payload])
        elif redirected and (target.channels or target.patterns or target.shard_channels):
            target.push([b"message", CHANNEL, payload])

    def _hold(self, client: Client, payload: Any) -> bool:
        """A woken client's own invalidation waits for the reply of the command it re-runs
        (Valkey keeps it pending until the command ends; Blocking answers after the run):
        it goes out first thing on the loop's next turn. False without a loop."""
        loop = self.state.running_loop()
        if loop is None:
            return False
        if not self._held:
            loop.call_soon(self._send_held)
        self._held.append((client, payload))
        return True

    def _send_held(self) -> None:
        held, self._held = self._held, []
        for client, payload in held:
            self.send(client, payload)

    # --- INFO -------------------------------------------------------------------------------

    def info_stats(self) -> list[str]:
        """INFO stats' tracking lines."""
        return [
            f"tracking_total_keys:{len(self.keys)}",
            f"tracking_total_items:{self.items}",
            f"tracking_total_prefixes:{len(self.prefixes)}",
        ]
