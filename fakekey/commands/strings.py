"""String commands: GET/SET and their variants, counters, ranges and LCS.

A string value is `bytes` when written whole (SET, GETSET, ...), a `bytearray` once
changed in place (APPEND, SETRANGE, and the bit commands), which is what OBJECT ENCODING
reports as "raw", and an `int` where INCR and its family left a counter (readers see its
bytes: fakekey/core/keyspace.py).
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any, Final

from fakekey.codecs.longdouble import ld_format, ld_parse, ld_round
from fakekey.codecs.numbers import outside_int64
from fakekey.commands.args import (
    LLONG_MAX,
    LLONG_MIN,
    OVERFLOW,
    SYNTAX,
    WRONGTYPE,
    parse_int,
    try_int,
    wrong_args,
)
from fakekey.core.client import Client
from fakekey.core.dirty import KEY_PAIRS, TTL_CHANGED
from fakekey.core.registry import KeySpec, command, keys_range
from fakekey.resp.replies import OK, ReplyError

G = "string"
_OK: Final = OK  # compiled: a constant, not a module dictionary lookup (plain SET)
INT_MAX = 2**31 - 1

TOO_BIG = ReplyError("ERR string exceeds maximum allowed size (proto-max-bulk-len)")
NOT_STRINGS = ReplyError("ERR The specified keys must contain string values")


def invalid_expire(name: str) -> ReplyError:
    return ReplyError(f"ERR invalid expire time in '{name}' command")


def expire_deadline(c: Client, unit: bytes, raw: bytes, name: str) -> int:
    """An EX/PX/EXAT/PXAT argument -> absolute unix ms, with Valkey's checks."""
    value = parse_int(raw)
    if value <= 0:
        raise invalid_expire(name)
    if unit in (b"EX", b"EXAT"):
        if value > LLONG_MAX // 1000:
            raise invalid_expire(name)
        value *= 1000
    if unit in (b"EX", b"PX"):
        value += c.state.now
        if value > LLONG_MAX:
            raise invalid_expire(name)
    return value


def set_deadline(c: Client, key: bytes, deadline: int) -> None:
    """Give `key` a deadline; one already reached deletes the key now, as an expiry."""
    db = c.db
    if deadline <= c.state.now:
        db.expire_now(key)
        return
    db.set_expire(key, deadline)
    db.written(key, "expire", "g")


def check_length(c: Client, size: int, extra: int) -> None:
    """checkStringLength: a string may not grow past proto-max-bulk-len."""
    if size + extra > c.state.config["proto-max-bulk-len"]:
        raise TOO_BIG


def unshare(c: Client, key: bytes, value: bytes | bytearray) -> bytearray:
    """The key's value as a bytearray to change in place (Valkey's dbUnshareStringValue).

    Only the representation changes, not the value, so this is not a write: no WATCH,
    no notification (the caller reports the real change through the funnel)."""
    if type(value) is bytearray:
        return value
    mutable = bytearray(value)
    c.db.data[key] = mutable
    return mutable


def padded(c: Client, key: bytes, value: bytes | bytearray, size: int) -> bytearray:
    """The key's value to change in place, zero-padded to at least `size` bytes. Grown in
    one allocation, as Valkey's sdsgrowzero: a string grown to 512 MB costs 512 MB, not
    a padding buffer as big besides."""
    if len(value) >= size:
        return unshare(c, key, value)
    grown = bytearray(size)
    grown[: len(value)] = value
    c.db.data[key] = grown
    return grown


# --- GET / SET and their options ---------------------------------------------------------

# Option bits of SET, GETEX and MSETEX (Valkey's parseExtendedCommandArgumentsOrReply).
NX, XX, GET, KEEPTTL, PERSIST, IFEQ = 1, 2, 4, 8, 16, 32
_TOKENS = {b"NX": NX, b"XX": XX, b"GET": GET, b"KEEPTTL": KEEPTTL, b"PERSIST": PERSIST}
_UNITS = frozenset((b"EX", b"PX", b"EXAT", b"PXAT"))
_ALLOWED = {
    "set": NX | XX | GET | KEEPTTL | IFEQ,
    "get": PERSIST,
    "mset": NX | XX | KEEPTTL,
}
# A token is refused when any of these is already present.
_CONFLICTS = {NX: XX | IFEQ, XX: NX | IFEQ, GET: 0, IFEQ: NX | XX | IFEQ}


class ExtendedArgs:
    """What the options of SET / GETEX / MSETEX said."""

    __slots__ = ("flags", "unit", "expire", "ifeq")

    def __init__(self) -> None:
        self.flags = 0
        self.unit: bytes | None = None
        self.expire = b""
        self.ifeq = b""


def parse_extended(argv: list[bytes], start: int, kind: str) -> ExtendedArgs:
    """Parse the options from argv[start:]; a token out of place is a syntax error."""
    out = ExtendedArgs()
    allowed = _ALLOWED[kind]
    argc = len(argv)
    i = start
    while i < argc:
        opt = argv[i].upper()
        has_next = i + 1 < argc
        bit = _TOKENS.get(opt)
        if bit is not None and bit & allowed:
            if bit in (KEEPTTL, PERSIST):
                if out.unit is not None:
                    raise SYNTAX
            elif out.flags & _CONFLICTS[bit]:
                raise SYNTAX
            out.flags |= bit
        elif opt == b"IFEQ" and IFEQ & allowed and has_next and not out.flags & _CONFLICTS[IFEQ]:
            out.flags |= IFEQ
            out.ifeq = argv[i + 1]
            i += 1
        elif opt in _UNITS and has_next:
            if out.flags & (KEEPTTL | PERSIST) or out.unit not in (None, opt):
                raise SYNTAX
            out.unit = opt
            out.expire = argv[i + 1]
            i += 1
        else:
            raise SYNTAX
        i += 1
    return out


def _string_or_wrongtype(value: Any) -> bytes | None:
    if value is None or type(value) is bytes:
        return value
    if type(value) is bytearray:
        return bytes(value)
    raise WRONGTYPE


@command("get", 2, "readonly fast", keys=keys_range(1, flags="RO access"), acl="string",
         group=G, since="1.0.0", summary="Reads the string value of a key.")
def get(c: Client, argv: list[bytes]) -> Any:
    value = c.db.lookup(argv[1])
    if value is None or type(value) is bytes:
        return value
    if type(value) is bytearray:
        return bytes(value)
    raise WRONGTYPE


def set_key_flags(argv: list[bytes]) -> tuple[str, ...]:
    """SET reads its key only with GET (Valkey's setGetKeys looks past the value)."""
    if any(arg.lower() == b"get" for arg in argv[3:]):
        return ("RW", "access", "update")
    return ("OW", "update")


@command("set", -3, "write denyoom",
         keys=keys_range(1, flags="RW access update variable_flags", flags_for_call=set_key_flags),
         acl="string", group=G, since="1.0.0", complexity="O(1)",
         summary="Stores a string at a key, with optional expiry and conditions; "
         "can answer the previous value.")
def set_(c: Client, argv: list[bytes]) -> Any:
    if len(argv) == 3:  # the plain SET: no option parsing at all
        c.db.set_value(argv[1], argv[2], event="set", klass="$")
        return _OK
    opts = parse_extended(argv, 3, "set")
    deadline = expire_deadline(c, opts.unit, opts.expire, "set") if opts.unit else None
    return set_generic(c, argv[1], argv[2], opts.flags, deadline, opts.ifeq)


def set_generic(
    c: Client,
    key: bytes,
    value: bytes,
    flags: int,
    deadline: int | None,
    ifeq: bytes = b"",
    ok_reply: Any = OK,
    abort_reply: Any = None,
) -> Any:
    """setGenericCommand: the conditions, GET, the expiry, then the write."""
    db = c.db
    old = db.lookup(key)
    with_get = flags & GET
    reply: Any = ok_reply
    if with_get:
        db.count_read(old is not None)  # Valkey's GET part is a read (keyspace_hits)
        reply = _string_or_wrongtype(old)
        if old is not None and c.state.lfu_on and c.state.touch_keys:
            db.lfu_access(key)  # Valkey's GET part looks the key up once more
    if flags & IFEQ:
        if old is not None and not with_get and type(old) not in (bytes, bytearray):
            raise WRONGTYPE
        if old is None or old != ifeq:
            return reply if with_get else abort_reply
    if (flags & NX and old is not None) or (flags & XX and old is None):
        return reply if with_get else abort_reply
    if deadline is not None and deadline <= c.state.now:
        if old is not None:
            db.expire_now(key)  # a deadline already past: no write, the old key expires
        return reply
    db.set_value(key, value, keep_ttl=bool(flags & KEEPTTL), event="set", klass="$")
    if deadline is not None:
        set_deadline(c, key, deadline)
    return reply


@command("setnx", 3, "write denyoom fast", keys=keys_range(1, flags="OW insert"), acl="string",
         group=G, since="1.0.0", summary="Stores a string at a key only when the key is absent.")
def setnx(c: Client, argv: list[bytes]) -> Any:
    return set_generic(c, argv[1], argv[2], NX, None, ok_reply=1, abort_reply=0)


def _setex(c: Client, argv: list[bytes], unit: bytes, name: str) -> Any:
    deadline = expire_deadline(c, unit, argv[2], name)
    return set_generic(c, argv[1], argv[3], 0, deadline)


@command("setex", 4, "write denyoom", keys=keys_range(1, flags="OW update"), acl="string",
         group=G, since="2.0.0",
         summary="Stores a string at a key with an expiry in seconds.")
def setex(c: Client, argv: list[bytes]) -> Any:
    return _setex(c, argv, b"EX", "setex")


@command("psetex", 4, "write denyoom", keys=keys_range(1, flags="OW update"), acl="string",
         group=G, since="2.6.0",
         summary="Stores a string at a key with an expiry in milliseconds.")
def psetex(c: Client, argv: list[bytes]) -> Any:
    return _setex(c, argv, b"PX", "psetex")


@command("getset", 3, "write denyoom fast", keys=keys_range(1, flags="RW access update"),
         acl="string", group=G, since="1.0.0",
         summary="Stores a string at a key and answers the value it replaced.")
def getset(c: Client, argv: list[bytes]) -> Any:
    old = _string_or_wrongtype(c.db.lookup(argv[1]))
    c.db.set_value(argv[1], argv[2], event="set", klass="$")
    return old


@command("getdel", 2, "write fast", keys=keys_range(1, flags="RW access delete"), acl="string",
         group=G, since="6.2.0", summary="Answers the string value of a key and deletes the key.")
def getdel(c: Client, argv: list[bytes]) -> Any:
    value = _string_or_wrongtype(c.db.lookup(argv[1]))
    if value is not None:
        c.db.delete(argv[1])
    return value


@command("getex", -2, "write fast", keys=keys_range(1, flags="RW access update"), acl="string",
         group=G, since="6.2.0",
         summary="Answers the string value of a key and changes or removes its expiry.", dirty=TTL_CHANGED)
def getex(c: Client, argv: list[bytes]) -> Any:
    opts = parse_extended(argv, 2, "get")
    deadline = expire_deadline(c, opts.unit, opts.expire, "getex") if opts.unit else None
    key = argv[1]
    value = _string_or_wrongtype(c.db.lookup(key))
    if value is None:
        return None
    if deadline is not None:
        set_deadline(c, key, deadline)
    elif opts.flags & PERSIST and c.db.persist(key):
        c.db.written(key, "persist", "g")
    return value


@command("delifeq", 3, "write fast", keys=keys_range(1, flags="RM delete"), acl="string",
         group=G, since="9.0.0", summary="Deletes a key when its string value is the one given.")
def delifeq(c: Client, argv: list[bytes]) -> Any:
    value = c.db.lookup(argv[1])
    if value is None:
        return 0
    if type(value) is not bytes and type(value) is not bytearray:
        raise WRONGTYPE
    if value != argv[2]:
        return 0
    c.db.delete(argv[1])
    return 1


# --- several keys ------------------------------------------------------------------------


@command("mget", -2, "readonly fast", keys=keys_range(1, -1, flags="RO access"), acl="string",
         group=G, since="1.0.0", complexity="O(N) where N is the number of keys to retrieve.",
         tips="request_policy:multi_shard", summary="Reads the string values of several keys; other types answer null.")
def mget(c: Client, argv: list[bytes]) -> Any:
    lookup = c.db.lookup
    out = []
    for key in argv[1:]:
        value = lookup(key)
        kind = type(value)
        out.append(value if kind is bytes else bytes(value) if kind is bytearray else None)
    return out


def _pairs_or_arity(argv: list[bytes], name: str) -> None:
    if len(argv) % 2 == 0:
        raise wrong_args(name)


@command("mset", -3, "write denyoom", keys=keys_range(1, -1, 2, flags="OW update"), acl="string",
         group=G, since="1.0.1", complexity="O(N) where N is the number of keys to set.",
         tips="request_policy:multi_shard response_policy:all_succeeded",
         summary="Stores the string values of several keys.", dirty=KEY_PAIRS)
def mset(c: Client, argv: list[bytes]) -> Any:
    _pairs_or_arity(argv, "mset")
    set_value = c.db.set_value
    for i in range(1, len(argv), 2):
        set_value(argv[i], argv[i + 1], event="set", klass="$")
    return OK


@command("msetnx", -3, "write denyoom", keys=keys_range(1, -1, 2, flags="OW insert"),
         acl="string", group=G, since="1.0.1",
         complexity="O(N) where N is the number of keys to set.",
         summary="Stores the string values of several keys only when none of them exists.", dirty=KEY_PAIRS)
def msetnx(c: Client, argv: list[bytes]) -> Any:
    _pairs_or_arity(argv, "msetnx")
    db = c.db
    if any(db.lookup(argv[i]) is not None for i in range(1, len(argv), 2)):
        return 0
    for i in range(1, len(argv), 2):
        db.set_value(argv[i], argv[i + 1], event="set", klass="$")
    return 1


INVALID_NUMKEYS = ReplyError("ERR invalid numkeys value or out of range")


def _msetex_keys(argv: list[bytes]) -> list[int]:
    try:
        count = int(argv[1])
    except ValueError:
        return []
    return [i for i in range(2, min(2 + 2 * max(count, 0), len(argv)), 2)]


@command("msetex", -4, "write denyoom movablekeys",
         keys=KeySpec(2, 0, 2, ("OW", "update"), numkeys_at=1), get_keys=_msetex_keys,
         acl="string", group=G, since="9.1.0",
         complexity="O(N) where N is the number of keys to set.",
         tips="request_policy:multi_shard response_policy:all_succeeded",
         summary="Stores the string values of several keys, with optional conditions and "
         "expiry, all or none.")
def msetex(c: Client, argv: list[bytes]) -> Any:
    count = parse_int(argv[1], INVALID_NUMKEYS)
    if not 1 <= count <= INT_MAX:
        raise INVALID_NUMKEYS
    first_option = 2 + 2 * count
    if first_option > len(argv):
        raise SYNTAX
    opts = parse_extended(argv, first_option, "mset")
    deadline = expire_deadline(c, opts.unit, opts.expire, "msetex") if opts.unit else None
    db = c.db
    keys = argv[2:first_option:2]
    if opts.flags & NX and any(db.lookup(k) is not None for k in keys):
        return 0
    if opts.flags & XX and any(db.lookup(k) is None for k in keys):
        return 0
    for i in range(2, first_option, 2):
        key = argv[i]
        db.set_value(key, argv[i + 1], keep_ttl=bool(opts.flags & KEEPTTL), event="set",
                     klass="$")
        if deadline is not None:
            db.set_expire(key, deadline)
            if c.state.notify_flags:
                c.state.notify(db, "g", "expire", key)
    # a deadline already past is stored as given, as Valkey 9.1.2 does (unlike SET): the
    # keys go at their next access or in the active expiry
    return 1


# --- counters ----------------------------------------------------------------------------

def _incr_by(c: Client, key: bytes, delta: int) -> Any:
    """The result is stored as an int (Valkey's "int" encoding): the next INCR of the key
    neither parses nor formats it, and readers see its bytes (core/keyspace.py)."""
    db = c.db
    value = db.lookup_counter(key)
    if type(value) is int:
        current: int = value
    elif value is None:
        current = 0
    elif type(value) is bytes or type(value) is bytearray:
        current = parse_int(value)
    else:
        raise WRONGTYPE
    result = current + delta
    if outside_int64(result):
        raise OVERFLOW
    stored: Any = result  # boxed once, in compiled code: the slot, funnel and reply share it
    if value is None:
        db.set_value(key, stored, keep_ttl=True, event="incrby", klass="$")
    else:
        db.set_counter(key, stored)
    return stored


@command("incr", 2, "write denyoom fast", keys=keys_range(1, flags="RW access update"),
         acl="string", group=G, since="1.0.0", summary="Adds one to the integer value of a key.")
def incr(c: Client, argv: list[bytes]) -> Any:
    return _incr_by(c, argv[1], 1)


@command("decr", 2, "write denyoom fast", keys=keys_range(1, flags="RW access update"),
         acl="string", group=G, since="1.0.0",
         summary="Subtracts one from the integer value of a key.")
def decr(c: Client, argv: list[bytes]) -> Any:
    return _incr_by(c, argv[1], -1)


@command("incrby", 3, "write denyoom fast", keys=keys_range(1, flags="RW access update"),
         acl="string", group=G, since="1.0.0",
         summary="Adds an integer to the integer value of a key.")
def incrby(c: Client, argv: list[bytes]) -> Any:
    return _incr_by(c, argv[1], parse_int(argv[2]))


@command("decrby", 3, "write denyoom fast", keys=keys_range(1, flags="RW access update"),
         acl="string", group=G, since="1.0.0",
         summary="Subtracts an integer from the integer value of a key.")
def decrby(c: Client, argv: list[bytes]) -> Any:
    delta = parse_int(argv[2])
    if delta == LLONG_MIN:
        raise ReplyError("ERR decrement would overflow")
    return _incr_by(c, argv[1], -delta)


# --- INCRBYFLOAT: in C `long double` (fakekey/codecs/longdouble.py) -------------------------------

NAN_OR_INF = ReplyError("ERR increment would produce NaN or Infinity")


@command("incrbyfloat", 3, "write denyoom fast", keys=keys_range(1, flags="RW access update"),
         acl="string", group=G, since="2.6.0",
         summary="Adds a floating-point number to the numeric value of a key.")
def incrbyfloat(c: Client, argv: list[bytes]) -> Any:
    key = argv[1]
    value = c.db.lookup_string(key)
    current = Fraction(0) if value is None else ld_parse(value)
    increment = ld_parse(argv[2])
    if isinstance(current, float) or isinstance(increment, float):
        raise NAN_OR_INF  # inf + x is inf, inf - inf is nan
    total = ld_round(current + increment)
    if isinstance(total, float):
        raise NAN_OR_INF
    text = ld_format(total)
    c.db.set_value(key, text, keep_ttl=True, event="incrbyfloat", klass="$")
    if try_int(text) is not None:
        c.db.numbers_as_text.add(key)  # Valkey stores the result as text, never as int
    return text


# --- lengths and ranges --------------------------------------------------------------------


@command("append", 3, "write denyoom fast", keys=keys_range(1, flags="RW insert"), acl="string",
         group=G, since="2.0.0",
         complexity="O(1). The amortized time complexity is O(1) assuming the appended value is "
         "small and the already present value is of any size, since the dynamic string library "
         "used by the server will double the free space available on every reallocation.",
         summary="Appends a string to the value of a key; creates the key if absent.")
def append(c: Client, argv: list[bytes]) -> Any:
    key, extra = argv[1], argv[2]
    db = c.db
    value = db.lookup_string(key)
    if value is None:
        db.set_value(key, extra, event="append", klass="$")
        return len(extra)
    check_length(c, len(value), len(extra))
    mutable = unshare(c, key, value)
    mutable += extra
    db.written(key, "append", "$")
    return len(mutable)


@command("strlen", 2, "readonly fast", keys=keys_range(1, flags="RO"), acl="string", group=G,
         since="2.2.0", summary="Answers the length of a string value.")
def strlen(c: Client, argv: list[bytes]) -> Any:
    value = c.db.lookup_string(argv[1])
    return 0 if value is None else len(value)


@command("getrange", 4, "readonly", keys=keys_range(1, flags="RO access"), acl="string",
         group=G, since="2.4.0",
         complexity="O(N) where N is the length of the returned string. The complexity is "
         "ultimately determined by the returned length, but because creating a substring "
         "from an existing string is very cheap, it can be considered O(1) for small strings.",
         summary="Answers a substring of a string value, by byte offsets.")
def getrange(c: Client, argv: list[bytes]) -> Any:
    start = parse_int(argv[2])
    end = parse_int(argv[3])
    value = c.db.lookup_string(argv[1])
    if value is None:
        return b""
    length = len(value)
    if start < 0 and end < 0 and start > end:
        return b""
    if start < 0:
        start = max(length + start, 0)
    if end < 0:
        end = max(length + end, 0)
    end = min(end, length - 1)
    if start > end or length == 0:
        return b""
    return bytes(value[start : end + 1])


@command("substr", 4, "readonly", keys=keys_range(1, flags="RO access"), acl="string",
         group=G, since="1.0.0",
         complexity="O(N) where N is the length of the returned string. The complexity is "
         "ultimately determined by the returned length, but because creating a substring "
         "from an existing string is very cheap, it can be considered O(1) for small strings.",
         summary="Answers a substring of a string value, by byte offsets (old name of GETRANGE).")
def substr(c: Client, argv: list[bytes]) -> Any:
    return getrange(c, argv)


@command("setrange", 4, "write denyoom", keys=keys_range(1, flags="RW update"), acl="string",
         group=G, since="2.2.0",
         complexity="O(1), not counting the time taken to copy the new string in place. "
         "Usually, this string is very small so the amortized complexity is O(1). Otherwise, "
         "complexity is O(M) with M being the length of the value argument.",
         summary="Overwrites part of a string value from an offset; creates the key if absent.")
def setrange(c: Client, argv: list[bytes]) -> Any:
    key, patch = argv[1], argv[3]
    offset = parse_int(argv[2])
    if offset < 0:
        raise ReplyError("ERR offset is out of range")
    db = c.db
    value = db.lookup_string(key)
    if not patch:
        return 0 if value is None else len(value)
    check_length(c, offset, len(patch))
    end = offset + len(patch)
    if value is None:
        fresh = bytearray(end)
        fresh[offset:] = patch
        db.set_value(key, fresh, event="setrange", klass="$")
        return end
    mutable = padded(c, key, value, end)
    mutable[offset:end] = patch
    db.written(key, "setrange", "$")
    return len(mutable)


# --- LCS -----------------------------------------------------------------------------------

_LCS_BOTH = ReplyError("ERR If you want both the length and indexes, please just use IDX.")
_LCS_MEMORY = ReplyError(
    "ERR Insufficient memory, transient memory for LCS exceeds proto-max-bulk-len"
)
_UINT32_MAX = 2**32 - 1


class _LcsTable:
    """The LCS(i, j) table of Valkey's dynamic program, kept as one bit-parallel row per
    prefix of `a` (Hyyro's algorithm): a zero bit j-1 in row i means LCS(i, j) is one more
    than LCS(i, j-1). Same table, built in O(n*m/word) instead of O(n*m) Python steps."""

    def __init__(self, a: bytes, b: bytes) -> None:
        full = (1 << len(b)) - 1
        masks: dict[int, int] = {}
        for j, ch in enumerate(b):
            masks[ch] = masks.get(ch, 0) | (1 << j)
        row = full
        rows = [row]
        for ch in a:
            match = row & masks.get(ch, 0)
            row = ((row + match) | (row - match)) & full
            rows.append(row)
        self.rows = rows

    def at(self, i: int, j: int) -> int:
        return j - (self.rows[i] & ((1 << j) - 1)).bit_count()


def _lcs_options(argv: list[bytes]) -> tuple[bool, bool, bool, int]:
    getlen = getidx = withmatchlen = False
    minmatchlen = 0
    i = 3
    while i < len(argv):
        opt = argv[i].upper()
        if opt == b"IDX":
            getidx = True
        elif opt == b"LEN":
            getlen = True
        elif opt == b"WITHMATCHLEN":
            withmatchlen = True
        elif opt == b"MINMATCHLEN" and i + 1 < len(argv):
            minmatchlen = max(parse_int(argv[i + 1]), 0)
            i += 1
        else:
            raise SYNTAX
        i += 1
    return getlen, getidx, withmatchlen, minmatchlen


@command("lcs", -3, "readonly", keys=keys_range(1, 2, flags="RO access"), acl="string",
         group=G, since="7.0.0",
         complexity="O(N*M) where N and M are the lengths of s1 and s2, respectively",
         summary="Finds the longest common subsequence of two string values.")
def lcs(c: Client, argv: list[bytes]) -> Any:
    raw_a = c.db.lookup(argv[1])
    raw_b = c.db.lookup(argv[2])
    for raw in (raw_a, raw_b):
        if raw is not None and type(raw) is not bytes and type(raw) is not bytearray:
            raise NOT_STRINGS
    a = b"" if raw_a is None else bytes(raw_a)
    b = b"" if raw_b is None else bytes(raw_b)
    getlen, getidx, withmatchlen, minmatchlen = _lcs_options(argv)
    if getlen and getidx:
        raise _LCS_BOTH
    if len(a) >= _UINT32_MAX - 1 or len(b) >= _UINT32_MAX - 1:
        raise ReplyError("ERR String too long for LCS")
    if (len(a) + 1) * (len(b) + 1) * 4 > c.state.config["proto-max-bulk-len"]:
        raise _LCS_MEMORY
    table = _LcsTable(a, b)
    length = table.at(len(a), len(b))
    if getlen and not getidx:
        return length
    common, matches = _lcs_walk(a, b, table, length, minmatchlen, withmatchlen)
    if getidx:
        return {b"matches": matches, b"len": length}
    return common


def _lcs_walk(
    a: bytes, b: bytes, table: _LcsTable, length: int, minmatchlen: int, withmatchlen: bool
) -> tuple[bytes, list[Any]]:
    """Valkey's walk back through the table: the common string and the matched ranges
    (last first), with its exact choice between equal paths."""
    result = bytearray(length)
    idx = length
    matches: list[Any] = []
    alen = len(a)
    a_start = alen  # alen: no range open
    a_end = b_start = b_end = 0
    i, j = alen, len(b)
    while i > 0 and j > 0:
        emit = False
        if a[i - 1] == b[j - 1]:
            result[idx - 1] = a[i - 1]
            if a_start == alen:
                a_start = a_end = i - 1
                b_start = b_end = j - 1
            elif a_start == i and b_start == j:
                a_start -= 1
                b_start -= 1
            else:
                emit = True
            if a_start == 0 or b_start == 0:
                emit = True
            idx -= 1
            i -= 1
            j -= 1
        else:
            if table.at(i - 1, j) > table.at(i, j - 1):
                i -= 1
            else:
                j -= 1
            if a_start != alen:
                emit = True
        if emit:
            match_len = a_end - a_start + 1
            if minmatchlen == 0 or match_len >= minmatchlen:
                entry: list[Any] = [[a_start, a_end], [b_start, b_end]]
                if withmatchlen:
                    entry.append(match_len)
                matches.append(entry)
            a_start = alen
    return bytes(result), matches
