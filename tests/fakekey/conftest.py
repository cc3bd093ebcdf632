"""Fixtures for fakekey's own tests."""

import gc
import warnings

import pytest


@pytest.fixture
def earlier_garbage_collected() -> None:
    """pytester runs a project in this process: what earlier tests left to the garbage
    collector (a plain async client's sockets, closed as far as their loop allowed) must
    not be collected inside a project run that turns such warnings into errors."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        gc.collect()
