"""A script's shebang line (`#!lua flags=no-writes,allow-oom`): its engine and flags.

Read by EVAL, and below the commands by the CLIENT PAUSE and maxmemory checks, which must
know whether a script declares that it writes before it runs."""

from __future__ import annotations

from fakekey.resp.replies import ReplyError
from fakekey.resp.splitargs import split_args

NO_WRITES = "no-writes"
SCRIPT_FLAGS = frozenset({NO_WRITES, "allow-oom", "allow-stale", "no-cluster", "allow-cross-slot-keys"})


def parse_shebang(body: bytes) -> tuple[bytes | None, frozenset[str], int]:
    """(engine name or None without a shebang, flags, where the code starts). The code
    keeps the shebang's newline so line numbers count the shebang line."""
    if not body.startswith(b"#!"):
        return None, frozenset(), 0
    end = body.find(b"\n")
    if end < 0:
        raise ReplyError("ERR Invalid script shebang")
    parts = split_args(body[:end])
    if not parts:
        raise ReplyError("ERR Invalid engine in script shebang")
    flags: set[str] = set()
    for part in parts[1:]:
        if not part.startswith(b"flags="):
            raise ReplyError(b"ERR Unknown lua shebang option: " + part)
        value = part[6:]
        for flag in value.split(b",") if value else ():
            name = flag.decode("utf-8", "replace")
            if name not in SCRIPT_FLAGS:
                raise ReplyError(b"ERR Unexpected flag in script shebang: " + flag)
            flags.add(name)
    return parts[0][2:], frozenset(flags), end
