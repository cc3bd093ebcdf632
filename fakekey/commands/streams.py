"""Stream commands: entries, trimming, reads (blocking ones included), consumer groups.

The data structure and its Valkey-specific bookkeeping live in `fakekey/types/stream.py`;
this module parses arguments and builds replies exactly as Valkey's t_stream.c does,
including the order in which it reports errors.

Which writes go through the full funnel matters: only XADD, XDEL and XTRIM (when they
change something) and XGROUP CREATE MKSTREAM (a new key) touch WATCHed keys in Valkey.
Group-side changes (XGROUP SETID/CREATECONSUMER/DELCONSUMER/DESTROY, XACK, XCLAIM,
XAUTOCLAIM, XREADGROUP, XSETID) only emit their keyspace events, so they notify directly.

Blocking. XREAD/XREADGROUP with BLOCK park through `state.blocking` and are re-run when
their key is written; `$` is resolved to the stream's last id when the command blocks,
as Valkey rewrites it. A blocked XREADGROUP also wakes when its key is deleted or
changes type, or its group is destroyed, and the re-run answers the error.
"""

from __future__ import annotations

import re
from itertools import islice
from typing import TYPE_CHECKING, Any

from fakekey.codecs.numbers import SHORT_INT_MAX
from fakekey.commands.args import (
    LLONG_MAX,
    NO_SUCH_KEY,
    SYNTAX,
    TIMEOUT_NEGATIVE,
    TIMEOUT_RANGE,
    parse_int,
    try_int,
    wrong_args,
)
from fakekey.core.client import Client
from fakekey.core.dirty import CLAIMED, CONSUMER_DELETED, INTEGER_REPLY, ONE_IF_OK
from fakekey.core.registry import KeySpec, command, container, keys_keyword, keys_range
from fakekey.resp.replies import NULL_ARRAY, OK, ReplyError, Simple
from fakekey.types.stream import (
    INVALID_ENTRIES_READ,
    LISTPACK_MAX_SIZE,
    MAX_ID,
    MIN_ID,
    U64_MAX,
    Consumer,
    Group,
    Nack,
    OwnedIds,
    Pairs,
    Pel,
    StreamID,
    StreamValue,
    format_id,
    id_before,
    next_id,
    pairs_bytes,
    previous_id,
)

if TYPE_CHECKING:  # mypyc's native 64-bit int; plain int when run as Python
    from mypy_extensions import i64

G = "stream"
ACL = "stream"
NONDETERMINISTIC = "nondeterministic_output"

INVALID_ID = ReplyError("ERR Invalid stream ID specified as stream command argument")
ID_TOO_SMALL = ReplyError("ERR The ID specified in XADD is equal or smaller than the target stream top item")
ID_ZERO = ReplyError("ERR The ID specified in XADD must be greater than 0-0")
ID_EXHAUSTED = ReplyError("ERR The stream has exhausted the last possible ID, unable to add more items")
TOO_LARGE = ReplyError("ERR Elements are too large to be stored")
BAD_START = ReplyError("ERR invalid start ID for the interval")
BAD_END = ReplyError("ERR invalid end ID for the interval")
TIMEOUT_NOT_INTEGER = ReplyError("ERR timeout is not an integer or out of range")
KEY_REQUIRED = ReplyError(
    "ERR The XGROUP subcommand requires the key to exist. Note that for CREATE you may want "
    "to use the MKSTREAM option to create an empty stream automatically."
)
BUSYGROUP = ReplyError("BUSYGROUP Consumer Group name already exists")

# --- ids ------------------------------------------------------------------------------------


_STRTOULL = re.compile(rb"[ \t\n\v\f\r]*([+-]?)([0-9]+)\Z")


def parse_u64(text: bytes) -> int | None:
    """string2ull: a strict non-negative integer, else what strtoull accepts (leading
    blanks, a sign, leading zeros; a minus wraps around as in C)."""
    value = try_int(text)
    if value is not None:
        return value if value >= 0 else None
    match = _STRTOULL.match(text)
    if match is None:
        return None
    digits = match.group(2).lstrip(b"0") or b"0"
    if len(digits) > 20:  # past U64_MAX (and past the digits int() converts)
        return None
    value = int(digits)
    if value > U64_MAX:
        return None
    return (-value) & U64_MAX if match.group(1) == b"-" else value


def parse_id(raw: bytes, missing_seq: int = 0, strict: bool = False) -> StreamID:
    """An id as Valkey reads one: `-`, `+` (unless strict), `ms` (seq = missing_seq) or
    `ms-seq`."""
    sid, _ = _parse_id(raw, missing_seq, strict, auto_seq=False)
    return sid


def _parse_id(raw: bytes, missing_seq: int, strict: bool, auto_seq: bool) -> tuple[StreamID, bool]:
    """(id, seq_given); with `auto_seq`, `ms-*` answers seq_given False."""
    at = _plain_id_dash(raw)
    if at:  # plain `ms-seq`, the common form: in range
        return (_digits_value(raw, 0, at), _digits_value(raw, at + 1, len(raw))), True
    if len(raw) > 127:
        raise INVALID_ID
    text = raw.split(b"\0", 1)[0]  # Valkey reads it as a C string
    if text == b"-":
        if strict:
            raise INVALID_ID
        return MIN_ID, True
    if text == b"+":
        if strict:
            raise INVALID_ID
        return MAX_ID, True
    ms_text, dash, seq_text = text.partition(b"-")
    ms = parse_u64(ms_text)
    if ms is None:
        raise INVALID_ID
    if not dash:
        return (ms, missing_seq), True
    if auto_seq and seq_text == b"*":
        return (ms, 0), False
    seq = parse_u64(seq_text)
    if seq is None:
        raise INVALID_ID
    return (ms, seq), True


def _plain_id_dash(raw: bytes) -> int:
    """Where the dash of a plain `ms-seq` id is (each part 1 to 19 digits, so in range),
    else 0: one pass over the bytes, compiled, without slices or int() of them."""
    size = len(raw)
    dash = 0
    for i in range(size):
        ch = raw[i]
        if ch == 45:  # "-"
            if dash:
                return 0
            dash = i
        elif not 48 <= ch <= 57:
            return 0
    if not 0 < dash < 20 or not 0 < size - dash - 1 < 20:
        return 0
    return dash


def _digits_value(raw: bytes, start: int, end: int) -> int:
    """The number raw[start:end] spells (digits only, at most 19 of them)."""
    if end - start > 18:  # may pass 2**63: integers that grow
        value = 0
        for i in range(start, end):
            value = value * 10 + raw[i] - 48
        return value
    # 18 digits fit 64 bits: compiled, native integers without overflow checks
    native: i64 = 0
    for i in range(start, end):
        native = native * 10 + (raw[i] - 48)
    return native


def parse_interval(raw: bytes, missing_seq: int) -> tuple[StreamID, bool]:
    """A range bound: `(id` is exclusive (and strict), anything else inclusive."""
    if len(raw) > 1 and raw[:1] == b"(":
        return parse_id(raw[1:], missing_seq, strict=True), True
    return parse_id(raw, missing_seq), False


def parse_range(start_raw: bytes, end_raw: bytes) -> tuple[StreamID, StreamID]:
    """XRANGE/XPENDING bounds: incomplete ids fill seq with 0 (start) or max (end)."""
    start, exclusive = parse_interval(start_raw, 0)
    if exclusive:
        start = successor_or(start, BAD_START)
    end, exclusive = parse_interval(end_raw, U64_MAX)
    if exclusive:
        before = previous_id(end)
        if before is None:
            raise BAD_END
        end = before
    return start, end


def successor_or(sid: StreamID, error: ReplyError) -> StreamID:
    """The id after `sid` (an exclusive start), or `error` past the last one."""
    following = next_id(sid)
    if following is None:
        raise error
    return following


# --- shared helpers --------------------------------------------------------------------------


def lookup_stream(c: Client, key: bytes) -> StreamValue | None:
    return c.db.lookup_type(key, StreamValue)


def notify(c: Client, key: bytes, event: str) -> None:
    """A stream keyspace event with no other effect (no WATCH touch, no wake-up)."""
    state = c.state
    if state.notify_flags:
        state.notify(c.db, "t", event, key)


def cstr(raw: bytes) -> bytes:
    """What Valkey's %s prints of an argument: up to its first NUL byte."""
    return raw.split(b"\0", 1)[0]


def nogroup(key: bytes, group: bytes, suffix: bytes = b"") -> ReplyError:
    return ReplyError(
        b"NOGROUP No such key '" + cstr(key) + b"' or consumer group '" + cstr(group) + b"'" + suffix
    )


def nogroup_for_key(group: bytes, key: bytes) -> ReplyError:
    return ReplyError(
        b"NOGROUP No such consumer group '" + cstr(group) + b"' for key name '" + cstr(key) + b"'"
    )


def subcommand_syntax(argv: list[bytes]) -> ReplyError:
    """addReplySubcommandSyntaxError: the subcommand as typed, the command upper case."""
    return ReplyError(
        b"ERR unknown subcommand or wrong number of arguments for '" + cstr(argv[1])[:128]
        + b"'. Try " + argv[0].upper() + b" HELP."
    )


def entry_reply(sid: StreamID, pairs: Pairs) -> list[Any]:
    return [format_id(sid), list(pairs)]


def get_consumer(c: Client, key: bytes, group: Group, name: bytes) -> Consumer:
    """The consumer `name`, created (with its keyspace event, and a change counted, as
    Valkey's streamCreateConsumer dirties) when missing. XCLAIM, XAUTOCLAIM and XGROUP
    CREATECONSUMER set the count by their own rules after."""
    consumer = group.consumers.get(name)
    if consumer is None:
        consumer = group.consumers[name] = Consumer(name, c.state.now, group.pel)
        c.state.dirty += 1
        notify(c, key, "xgroup-createconsumer")
    return consumer


def help_reply(lines: list[str]) -> list[Simple]:
    return [Simple(line.encode()) for line in lines]


# --- XADD and XTRIM ----------------------------------------------------------------------------


class TrimArgs:
    """What streamParseAddOrTrimArgsOrReply collects."""

    __slots__ = ("maxlen", "minid", "approx", "limit", "nomkstream", "id", "id_given", "seq_given")

    def __init__(self) -> None:
        self.maxlen: int | None = None
        self.minid: StreamID | None = None
        self.approx = False
        self.limit = 0
        self.nomkstream = False
        self.id: StreamID = MIN_ID
        self.id_given = False
        self.seq_given = True

    @property
    def trims(self) -> bool:
        return self.maxlen is not None or self.minid is not None


def parse_add_or_trim(c: Client, argv: list[bytes], xadd: bool) -> tuple[TrimArgs, int]:
    """Options of XADD/XTRIM from argv[2]; for XADD also the id. Returns (args, id index)."""
    args = TrimArgs()
    limit_given = False
    argc = len(argv)
    i = 2
    while i < argc:
        if xadd and argv[i] == b"*":
            break
        more = argc - 1 - i
        word = option_word(argv[i])
        if (word == b"MAXLEN" or word == b"MINID") and more:
            i = parse_strategy(argv, i, more, args, word == b"MAXLEN")
        elif word == b"LIMIT" and more:
            args.limit = parse_int(argv[i + 1])
            if args.limit < 0:
                raise ReplyError("ERR The LIMIT argument must be >= 0.")
            limit_given = True
            i += 1
        elif xadd and word == b"NOMKSTREAM":
            args.nomkstream = True
        elif xadd:
            args.id, args.seq_given = _parse_id(argv[i], 0, strict=True, auto_seq=True)
            args.id_given = True
            break
        else:
            raise SYNTAX
        i += 1
    if args.limit and not args.trims:
        raise ReplyError("ERR syntax error, LIMIT cannot be used without specifying a trimming strategy")
    if not xadd and not args.trims:
        raise ReplyError("ERR syntax error, XTRIM must be called with a trimming strategy")
    if limit_given:
        if not args.approx:
            raise ReplyError("ERR syntax error, LIMIT cannot be used without the special ~ option")
    elif args.approx:
        args.limit = default_trim_limit(c)
    else:
        args.limit = 0
    return args, i


def option_word(raw: bytes) -> bytes:
    """An option of XADD/XTRIM in upper case (as clients mostly send them: no copy)."""
    if raw == b"MAXLEN" or raw == b"MINID" or raw == b"LIMIT" or raw == b"NOMKSTREAM":
        return raw
    return raw.upper()


def parse_strategy(argv: list[bytes], i: int, more: int, args: TrimArgs, by_length: bool) -> int:
    """MAXLEN|MINID [~|=] threshold at argv[i]; returns the index of the threshold."""
    if args.trims:
        raise ReplyError("ERR syntax error, MAXLEN and MINID options at the same time are not compatible")
    args.approx = False
    if more >= 2 and argv[i + 1] == b"~":
        args.approx = True
        i += 1
    elif more >= 2 and argv[i + 1] == b"=":
        i += 1
    if by_length:
        args.maxlen = parse_int(argv[i + 1])
        if args.maxlen < 0:
            raise ReplyError("ERR The MAXLEN argument must be >= 0.")
    else:
        args.minid = parse_id(argv[i + 1], strict=True)
    return i + 1


def default_trim_limit(c: Client) -> int:
    """`~` without LIMIT: at most 100 nodes' worth of entries, capped both ways."""
    entries: int = c.state.config.values["stream-node-max-entries"]  # typed: native arithmetic compiled
    limit = 100 * entries
    if limit <= 0:
        return 10000
    return min(limit, 1000000)


def generate_id(s: StreamValue, args: TrimArgs, now: int) -> StreamID:
    """The id of a new entry (`*`, `ms-*` or explicit), or the XADD error."""
    last = s.last_id
    if not args.id_given:
        ms, seq = last
        if now > ms:  # `*`, the common case: always past the last id, no check to make
            return (now, 0)
        if seq < SHORT_INT_MAX:  # native integers compiled, unlike U64_MAX's comparisons
            return (ms, seq + 1)
        sid = (now, 0) if now > last[0] else next_id(last)
    elif args.seq_given:
        sid = args.id
    elif last[0] == args.id[0]:
        if last[1] == U64_MAX:
            raise ID_TOO_SMALL
        sid = (last[0], last[1] + 1)
    else:
        sid = args.id
    # compared part by part: typed ints compare natively, tuples generically
    if sid is None or sid[0] < last[0] or (sid[0] == last[0] and sid[1] <= last[1]):
        raise ID_TOO_SMALL
    return sid


def trim(s: StreamValue, args: TrimArgs) -> int:
    return s.trim(args.maxlen, args.minid, args.approx, args.limit)


@command("xadd", -5, "write denyoom fast",
         keys=KeySpec(1, 1, 1, ("RW", "update"),
                      notes="UPDATE instead of INSERT because of the optional trimming feature"),
         acl=ACL, group=G, since="5.0.0", tips=NONDETERMINISTIC,
         complexity="O(1) when adding a new entry, O(N) when trimming where N being the number "
         "of entries evicted.",
         summary="Appends an entry to a stream, creating the stream if needed.")
def xadd(c: Client, argv: list[bytes]) -> Any:
    args, id_at = parse_add_or_trim(c, argv, xadd=True)
    fields_at = id_at + 1
    nfields = len(argv) - fields_at
    if nfields < 2 or nfields % 2:
        raise wrong_args("xadd")
    if args.id_given and args.seq_given and args.id == MIN_ID:
        raise ID_ZERO
    key = argv[1]
    db = c.db
    s = lookup_stream(c, key)
    created = s is None
    if s is None:
        if args.nomkstream:
            return None
        s = StreamValue()
    if s.last_id == MAX_ID:
        raise ID_EXHAUSTED
    sid = generate_id(s, args, c.state.now)
    pairs = tuple(argv[fields_at:])
    if pairs_bytes(pairs) > LISTPACK_MAX_SIZE:
        if created:
            db.set_value(key, s)  # Valkey has already stored the empty stream
        raise TOO_LARGE
    append_entry(c, key, s, created, sid, pairs, args)
    return s.last_id_text()  # sid, formatted


def append_entry(c: Client, key: bytes, s: StreamValue, created: bool, sid: StreamID,
                 pairs: Pairs, args: TrimArgs) -> None:
    """XADD's write, once its checks passed: store the entry (a `created` stream is
    stored now), announce `xadd`, then trim as `args` asks and announce `xtrim`."""
    config = c.state.config.values
    s.append(sid, pairs, config["stream-node-max-bytes"], config["stream-node-max-entries"])
    if created:
        c.db.set_value(key, s, event="xadd", klass="t")
    else:
        c.db.written(key, "xadd", "t")
    if args.trims and trim(s, args):
        notify(c, key, "xtrim")


@command("xtrim", -4, "write", keys=keys_range(1, flags="RW delete"), acl=ACL, group=G,
         since="5.0.0", tips=NONDETERMINISTIC,
         complexity="O(N), with N being the number of evicted entries. Constant times are very "
         "small however, since entries are organized in macro nodes containing multiple entries "
         "that can be released with a single deallocation.",
         summary="Removes the oldest entries of a stream by length or by id.", dirty=INTEGER_REPLY)
def xtrim(c: Client, argv: list[bytes]) -> Any:
    args, _ = parse_add_or_trim(c, argv, xadd=False)
    s = lookup_stream(c, argv[1])
    if s is None:
        return 0
    deleted = trim(s, args)
    if deleted:
        c.db.written(argv[1], "xtrim", "t")
    return deleted


# --- plain reads and deletes -------------------------------------------------------------------


def parse_range_count(argv: list[bytes]) -> int:
    """XRANGE's trailing [COUNT n] (repeatable, the last wins); -1 = no COUNT."""
    count = -1
    j = 4
    while j < len(argv):
        if argv[j].upper() == b"COUNT" and j + 1 < len(argv):
            count = max(parse_int(argv[j + 1]), 0)
            j += 2
        else:
            raise SYNTAX
    return count


def range_command(c: Client, argv: list[bytes], rev: bool) -> Any:
    start_raw, end_raw = (argv[3], argv[2]) if rev else (argv[2], argv[3])
    start, end = parse_range(start_raw, end_raw)
    count = parse_range_count(argv)
    s = lookup_stream(c, argv[1])
    if s is None:
        return []
    if count == 0:
        return NULL_ARRAY
    found = s.range(start, end, rev)
    return [entry_reply(sid, pairs) for sid, pairs in islice(found, count if count > 0 else None)]


@command("xrange", -4, "readonly", keys=keys_range(1, flags="RO access"), acl=ACL, group=G,
         since="5.0.0",
         complexity="O(N) with N being the number of elements being returned. If N is constant "
         "(e.g. always asking for the first 10 elements with COUNT), you can consider it O(1).",
         summary="Answers the entries of a stream within a range of ids.")
def xrange(c: Client, argv: list[bytes]) -> Any:
    return range_command(c, argv, rev=False)


@command("xrevrange", -4, "readonly", keys=keys_range(1, flags="RO access"), acl=ACL, group=G,
         since="5.0.0",
         complexity="O(N) with N being the number of elements returned. If N is constant "
         "(e.g. always asking for the first 10 elements with COUNT), you can consider it O(1).",
         summary="Answers the entries of a stream within a range of ids, newest first.")
def xrevrange(c: Client, argv: list[bytes]) -> Any:
    return range_command(c, argv, rev=True)


@command("xlen", 2, "readonly fast", keys=keys_range(1, flags="RO"), acl=ACL, group=G,
         since="5.0.0", summary="Answers the number of entries of a stream.")
def xlen(c: Client, argv: list[bytes]) -> Any:
    s = lookup_stream(c, argv[1])
    return 0 if s is None else len(s)


@command("xdel", -3, "write fast", keys=keys_range(1, flags="RW delete"), acl=ACL, group=G,
         since="5.0.0",
         complexity="O(1) for each single item to delete in the stream, regardless of the "
         "stream size.",
         summary="Deletes entries of a stream by id.", dirty=INTEGER_REPLY)
def xdel(c: Client, argv: list[bytes]) -> Any:
    s = lookup_stream(c, argv[1])
    if s is None:
        return 0
    ids = [parse_id(raw, strict=True) for raw in argv[2:]]
    deleted = s.delete_ids(ids)
    if deleted:
        c.db.written(argv[1], "xdel", "t")
    return deleted


# --- XREAD and XREADGROUP ------------------------------------------------------------------------


class _PairMap(dict):
    """A RESP3 map that may repeat a key (XREAD STREAMS s s ...), as Valkey sends it."""

    def __init__(self, pairs: list[tuple[bytes, Any]]) -> None:
        super().__init__()
        self.pairs = pairs

    def __len__(self) -> int:
        return len(self.pairs)

    def items(self) -> Any:
        return iter(self.pairs)


class ReadArgs:
    __slots__ = ("deadline", "count", "streams_at", "group", "consumer", "noack")

    def __init__(self) -> None:
        self.deadline: int | None = None  # None: no BLOCK; 0: forever
        self.count = 0
        self.streams_at = 0
        self.group: bytes | None = None
        self.consumer = b""
        self.noack = False


def parse_block_deadline(raw: bytes, now: int) -> int:
    """BLOCK in integer milliseconds -> absolute deadline (0 = forever)."""
    ms = parse_int(raw, TIMEOUT_NOT_INTEGER)
    if ms < 0:
        raise TIMEOUT_NEGATIVE
    if ms == 0:
        return 0
    if ms > LLONG_MAX - now:
        raise TIMEOUT_RANGE
    return ms + now


def parse_read_args(c: Client, argv: list[bytes], group_mode: bool) -> ReadArgs:
    args = ReadArgs()
    argc = len(argv)
    name = "xreadgroup" if group_mode else "xread"
    i = 1
    while i < argc:
        more = argc - i - 1
        word = argv[i].upper()
        if word == b"BLOCK" and more:
            i += 1
            args.deadline = parse_block_deadline(argv[i], c.state.now)
        elif word == b"COUNT" and more:
            i += 1
            args.count = max(parse_int(argv[i]), 0)
        elif word == b"STREAMS" and more:
            args.streams_at = i + 1
            if (argc - args.streams_at) % 2:
                symbol = ">" if group_mode else "$"
                raise ReplyError(
                    f"ERR Unbalanced '{name}' list of streams: for each stream key an ID or "
                    f"'{symbol}' must be specified."
                )
            break
        elif word == b"GROUP" and more >= 2:
            if not group_mode:
                raise ReplyError("ERR The GROUP option is only supported by XREADGROUP. You called XREAD instead.")
            args.group, args.consumer = argv[i + 1], argv[i + 2]
            i += 2
        elif word == b"NOACK":
            if not group_mode:
                raise ReplyError("ERR The NOACK option is only supported by XREADGROUP. You called XREAD instead.")
            args.noack = True
        else:
            raise SYNTAX
        i += 1
    if not args.streams_at:
        raise SYNTAX
    if group_mode and args.group is None:
        raise ReplyError("ERR Missing GROUP option for XREADGROUP")
    return args


def resolve_read_id(s: StreamValue | None, raw: bytes, group_mode: bool) -> StreamID:
    """The id after which to read: `$` the last id, `+` just before it, `>` (groups) the
    group's own position, marked as MAX_ID as Valkey marks it."""
    if raw == b"$":
        if group_mode:
            raise ReplyError(
                "ERR The $ ID is meaningless in the context of XREADGROUP: you want to read the "
                "history of this consumer by specifying a proper ID, or use the > ID to get new "
                "messages. The $ ID would just return an empty result set."
            )
        return s.last_id if s is not None else MIN_ID
    if raw == b"+":
        if group_mode:
            raise ReplyError(
                "ERR The + ID is meaningless in the context of XREADGROUP: you want to read the "
                "history of this consumer by specifying a proper ID, or use the > ID to get new "
                "messages. The + ID would just return an empty result set."
            )
        return (previous_id(s.last_id) or MIN_ID) if s is not None else MIN_ID
    if raw == b">":
        if not group_mode:
            raise ReplyError(
                "ERR The > ID can be specified only when calling XREADGROUP using the GROUP "
                "<group> <consumer> option."
            )
        return MAX_ID
    return parse_id(raw, strict=True)


def read_command(c: Client, argv: list[bytes], group_mode: bool) -> Any:
    args = parse_read_args(c, argv, group_mode)
    half = (len(argv) - args.streams_at) // 2
    keys = argv[args.streams_at : args.streams_at + half]
    raw_ids = argv[args.streams_at + half :]
    ids: list[StreamID] = []
    groups: list[Group | None] = []
    for key, raw in zip(keys, raw_ids, strict=True):
        s = lookup_stream(c, key)
        group = None
        if group_mode:
            name = args.group or b""
            group = s.groups.get(name) if s is not None else None
            if group is None:
                raise nogroup(key, name, b" in XREADGROUP with GROUP option")
        groups.append(group)
        ids.append(resolve_read_id(s, raw, group_mode))
    served = [
        (key, entries)
        for key, after, group in zip(keys, ids, groups, strict=True)
        if (entries := read_one(c, key, after, group, args)) is not None
    ]
    if group_mode:  # Valkey's dirty count: one per stream served (get_consumer counts one made)
        c.state.dirty += len(served)
    if served:
        if c.protocol == 2:
            return [[key, entries] for key, entries in served]
        keys_seen = {key for key, _ in served}
        return dict(served) if len(keys_seen) == len(served) else _PairMap(served)
    if args.deadline is None or c.state.deny_blocking:
        return NULL_ARRAY
    return block_read(c, argv, keys, raw_ids, ids, args, group_mode)


def read_one(c: Client, key: bytes, after: StreamID, group: Group | None, args: ReadArgs) -> list[Any] | None:
    """What one stream of an XREAD/XREADGROUP serves now, or None when nothing."""
    s = lookup_stream(c, key)
    if s is None:
        return None
    if group is None:
        last = s.last_valid_id() if s.length else None
        if last is None or last <= after:
            return None
        found = s.range(next_id(after) or MIN_ID, MAX_ID)
        return [entry_reply(sid, pairs) for sid, pairs in islice(found, args.count or None)]
    history = after != MAX_ID
    serve = history
    if not history and s.length:
        last = s.last_valid_id()
        if last is not None and last > group.last_id:
            serve = True
            after = group.last_id
    consumer = get_consumer(c, key, group, args.consumer)
    consumer.seen_time = c.state.now
    if not serve:
        return None
    start = next_id(after) or MIN_ID
    if history:
        return read_history(c, s, consumer, start, args.count)
    return deliver(c, s, group, consumer, start, args)


def deliver(c: Client, s: StreamValue, group: Group, consumer: Consumer, start: StreamID,
            args: ReadArgs) -> list[Any]:
    """New entries for a group: advance it, and record each in the PELs unless NOACK."""
    now = c.state.now
    found = s.entries_from(start, args.count)
    out: list[Any] = [entry_reply(sid, pairs) for sid, pairs in found]
    for sid, _ in found:
        if id_before(group.last_id, sid):
            s.advance_group(group, sid)
    if args.noack or not found:
        return out
    pending, owned = group.pel, consumer.pel
    for sid, _ in found:
        key: Any = sid  # boxed once for both PELs (see Pel)
        nack = pending.get(key)
        if nack is None:
            nack = Nack(now, consumer)
            pending.add(key, nack)
            owned.add(key)
        else:  # a pending entry delivered again (after XGROUP SETID): a new owner
            group.assign(sid, nack, consumer)
            nack.delivery_time = now
            nack.delivery_count = 1
    consumer.active_time = now
    return out


def read_history(c: Client, s: StreamValue, consumer: Consumer, start: StreamID, count: int) -> list[Any]:
    """A consumer's own pending entries from `start`; a deleted one reads as a null."""
    now = c.state.now
    out: list[Any] = []
    for sid, nack in consumer.pel.items(start):
        if count and len(out) >= count:
            break
        pairs = s.get(sid)
        if pairs is None:
            out.append([format_id(sid), NULL_ARRAY])
            continue
        out.append(entry_reply(sid, pairs))
        nack.delivery_time = now
        nack.delivery_count += 1
    return out


def block_read(c: Client, argv: list[bytes], keys: list[bytes], raw_ids: list[bytes],
               ids: list[StreamID], args: ReadArgs, group_mode: bool) -> Any:
    """Park the client; `$` becomes the id it stood for, so a re-run reads after it."""
    argv = list(argv)
    first_id_at = args.streams_at + len(keys)
    for i, raw in enumerate(raw_ids):
        if raw == b"$":
            argv[first_id_at + i] = format_id(ids[i])
    cmd = c.cmd
    assert cmd is not None  # the command running now
    return c.state.blocking.block(c, keys, args.deadline or 0, cmd, argv, NULL_ARRAY,
                                  kinds=("stream",), wake_on_delete=group_mode)


@command("xread", -4, "readonly blocking movablekeys",
         keys=keys_keyword("STREAMS", 1, last=-1, limit=2, flags="RO access"),
         acl=ACL, group=G, since="5.0.0", complexity="",
         summary="Reads entries from one or more streams after given ids, optionally waiting.")
def xread(c: Client, argv: list[bytes]) -> Any:
    return read_command(c, argv, group_mode=False)


@command("xreadgroup", -7, "write blocking movablekeys",
         keys=keys_keyword("STREAMS", 4, last=-1, limit=2, flags="RO access"),
         acl=ACL, group=G, since="5.0.0",
         complexity="For each stream mentioned: O(M) with M being the number of elements "
         "returned. If M is constant (e.g. always asking for the first 10 elements with COUNT), "
         "you can consider it O(1). On the other side when XREADGROUP blocks, XADD will pay the "
         "O(N) time in order to serve the N clients blocked on the stream getting new data.",
         summary="Reads entries for a consumer of a group, new ones or its pending ones.")
def xreadgroup(c: Client, argv: list[bytes]) -> Any:
    return read_command(c, argv, group_mode=True)


# --- XGROUP ---------------------------------------------------------------------------------------

XGROUP_HELP = [
    "XGROUP <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "CREATE <key> <groupname> <id|$> [option]",
    "    Create a new consumer group. Options are:",
    "    * MKSTREAM",
    "      Create the empty stream if it does not exist.",
    "    * ENTRIESREAD entries_read",
    "      Set the group's entries_read counter (internal use).",
    "CREATECONSUMER <key> <groupname> <consumer>",
    "    Create a new consumer in the specified group.",
    "DELCONSUMER <key> <groupname> <consumer>",
    "    Remove the specified consumer.",
    "DESTROY <key> <groupname>",
    "    Remove the specified group.",
    "SETID <key> <groupname> <id|$> [ENTRIESREAD entries_read]",
    "    Set the current group ID and entries_read counter.",
    "HELP",
    "    Print this help.",
]


def owner_name(nack: Nack) -> bytes:
    """The name of the consumer an entry was delivered to (every entry of a PEL has one)."""
    assert nack.consumer is not None
    return nack.consumer.name


class GroupContext:
    """What every XGROUP subcommand but HELP resolves first."""

    __slots__ = ("stream", "group", "mkstream", "entries_read")

    def __init__(self, stream: StreamValue | None, group: Group | None, mkstream: bool,
                 entries_read: int) -> None:
        self.stream = stream
        self.group = group
        self.mkstream = mkstream
        self.entries_read = entries_read

    def existing(self) -> tuple[StreamValue, Group]:
        """The stream and the group, for a subcommand that `xgroup_context` refused
        unless both exist."""
        assert self.stream is not None and self.group is not None
        return self.stream, self.group


def xgroup_context(c: Client, argv: list[bytes], sub: str) -> GroupContext:
    """Options (CREATE/SETID), then the key and, for most subcommands, the group."""
    mkstream = False
    entries_read = INVALID_ENTRIES_READ
    i = 5
    while i < len(argv):
        word = argv[i].upper()
        if sub == "create" and word == b"MKSTREAM":
            mkstream = True
            i += 1
        elif sub in ("create", "setid") and word == b"ENTRIESREAD" and i + 1 < len(argv):
            entries_read = parse_int(argv[i + 1])
            if entries_read < 0 and entries_read != INVALID_ENTRIES_READ:
                raise ReplyError("ERR value for ENTRIESREAD must be positive or -1")
            i += 2
        else:
            raise subcommand_syntax(argv)
    s = lookup_stream(c, argv[2])
    group = s.groups.get(argv[3]) if s is not None else None
    if not mkstream:
        if s is None:
            raise KEY_REQUIRED
        if group is None and sub in ("setid", "createconsumer", "delconsumer"):
            raise nogroup_for_key(argv[3], argv[2])
    return GroupContext(s, group, mkstream, entries_read)


container("xgroup", group=G, since="5.0.0", summary="Manages the consumer groups of a stream.")


@command("xgroup|create", -5, "write denyoom", keys=keys_range(2, flags="RW insert"), acl=ACL,
         since="5.0.0", summary="Creates a consumer group, optionally creating the stream.", dirty=ONE_IF_OK)
def xgroup_create(c: Client, argv: list[bytes]) -> Any:
    ctx = xgroup_context(c, argv, "create")
    if len(argv) > 8:
        raise subcommand_syntax(argv)
    key, name = argv[2], argv[3]
    s = ctx.stream
    if argv[4] == b"$":
        sid = s.last_id if s is not None else MIN_ID
    else:
        sid = parse_id(argv[4], strict=True)
    if s is None:
        s = StreamValue()
        c.db.set_value(key, s)
    if name in s.groups:
        raise BUSYGROUP
    s.groups[name] = Group(sid, ctx.entries_read)
    notify(c, key, "xgroup-create")
    return OK


@command("xgroup|createconsumer", 5, "write denyoom", keys=keys_range(2, flags="RW insert"),
         acl=ACL, since="6.2.0", summary="Creates a consumer in a consumer group.", dirty=INTEGER_REPLY)
def xgroup_createconsumer(c: Client, argv: list[bytes]) -> Any:
    _, group = xgroup_context(c, argv, "createconsumer").existing()
    if argv[4] in group.consumers:
        return 0
    get_consumer(c, argv[2], group, argv[4])
    return 1


@command("xgroup|delconsumer", 5, "write", keys=keys_range(2, flags="RW delete"), acl=ACL,
         since="5.0.0", summary="Deletes a consumer and its pending entries from a group.", dirty=CONSUMER_DELETED)
def xgroup_delconsumer(c: Client, argv: list[bytes]) -> Any:
    _, group = xgroup_context(c, argv, "delconsumer").existing()
    consumer = group.consumers.get(argv[4])
    if consumer is None:
        return 0
    pending = group.delete_consumer(consumer)
    notify(c, argv[2], "xgroup-delconsumer")
    return pending


@command("xgroup|destroy", 4, "write", keys=keys_range(2, flags="RW delete"), acl=ACL,
         since="5.0.0",
         complexity="O(N) where N is the number of entries in the group's pending entries list (PEL).",
         summary="Deletes a consumer group.", dirty=INTEGER_REPLY)
def xgroup_destroy(c: Client, argv: list[bytes]) -> Any:
    ctx = xgroup_context(c, argv, "destroy")
    if ctx.group is None:
        return 0
    stream, _ = ctx.existing()
    del stream.groups[argv[3]]
    notify(c, argv[2], "xgroup-destroy")
    if argv[2] in c.db.waiting:  # blocked XREADGROUPs of that group answer NOGROUP
        c.state.blocking.signal(c.db, argv[2])
    return 1


@command("xgroup|help", 2, "loading stale", acl=ACL, since="5.0.0",
         summary="Answers helpful text about the XGROUP subcommands.")
def xgroup_help(c: Client, argv: list[bytes]) -> Any:
    return help_reply(XGROUP_HELP)


@command("xgroup|setid", -5, "write", keys=keys_range(2, flags="RW update"), acl=ACL,
         since="5.0.0", summary="Moves the last delivered id of a consumer group.", dirty=ONE_IF_OK)
def xgroup_setid(c: Client, argv: list[bytes]) -> Any:
    ctx = xgroup_context(c, argv, "setid")
    if len(argv) not in (5, 7):
        raise subcommand_syntax(argv)
    stream, group = ctx.existing()
    group.last_id = stream.last_id if argv[4] == b"$" else parse_id(argv[4])
    group.entries_read = ctx.entries_read
    notify(c, argv[2], "xgroup-setid")
    return OK


# --- XSETID -----------------------------------------------------------------------------------


@command("xsetid", -3, "write denyoom fast", keys=keys_range(1, flags="RW update"), acl=ACL,
         group=G, since="5.0.0",
         summary="Sets a stream's last id, entries-added counter and max deleted id.", dirty=ONE_IF_OK)
def xsetid(c: Client, argv: list[bytes]) -> Any:
    sid = parse_id(argv[2], strict=True)
    entries_added = -1
    max_deleted = MIN_ID
    i = 3
    while i < len(argv):
        more = len(argv) - 1 - i
        word = argv[i].upper()
        if word == b"ENTRIESADDED" and more:
            entries_added = parse_int(argv[i + 1])
            if entries_added < 0:
                raise ReplyError("ERR entries_added must be positive")
        elif word == b"MAXDELETEDID" and more:
            max_deleted = parse_id(argv[i + 1], strict=True)
            if sid < max_deleted:
                raise ReplyError("ERR The ID specified in XSETID is smaller than the provided max_deleted_entry_id")
        else:
            raise SYNTAX
        i += 2
    s = lookup_stream(c, argv[1])
    if s is None:
        raise NO_SUCH_KEY
    if sid < s.max_deleted:
        raise ReplyError("ERR The ID specified in XSETID is smaller than current max_deleted_entry_id")
    if s.length:
        if sid < (s.last_valid_id() or MIN_ID):
            raise ReplyError("ERR The ID specified in XSETID is smaller than the target stream top item")
        if entries_added != -1 and s.length > entries_added:
            raise ReplyError("ERR The entries_added specified in XSETID is smaller than the target stream length")
    s.last_id = sid
    if entries_added != -1:
        s.entries_added = entries_added
    if max_deleted != MIN_ID:
        s.max_deleted = max_deleted
    notify(c, argv[1], "xsetid")
    return OK


# --- XACK, XPENDING, XCLAIM, XAUTOCLAIM ------------------------------------------------------------


@command("xack", -4, "write fast", keys=keys_range(1, flags="RW update"), acl=ACL, group=G,
         since="5.0.0", complexity="O(1) for each message ID processed.",
         summary="Acknowledges entries of a consumer group, removing them from its PEL.", dirty=INTEGER_REPLY)
def xack(c: Client, argv: list[bytes]) -> Any:
    s = lookup_stream(c, argv[1])
    group = s.groups.get(argv[2]) if s is not None else None
    if group is None:
        return 0
    # Any, not StreamID: each id boxed once, for both PELs (see Pel)
    ids: list[Any] = [parse_id(raw, strict=True) for raw in argv[3:]]
    acked = 0
    for sid in ids:
        if group.ack(sid):
            acked += 1
    return acked


def lookup_group(c: Client, key: bytes, name: bytes) -> tuple[StreamValue, Group]:
    """The stream and its group, or NOGROUP naming both."""
    s = lookup_stream(c, key)
    group = s.groups.get(name) if s is not None else None
    if s is None or group is None:
        raise nogroup(key, name)
    return s, group


@command("xpending", -3, "readonly", keys=keys_range(1, flags="RO access"), acl=ACL, group=G,
         since="5.0.0", tips=NONDETERMINISTIC,
         complexity="O(N) with N being the number of elements returned, so asking for a small "
         "fixed number of entries per call is O(1). O(M), where M is the total number of "
         "entries scanned when used with the IDLE filter. When the command returns just the "
         "summary and the list of consumers is small, it runs in O(1) time; otherwise, an "
         "additional O(N) time for iterating every consumer.",
         summary="Answers what a consumer group has delivered and not yet seen acknowledged.")
def xpending(c: Client, argv: list[bytes]) -> Any:
    argc = len(argv)
    if argc != 3 and not 6 <= argc <= 9:
        raise SYNTAX
    if argc == 3:
        _, group = lookup_group(c, argv[1], argv[2])
        return pending_summary(group)
    at = 3
    min_idle = 0
    if argv[3].upper() == b"IDLE":
        min_idle = parse_int(argv[4])
        if argc < 8:
            raise SYNTAX
        at = 5
    count = max(parse_int(argv[at + 2]), 0)
    start, end = parse_range(argv[at], argv[at + 1])
    consumer_name = argv[at + 3] if at + 3 < argc else None
    _, group = lookup_group(c, argv[1], argv[2])
    return pending_entries(c, group, start, end, count, min_idle, consumer_name)


def pending_summary(group: Group) -> list[Any]:
    if not group.pel:
        return [0, None, None, NULL_ARRAY]
    owners = [[consumer.name, b"%d" % len(consumer.pel)]
              for consumer in group.sorted_consumers() if consumer.pel]
    return [len(group.pel), format_id(group.pel.ids[0]), format_id(group.pel.ids[-1]), owners]


def pending_entries(c: Client, group: Group, start: StreamID, end: StreamID, count: int,
                    min_idle: int, consumer_name: bytes | None) -> list[Any]:
    pel: Pel | OwnedIds = group.pel
    if consumer_name is not None:
        consumer = group.consumers.get(consumer_name)
        if consumer is None:
            return []
        pel = consumer.pel
    now = c.state.now
    out: list[Any] = []
    for sid, nack in pel.items(start):
        if not count or sid > end:
            break
        idle = now - nack.delivery_time
        if min_idle and idle < min_idle:
            continue
        count -= 1
        out.append([format_id(sid), owner_name(nack), max(idle, 0), nack.delivery_count])
    return out


class ClaimOptions:
    __slots__ = ("delivery_time", "retry_count", "force", "justid", "last_id")

    def __init__(self) -> None:
        self.delivery_time = -1  # -1: neither IDLE nor TIME
        self.retry_count = -1
        self.force = False
        self.justid = False
        self.last_id = MIN_ID


def parse_claim_options(argv: list[bytes], at: int, now: int) -> ClaimOptions:
    opts = ClaimOptions()
    j = at
    while j < len(argv):
        more = len(argv) - 1 - j
        word = argv[j].upper()
        if word == b"FORCE":
            opts.force = True
        elif word == b"JUSTID":
            opts.justid = True
        elif word == b"IDLE" and more:
            j += 1
            opts.delivery_time = now - parse_int(argv[j], ReplyError("ERR Invalid IDLE option argument for XCLAIM"))
        elif word == b"TIME" and more:
            j += 1
            opts.delivery_time = parse_int(argv[j], ReplyError("ERR Invalid TIME option argument for XCLAIM"))
        elif word == b"RETRYCOUNT" and more:
            j += 1
            opts.retry_count = parse_int(argv[j], ReplyError("ERR Invalid RETRYCOUNT option argument for XCLAIM"))
        elif word == b"LASTID" and more:
            j += 1
            opts.last_id = parse_id(argv[j], strict=True)
        else:
            raise ReplyError(b"ERR Unrecognized XCLAIM option '" + cstr(argv[j]) + b"'")
        j += 1
    if opts.delivery_time == -1 or opts.delivery_time < 0 or opts.delivery_time > now:
        opts.delivery_time = now  # a bogus time is taken as now, as Valkey does
    return opts


def claim_ids(argv: list[bytes]) -> list[StreamID]:
    """The leading arguments from argv[5] that parse as ids; options follow them."""
    ids: list[StreamID] = []
    for raw in argv[5:]:
        try:
            ids.append(parse_id(raw, strict=True))
        except ReplyError as err:
            err.__traceback__ = None  # a shared instance: its traceback would keep growing
            break
    return ids


@command("xclaim", -6, "write fast", keys=keys_range(1, flags="RW update"), acl=ACL, group=G,
         since="5.0.0", tips=NONDETERMINISTIC,
         complexity="O(log N) with N being the number of messages in the PEL of the consumer group.",
         summary="Transfers pending entries of a group to another consumer.", dirty=CLAIMED)
def xclaim(c: Client, argv: list[bytes]) -> Any:
    key = argv[1]
    s, group = lookup_group(c, key, argv[2])
    min_idle = max(parse_int(argv[4], ReplyError("ERR Invalid min-idle-time argument for XCLAIM")), 0)
    ids = claim_ids(argv)
    now = c.state.now
    opts = parse_claim_options(argv, 5 + len(ids), now)
    if opts.last_id > group.last_id:
        group.last_id = opts.last_id
    consumer = get_consumer(c, key, group, argv[3])
    consumer.seen_time = now
    out: list[Any] = []
    for sid in ids:
        nack = group.pel.get(sid)
        pairs = s.get(sid)
        if pairs is None:  # the entry is gone: so is its pending record
            if nack is not None:
                group.ack(sid)
            continue
        if nack is None:
            if not opts.force:
                continue
            nack = Nack(now, None)
            group.pel.add(sid, nack)
        elif nack.consumer is not None and min_idle and now - nack.delivery_time < min_idle:
            continue
        nack.delivery_time = opts.delivery_time
        if opts.retry_count >= 0:
            nack.delivery_count = opts.retry_count
        elif not opts.justid:
            nack.delivery_count += 1
        group.assign(sid, nack, consumer)
        out.append(format_id(sid) if opts.justid else entry_reply(sid, pairs))
        consumer.active_time = now
    return out


AUTOCLAIM_MAX_COUNT = LLONG_MAX // 16  # LONG_MAX / max(sizeof(streamID), attempts factor)


@command("xautoclaim", -6, "write fast", keys=keys_range(1, flags="RW delete"), acl=ACL, group=G,
         since="6.2.0", tips=NONDETERMINISTIC, complexity="O(1) if COUNT is small.",
         summary="Transfers idle pending entries of a group to a consumer, scanning like SCAN.", dirty=CLAIMED)
def xautoclaim(c: Client, argv: list[bytes]) -> Any:
    min_idle = max(parse_int(argv[4], ReplyError("ERR Invalid min-idle-time argument for XAUTOCLAIM")), 0)
    start, exclusive = parse_interval(argv[5], 0)
    if exclusive:
        start = successor_or(start, BAD_START)
    count, justid = parse_autoclaim_options(argv)
    key = argv[1]
    s, group = lookup_group(c, key, argv[2])
    consumer = get_consumer(c, key, group, argv[3])
    now = c.state.now
    consumer.seen_time = now
    claimed: list[Any] = []
    deleted: list[bytes] = []
    ids = group.pel.ids
    pos = group.pel.position(start)
    attempts = count * 10
    while attempts and count and pos < len(ids):
        attempts -= 1
        sid = ids[pos]
        pairs = s.get(sid)
        if pairs is None:  # gone from the stream: dropped from the PEL, reported
            group.ack(sid)
            deleted.append(format_id(sid))
            count -= 1
            continue
        pos += 1
        nack = group.pel.nacks[pos - 1]  # ids[pos - 1] is sid
        if min_idle and now - nack.delivery_time < min_idle:
            continue
        group.assign(sid, nack, consumer)
        nack.delivery_time = now
        if not justid:
            nack.delivery_count += 1
        claimed.append(format_id(sid) if justid else entry_reply(sid, pairs))
        count -= 1
        consumer.active_time = now
    cursor = ids[pos] if pos < len(ids) else MIN_ID
    return [format_id(cursor), claimed, deleted]


def parse_autoclaim_options(argv: list[bytes]) -> tuple[int, bool]:
    count, justid = 100, False
    j = 6
    while j < len(argv):
        more = len(argv) - 1 - j
        word = argv[j].upper()
        if word == b"COUNT" and more:
            count = parse_int(argv[j + 1], ReplyError("ERR COUNT must be > 0"))
            if not 1 <= count <= AUTOCLAIM_MAX_COUNT:
                raise ReplyError("ERR COUNT must be > 0")
            j += 1
        elif word == b"JUSTID":
            justid = True
        else:
            raise SYNTAX
        j += 1
    return count, justid


# --- XINFO ----------------------------------------------------------------------------------------

XINFO_HELP = [
    "XINFO <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "CONSUMERS <key> <groupname>",
    "    Show consumers of <groupname>.",
    "GROUPS <key>",
    "    Show the stream consumer groups.",
    "STREAM <key> [FULL [COUNT <count>]",
    "    Show information about the stream.",
    "HELP",
    "    Print this help.",
]

container("xinfo", group=G, since="5.0.0", summary="Inspects streams, their groups and consumers.")


def lookup_existing(c: Client, key: bytes) -> StreamValue:
    s = lookup_stream(c, key)
    if s is None:
        raise NO_SUCH_KEY
    return s


@command("xinfo|consumers", 4, "readonly", keys=keys_range(2, flags="RO access"), acl=ACL,
         since="5.0.0", tips=NONDETERMINISTIC, summary="Lists the consumers of a consumer group.")
def xinfo_consumers(c: Client, argv: list[bytes]) -> Any:
    s = lookup_existing(c, argv[2])
    group = s.groups.get(argv[3])
    if group is None:
        raise nogroup_for_key(argv[3], argv[2])
    now = c.state.now
    return [
        {
            b"name": consumer.name,
            b"pending": len(consumer.pel),
            b"idle": max(now - consumer.seen_time, 0),
            b"inactive": now - consumer.active_time if consumer.active_time != -1 else -1,
        }
        for consumer in group.sorted_consumers()
    ]


@command("xinfo|groups", 3, "readonly", keys=keys_range(2, flags="RO access"), acl=ACL,
         since="5.0.0", summary="Lists the consumer groups of a stream.")
def xinfo_groups(c: Client, argv: list[bytes]) -> Any:
    s = lookup_existing(c, argv[2])
    return [
        {
            b"name": name,
            b"consumers": len(group.consumers),
            b"pending": len(group.pel),
            b"last-delivered-id": format_id(group.last_id),
            b"entries-read": entries_read(group),
            b"lag": s.lag(group),
        }
        for name, group in sorted(s.groups.items())
    ]


def entries_read(group: Group) -> int | None:
    return None if group.entries_read == INVALID_ENTRIES_READ else group.entries_read


@command("xinfo|help", 2, "loading stale", acl=ACL, since="5.0.0",
         summary="Answers helpful text about the XINFO subcommands.")
def xinfo_help(c: Client, argv: list[bytes]) -> Any:
    return help_reply(XINFO_HELP)


@command("xinfo|stream", -3, "readonly", keys=keys_range(2, flags="RO access"), acl=ACL,
         since="5.0.0", summary="Describes a stream, or with FULL its entries and groups too.")
def xinfo_stream(c: Client, argv: list[bytes]) -> Any:
    s = lookup_existing(c, argv[2])
    options = argv[3:]
    if not options:
        return stream_summary(s)
    if len(options) not in (1, 3) or options[0].upper() != b"FULL":
        raise subcommand_syntax(argv)
    count = 10
    if len(options) == 3:
        if options[1].upper() != b"COUNT":
            raise subcommand_syntax(argv)
        count = parse_int(options[2])
        if count < 0:
            count = 10
    return stream_full(s, count)


def stream_header(s: StreamValue) -> dict[bytes, Any]:
    return {
        b"length": s.length,
        b"radix-tree-keys": len(s.nodes),
        b"radix-tree-nodes": s.radix_tree_nodes(),
        b"last-generated-id": format_id(s.last_id),
        b"max-deleted-entry-id": format_id(s.max_deleted),
        b"entries-added": s.entries_added,
        b"recorded-first-entry-id": format_id(s.first_id),
    }


def stream_summary(s: StreamValue) -> dict[bytes, Any]:
    info = stream_header(s)
    info[b"groups"] = len(s.groups)
    first = next(s.range(MIN_ID, MAX_ID), None)
    last = next(s.range(MIN_ID, MAX_ID, rev=True), None)
    info[b"first-entry"] = None if first is None else entry_reply(*first)
    info[b"last-entry"] = None if last is None else entry_reply(*last)
    return info


def stream_full(s: StreamValue, count: int) -> dict[bytes, Any]:
    limit = count or None
    info = stream_header(s)
    info[b"entries"] = [entry_reply(sid, pairs) for sid, pairs in islice(s.range(MIN_ID, MAX_ID), limit)]
    info[b"groups"] = [group_full(s, name, group, limit) for name, group in sorted(s.groups.items())]
    return info


def group_full(s: StreamValue, name: bytes, group: Group, limit: int | None) -> dict[bytes, Any]:
    return {
        b"name": name,
        b"last-delivered-id": format_id(group.last_id),
        b"entries-read": entries_read(group),
        b"lag": s.lag(group),
        b"pel-count": len(group.pel),
        b"pending": [
            [format_id(sid), owner_name(nack), nack.delivery_time, nack.delivery_count]
            for sid, nack in islice(group.pel.items(), limit)
        ],
        b"consumers": [
            {
                b"name": consumer.name,
                b"seen-time": consumer.seen_time,
                b"active-time": consumer.active_time,
                b"pel-count": len(consumer.pel),
                b"pending": [
                    [format_id(sid), nack.delivery_time, nack.delivery_count]
                    for sid, nack in islice(consumer.pel.items(), limit)
                ],
            }
            for consumer in group.sorted_consumers()
        ],
    }
