"""Workflows in the TUI and the CLI (issue 25 item 4), Pilot against the shared sandbox over HTTPS: `n` in
`:workflows` opens the YAML template in $EDITOR (a real editor process, here `cp` of a prepared file; Pilot's
headless driver cannot suspend, so the app's suspend is a no-op here), nothing is sent when it comes back
unchanged or invalid (the draft is kept), a valid one is created and `rlark get workflows` lists it; `enter` shows
its templates; `ctrl+d` states what goes with it; `rlark delete workflow` removes it; read-only refuses both."""

from __future__ import annotations

import contextlib
import dataclasses

import pytest

from rlark_tui import cli
from rlark_tui.cluster.errors import NotFound
from rlark_tui.cluster.kinds import WORKFLOWS
from rlark_tui.flow.messages import DeleteWorkflow, SnapshotChanged
from rlark_tui.flow.polls import ALL_KEY, Listed
from rlark_tui.jobspec.workflow import NEW_WORKFLOW, delete_consequences
from rlark_tui.model.objects import dig
from rlark_tui.screens import workflows
from rlark_tui.screens.confirm import ConfirmScreen
from rlark_tui.screens.job_detail import JobDetailScreen
from rlark_tui.screens.workflows import WorkflowScreen, WorkflowsScreen
from rlark_tui.tui.app import RlarkApp
from rlark_tui.view import workflows as view
from tests.console.test_console_tui import access, notes  # noqa: F401 (the fixture)
from tests.pilot import press, wait_for
from tests.tui.tui_factories import build_snapshot, job_dict

NAME = "wf-made-in-tui"


@pytest.fixture
def edited(tmp_path, monkeypatch):
    """`$EDITOR` copies the file this fixture's test writes over the temporary file rlark opens."""
    source = tmp_path / "edited.yaml"
    monkeypatch.setenv("EDITOR", f"cp {source}")
    monkeypatch.delenv("VISUAL", raising=False)
    return source


@pytest.fixture
def cleanup(access):
    yield
    try:
        access.delete(WORKFLOWS, NAME)
    except NotFound:
        pass


def _rlark(sandbox, capfd, *args):
    code = cli.main(["--kubeconfig", str(sandbox.kubeconfig), "--context", sandbox.context, *args])
    out, err = capfd.readouterr()
    return code, out, err


def _listing(app) -> str:
    """What the app last read of the Workflows, what the screen says of it, and what the reconciler reads now (a
    whole-suite run once waited 30 s for a Workflow the CLI listed; this says where it was lost)."""
    listed = app.index.listed("workflows", ALL_KEY) if app.index is not None else None
    names = [dig(item, "metadata", "name") for item in listed.items] if isinstance(listed, Listed) else None
    error = listed.error if isinstance(listed, Listed) else ""
    said = app.screen.query_one("#workflow-message").render()
    return (f"snapshot {app.index.snapshot.version if app.index else None}: listed {names} {error!r}; "
            f"the screen says {str(said)!r}; subscribed {sorted(app.reconciler.subscriptions)}")


async def test_create_in_the_tui_then_delete_with_the_cli(sandbox, access, edited, cleanup, capfd):
    app = RlarkApp(access)
    app.suspend = contextlib.nullcontext
    async with app.run_test(size=(150, 40)) as pilot:
        await wait_for(pilot, lambda: app.index is not None, "the first snapshot")
        app.run_command("workflows")
        screen = await wait_for(pilot, lambda: isinstance(app.screen, WorkflowsScreen) and app.screen, "the list")
        edited.write_text(NEW_WORKFLOW)
        await pilot.press("n")
        await wait_for(pilot, lambda: "unchanged: nothing sent" in notes(app), "the unchanged refusal")
        edited.write_text(NEW_WORKFLOW.replace("my-workflow", NAME))  # NODE is no Node: invalid
        await pilot.press("n")
        await wait_for(pilot, lambda: "not sent (the draft is kept" in notes(app), "the invalid refusal", show=notes)
        assert "nodeSelector" in notes(app) and screen.draft == edited.read_text()
        with pytest.raises(NotFound):
            access.get(WORKFLOWS, NAME)
        edited.write_text(screen.draft.replace("NODE", "edge-b1"))
        await pilot.press("n")
        await wait_for(pilot, lambda: f"workflow {NAME} created" in notes(app), "the created Workflow", show=notes)
        assert screen.draft is None

        code, out, err = _rlark(sandbox, capfd, "get", "workflows")
        assert code == 0 and any(line.split()[0] == NAME for line in out.splitlines()[1:]), out

        table = screen.query_one("#workflows-table")
        await wait_for(pilot, lambda: table.select_key(NAME), "the new Workflow listed", show=_listing)
        await pilot.press("enter")
        detail = await wait_for(pilot, lambda: isinstance(app.screen, WorkflowScreen) and app.screen, "its templates")
        rows = detail.query_one("#workflow-table")
        await wait_for(pilot, lambda: rows.row_count == 2 and rows.get_row_at(1)[1] == "··train", "both layers")
        await pilot.press("escape", "ctrl+d")
        assert isinstance(app.screen, ConfirmScreen) and app.screen.title_text == f"Delete Workflow {NAME}?"
        assert "owned by it and are deleted with it" in app.screen.body_text or "created no Job" in \
            app.screen.body_text
        await pilot.press("n")

    code, out, err = _rlark(sandbox, capfd, "--readonly", "delete", "workflow", NAME, "--yes")
    assert code == 1 and "read-only mode: refusing to delete workflow" in err
    code, out, err = _rlark(sandbox, capfd, "delete", "workflow", NAME, "--yes")
    assert code == 0 and out.startswith(f"workflow {NAME} deleted"), (out, err)
    with pytest.raises(NotFound):
        access.get(WORKFLOWS, NAME)


async def test_readonly_refuses_new_and_delete_before_any_editor_or_dialog(access, edited):
    app = RlarkApp(access, readonly=True)
    async with app.run_test(size=(150, 40)) as pilot:
        app.run_command("workflows")
        await pilot.pause()
        await pilot.press("n")
        await pilot.pause()
        assert "read-only mode: refusing to create a workflow" in notes(app)
        app.post_message(DeleteWorkflow("x"))
        await pilot.pause()
        assert "read-only mode: refusing to delete workflow x" in notes(app)
        assert isinstance(app.screen, WorkflowsScreen)


def test_delete_consequences_name_the_jobs_that_go_with_it():
    title, body = delete_consequences("wf", ["wf-a", "wf-b"])
    assert title == "Delete Workflow wf?" and "The 2 Job(s) it created (wf-a, wf-b) are owned by it" in body
    assert "created no Job yet" in delete_consequences("wf", [])[1]


def _chain(count: int, version: str) -> dict:
    """A Workflow whose templates each wait for the one before."""
    return {"apiVersion": "rlinf.io/v1alpha1", "kind": "Workflow",
            "metadata": {"name": "wf", "resourceVersion": version},
            "spec": {"jobTemplates": [{"name": f"t{i}", "dependencies": [f"t{i - 1}"] if i else [],
                                       "spec": {"tasks": [{"name": "a", "head": True, "role": "Actor"}]}}
                                      for i in range(count)]},
            "status": {"phase": "Running"}}


async def test_a_workflow_of_many_templates_shows_the_first_and_counts_the_rest(monkeypatch):
    """Issue 33 (a tenth round, a Workflow's author): every template was a row of the table, derived, cleaned and
    laid out when the screen opened and at every poll: 20,000 templates were 2 s to open and 0.5 s a poll of the
    UI thread, and a chain of them each indented by its layer 8 s and 2.6 s. The table shows the first
    MAX_TEMPLATES_SHOWN (5 here) and counts the rest, a name is indented by at most MAX_INDENT layers (2 here), and a
    poll of the same Workflow version is not derived again, while a change of one of its Jobs still shows."""
    monkeypatch.setattr(workflows, "MAX_TEMPLATES_SHOWN", 5)
    monkeypatch.setattr(view, "MAX_INDENT", 2)
    app = RlarkApp(None)
    async with app.run_test(size=(150, 40)) as pilot:
        first = build_snapshot([job_dict("wf-t0")])
        app.post_message(SnapshotChanged(dataclasses.replace(first, workflows={ALL_KEY: Listed((_chain(12, "7"),))})))
        await app.push_screen(WorkflowScreen("wf"))
        table = app.screen.query_one("#workflow-table")
        await wait_for(pilot, lambda: table.row_count, "the Workflow's templates")
        rows = [[str(cell) for cell in table.get_row_at(i)] for i in range(table.row_count)]
        assert [row[1] for row in rows] == ["t0", "··t1", "····t2", "····(layer 3) t3", "····(layer 4) t4"]
        assert rows[0][2:4] == ["wf-t0", "Running"] and rows[1][2:4] == ["-", "not created"]
        assert str(app.screen.query_one("#workflow-more").render()) == (
            "… 7 more templates (the first 5 shown; rlark get -o yaml workflow wf lists every one)")

        jobs = [job_dict("wf-t0", phase="Succeeded"), job_dict("wf-t1")]
        jobs[0]["metadata"]["resourceVersion"] = "2"
        app.post_message(SnapshotChanged(dataclasses.replace(build_snapshot(jobs), version=1,
                                                             workflows={ALL_KEY: Listed((_chain(12, "7"),))})))
        await wait_for(pilot, lambda: [str(cell) for cell in table.get_row_at(1)][2:4] == ["wf-t1", "Running"],
                       "the next poll's Job of t1")
        assert [str(cell) for cell in table.get_row_at(0)][3] == "Succeeded"
        table.move_cursor(row=1)
        await press(pilot, "enter")
        detail = await wait_for(pilot, lambda: isinstance(app.screen, JobDetailScreen) and app.screen, "t1's Job")
        assert detail.job_name == "wf-t1"
