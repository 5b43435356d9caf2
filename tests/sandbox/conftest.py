"""Fixtures of the sandbox server's own tests: `bare_sandbox`, the same server without the simulated agent,
so API semantics (status, generation, watch streams) are not changed under the test by the agent."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def bare_sandbox(tmp_path_factory):
    from rlark_sandbox import Sandbox
    with Sandbox(tmp_path_factory.mktemp("bare-sandbox"), seed="demo", agent=False) as sb:
        yield sb
