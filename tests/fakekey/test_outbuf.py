"""Valkey's output-buffer layout as fakekey/core/outbuf.py replays it: the figures a real
Valkey 9.1.2 showed for the same replies (the conformance side: test_output_buffers.py)."""

from __future__ import annotations

from fakekey.core.outbuf import (
    NODE_OVERHEAD,
    STATIC_BUFFER,
    Ledger,
    bulk_wire,
    pubsub_memory,
    resized_buffer,
    usable,
)

SHRUNK = 1032
MB = 1 << 20


def references(ledger: Ledger, count: int, length: int) -> None:
    wire = bulk_wire(length)
    ledger.add(count * wire, [(i * wire, wire) for i in range(count)])


def test_glibc_usable_sizes():
    assert [usable(n) for n in (1024, 1033, 2064, 2096, 16384, 16416)] == [1032, 1048, 2072, 2104, 16392, 16424]
    assert STATIC_BUFFER == 16392


def test_bulk_wire_counts_the_length_line_and_crlf():
    assert bulk_wire(1048576) == 1048576 + 12
    assert bulk_wire(300_000) == 300_011


def test_references_in_the_static_buffer_share_a_header():
    """Valkey: GET big x3 -> obl 68; then PING -> 95; then GET big -> 131; a plain
    reply merges with the plain run before it (PING PING -> +7)."""
    ledger = Ledger(SHRUNK)
    references(ledger, 3, MB)
    assert ledger.obl() == 68
    ledger.add(7, None)
    assert ledger.obl() == 95
    ledger.add(7, None)
    references(ledger, 1, MB)
    assert ledger.obl() == 138
    assert (ledger.oll(), ledger.omem()) == (0, 0)  # nothing counts before a write takes them


def test_a_plain_static_buffer_takes_no_reference():
    """Valkey: PING then GET big x3 -> obl 0 once sent, one encoded block in the list."""
    ledger = Ledger(SHRUNK)
    ledger.add(7, None)
    references(ledger, 3, MB)
    assert (ledger.obl(), ledger.oll()) == (7, 1)
    ledger.written(2_807_808)
    assert ledger.obl() == 0
    assert ledger.omem() == 16424 + 24 + 3 * bulk_wire(MB)


def test_a_write_takes_the_static_buffer_and_its_references_count_until_it_is_sent():
    """Valkey: 100 GETs of 1 MB on a 1 KB static buffer: obl 1028 (63 references), one
    block holds the rest, uncounted; omem 66077492."""
    ledger = Ledger(SHRUNK)
    references(ledger, 100, MB)
    ledger.written(2_809_856)
    assert (ledger.obl(), ledger.oll(), ledger.omem()) == (1028, 1, 66_077_492)


def test_the_next_write_waits_when_the_socket_is_nearly_full():
    """Valkey: 1000 GETs of 40000 bytes: the static buffer's 63 replies (2.5 MB) fill the
    socket past two thirds; no write takes the block after: omem 16448. With 20000
    bytes the next write takes the block: its 937 references count (omem 18765818)."""
    ledger = Ledger(SHRUNK)
    references(ledger, 1000, 40_000)
    ledger.written(2_809_856)
    assert (ledger.obl(), ledger.oll(), ledger.omem()) == (0, 1, 16448)
    ledger = Ledger(SHRUNK)
    references(ledger, 1000, 20_000)
    ledger.written(2_809_856)
    assert (ledger.obl(), ledger.oll(), ledger.omem()) == (0, 1, 18_765_818)


def test_copied_replies_fill_16kb_blocks():
    ledger = Ledger(SHRUNK)
    ledger.add(10 * MB, None)
    assert ledger.obl() == SHRUNK
    blocks = -(-(10 * MB - SHRUNK) // 16392)
    assert ledger.oll() == blocks
    assert ledger.omem() == blocks * (16392 + NODE_OVERHEAD)
    ledger.written(3 * MB)  # the socket took 3 MB: the static buffer and the first blocks go
    assert ledger.obl() == 0
    assert ledger.oll() in (-(-(7 * MB) // 16392), -(-(7 * MB) // 16392) + 1)  # the first partly sent


def test_a_message_by_reference_after_its_plain_header():
    """Valkey: a subscriber that does not read 100 messages of 100000 bytes: one block,
    the message whose write filled the socket counted (omem 116459)."""
    frame = len(b"*3\r\n$7\r\nmessage\r\n$2\r\nch\r\n")
    wire = bulk_wire(100_000)
    ledger = Ledger(SHRUNK)
    ledger.add(frame + wire, [(frame, wire)])
    for _ in range(27):  # the socket takes them whole
        ledger.written(frame + wire)
        ledger.add(frame + wire, [(frame, wire)])
    ledger.written(50_000)  # the socket fills in the 29th
    for _ in range(71):
        ledger.add(frame + wire, [(frame, wire)])
    assert (ledger.obl(), ledger.oll(), ledger.omem()) == (0, 1, 116_459)


def test_drained_output_makes_the_next_write_take_the_head():
    ledger = Ledger(SHRUNK)
    references(ledger, 100, MB)
    ledger.written(2 * MB)
    ledger.drained(ledger.wire - 10 * MB)  # the client read all but 10 MB
    assert ledger.obl() == 0 and ledger.oll() == 1
    assert ledger.omem() == 16448 + 37 * bulk_wire(MB)  # the block's references now count
    ledger.drained(ledger.wire)
    assert (ledger.wire, ledger.oll(), ledger.omem()) == (0, 0, 0)


def test_the_cron_resizes_the_static_buffer_as_valkey():
    """16 KB -> 1 KB when idle; a reply that fills it doubles it, then it shrinks to the
    peak + 1 (Valkey's rbs 1032 -> 2072 -> 1048, stable while the peak is 1032)."""
    assert resized_buffer(STATIC_BUFFER, 0) == 1032
    assert resized_buffer(STATIC_BUFFER, STATIC_BUFFER) == 0
    assert resized_buffer(1032, 1032) == 2072
    assert resized_buffer(2072, 1032) == 1048
    assert resized_buffer(1048, 1032) == 0
    assert resized_buffer(1048, 1048) == 2104
    assert resized_buffer(8312, 8312) == 16392  # doubling stops at 16 KB


def test_subscription_tables():
    assert pubsub_memory(0, 0, 0) == 0
    assert pubsub_memory(1, 0, 0) == pubsub_memory(5, 0, 0) == pubsub_memory(0, 0, 1) == 304
    assert pubsub_memory(1, 1, 0) == pubsub_memory(9, 0, 0) == 368
