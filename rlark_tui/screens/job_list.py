"""JobListScreen: every Job of the context, live from the reconciler, updated in place by row key.

Columns: name, display name, type, phase, roles, Pods ready/expected, Header node, age; `/` filters,
shift+letters sort; empty, filtered-out, connecting and control-plane-error states say so in words.
"""

from __future__ import annotations

from datetime import datetime, timezone

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import DataTable, Static

from rlark_tui.screens.base import RlarkScreen
from rlark_tui.model.timefmt import parse_time
from rlark_tui.screens.view_model import JobRow, RowCache, SnapshotIndex, age, job_rows
from rlark_tui.widgets.filter_bar import FilterBar
from rlark_tui.widgets.live_table import Column, LiveTable, Row

COLUMNS = (
    Column("name", "NAME"),
    Column("display", "DISPLAY NAME"),
    Column("type", "TYPE"),
    Column("phase", "PHASE"),
    Column("roles", "ROLES"),
    Column("pods", "PODS"),
    Column("header", "HEADER NODE"),
    Column("age", "AGE"),
)
PHASES = ("running", "pending", "stopped", "failed", "succeeded")


class JobTable(LiveTable):
    """The job list table; phase colours come from its component classes."""

    COMPONENT_CLASSES = LiveTable.COMPONENT_CLASSES | {f"job-table--phase-{p}" for p in PHASES}


class JobListScreen(RlarkScreen):
    """The first screen: the job list of the current context."""

    crumb = "Jobs"
    MUTATIONS = frozenset({"stop_start", "delete"})
    BINDINGS = [
        Binding("enter", "open", "Detail", show=False),
        Binding("l", "logs", "Logs"),
        Binding("y", "yaml", "YAML"),
        Binding("d", "describe", "Describe"),
        Binding("s", "stop_start", "Stop/Start"),
        Binding("ctrl+d", "delete", "Delete"),
        Binding("c", "check", "Run check"),
        Binding("n", "new_job", "New job"),
        Binding("slash", "filter", "Filter", key_display="/"),
        Binding("ctrl+r", "refresh", "Refresh"),
        Binding("N", "sort('name')", "Sort name", show=False),
        Binding("S", "sort('phase')", "Sort phase", show=False),
        Binding("T", "sort('type')", "Sort type", show=False),
        Binding("P", "sort('pods')", "Sort Pods", show=False),
        Binding("A", "sort('age')", "Sort age", show=False),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.rows: dict[str, JobRow] = {}
        self._row_cache: RowCache = {}
        self._table_rows: dict[str, tuple[JobRow, str, Row]] = {}

    def compose_body(self) -> ComposeResult:
        yield FilterBar("filter Jobs: text or regex (esc clears)", id="job-filter")
        yield JobTable(COLUMNS, id="job-table")
        yield Static("", id="job-list-message", markup=False)

    @property
    def table(self) -> JobTable:
        return self.query_one(JobTable)

    def focus_body(self) -> None:
        self.table.focus()

    def on_mount(self) -> None:
        super().on_mount()
        self.query_one(FilterBar).on_close = self.focus_body
        self.table.focus()
        self._update_message(0)
        self.set_interval(5, self._tick_ages)

    def show_snapshot(self, index: SnapshotIndex) -> None:
        self.update_header()
        self.rows = {row.name: row for row in job_rows(index, self._row_cache)}
        for gone in [name for name in self._table_rows if name not in self.rows]:
            del self._table_rows[gone]
        self._render_rows()

    def _render_rows(self) -> None:
        now = datetime.now(timezone.utc)
        matcher = self.query_one(FilterBar).matcher
        shown = [row for row in self.rows.values() if matcher.matches_any(row.search_fields())]
        self.table.sync(self._table_row(row, now) for row in shown)
        self._update_message(len(shown))

    def _table_row(self, row: JobRow, now: datetime) -> Row:
        """The table row of a JobRow; reused as long as the JobRow and its age text are unchanged."""
        shown_age = age(row.created, now)
        cached = self._table_rows.get(row.name)
        if cached is not None and cached[0] is row and cached[1] == shown_age:
            return cached[2]
        table_row = Row(row.name, self._cells(row, shown_age), self._sort_values(row))
        self._table_rows[row.name] = (row, shown_age, table_row)
        return table_row

    def _cells(self, row: JobRow, shown_age: str) -> tuple:
        lowered = row.phase.lower()
        style = (self.table.get_component_rich_style(f"job-table--phase-{lowered}", partial=True)
                 if lowered in PHASES else "")
        phase = Text(row.phase, style=style)
        return (row.name, row.display_name, row.job_type, phase, row.roles, row.pods,
                row.header_node, shown_age)

    @staticmethod
    def _sort_values(row: JobRow) -> tuple:
        created = parse_time(row.created)
        return (row.name, row.display_name, row.job_type, row.phase, row.roles,
                (row.pods_ready, row.pods_expected), row.header_node,
                -created.timestamp() if created else None)

    def _tick_ages(self) -> None:
        if self.rows:
            self._render_rows()

    def _update_message(self, shown: int) -> None:
        message = self.query_one("#job-list-message", Static)
        app = self.rlark
        text = ""
        if app.index is None:
            text = f"Connecting to {app.context_name or 'the control plane'}…"
        else:
            control = app.index.snapshot.sources.get("control plane")
            if control is not None and control.status == "disconnected":
                text = f"Cannot reach the control plane: {control.reason or 'no answer'} — retrying."
            elif not self.rows:
                text = (f"No Jobs in context {app.context_name}. Submit one with `rlark submit -f FILE`; "
                        "the list updates by itself.")
            elif not shown:
                text = f"No Jobs match the filter {self.query_one(FilterBar).value!r} (esc in the filter clears it)."
        matcher = self.query_one(FilterBar).matcher
        if matcher.error:
            text = (text + "\n" if text else "") + f"filter: {matcher.error}"
        message.update(text)
        message.set_class(bool(text), "-shown")

    # ---- keys ------------------------------------------------------------------------------
    @property
    def selected_job(self) -> str | None:
        return self.table.selected_key

    def _need_job(self) -> str | None:
        name = self.selected_job
        if name is None:
            self.notify("No Job selected", severity="warning")
        return name

    @on(DataTable.RowSelected, "#job-table")
    def _row_selected(self, event: DataTable.RowSelected) -> None:
        self.action_open()

    def action_open(self, tab: str = "workers") -> None:
        name = self._need_job()
        if name:
            self.rlark.open_job(name, tab)

    def action_logs(self) -> None:
        name = self._need_job()
        if name:
            self.rlark.open_logs(name, None)

    def action_yaml(self) -> None:
        self.action_open("yaml")

    def action_describe(self) -> None:
        self.action_open("overview")

    def action_stop_start(self) -> None:
        name = self._need_job()
        if name:
            self.rlark.request_stop_start(name)

    def action_delete(self) -> None:
        name = self._need_job()
        if name:
            self.rlark.request_delete(name)

    def action_check(self) -> None:
        name = self._need_job()
        if name:
            self.rlark.open_check(name)

    def action_new_job(self) -> None:
        """The create-job wizard (its Submit goes through rlark_tui.actions, so read-only still refuses)."""
        self.rlark.open_wizard()

    def action_filter(self) -> None:
        self.query_one(FilterBar).open()

    def action_refresh(self) -> None:
        self.rlark.refresh_now()

    def action_sort(self, column: str) -> None:
        self.table.sort_by(column)
        direction = "descending" if self.table.sort_reverse else "ascending"
        self.notify(f"sorted by {column} ({direction})", timeout=2)

    @on(FilterBar.Applied, "#job-filter")
    def _filter_changed(self, event: FilterBar.Applied) -> None:
        self._render_rows()
