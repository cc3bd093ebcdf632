"""How every EMQ verb is called, and the checks each makes before it reads or writes.

A verb takes its keys like EVAL: `EMQ.VERB numkeys key [key ...] arg [arg ...]`. Every key
belongs to one queue `Q` and reads `emq:{Q}:<suffix>`; each key position expects one
suffix. `verb()` declares a verb in the command registry (one declaration gives dispatch,
arity, COMMAND INFO/DOCS, MULTI and scripts) and wraps its handler in the spec's checks,
in order: arity (the registry), shape, layout, kind, arguments, access. The handler gets a
`Call` whose keys and arguments are already valid.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from fakekey.acl import check_key
from fakekey.commands.args import try_int
from fakekey.commands.registry import command, keys_numkeys
from fakekey.resp.replies import ReplyError

if TYPE_CHECKING:
    from fakekey.client import Client
    from fakekey.keyspace import Database

EMQ_MODULE = "trafikey"
EMQ_MODULE_VERSION = 100  # 0.1.0
EMQ_SINCE = "0.1.0"

# Key positions that are not one fixed suffix.
ROW = "<job id>"  # any emq:{Q}:JOB...
PREFIX = ""  # emq:{Q}: itself
STREAM = "stream|dlq"  # the bus's stream or its dead-letter stream
FAILURES = "failures:<entry id>"  # a bus failure counter

HOST = ReplyError("EMQHOST unexpected reply from host")
KIND = ReplyError("EMQKIND job id must be JOB-namespaced")

# Argument kinds: (parse check, the words of the EMQARG error).
POSITIVE = (lambda n: n >= 1, "a positive integer")
NON_NEGATIVE = (lambda n: n >= 0, "a non-negative integer")
INTEGER = (lambda n: True, "an integer")
TEXT = None  # any bytes


@dataclass(frozen=True)
class Arg:
    name: str
    kind: tuple[Callable[[int], bool], str] | None = TEXT


def split_key(key: bytes) -> tuple[bytes, bytes] | None:
    """(Q, suffix) of `emq:{Q}:suffix`, or None when `key` names no queue."""
    if not key.startswith(b"emq:{"):
        return None
    close = key.find(b"}", 5)
    if close <= 5 or key[close + 1 : close + 2] != b":" or b"{" in key[5:close]:
        return None
    return key[5:close], key[close + 2 :]


def expected_text(queue: bytes, suffix: str) -> str:
    """How a layout error names what a position expects."""
    q = queue.decode("utf-8", "replace")
    if suffix == STREAM:
        return f"emq:{{{q}}}:stream or emq:{{{q}}}:dlq"
    return f"emq:{{{q}}}:{suffix}"


def suffix_fits(suffix: bytes, expected: str) -> bool:
    if expected == ROW:
        return True  # any suffix; the kind check judges it
    if expected == STREAM:
        return suffix in (b"stream", b"dlq")
    if expected == FAILURES:
        return suffix.startswith(b"failures:") and len(suffix) > 9
    return suffix == expected.encode()


class Call:
    """One verb call whose shape, layout, kind and arguments passed their checks."""

    __slots__ = ("c", "db", "now", "queue", "prefix", "keys", "args", "rest")

    def __init__(self, c: Client, queue: bytes, keys: list[bytes], args: list[Any],
                 rest: list[bytes]) -> None:
        self.c = c
        self.db: Database = c.db
        self.now: int = c.state.now  # the one clock reading of this call
        self.queue = queue
        self.prefix = b"emq:{" + queue + b"}:"
        self.keys = keys
        self.args = args
        self.rest = rest  # the words past the fixed arguments (the bus's field pairs)

    def key(self, suffix: bytes) -> bytes:
        """A key of this call's queue: `emq:{Q}:<suffix>`."""
        return self.prefix + suffix

    def job_id(self, row_key: bytes) -> bytes:
        return row_key[len(self.prefix):]

    def may_read(self, *keys: bytes) -> None:
        if self.c.acl_unrestricted:  # a user with every key: nothing to ask per key
            return
        for key in keys:
            check_key(self.c, key, read=True, write=False)

    def may_write(self, *keys: bytes) -> None:
        """Keys this call reads and writes (every write verb reads what it writes)."""
        if self.c.acl_unrestricted:
            return
        for key in keys:
            check_key(self.c, key, read=True, write=True)


def check_shape(name: str, argv: list[bytes], count: int) -> None:
    if try_int(argv[1]) != count:
        raise ReplyError(f"EMQSHAPE numkeys must be {count}")


def check_layout(keys: list[bytes], expected: tuple[str, ...]) -> bytes:
    """The queue every key belongs to; EMQLAYOUT for the first key out of place. Key 1
    is parsed; the others must start with its `emq:{Q}:` prefix and fit their position."""
    first = split_key(keys[0])
    queue = first[0] if first is not None else b"<queue>"
    prefix_len = len(queue) + 7
    for position, (key, suffix) in enumerate(zip(keys, expected, strict=True), 1):
        if position == 1:
            fits = first is not None and suffix_fits(first[1], suffix)
        else:
            fits = (first is not None and key.startswith(keys[0][:prefix_len])
                    and suffix_fits(key[prefix_len:], suffix))
        if not fits:
            raise ReplyError(f"EMQLAYOUT key {position} must be {expected_text(queue, suffix)}")
    return queue


def check_kind(keys: list[bytes], expected: tuple[str, ...], prefix_len: int) -> None:
    for key, suffix in zip(keys, expected, strict=True):
        if suffix == ROW and not key.startswith(b"JOB", prefix_len):
            raise KIND


def parse_args(words: list[bytes], spec: tuple[Arg, ...]) -> list[Any]:
    """Each argument checked in order: EMQARG names the first that does not parse."""
    out: list[Any] = []
    for word, arg in zip(words, spec, strict=True):
        if arg.kind is None:
            out.append(word)
            continue
        accept, what = arg.kind
        value = try_int(word)
        if value is None or not accept(value):
            raise ReplyError(f"EMQARG {arg.name} must be {what}")
        out.append(value)
    return out


def verb(
    name: str,
    keys: tuple[str, ...],
    args: Iterable[Arg] = (),
    *,
    rest: int = 0,
    write: bool = True,
    fast: bool = False,
    access: Callable[[Call], None] | None = None,
    summary: str,
    complexity: str,
) -> Callable[[Callable[[Call], Any]], Callable[[Call], Any]]:
    """Declare `EMQ.<name>`: its keys (the suffix each position expects), its fixed
    arguments, and `rest`, the fewest extra words it takes (a variadic verb). `access`
    checks the keys the verb derives (meta, rows); the declared keys are checked here, for
    reading, and for writing too when the verb writes."""
    arg_spec = tuple(args)
    fixed = 2 + len(keys) + len(arg_spec)
    arity = -(fixed + rest) if rest else fixed
    flags = ("write" if write else "readonly") + (" fast" if fast else "")
    key_flags = "RW access update" if write else "RO access"
    full_name = f"emq.{name}"

    def declare(handler: Callable[[Call], Any]) -> Callable[[Call], Any]:
        def run(c: Client, argv: list[bytes]) -> Any:
            check_shape(full_name, argv, len(keys))
            key_words = argv[2 : 2 + len(keys)]
            queue = check_layout(key_words, keys) if keys else b""
            check_kind(key_words, keys, len(queue) + 7)
            call = Call(c, queue, key_words, parse_args(argv[2 + len(keys) : fixed], arg_spec),
                        argv[fixed:])
            if write:
                call.may_write(*key_words)
            else:
                call.may_read(*key_words)
            if access is not None:
                access(call)
            return handler(call)

        run.__name__ = handler.__name__
        run.__doc__ = handler.__doc__
        command(full_name, arity, flags, keys=keys_numkeys(1, key_flags), group="module",
                since=EMQ_SINCE, summary=summary, complexity=complexity,
                module=EMQ_MODULE)(run)
        return handler

    return declare
