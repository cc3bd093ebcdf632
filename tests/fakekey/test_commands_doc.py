"""docs/commands.md is generated from the registry; it, and the Valkey command list it is
measured against, must stay true."""

from __future__ import annotations

import re
import socket
import subprocess
import time

import pytest

from fakekey import VALKEY_VERSION
from fakekey.testing.raw import RawClient
from fakekey.testing.targets import find_valkey_binary
from tools import gen_commands_md as docs


def test_commands_doc_is_up_to_date() -> None:
    current = docs.DOC_PATH.read_text(encoding="utf-8") if docs.DOC_PATH.exists() else ""
    assert current == docs.render(), (
        f"docs/commands.md is out of date with the command registry: run `{docs.REGENERATE}` "
        "and commit the result")


def test_check_mode_agrees() -> None:
    assert docs.main(["--check"]) == 0


def test_fakekey_invents_no_builtin_command() -> None:
    """Beyond Valkey's list there are only FAKEKEY.* and the emulated module's verbs."""
    known = {vc.name for vc in docs.valkey_commands()}
    extras = {name for name, cmd in docs.fakekey_commands().items()
              if name not in known and not cmd.module and not name.startswith("fakekey.")}
    assert extras == set()


def test_every_valkey_command_has_a_known_group() -> None:
    groups = {vc.group for vc in docs.valkey_commands()}
    assert groups <= set(docs.GROUP_TITLES)
    assert "## Cluster" in docs.render()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_the_data_file_is_the_real_servers_command_list() -> None:
    binary = find_valkey_binary()
    if binary is None:
        pytest.skip("no valkey-server binary")
    version = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=30).stdout
    if f" v={VALKEY_VERSION} " not in version:
        pytest.skip(f"the data file is Valkey {VALKEY_VERSION}'s; this binary is {version.strip()}")
    port = _free_port()
    proc = subprocess.Popen([binary, "--port", str(port), "--save", "", "--appendonly", "no",
                             "--loglevel", "warning"], stdout=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                client = RawClient("127.0.0.1", port)
                break
            except OSError:
                assert time.monotonic() < deadline, "valkey-server did not start"
                time.sleep(0.05)
        with client:
            kind, names = client.call("COMMAND", "LIST")
    finally:
        proc.terminate()
        proc.wait(10)
    assert kind == "*"
    real = sorted(value.decode() for _, value in names)
    assert real == sorted(vc.name for vc in docs.valkey_commands())
    assert all(re.fullmatch(r"[a-z0-9_|.-]+", name) for name in real)
