"""JobListScreen: every Job of the context, live from the reconciler, updated in place by row key.

Columns: name, display name, type, phase, roles, Pods running/expected, Header node, reason, progress, age (below the
full width display name, Header node, roles and type narrow, then hide, in that order); `/` filters,
shift+letters sort; empty, filtered-out, connecting and control-plane-error states say so in words.
The rows are the index's complete JobRows (view/index.py); this screen maps them to cells. PROGRESS and
REASON (a Pod's failure reason, e.g. OOMKilled) come from the reconciler's PROGRESS and HEALTH reads, subscribed
for the Jobs on screen only (`_follow_screen`). `space` marks Jobs (kept in `state.marked`); `m` compares the
marked Jobs' curves, or opens the Metrics tab; with Jobs marked, `s`, `R` and `ctrl+d` act on all of them (one
confirmation, a result per Job).
"""

from __future__ import annotations

from datetime import UTC, datetime

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.timer import Timer
from textual.widgets import Static

from rlark_tui.flow.messages import (
    BulkAction,
    CloneJob,
    ContextChanged,
    DeleteJob,
    EditJob,
    FocusContext,
    KeepView,
    OpenCheck,
    OpenCompare,
    OpenDiff,
    OpenJob,
    OpenLogs,
    OpenShell,
    OpenTunnels,
    OpenWizard,
    RestartJob,
    StopStartJob,
)
from rlark_tui.flow.polls import HEALTH, PROGRESS
from rlark_tui.screens.base import RlarkScreen, restore_table_view, table_view
from rlark_tui.telemetry.usage import percent_cell
from rlark_tui.text.redact import KnownSecrets, secret_values
from rlark_tui.text.sinks import one_line
from rlark_tui.view.index import UNSETTLED, JobRow, SnapshotIndex, row_key
from rlark_tui.view.jobs import context_cell, progress_note
from rlark_tui.widgets.filter_bar import FilterBar, Matcher
from rlark_tui.widgets.live_table import Column, LiveTable, Row

COLUMNS = (
    Column("name", "NAME"),
    Column("display", "DISPLAY NAME", priority=4),
    Column("type", "TYPE", priority=1, min_width=6),
    Column("phase", "PHASE"),
    Column("roles", "ROLES", priority=2),
    Column("pods", "PODS"),
    Column("gpu", "GPU%", priority=5),
    Column("header", "HEADER NODE", priority=3),
    Column("reason", "REASON", priority=1, min_width=16),
    Column("progress", "PROGRESS"),
    Column("age", "AGE"),
)
CONTEXT_COLUMNS = (Column("context", "CONTEXT"), *COLUMNS)
"""The columns of a list of several contexts (`--context A --context B`, `--all-contexts`)."""
VIEW = "jobs"
"""The job list's name in the view settings."""
CLOCK_CELLS = 2
"""PROGRESS and AGE, the last cells: those that change with the clock alone (an ETA, `(stale)`, an age)."""
MARK = "● "
CLOCK_SECONDS = 0.5
"""How often the clock cells (PROGRESS, AGE) of the rows in view are brought up to date."""
SETTLE_SECONDS = 0.5
"""How long the rows in view stay the same before subscriptions follow them: while the user types a filter or
scrolls, the reads (and their results) for rows only passing through the window wait."""
PHASES = ("running", "pending", "stopped", "failed", "succeeded")


class JobTable(LiveTable):
    """The job list table; phase colours come from its component classes."""

    COMPONENT_CLASSES = LiveTable.COMPONENT_CLASSES | {f"job-table--phase-{p}" for p in PHASES} | {
        "job-table--marked"}


class JobListScreen(RlarkScreen):
    """The first screen: the job list of the current context."""

    crumb = "Jobs"
    shows_every_context = True
    MUTATIONS = frozenset({"stop_start", "delete", "shell", "edit", "restart"})
    BINDINGS = [
        Binding("enter", "open", "Detail", show=False),
        Binding("l", "logs", "Logs"),
        Binding("y", "yaml", "YAML"),
        Binding("d", "describe", "Describe"),
        Binding("s", "stop_start", "Stop/Start"),
        Binding("ctrl+d", "delete", "Delete"),
        Binding("c", "check", "Run check"),
        Binding("x", "shell", "Shell", show=False),
        Binding("F", "tunnels", "Tunnels", show=False),
        Binding("space", "mark", "Mark", show=False),
        Binding("m", "metrics", "Metrics/compare", show=False),
        Binding("D", "diff", "Diff marked", show=False),
        Binding("C", "clone", "Clone", show=False),
        Binding("E", "edit", "Edit & restart", show=False),
        Binding("R", "restart", "Restart", show=False),
        Binding("n", "new_job", "New job"),
        Binding("slash", "filter", "Filter", key_display="/"),
        Binding("ctrl+r", "refresh", "Refresh"),
        Binding("N", "sort('name')", "Sort name", show=False),
        Binding("S", "sort('phase')", "Sort phase", show=False),
        Binding("T", "sort('type')", "Sort type", show=False),
        Binding("P", "sort('pods')", "Sort Pods", show=False),
        Binding("A", "sort('age')", "Sort age", show=False),
        Binding("w", "wide", "Wide columns", show=False),
    ]

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """With several contexts a mutation key is for the row's own context to refuse (the app focuses it, then
        asks its Actions before any dialog): only --readonly hides it here."""
        if self.state.several and action in self.MUTATIONS:
            return not self.state.readonly_everywhere
        return super().check_action(action, parameters)

    def __init__(self) -> None:
        super().__init__()
        self.rows: dict[str, JobRow] = {}
        """The rows of the latest index given (the index's own mapping), by JobRow.key; with several contexts,
        the merged rows of all of them (AppState.merged)."""
        self._seen = 0
        """Serial of that index."""
        self._table_rows: dict[str, tuple[JobRow, tuple[str, str], Row]] = {}
        """Per Job: the JobRow, the clock-driven texts (progress, age) and the table Row made of them."""
        self._watched: dict[str, set[str]] = {PROGRESS: set(), HEALTH: set()}
        """Jobs this screen subscribed per topic (those on screen)."""
        self._message: str | None = None
        self._note: tuple[JobRow, str] | None = None
        """The highlighted row's progress note (`_progress_note`) and the JobRow it was made of."""
        self._note_shown = ""
        """What the note line under the list shows."""
        self._table: JobTable | None = None
        self._pending: set[str] | None = set()
        """Jobs changed since the table was last updated (None: all of them)."""
        self._settle: Timer | None = None
        self._restoring = False
        """True while a saved view is put back (that is no change to keep)."""
        """Runs `_follow_screen` once the rows in view have settled (None: they have)."""

    def compose_body(self) -> ComposeResult:
        yield FilterBar("filter Jobs: text or regex (esc clears)", id="job-filter")
        yield JobTable(CONTEXT_COLUMNS if self.state.several else COLUMNS, id="job-table")
        yield Static("", id="job-list-message", markup=False)
        yield Static("", id="job-list-note", markup=False)

    @property
    def table(self) -> JobTable:
        if self._table is None:
            self._table = self.query_one(JobTable)
        return self._table

    def focus_body(self) -> None:
        self.table.focus()

    def on_mount(self) -> None:
        super().on_mount()
        bar = self.query_one(FilterBar)
        bar.on_close = self.focus_body
        bar.on_change = self._filter_changed
        self.table.on_highlighted = self._update_note
        self.app.theme_changed_signal.subscribe(self, self._theme_changed)
        self.restore_view()
        self.table.focus()
        self._update_message()
        self.set_interval(CLOCK_SECONDS, self._tick_clocks)

    def show_snapshot(self, index: SnapshotIndex) -> None:
        """Only the Jobs the index names as changed are looked at (all of them after a relist). While another
        screen covers this one, the rows are kept up to date but the table waits: repainting a hidden table
        makes Textual repaint those regions of the screen on top (a log pane at 20,000 lines/s)."""
        several = self.state.several
        changed = index.rows_changed_since(self._seen) if self._seen and not several else None
        self._seen = index.serial
        self.rows = self.state.merged.rows if several else index.rows
        if changed is None or self._pending is None:
            self._pending = None
        else:
            self._pending |= changed
        if not self.is_current:
            return
        self.update_header()
        pending, self._pending = self._pending, set()
        now = datetime.now(UTC)
        if pending is None:
            self._table_rows = {name: cached for name, cached in self._table_rows.items() if name in self.rows}
            self.table.sync([self._table_row(row, now) for row in self.rows.values()])
        elif pending:
            for name in pending:
                if name not in self.rows:
                    self._table_rows.pop(name, None)
            self.table.update([self._table_row(self.rows[name], now) for name in pending if name in self.rows],
                              [name for name in pending if name not in self.rows])
        self._update_message()
        if self._settle is None:
            self._follow_screen()
        wanted = self.state.wanted_job
        if wanted is not None and self.table.select_key(self._key(wanted)):
            self.state.wanted_job = None

    def on_context_changed(self, _message: ContextChanged) -> None:
        """Another context: nothing of the previous one stays listed (nor marked, nor polled)."""
        self.state.marked.clear()
        self._follow_screen(shown=False)
        self.rows = {}
        self._seen = 0
        self._table_rows.clear()
        self._pending = set()
        self.table.sync([])
        self.update_header()

    def _theme_changed(self, _theme) -> None:
        """The phase colours are baked into the cells: build every row again in the new theme's colours."""
        self.repaint()

    def repaint(self) -> None:
        """Build every row again (a new theme; another context focused, whose marks the rows show)."""
        self._table_rows.clear()
        self._pending = None
        if self.state.index is not None:
            self.show_snapshot(self.state.index)

    def _table_row(self, row: JobRow, now: datetime) -> Row:
        """The table row of a JobRow; reused as long as the JobRow and its clock-driven texts are unchanged (a new
        age alone only replaces the clock cells)."""
        clock = (row.progress_text(now.timestamp()), row.age(now))
        key = row.key
        cached = self._table_rows.get(key)
        if cached is not None and cached[0] is row:
            if cached[1] == clock:
                return cached[2]
            old = cached[2]
            table_row = Row(old.key, old.cells[:-CLOCK_CELLS] + clock, old.sort_values, old.search)
        else:
            table_row = Row(key, self._cells(row, clock), self._sort_values(row), row.search_fields())
        self._table_rows[key] = (row, clock, table_row)
        return table_row

    def _cells(self, row: JobRow, clock: tuple[str, str]) -> tuple:
        lowered = row.phase.lower()
        style = (self.table.get_component_rich_style(f"job-table--phase-{lowered}", partial=True)
                 if lowered in PHASES else "")
        phase = Text(row.phase, style=style)
        name: str | Text = row.name
        if row.name in self.state.marked and row.context in ("", self.state.context):
            name = Text(MARK + row.name, style=self.table.get_component_rich_style("job-table--marked",
                                                                                   partial=True))
        first = (context_cell(row.context), name) if self.state.several else (name,)
        return (*first, row.display_name, row.job_type, phase, row.roles, row.pods, percent_cell(row.gpu_percent),
                row.header_node, row.reason_cell, *clock)

    def _sort_values(self, row: JobRow) -> tuple:
        created = row.created_at
        return ((row.context,) if self.state.several else ()) + (row.name, row.display_name, row.job_type, row.phase, row.roles,
                (row.pods_running, row.pods_expected), -1.0 if row.gpu_percent is None else row.gpu_percent,
                row.header_node, None, None,
                -created.timestamp() if created else None)

    def _tick_clocks(self) -> None:
        """Ages and PROGRESS move on with the clock alone: each tick brings the rows in view up to date. The
        others' clock cells are only drawn once they come into view (`_window_changed`), and sort by the
        creation time, not by the text: ticking 5,000 rows kept the UI thread from keys and filter."""
        if self.rows and self.is_current:
            self._update_clocks(self.table.visible_keys)

    def _update_clocks(self, names: list[str]) -> None:
        now = datetime.now(UTC)
        moved = []
        for name in names:
            row = self.rows.get(name)
            if row is None:
                continue
            before = self._table_rows.get(name)
            table_row = self._table_row(row, now)  # the same Row while its clock texts are the same
            if before is None or before[2] is not table_row:
                moved.append(table_row)
        if moved:
            self.table.update(moved)

    def _follow_screen(self, shown: bool | None = None) -> None:
        """The one place subscriptions follow what is on screen: PROGRESS for the Running Jobs in view, HEALTH (in
        brief) for the Running, Pending and Failed ones, and nothing while another screen covers this one. Runs
        whenever that may have changed: a new index, the table's window (rows, filter, sort, scroll, size), this
        screen covered or shown again; a change of the window waits until it settles (`_window_changed`)."""
        if self._settle is not None:
            self._settle.stop()
            self._settle = None
        if shown is None:
            shown = self.app.screen is self
        focused = ("", self.state.context)  # the reads go to the focused context's reconciler
        phases = {row.name: row.phase for key in self.table.visible_keys
                  if (row := self.rows.get(key)) is not None and row.context in focused} if shown else {}
        for topic, wanted in ((PROGRESS, {name for name, phase in phases.items() if phase == "Running"}),
                              (HEALTH, {name for name, phase in phases.items() if phase in UNSETTLED})):
            watched = self._watched[topic]
            for name in watched - wanted:
                self.intents.unsubscribe(topic, name)
            for name in wanted - watched:
                self.intents.subscribe(topic, name)
            self._watched[topic] = wanted

    @on(LiveTable.WindowChanged, "#job-table")
    def _window_changed(self, _event: LiveTable.WindowChanged) -> None:
        """The clock cells of the rows that came into view are brought up to date at once; subscriptions follow the
        window SETTLE_SECONDS after its last change (each keystroke starts again)."""
        if self.is_current:
            self._update_clocks(self.table.visible_keys)
        if self._settle is not None:
            self._settle.stop()
        self._settle = self.set_timer(SETTLE_SECONDS, self._follow_screen)

    def on_screen_suspend(self) -> None:
        """Another screen covers the list: its rows are not on screen, so nothing is polled for them."""
        self._follow_screen(shown=False)

    def on_unmount(self) -> None:
        self._follow_screen(shown=False)
        super().on_unmount()

    def _update_message(self) -> None:
        message = self.query_one("#job-list-message", Static)
        state = self.state
        matcher = self.query_one(FilterBar).matcher
        text = ""
        control = state.index.snapshot.sources.get("control plane") if state.index is not None else None
        if state.index is None or (not self.rows and control is not None and control.status == "stale"):
            text = f"Connecting to {one_line(state.context) or 'the control plane'}…"
        elif control is not None and control.status == "disconnected":
            text = f"Cannot list Jobs from the control plane: {one_line(control.reason) or 'no answer'} — retrying."
        elif not self.rows:
            text = (f"No Jobs in context {one_line(state.context)}. Submit one with `rlark submit -f FILE`; "
                    "the list updates by itself.")
        elif not self.table.row_count:
            text = f"No Jobs match the filter {matcher.text!r} (esc in the filter clears it)."
        if matcher.error:
            text = (text + "\n" if text else "") + f"filter: {matcher.error}"
        if self._message != text:
            self._message = text
            message.update(text)
            message.set_class(bool(text), "-shown")
        self._update_note()

    def _update_note(self) -> None:
        """The highlighted row's progress note on the line under the list. Once shown, the line stays (blank for a
        row without a note), and its text changes without a layout: shown and hidden at each j or k between rows
        with and without one, it laid out the whole screen again, two frames and seven times the UI thread's
        work a key over 5,000 Jobs."""
        note = self._progress_note()
        if note == self._note_shown:
            return
        line = self.query_one("#job-list-note", Static)
        if note and not line.has_class("-shown"):
            line.add_class("-shown")
        line.update(note, layout=False)
        self._note_shown = note

    def _progress_note(self) -> str:
        """Why the highlighted row's PROGRESS is `?` (view.jobs.progress_note), "" when it is not; made again only
        for another JobRow (the list's keys and snapshots pass here)."""
        key = self.table.selected_key
        row = self.rows.get(key) if key is not None else None
        progress = row.progress if row is not None else None
        if row is None or progress is None or progress.row is not None or not progress.error:
            return ""
        if self._note is None or self._note[0] is not row:
            index = self.state.index
            job = index.job(row.name) if index is not None and row.context in ("", self.state.context) else None
            known = KnownSecrets(secret_values(job.raw) if job is not None else ())
            self._note = (row, progress_note(row.name, progress.error, known))
        return self._note[1]

    # ---- keys ------------------------------------------------------------------------------
    def _key(self, name: str) -> str:
        """The row key of Job `name` of the focused context."""
        return row_key(self.state.context, name) if self.state.several else name

    def _marked(self) -> list[str]:
        """The marked Jobs listed here (of the focused context)."""
        return [name for name in self.state.marked if self._key(name) in self.rows]

    @property
    def selected_job(self) -> str | None:
        key = self.table.selected_key
        row = self.rows.get(key) if key is not None else None
        return row.name if row is not None else key

    def _need_job(self) -> str | None:
        """The Job under the cursor; with several contexts its context is focused first, so what is posted next
        goes to that Job's own context."""
        key = self.table.selected_key
        row = self.rows.get(key) if key is not None else None
        if row is not None and row.context and row.context != self.state.context:
            self.post_message(FocusContext(row.context))
        name = self.selected_job
        if name is None:
            self.notify("No Job selected", severity="warning")
        return name

    @on(LiveTable.RowSelected, "#job-table")
    def _row_selected(self, event: LiveTable.RowSelected) -> None:
        self.action_open()

    def action_open(self, tab: str = "workers") -> None:
        name = self._need_job()
        if name:
            self.post_message(OpenJob(name, tab))

    def action_logs(self) -> None:
        name = self._need_job()
        if name:
            self.post_message(OpenLogs(name))

    def action_yaml(self) -> None:
        self.action_open("yaml")

    def action_describe(self) -> None:
        self.action_open("overview")

    def refusal(self, key: str) -> str | None:
        """With Jobs marked, the bulk keys would have acted on all of them."""
        action = self.mutation_of(key)
        marked = self._marked()
        if marked and action in ("stop_start", "delete", "restart"):
            return f"{self.JOB_VERBS[action]} {len(marked)} marked jobs"
        return super().refusal(key)

    def _bulk(self, verb: str) -> bool:
        """With Jobs marked, `s`, `R` and `ctrl+d` act on all of them (k9s's marks): True when posted."""
        marked = self._marked()
        if marked:
            self.post_message(BulkAction(verb, marked))
        return bool(marked)

    def action_stop_start(self) -> None:
        if self._bulk("stop_start"):
            return
        name = self._need_job()
        if name:
            self.post_message(StopStartJob(name))

    def action_delete(self) -> None:
        if self._bulk("delete"):
            return
        name = self._need_job()
        if name:
            self.post_message(DeleteJob(name))

    def action_check(self) -> None:
        name = self._need_job()
        if name:
            self.post_message(OpenCheck(name))

    def action_shell(self) -> None:
        name = self._need_job()
        if name:
            self.post_message(OpenShell(name))

    def action_tunnels(self) -> None:
        name = self._need_job()
        if name:
            self.post_message(OpenTunnels(name))

    def action_mark(self) -> None:
        """k9s's space: mark or unmark the Job under the cursor, then move down. Marks are of one context: on a
        row of another one, that context is focused (the marks cleared) and space marks from then on."""
        key = self.table.selected_key
        row = self.rows.get(key) if key is not None else None
        if row is not None and row.context and row.context != self.state.context:
            self.post_message(FocusContext(row.context))
            self.notify(f"marks are of one context: {row.context} now, space marks", timeout=3)
            return
        name = self._need_job()
        if not name:
            return
        marked = self.state.marked
        if name in marked:
            marked.remove(name)
        else:
            marked.append(name)
        self.show_marks([name])
        self.table.action_cursor_down()

    def show_marks(self, names: list[str]) -> None:
        """Paint the mark of these Jobs again (after `space`, or a bulk action unmarked the ones it did)."""
        keys = [self._key(name) for name in names]
        for key in keys:
            self._table_rows.pop(key, None)
        now = datetime.now(UTC)
        self.table.update([self._table_row(self.rows[key], now) for key in keys if key in self.rows])

    def action_metrics(self) -> None:
        """Compare the marked Jobs' curves; with none marked, the Metrics tab of the Job under the cursor."""
        marked = self._marked()
        if marked:
            self.post_message(OpenCompare(marked))
        else:
            self.action_open("metrics")

    def action_diff(self) -> None:
        """What changed between the two marked Jobs, or the one marked Job and the Job under the cursor."""
        marked = self._marked()
        current = self.selected_job
        if len(marked) == 1 and current and current != marked[0]:
            marked.append(current)
        if len(marked) != 2:
            self.notify("diff: mark two Jobs with space (or one, then put the cursor on the other)",
                        severity="warning")
            return
        self.post_message(OpenDiff(*marked))

    def action_clone(self) -> None:
        name = self._need_job()
        if name:
            self.post_message(CloneJob(name))

    def action_edit(self) -> None:
        name = self._need_job()
        if name:
            self.post_message(EditJob(name))

    def action_restart(self) -> None:
        if self._bulk("restart"):
            return
        name = self._need_job()
        if name:
            self.post_message(RestartJob(name))

    def action_new_job(self) -> None:
        """The create-job wizard (its Submit goes through rlark_tui.flow.actions, so read-only still refuses)."""
        self.post_message(OpenWizard())

    def action_filter(self) -> None:
        self.query_one(FilterBar).open()

    def action_refresh(self) -> None:
        self.rlark.refresh_now()

    def action_sort(self, column: str) -> None:
        self.table.sort_by(column)
        direction = "descending" if self.table.sort_reverse else "ascending"
        self.notify(f"sorted by {column} ({direction})", timeout=2)
        self._keep_view()

    def action_wide(self) -> None:
        """`w`: every column at its full width (the rest scrolls sideways), or fitted to the terminal again."""
        self.table.set_wide(not self.table.wide)
        self.notify("wide columns" if self.table.wide else "columns fit the terminal", timeout=2)
        self._keep_view()

    def restore_view(self) -> None:
        """The context's saved sort, wide columns and filter (once the app has read them)."""
        views = self.state.views
        if views is None:
            return
        self._restoring = True
        try:
            restore_table_view(self.table, self.query_one(FilterBar), views.table(VIEW),
                               CONTEXT_COLUMNS if self.state.several else COLUMNS)
        finally:
            self._restoring = False

    def _keep_view(self) -> None:
        if not self._restoring:
            self.post_message(KeepView(VIEW, table_view(self.table, self.query_one(FilterBar))))

    def _filter_changed(self, matcher: Matcher) -> None:
        """Runs in the filter's value watcher, so the narrowed list is painted with the echo of the key."""
        self.table.set_filter(matcher)
        self._update_message()
        self._keep_view()
