"""CLIENT PAUSE: the server holds back clients' commands for a while, as Valkey's
pauseActions / blockPostponeClient.

- `WRITE` holds back every command that may change data or replicate: the write
  commands, PUBLISH and SPUBLISH, PFCOUNT, FUNCTION's writers, EVAL/EVALSHA/FCALL unless
  the script or function declares `no-writes`, and EXEC when a queued command is one of
  these. `ALL` holds back every command, CLIENT UNPAUSE included (only the timeout ends it).
- The check comes after every refusal (unknown command, arity, auth, ACL, BUSY) and
  before MULTI queueing, as in Valkey's processCommand: a write sent inside MULTI waits
  too.
- A held-back client is blocked (`b` in CLIENT LIST, counted in `blocked_clients`): its
  request goes back to the head of its parser and it reads nothing more; when the pause
  ends, the held-back clients run again in the order they came.
- Keys do not expire while paused (both modes): a key whose time has passed reads as
  missing but stays until the pause ends (DBSIZE still counts it). Nothing is evicted
  either, and no command is refused for maxmemory meanwhile (fakekey/memory/eviction.py).
- The timeout follows the server clock, as the deadlines of blocked commands do: with a
  frozen clock the pause lasts until the clock is advanced past its end (looked at
  every 100 ms: POLL) or CLIENT UNPAUSE. Valkey uses the wall clock.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from fakekey.codecs.shebang import parse_shebang
from fakekey.core.monitor import MAY_REPLICATE
from fakekey.resp.replies import NO_REPLY

if TYPE_CHECKING:
    from fakekey.core.client import Client
    from fakekey.core.registry import Command
    from fakekey.core.state import ServerState

# How often a pause looks whether the server clock passed its end (seconds).
POLL = 0.1
# who paused (INFO's paused_reason): CLIENT PAUSE, or a FAILOVER until it ends; CLIENT
# UNPAUSE does not end a failover's pause (Valkey's pause purposes)
CLIENT_PAUSE = "client_pause"
FAILOVER_PAUSE = "failover_in_progress"
FOREVER = (1 << 63) - 1  # a failover's end: none (Valkey's LLONG_MAX)
SCRIPT_CALLERS = frozenset({"eval", "evalsha", "fcall"})


class Postponed:
    """The `blocked` marker of a held-back client: CLIENT UNBLOCK does not end it."""

    __slots__ = ()
    active = False
    holds_output = False


POSTPONED = Postponed()


class Pause:
    """A pause in effect (`state.paused` is None otherwise)."""

    def __init__(self, state: ServerState, end: int, everything: bool,
                 reason: str = CLIENT_PAUSE) -> None:
        self.state = state
        self.end = end  # unix ms on the server clock
        self.everything = everything  # ALL; else WRITE
        self.reason = reason  # INFO's paused_reason: who paused (who may end it)
        self.postponed: list[Client] = []  # first come, first run again
        self._timer: asyncio.TimerHandle | None = None

    # --- holding back ------------------------------------------------------------------

    def hold(self, client: Client, cmd: Command, argv: list[bytes]) -> Any:
        """NO_REPLY when `client` must wait for the end of the pause; None to go on."""
        if self.state.clock.now_ms() >= self.end:
            end_pause(self.state)
            return None
        if not (self.everything or may_write(client, cmd, argv)):
            return None
        connection = client.connection
        if connection is None:  # no connection to hold back (an in-process caller)
            return None
        client.parser.put_back(argv)  # read again when the pause ends
        client.blocked = POSTPONED
        client.cmd = cmd  # CLIENT LIST shows the command it waits to run
        self.postponed.append(client)
        return NO_REPLY

    def forget(self, client: Client) -> None:
        """A held-back client left."""
        if client.blocked is POSTPONED:
            self.postponed = [c for c in self.postponed if c is not client]

    def release(self) -> None:
        """Let every held-back client run again (each is checked again on its turn)."""
        clients, self.postponed = self.postponed, []
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            loop = None
        for client in clients:
            if client.blocked is not POSTPONED:
                continue
            client.blocked = None
            connection = client.connection
            if connection is not None and loop is not None:
                loop.call_soon(connection.resume)

    # --- the end -----------------------------------------------------------------------

    def remaining_ms(self) -> int:
        return max(0, self.end - self.state.clock.now_ms())

    def arm(self) -> None:
        """Wake up at the end, or sooner to look again."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        # look at least every POLL: the clock may be frozen, set or advanced meanwhile
        delay = min(POLL, self.remaining_ms() / 1000 + 0.0005)
        self._timer = loop.call_later(delay, self._on_timer)

    def _on_timer(self) -> None:
        self._timer = None
        if self.state.paused is not self:
            return
        if self.state.clock.now_ms() >= self.end:
            end_pause(self.state)
        else:
            self.arm()

    def cancel(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None


def may_write(client: Client, cmd: Command, argv: list[bytes]) -> bool:
    """Valkey's is_may_replicate_command: the write and may-replicate flags, a script's or
    function's declared flags in place of EVAL's and FCALL's, and EXEC's queue."""
    return writes(client, cmd, argv, SCRIPT_CALLERS, MAY_REPLICATE)


def writes(client: Client, cmd: Command, argv: list[bytes], scripts: frozenset[str],
           also: frozenset[str] = frozenset()) -> bool:
    """Whether a call writes by its flags (or is named in `also`): a script's or
    function's declared flags in place of those of the commands in `scripts`, and for
    EXEC, any command of its queue."""
    name = cmd.name
    if name == "exec":
        return any(writes(client, queued, args, scripts, also) for queued, args in client.multi_queue)
    if name in scripts:
        declared = script_flags(client.state, name, argv)
        if declared is not None:
            return "no-writes" not in declared
    return "write" in cmd.flags or name in also


def script_flags(state: ServerState, name: str, argv: list[bytes]) -> frozenset[str] | None:
    """The flags a script's shebang or a function declares; None when it declares none
    (no shebang, an unknown script or function): the command's own flags count then.
    `name`: EVAL, EVALSHA, FCALL or their _RO forms."""
    if name == "eval" or name == "eval_ro":
        try:
            engine, flags, _ = parse_shebang(argv[1])
        except Exception:  # noqa: BLE001 - a bad shebang: EVAL itself answers the error
            return None
        return flags if engine is not None else None
    if name == "evalsha" or name == "evalsha_ro":
        scripts = state.scripts
        script = scripts.lookup(argv[1]) if scripts is not None else None
        return None if script is None or script.compat else script.flags
    functions = state.functions
    function = functions.current.lookup(argv[1]) if functions is not None else None
    return None if function is None else function.flags


# --- starting and ending ---------------------------------------------------------------


def start_pause(state: ServerState, timeout_ms: int, everything: bool,
                reason: str = CLIENT_PAUSE) -> None:
    """CLIENT PAUSE: the new mode replaces the old one; the end is the later of the two
    (Valkey's pauseActions). A failover's pause (`reason`) outlasts a client's."""
    end = min(state.clock.now_ms() + timeout_ms, FOREVER)
    pause = state.paused
    if pause is None:
        pause = state.paused = Pause(state, end, everything, reason)
    else:
        pause.end = max(pause.end, end)
        if reason == FAILOVER_PAUSE:
            pause.reason = reason
        was_everything, pause.everything = pause.everything, everything
        if was_everything and not everything:
            pause.release()  # less held back now: the held-back clients look again
    if state.clock.now_ms() >= pause.end:  # CLIENT PAUSE 0: over at once
        end_pause(state)
        return
    pause.arm()


def end_pause(state: ServerState, reason: str = CLIENT_PAUSE) -> None:
    """CLIENT UNPAUSE or the timeout: everyone held back runs again, keys expire again.
    A failover's pause ends only with the failover (`reason`)."""
    pause = state.paused
    if pause is None or (pause.reason == FAILOVER_PAUSE and reason != FAILOVER_PAUSE):
        return
    state.paused = None
    pause.cancel()
    pause.release()


def pause_info(state: ServerState) -> tuple[str, str, int]:
    """INFO clients' paused_reason, paused_actions, paused_timeout_milliseconds."""
    pause = state.paused
    if pause is None or pause.remaining_ms() <= 0:
        return "none", "none", 0
    return pause.reason, "all" if pause.everything else "write", pause.remaining_ms()


def postponed_count(state: ServerState) -> int:
    return 0 if state.paused is None else len(state.paused.postponed)
