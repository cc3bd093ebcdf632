"""Fair turns: a connection's long pipeline runs a slice per event-loop turn, the other
connections served in between, and nothing of it is lost or reordered: the replies of a
client that half-closes after its last request all arrive, the transaction and blocking
semantics hold across turns. (How long the others wait is measured in bench/stalls.py.)"""

from __future__ import annotations

import socket
import threading

import redis

from fakekey import Server

PIPELINE = 50_000  # far more than one turn's work


def read_exactly(sock: socket.socket, size: int) -> bytes:
    chunks, got = [], 0
    while got < size:
        chunk = sock.recv(1 << 20)
        if not chunk:
            break
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def test_a_half_closed_pipeline_gets_every_reply_then_the_close() -> None:
    with Server() as server, socket.create_connection((server.host, server.port)) as sock:
        sock.sendall(b"INCR n\r\n" * PIPELINE)
        sock.shutdown(socket.SHUT_WR)
        expected = b"".join(b":%d\r\n" % i for i in range(1, PIPELINE + 1))
        assert read_exactly(sock, len(expected) + 1) == expected  # then EOF
        assert sock.recv(1) == b""


def test_two_pipelines_interleave_without_losing_or_reordering() -> None:
    with Server() as server:
        def flood(name: bytes, out: list[bytes]) -> None:
            with socket.create_connection((server.host, server.port)) as sock:
                requests = b"".join(b"RPUSH %s %d\r\n" % (name, i) for i in range(PIPELINE))
                sender = threading.Thread(target=sock.sendall, args=(requests,))
                sender.start()
                expected = b"".join(b":%d\r\n" % i for i in range(1, PIPELINE + 1))
                out.append(read_exactly(sock, len(expected)) == expected)
                sender.join()

        results: list[bytes] = []
        threads = [threading.Thread(target=flood, args=(name, results)) for name in (b"a", b"b")]
        for thread in threads:
            thread.start()
        r = redis.Redis.from_url(server.url)
        assert r.ping()  # served while the two floods run
        for thread in threads:
            thread.join()
        assert results == [True, True]
        for name in ("a", "b"):
            assert r.lrange(name, 0, -1) == [b"%d" % i for i in range(PIPELINE)]
        r.close()


def test_a_transaction_and_a_blocking_pop_across_turns() -> None:
    with Server() as server, socket.create_connection((server.host, server.port)) as sock:
        queued = b"SET k 0\r\n" + b"INCR k\r\n" * PIPELINE
        sock.sendall(b"MULTI\r\n" + queued + b"EXEC\r\nBLPOP q 0\r\nGET k\r\n")
        head = b"+OK\r\n" + b"+QUEUED\r\n" * (PIPELINE + 1)
        body = b"*%d\r\n+OK\r\n" % (PIPELINE + 1) + b"".join(b":%d\r\n" % i for i in range(1, PIPELINE + 1))
        assert read_exactly(sock, len(head) + len(body)) == head + body
        r = redis.Redis.from_url(server.url)
        r.rpush("q", "x")
        total = b"%d" % PIPELINE
        tail = b"*2\r\n$1\r\nq\r\n$1\r\nx\r\n" + b"$%d\r\n%s\r\n" % (len(total), total)
        assert read_exactly(sock, len(tail)) == tail
        r.close()
