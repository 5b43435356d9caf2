"""Fixtures for cluster-side tests: a Ray-free sandbox of our own (its jobs, Pods and faults are ours to change)
and `rl`, which runs `rlark` in-process against it and returns (code, out, err).

The shared session `sandbox` runs the agent; these tests stop, delete and break things, so they use their own.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from rlark_tui.cli import main


@dataclass
class Result:
    code: int
    out: str
    err: str


@pytest.fixture(scope="session")
def cluster_sandbox(tmp_path_factory):
    from rlark_tui.sandbox import Sandbox
    sb = Sandbox(tmp_path_factory.mktemp("cluster-sandbox"), seed="demo", agent=False).start()
    try:
        yield sb
    finally:
        sb.stop()


@pytest.fixture
def sb(cluster_sandbox):
    cluster_sandbox.faults.clear()
    try:
        yield cluster_sandbox
    finally:
        cluster_sandbox.faults.clear()


@pytest.fixture
def env(tmp_path, monkeypatch):
    """No user config file, a private state dir, and no stray kubeconfig from the environment."""
    monkeypatch.setenv("RLARK_CONFIG", str(tmp_path / "config.yaml"))
    monkeypatch.setenv("RLARK_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.delenv("KUBECONFIG", raising=False)
    return tmp_path


@pytest.fixture
def rl(sb, env, capsys):
    def run(*argv: str) -> Result:
        code = main(["--kubeconfig", str(sb.kubeconfig), *argv])
        captured = capsys.readouterr()
        return Result(code, captured.out, captured.err)
    return run
