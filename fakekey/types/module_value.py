"""Values of an emulated module's own data type (a bloom filter, a JSON document), as
Valkey stores a module's: TYPE answers the type's 9-character name, every built-in
command meets them as WRONGTYPE, and DUMP and RDB files carry them as a module value
(RDB_TYPE_MODULE_2: the type's 64-bit id, then the module's own payload), which only a
server with the same module loads back."""

from __future__ import annotations

from typing import ClassVar

from fakekey.types.value import Configured

# Valkey's module type names: 9 characters of this set (moduleTypeEncodeId)
NAME_CHARSET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"


class ModuleValue:
    """The base of an emulated module type. A subclass sets TYPE_NAME and ENCODING_VERSION,
    implements `payload`, `from_payload` and `copy`, and registers itself with
    `register_module_type` where it is defined."""

    TYPE_NAME: ClassVar[str] = ""  # TYPE's answer, the module type's 9-character name
    ENCODING_VERSION: ClassVar[int] = 0  # the module's encver, 0..1023, saved with each value
    MODULE_NAME: ClassVar[str] = ""  # the module's name (MODULE LIST), for the loader's messages
    # True: `payload` is what the module's rdb_save writes through RedisModule_Save*
    # (opcode-tagged fields, without the closing EOF), written as it is, so DUMP's bytes
    # are the module's. False: it is one opaque blob, written as one module string field.
    MODULE_IO: ClassVar[bool] = False

    def __len__(self) -> int:
        return 1  # a module value is never "emptied" away by the write funnel

    def copy(self) -> ModuleValue:
        raise NotImplementedError

    def encoding(self, state: Configured) -> bytes:
        return b"raw"  # OBJECT ENCODING of a module value in Valkey

    def payload(self) -> bytes:
        """The value's own serialization (what the module's rdb_save writes)."""
        raise NotImplementedError

    @classmethod
    def from_payload(cls, data: bytes, encoding_version: int) -> ModuleValue:
        """The value `payload` wrote; ValueError when `data` is not one."""
        raise NotImplementedError

    def memory_usage(self) -> int:
        """MEMORY USAGE's estimate of the value's own bytes."""
        return len(self.payload())

    def rewrite_commands(self, key: bytes) -> list[list[bytes]] | None:
        """The commands the module's aof_rewrite emits to rebuild the value at `key` in an
        AOF base of commands (RedisBloom's BF.LOADCHUNK...); None: RESTORE of its DUMP."""
        return None


MODULE_TYPES: dict[str, type[ModuleValue]] = {}  # by TYPE_NAME: filled at import, read-only after


def register_module_type(cls: type[ModuleValue]) -> type[ModuleValue]:
    """Make a module type known to DUMP, RESTORE and the RDB reader (a class decorator)."""
    name = cls.TYPE_NAME
    if len(name) != 9 or any(ch not in NAME_CHARSET for ch in name):
        raise ValueError(f"a module type name is 9 characters of [A-Za-z0-9_-]: {name!r}")
    MODULE_TYPES[name] = cls
    return cls


def module_type_id(name: str, encoding_version: int) -> int:
    """Valkey's 64-bit module type id: the name's 9 characters, 6 bits each, then the
    10-bit encoding version (moduleTypeEncodeId)."""
    ident = 0
    for ch in name:
        ident = (ident << 6) | NAME_CHARSET.index(ch)
    return (ident << 10) | (encoding_version & 1023)


def module_type_of_id(ident: int) -> tuple[str, int]:
    """The (name, encoding version) an id encodes (moduleTypeNameByID)."""
    encoding_version = ident & 1023
    ident >>= 10
    chars = []
    for _ in range(9):
        chars.append(NAME_CHARSET[ident & 63])
        ident >>= 6
    return "".join(reversed(chars)), encoding_version
