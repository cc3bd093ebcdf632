"""Clients' memory in maxmemory's count, and client eviction (maxmemory-clients).

Valkey's used_memory holds its clients' buffers: a query buffer filled by a client that
never ends its request, or replies a client never reads, push the dataset out (key
eviction), or, with `maxmemory-clients` set, get those clients closed first (client
eviction, INFO evicted_clients). fakekey measures its clients in the cron (`hz` times a
second) while either setting is on, as CLIENT LIST's tot-mem: the normal and pub/sub
clients count toward maxmemory (`MemoryTracker.clients_bytes`); the replicas' links do
not (Valkey's mem_not_counted_for_evict). Nothing is measured while both are off."""

from __future__ import annotations

import logging
from functools import partial
from typing import TYPE_CHECKING

from fakekey.commands.clients import client_line, clients_memory_split

if TYPE_CHECKING:
    from fakekey.core.client import Client
    from fakekey.core.state import ServerState

log = logging.getLogger("fakekey.net.server")

# Valkey's floor for maxmemory-clients (a percentage of a small maxmemory included)
MIN_CLIENT_EVICTION_LIMIT = 128 * 1024


def client_eviction_limit(state: ServerState) -> int:
    """maxmemory-clients in bytes (a percentage is of maxmemory); 0: no client eviction."""
    setting = state.config["maxmemory-clients"]
    if setting < 0:
        setting = state.config["maxmemory"] * -setting // 100
    return max(setting, MIN_CLIENT_EVICTION_LIMIT) if setting else 0


def evict_clients(state: ServerState, evictable: list[tuple[int, Client]], counted: int,
                  limit: int) -> int:
    """Valkey's evictClients: close the biggest clients until the clients' memory is under
    `limit`; answers what is left counted."""
    for size, client in sorted(evictable, key=lambda pair: pair[0], reverse=True):
        if counted < limit:
            break
        log.info("Evicting client: %s", client_line(client))
        state.stats["evicted_clients"] += 1
        client.killed = True
        if client.connection is not None:
            client.connection.close()
        counted -= size
    return counted


def measure_and_evict(state: ServerState) -> int:
    """Client eviction when due; answers the clients' share of maxmemory."""
    limit = client_eviction_limit(state)
    counted, _, evictable = clients_memory_split(state)
    if limit and counted >= limit:
        counted = evict_clients(state, evictable, counted, limit)
    return counted


def client_memory_cron(state: ServerState) -> None:
    """The cron's step, while maxmemory or maxmemory-clients is set. The eviction of keys
    measures again (`MemoryTracker.client_meter`) when memory looks short."""
    tracker = state.memory  # made only while maxmemory is set
    if tracker is None:
        if state.config["maxmemory-clients"]:
            measure_and_evict(state)
        return
    if tracker.client_meter is None:
        tracker.client_meter = partial(measure_and_evict, state)
    tracker.clients_bytes = measure_and_evict(state)
