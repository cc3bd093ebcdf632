"""Memory policy: the used-memory estimate, eviction, LFU counters, lazy freeing."""
