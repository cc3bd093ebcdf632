"""Persistence: snapshots (`snapshot.py`), the append-only log (`aof.py`), the value
codec both use (`codec.py`), and the manager that runs them as Valkey does
(`manager.py`). The formats are fakekey's own: docs/persistence.md."""

from fakekey.persistence.manager import Persistence
from fakekey.persistence.snapshot import LoadError

__all__ = ["LoadError", "Persistence"]
