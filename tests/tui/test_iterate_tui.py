"""Iterating on runs in the TUI against the shared sandbox: Clone (C) and Edit-and-restart (E) open the wizard
prefilled, Restart (R) asks first, D shows what changed between two marked Jobs, and `:workflows` says why a
template waits. --readonly refuses each write; every check reads the Job back over HTTPS.

The Jobs use an image the sandbox fails to pull on purpose, so none of them starts a process.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from rlark_tui.cluster.errors import NotFound
from rlark_tui.cluster.kinds import JOBS, WORKFLOWS
from rlark_tui.flow.actions import Actions
from rlark_tui.jobspec.build import build_job
from rlark_tui.jobspec.jobdiff import diff_jobs
from rlark_tui.model import keys
from rlark_tui.model.objects import Job
from rlark_tui.model.submission import submitted_record
from rlark_tui.screens.confirm import ConfirmScreen
from rlark_tui.screens.diff import DiffScreen
from rlark_tui.screens.job_detail import JobDetailScreen
from rlark_tui.screens.job_list import JobListScreen
from rlark_tui.screens.wizard import WizardScreen
from rlark_tui.screens.workflows import WorkflowScreen, WorkflowsScreen
from rlark_tui.tui.app import RlarkApp
from tests.pilot import press, wait_for

SIZE = (120, 40)
IMAGE = "registry.rlark.local/iterate-invalid-pull/rlinf@sha256:" + "0123456789abcdef" * 4


def draft(name: str, lr: str = "3e-4") -> dict:
    return {"name": name, "type": "custom", "header": "learner",
            "roles": [{"name": "learner", "role": "Actor", "cluster": "rlark-gpu-a",
                       "selector": {"kubernetes.io/hostname": "gpu-a3"}, "image": IMAGE, "env": {"LR": lr}}],
            "runScript": "python train.py",
            "record": {"runId": f"{name}-r1", "outputPath": f"/tmp/rlark-iterate/{name}-r1"}}


@pytest.fixture
def submit(access):
    """Submit a draft through rlark (plan, record, submission record), optionally stopped; deleted afterwards."""
    made = []

    def make(source: dict, stopped: bool = False) -> dict:
        result = build_job(source, access.nodes(), [])
        assert result.ok, result.findings
        manifest = result.manifest
        manifest["spec"]["stopped"] = stopped
        Actions(access).submit(manifest)
        made.append(manifest["metadata"]["name"])
        return access.get(JOBS, manifest["metadata"]["name"])

    yield make
    for name in made + [f"{n}-copy" for n in made]:
        try:
            access.delete(JOBS, name)
        except NotFound:
            pass


async def on_row(pilot, name: str) -> JobListScreen:
    """The job list with the cursor on Job `name`."""
    screen = pilot.app.screen
    await wait_for(pilot, lambda: isinstance(pilot.app.screen, JobListScreen) and name in pilot.app.screen.rows,
                   f"Job {name} in the list")
    screen = pilot.app.screen
    screen.table.move_cursor(row=screen.table.get_row_index(name))
    await pilot.pause()
    return screen


async def through_the_wizard(pilot) -> WizardScreen:
    screen = await wait_for(pilot, lambda: isinstance(pilot.app.screen, WizardScreen) and pilot.app.screen,
                            "the wizard")
    for step in (2, 3, 4):
        await press(pilot, "ctrl+n")
        await wait_for(pilot, lambda step=step: screen.step == step, f"step {step}")
    return screen


def notes(app) -> str:
    return " | ".join(n.message for n in app._notifications)


async def test_clone_opens_the_wizard_on_a_new_run_and_submits_the_copy(access, submit):
    source = submit(draft("it-src"))
    async with RlarkApp(access).run_test(size=SIZE) as pilot:
        await on_row(pilot, "it-src")
        await pilot.press("C")
        screen = await through_the_wizard(pilot)
        assert screen.draft.name == "it-src-copy" and screen.locked_name is None
        assert screen.draft.record["runId"].startswith("it-src-copy-")
        await pilot.press("ctrl+g")
        copy = await wait_for(pilot, lambda: _get(access, "it-src-copy"), "the copy created")
    changes = {(c.section, c.field) for c in diff_jobs(source, copy)}
    assert changes == {("record", "runId"), ("record", "outputPath")}
    assert Job(copy).launch_record["outputPath"].endswith(Job(copy).launch_record["runId"])


async def test_edit_locks_the_name_and_replaces_the_spec_keeping_the_record(access, submit):
    submit(draft("it-edit"), stopped=True)
    async with RlarkApp(access).run_test(size=SIZE) as pilot:
        await on_row(pilot, "it-edit")
        await pilot.press("E")
        screen = await wait_for(pilot, lambda: isinstance(pilot.app.screen, WizardScreen) and pilot.app.screen,
                                "the wizard")
        assert screen.locked_name == "it-edit" and screen.crumb.startswith("Edit Job it-edit")
        await screen.load(replace(screen.draft, display_name="Edited run"))
        await through_the_wizard(pilot)
        await pilot.press("ctrl+g")
        live = await wait_for(pilot, lambda: (j := _get(access, "it-edit")) and keys.RESTARTED_AT_ANNOTATION in
                              Job(j).annotations and j, "the Job replaced")
    assert live["spec"]["stopped"] is False and Job(live).display_name == "Edited run"
    record = submitted_record(live)
    assert record.intact and record.matches_live


async def test_restart_asks_first_then_only_un_stops(access, submit):
    submit(draft("it-rs"), stopped=True)
    async with RlarkApp(access).run_test(size=SIZE) as pilot:
        await on_row(pilot, "it-rs")
        await pilot.press("R")
        dialog = await wait_for(pilot, lambda: isinstance(pilot.app.screen, ConfirmScreen) and pilot.app.screen,
                                "the confirm dialog")
        assert "It only un-stops a stopped Job" in dialog.body_text and "NOT resume" in dialog.body_text
        await pilot.press("y")
        live = await wait_for(pilot, lambda: (j := _get(access, "it-rs")) and j["spec"].get("stopped") is False
                              and j, "the Job un-stopped")
    assert keys.RESTARTED_AT_ANNOTATION in Job(live).annotations


async def test_read_only_refuses_edit_and_restart_and_the_copy_submit(access, submit):
    before = submit(draft("it-ro"), stopped=True)
    async with RlarkApp(access, readonly=True).run_test(size=SIZE) as pilot:
        await on_row(pilot, "it-ro")
        for key, refusal in (("E", "refusing to edit and restart job it-ro"), ("R", "refusing to restart job it-ro")):
            await pilot.press(key)
            # each toast is read once posted and before it expires (a loaded run read E's after its 5 s were over)
            await wait_for(pilot, lambda refusal=refusal: refusal in notes(pilot.app), refusal)
            assert isinstance(pilot.app.screen, JobListScreen)
        await pilot.press("C")
        await through_the_wizard(pilot)
        await pilot.press("ctrl+g")
        await wait_for(pilot, lambda: "read-only mode: Submit refused" in notes(pilot.app), "the submit refused")
    after = access.get(JOBS, "it-ro")
    assert after["spec"] == before["spec"] and after["metadata"]["annotations"] == before["metadata"]["annotations"]
    assert _get(access, "it-ro-copy") is None


async def test_diff_of_two_marked_jobs(access, submit):
    submit(draft("it-d1"))
    submit(draft("it-d2", lr="1e-4"))
    async with RlarkApp(access).run_test(size=SIZE) as pilot:
        for name in ("it-d1", "it-d2"):
            await on_row(pilot, name)
            await pilot.press("space")
        await pilot.press("D")
        screen = await wait_for(pilot, lambda: isinstance(pilot.app.screen, DiffScreen) and pilot.app.screen,
                                "the diff")
        text = await wait_for(pilot, lambda: str(screen.query_one("#diff-text").render()).strip(), "the diff text")
        assert "@@ role learner" in text and "-env.LR: 3e-4" in text and "+env.LR: 1e-4" in text
        await pilot.press("v")
        await pilot.pause()
        assert "[role learner]" in str(screen.query_one("#diff-text").render())


async def test_workflows_view_says_why_a_template_waits_and_opens_its_job(access):
    spec = build_job(draft("x"), access.nodes(), []).manifest["spec"]
    access.create(WORKFLOWS, {"apiVersion": "rlinf.io/v1alpha1", "kind": "Workflow", "metadata": {"name": "wf-tui"},
                              "spec": {"jobTemplates": [{"name": "prep", "spec": spec},
                                                        {"name": "train", "dependencies": ["prep"], "spec": spec}]}})
    try:
        async with RlarkApp(access).run_test(size=SIZE) as pilot:
            await wait_for(pilot, lambda: pilot.app.index is not None, "the first snapshot")
            pilot.app.run_command("workflows")
            screen = await wait_for(pilot, lambda: isinstance(pilot.app.screen, WorkflowsScreen)
                                    and pilot.app.screen.ready and pilot.app.screen, "the Workflows view")
            listed = screen.query_one("#workflows-table")
            await wait_for(pilot, lambda: listed.select_key("wf-tui"), "wf-tui listed")
            await pilot.press("enter")
            screen = await wait_for(pilot, lambda: isinstance(pilot.app.screen, WorkflowScreen)
                                    and pilot.app.screen.ready and pilot.app.screen, "wf-tui's templates")
            table = screen.query_one("#workflow-table")
            rows = await wait_for(pilot, lambda: table.row_count == 2 and table.get_row_at(0)[2] == "wf-tui-prep"
                                  and [table.get_row_at(0), table.get_row_at(1)], "both templates", timeout=60)
            assert rows[0][1] == "prep" and rows[1][1] == "··train" and rows[1][2] == "-"
            assert rows[1][4].startswith("waits for prep (Job wf-tui-prep is ")
            assert "StatefulSet Job never reaches Succeeded" in rows[1][4]
            table.move_cursor(row=0)
            await pilot.press("enter")
            detail = await wait_for(pilot, lambda: isinstance(pilot.app.screen, JobDetailScreen) and pilot.app.screen,
                                    "the Job's detail")
            assert detail.job_name == "wf-tui-prep"
    finally:
        access.delete(WORKFLOWS, "wf-tui")


def _get(access, name: str) -> dict | None:
    try:
        return access.get(JOBS, name)
    except NotFound:
        return None
