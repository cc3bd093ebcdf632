"""The recipes in examples/ run as their README says: a Node test suite (ioredis, `node
--test`) and a shell script (redis-cli), each starting fakekey-server itself."""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
NODE_DIR = EXAMPLES / "node"
INSTALL_STAMP = NODE_DIR / "node_modules" / ".fakekey-installed"
FAKEKEY_SERVER = Path(sys.executable).with_name("fakekey-server")


def require_program(name: str, why: str) -> str:
    path = shutil.which(name)
    if path is None:
        pytest.fail(f"{name} is not installed: {why}")
    return path


def recipe_env() -> dict[str, str]:
    assert FAKEKEY_SERVER.exists(), f"{FAKEKEY_SERVER} missing: install the package (make venv)"
    return {**os.environ, "FAKEKEY_SERVER": str(FAKEKEY_SERVER)}


def node_manifest_digest() -> str:
    digest = hashlib.sha256()
    for name in ("package.json", "package-lock.json"):
        path = NODE_DIR / name
        digest.update(path.read_bytes() if path.exists() else b"")
    return digest.hexdigest()


def npm_install_once(npm: str) -> None:
    """`npm install` into examples/node/node_modules, skipped while the stamp says the
    installed tree matches package.json and package-lock.json."""
    if INSTALL_STAMP.exists() and INSTALL_STAMP.read_text() == node_manifest_digest():
        return
    done = subprocess.run([npm, "install", "--no-audit", "--no-fund"], cwd=NODE_DIR,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, f"npm install failed:\n{done.stdout}\n{done.stderr}"
    INSTALL_STAMP.write_text(node_manifest_digest())


def test_node_recipe_with_ioredis() -> None:
    node = require_program("node", "the Node recipe (examples/node) needs Node.js >= 20 and npm")
    npm = require_program("npm", "the Node recipe (examples/node) needs npm to install ioredis")
    npm_install_once(npm)
    done = subprocess.run([node, "--test"], cwd=NODE_DIR, env=recipe_env(),
                          capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, f"node --test failed:\n{done.stdout}\n{done.stderr}"
    # the summary's counters, as the TAP ("# pass 4") and spec ("ℹ pass 4") reporters print them
    assert re.search(r"^\S* ?pass 4$", done.stdout, re.M), done.stdout
    assert re.search(r"^\S* ?fail 0$", done.stdout, re.M), done.stdout


def test_shell_recipe_with_redis_cli() -> None:
    if shutil.which("redis-cli") is None:
        if os.environ.get("CI") == "true":
            pytest.fail("redis-cli is not installed (Debian's redis-tools): the shell recipe needs it")
        pytest.skip("redis-cli is not installed (Debian's redis-tools)")
    done = subprocess.run(["sh", str(EXAMPLES / "shell" / "demo.sh")], env=recipe_env(),
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, f"demo.sh failed:\n{done.stdout}\n{done.stderr}"
    first, *rest = done.stdout.splitlines()
    assert re.fullmatch(r"fakekey-server listens on port \d+", first)
    assert rest == ["OK", "hello", "3", "a", "b", "c", "5", "OK", "OK", "OK", "0", "stopped"]
