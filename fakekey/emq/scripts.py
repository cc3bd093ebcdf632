"""The EMQ wire-4 scripts, loaded from the package data (`fakekey/emq/scripts/*.lua`).

A script whose header carries the line `--@prelude` is sent with the shared prelude
(`_prelude.lua`: integer checks, the kind door, the lane helpers) prepended; `@genqueue` is
sent exactly as the seed quotes it. `Script.source` is the text a server receives and
`Script.sha` its SHA1, the digest EVALSHA names.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from typing import Any

from fakekey.emq.connections import on_node_of

PRELUDE_MARK = "--@prelude"
_PRELUDE_FILE = "_prelude.lua"


@dataclass(frozen=True)
class Script:
    """One script: its name (the file's stem), the text sent and that text's SHA1."""

    name: str
    source: str
    sha: str


def _script_files() -> dict[str, str]:
    folder = resources.files("fakekey.emq").joinpath("scripts")
    return {
        entry.name: entry.read_text(encoding="utf-8")
        for entry in folder.iterdir()
        if entry.name.endswith(".lua")
    }


def _assemble(text: str, prelude: str) -> str:
    if any(line.strip() == PRELUDE_MARK for line in text.splitlines()):
        return prelude + "\n" + text
    return text


def load_scripts() -> dict[str, Script]:
    """Every script of the package by name, its prelude prepended where it asks for it."""
    files = _script_files()
    prelude = files.pop(_PRELUDE_FILE)
    scripts = {}
    for filename, text in sorted(files.items()):
        name = filename.removesuffix(".lua")
        source = _assemble(text, prelude)
        sha = hashlib.sha1(source.encode("utf-8")).hexdigest()
        scripts[name] = Script(name, source, sha)
    return scripts


SCRIPTS: dict[str, Script] = load_scripts()


def _is_noscript(error: Exception) -> bool:
    # redis-py turns the NOSCRIPT reply into NoScriptError and drops the code from the text
    return type(error).__name__ == "NoScriptError" or str(error).startswith("NOSCRIPT")


def run_script(client: Any, name: str, keys: Sequence[str | bytes], args: list[Any]) -> Any:
    """Runs script `name` with EVALSHA on a redis-py style client (`execute_command`),
    loading it with SCRIPT LOAD and retrying once when the server answers NOSCRIPT. On a
    cluster the script is loaded on the node of its keys (the one that answered NOSCRIPT:
    a script cache is per node, and a replica promoted since has none), not on every
    primary, which would fail while any of them is down."""
    script = SCRIPTS[name]
    argv = [script.sha, len(keys), *keys, *args]
    try:
        return client.execute_command("EVALSHA", *argv)
    except Exception as error:  # redis-py's NoScriptError; the client's own error types vary
        if not _is_noscript(error):
            raise
    on_node_of(client, keys[0], "SCRIPT", "LOAD", script.source)
    return client.execute_command("EVALSHA", *argv)
