"""The cyclic garbage collector in a process fakekey-server owns.

CPython's full collection traverses every object it tracks, and it starts by itself
whenever the objects that survived grew by a quarter since the last one: holding 1,000,000
small hashes, each full collection holds the process 0.4 s, every client frozen (Valkey
has no such pause). The data set holds no reference cycles (a value is a tree of
containers), and the server breaks the cycles it makes (a closed connection: net/server.py),
so fakekey-server:

- never lets a full collection start by itself; the young generations are still collected
  as usual, each costing what the young objects cost;
- moves what exists once the data is loaded out of the collector's sight (`gc.freeze`):
  later collections never walk it;
- runs a full collection from a timer only while it is cheap: the servers hold few keys.

A Server started in someone else's process (a test's fixture) leaves that process's
collector alone: its settings are the process owner's to choose.
"""

from __future__ import annotations

import gc
from collections.abc import Callable

# a full collection walks ~2 objects per small container key, about 0.4 µs each: at this
# many keys it costs ~10 ms, the most one timer tick may take
CHEAP_KEYS = 25_000
EVERY_S = 60.0
# the oldest generation's threshold: never reached (collections of generation 1 count it)
NEVER = 2**31 - 1


def own_the_collector() -> None:
    """From now on no full collection starts by itself in this process."""
    young, middle, _ = gc.get_threshold()
    gc.set_threshold(young, middle, NEVER)


def set_aside_what_lives() -> None:
    """What lives now (the loaded data, the server's tables) is never traversed again.
    Garbage in cycles is collected first, so none is kept for good."""
    gc.collect()
    gc.freeze()


def collect_if_cheap(count_keys: Callable[[], int]) -> bool:
    """A full collection, when the servers' keys are few enough for it to be quick."""
    if count_keys() > CHEAP_KEYS:
        return False
    gc.collect()
    return True
