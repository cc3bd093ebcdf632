"""The command log (Valkey's commandlog.c): the latest commands that ran slower than a
threshold, or whose request or reply passed a size, one bounded list per kind. SLOWLOG is
the `slow` kind under its old name. Entries keep what Valkey keeps: an id, the time, the
measure (microseconds or bytes), the arguments cut short, the client's address and name.

Independent of the server: the caller passes the client's address, name and the
positions of the arguments to hide (see `redacted_positions`)."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field

SLOW, LARGE_REQUEST, LARGE_REPLY = "slow", "large-request", "large-reply"
KINDS = (SLOW, LARGE_REQUEST, LARGE_REPLY)
# the settings of each kind: (threshold, max-len); a threshold of -1 turns the kind off
SETTINGS = {
    SLOW: ("commandlog-execution-slower-than", "commandlog-slow-execution-max-len"),
    LARGE_REQUEST: ("commandlog-request-larger-than", "commandlog-large-request-max-len"),
    LARGE_REPLY: ("commandlog-reply-larger-than", "commandlog-large-reply-max-len"),
}
MAX_ARGC = 32  # COMMANDLOG_ENTRY_MAX_ARGC: the last kept slot says how many more there were
MAX_STRING = 128  # COMMANDLOG_ENTRY_MAX_STRING: longer arguments are cut
REDACTED = b"(redacted)"


@dataclass(slots=True)
class Entry:
    id: int
    time: int  # unix seconds
    value: int  # microseconds (slow) or bytes (large-request, large-reply)
    argv: list[bytes]
    peer: bytes
    name: bytes

    def reply(self) -> list[object]:
        return [self.id, self.time, self.value, list(self.argv), self.peer, self.name]


@dataclass(slots=True)
class Log:
    """One kind: newest entry first, at most `max_len` kept."""

    entries: deque[Entry] = field(default_factory=deque)
    next_id: int = 0


def logged_argv(argv: list[bytes], hidden: Iterable[int] = ()) -> list[bytes]:
    """The arguments as an entry keeps them: at most 32 (the last one counting the rest),
    each cut at 128 bytes, the hidden ones replaced by "(redacted)"."""
    argc = len(argv)
    kept = min(argc, MAX_ARGC)
    hidden = set(hidden)
    out: list[bytes] = []
    for j in range(kept):
        if kept != argc and j == kept - 1:
            out.append(b"... (%d more arguments)" % (argc - kept + 1))
        elif j in hidden:
            out.append(REDACTED)
        elif len(argv[j]) > MAX_STRING:
            out.append(bytes(argv[j][:MAX_STRING]) + b"... (%d more bytes)" % (len(argv[j]) - MAX_STRING))
        else:
            out.append(bytes(argv[j]))
    return out


class CommandLog:
    """The three logs of a server."""

    def __init__(self) -> None:
        self.logs = {kind: Log() for kind in KINDS}

    def push(self, kind: str, max_len: int, now_s: int, value: int, argv: list[bytes],
             hidden: Iterable[int], peer: bytes, name: bytes) -> None:
        """Record a command that passed the kind's threshold (the caller compared), then
        trim to `max_len` (a max-len of 0 keeps nothing, as Valkey)."""
        log = self.logs[kind]
        if max_len <= 0:
            return
        log.entries.appendleft(Entry(log.next_id, now_s, value, logged_argv(argv, hidden), peer, name))
        log.next_id += 1
        while len(log.entries) > max_len:
            log.entries.pop()

    def skip_ids(self, kind: str, count: int) -> None:
        """`count` entries were due and would already be trimmed away: only their ids
        are taken (the caller skips this under a max-len of 0, as `push` does)."""
        self.logs[kind].next_id += max(0, count)

    def get(self, kind: str, count: int) -> list[list[object]]:
        """The newest `count` entries (-1: all)."""
        entries = self.logs[kind].entries
        if count < 0 or count > len(entries):
            count = len(entries)
        return [entries[i].reply() for i in range(count)]

    def length(self, kind: str) -> int:
        return len(self.logs[kind].entries)

    def reset(self, kind: str) -> None:
        self.logs[kind].entries.clear()
