"""A bound on replies made of repeated random picks: SRANDMEMBER, HRANDFIELD and
ZRANDMEMBER with a negative count.

Valkey accepts any negative count down to -LONG_MAX (or -LONG_MAX/2 with values/scores)
and answers that many picks: `SRANDMEMBER s -2147483647` holds a real server for minutes
while its reply grows to tens of gigabytes. fakekey builds each reply whole before it
sends it (there are no streamed replies in this architecture), so such a request would
freeze every client and exhaust memory. Past MAX_REPEATED_PICKS it answers an error in
Valkey's words instead; the checks Valkey itself makes (range, type, a missing key's
empty reply) come first and are unchanged.
"""

from __future__ import annotations

from fakekey.resp.replies import ReplyError

# About 100 ms of work for the costliest reply form (RESP3 member/score pairs) on an idle
# machine; a test asking for more random picks than this is rare.
MAX_REPEATED_PICKS = 20_000
TOO_MANY_PICKS = ReplyError(
    f"ERR value is out of range, fakekey answers at most {MAX_REPEATED_PICKS} repeated picks"
)


def check_repeated_picks(count: int) -> None:
    """Refuse a negative count asking for more picks than fakekey builds in one reply."""
    if count < -MAX_REPEATED_PICKS:
        raise TOO_MANY_PICKS
