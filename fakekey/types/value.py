"""What every stored container value is (a string is `bytes` or `bytearray`): the contract the
keyspace and the commands rely on, stated once. HashValue, ListValue, SetValue, ZSet and
StreamValue satisfy it (tests/fakekey/test_stored_value.py)."""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable


class Settings(Protocol):
    """Settings by name: the server's Config, or a plain mapping."""

    def __getitem__(self, name: str) -> Any: ...


class Configured(Protocol):
    """The server a value is stored in, as the types see it: its settings (the encoding
    thresholds, hash-max-listpack-entries and the like)."""

    @property
    def config(self) -> Settings: ...


@runtime_checkable
class StoredValue(Protocol):
    TYPE_NAME: str  # TYPE's answer: "hash", "list", "set", "zset", "stream"

    def __len__(self) -> int:
        """Its elements; the write funnel deletes a key whose value is left empty."""
        ...

    def copy(self) -> StoredValue:
        """A deep copy (COPY, and snapshots)."""
        ...

    def encoding(self, state: Configured) -> bytes:
        """OBJECT ENCODING's answer, from the size thresholds in `state.config`."""
        ...
