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

from fakekey.codecs.errors import wrong_args
from fakekey.commands.args import LLONG_MIN, try_int
from fakekey.core.registry import command, declare_module, keys_numkeys
from fakekey.core.users import check_key
from fakekey.modules.emq import doorbell
from fakekey.resp.replies import ReplyError

if TYPE_CHECKING:
    from fakekey.core.client import Client
    from fakekey.core.keyspace import Database

EMQ_MODULE = "trafikey"
EMQ_MODULE_VERSION = 100  # 0.1.0
declare_module(EMQ_MODULE, EMQ_MODULE_VERSION, "enable-emq-module")
EMQ_SINCE = "0.1.0"

# Key positions that are not one fixed suffix.
ROW = "<job id>"  # any emq:{Q}:JOB...
PREFIX = ""  # emq:{Q}: itself
STREAM = "stream|dlq"  # the bus's stream or its dead-letter stream
FAILURES = "failures:<entry id>"  # a bus failure counter

HOST = ReplyError("EMQHOST unexpected reply from host")
KIND = ReplyError("EMQKIND job id must be JOB-namespaced")

# Argument kinds: (the least value accepted, the words of the EMQARG error).
POSITIVE = (1, "a positive integer")
NON_NEGATIVE = (0, "a non-negative integer")
INTEGER = (LLONG_MIN, "an integer")
TEXT = None  # any bytes


@dataclass(frozen=True)
class Arg:
    name: str
    kind: tuple[int, str] | None = TEXT


def word_int(raw: bytes) -> int | None:
    """`try_int` (Valkey's strict 64-bit decimal form), with a quick way through for the
    plain non-negative numbers the verbs mostly see: digits only, no leading zero, at
    most 18 of them (so within 64 bits)."""
    if raw.isdigit() and len(raw) < 19 and (raw[0] != 48 or len(raw) == 1):
        return int(raw)
    return try_int(raw)


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

    __slots__ = ("c", "db", "now", "settings", "queue", "prefix", "keys", "args", "rest",
                 "claimable", "argv")

    def __init__(self, c: Client, prefix: bytes, keys: list[bytes], args: list[Any],
                 rest: list[bytes], argv: list[bytes]) -> None:
        state = c.state
        self.c = c
        self.db: Database = c.db
        self.now: int = state.now  # the one clock reading of this call
        self.settings: dict[str, Any] = state.config.values  # listpack limits, read as needed
        self.queue = prefix[5:-2]
        self.prefix = prefix  # emq:{Q}:
        self.keys = keys
        self.args = args
        self.rest = rest  # the words past the fixed arguments (the bus's field pairs)
        # a flat job entered `pending` (spec 7.3): the queue's doorbell rule may ring
        self.claimable = False
        self.argv = argv  # the request as sent (a parked verb runs it again when woken)

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
        least, what = arg.kind
        value = try_int(word)
        if value is None or value < least:
            raise ReplyError(f"EMQARG {arg.name} must be {what}")
        out.append(value)
    return out


# How `fitting_prefix` tests a position: the exact suffix it expects, or one of these.
ANY_JOB = 0  # a row: any suffix starting with JOB (the kind check folded in)
OTHER = 1  # stream|dlq or failures:<entry id>: `suffix_fits` judges


Position = tuple[bytes | int, str]  # (the exact suffix, ANY_JOB or OTHER; the expectation)


def position_plan(expected: tuple[str, ...]) -> tuple[Position, ...]:
    return tuple((ANY_JOB if s == ROW else OTHER if s in (STREAM, FAILURES) else s.encode(), s)
                 for s in expected)


def fitting_prefix(keys: list[bytes], plan: tuple[Position, ...]) -> bytes | None:
    """The `emq:{Q}:` of `keys` when every key passes the layout and kind checks, else None
    (the checks, run in order, then say which fails). The common case, in one pass: key 1
    names the queue (as `split_key` reads it), every key is that prefix and what its
    position expects."""
    first = keys[0]
    if not first.startswith(b"emq:{"):
        return None
    close = first.find(b"}", 5)
    if close <= 5 or not first.startswith(b":", close + 1) or first.find(b"{", 5, close) >= 0:
        return None
    size = close + 2
    prefix = first[:size]
    for key, (want, expected) in zip(keys, plan):
        if type(want) is bytes:
            if key != prefix + want:
                return None
        elif not key.startswith(prefix):
            return None
        elif want == ANY_JOB:
            if not key.startswith(b"JOB", size):
                return None
        elif not suffix_fits(key[size:], expected):
            return None
    return prefix


def fitting_args(words: list[bytes], least: tuple[int | None, ...],
                 spec: tuple[Arg, ...]) -> list[Any]:
    """The arguments parsed, when every one is valid (else `parse_args` names the first
    that is not); `least` is each one's least value, None for text."""
    out: list[Any] = []
    for word, lowest in zip(words, least):
        if lowest is None:
            out.append(word)
            continue
        value = word_int(word)
        if value is None or value < lowest:
            return parse_args(words, spec)  # raises EMQARG for the first bad one
        out.append(value)
    return out


def with_doorbell(call: Call, handler: Callable[[Call], Any]) -> Any:
    """Run a verb that can make flat work claimable under its queue's doorbell rule: with
    `ring all` it also reads meta and writes the wake list (checked for access before
    anything is written), and pushes one token at its end if it made work claimable."""
    ring_all = doorbell.rule(call) == doorbell.ALL
    if ring_all and not call.c.acl_unrestricted:
        call.may_read(call.key(b"meta"))
        call.may_write(call.key(b"wake"))
    reply = handler(call)
    if ring_all and call.claimable:
        doorbell.ring(call)
    return reply


def verb(
    name: str,
    keys: tuple[str, ...],
    args: Iterable[Arg] = (),
    *,
    rest: int = 0,
    arity: int | None = None,
    most: int | None = None,
    write: bool = True,
    fast: bool = False,
    rings: bool = False,
    blocking: bool = False,
    access: Callable[[Call], None] | None = None,
    summary: str,
    complexity: str,
) -> Callable[[Callable[[Call], Any]], Callable[[Call], Any]]:
    """Declare `EMQ.<name>`: its keys (the suffix each position expects), its fixed
    arguments, and `rest`, the fewest extra words it takes (a variadic verb; `arity`
    declares one whose forms the handler tells apart; `most`, the most words it takes,
    past which it answers the wrong number of arguments, as a module's WrongArity). `access`
    checks the keys the verb derives (meta, rows); the declared keys are checked here, for
    reading, and for writing too when the verb writes. `rings`: the verb can make flat work
    claimable (`Call.claimable`), so the queue's doorbell rule may have it push a token at
    its end (doorbell.py); `blocking`: the verb may park its client."""
    arg_spec = tuple(args)
    fixed = 2 + len(keys) + len(arg_spec)
    if arity is None:
        arity = -(fixed + rest) if rest else fixed
    flags = ("write" if write else "readonly") + (" fast" if fast else "") + (
        " blocking" if blocking else "")
    key_flags = "RW access update" if write else "RO access"
    full_name = f"emq.{name}"

    count = len(keys)
    numkeys = b"%d" % count  # the one spelling Valkey's strict integer form accepts
    plan = position_plan(keys)
    least = tuple(None if a.kind is None else a.kind[0] for a in arg_spec)

    def declare(handler: Callable[[Call], Any]) -> Callable[[Call], Any]:
        def run(c: Client, argv: list[bytes]) -> Any:
            if most is not None and len(argv) > most:
                raise wrong_args(full_name)
            if argv[1] != numkeys:
                check_shape(full_name, argv, count)
            key_words = argv[2 : 2 + count]
            prefix = fitting_prefix(key_words, plan) if count else b"emq:{}:"
            if prefix is None:  # some check fails: run them in order for its error
                queue = check_layout(key_words, keys)
                check_kind(key_words, keys, len(queue) + 7)
                prefix = b"emq:{" + queue + b"}:"
            call = Call(c, prefix, key_words, fitting_args(argv[2 + count : fixed], least, arg_spec),
                        argv[fixed:], argv)
            if not c.acl_unrestricted:
                if write:
                    call.may_write(*key_words)
                else:
                    call.may_read(*key_words)
                if access is not None:
                    access(call)
            if not rings:
                return handler(call)
            return with_doorbell(call, handler)

        run.__name__ = handler.__name__
        run.__doc__ = handler.__doc__
        command(full_name, arity, flags, keys=keys_numkeys(1, key_flags), group="module",
                since=EMQ_SINCE, summary=summary, complexity=complexity,
                module=EMQ_MODULE)(run)
        return handler

    return declare
