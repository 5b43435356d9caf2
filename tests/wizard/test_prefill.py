"""Prefilled wizards, as Clone and Edit open them: one constructor call shows the draft on every step, and
`lock_name` keeps the name (read-only field, kept across an import, its own Job not counted as taken).
"""

from __future__ import annotations

from dataclasses import replace

from rlark_tui.flow.messages import SnapshotChanged
from rlark_tui.screens.wizard import WizardScreen
from rlark_tui.tui.app import RlarkApp
from wizard.helpers import data_draft, message, offline_snapshot


async def open_with_job(pilot, screen: WizardScreen) -> WizardScreen:
    """The offline Snapshot plus an existing Job named like the draft, then the wizard."""
    name = screen.draft.name
    pilot.app.post_message(SnapshotChanged(replace(offline_snapshot(), jobs={name: {"metadata": {"name": name}}})))
    await pilot.pause()
    await pilot.app.push_screen(screen)
    await pilot.pause()
    return screen


async def test_clone_is_one_call_and_the_taken_name_is_refused(state):
    draft = data_draft()
    async with RlarkApp(None).run_test(size=(80, 24)) as pilot:
        screen = await open_with_job(pilot, WizardScreen(draft))
        assert f"a Job named '{draft.name}' already exists" in message(screen, "name")
        screen.query_one("#w-name").value = f"{draft.name}-copy"
        await pilot.pause()
        assert message(screen, "name") == ""
        await pilot.press("ctrl+n")
        await pilot.pause()
        assert screen.step == 2 and screen.query_one("#w-selector").value == "kubernetes.io/hostname=gpu-a1"
        await pilot.press("ctrl+n")
        await pilot.pause()
        assert screen.step == 3 and screen.query_one("#w-record-runId").value == "ppo-7"


async def test_edit_locks_the_name(state):
    draft = data_draft()
    async with RlarkApp(None).run_test(size=(80, 24)) as pilot:
        screen = await open_with_job(pilot, WizardScreen(draft, lock_name=True))
        name = screen.query_one("#w-name")
        assert name.disabled and name.value == draft.name
        assert message(screen, "name") == ""
        await pilot.press("ctrl+n")
        await pilot.pause()
        assert screen.step == 2
        await screen.load(replace(draft, name="another-name", display_name="Edited"))
        await pilot.pause()
        assert screen.draft.name == draft.name and screen.draft.display_name == "Edited"
        assert name.value == draft.name
