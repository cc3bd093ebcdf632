"""Pub/sub: subscriptions, delivery, RESP2's subscribed mode and RESP3 push frames."""

import time

import pytest


def frame(proto, *items):
    """A pub/sub frame: an array in RESP2, a push in RESP3."""
    return (">" if proto == 3 else "*", list(items))


def null(proto):
    return ("$", None) if proto == 2 else ("_", None)


def b(value):
    return ("$", value)


def i(value):
    return (":", value)


@pytest.fixture
def pub(target):
    client = target.raw(2)
    yield client
    client.close()


def test_subscribe_publish_unsubscribe(r, pub, proto):
    assert r.call("SUBSCRIBE", "c1") == frame(proto, b(b"subscribe"), b(b"c1"), i(1))
    r.send("SUBSCRIBE", "c2", "c1")
    assert r.read() == frame(proto, b(b"subscribe"), b(b"c2"), i(2))
    assert r.read() == frame(proto, b(b"subscribe"), b(b"c1"), i(2))
    assert pub.call("PUBLISH", "c1", "hello") == i(1)
    assert pub.call("PUBLISH", "nobody", "x") == i(0)
    assert r.read() == frame(proto, b(b"message"), b(b"c1"), b(b"hello"))
    assert r.call("UNSUBSCRIBE", "c1") == frame(proto, b(b"unsubscribe"), b(b"c1"), i(1))
    assert r.call("UNSUBSCRIBE") == frame(proto, b(b"unsubscribe"), b(b"c2"), i(0))
    assert r.call("UNSUBSCRIBE") == frame(proto, b(b"unsubscribe"), null(proto), i(0))


def test_patterns_count_with_channels(r, pub, proto):
    r.call("SUBSCRIBE", "news.tech")
    assert r.call("PSUBSCRIBE", "news.*") == frame(proto, b(b"psubscribe"), b(b"news.*"), i(2))
    assert pub.call("PUBLISH", "news.tech", "m") == i(2)
    assert r.read() == frame(proto, b(b"message"), b(b"news.tech"), b(b"m"))
    assert r.read() == frame(proto, b(b"pmessage"), b(b"news.*"), b(b"news.tech"), b(b"m"))
    assert pub.call("PUBSUB", "NUMPAT") == i(1)
    assert r.call("PUNSUBSCRIBE") == frame(proto, b(b"punsubscribe"), b(b"news.*"), i(1))
    assert r.call("PUNSUBSCRIBE") == frame(proto, b(b"punsubscribe"), null(proto), i(1))


def test_shard_channels(r, pub, proto):
    assert r.call("SSUBSCRIBE", "s1") == frame(proto, b(b"ssubscribe"), b(b"s1"), i(1))
    assert pub.call("SPUBLISH", "s1", "x") == i(1)
    assert pub.call("PUBLISH", "s1", "x") == i(0)
    assert r.read() == frame(proto, b(b"smessage"), b(b"s1"), b(b"x"))
    assert pub.call("PUBSUB", "SHARDNUMSUB", "s1", "s2") == ("*", [b(b"s1"), i(1), b(b"s2"), i(0)])
    assert pub.call("PUBSUB", "SHARDCHANNELS") == ("*", [b(b"s1")])
    assert r.call("SUNSUBSCRIBE") == frame(proto, b(b"sunsubscribe"), b(b"s1"), i(0))


def test_pubsub_introspection(r, pub):
    r.call("SUBSCRIBE", "a1")
    r.call("SUBSCRIBE", "b1")
    assert sorted(pub.call("PUBSUB", "CHANNELS")[1]) == [b(b"a1"), b(b"b1")]
    assert pub.call("PUBSUB", "CHANNELS", "a*") == ("*", [b(b"a1")])
    assert pub.call("PUBSUB", "NUMSUB", "a1", "zz") == ("*", [b(b"a1"), i(1), b(b"zz"), i(0)])
    assert pub.call("PUBSUB", "NUMSUB") == ("*", [])
    assert pub.call("PUBSUB", "NUMPAT") == i(0)
    assert pub.call("PUBSUB", "FOO") == ("-", b"ERR unknown subcommand 'FOO'. Try PUBSUB HELP.")
    assert pub.call("PUBSUB", "HELP")[1][0] == (
        "+", b"PUBSUB <subcommand> [<arg> [value] [opt] ...]. Subcommands are:")


def test_resp2_subscribed_mode_restricts_commands(r2):
    r2.call("SUBSCRIBE", "c")
    assert r2.call("GET", "x") == (
        "-",
        b"ERR Can't execute 'get': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET "
        b"are allowed in this context",
    )
    assert r2.call("PING") == ("*", [b(b"pong"), b(b"")])
    assert r2.call("PING", "hi") == ("*", [b(b"pong"), b(b"hi")])
    r2.call("UNSUBSCRIBE")
    assert r2.call("GET", "x") == ("$", None)
    assert r2.call("PING") == ("+", b"PONG")


def test_resp3_keeps_working_while_subscribed(target, pub):
    r3 = target.raw(3)
    try:
        r3.call("SUBSCRIBE", "c")
        assert r3.call("GET", "x") == ("_", None)
        assert r3.call("PING") == ("+", b"PONG")
        pub.call("PUBLISH", "c", "m")
        assert r3.read() == (">", [b(b"message"), b(b"c"), b(b"m")])
        # a message to itself comes after the PUBLISH reply, as Valkey (7.2+) orders them
        r3.send("PUBLISH", "c", "self")
        assert r3.read() == i(1)
        assert r3.read() == (">", [b(b"message"), b(b"c"), b(b"self")])
    finally:
        r3.close()


def test_reset_drops_subscriptions(r2, pub):
    r2.call("SUBSCRIBE", "c")
    r2.call("PSUBSCRIBE", "p*")
    assert r2.call("RESET") == ("+", b"RESET")
    assert pub.call("PUBLISH", "c", "m") == i(0)
    assert pub.call("PUBSUB", "NUMPAT") == i(0)


def test_disconnect_drops_subscriptions(target, pub):
    sub = target.raw(2)
    sub.call("SUBSCRIBE", "c")
    sub.close()
    deadline = time.time() + 2
    while pub.call("PUBLISH", "c", "m") != i(0):
        assert time.time() < deadline
        time.sleep(0.01)


def test_subscribe_inside_multi_replies_in_exec(r2):
    replies = r2.pipeline(("MULTI",), ("SUBSCRIBE", "q"), ("EXEC",))
    assert replies[-1] == ("*", [("*", [b(b"subscribe"), b(b"q"), i(1)])])
    assert r2.call("PING") == ("*", [b(b"pong"), b(b"")])


def test_arity(r2):
    assert r2.call("SUBSCRIBE") == ("-", b"ERR wrong number of arguments for 'subscribe' command")
    assert r2.call("PUBLISH", "c") == ("-", b"ERR wrong number of arguments for 'publish' command")
    assert r2.call("PUBSUB") == ("-", b"ERR wrong number of arguments for 'pubsub' command")
