"""The modules mypyc compiles (setup.py builds them; HACKING.md "Compiled modules"), and the
guard that picks, at import, between them and their Python source.

The compiled modules are the same typed source as the .py files beside them. They run when
they were built from the source that is there now; otherwise (a module edited since the
build) fakekey runs as pure Python, with a warning, rather than run code that is not the
source. FAKEKEY_PURE=1 asks for pure Python. This module imports only the standard library:
setup.py reads MODULES from it before fakekey can be imported.
"""

from __future__ import annotations

import hashlib
import importlib.machinery
import os
import sys
import warnings
from pathlib import Path

# The hot path every command crosses, and the families the benchmarks drive hardest. A
# module here must pass mypy (mypyc trusts the types), keep a fixed set of attributes on
# its classes, and not be monkeypatched by tests.
MODULES = (
    "fakekey.resp.parser",
    "fakekey.resp.splitargs",
    "fakekey.resp.encoder",
    "fakekey.net.server",
    "fakekey.core.state",
    "fakekey.core.client",
    "fakekey.core.keyspace",
    "fakekey.core.clock",
    "fakekey.core.blocking",
    "fakekey.core.dirty",
    "fakekey.core.transactions",
    "fakekey.core.field_expiry",
    "fakekey.core.sampled",
    "fakekey.core.table",
    "fakekey.core.access",
    "fakekey.core.expiry",
    "fakekey.codecs.shebang",
    "fakekey.codecs.numbers",
    "fakekey.config.settings",
    "fakekey.core.registry",
    "fakekey.commands.strings",
    "fakekey.commands.lists",
    "fakekey.commands.hashes",
    "fakekey.types.hash",
    "fakekey.commands.keys",
    "fakekey.commands.zsets",
    "fakekey.types.zset",
    "fakekey.types.stream",
    "fakekey.commands.streams",
    "fakekey.commands.scripting",
    "fakekey.commands.functions",
    "fakekey.commands.connection",
    "fakekey.commands.transactions",
    "fakekey.commands.args",
    "fakekey.types.set",
    "fakekey.types.list",
    "fakekey.memory.lfu",
    "fakekey.memory.lazyfree",
    "fakekey.scripting.bridge",
    "fakekey.scripting.scripts",
    "fakekey.scripting.libraries",  # its classes subclass bridge's
    "fakekey.modules.emq.layout",
    "fakekey.modules.emq.host",
    "fakekey.modules.emq.jobs",
    "fakekey.modules.emq.scheduling",
    "fakekey.modules.emq.recovery",
    "fakekey.modules.emq.controls",
    "fakekey.modules.emq.lane_host",
    "fakekey.modules.emq.lanes",
    "fakekey.modules.emq.lane_controls",
)

PACKAGE_DIR = Path(__file__).resolve().parent
# written by setup.py when it compiles: one "module sha256-of-its-source" line per module
MANIFEST = PACKAGE_DIR / "compiled-sources.txt"
PURE_ENV = "FAKEKEY_PURE"


def source_path(module: str) -> Path:
    return PACKAGE_DIR.parent.joinpath(*module.split(".")).with_suffix(".py")


def source_digest(module: str) -> str:
    return hashlib.sha256(source_path(module).read_bytes()).hexdigest()


def manifest_text() -> str:
    return "".join(f"{module} {source_digest(module)}\n" for module in MODULES)


def built_extension(module: str) -> Path | None:
    """The compiled module's file beside its source, if there is one."""
    source = source_path(module)
    for suffix in importlib.machinery.EXTENSION_SUFFIXES:
        candidate = source.with_suffix(suffix)
        if candidate.exists():
            return candidate
    return None


def recorded_digests() -> dict[str, str]:
    try:
        return dict(line.split() for line in MANIFEST.read_text().splitlines() if line.strip())
    except OSError:
        return {}


def stale_modules() -> list[str]:
    """The modules not compiled from their current source: never built, or changed since.
    One is enough to run pure Python: compiled and interpreted halves of the set may not
    fit (a class compiled in one, subclassed in the other)."""
    recorded = recorded_digests()
    return [m for m in MODULES
            if built_extension(m) is None or recorded.get(m) != source_digest(m)]


def build_due() -> bool:
    """The Makefile's `build`: compile again."""
    return bool(stale_modules())


class _SourceFirst:
    """A finder that loads fakekey's modules from their .py source, never a compiled file."""

    @staticmethod
    def find_spec(name: str, path: list[str] | None, target: object = None) -> object:
        if not name.startswith("fakekey.") or not path:
            return None
        details = (importlib.machinery.SourceFileLoader, importlib.machinery.SOURCE_SUFFIXES)
        for entry in path:
            spec = importlib.machinery.FileFinder(entry, details).find_spec(name)
            if spec is not None:
                return spec
        return None


def choose() -> bool:
    """Run once as fakekey is imported: True when the compiled modules will load."""
    if not any(built_extension(m) is not None for m in MODULES):
        return False  # a pure build, or a source tree never built
    if os.environ.get(PURE_ENV, "") not in ("", "0"):
        sys.meta_path.insert(0, _SourceFirst)  # type: ignore[arg-type]
        return False
    stale = stale_modules()
    if stale:
        warnings.warn(
            f"fakekey: {', '.join(stale)} not compiled from the current source; running pure Python "
            "(`make build` compiles again)", RuntimeWarning, stacklevel=3)
        sys.meta_path.insert(0, _SourceFirst)  # type: ignore[arg-type]
        return False
    return True

