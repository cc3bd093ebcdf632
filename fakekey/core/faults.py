"""Faults on demand (FAKEKEY.FAULT, docs/faults.md): the rules a test sets, which request each
one hits, and the seeded draws of PROBABILITY.

A rule names an action (ERROR, DELAY, DROP, DROP-AFTER, PARTIAL, HANG, NOREPLY) and the
requests it hits: a glob over the command name, a client, a database, the first matches to
skip (AFTER), how many times it fires (TIMES), a probability. What an action does to a
connection is the network side's (net/faults.py): it asks `Faults.hit` about each request
of a connection, before running it. Commands run inside EXEC or a script are never asked.

Cost: `ServerState.fault_watch` is None while no rule and no LATENCY is set; a connection
tests only that. Everything here belongs to one server (`ServerState.faults`), and nothing
is persisted.
"""

from __future__ import annotations

import math
import random
import re
from typing import TYPE_CHECKING, Any, Protocol

from fakekey.codecs.glob import compile_glob
from fakekey.codecs.numbers import parse_int
from fakekey.resp.replies import ReplyError

if TYPE_CHECKING:
    from fakekey.core.client import Client
    from fakekey.core.state import ServerState

DEFAULT_SEED = 0  # PROBABILITY draws the same numbers in every run until SEED changes it
MAX_MS = 86_400_000  # a day: the longest DELAY, LATENCY or NETWORK DOWN
ACTIONS = ("ERROR", "DELAY", "DROP", "DROP-AFTER", "PARTIAL", "HANG", "NOREPLY")
VALUED = frozenset({"ERROR", "DELAY", "PARTIAL"})  # ERROR's text, DELAY's ms, PARTIAL's bytes
OPTIONS = ("MATCH", "CLIENT", "NAME", "USER", "DB", "AFTER", "TIMES", "PROBABILITY")
NAME_FORM = re.compile(rb"[A-Za-z0-9_.\-]{1,64}")  # a rule's name is an INFO field's name too
SELF = b"fakekey.fault"  # never hit: a rule must not lock out the way to remove it


class Held(Protocol):
    """A request a HANG rule holds (net/faults.py): `release` lets it run."""

    def release(self) -> None: ...


class Network(Protocol):
    """The server's listeners, as NETWORK DOWN and UP move them (net/faults.py)."""

    is_down: bool

    def down(self, ms: int) -> None: ...

    def up(self) -> bool: ...


class Rule:
    """One FAKEKEY.FAULT ADD rule and its counts (`seen`: requests it matched, `fired`)."""

    def __init__(self, name: str, action: str, value: Any) -> None:
        self.name = name
        self.action = action
        self.value = value  # ERROR: the error text; DELAY: ms; PARTIAL: bytes; else None
        self.pattern = b"*"
        self.client_id: int | None = None
        self.client_name: bytes | None = None
        self.user: str | None = None
        self.db: int | None = None
        self.after = 0
        self.times: int | None = None
        self.probability: float | None = None
        self.seen = 0
        self.fired = 0

    def matches(self, client: Client, names: tuple[bytes, bytes], controller: bool) -> bool:
        """Whether the request is one this rule is about (before AFTER and PROBABILITY)."""
        if self.client_id is not None:
            if client.id != self.client_id:
                return False
        elif controller:  # a connection that sent FAKEKEY.FAULT is hit only when named
            return False
        if self.client_name is not None and client.name != self.client_name:
            return False
        if self.user is not None and client.user != self.user:
            return False
        if self.db is not None and client.db.index != self.db:
            return False
        matcher = compile_glob(self.pattern)
        return matcher(names[0]) or matcher(names[1])

    def fires(self, draw: random.Random) -> bool:
        """Count a match; whether the rule acts on it (past AFTER, and the draw says so)."""
        self.seen += 1
        if self.seen <= self.after:
            return False
        if self.probability is not None and draw.random() >= self.probability:
            return False
        self.fired += 1
        return True

    def report(self) -> dict[bytes, Any]:
        """FAKEKEY.FAULT LIST's entry."""
        return {
            b"name": self.name.encode(), b"action": self.action.encode(), b"value": self.value,
            b"match": self.pattern, b"client-id": self.client_id, b"client-name": self.client_name,
            b"user": None if self.user is None else self.user.encode(), b"db": self.db,
            b"after": self.after, b"times": self.times,
            b"probability": None if self.probability is None else repr(self.probability).encode(),
            b"seen": self.seen, b"fired": self.fired,
        }


class Hit:
    """What a connection does with one request: the rule's action (or None: only LATENCY
    applies), its value, and the ms the reply waits."""

    def __init__(self, rule: Rule | None, delay_ms: int) -> None:
        self.rule = rule
        self.action = "DELAY" if rule is None else rule.action
        self.value: Any = None if rule is None else rule.value
        self.delay_ms = delay_ms


class Faults:
    """One server's fault rules, LATENCY, the PROBABILITY generator and the network switch."""

    def __init__(self, state: ServerState) -> None:
        self.state = state
        self.rules: dict[str, Rule] = {}  # in the order added: the first that fires acts
        self.latency_ms = 0
        self.seed = DEFAULT_SEED
        # PROBABILITY's generator, made on first use: seeding one costs more than the
        # rest of a new server's faults together (bench/instances.py)
        self._draw: random.Random | None = None
        self.controllers: set[int] = set()  # ids of the connections that sent FAKEKEY.FAULT
        self.held: dict[str, list[Held]] = {}  # HANG's requests, by rule name, until DEL / RESET
        self.network: Network | None = None  # the listeners' switch, set by the Server (net/)

    # --- the table ---------------------------------------------------------------------------

    def add(self, rule: Rule) -> None:
        if rule.name in self.rules:
            raise ReplyError(f"ERR a fault rule named '{rule.name}' exists already")
        self.rules[rule.name] = rule
        self._arm()

    def delete(self, name: str) -> bool:
        """Remove a rule and let the requests it holds run; whether there was either."""
        rule = self.rules.pop(name, None)
        held = self.held.pop(name, [])
        for request in held:
            request.release()
        self._arm()
        return rule is not None or bool(held)

    def reset(self) -> None:
        """Every rule gone, no latency, the network up, the generator back to its default seed."""
        for name in list(self.rules) + list(self.held):
            self.delete(name)
        self.latency_ms = 0
        self.set_seed(DEFAULT_SEED)
        if self.network is not None and self.network.is_down:
            self.network.up()
        self._arm()

    def set_seed(self, seed: int) -> None:
        self.seed = seed
        self._draw = None  # the next draw starts from the new seed

    @property
    def draw(self) -> random.Random:
        if self._draw is None:
            self._draw = random.Random(self.seed)
        return self._draw

    def set_latency(self, ms: int) -> None:
        self.latency_ms = ms
        self._arm()

    def hold(self, name: str, request: Held) -> None:
        self.held.setdefault(name, []).append(request)

    def note_controller(self, client: Client) -> None:
        """The connection sent FAKEKEY.FAULT: rules leave it alone unless they name it.
        The ids of connections gone are forgotten here, so the set stays small."""
        self.controllers = {i for i in self.controllers if i in self.state.clients}
        self.controllers.add(client.id)

    def _arm(self) -> None:
        self.state.fault_watch = self if self.rules or self.latency_ms else None

    # --- a request ---------------------------------------------------------------------------

    def hit(self, client: Client, argv: list[bytes]) -> Hit | None:
        """What the first firing rule (or LATENCY) does to this request of `client`; None:
        nothing. A rule that used up its TIMES is removed (the requests it holds stay held
        until DEL or RESET)."""
        names = self._names(argv)
        if names[0] == SELF:
            return None
        controller = client.id in self.controllers
        for rule in list(self.rules.values()):
            if rule.matches(client, names, controller) and rule.fires(self.draw):
                if rule.times is not None and rule.fired >= rule.times:
                    del self.rules[rule.name]
                    self._arm()
                value = rule.value if rule.action == "DELAY" else 0
                return Hit(rule, value + (0 if controller else self.latency_ms))
        if self.latency_ms and not controller:
            return Hit(None, self.latency_ms)
        return None

    def _names(self, argv: list[bytes]) -> tuple[bytes, bytes]:
        """The command's name and its container's (`client|list`, `client`), lower case."""
        cmd = self.state.lookup(argv[0])
        if cmd is None:
            name = argv[0].lower()
            return name, name
        if cmd.subcommands and len(argv) >= 2:
            sub = cmd.subcommands.get(argv[1].lower())
            if sub is not None:
                return sub.name.encode(), cmd.name.encode()
        return cmd.name.encode(), cmd.name.encode()

    # --- reports -----------------------------------------------------------------------------

    def info_lines(self) -> list[str]:
        """INFO's faults section: the settings, then one line per rule in force."""
        network = self.network
        lines = [
            f"fault_rules:{len(self.rules)}",
            f"fault_latency_ms:{self.latency_ms}",
            f"fault_network:{'down' if network is not None and network.is_down else 'up'}",
            f"fault_seed:{self.seed}",
            f"fault_held_requests:{sum(map(len, self.held.values()))}",
        ]
        for rule in self.rules.values():
            pattern = rule.pattern.decode("utf-8", "replace").replace(",", "\\,")
            lines.append(f"fault_rule_{rule.name}:action={rule.action.lower()},match={pattern},"
                         f"seen={rule.seen},fired={rule.fired},times={rule.times or 0}")
        return lines

    def in_force(self) -> bool:
        network = self.network
        return bool(self.rules or self.latency_ms or self.held) or (
            network is not None and network.is_down)


# --- parsing FAKEKEY.FAULT ADD ----------------------------------------------------------------


def parse_rule(state: ServerState, args: list[bytes]) -> Rule:
    """`name ACTION action [value] [MATCH pattern] [CLIENT id | NAME n | USER u] [DB n]
    [AFTER n] [TIMES n] [PROBABILITY p]`, options in any order. Raises ReplyError naming
    the bad argument; nothing is added then."""
    if not args or not NAME_FORM.fullmatch(args[0]):
        shown = args[0].decode("utf-8", "replace") if args else ""
        raise ReplyError(f"ERR bad fault rule name '{shown}': 1 to 64 letters, digits, '_', '-' or '.'")
    name = args[0].decode()
    options: dict[str, Any] = {}
    i = 1
    while i < len(args):
        option = args[i].decode("utf-8", "replace").upper()
        if option == "ACTION":
            action, value, i = _parse_action(args, i + 1)
            options["ACTION"] = (action, value)
            continue
        if option not in OPTIONS:
            raise ReplyError(f"ERR unknown option '{args[i].decode('utf-8', 'replace')}' for "
                             "FAKEKEY.FAULT ADD (ACTION, MATCH, CLIENT, NAME, USER, DB, AFTER, "
                             "TIMES, PROBABILITY)")
        if i + 1 >= len(args):
            raise ReplyError(f"ERR {option} needs a value")
        options[option] = _parse_option(state, option, args[i + 1])
        i += 2
    if "ACTION" not in options:
        raise ReplyError("ERR FAKEKEY.FAULT ADD needs ACTION (ERROR, DELAY, DROP, DROP-AFTER, "
                         "PARTIAL, HANG, NOREPLY)")
    if len({"CLIENT", "NAME", "USER"} & options.keys()) > 1:
        raise ReplyError("ERR CLIENT, NAME and USER are exclusive: give one of them")
    rule = Rule(name, *options["ACTION"])
    rule.pattern = options.get("MATCH", rule.pattern)
    rule.client_id = options.get("CLIENT")
    rule.client_name = options.get("NAME")
    rule.user = options.get("USER")
    rule.db = options.get("DB")
    rule.after = options.get("AFTER", 0)
    rule.times = options.get("TIMES")
    rule.probability = options.get("PROBABILITY")
    return rule


def _parse_action(args: list[bytes], i: int) -> tuple[str, Any, int]:
    """ACTION's name and value at args[i:]; and the index after them."""
    if i >= len(args):
        raise ReplyError("ERR ACTION needs an action (ERROR, DELAY, DROP, DROP-AFTER, PARTIAL, "
                         "HANG, NOREPLY)")
    action = args[i].decode("utf-8", "replace").upper()
    if action not in ACTIONS:
        raise ReplyError(f"ERR unknown fault action '{args[i].decode('utf-8', 'replace')}' "
                         "(ERROR, DELAY, DROP, DROP-AFTER, PARTIAL, HANG, NOREPLY)")
    if action not in VALUED:
        return action, None, i + 1
    if i + 1 >= len(args):
        raise ReplyError(f"ERR {action} needs a value")
    raw = args[i + 1]
    if action == "ERROR":
        return action, _error_text(raw), i + 2
    limit = MAX_MS if action == "DELAY" else 1 << 31
    return action, bounded_int(raw, action, 0, limit), i + 2


def _error_text(raw: bytes) -> bytes:
    if not raw.strip() or b"\r" in raw or b"\n" in raw:
        raise ReplyError("ERR ERROR needs an error text on one line (e.g. 'LOADING Valkey is "
                         "loading the dataset in memory')")
    return raw


def bounded_int(raw: bytes, what: str, low: int, high: int) -> int:
    """An integer argument in [low, high], or an error naming it."""
    try:
        value = parse_int(raw)
    except ReplyError:
        value = low - 1
    if not low <= value <= high:
        shown = raw.decode("utf-8", "replace")
        raise ReplyError(f"ERR {what} must be an integer from {low} to {high}, not '{shown}'")
    return value


def _client_id(state: ServerState, raw: bytes) -> int:
    client_id = bounded_int(raw, "CLIENT", 1, 1 << 62)
    if client_id not in state.clients:
        raise ReplyError(f"ERR CLIENT {client_id}: no such client")
    return client_id


def _probability(raw: bytes) -> float:
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not 0 <= value <= 1:  # NaN fails too
        raise ReplyError(f"ERR PROBABILITY must be a number from 0 to 1, not "
                         f"'{raw.decode('utf-8', 'replace')}'")
    return value


def _parse_option(state: ServerState, option: str, raw: bytes) -> Any:
    if option == "MATCH":
        return raw.lower()
    if option == "CLIENT":
        return _client_id(state, raw)
    if option == "NAME":
        return raw
    if option == "USER":
        return raw.decode("utf-8", "replace")
    if option == "DB":
        return bounded_int(raw, option, 0, state.config["databases"] - 1)
    if option == "PROBABILITY":
        return _probability(raw)
    return bounded_int(raw, option, 0 if option == "AFTER" else 1, 1 << 62)  # AFTER, TIMES
