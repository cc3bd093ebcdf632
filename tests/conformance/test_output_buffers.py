"""Output buffers as Valkey 9.1 counts them, on both targets: CLIENT LIST obl, oll, omem,
rbs and tot-mem of a client that does not read (its replies wait in 16 KB blocks; strings
of 16 KB or more go by reference and count once a write has taken them),
client-output-buffer-limit on those figures, and the client memory INFO and MEMORY STATS
report. fakekey/core/outbuf.py has the rules.

A "slow reader" has a small receive window and never reads after its setup: the kernel's
socket buffers take the first megabytes of its replies, the server keeps the rest."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator

import pytest

from fakekey.testing.raw import RawClient, encode_command
from fakekey.testing.targets import Target

MB = 1 << 20
BLOCK = 16392  # a reply-list block's payload (16 KB, the allocation's slack)
NODE = 16448  # and the block as omem counts it, with its list node and fields
SLACK = 32  # what an allocation may give beyond its size class (a reused chunk not split)
SHRUNK = 1032  # the static buffer once the cron has shrunk it (1 KB, the allocation's slack)
CLIENT_STRUCT = 584
HEADER, REFERENCE = 20, 16  # in a buffer holding references: a run's header, a reference


@pytest.fixture
def admin(target: Target) -> Iterator[RawClient]:
    """A RESP2 client; the output limits are put back after the test."""
    with target.raw(2) as client:
        saved = client.call("CONFIG", "GET", "client-output-buffer-limit")[1][1][1]
        try:
            yield client
        finally:
            with target.raw(2) as restorer:  # the test's client may have been closed
                restorer.call("CONFIG", "SET", "client-output-buffer-limit", saved)


class SlowReader:
    """A connection that stops reading after its setup."""

    def __init__(self, target: Target, proto: int) -> None:
        sock = socket.socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        sock.connect((target.host, target.port))
        self.client = RawClient.__new__(RawClient)
        self.client.sock, self.client.buf = sock, b""
        if proto == 3:
            assert self.client.call("HELLO", "3")[0] == "%"
        self.id = self.client.call("CLIENT", "ID")[1]

    def send(self, *commands: tuple[object, ...]) -> None:
        self.client.sock.sendall(b"".join(encode_command(*command) for command in commands))

    def close(self) -> None:
        self.client.close()


@pytest.fixture
def slow(target: Target, proto: int) -> Iterator[SlowReader]:
    reader = SlowReader(target, proto)
    yield reader
    reader.close()


def fields(admin: RawClient, client_id: int) -> dict[str, str]:
    """The client's CLIENT LIST fields ({} once it is gone)."""
    line = admin.call("CLIENT", "LIST", "ID", str(client_id))[1].decode().strip()
    return dict(field.split("=", 1) for field in line.split(" ")) if line else {}


def number(admin: RawClient, client_id: int, name: str) -> int:
    return int(fields(admin, client_id)[name])


def wait_for(predicate, seconds: float = 15.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return False


def commands_run(admin: RawClient, reader: SlowReader) -> int:
    return number(admin, reader.id, "tot-cmds")


def settled(admin: RawClient, reader: SlowReader, done: int = 0) -> dict[str, int]:
    """The reader's figures once it has run `done` commands in all and their replies
    went as far as the socket takes them."""
    assert wait_for(lambda: commands_run(admin, reader) >= done)
    time.sleep(0.3)  # the last write
    return {name: int(value) if value.lstrip("-").isdigit() else value
            for name, value in fields(admin, reader.id).items()}


def shrunk(admin: RawClient, reader: SlowReader) -> int:
    """The cron has shrunk the reader's static buffer to 1 KB (its replies were small);
    how many references it takes."""
    assert wait_for(lambda: number(admin, reader.id, "rbs") < SHRUNK + SLACK)
    return (number(admin, reader.id, "rbs") - HEADER) // REFERENCE


def info_field(admin: RawClient, section: str, name: str) -> int:
    for line in admin.call("INFO", section)[1].decode().splitlines():
        if line.startswith(name + ":"):
            return int(line.split(":", 1)[1])
    raise AssertionError(f"no {name} in INFO {section}")


def disconnections(admin: RawClient) -> int:
    return info_field(admin, "stats", "client_output_buffer_limit_disconnections")


def unsent(reader_fields: dict, replies_before: int, replied: int) -> int:
    """The reply bytes the socket has not taken: what was sent before the test's
    commands, plus their replies, less what the socket took (tot-net-out)."""
    return replies_before + replied - reader_fields["tot-net-out"]


def assert_blocks_hold(reader_fields: dict, pending: int) -> None:
    """Copied replies: the static buffer, then 16 KB blocks packed full; omem counts
    the blocks (the first may be partly sent, the last partly filled)."""
    oll, obl = reader_fields["oll"], reader_fields["obl"]
    assert NODE * oll <= reader_fields["omem"] <= (NODE + SLACK) * oll
    assert 0 <= obl <= reader_fields["rbs"]
    assert pending - obl - BLOCK <= oll * BLOCK <= pending + 2 * BLOCK


# --- CLIENT LIST ------------------------------------------------------------------------------


def test_an_idle_client_holds_no_output_and_its_reply_buffer_shrinks(admin, slow):
    shrunk(admin, slow)
    idle = fields(admin, slow.id)
    assert (idle["obl"], idle["oll"], idle["omem"], idle["events"]) == ("0", "0", "0", "r")
    assert int(idle["tot-mem"]) == CLIENT_STRUCT + int(idle["rbs"])


def test_a_new_client_has_a_16kb_reply_buffer(target, admin):
    with target.raw(2) as fresh:
        line = fresh.call("CLIENT", "INFO")[1].decode()
    info = dict(field.split("=", 1) for field in line.split())
    if info["rbs"] == "16392":  # the cron did not visit it yet
        assert int(info["tot-mem"]) == CLIENT_STRUCT + 16392 + 10 + 16  # "client" "info": 2 arguments


def test_pipelined_small_replies_wait_in_16kb_blocks(admin, slow):
    admin.call("SET", "v", "x" * 1000)  # under 16 KB: copied into the buffers
    before, ran = number(admin, slow.id, "tot-net-out"), commands_run(admin, slow)
    slow.send(*[("GET", "v")] * 8000)
    after = settled(admin, slow, ran + 8000)
    assert after["events"] == "rw"
    assert_blocks_hold(after, unsent(after, before, 8000 * len(b"$1000\r\n" + b"x" * 1000 + b"\r\n")))
    assert after["oll"] > 200  # megabytes wait
    assert after["omem"] <= after["tot-mem"] <= after["omem"] + CLIENT_STRUCT + after["rbs"] + 64 * 1024


def test_big_strings_count_once_a_write_takes_them(admin, slow):
    """GET of a 300 KB string: Valkey's 1 KB static buffer takes 63 references, the
    first write takes the buffer (and the socket part of it): those 63 count at their
    size; the 37 references in the list's block wait uncounted (16 bytes each)."""
    admin.call("SET", "big", "x" * 300_000)
    taken = shrunk(admin, slow)  # 63
    ran = commands_run(admin, slow)
    slow.send(*[("GET", "big")] * 100)
    after = settled(admin, slow, ran + 100)
    reply = len(b"$300000\r\n") + 300_000 + 2
    assert (after["obl"], after["oll"]) == (HEADER + taken * REFERENCE, 1)
    assert taken * reply + NODE <= after["omem"] <= taken * reply + NODE + SLACK
    assert after["omem"] <= after["tot-mem"] <= after["omem"] + CLIENT_STRUCT + after["rbs"] + 64 * 1024


def test_a_subscriber_that_does_not_read(admin, slow, proto):
    """Messages of 16 KB and more go by reference: the one whose write filled the socket
    counts, those after it cost their block only. Smaller ones are copied."""
    slow.send(("SUBSCRIBE", "ch"))
    assert wait_for(lambda: admin.call("PUBSUB", "NUMSUB", "ch")[1][1] == (":", 1))
    for _ in range(100):
        assert admin.call("PUBLISH", "ch", "x" * 100_000) == (":", 1)
    big = settled(admin, slow)
    assert (big["obl"], big["oll"]) == (0, 1)
    counted = NODE + len(b"$100000\r\n") + 100_000 + 2
    assert counted <= big["omem"] <= counted + SLACK
    assert "P" in big["flags"] and big["events"] == "rw"


def test_a_subscriber_to_small_messages_holds_them_in_blocks(admin, slow, proto):
    slow.send(("SUBSCRIBE", "ch"))
    assert wait_for(lambda: admin.call("PUBSUB", "NUMSUB", "ch")[1][1] == (":", 1))
    before = number(admin, slow.id, "tot-net-out")  # the confirmation included
    for _ in range(12):
        admin.pipeline(*[("PUBLISH", "ch", "x" * 1000)] * 500)
    after = settled(admin, slow)
    message = len(b"*3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$1000\r\n") + 1000 + 2
    assert_blocks_hold(after, unsent(after, before, 6000 * message))


def test_a_monitor_that_does_not_read(admin, slow):
    addr = dict(f.split("=", 1) for f in admin.call("CLIENT", "INFO")[1].decode().split())["addr"]
    slow.send(("MONITOR",))
    assert wait_for(lambda: "O" in fields(admin, slow.id)["flags"])
    before = number(admin, slow.id, "tot-net-out")
    value = "x" * 1000
    for _ in range(12):
        assert admin.pipeline(*[("SET", "m", value)] * 500)[-1] == ("+", b"OK")
    after = settled(admin, slow)
    line = len(f'+1700000000.000000 [0 {addr}] "SET" "m" "{value}"\r\n')
    # the admin's own commands (CLIENT LIST, ...) are fed to the monitor too: a few lines more
    pending = unsent(after, before, 6000 * line)
    assert NODE * after["oll"] <= after["omem"] <= (NODE + SLACK) * after["oll"]
    assert pending - after["obl"] - BLOCK <= after["oll"] * BLOCK <= pending + 3 * BLOCK


# --- client-output-buffer-limit -------------------------------------------------------------


def test_a_client_is_closed_at_its_hard_limit(admin, slow):
    assert admin.call("CONFIG", "SET", "client-output-buffer-limit", "normal 2mb 0 0") == ("+", b"OK")
    admin.call("SET", "v", "x" * 1000)
    dropped = disconnections(admin)
    slow.send(*[("GET", "v")] * 8000)
    assert wait_for(lambda: disconnections(admin) == dropped + 1)
    assert wait_for(lambda: fields(admin, slow.id) == {})


def test_a_client_over_its_soft_limit_is_kept_for_its_seconds_then_closed(admin, slow):
    assert admin.call("CONFIG", "SET", "client-output-buffer-limit", "normal 0 1mb 3") == ("+", b"OK")
    admin.call("SET", "v", "x" * 1000)
    dropped = disconnections(admin)
    slow.send(*[("GET", "v")] * 8000)
    assert wait_for(lambda: number(admin, slow.id, "omem") >= MB)
    assert disconnections(admin) == dropped  # over the soft limit: not yet for its seconds
    # no more output comes: the cron closes it once the seconds have passed
    assert wait_for(lambda: disconnections(admin) == dropped + 1)
    assert wait_for(lambda: fields(admin, slow.id) == {})


@pytest.mark.parametrize("limit, kept", [("20mb", True), ("15mb", False)])
def test_big_strings_no_write_took_do_not_count_against_the_limit(admin, slow, limit, kept):
    """30 MB of 300 KB strings wait; 63 of them (19 MB) count: a 20 MB limit keeps the
    client, a 15 MB one closes it."""
    assert admin.call("CONFIG", "SET", "client-output-buffer-limit", f"normal {limit} 0 0") == ("+", b"OK")
    admin.call("SET", "big", "x" * 300_000)
    shrunk(admin, slow)
    dropped, ran = disconnections(admin), commands_run(admin, slow)
    slow.send(*[("GET", "big")] * 100)
    if not kept:
        assert wait_for(lambda: disconnections(admin) == dropped + 1)
        return
    assert settled(admin, slow, ran + 100)["omem"] < 20 * MB
    assert disconnections(admin) == dropped
    slow.client.sock.settimeout(30)
    for _ in range(100):  # every reply arrives once it reads
        assert slow.client.read() == ("$", b"x" * 300_000)
    assert wait_for(lambda: [fields(admin, slow.id)[name] for name in ("obl", "oll", "omem", "events")]
                    == ["0", "0", "0", "r"])


def test_a_subscriber_to_big_messages_is_kept_under_its_pubsub_limit(admin, slow):
    assert admin.call("CONFIG", "SET", "client-output-buffer-limit", "pubsub 2mb 0 0") == ("+", b"OK")
    dropped = disconnections(admin)
    slow.send(("SUBSCRIBE", "ch"))
    assert wait_for(lambda: admin.call("PUBSUB", "NUMSUB", "ch")[1][1] == (":", 1))
    for _ in range(100):  # 10 MB of messages, by reference
        assert admin.call("PUBLISH", "ch", "x" * 100_000) == (":", 1)
    assert disconnections(admin) == dropped
    for _ in range(300):  # 3 MB of small ones, copied: past the limit
        if admin.call("PUBLISH", "ch", "x" * 10_000) == (":", 0):
            break
    assert wait_for(lambda: disconnections(admin) == dropped + 1)


# --- INFO and MEMORY STATS ---------------------------------------------------------------------


def test_client_memory_in_info_and_memory_stats(admin, slow):
    admin.call("SET", "big", "x" * 300_000)
    shrunk(admin, slow)
    ran = commands_run(admin, slow)
    slow.send(*[("GET", "big")] * 100)
    omem = settled(admin, slow, ran + 100)["omem"]
    assert omem > 18 * MB
    assert wait_for(lambda: info_field(admin, "clients", "client_recent_max_output_buffer") >= omem)
    assert omem <= info_field(admin, "memory", "mem_clients_normal") <= omem + MB
    stats = dict(zip(*[iter(admin.call("MEMORY", "STATS")[1])] * 2, strict=True))
    assert omem <= stats[("$", b"clients.normal")][1] <= omem + MB
