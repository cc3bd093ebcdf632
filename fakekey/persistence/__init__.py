"""Persistence: Valkey's RDB file (`rdbfile.py`) and its loading (`load.py`), fakekey's own
snapshots (`snapshot.py`: the log's base files) and append-only log (`aof.py`), the value
codec those two use (`codec.py`), the manager that runs them as Valkey does (`manager.py`),
and Valkey's value serialization, DUMP's and the RDB file's (`rdb.py`). docs/persistence.md."""
