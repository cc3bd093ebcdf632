"""The guard that runs the compiled modules only when they were built from the source that
is there (fakekey/compiled.py), and FAKEKEY_PURE, which asks for pure Python."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from fakekey import compiled

ROOT = Path(compiled.__file__).resolve().parents[1]
BUILT = all(compiled.built_extension(m) is not None for m in compiled.MODULES)
needs_build = pytest.mark.skipif(not BUILT, reason="a pure build: nothing compiled to guard")


def loaded_from(env: dict[str, str]) -> tuple[str, str]:
    """What a fresh interpreter reports: fakekey.COMPILED, and where fakekey.core.state came from."""
    code = "import fakekey, fakekey.core.state as s; print(fakekey.COMPILED, s.__file__)"
    out = subprocess.run([sys.executable, "-W", "error", "-c", code], cwd=ROOT, env=env,
                         capture_output=True, text=True, check=True).stdout
    flag, path = out.split()
    return flag, path


def clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != compiled.PURE_ENV}
    env.update(extra)
    return env


@needs_build
def test_a_build_from_the_current_source_runs_compiled():
    assert compiled.stale_modules() == []
    flag, path = loaded_from(clean_env())
    assert flag == "True" and not path.endswith(".py")


def test_fakekey_pure_runs_the_python_source():
    flag, path = loaded_from(clean_env(FAKEKEY_PURE="1"))
    assert flag == "False" and path.endswith("state.py")


@needs_build
def test_a_source_changed_since_its_build_runs_pure_with_a_warning(tmp_path, monkeypatch):
    manifest = tmp_path / "compiled-sources.txt"
    text = compiled.manifest_text().replace(compiled.source_digest("fakekey.core.keyspace"), "0" * 64)
    manifest.write_text(text)
    monkeypatch.setattr(compiled, "MANIFEST", manifest)
    monkeypatch.delenv(compiled.PURE_ENV, raising=False)
    monkeypatch.setattr(sys, "meta_path", list(sys.meta_path))  # choose() adds its finder
    assert compiled.stale_modules() == ["fakekey.core.keyspace"]
    assert compiled.build_due()
    with pytest.warns(RuntimeWarning, match="fakekey.core.keyspace not compiled from the current source"):
        assert compiled.choose() is False
    assert sys.meta_path[0] is compiled._SourceFirst


@needs_build
def test_a_module_never_built_runs_pure(tmp_path, monkeypatch):
    """A module added to the set since the build: compiled and interpreted halves may not
    fit (a compiled class cannot be subclassed by an interpreted one), so all run pure."""
    monkeypatch.setattr(compiled, "MODULES", (*compiled.MODULES, "fakekey.core.channels"))
    monkeypatch.delenv(compiled.PURE_ENV, raising=False)
    monkeypatch.setattr(sys, "meta_path", list(sys.meta_path))
    assert compiled.stale_modules() == ["fakekey.core.channels"]
    with pytest.warns(RuntimeWarning):
        assert compiled.choose() is False


def test_no_module_has_its_type_errors_silenced():
    """`make lint` type-checks the whole package, and no override silences a module: mypyc
    would compile a function body mypy skipped (ignore_errors) as unreachable code, a
    crash at its first call, and an interpreted module's errors are bugs all the same."""
    import tomllib

    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    overrides = config["tool"]["mypy"].get("overrides", [])
    assert overrides  # the check reads the overrides where they are
    assert [o["module"] for o in overrides if o.get("ignore_errors")] == []
