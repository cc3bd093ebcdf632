"""`pip install fakekey` gives a working `fakekey-server` outside this repository: the
sdist carries every file the package reads at run time, the wheel built from it too,
and a fresh venv with that wheel serves Lua (its bundled libraries) and the EMQ module.

Slow (a build and an install): deselect locally with `-m "not packaging"`; `make test`
runs it."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

from fakekey.compiled import MANIFEST
from fakekey.testing.raw import RawClient

pytestmark = pytest.mark.packaging

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "fakekey"


def runtime_data_files() -> set[str]:
    """The package's files that are not Python source (Lua libraries, EMQ scripts, data),
    as paths inside the package: each must ship. What a build made in the checkout (the
    compiled modules and their manifest) is not source: a build makes its own."""
    return {
        path.relative_to(ROOT).as_posix()
        for path in PACKAGE.rglob("*")
        if path.is_file() and path.suffix not in (".py", ".pyc", ".so", ".pyd")
        and "__pycache__" not in path.parts and path.name != MANIFEST.name
    }


def ready_port(proc: subprocess.Popen[str]) -> int:
    assert proc.stdout is not None
    for line in proc.stdout:
        if line.startswith("fakekey ready port="):
            return int(line.split()[2].removeprefix("port="))
    raise AssertionError(f"no ready line; exit status {proc.wait(10)}: {proc.stderr and proc.stderr.read()}")


def clean_env() -> dict[str, str]:
    """This environment without what would let a subprocess see the checkout."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    env["PYTHONNOUSERSITE"] = "1"
    return env


def run(*argv: str | Path, cwd: Path, timeout: float = 300, **env: str) -> str:
    done = subprocess.run([str(a) for a in argv], cwd=cwd, env={**clean_env(), **env}, capture_output=True,
                          text=True, timeout=timeout)
    assert done.returncode == 0, f"{' '.join(map(str, argv))} failed:\n{done.stdout}\n{done.stderr}"
    return done.stdout


@pytest.fixture(scope="module")
def dists(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The sdist, and the wheel `python -m build` makes from that sdist."""
    if importlib.util.find_spec("build") is None:
        missing = "the `build` package is missing: pip install -e '.[test]' (the test extra has it)"
        if os.environ.get("CI") == "true":
            pytest.fail(missing)
        pytest.skip(missing)
    out = tmp_path_factory.mktemp("dist")
    # what is tested is what ships and that the compiled modules load, not their speed:
    # unoptimized C compiles in half the time (setup.py's FAKEKEY_OPT_LEVEL)
    run(sys.executable, "-m", "build", "--no-isolation", "--outdir", out, ROOT, cwd=ROOT,
        FAKEKEY_OPT_LEVEL="0")
    (sdist,) = out.glob("fakekey-*.tar.gz")
    (wheel,) = out.glob("fakekey-*.whl")
    return sdist, wheel


@pytest.fixture(scope="module")
def venv(dists: tuple[Path, Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv with the wheel installed (its dependencies from the index or pip's cache)."""
    home = tmp_path_factory.mktemp("venv")
    run(sys.executable, "-m", "venv", "--without-pip", home, cwd=home)
    run(sys.executable, "-m", "pip", "--python", home / "bin" / "python", "install", "-q",
        "--disable-pip-version-check", dists[1], cwd=home)
    return home


def test_sdist_and_wheel_carry_every_runtime_file(dists: tuple[Path, Path]) -> None:
    sdist, wheel = dists
    with tarfile.open(sdist) as tar:
        in_sdist = {name.split("/", 1)[1] for name in tar.getnames() if "/" in name}
    with zipfile.ZipFile(wheel) as whl:
        in_wheel = set(whl.namelist())
    wanted = runtime_data_files()
    assert {"fakekey/scripting/libs/cjson.lua", "fakekey/emq/scripts/enqueue.lua"} <= wanted
    assert wanted - in_sdist == set()
    assert wanted - in_wheel == set()


def test_installed_server_runs_lua_and_emq_outside_the_checkout(venv: Path, tmp_path: Path) -> None:
    python = venv / "bin" / "python"
    location = run(python, "-c", "import fakekey; print(fakekey.__file__)", cwd=tmp_path)
    assert Path(location.strip()).is_relative_to(venv)
    # pip built the hot modules with mypyc (setup.py), and they load
    assert run(python, "-c", "import fakekey; print(fakekey.COMPILED)", cwd=tmp_path).strip() == "True"
    enqueue = run(python, "-c", "import sys; from fakekey.emq.scripts import SCRIPTS; "
                  "sys.stdout.write(SCRIPTS['enqueue'].source)", cwd=tmp_path)
    assert "--@prelude" in enqueue

    proc = subprocess.Popen([venv / "bin" / "fakekey-server", "--port", "0"], cwd=tmp_path, env=clean_env(),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        port = ready_port(proc)
        with RawClient("127.0.0.1", port) as r:
            assert r.call("EVAL", "return cjson.encode({ok = cmsgpack ~= nil})", 0) == ("$", b'{"ok":true}')
            caps = r.call("EMQ.CAPS", "0")
            assert caps[0] == "*" and ("$", b"enqueue") in caps[1]
            keys = ["emq:{orders}:JOB1", "emq:{orders}:pending", "emq:{orders}:schedule"]
            assert r.call("EVAL", enqueue, 3, *keys, "hello", 0, 5, 1_700_000_000_000) == (":", 1)
            assert r.call("ZRANGE", keys[1], 0, -1, "WITHSCORES")[1] == [("$", b"JOB1"), ("$", b"5")]
        proc.terminate()
        assert proc.wait(10) == 0
    finally:
        proc.kill()
        proc.wait(10)
