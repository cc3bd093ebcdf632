"""Persistence: snapshots (`snapshot.py`), the append-only log (`aof.py`), the value
codec both use (`codec.py`), the manager that runs them as Valkey does (`manager.py`),
and Valkey's DUMP format (`rdb.py`). The files are fakekey's own: docs/persistence.md."""
