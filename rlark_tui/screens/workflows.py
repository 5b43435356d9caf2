"""`:workflows`: every Workflow (phase, Jobs created of its templates, age); `enter` opens one Workflow's templates
in dependency order (layer by layer), each with its Job and phase, or why it still waits (enter opens a template's
Job); `n` creates a Workflow from a YAML template in $EDITOR (the app's worker checks it as `rlark submit -f` does;
nothing is sent when unchanged or invalid, and the draft is kept for the next `n`); `ctrl+d` deletes the selected
Workflow after a dialog saying which of its Jobs go with it.

The Workflows are the reconciler's WORKFLOWS read (subscribed while these screens are open); the Jobs are the
watched ones. Which template waits for what is jobspec/workflow.py.
"""

from __future__ import annotations

from datetime import UTC, datetime

from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import Static

from rlark_tui.flow.messages import DeleteWorkflow, EditText, OpenJob, SubmitWorkflowText, TextEdited, WorkflowSubmitted
from rlark_tui.flow.polls import ALL_KEY, WORKFLOWS, Listed
from rlark_tui.jobspec.workflow import NEW_WORKFLOW
from rlark_tui.screens.base import RlarkScreen, read_message
from rlark_tui.text.sanitize import clean
from rlark_tui.text.sinks import shell_line
from rlark_tui.view.index import SnapshotIndex
from rlark_tui.view.workflows import MAX_TEMPLATES_SHOWN, template_rows, workflow_list_rows, workflow_version
from rlark_tui.widgets.live_table import Column, LiveTable, Row

LIST_COLUMNS = (
    Column("name", "NAME"),
    Column("phase", "PHASE"),
    Column("jobs", "JOBS CREATED"),
    Column("age", "AGE"),
)
COLUMNS = (
    Column("workflow", "WORKFLOW"),
    Column("template", "TEMPLATE"),
    Column("job", "JOB"),
    Column("phase", "PHASE"),
    Column("why", "WHY IT WAITS"),
)


def _listed(index: SnapshotIndex) -> Listed | None:
    listed = index.listed("workflows", ALL_KEY)
    return listed if isinstance(listed, Listed) else None


class _WorkflowsRead(RlarkScreen):
    """Subscribes to the WORKFLOWS read while shown; its LiveTable has the focus."""

    def on_mount(self) -> None:
        self.intents.subscribe(WORKFLOWS, ALL_KEY)
        super().on_mount()
        self.focus_body()

    def on_unmount(self) -> None:
        self.intents.unsubscribe(WORKFLOWS, ALL_KEY)
        super().on_unmount()

    def focus_body(self) -> None:
        self.query_one(LiveTable).focus()


class WorkflowsScreen(_WorkflowsRead):
    """esc returns to the job list; enter opens the Workflow under the cursor."""

    crumb = "Workflows"
    BINDINGS = [Binding("escape", "back", "Back"), Binding("n", "new", "New workflow"),
                Binding("ctrl+d", "delete", "Delete")]

    def __init__(self) -> None:
        super().__init__()
        self.draft: str | None = None
        """The last edited text that was not created (kept for the next `n`)."""
        self._opened = ""

    def compose_body(self) -> ComposeResult:
        yield LiveTable(LIST_COLUMNS, id="workflows-table")
        yield Static("", id="workflow-message", markup=False)

    def show_snapshot(self, index: SnapshotIndex) -> None:
        self.update_header()
        listed = _listed(index)
        lines = workflow_list_rows(index, datetime.now(UTC))
        self.query_one(LiveTable).sync([Row(line.key, line.cells, line.sort_values) for line in lines])
        _say(self, listed)

    def on_live_table_row_selected(self, event: LiveTable.RowSelected) -> None:
        event.stop()
        self.app.push_screen(WorkflowScreen(event.row_key))

    def action_new(self) -> None:
        if self.rlark._refuse_readonly("create a workflow"):
            return
        self._opened = self.draft or NEW_WORKFLOW
        self.post_message(EditText(self, "workflow", self._opened, ".yaml"))

    def on_text_edited(self, message: TextEdited) -> None:
        if message.target != "workflow":
            return
        if message.error:
            self.notify(message.error, severity="error", timeout=8)
        elif message.text is None or message.text == self._opened:
            self.notify("unchanged: nothing sent", timeout=3)
        else:
            self.draft = message.text
            self.notify("checking the Workflow…", timeout=2)
            self.post_message(SubmitWorkflowText(self, message.text))

    def on_workflow_submitted(self, message: WorkflowSubmitted) -> None:
        if message.problems:
            self.rlark.notify(["not sent (the draft is kept: n opens it again):", *message.problems[:8]],
                              severity="error", timeout=15)
            return
        self.draft = None
        self.notify(f"workflow {message.name} created: its controller creates each template's Job once its "
                    "dependencies succeeded")
        self.intents.poll_now(WORKFLOWS, ALL_KEY)

    def action_delete(self) -> None:
        name = self.query_one(LiveTable).selected_key
        if name is None:
            self.notify("No Workflow selected", severity="warning")
        else:
            self.post_message(DeleteWorkflow(name))

    def action_back(self) -> None:
        self.rlark.run_command("jobs")


def _say(screen: RlarkScreen, listed: Listed | None) -> None:
    screen.say("#workflow-message", read_message(
        listed, bool(listed and listed.items), waiting="Listing Workflows…", failed="workflows",
        empty="No Workflows. `n` writes one in $EDITOR; `rlark submit -f` takes a Workflow manifest."))


class WorkflowScreen(_WorkflowsRead):
    """One Workflow's templates by layer; esc back to the list; enter on a template whose Job exists opens it.

    Its table shows the first MAX_TEMPLATES_SHOWN templates and a line under it counts the rest. A poll that brings
    the same version of the Workflow, while none of the Jobs' rows changed, is not derived again."""

    BINDINGS = [Binding("escape", "app.pop_screen", "Back")]

    def __init__(self, name: str) -> None:
        super().__init__()
        self.workflow = name
        self.crumb = f"Workflows › {clean(name)}"
        self._seen: tuple[str, int] = ("", 0)
        """The Workflow's resourceVersion and the serial of the index last shown."""
        self._templates = 0
        """How many templates the Workflow had when last derived."""

    def compose_body(self) -> ComposeResult:
        yield LiveTable(COLUMNS, id="workflow-table")
        yield Static("", id="workflow-more", classes="list-message", markup=False)
        yield Static("", id="workflow-message", markup=False)

    def show_snapshot(self, index: SnapshotIndex) -> None:
        self.update_header()
        listed = _listed(index)
        version = workflow_version(index, self.workflow)
        if not self._unchanged(index, version):
            templates = template_rows(index, self.workflow, MAX_TEMPLATES_SHOWN)
            self._templates = templates.total
            self.query_one(LiveTable).sync([Row(line.key, line.cells, line.sort_values) for line in templates.lines])
            every = shell_line(["rlark", "get", "-o", "yaml", "workflow"], [self.workflow])
            self.say("#workflow-more", f"… {templates.more:,} more templates (the first {MAX_TEMPLATES_SHOWN:,} "
                                       f"shown; {every} lists every one)"
                     if templates.more > 0 else "")
        self._seen = (version, index.serial)
        if listed is not None and not listed.error and not self._templates:
            self.say("#workflow-message", f"Workflow {self.workflow} is gone.")
        else:
            _say(self, listed)

    def _unchanged(self, index: SnapshotIndex, version: str) -> bool:
        """The version of the Workflow last shown, and none of its Jobs changed since (a Job whose name begins with
        the Workflow's is taken for one of them)."""
        if not version or version != self._seen[0]:
            return False
        changed = index.rows_changed_since(self._seen[1])
        prefix = self.workflow + "-"
        return changed is not None and not any(name.startswith(prefix) for name in changed)

    def on_live_table_row_selected(self, event: LiveTable.RowSelected) -> None:
        event.stop()
        job = event.row_key.rsplit("/", 1)[-1]
        if job:
            self.post_message(OpenJob(job))
        else:
            self.notify("this template has no Job yet: its row says why it waits", severity="warning")
