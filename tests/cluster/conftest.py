"""Fixtures for cluster-side tests: a Ray-free sandbox of our own (its jobs, Pods and faults are ours to change)
and `rl`, which runs `rlark` in-process against it and returns (code, out, err).

The shared session `sandbox` runs the agent; these tests stop, delete and break things, so they use their own.
"""

from __future__ import annotations

import pytest

from tests.clirun import cli_runner


@pytest.fixture(scope="session")
def cluster_sandbox(tmp_path_factory):
    from rlark_sandbox import Sandbox
    with Sandbox(tmp_path_factory.mktemp("cluster-sandbox"), seed="demo", agent=False) as sb:
        yield sb


@pytest.fixture
def sb(cluster_sandbox):
    with cluster_sandbox.faults.cleared():
        yield cluster_sandbox


@pytest.fixture
def rl(sb, env, capsys):
    return cli_runner(sb.kubeconfig, capsys)
