"""WorkflowsScreen (`:workflows`): every Workflow's templates in dependency order (layer by layer), each with
its Job and phase, or why it still waits; enter opens a template's Job.

The Workflows are the reconciler's WORKFLOWS read (subscribed while this screen is open); the Jobs are the
watched ones. Which template waits for what is model/workflow.py.
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import Static

from rlark_tui.messages import OpenJob
from rlark_tui.model.view_model import SnapshotIndex
from rlark_tui.model.views import dig
from rlark_tui.model.workflow import template_states
from rlark_tui.polls import ALL_KEY, WORKFLOWS
from rlark_tui.screens.base import RlarkScreen
from rlark_tui.widgets.live_table import Column, LiveTable, Row

COLUMNS = (
    Column("workflow", "WORKFLOW"),
    Column("template", "TEMPLATE"),
    Column("job", "JOB"),
    Column("phase", "PHASE"),
    Column("why", "WHY IT WAITS"),
)


def workflow_rows(workflows: tuple[dict, ...], jobs) -> list[Row]:
    """One row per template, Workflows by name, templates by layer (`··` per layer of dependencies); a row's
    key sorts in that order and ends with the template's Job name once the Job exists."""
    rows = []
    for workflow in sorted(workflows, key=lambda w: str(dig(w, "metadata", "name", default=""))):
        name = str(dig(workflow, "metadata", "name", default=""))
        phase = str(dig(workflow, "status", "phase", default="") or "-")
        for index, state in enumerate(template_states(workflow, jobs)):
            label = "··" * state.layer + state.name
            cells = (f"{name} ({phase})" if index == 0 else "", label, state.job if state.phase else "-",
                     state.phase or "not created", state.waiting)
            key = f"{name}/{index:04d}/{state.job if state.phase else ''}"
            rows.append(Row(key, cells, (name, index, state.job, state.phase, state.waiting)))
    return rows


class WorkflowsScreen(RlarkScreen):
    """esc returns to the job list; enter on a template whose Job exists opens that Job."""

    crumb = "Workflows"
    BINDINGS = [Binding("escape", "back", "Back")]

    def compose_body(self) -> ComposeResult:
        yield LiveTable(COLUMNS, id="workflow-table")
        yield Static("", id="workflow-message", markup=False)

    def on_mount(self) -> None:
        self.services.subscribe(WORKFLOWS, ALL_KEY)
        super().on_mount()
        self.focus_body()

    def on_unmount(self) -> None:
        self.services.unsubscribe(WORKFLOWS, ALL_KEY)
        super().on_unmount()

    def focus_body(self) -> None:
        self.query_one(LiveTable).focus()

    def show_snapshot(self, index: SnapshotIndex) -> None:
        self.update_header()
        listed = index.snapshot.workflows.get(ALL_KEY)
        table = self.query_one(LiveTable)
        table.sync(workflow_rows(listed.items, index.snapshot.jobs) if listed is not None else [])
        if listed is None:
            message = "Listing Workflows…"
        elif listed.error:
            message = f"workflows: {listed.error}"
        elif not listed.items:
            message = "No Workflows. `rlark submit -f` takes a Workflow manifest."
        else:
            message = ""
        widget = self.query_one("#workflow-message", Static)
        widget.update(message)
        widget.set_class(bool(message), "-shown")

    def on_live_table_row_selected(self, event: LiveTable.RowSelected) -> None:
        event.stop()
        job = event.row_key.rsplit("/", 1)[-1]
        if job:
            self.post_message(OpenJob(job))
        else:
            self.notify("this template has no Job yet: its row says why it waits", severity="warning")

    def action_back(self) -> None:
        self.rlark.run_command("jobs")
