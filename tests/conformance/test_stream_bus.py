"""The seeds' bus end to end, on both targets: the durable tier on a stream and a consumer
group, the ephemeral tier on PUBLISH.

A producer appends envelopes (fields id, type, data, source, time) as a pipeline whose
replies it drops; two workers of one group park in XREADGROUP ... BLOCK and XACK what they
finish; one worker dies holding an entry; once the lease (min-idle-time) has passed, the
survivor reclaims with XAUTOCLAIM. A poison entry's failures are counted (INCR, then
EXPIRE, on emq:{topic}:failures:<entry id>); past the bound it is appended to the
dead-letter stream and then acknowledged. XTRIM applies retention. The idle time passes
by advancing fakekey's frozen clock, and by really waiting on Valkey.
"""

import json
import time

from fakekey.testing.raw import plain

TOPIC = "orders"
STREAM = f"emq:{{{TOPIC}}}:stream"
DLQ = f"emq:{{{TOPIC}}}:dlq"
LIVE = f"emq:{{{TOPIC}}}:live"
GROUP = "workers"
LEASE_MS = 100
MAX_FAILURES = 2
FAILURE_TTL = 3600


def envelope(n, kind="order.created"):
    return {"id": f"evt-{n}", "type": kind, "data": json.dumps({"order": n}), "source": "shop",
            "time": f"2026-01-01T00:00:0{n}Z"}


def fields(env):
    return [x for kv in env.items() for x in kv]


def delivered(reply):
    """[(entry id, {field: value})] of a one-stream XREADGROUP reply, either protocol."""
    value = plain(reply)
    if value is None:
        return []
    streams = value if isinstance(value, dict) else dict(value)
    (items,) = streams.values()
    return [(sid, dict(zip(pairs[::2], pairs[1::2], strict=True))) for sid, pairs in items]


def wait_blocked(client, count):
    deadline = time.time() + 2
    while f"blocked_clients:{count}" not in client.call("INFO", "clients")[1].decode():
        assert time.time() < deadline, f"never saw {count} blocked clients"
        time.sleep(0.005)


class Worker:
    """One consumer of the group on its own connection."""

    def __init__(self, target, proto, name):
        self.name = name
        self.conn = target.raw(proto)
        self.failures_seen = {}

    def park(self):
        self.conn.send("XREADGROUP", "GROUP", GROUP, self.name, "COUNT", "10", "BLOCK", "2000",
                       "STREAMS", STREAM, ">")

    def woken(self):
        return delivered(self.conn.read())

    def read_new(self):
        return delivered(self.conn.call("XREADGROUP", "GROUP", GROUP, self.name, "COUNT", "10",
                                        "STREAMS", STREAM, ">"))

    def reclaim(self):
        """XAUTOCLAIM what has been idle for a lease: (next cursor, entries, deleted ids)."""
        cursor, claimed, deleted = plain(self.conn.call(
            "XAUTOCLAIM", STREAM, GROUP, self.name, str(LEASE_MS), "0-0", "COUNT", "10"))
        entries = [(sid, dict(zip(pairs[::2], pairs[1::2], strict=True))) for sid, pairs in claimed]
        return cursor, entries, deleted

    def handle(self, sid, env):
        """Process one entry: XACK on success; a poison entry counts a failure and, past the
        bound, is parked on the dead-letter stream, then acknowledged."""
        if env[b"type"] != b"order.poison":
            assert self.conn.call("XACK", STREAM, GROUP, sid) == (":", 1)
            return "done"
        key = f"emq:{{{TOPIC}}}:failures:{sid.decode()}"
        count = self.conn.call("INCR", key)[1]
        assert self.conn.call("EXPIRE", key, str(FAILURE_TTL)) == (":", 1)
        if count < MAX_FAILURES:
            return "retry"
        assert self.conn.call("XADD", DLQ, "*", *[x for kv in env.items() for x in kv])[0] == "$"
        assert self.conn.call("XACK", STREAM, GROUP, sid) == (":", 1)
        return "parked"

    def close(self):
        self.conn.close()


def pass_the_lease(target, admin):
    if target.is_fakekey:
        admin.call("FAKEKEY.CLOCK", "ADVANCE", str(LEASE_MS))
    else:
        time.sleep(LEASE_MS / 1000 + 0.02)


def test_durable_bus_with_reclaim_and_dead_letters(target, proto):
    admin = target.raw()
    subscriber = target.raw(proto)
    w1, w2 = Worker(target, proto, "w1"), Worker(target, proto, "w2")
    try:
        if target.is_fakekey:
            admin.call("FAKEKEY.CLOCK", "SET", str(int(time.time() * 1000)))
        assert admin.call("XGROUP", "CREATE", STREAM, GROUP, "$", "MKSTREAM") == ("+", b"OK")
        w1.park()
        wait_blocked(admin, 1)
        w2.park()
        wait_blocked(admin, 2)

        # the producer: a batch append as a pipeline, replies dropped
        batch = [envelope(1), envelope(2), envelope(3), envelope(4, "order.poison")]
        admin.pipeline(*[("XADD", STREAM, "MAXLEN", "~", "1000", "*", *fields(env)) for env in batch])
        ids = [sid for sid, _ in delivered(admin.call("XREAD", "STREAMS", STREAM, "0"))]
        assert len(ids) == 4

        # each XADD wakes the first parked worker: w1 gets the first entry, w2 the second
        [(first, env1)] = w1.woken()
        [(second, env2)] = w2.woken()
        assert (first, second) == (ids[0], ids[1])
        assert env1 == {k.encode(): v.encode() for k, v in envelope(1).items()}
        assert env2[b"id"] == b"evt-2"
        assert w1.handle(first, env1) == "done"

        # w1 takes the rest; the poison entry fails once
        rest = w1.read_new()
        assert [sid for sid, _ in rest] == ids[2:]
        assert [w1.handle(sid, env) for sid, env in rest] == ["done", "retry"]

        # w2 dies holding its entry
        w2.close()
        summary = plain(admin.call("XPENDING", STREAM, GROUP))
        assert summary == [2, ids[1], ids[3], [[b"w1", b"1"], [b"w2", b"1"]]]

        # before the lease has passed nothing can be reclaimed
        assert w1.reclaim() == (b"0-0", [], [])
        pass_the_lease(target, admin)
        cursor, claimed, deleted = w1.reclaim()
        assert (cursor, [sid for sid, _ in claimed], deleted) == (b"0-0", [ids[1], ids[3]], [])
        assert [w1.handle(sid, env) for sid, env in claimed] == ["done", "parked"]

        # everything is settled: nothing pending, the poison entry parked once
        assert plain(admin.call("XPENDING", STREAM, GROUP)) == [0, None, None, None]
        parked = delivered(admin.call("XREAD", "STREAMS", DLQ, "0"))
        assert [env for _, env in parked] == [{k.encode(): v.encode() for k, v in envelope(4, "order.poison").items()}]
        failures = f"emq:{{{TOPIC}}}:failures:{ids[3].decode()}"
        assert admin.call("GET", failures) == ("$", str(MAX_FAILURES).encode())
        assert 0 < admin.call("TTL", failures)[1] <= FAILURE_TTL
        consumers = {c[1]: c[3] for c in plain(admin.call("XINFO", "CONSUMERS", STREAM, GROUP))}
        assert consumers == {b"w1": 0, b"w2": 0}
        group = plain(admin.call("XINFO", "GROUPS", STREAM))[0]
        assert group[group.index(b"entries-read") + 1] == 4 and group[group.index(b"lag") + 1] == 0

        # retention: keep the newest two; the group is unaffected
        assert admin.call("XTRIM", STREAM, "MAXLEN", "2") == (":", 2)
        assert admin.call("XLEN", STREAM) == (":", 2)
        assert w1.read_new() == []

        # the ephemeral tier: PUBLISH reaches live subscribers only
        subscriber.call("SUBSCRIBE", LIVE)
        message = json.dumps(envelope(5))
        assert admin.call("PUBLISH", LIVE, message) == (":", 1)
        kind, frame = subscriber.read()
        assert kind == (">" if proto == 3 else "*")
        assert plain((kind, frame)) == [b"message", LIVE.encode(), message.encode()]
    finally:
        w1.close()
        w2.close()
        subscriber.close()
        admin.close()
