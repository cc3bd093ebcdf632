"""The server side of scripting, shared by EVAL and FCALL: `redis.call` through the command
registry, the conversions between replies and Lua values, the run rules (read-only
scripts, write tracking), and the long-script machinery (BUSY, SCRIPT KILL).

How a script runs (`ScriptRunner`). A script without loops (`ScriptRun.straight`) runs
inline: it cannot reach the count hook, where Valkey would turn BUSY. Every other run is
a greenlet on the event-loop thread: the loop thread is the only thread that ever
touches the data and the clients. The run goes on until `busy-reply-threshold`; a run
still going then gives the loop back from the sandbox's count hook (or before its next
`redis.call`), and the server is BUSY:
`state.busy_script` is set, `ServerState.call` refuses every command without the
`allow_busy` flag with Valkey's BUSY error, and the script's client waits like a blocked
client. The loop resumes the run for a slice (`SLICE`) at a time between its other
events, as Valkey polls its event loop from the script's hook. When the script ends, its
reply goes to its client (or the client's EXEC goes on), blocked clients are served and
the client's pipeline resumes. SCRIPT KILL sets a flag that the count hook checks. A
threshold of 0 (Valkey: no BUSY mode) runs scripts to the end. Scripts inside MULTI/EXEC
run as any other: EXEC pauses on a BUSY script and goes on with its queue when the script
ends (`transactions.run_queued`). See HACKING.md, "Design notes: scripts and BUSY".
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final

from greenlet import GreenletExit, getcurrent, greenlet

from fakekey.codecs.numbers import SHORT_INT_MAX
from fakekey.core.client import Client
from fakekey.core.replicas import NOREPLICAS
from fakekey.core.transactions import end_transaction
from fakekey.core.upstream import READONLY
from fakekey.memory.eviction import OOM
from fakekey.resp.encoder import ENCODERS, format_double
from fakekey.resp.replies import (
    NO_REPLY,
    OK,
    BigNumber,
    Raw,
    ReplyError,
    SetReply,
    Simple,
    Verbatim,
    _NullArray,
)
from fakekey.scripting.runtime import MAX_MULTIPLE_VALUES

if TYPE_CHECKING:
    from fakekey.core.registry import Command
    from fakekey.core.state import ServerState

log = logging.getLogger("fakekey.lua")
script_log = logging.getLogger("fakekey")  # redis.log's lines (CommandBridge.log)
# redis.LOG_DEBUG, LOG_VERBOSE, LOG_NOTICE, LOG_WARNING as Python's levels, as fakeredis maps them
_PYTHON_LEVELS = (logging.DEBUG, logging.INFO, logging.INFO, logging.WARNING)

LLONG_MIN = -(2**63)
# Valkey's double2ll: an integral double within +-LLONG_MAX/2 prints as an integer.
_LL_HALF: Final = 2**62

UNKNOWN_COMMAND = b"ERR Unknown command called from script"
WRONG_ARITY = b"ERR Wrong number of args calling command from script"
NOT_ALLOWED = b"ERR This Valkey command is not allowed from script"
NO_ARGUMENTS = b"ERR Please specify at least one argument for this call"
BAD_ARGUMENT = b"ERR Command arguments must be strings or integers"
READ_ONLY_WRITE = b"ERR Write commands are not allowed from read-only scripts."
INVALID_ACL_COMMAND = b"Invalid command passed to server.acl_check_cmd()"
BUSY_EVAL = ReplyError("BUSY Valkey is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.")
BUSY_FUNCTION = ReplyError(
    "BUSY Valkey is busy running a script. You can only call FUNCTION KILL or SHUTDOWN NOSAVE."
)
NOTBUSY = ReplyError("NOTBUSY No scripts in execution right now.")
UNKILLABLE = ReplyError(
    "UNKILLABLE Sorry the script already executed write commands against the dataset. You can "
    "either wait the script termination or kill the server in a hard way using the SHUTDOWN "
    "NOSAVE command."
)
KILLED_EVAL = b"ERR Script killed by user with SCRIPT KILL."
KILLED_FUNCTION = b"ERR Script killed by user with FUNCTION KILL."

# Commands a read-only script may not run, and that make a run's effects visible (it
# cannot be run again): writes, and the ones Valkey flags may-replicate (a flag COMMAND
# INFO does not show, so not in the registry).
_MAY_REPLICATE: Final = frozenset({"publish", "spublish", "pfcount"})
# held as a constant: compiled code calls it without a dict lookup
_monotonic: Final = time.monotonic


# --- numbers ------------------------------------------------------------------------------


def lua_number_to_int(value: int | float) -> int:
    """Lua number -> integer reply: C's (long long) cast, which x86 turns into LLONG_MIN
    for NaN and out-of-range values."""
    if type(value) is int:
        return value
    if value != value or not -9.223372036854775808e18 <= value < 9.223372036854775808e18:
        return LLONG_MIN
    return int(value)


def number_argument(value: int | float) -> bytes:
    """A Lua number passed to redis.call, as Valkey prints it: integers exactly, other
    doubles in fpconv's shortest form (`0.1`, `1e+20`, `inf`, `-nan`)."""
    if type(value) is int and -_LL_HALF <= value <= _LL_HALF:
        return b"%d" % value
    number = float(value)
    if number != number:
        return b"-nan" if math.copysign(1.0, number) < 0 else b"nan"
    return format_double(number)


# the text of small integers, the commonest numbers scripts pass (increments, indexes)
_SMALL_INT_TEXT: Final = tuple(b"%d" % n for n in range(256))


def integer_argument(value: int) -> bytes:
    """number_argument of an integer: a small one from a table, one within ±2**62 as
    its digits (without bytes' % formatting, a generic call compiled)."""
    if 0 <= value < 256:
        return _SMALL_INT_TEXT[value]
    if -SHORT_INT_MAX <= value <= SHORT_INT_MAX:
        return str(value).encode()
    return number_argument(value)


def _argv(args: tuple) -> list[bytes] | tuple:
    """redis.call's arguments as a command's argv (numbers printed as Valkey prints them),
    or the outcome for Lua when there are none or one is neither a string nor a number."""
    if not args:
        return (2, NO_ARGUMENTS, False)
    argv = []
    for arg in args:
        kind = type(arg)
        if kind is bytes:
            argv.append(arg)
        elif kind is int:  # the common number
            argv.append(integer_argument(arg))
        elif kind is float:
            argv.append(number_argument(arg))
        else:
            return (2, BAD_ARGUMENT, False)
    return argv


# --- replies -> Lua -------------------------------------------------------------------------
# A reply crosses to Lua as (tag, ...): 0 a scalar, 1 a status, 2 an error (message,
# counted), 3 a flat token list, 4 a token table, 5 stop the script (the kill message),
# 6 an array of strings and integers (its values; the commonest aggregate, no tokens).
# Tokens: a string or number stands for itself; `False` escapes a code: 1 false, 2 nil,
# 3 true, 5 status, 6 error, 7 array, 8 map, 9 set, 10 double, 11 big number,
# 12 verbatim (see the bootstrap's `decode`).

_MAX_TUPLE: Final = 7000


_OK_STATUS: Final = (1, b"OK")  # the commonest status reply, made once


def lua_error_text(message: bytes) -> bytes:
    """An error reply as a Lua error table holds it (luaPushErrorBuff): its code, a space,
    its message without the trailing newline; a code-less message gets `ERR`."""
    code, space, text = message.partition(b" ")
    if not space:
        code, text = b"ERR", message
    return code + b" " + text.strip(b"\r\n")


def reply_to_lua(reply: Any, resp3: bool) -> tuple:
    """A command's reply as Lua gets it: (tag, ...) (see above); a long token list comes
    as (4, list), made a Lua table by the thread that runs the script (see `call`)."""
    kind = type(reply)
    if kind is bytes:
        return (0, reply)
    if kind is int:
        return (0, reply)
    if reply is None or kind is _NullArray:
        return (0, None if resp3 else False)
    if kind is Simple:
        return _OK_STATUS if reply == b"OK" else (1, bytes(reply))
    if isinstance(reply, ReplyError):
        return (2, lua_error_text(reply.message), True)
    if kind is bool:
        return (0, reply if resp3 else int(reply))
    if kind is float and not resp3:
        return (0, format_double(reply))
    if kind is Raw:
        return reply_to_lua(parse_raw(bytes(reply)), resp3)
    if kind is list and len(reply) <= _MAX_TUPLE:
        for item in reply:
            item_kind = type(item)
            if item_kind is not bytes and item_kind is not int:
                break
        else:  # strings and integers only: Lua makes the table of them (tag 6)
            return (6, *reply)
    tokens: list[Any] = []
    _tokens(reply, resp3, tokens)
    if len(tokens) == 1:
        return (0, tokens[0])
    if len(tokens) <= _MAX_TUPLE:
        return (3, *tokens)
    return (4, tokens)


def _tokens(reply: Any, resp3: bool, out: list[Any]) -> None:
    kind = type(reply)
    if kind is bytes or kind is int:
        out.append(reply)
    elif reply is None or kind is _NullArray:
        out += (False, 2 if resp3 else 1)
    elif kind is bool:
        if resp3:
            out += (False, 3) if reply else (False, 1)
        else:
            out.append(int(reply))
    elif kind is Simple:
        out += (False, 5, bytes(reply))
    elif isinstance(reply, ReplyError):
        out += (False, 6, lua_error_text(reply.message))
    elif kind is float:
        if resp3:
            out += (False, 10, reply)
        else:
            out.append(format_double(reply))
    elif isinstance(reply, dict):
        if resp3:
            out += (False, 8, len(reply))
            for key, value in reply.items():
                _tokens(key, resp3, out)
                _tokens(value, resp3, out)
        else:
            out += (False, 7, 2 * len(reply))
            for key, value in reply.items():
                _tokens(key, resp3, out)
                _tokens(value, resp3, out)
    elif isinstance(reply, SetReply) and resp3:
        out += (False, 9, len(reply))
        for item in reply:
            _tokens(item, resp3, out)
    elif isinstance(reply, list | tuple):
        out += (False, 7, len(reply))
        for item in reply:
            _tokens(item, resp3, out)
    elif isinstance(reply, Verbatim):
        if resp3:
            out += (False, 12, b"txt", bytes(reply))
        else:
            out.append(bytes(reply))
    elif isinstance(reply, BigNumber):
        if resp3:
            out += (False, 11, bytes(reply))
        else:
            out.append(bytes(reply))
    elif isinstance(reply, Raw):
        _tokens(parse_raw(bytes(reply)), resp3, out)
    elif isinstance(reply, bytes):
        out.append(bytes(reply))
    elif isinstance(reply, int):
        out.append(int(reply))
    else:
        raise TypeError(f"cannot hand reply {reply!r} to Lua")


def parse_raw(data: bytes) -> Any:
    """A pre-encoded reply (`Raw`) back to a typed reply, for the rare command that
    answers with one."""
    value, _ = _parse_resp(data, 0)
    return value


def _parse_resp(data: bytes, pos: int) -> tuple[Any, int]:
    end = data.index(b"\r\n", pos)
    kind, line, pos = data[pos:pos + 1], data[pos + 1:end], end + 2
    if kind in (b"$", b"="):
        size = int(line)
        if size < 0:
            return None, pos
        body = data[pos:pos + size]
        pos += size + 2
        return (Verbatim(body[4:]) if kind == b"=" else body), pos
    if kind in (b"*", b"~", b">", b"%", b"|"):
        count = int(line)
        if count < 0:
            return None, pos
        items = []
        for _ in range(count * (2 if kind in (b"%", b"|") else 1)):
            item, pos = _parse_resp(data, pos)
            items.append(item)
        if kind == b"|":  # an attribute: skip it, the reply follows
            return _parse_resp(data, pos)
        if kind == b"%":
            return dict(zip(items[::2], items[1::2], strict=True)), pos
        return (SetReply(items) if kind == b"~" else items), pos
    if kind == b":":
        return int(line), pos
    if kind == b"+":
        return Simple(line), pos
    if kind == b"-":
        return ReplyError(line), pos
    if kind == b"_":
        return None, pos
    if kind == b",":
        return float(line), pos
    if kind == b"#":
        return line == b"t", pos
    if kind == b"(":
        return BigNumber(line), pos
    raise ValueError(f"cannot parse reply type {kind!r}")


# --- Lua results -> replies --------------------------------------------------------------


def _no_newlines(text: bytes) -> bytes:
    return text.replace(b"\r", b" ").replace(b"\n", b" ")


def scalar_to_reply(value: Any, resp: int) -> Any:
    kind = type(value)
    if kind is bytes:
        return value
    if kind is int or kind is float:
        return lua_number_to_int(value)
    if kind is bool:
        if resp == 3:
            return value
        return 1 if value else None
    return None


# A script reply nested deeper than this is encoded here, in one pass without recursion
# (the client encoder recurses on nesting; Lua can nest 7995 deep before Valkey's limit).
_DEEP_REPLY = 100


class _TooDeep(Exception):  # noqa: N818 - a signal, not an error
    """The reply nests past _DEEP_REPLY: encode it with `_TokenReader.encode_all`."""


class _TokenReader:
    """Reads the bootstrap's `encode` tokens into typed replies."""

    def __init__(self, tokens: Any, resp: int, protocol: int) -> None:
        self.tokens = tokens
        self.pos = 0
        self.resp = resp
        self.protocol = protocol
        self.errors: list[ReplyError] = []
        self.recounted = 0  # error replies already counted where they came from (a pcall)

    def read(self) -> Any:
        """The typed reply, built with a stack of open aggregates (no recursion); raises
        _TooDeep past _DEEP_REPLY levels."""
        tokens = self.tokens
        open_: list[tuple[int, list[Any], int, int]] = []  # code, items, size, count
        item: Any  # any reply (a scalar, or an aggregate closed)
        while True:
            value = tokens[self.pos]
            if value is not False:
                self.pos += 1
                item = value if type(value) is bytes else lua_number_to_int(value)
            else:
                code = tokens[self.pos + 1]
                self.pos += 2
                if code < 9:
                    item = self._special(code)
                else:  # an aggregate: map 9, set 10, array 11
                    count = self._take()
                    size = 2 * count if code == 9 else count
                    if size:
                        if len(open_) >= _DEEP_REPLY:
                            raise _TooDeep
                        open_.append((code, [], size, count))
                        continue
                    item = self._aggregate(code, [], 0)
            while open_:  # the item joins the innermost aggregate, which may be full now
                code, items, size, count = open_[-1]
                items.append(item)
                if len(items) < size:
                    break
                open_.pop()
                item = self._aggregate(code, items, count)
            else:
                return item

    def encode_all(self) -> Raw:
        """The whole reply encoded for the client in one pass (RESP is in the same order
        as the tokens, so no stack is needed)."""
        self.pos = 0
        self.errors = []
        self.recounted = 0
        tokens, protocol = self.tokens, self.protocol
        encode = ENCODERS[protocol].encode
        parts: list[bytes] = []
        end = len(tokens)
        while self.pos < end:
            value = tokens[self.pos]
            if value is not False:
                self.pos += 1
                parts.append(encode(value if type(value) is bytes else lua_number_to_int(value)))
                continue
            code = tokens[self.pos + 1]
            self.pos += 2
            if code < 9:
                parts.append(encode(self._special(code)))
                continue
            count = self._take()
            if code == 9:
                parts.append(b"%%%d\r\n" % count if protocol == 3 else b"*%d\r\n" % (2 * count))
            elif code == 10:
                parts.append(b"~%d\r\n" % count if protocol == 3 else b"*%d\r\n" % count)
            else:
                parts.append(b"*%d\r\n" % count)
        return Raw(b"".join(parts))

    def _take(self) -> Any:
        value = self.tokens[self.pos]
        self.pos += 1
        return value

    def _aggregate(self, code: int, items: list[Any], count: int) -> Any:
        if code == 9:
            return self._map(items, count)
        return SetReply(items) if code == 10 else items

    def _special(self, code: int) -> Any:
        """A scalar token's reply (codes below 9)."""
        if code == 1:
            return None
        if code == 2:
            flag = self._take()
            return flag if self.resp == 3 else (1 if flag else None)
        if code == 4:
            message, ignored = self._take(), self._take()
            err = ReplyError(message)
            if ignored:
                self.recounted += 1
            else:
                self.errors.append(err)
            return err
        if code == 5:
            return Simple(_no_newlines(self._take()))
        if code == 6:
            number, negative_zero = self._take(), self._take()
            return -0.0 if negative_zero else float(number)
        if code == 7:
            return BigNumber(_no_newlines(self._take()))
        fmt, text = self._take(), self._take()  # 8: verbatim
        return self._verbatim(fmt, text)

    def _verbatim(self, fmt: bytes, text: bytes) -> Any:
        fmt = fmt.split(b"\0", 1)[0][:3].ljust(3)  # a C string, padded with spaces
        if self.protocol != 3:
            return text
        if fmt == b"txt":
            return Verbatim(text)
        return Raw(b"=%d\r\n%s:%s\r\n" % (len(text) + 4, fmt, text))

    def _map(self, flat: list[Any], count: int) -> Any:
        """A dict when the keys allow one; otherwise (table keys, keys equal in Python but
        not in Lua) the map encoded as is for the client."""
        try:
            mapping = dict(zip(flat[::2], flat[1::2], strict=True))
        except TypeError:
            mapping = None
        if mapping is not None and len(mapping) == count:
            return mapping
        encode = ENCODERS[self.protocol].encode
        head = b"%%%d\r\n" % count if self.protocol == 3 else b"*%d\r\n" % (2 * count)
        return Raw(head + b"".join(encode(item) for item in flat))


def outcome_to_reply(outcome: tuple, protocol: int,
                     funcname: bytes = b"") -> tuple[Any, list[ReplyError], int]:
    """The sandbox's `run` outcome (tag, resp, ...) as the reply to the script's caller,
    with the error replies Valkey counts in its error statistics for it (all of them but
    those that came from commands), and the failed calls it counts on the script command."""
    tag, resp = outcome[0], outcome[1]
    if tag == 0:
        return scalar_to_reply(outcome[2], resp), [], 0
    if tag == 1 or tag == 4:
        tokens = outcome[2:] if tag == 1 else list(outcome[2].values())
        reader = _TokenReader(tokens, resp, protocol)
        try:
            reply = reader.read()
        except _TooDeep:
            reply = reader.encode_all()
        return reply, reader.errors, failed_calls(reader.errors, reader.recounted)
    if tag == 2:
        message, source, line, ignored = outcome[2], outcome[3], outcome[4], outcome[5]
        text = message if message is not None else b"ERR unknown error"
        if source is not None and line is not None:
            text += b" script: on " + source + b":" + line + b"."
        err = ReplyError(text)
        return err, [] if ignored else [err], 1
    text = outcome[2] if len(outcome) > 2 and outcome[2] is not None else b"execution failure"
    err = ReplyError(b"ERR Error running script " + funcname + b", " + text[:100])
    return err, [err], 1


def failed_calls(counted: list[ReplyError], recounted: int) -> int:
    """The failed calls a script's reply adds to its command, as Valkey counts them: one
    for the errors counted now (the command's calls saw the error count move), and one
    per error counted already (afterErrorReply counts those on the command itself)."""
    return (1 if counted else 0) + recounted


# --- the script's client and its commands --------------------------------------------------


def unpack_table(table: Any, count: int) -> list[Any]:
    """Slots 1..count of a Lua table (None for nil)."""
    return [table[i] for i in range(1, count + 1)]


def make_script_client(state: ServerState, client_id: int) -> Client:
    """The fake client a scripting engine runs commands as (Valkey gives the EVAL engine
    id 1 and the FUNCTION engine id 2, before any connection)."""
    reserved = state._next_client_id
    client = Client(state)
    state._next_client_id = reserved  # the id is the engine's own, not a new one
    client.id = client_id
    client.authenticated = True
    return client


class Rand48:
    """Valkey's rand48, behind math.random: the same sequence on every machine; one state
    for the whole server, kept across SCRIPT FLUSH."""

    _A = 0x5DEECE66D
    _MASK = (1 << 48) - 1

    def __init__(self) -> None:
        self.state = 0x1234ABCD330E

    def seed(self, seed: int) -> None:
        self.state = ((seed & 0xFFFFFFFF) << 16) | 0x330E

    def next31(self) -> int:
        self.state = (self._A * self.state + 0xB) & self._MASK
        return self.state >> 17

    def random(self) -> float:
        return (self.next31() % 0x7FFFFFFF) / 0x7FFFFFFF


class Refused(Exception):  # noqa: N818 - not an error of fakekey's: a script's command refused
    """A command a script may not run, with what Lua gets for it."""

    def __init__(self, outcome: tuple) -> None:
        super().__init__()
        self.outcome = outcome


class CommandBridge:
    """The sandbox's host (`runtime.SandboxHost`) for one scripting engine: runs
    `redis.call` as the engine's client under the current run's rules."""

    def __init__(self, state: ServerState, client_id: int, runner: ScriptRunner) -> None:
        self.state = state
        self.client = make_script_client(state, client_id)
        self.runner = runner
        self.sandbox: Any = None  # the engine's LuaSandbox, once made
        self.run: ScriptRun | None = None
        self.resp = 2  # redis.setresp's protocol for the run going on (each run starts at 2)
        # the command of the last name redis.call sent, as ServerState.call keeps its own:
        # a script calling one command again skips hashing its name (a new string each call)
        self._last_name = b""
        self._last_cmd: Command | None = None

    # --- host functions (called from Lua; they never raise) ------------------------------

    def call(self, *args: Any) -> Any:
        """redis.call's host side, in one function (a 10-call script pays it ten times):
        the arguments, the run's turn to give way, the command under the run's rules,
        the reply for Lua: a string or integer reply itself (the commonest), anything
        else as False and `reply_to_lua`'s outcome. Never raises."""
        try:
            for arg in args:
                if type(arg) is not bytes:  # numbers to convert, or a bad argument
                    made = _argv(args)
                    if isinstance(made, tuple):
                        return (False, *made)
                    argv = made
                    break
            else:
                if not args:
                    return (False, 2, NO_ARGUMENTS, False)
                argv = [*args]
            run = self.run
            if run is not None and run.deadline and _monotonic() >= run.deadline:
                run.give_way()  # past the threshold or the slice: the loop's turn first
                if run.aborted:
                    return (False, 5, run.kill_message())
            reply = self._execute(argv, run)
            kind = type(reply)
            if kind is bytes or kind is int:  # the commonest replies, as they are
                return reply
            outcome = reply_to_lua(reply, self.resp == 3)
            if outcome[0] == 4 and type(outcome[1]) is list:  # Lua makes the table
                return (False, 4, self.sandbox.lua.table_from(outcome[1]))
            return (False, *outcome)
        except Refused as refused:
            return (False, *refused.outcome)
        except Exception:  # noqa: BLE001 - a Python error must never reach Lua
            log.exception("redis.call failed inside fakekey")
            return (False, 2, b"ERR internal error in fakekey's redis.call", False)

    def call_packed(self, count: int, args: Any) -> Any:
        """redis.call with many arguments, given as a Lua table of `count` slots."""
        return self.call(*unpack_table(args, count))

    def setresp(self, resp: int) -> None:
        """redis.setresp: the protocol redis.call's replies are converted for."""
        self.resp = resp

    def acl_check_packed(self, count: int, args: Any) -> tuple:
        return self.acl_check(*unpack_table(args, count))

    def acl_check(self, *args: Any) -> tuple:
        try:
            argv = _argv(args)
            if isinstance(argv, tuple):
                return (False, argv[1][4:])
            cmd = self.state.registry.lookup(argv[0])
            if cmd is not None and cmd.subcommands and len(argv) >= 2:
                cmd = cmd.subcommands.get(argv[1].lower())
            if cmd is None:
                return (False, INVALID_ACL_COMMAND)
            caller = self.run_caller()
            return (True, caller is None or self.state.users.allows(caller, cmd, argv))
        except Exception:  # noqa: BLE001
            log.exception("redis.acl_check_cmd failed inside fakekey")
            return (False, b"internal error")

    def log(self, level: int, message: bytes) -> None:
        """redis.log: every line goes to Python's logging, logger `fakekey`, at fakeredis's
        levels (debug, info, info, warning), so an in-process server's scripts log as
        fakeredis's do; what is shown is logging's choice (fakekey-server sets the
        logger's level from its loglevel)."""
        script_log.log(_PYTHON_LEVELS[level], "%s", message.decode("utf-8", "replace"))

    def should_stop(self) -> bytes | None:
        run = self.run
        if run is None:
            return None
        if self.runner.server_stopping():
            run.aborted = True
        return run.stop_reason()

    def random(self) -> float:
        return self.runner.rand.random()

    def randomseed(self, seed: int) -> None:
        self.runner.rand.seed(int(seed))

    # --- redis.call -------------------------------------------------------------------

    def run_caller(self) -> Client | None:
        return self.run.caller if self.run is not None else None

    def _execute(self, argv: list[bytes], run: ScriptRun | None) -> Any:
        """Run argv under the run's rules: the command's reply; raises Refused."""
        state = self.state
        # the registry as ServerState.call reads it: the last name, a known name as sent,
        # then the rest
        name = argv[0]
        if name == self._last_name:
            cmd = self._last_cmd
        else:
            cmd = state._by_exact_name.get(name)
            if cmd is not None:
                self._last_name, self._last_cmd = name, cmd
        if cmd is None or cmd.subcommands or (cmd.arity != len(argv) and (
                cmd.arity > 0 or len(argv) < -cmd.arity)):
            found = state.lookup_command(argv)
            if isinstance(found, ReplyError):
                raise self._refused(self._lookup_error(found, argv))
            cmd = found
        if cmd.noscript:
            raise self._refused(NOT_ALLOWED, cmd)
        caller = run.caller if run is not None else None
        if caller is not None and not caller.acl_unrestricted:
            refusal = acl_refusal(state, caller, cmd, argv)
            if refusal is not None:
                raise self._refused(refusal, cmd)
        if run is not None:
            writes = cmd.writes
            if writes or cmd.name in _MAY_REPLICATE:
                if run.read_only:
                    raise self._refused(READ_ONLY_WRITE, cmd)
                upstream = state.upstream  # a read-only replica: only its primary writes
                if (writes and upstream is not None and state.config["replica-read-only"]
                        and caller is not upstream.client):
                    raise self._refused(READONLY.message, cmd)
                if writes and state.too_few_replicas:  # a script without a shebang writes
                    raise self._refused(NOREPLICAS.message, cmd)
                # out of memory as the script began: refused until its first write (scriptVerifyOOM)
                if state.pre_command_oom and "denyoom" in cmd.flags and not run.dirty and not run.allow_oom:
                    raise self._refused(OOM.message, cmd)
                if writes:
                    run.dirty = True
        if state.cluster is not None and caller is not None:  # undeclared keys must be local
            refusal = state.cluster.script_refusal(caller, cmd, argv)
            if refusal is not None:
                raise self._refused(refusal, cmd)
        client = self.client
        resp = self.resp
        if client.protocol != resp:
            client.set_protocol(3 if resp == 3 else 2)
        if caller is None:
            return state.run_command(client, cmd, argv)
        # The caller stays the current client (its own pub/sub messages come after its
        # reply, as in Valkey); what runs now is this command (keymiss events read it).
        outer = caller.cmd
        caller.cmd = cmd
        try:
            return state.run_command(client, cmd, argv)
        finally:
            caller.cmd = outer

    def _lookup_error(self, err: ReplyError, argv: list[bytes]) -> bytes:
        if self.state.registry.lookup(argv[0]) is None:
            return UNKNOWN_COMMAND
        if err.message.startswith(b"ERR wrong number of arguments"):
            return WRONG_ARITY
        return err.message  # an unknown subcommand: the container's own answer

    def _refused(self, message: bytes, cmd: Command | None = None) -> Refused:
        """A command the script may not run: Valkey counts the error, then hands it to
        the script as a command error."""
        if cmd is not None:
            self.state.stats_of(cmd).rejected_calls += 1
        self.state._count_error(ReplyError(message))
        return Refused((2, lua_error_text(message), True))

    # --- one run ---------------------------------------------------------------------------


def acl_refusal(state: ServerState, caller: Client | None, cmd: Command, argv: list[bytes]) -> bytes | None:
    """The one place a script's command meets ACL: the refusal text (Valkey: "ACL failure
    in script: ..."), or None when allowed. The script runs under its caller's user."""
    if caller is None or caller.acl_unrestricted:
        return None
    return state.users.check_script(caller, cmd, argv)


# --- runs and the runner -------------------------------------------------------------------


# How long a BUSY script runs between two turns of the event loop.
SLICE = 0.01


class ScriptRun:
    """One execution of a script (EVAL) or a function (FCALL). What most runs never
    change (the BUSY machinery's fields) are class defaults, so a run costs little."""

    # the blocking machinery treats the caller's `blocked` marker as an inactive waiter
    active = False
    holds_output = False
    as_function = False
    funcname = b""
    dirty = False  # it ran a write command: SCRIPT KILL can no longer stop it
    allow_oom = False  # flagged allow-oom: may write when out of memory
    killed = False
    aborted = False  # the server stopped under it: its client is not answered
    # when the run gives the loop its turn (monotonic seconds; 0: never, it runs to the end)
    deadline = 0.0
    task: Any = None  # the greenlet the run goes on in (the runner's worker)
    ended = False
    now = 0  # the clock snapshot of its command, which its redis.calls share
    # the BUSY machinery
    blocking_before = False  # state.deny_blocking before the run, restored by deliver()
    detached = False  # past the threshold: the server is BUSY
    loop: asyncio.AbstractEventLoop | None = None
    after_script: tuple[tuple[Callable[..., Any], tuple], ...] = ()
    # what the caller does with the reply of a detached run instead of sending it (EXEC
    # goes on with its queue): the reply to send, or NO_REPLY when another script went BUSY
    then: Callable[[Any], Any] | None = None
    # the outcome: the reply, and the error replies Valkey counts for it
    reply: Any = None
    counted_errors: list[ReplyError] | tuple[()] = ()
    failures = 0  # the failed calls its reply counts on the script's command

    started = 0.0  # monotonic seconds, when it runs on the event loop (FUNCTION STATS)
    # it cannot reach the count hook's give-way (runtime.straight_line): it runs inline,
    # without a greenlet, and never turns the server BUSY
    straight = False

    def __init__(self, bridge: CommandBridge, caller: Client, fn: Any, numkeys: int,
                 values: list[bytes], read_only: bool) -> None:
        self.bridge = bridge
        self.caller = caller
        self.fn = fn
        self.numkeys = numkeys
        self.values = values  # the keys, then the arguments
        self.read_only = read_only

    def perform(self) -> None:
        """Run the script and convert its outcome. Data is touched only through
        redis.call (see `CommandBridge.call`)."""
        bridge = self.bridge
        bridge.run = self
        bridge.resp = 2  # as the sandbox's script_resp at the start of a run
        client, caller = bridge.client, self.caller  # the engine's client runs as the caller
        client.db = caller.db
        client.user = caller.user
        if client.protocol != 2:
            client.set_protocol(2)
        try:
            values, numkeys = self.values, self.numkeys
            if len(values) <= MAX_MULTIPLE_VALUES:
                outcome = bridge.sandbox.run_fn(self.fn, self.as_function, numkeys, *values)
            else:
                outcome = bridge.sandbox.run(self.fn, values[:numkeys], values[numkeys:],
                                             as_function=self.as_function)
            kind = type(outcome)
            if kind is bytes or kind is int:  # a string or an integral number: itself
                self.reply = outcome
                return
            if kind is float:
                self.reply = lua_number_to_int(outcome)
                return
            tag = outcome[0]
            if tag == 0:  # another scalar
                value = outcome[2]
                kind = type(value)
                self.reply = value if kind is bytes or kind is int else scalar_to_reply(value, outcome[1])
            elif tag == 5:  # a plain array of strings and numbers
                self.reply = [value if type(value) is bytes else lua_number_to_int(value)
                              for value in outcome[2:]]
            else:
                self.reply, self.counted_errors, self.failures = outcome_to_reply(
                    outcome, self.caller.protocol, self.funcname)
        except Exception as err:  # noqa: BLE001 - the caller always gets an answer
            log.exception("script run failed inside fakekey")
            message = ReplyError(f"ERR Error running script: {type(err).__name__}")
            self.reply, self.counted_errors, self.failures = message, [message], 1
        finally:
            bridge.run = None

    def kill_message(self) -> bytes:
        return KILLED_FUNCTION if self.as_function else KILLED_EVAL

    def stop_reason(self) -> bytes | None:
        """Asked by the sandbox's count hook: the kill error when the run must stop
        (again, for a stop that a coroutine or pcall kept from ending it). Past its
        deadline, the run first gives the event loop its turn."""
        if not (self.killed or self.aborted) and self.deadline and time.monotonic() >= self.deadline:
            self.give_way()
        if self.killed or self.aborted:
            return self.kill_message()
        return None

    def give_way(self) -> None:
        """From inside the run: back to the event loop, which resumes the run later
        (`ScriptRunner._go_on`). The first time, at busy-reply-threshold, the server
        turns BUSY (`ScriptRunner.execute` sees the run has not ended)."""
        task = self.task
        if task is None or getcurrent() is not task:
            return
        try:
            task.parent.switch()
        except GreenletExit:  # dropped with the server: end as killed, at once
            self.aborted = True

    # --- while the server is BUSY ------------------------------------------------------------

    def after(self, fn: Callable[..., Any], *args: Any) -> None:
        """Run `fn` when the script has ended (a client that leaves meanwhile is forgotten
        then: it may be the script's own caller, whose state the run still reads)."""
        self.after_script += ((fn, args),)

    def refuse(self, client: Client, cmd: Command, argv: list[bytes]) -> ReplyError | None:
        """What a command sent while this script keeps the server BUSY gets: None for the
        commands flagged allow_busy, Valkey's BUSY error for the others."""
        busy = BUSY_FUNCTION if self.as_function else BUSY_EVAL
        if "allow_busy" in cmd.flags:
            if cmd.name != "shutdown" or any(arg.upper() == b"NOSAVE" for arg in argv[1:]):
                return None
            return busy  # only SHUTDOWN NOSAVE may stop the server now
        client.state.stats_of(cmd).rejected_calls += 1
        if cmd.name == "exec":
            end_transaction(client)
            return ReplyError(b"EXECABORT Transaction discarded because of: " + busy.message)
        if client.in_multi:
            client.multi_error = True
        return busy


class ScriptRunner:
    """Runs scripts, and keeps the BUSY mode; one per server.

    A run goes on in a greenlet on the loop thread (switching to it and back costs under
    a microsecond), so that at busy-reply-threshold it can give the loop back without
    ending: the server is then BUSY, and the loop resumes the run a slice at a time until
    it ends. One thread does everything, so no lock is needed anywhere.
    """

    def __init__(self, state: ServerState) -> None:
        self.state = state
        self.rand = Rand48()
        self._worker: Any = None  # the greenlet runs go on in (`_serve_runs`)
        self.next_run: ScriptRun | None = None  # the run the worker starts when switched to

    def execute(self, run: ScriptRun) -> Any:
        """Run a script for its caller: its reply, or NO_REPLY when it went past the
        busy threshold (the reply comes when it ends; inside EXEC, `run.then` must be
        set by the caller then, see `transactions.exec_`)."""
        state = self.state
        run.blocking_before = state.deny_blocking
        state.deny_blocking = True  # restored by deliver()
        if run.straight:  # it cannot run long: no greenlet, no clock (see ScriptRun.straight)
            run.perform()
            state.deny_blocking = run.blocking_before
            if run.failures:
                return self.deliver(run)
            return run.reply
        threshold = state.config.values["busy-reply-threshold"]
        loop = state.running_loop() if threshold > 0 else None
        if loop is None:  # no BUSY mode, or no event loop to be BUSY on: to the end
            run.perform()
            return self.deliver(run)
        run.started = started = _monotonic()
        run.deadline = started + threshold / 1000
        run.now = state.now
        worker = self._worker
        self.next_run = run  # what the worker takes (a switch without arguments costs less)
        if worker is None or worker.dead:
            worker = self._worker = greenlet(_serve_runs)
            run.task = worker
            worker.switch(self)
        else:
            run.task = worker
            worker.switch()
        if run.ended:
            # deliver(), inline: the reply, its errors counted (see there)
            state.deny_blocking = run.blocking_before
            if run.failures:
                return self.deliver(run)
            return run.reply
        # past the threshold: the server is BUSY until the run ends
        run.detached = True
        run.loop = loop
        state.busy_script = run
        run.caller.blocked = run
        loop.call_soon(self._go_on, run)
        return NO_REPLY

    def _go_on(self, run: ScriptRun) -> None:
        """One slice of a BUSY run, on the loop between other events; the run's own clock
        snapshot and client are current meanwhile."""
        state = self.state
        if state.busy_script is not run:  # abandoned with the server
            return
        if self.server_stopping():
            run.aborted = True
        outer_now, outer_client = state.now, state.current_client
        state.now, state.current_client = run.now, run.caller
        run.deadline = time.monotonic() + SLICE
        try:
            run.task.switch()
        finally:
            state.now, state.current_client = outer_now, outer_client
        if run.ended:
            self._complete(run)
        else:
            loop = run.loop
            assert loop is not None  # set as the run went BUSY
            loop.call_soon(self._go_on, run)

    def abandon(self) -> None:
        """The server stops: a BUSY run ends now, as if killed, and nobody is answered
        (GreenletExit at the point where it gave way: see `ScriptRun.give_way`)."""
        run = self.state.busy_script
        if run is None or run.ended:
            return
        run.aborted = True
        run.task.throw()
        self.state.busy_script = None

    def deliver(self, run: ScriptRun) -> Any:
        """The reply, once its error replies are counted as Valkey counts them (when the
        run has ended)."""
        self.state.deny_blocking = run.blocking_before
        for err in run.counted_errors:
            self.state._count_error(err)
        if run.failures and run.caller.cmd is not None:
            self.state.stats_of(run.caller.cmd).failed_calls += run.failures
        return run.reply

    def server_stopping(self) -> bool:
        future = self.state.shutdown_requested
        return future is not None and future.done()

    def _complete(self, run: ScriptRun) -> None:
        """When a BUSY script has ended: answer its client, do what waited for the
        script's end, serve blocked clients, resume the client."""
        state = self.state
        if state.busy_script is run:
            state.busy_script = None
        caller = run.caller
        if caller.blocked is run:
            caller.blocked = None
        reply = self.deliver(run)
        if not run.aborted:  # stopped with the server: its client is not answered
            if run.then is not None:  # EXEC goes on with its queue
                reply = run.then(reply)
                busy = state.busy_script
                if reply is NO_REPLY and busy is not None:  # another of its scripts keeps the server BUSY
                    busy.after_script = run.after_script + busy.after_script
                    return
            caller.send(reply)
        for fn, args in run.after_script:
            fn(*args)
        state.blocking.expire_timeouts()
        state.blocking.serve()
        connection = caller.connection
        if connection is not None:
            connection.resume()


def _serve_runs(runner: ScriptRunner) -> None:
    """The runner's worker greenlet: one run after another (`runner.next_run`), back to
    the loop's greenlet after each. A greenlet lives on from run to run, because starting
    one that runs Python code costs several microseconds."""
    back = getcurrent().parent.switch  # to the loop's greenlet, which made this one
    while True:
        run, runner.next_run = runner.next_run, None  # held by nothing once it ends
        assert run is not None  # the runner sets it before it switches here
        run.perform()
        run.ended = True
        back()


def runner_of(state: ServerState) -> ScriptRunner:
    """The server's script runner (created on first use)."""
    runner = state.script_runner
    if runner is None:
        runner = state.script_runner = ScriptRunner(state)
    return runner


def kill_running_script(state: ServerState, *, from_eval: bool) -> Any:
    """SCRIPT KILL (from_eval) / FUNCTION KILL."""
    run = state.busy_script
    if run is None:
        raise NOTBUSY
    if run.dirty:
        raise UNKILLABLE
    if from_eval and run.as_function:
        raise BUSY_FUNCTION
    if not from_eval and not run.as_function:
        raise BUSY_EVAL
    run.killed = True
    return OK


def busy_error(state: ServerState) -> ReplyError | None:
    """The BUSY error while a script keeps the server busy (for allow_busy commands that
    still refuse, like FUNCTION STATS during an EVAL), else None."""
    run = state.busy_script
    if run is None:
        return None
    return BUSY_FUNCTION if run.as_function else BUSY_EVAL
