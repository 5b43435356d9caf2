"""Fixtures for the TUI tests: deliver a Snapshot to the app the way the reconciler does.

Snapshot builders live in tui_factories.py; `access` is a ClusterAccess on the shared sandbox over HTTPS.
"""

from __future__ import annotations

import pytest

from rlark_tui.cluster.access import ClusterAccess
from rlark_tui.flow.messages import SnapshotChanged
from rlark_tui.flow.snapshot import Snapshot


@pytest.fixture
def post_snapshot():
    """`await post_snapshot(pilot, snapshot)`: deliver a snapshot the way the reconciler does."""

    async def post(pilot, snapshot: Snapshot) -> None:
        pilot.app.post_message(SnapshotChanged(snapshot))
        await pilot.pause()
        await pilot.pause()

    return post


@pytest.fixture
def access(sandbox):
    access = ClusterAccess.open(str(sandbox.kubeconfig), sandbox.context)
    yield access
    access.close()
