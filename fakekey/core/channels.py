"""Pub/sub: channels, patterns and shard channels, message delivery, and keyspace
notifications (which are published messages like any other)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from fakekey.codecs.glob import compile_glob

if TYPE_CHECKING:
    from fakekey.core.client import Client
    from fakekey.core.keyspace import Database
    from fakekey.core.state import ServerState

# notify-keyspace-events: "A" is an alias for these classes (not n, m).
ALL_CLASSES = "g$lshzxetd"


def parse_notify_flags(text: str) -> frozenset[str]:
    """The classes that emit, or empty when neither K nor E is set."""
    flags = set(text.replace("A", ALL_CLASSES))
    if not flags & {"K", "E"}:
        return frozenset()
    return frozenset(flags)


class PubSub:
    """Who listens to what, and delivery to them."""

    def __init__(self, state: ServerState) -> None:
        self.state = state
        self.channels: dict[bytes, dict[Client, None]] = {}  # insertion-ordered sets
        self.patterns: dict[bytes, dict[Client, None]] = {}
        self.shard_channels: dict[bytes, dict[Client, None]] = {}
        self._matchers: dict[bytes, Any] = {}

    # --- subscriptions ------------------------------------------------------------------

    def subscribe(self, client: Client, channel: bytes, shard: bool = False) -> bool:
        mine = client.shard_channels if shard else client.channels
        if channel in mine:
            return False
        mine.add(channel)
        table = self.shard_channels if shard else self.channels
        table.setdefault(channel, {})[client] = None
        return True

    def unsubscribe(self, client: Client, channel: bytes, shard: bool = False) -> bool:
        mine = client.shard_channels if shard else client.channels
        if channel not in mine:
            return False
        mine.discard(channel)
        table = self.shard_channels if shard else self.channels
        listeners = table.get(channel)
        if listeners is not None:
            listeners.pop(client, None)
            if not listeners:
                del table[channel]
        return True

    def psubscribe(self, client: Client, pattern: bytes) -> bool:
        if pattern in client.patterns:
            return False
        client.patterns.add(pattern)
        self.patterns.setdefault(pattern, {})[client] = None
        if pattern not in self._matchers:
            self._matchers[pattern] = compile_glob(pattern, False)
        return True

    def punsubscribe(self, client: Client, pattern: bytes) -> bool:
        if pattern not in client.patterns:
            return False
        client.patterns.discard(pattern)
        listeners = self.patterns.get(pattern)
        if listeners is not None:
            listeners.pop(client, None)
            if not listeners:
                del self.patterns[pattern]
                self._matchers.pop(pattern, None)
        return True

    def drop_client(self, client: Client) -> None:
        """Forget every subscription of `client` (disconnect, RESET)."""
        for channel in list(client.channels):
            self.unsubscribe(client, channel)
        for channel in list(client.shard_channels):
            self.unsubscribe(client, channel, shard=True)
        for pattern in list(client.patterns):
            self.punsubscribe(client, pattern)

    # --- delivery ---------------------------------------------------------------------------

    def publish(self, channel: bytes, message: bytes) -> int:
        """Deliver to channel subscribers, then to matching patterns; the receiver count."""
        count = 0
        listeners = self.channels.get(channel)
        if listeners:
            items = [b"message", channel, message]
            encoded: dict[int, bytes] = {}  # one encoding per protocol for all listeners
            for client in list(listeners):
                client.push(items, encoded)
                count += 1
        if self.patterns:
            for pattern, clients in list(self.patterns.items()):
                if self._matchers[pattern](channel):
                    items, encoded = [b"pmessage", pattern, channel, message], {}
                    for client in list(clients):
                        client.push(items, encoded)
                        count += 1
        return count

    def spublish(self, channel: bytes, message: bytes) -> int:
        listeners = self.shard_channels.get(channel)
        if not listeners:
            return 0
        items = [b"smessage", channel, message]
        encoded: dict[int, bytes] = {}
        for client in list(listeners):
            client.push(items, encoded)
        return len(listeners)

    # --- keyspace notifications ---------------------------------------------------------------

    def notify(self, db: Database, klass: str, event: str, key: bytes) -> None:
        """Publish a keyspace event if its class is enabled (notifyKeyspaceEvent)."""
        flags = self.state.notify_flags
        if klass not in flags:
            return
        if "K" in flags:
            self.publish(b"__keyspace@%d__:" % db.index + key, event.encode())
        if "E" in flags:
            self.publish(b"__keyevent@%d__:" % db.index + event.encode(), key)
