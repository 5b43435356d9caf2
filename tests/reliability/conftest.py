"""Fixtures for the reliability matrix: a Ray-free sandbox of its own (demo seed, no agent), reset between tests,
and `rl`, which runs `rlark` in-process against it and returns a `tests.clirun.Result`.

Faults set through `rel.faults` are cleared before and after each test. Tests that add objects delete them
(or use names nobody else uses), so the order of tests does not matter.
"""

from __future__ import annotations

import pytest

from tests.clirun import cli_runner


@pytest.fixture(scope="session")
def reliability_sandbox(tmp_path_factory):
    from rlark_sandbox import Sandbox
    with Sandbox(tmp_path_factory.mktemp("reliability-sandbox"), seed="demo", agent=False) as sb:
        yield sb


@pytest.fixture
def rel(reliability_sandbox):
    with reliability_sandbox.faults.cleared():
        yield reliability_sandbox


@pytest.fixture
def rl(rel, env, capsys):
    return cli_runner(rel.kubeconfig, capsys)
