"""The benchmark scripts under bench/, loaded as modules for their tests."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

BENCH_DIR = Path(__file__).resolve().parents[2] / "bench"


def load_bench(stem: str, *, reuse: bool = False) -> ModuleType:
    """bench/<stem>.py as the module `bench_<stem>`, registered before it runs (its
    dataclasses look their module up while being defined); with `reuse`, one already
    loaded under that name is answered instead."""
    name = f"bench_{stem}"
    if reuse and name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, BENCH_DIR / f"{stem}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
