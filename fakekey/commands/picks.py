"""Replies made of repeated random picks: SRANDMEMBER, HRANDFIELD and ZRANDMEMBER with a
negative count.

Valkey accepts any negative count down to -LONG_MAX (or -LONG_MAX/2 with values/scores)
and answers that many picks, building the whole reply first. fakekey builds a reply of up
to `STREAM_ABOVE` picks at once; a bigger one is streamed (`fakekey.resp.streaming`): other
clients keep their service and memory stays bounded, whatever the count. Where a reply
cannot be streamed because it becomes part of another (inside EXEC, or `redis.call` in a
script), a count past the bound answers an error instead (docs/differences.md). The
checks Valkey itself makes (range, type, a missing key's empty reply) come first.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from fakekey.resp.replies import ReplyError
from fakekey.resp.streaming import StreamedReply

if TYPE_CHECKING:
    from fakekey.core.client import Client

# About 100 ms of work for the costliest reply form (RESP3 member/score pairs).
STREAM_ABOVE = 20_000
PICKS_PER_CHUNK = 1024
TOO_MANY_PICKS = ReplyError(
    f"ERR value is out of range, fakekey answers at most {STREAM_ABOVE} repeated picks "
    "inside a transaction or a script"
)

# k picks -> the reply's elements for them (a flat pair is two elements)
PickChunk = Callable[[int], list[Any]]


def draws(population: list[Any]) -> PickChunk:
    """k picks from `population`, repeats allowed."""
    return lambda k: random.choices(population, k=k)


def repeated_picks(c: Client, picks: int, live: PickChunk, snapshot: Callable[[], PickChunk],
                   elements_per_pick: int = 1) -> Any:
    """The reply for `picks` random picks with repetition: built at once from the value
    (`live`) when small, else streamed (or refused where it cannot be), drawn from
    `snapshot()`: the value as it is now, as Valkey's reply is."""
    if picks <= STREAM_ABOVE:
        return live(picks)
    if c.reply_mode != "on":
        return []  # a reply nobody sends is not built
    connection = c.connection
    if connection is None or c.state.deny_blocking or c.state.current_client is not c:
        raise TOO_MANY_PICKS  # part of an EXEC's or a script's reply: built whole, bounded
    chunk = snapshot()
    left = picks

    def next_elements() -> list[Any]:
        nonlocal left
        k = min(PICKS_PER_CHUNK, left)
        left -= k
        return chunk(k)

    hard_limit = c.state.output_hard_limit("normal")
    return StreamedReply(c, picks * elements_per_pick, next_elements, hard_limit).start()
