"""SVG snapshots (pytest-textual-snapshot) of the wizard's four steps at 80x24, the size of many SSH windows:
a valid three-role draft over the Nodes and gateway lookups of tests/wizard/data, stepped through with ctrl+n.

Refresh with --snapshot-update after an intended visual change, and look at the pictures.
"""

from __future__ import annotations

import pytest
from textual.widgets import Input

from rlark_tui.tui.app import RlarkApp
from wizard.helpers import data_draft, open_offline


@pytest.mark.parametrize("step", [1, 2, 3, 4])
def test_wizard_step_snapshot_80x24(snap_compare, state, step):
    app = RlarkApp(None)

    async def open_step(pilot):
        screen = await open_offline(pilot, data_draft())
        for _ in range(step - 1):
            await pilot.press("ctrl+n")
            await pilot.pause()
        assert screen.step == step
        for field in pilot.app.screen.query(Input):  # the cursor shown, not the blink's phase at the picture
            field.cursor_blink = False
        await pilot.pause()

    assert snap_compare(app, terminal_size=(80, 24), run_before=open_step)
