"""Pub/sub commands. In RESP2 a subscribed connection may only run the subscription
commands, PING, QUIT and RESET (enforced in ServerState.call); in RESP3 everything works
and messages arrive as push frames."""

from __future__ import annotations

from typing import Any

from fakekey.codecs.glob import glob_match
from fakekey.commands.args import help_lines
from fakekey.core.client import Client
from fakekey.core.cluster import relay_publish
from fakekey.core.registry import command, container, keys_range
from fakekey.resp.replies import Multi, Push

G = "pubsub"
SUB = "pubsub noscript loading stale"


def _plain_count(c: Client) -> int:
    return len(c.channels) + len(c.patterns)


def _confirmed(c: Client, confirmations: Multi) -> Multi:
    """(Un)subscribe confirmations are pushes, which Valkey sends whatever CLIENT REPLY
    says: when the reply is dropped (OFF, SKIP), they go out as messages right after."""
    if c.reply_mode != "on":
        for push in confirmations:
            c.push(push)
    return confirmations


def _subscribe_each(c: Client, kind: bytes, names: list[bytes], add: Any, count: Any) -> Any:
    """Subscribe to each name, confirming each with the count that follows it."""
    out = Multi()
    for name in names:
        add(name)
        out.append(Push([kind, name, count()]))
    return _confirmed(c, out)


@command("subscribe", -2, SUB, acl="pubsub", group=G, since="2.0.0",
         complexity="O(N) where N is the number of channels to subscribe to.",
         summary="Listens for messages published to channels.")
def subscribe(c: Client, argv: list[bytes]) -> Any:
    hub = c.state.pubsub
    return _subscribe_each(c, b"subscribe", argv[1:], lambda ch: hub.subscribe(c, ch),
                           lambda: _plain_count(c))


@command("psubscribe", -2, SUB, acl="pubsub", group=G, since="2.0.0",
         complexity="O(N) where N is the number of patterns to subscribe to.",
         summary="Listens for messages published to channels matching glob patterns.")
def psubscribe(c: Client, argv: list[bytes]) -> Any:
    hub = c.state.pubsub
    return _subscribe_each(c, b"psubscribe", argv[1:], lambda p: hub.psubscribe(c, p),
                           lambda: _plain_count(c))


@command("ssubscribe", -2, SUB, keys=keys_range(1, -1, flags="not_key"), acl="pubsub", group=G,
         since="7.0.0", complexity="O(N) where N is the number of shard channels to subscribe to.",
         summary="Listens for messages published to shard channels.")
def ssubscribe(c: Client, argv: list[bytes]) -> Any:
    hub = c.state.pubsub
    return _subscribe_each(c, b"ssubscribe", argv[1:], lambda ch: hub.subscribe(c, ch, shard=True),
                           lambda: len(c.shard_channels))


def _unsubscribe_each(c: Client, kind: bytes, names: list[bytes], current: set[bytes], drop: Any,
                      count: Any) -> Any:
    """Confirm each name (every current one when none is given; one null when none)."""
    targets = names or list(current)
    if not targets:
        return _confirmed(c, Multi([Push([kind, None, count()])]))
    out = Multi()
    for name in targets:
        drop(name)
        out.append(Push([kind, name, count()]))
    return _confirmed(c, out)


@command("unsubscribe", -1, SUB, acl="pubsub", group=G, since="2.0.0",
         complexity="O(N) where N is the number of channels to unsubscribe.",
         summary="Stops listening to channels (all of them when none is named).")
def unsubscribe(c: Client, argv: list[bytes]) -> Any:
    hub = c.state.pubsub
    return _unsubscribe_each(c, b"unsubscribe", argv[1:], c.channels,
                             lambda ch: hub.unsubscribe(c, ch), lambda: _plain_count(c))


@command("punsubscribe", -1, SUB, acl="pubsub", group=G, since="2.0.0",
         complexity="O(N) where N is the number of patterns to unsubscribe.",
         summary="Stops listening to patterns (all of them when none is named).")
def punsubscribe(c: Client, argv: list[bytes]) -> Any:
    hub = c.state.pubsub
    return _unsubscribe_each(c, b"punsubscribe", argv[1:], c.patterns,
                             lambda p: hub.punsubscribe(c, p), lambda: _plain_count(c))


@command("sunsubscribe", -1, SUB, keys=keys_range(1, -1, flags="not_key"), acl="pubsub", group=G,
         since="7.0.0", complexity="O(N) where N is the number of shard channels to unsubscribe.",
         summary="Stops listening to shard channels (all of them when none is named).")
def sunsubscribe(c: Client, argv: list[bytes]) -> Any:
    hub = c.state.pubsub
    return _unsubscribe_each(c, b"sunsubscribe", argv[1:], c.shard_channels,
                             lambda ch: hub.unsubscribe(c, ch, shard=True),
                             lambda: len(c.shard_channels))


@command("publish", 3, "pubsub loading stale fast", acl="pubsub", group=G, since="2.0.0",
         complexity="O(N+M) where N is the number of clients subscribed to the receiving "
         "channel and M is the total number of subscribed patterns (by any client).",
         summary="Sends a message to a channel's subscribers; answers how many received it.")
def publish(c: Client, argv: list[bytes]) -> Any:
    if c.state.cluster is not None:  # every node's subscribers hear it (core/cluster.py)
        relay_publish(c.state.cluster, argv[1], argv[2], sharded=False)
    return c.state.pubsub.publish(argv[1], argv[2])


@command("spublish", 3, "pubsub loading stale fast", keys=keys_range(1, flags="not_key"),
         acl="pubsub", group=G, since="7.0.0",
         complexity="O(N) where N is the number of clients subscribed to the receiving shard channel.",
         summary="Sends a message to a shard channel's subscribers.")
def spublish(c: Client, argv: list[bytes]) -> Any:
    if c.state.cluster is not None:  # the shard's replicas' subscribers hear it too
        relay_publish(c.state.cluster, argv[1], argv[2], sharded=True)
    return c.state.pubsub.spublish(argv[1], argv[2])


container("pubsub", group=G, since="2.8.0", summary="Holds the pub/sub introspection commands.")

INTROSPECT = "pubsub loading stale"


def _matching(names: Any, argv: list[bytes]) -> list[bytes]:
    if len(argv) > 3:
        from fakekey.commands.args import wrong_args

        raise wrong_args(argv[0].lower().decode() + "|" + argv[1].lower().decode())
    if len(argv) == 3:
        return [n for n in names if glob_match(argv[2], n)]
    return list(names)


@command("pubsub|channels", -2, INTROSPECT, acl="pubsub", since="2.8.0",
         complexity="O(N) where N is the number of active channels, and assuming constant time "
         "pattern matching (relatively short channels and patterns)",
         summary="Lists the channels with subscribers, optionally matching a pattern.")
def pubsub_channels(c: Client, argv: list[bytes]) -> Any:
    return _matching(c.state.pubsub.channels, argv)


@command("pubsub|shardchannels", -2, INTROSPECT, acl="pubsub", since="7.0.0",
         complexity="O(N) where N is the number of active shard channels, and assuming constant "
         "time pattern matching (relatively short shard channels).",
         summary="Lists the shard channels with subscribers, optionally matching a pattern.")
def pubsub_shardchannels(c: Client, argv: list[bytes]) -> Any:
    return _matching(c.state.pubsub.shard_channels, argv)


@command("pubsub|numsub", -2, INTROSPECT, acl="pubsub", since="2.8.0",
         complexity="O(N) for the NUMSUB subcommand, where N is the number of requested channels",
         summary="Answers the number of subscribers of channels.")
def pubsub_numsub(c: Client, argv: list[bytes]) -> Any:
    table = c.state.pubsub.channels
    out: list[Any] = []
    for channel in argv[2:]:
        out += [channel, len(table.get(channel, ()))]
    return out


@command("pubsub|shardnumsub", -2, INTROSPECT, acl="pubsub", since="7.0.0",
         complexity="O(N) for the SHARDNUMSUB subcommand, where N is the number of requested shard channels",
         summary="Answers the number of subscribers of shard channels.")
def pubsub_shardnumsub(c: Client, argv: list[bytes]) -> Any:
    table = c.state.pubsub.shard_channels
    out: list[Any] = []
    for channel in argv[2:]:
        out += [channel, len(table.get(channel, ()))]
    return out


@command("pubsub|numpat", 2, INTROSPECT, acl="pubsub", since="2.8.0",
         summary="Answers the number of pattern subscriptions.")
def pubsub_numpat(c: Client, argv: list[bytes]) -> Any:
    return len(c.state.pubsub.patterns)


@command("pubsub|help", 2, "loading stale", since="6.2.0",  # Valkey 9: @slow alone
         summary="Lists the PUBSUB subcommands.")
def pubsub_help(c: Client, argv: list[bytes]) -> Any:
    return help_lines([
        "PUBSUB <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "CHANNELS [<pattern>]",
        "    Return the currently active channels matching a <pattern> (default: '*').",
        "NUMPAT",
        "    Return number of subscriptions to patterns.",
        "NUMSUB [<channel> ...]",
        "    Return the number of subscribers for the specified channels, excluding",
        "    pattern subscriptions(default: no channels).",
        "SHARDCHANNELS [<pattern>]",
        "    Return the currently active shard level channels matching a <pattern> (default: '*').",
        "SHARDNUMSUB [<shardchannel> ...]",
        "    Return the number of subscribers for the specified shard level channel(s)",
        "HELP",
        "    Print this help.",
    ])
