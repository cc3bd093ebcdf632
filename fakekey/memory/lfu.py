"""Valkey's LFU access counters (evict.c), kept while maxmemory-policy is an LFU policy.

Each key has Valkey's 24 bits: the minutes clock (16 bits) of its last decrement, and a
logarithmic 8-bit counter. A new value starts at LFU_INIT_VAL; an access first decays the
counter by one per `lfu-decay-time` minutes idle, then increments it with probability
1 / ((counter - LFU_INIT_VAL) * lfu-log-factor + 1). OBJECT FREQ reads the decayed value
without touching it. Time is the server clock (the command's snapshot)."""

from __future__ import annotations

import random

LFU_INIT_VAL = 5


def minutes(now_ms: int) -> int:
    """LFUGetTimeInMinutes: the minutes clock, 16 bits."""
    return (now_ms // 60000) & 65535


def fresh(now_ms: int) -> int:
    """The packed counter of a value created now."""
    return minutes(now_ms) << 8 | LFU_INIT_VAL


def decayed(packed: int, now_ms: int, decay_time: int) -> int:
    """LFUDecrAndReturn: the counter less one per decay_time minutes since it was set."""
    counter = packed & 255
    if not decay_time:
        return counter
    then, now = packed >> 8, minutes(now_ms)
    elapsed = now - then if now >= then else 65535 - then + now
    periods = elapsed // decay_time
    return 0 if periods > counter else counter - periods


def accessed(packed: int, now_ms: int, decay_time: int, log_factor: int) -> int:
    """updateLFU: decay, then a logarithmic increment, stamped with the minutes now."""
    counter = decayed(packed, now_ms, decay_time)
    if counter < 255:
        base = max(0, counter - LFU_INIT_VAL)
        if random.random() < 1.0 / (base * log_factor + 1):
            counter += 1
    return minutes(now_ms) << 8 | counter
