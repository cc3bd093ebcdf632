"""Shared test configuration: Hypothesis profiles (quick for CI, deep for local runs), and
fixtures both test trees use."""

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci", max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile(
    "deep", max_examples=2000, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile("dev", max_examples=150, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "dev"))


@pytest.fixture
def socket_folder() -> Iterator[Path]:
    """A folder with a short path: a Unix socket's path holds at most 107 bytes, and
    pytest's tmp_path can be longer."""
    path = tempfile.mkdtemp(prefix="fkus", dir="/tmp")
    try:
        yield Path(path)
    finally:
        shutil.rmtree(path, ignore_errors=True)
