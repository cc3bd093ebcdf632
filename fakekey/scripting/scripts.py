"""EVAL's engine of one server (`state.scripts`, made on first use): its Lua state and its
script cache, by SHA1, with the LRU that evicts scripts EVAL added. Running a script is
the bridge's job (fakekey/scripting/bridge.py), shared with FCALL; the commands are in
fakekey/commands/scripting.py."""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from fakekey._version import REDIS_VERSION
from fakekey.codecs.shebang import NO_WRITES, parse_shebang
from fakekey.resp.replies import ReplyError
from fakekey.scripting.bridge import CommandBridge, runner_of
from fakekey.scripting.runtime import LuaSandbox

if TYPE_CHECKING:
    from fakekey.core.state import ServerState

EVAL_CLIENT_ID = 1  # Valkey's EVAL engine client; the FUNCTION engine's is 2
EVAL_LRU_LENGTH = 500  # scripts EVAL added are evicted past this many (SCRIPT LOAD's never)


@dataclass
class Script:
    body: bytes
    fn: Any  # the compiled Lua function
    flags: frozenset[str]
    compat: bool  # no shebang: Valkey's backwards-compatible mode, flags ignored
    straight: bool = False  # it never loops (runtime.straight_line): it runs inline

    def __post_init__(self) -> None:
        self.no_writes = not self.compat and NO_WRITES in self.flags
        # *_RO refuses scripts with a shebang that does not declare no-writes
        self.refused_read_only = not self.compat and not self.no_writes
        self.allow_oom = not self.compat and "allow-oom" in self.flags


def add_insecure_api(sandbox: LuaSandbox) -> None:
    """lua-enable-insecure-api: EVAL's scripts get getfenv, setfenv and newproxy (Valkey
    leaves them out of the sandbox otherwise; FUNCTION's libraries never get them)."""
    real = sandbox.lua.globals()
    for name in (b"getfenv", b"setfenv", b"newproxy"):
        sandbox.globals[name] = real[name]


class EvalScripts:
    """The EVAL engine of one server: its Lua state and its script cache."""

    def __init__(self, state: ServerState) -> None:
        self.state = state
        self.runner = runner_of(state)
        self.bridge = CommandBridge(state, EVAL_CLIENT_ID, self.runner)
        self.cache: dict[bytes, Script] = {}
        self.lru: OrderedDict[bytes, None] = OrderedDict()
        self._sandbox: LuaSandbox | None = None
        self.insecure_api = state.config["lua-enable-insecure-api"]

    def insecure_api_set(self, on: bool) -> None:
        """CONFIG SET lua-enable-insecure-api: a change resets the engine, as Valkey's."""
        if on != self.insecure_api:
            self.insecure_api = on
            self.flush()

    @property
    def sandbox(self) -> LuaSandbox:
        if self._sandbox is None:
            state = self.state
            self._sandbox = LuaSandbox(self.bridge, "eval", redis_version=REDIS_VERSION,
                                       valkey_version=state.valkey_version,
                                       prepare=add_insecure_api if self.insecure_api else None)
            self.bridge.sandbox = self._sandbox
        return self._sandbox

    def flush(self) -> None:
        """SCRIPT FLUSH: forget every script and start a fresh Lua state."""
        self.cache.clear()
        self.lru.clear()
        self._sandbox = None
        self.bridge.sandbox = None

    def lookup(self, sha: bytes) -> Script | None:
        return self.cache.get(sha.lower())

    def load(self, body: bytes, *, from_eval: bool, sha: bytes | None = None) -> tuple[bytes, Script]:
        """Compile and cache a script (SCRIPT LOAD, or EVAL of a new body). A script EVAL
        added that SCRIPT LOAD loads again is kept from eviction from then on."""
        if sha is None:
            sha = sha1hex(body)
        known = self.cache.get(sha)
        if known is not None:
            if not from_eval:
                self.lru.pop(sha, None)
            return sha, known
        script = self._compile(body)
        if from_eval:
            self._make_room()
            self.lru[sha] = None
        self.cache[sha] = script
        return sha, script

    def _make_room(self) -> None:
        while len(self.lru) >= EVAL_LRU_LENGTH:
            oldest, _ = self.lru.popitem(last=False)
            self.cache.pop(oldest, None)
            self.state.stats["evicted_scripts"] += 1

    def used(self, sha: bytes) -> None:
        if sha in self.lru:
            self.lru.move_to_end(sha)

    def _compile(self, body: bytes) -> Script:
        engine, flags, code_at = parse_shebang(body)
        if engine is not None and engine.lower() != b"lua":
            raise ReplyError(b"ERR Could not find scripting engine '" + engine + b"'")
        fn, err = self.sandbox.compile(body[code_at:], b"@user_script")
        if fn is None:
            raise ReplyError(b"ERR Error compiling script (new function): " + (err or b""))
        return Script(body, fn, flags, compat=engine is None, straight=self.sandbox.runs_straight(fn))


def sha1hex(data: bytes) -> bytes:
    return hashlib.sha1(data).hexdigest().encode()


def scripts_of(state: ServerState) -> EvalScripts:
    """The server's EVAL engine (made on first use)."""
    scripts = state.scripts
    if scripts is None:
        scripts = state.scripts = EvalScripts(state)
    return scripts
