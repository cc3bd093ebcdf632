"""The pub/sub output-buffer limit: fakekey's own server, since it needs CONFIG changes
and a client that never reads."""

import socket

from fakekey.net.server import Server
from fakekey.testing.raw import RawClient


def test_slow_subscriber_is_cut_off_and_others_served():
    """A subscriber that never reads is disconnected at the pubsub hard limit (the
    messages are under 16 KB: Valkey copies them into its buffers and counts them)."""
    with Server() as server:
        pub = RawClient(server.host, server.port)
        slow = RawClient(server.host, server.port)
        slow.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        assert pub.call("CONFIG", "SET", "client-output-buffer-limit", "pubsub 1mb 0 0") == ("+", b"OK")
        slow.call("SUBSCRIBE", "firehose")
        payload = "x" * 10_000
        receivers = [pub.call("PUBLISH", "firehose", payload)[1] for _ in range(600)]
        assert receivers[0] == 1 and receivers[-1] == 0
        assert pub.call("PUBSUB", "NUMSUB", "firehose") == ("*", [("$", b"firehose"), (":", 0)])
        assert pub.call("SET", "still", "serving") == ("+", b"OK")
        pub.close()
        slow.close()
