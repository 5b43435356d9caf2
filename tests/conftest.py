"""Session-wide fixtures: one shared sandbox (demo seed, temporary state dir) for every cluster-side test.
Tests reach it over real HTTPS through `sandbox.kubeconfig`; `sandbox.store` / `sandbox.faults` for setup.

`sandbox` attributes: `.kubeconfig` (Path), `.gateway` (URL), `.state_dir`, `.context` ("rlark-sandbox"),
`.store`, `.logs`, `.faults`, `.proxies`, `.call(fn, *args)`, `.api_client(context=None)`, `.token`.
Tests that set faults must clear them (`sandbox.faults.clear()`), e.g. with the `faults` fixture.
"""

from __future__ import annotations

import pytest

# Settings handed to the simulated agent (rlark_tui.sandbox.agent) of the shared sandbox.
AGENT_SETTINGS: dict = {}


@pytest.fixture(scope="session")
def sandbox(tmp_path_factory):
    from rlark_tui.sandbox import Sandbox
    with Sandbox(tmp_path_factory.mktemp("sandbox"), seed="demo", agent_settings=AGENT_SETTINGS) as sb:
        yield sb


@pytest.fixture
def faults(sandbox):
    """The shared sandbox's fault switches, cleared after the test."""
    with sandbox.faults.cleared() as faults:
        yield faults


@pytest.fixture
def env(tmp_path, monkeypatch):
    """No user config file, a private state dir, and no stray kubeconfig from the environment."""
    monkeypatch.setenv("RLARK_CONFIG", str(tmp_path / "config.yaml"))
    monkeypatch.setenv("RLARK_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.delenv("KUBECONFIG", raising=False)
    return tmp_path
