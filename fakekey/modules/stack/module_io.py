"""What a module's rdb_save writes through RedisModule_Save*, and its rdb_load reads back:
each value an opcode (RDB_MODULE_OPCODE_*) then the value in RDB's own encodings. The
server writes the closing EOF opcode itself, so a payload ends without one (a trailing
EOF is accepted when reading). The sketches' payloads (CMS, Top-K, t-digest) are in this
form, field for field as RedisBloom saves them, so DUMP's bytes are Redis Stack's."""

from __future__ import annotations

import struct

from fakekey.persistence.rdb import FormatError, Reader

OPCODE_EOF = 0
OPCODE_SINT = 1
OPCODE_UINT = 2
OPCODE_DOUBLE = 4
OPCODE_STRING = 5
_U64 = (1 << 64) - 1


def _length(n: int) -> bytes:
    """rdbSaveLen."""
    if n < 1 << 6:
        return bytes((n,))
    if n < 1 << 14:
        return bytes(((n >> 8) | 0x40, n & 0xFF))
    if n <= 0xFFFFFFFF:
        return b"\x80" + n.to_bytes(4, "big")
    return b"\x81" + (n & _U64).to_bytes(8, "big")


class ModuleWriter:
    """RedisModule_SaveUnsigned, SaveSigned, SaveDouble and SaveStringBuffer."""

    def __init__(self) -> None:
        self.parts: list[bytes] = []

    def unsigned(self, value: int) -> None:
        self.parts.append(_length(OPCODE_UINT) + _length(value & _U64))

    def signed(self, value: int) -> None:
        self.parts.append(_length(OPCODE_SINT) + _length(value & _U64))

    def double(self, value: float) -> None:
        self.parts.append(_length(OPCODE_DOUBLE) + struct.pack("<d", value))

    def buffer(self, data: bytes) -> None:
        # a plain length-prefixed string, which every RDB reader takes
        self.parts.append(_length(OPCODE_STRING) + _length(len(data)) + data)

    def payload(self) -> bytes:
        return b"".join(self.parts)


class ModuleReader:
    """The matching RedisModule_Load*; a wrong opcode or a short payload is ValueError."""

    def __init__(self, data: bytes) -> None:
        self.reader = Reader(data)

    def _opcode(self, expected: int) -> None:
        try:
            found = self.reader.length()
        except FormatError as exc:
            raise ValueError(str(exc)) from exc
        if found != expected:
            raise ValueError(f"module value: opcode {found} where {expected} was expected")

    def unsigned(self) -> int:
        self._opcode(OPCODE_UINT)
        return self._length()

    def signed(self) -> int:
        self._opcode(OPCODE_SINT)
        value = self._length()
        return value - (1 << 64) if value >= 1 << 63 else value

    def double(self) -> float:
        self._opcode(OPCODE_DOUBLE)
        try:
            return float(struct.unpack("<d", self.reader.take(8))[0])
        except FormatError as exc:
            raise ValueError(str(exc)) from exc

    def buffer(self) -> bytes:
        self._opcode(OPCODE_STRING)
        try:
            return self.reader.string()
        except FormatError as exc:
            raise ValueError(str(exc)) from exc

    def _length(self) -> int:
        try:
            return self.reader.length()
        except FormatError as exc:
            raise ValueError(str(exc)) from exc

    def remaining(self) -> int:
        """Bytes not read yet."""
        return len(self.reader.data) - self.reader.pos

    def finish(self) -> None:
        """The payload must end here (or with the EOF opcode the server writes)."""
        reader = self.reader
        if not reader.done() and not (reader.data[reader.pos :] == bytes((OPCODE_EOF,))):
            raise ValueError("module value: bytes left after the value")
