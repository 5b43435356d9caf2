"""Fixtures for the wizard's Pilot tests: a ClusterAccess on the shared sandbox, a private state dir (autosave,
submitted YAML) and clean-up of the Jobs a test creates.
"""

from __future__ import annotations

import pytest

from rlark_tui.cluster.access import ClusterAccess
from rlark_tui.cluster.errors import NotFound
from rlark_tui.cluster.kinds import JOBS


@pytest.fixture
def state(tmp_path, monkeypatch):
    """RLARK_STATE_DIR for this test: the autosave and the submitted YAML land here."""
    monkeypatch.setenv("RLARK_STATE_DIR", str(tmp_path / "state"))
    return tmp_path / "state"


@pytest.fixture
def access(sandbox, state):
    access = ClusterAccess.open(str(sandbox.kubeconfig), sandbox.context)
    try:
        yield access
    finally:
        access.close()


@pytest.fixture
def cleanup_jobs(access):
    """Names appended here are deleted after the test (the shared sandbox stays tidy)."""
    names: list[str] = []
    yield names
    for name in names:
        try:
            access.delete(JOBS, name)
        except NotFound:
            pass
