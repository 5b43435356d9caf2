"""`:records`: the saved run-check records of this machine (the state dir's `checks/`, read by the app's worker) and
the Jobs that carry a saved check's summary (annotation rlark.io/check-summary, from the snapshot: what another
shift saved); `enter` opens a record (its markdown), or the live run check of a Job whose record is elsewhere."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.widgets import Static

from rlark_tui.flow.messages import LoadRecords, LoadRecordText, OpenCheck, RecordsLoaded, RecordTextLoaded
from rlark_tui.screens.base import RlarkScreen, TableScreen
from rlark_tui.text.sanitize import clean
from rlark_tui.view.index import SnapshotIndex
from rlark_tui.view.records import ON_JOB, RECORD, record_rows
from rlark_tui.view.yamltab import shown_part
from rlark_tui.widgets.live_table import Column, LiveTable, Row

if TYPE_CHECKING:
    from rlark_tui.checks.records import SavedRecord

COLUMNS = (
    Column("job", "JOB"),
    Column("checked", "CHECKED"),
    Column("result", "RESULT"),
    Column("where", "WHERE", priority=1),
)


class RecordsScreen(TableScreen):
    crumb = "Run-check records"
    BINDINGS = [Binding("escape", "back", "Back"), Binding("ctrl+r", "reload", "Reload")]

    def __init__(self) -> None:
        super().__init__()
        self.records: list[SavedRecord] = []
        self._index: SnapshotIndex | None = None

    def compose_body(self) -> ComposeResult:
        yield LiveTable(COLUMNS, id="records-table")
        yield Static("", id="records-message", markup=False)

    def on_mount(self) -> None:
        self.action_reload()

    def action_reload(self) -> None:
        self.post_message(LoadRecords(self))

    def show_snapshot(self, index: SnapshotIndex) -> None:
        self.update_header()
        self._index = index
        self._show()

    def on_records_loaded(self, message: RecordsLoaded) -> None:
        self.records = message.records
        self._show()

    def _show(self) -> None:
        rows = record_rows(self.records, self._index, datetime.now(UTC))
        self.query_one(LiveTable).sync([Row(line.key, line.cells, line.sort_values) for line in rows])
        message = "" if rows else ("No saved run-check records here and no Job carries a summary: `c` on a Job, "
                                   "then ctrl+s, saves one.")
        self.say("#records-message", message)

    def on_live_table_row_selected(self, event: LiveTable.RowSelected) -> None:
        event.stop()
        key = event.row_key
        if key.startswith(RECORD):
            self.app.push_screen(RecordViewScreen(key[len(RECORD):]))
        else:
            self.post_message(OpenCheck(key[len(ON_JOB):]))

    def action_back(self) -> None:
        self.rlark.run_command("jobs")


class RecordViewScreen(RlarkScreen):
    """One saved record's markdown, as saved (secrets already masked), read by the app's worker."""

    BINDINGS = [Binding("escape", "app.pop_screen", "Back")]

    def __init__(self, path: str) -> None:
        super().__init__()
        self.path = path
        self.crumb = f"Records › {clean(path.rsplit('/', 1)[-1])}"

    def compose_body(self) -> ComposeResult:
        with VerticalScroll(id="record-scroll"):
            yield Static("Reading the record…", id="record-text", markup=False)

    def on_mount(self) -> None:
        super().on_mount()
        self.post_message(LoadRecordText(self, self.path))
        self.focus_body()

    def focus_body(self) -> None:
        self.query_one("#record-scroll").focus()

    def show_snapshot(self, index: SnapshotIndex) -> None:
        self.update_header()

    def on_record_text_loaded(self, message: RecordTextLoaded) -> None:
        """The record's first YAML_LINES lines, each cut, and a line counting the rest: a record is up to 1 MiB,
        and 512,000 lines of it laid out whole took the UI thread 70 s."""
        text = message.error
        if not text:
            shown, rest = shown_part(message.text, f"the whole record is {self.path}")
            text = shown.rstrip("\n") + "\n" + rest if rest else shown
        self.query_one("#record-text", Static).update(clean(text))
