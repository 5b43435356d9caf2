"""SVG snapshots (pytest-textual-snapshot) of the wizard's four steps at 80x24, the size of many SSH windows:
a valid three-role draft over the Nodes of tests/wizard/data, stepped through with ctrl+n as a user does.

Refresh with --snapshot-update after an intended visual change, and look at the pictures.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from rlark_tui.app import RlarkApp
from rlark_tui.model.draft import load_draft
from rlark_tui.reconciler import SnapshotChanged
from rlark_tui.screens.wizard import WizardScreen
from rlark_tui.snapshot import Snapshot

DATA = Path(__file__).resolve().parent / "data"


def snapshot() -> Snapshot:
    items = yaml.safe_load((DATA / "nodes.yaml").read_text())["items"]
    nodes = {f"{n['metadata']['namespace']}/{n['metadata']['name']}": n for n in items}
    return Snapshot(nodes=nodes, domains={"team-a": {}})


@pytest.mark.parametrize("step", [1, 2, 3, 4])
def test_wizard_step_snapshot_80x24(snap_compare, state, step):
    draft = load_draft((DATA / "draft-rl.yaml").read_text())[0]
    app = RlarkApp(None)

    async def open_step(pilot):
        app.post_message(SnapshotChanged(snapshot(), frozenset()))
        await pilot.pause()
        screen = WizardScreen(draft)
        await app.push_screen(screen)
        await pilot.pause()
        for _ in range(step - 1):
            await pilot.press("ctrl+n")
            await pilot.pause()
        assert screen.step == step
        await pilot.pause()

    assert snap_compare(app, terminal_size=(80, 24), run_before=open_step)
