"""CheckpointsView: the Job detail's Checkpoints tab. A line saying where the checkpoints are (or why they cannot be
listed, or that they are being read) over a table of every `global_step_<N>`: its size, its time, complete or what
is missing, the latest complete one marked, as `rlark checkpoints` prints them (telemetry.checkpoints.table_rows).
It only renders what the screen gives it; ctrl+r asks the screen to read again (`CheckpointsView.Reload`).
"""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.message import Message
from textual.widgets import Static

from rlark_tui.telemetry.checkpoints import Checkpoint, CheckpointRead, latest_complete, table_rows
from rlark_tui.text.sanitize import clean
from rlark_tui.widgets.live_table import Column, LiveTable, Row

COLUMNS = (Column("name", "NAME"), Column("step", "STEP", priority=3), Column("size", "SIZE", priority=2),
           Column("time", "TIME", priority=2, min_width=20), Column("state", "STATE", priority=1, min_width=26))
"""telemetry.checkpoints.TABLE_HEADERS. At 80 columns the step (in the name already) hides first, then STATE narrows
(the status line and the resume dialog say in full what an incomplete one misses), then SIZE and TIME go."""
HINT = "u: resume from the selected one · ctrl+r: read again"
SHOWN_INCOMPLETE = 3
"""The status line names the newest incomplete checkpoints, at most this many, with what each misses."""


def one_line(text: str) -> str:
    """An error as one line: its first line, control characters removed."""
    first = clean(text).strip().splitlines()
    return first[0] if first else ""


class CheckpointsView(Vertical):
    """The status line and the table; `selected` is the checkpoint under the cursor."""

    BINDINGS = [Binding("ctrl+r", "reload", "Reload checkpoints")]

    class Reload(Message):
        """The user asked to read the checkpoints again."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.read: CheckpointRead | None = None

    def compose(self) -> ComposeResult:
        yield Static("", id="checkpoints-status", markup=False)
        yield LiveTable(COLUMNS, id="checkpoints-table")

    def on_mount(self) -> None:
        self.table.sort_column = "step"
        self.show_reading()

    @property
    def table(self) -> LiveTable:
        return self.query_one(LiveTable)

    def _status(self, text: str, error: bool = False) -> None:
        status = self.query_one("#checkpoints-status", Static)
        status.update(Text(clean(text)))
        status.set_class(error, "-error")

    def show_reading(self) -> None:
        """A read is on its way: what was shown stays, the line says so."""
        where = f" at {self.read.where.path}" if self.read is not None else ""
        self._status(f"reading the checkpoints{where} (the Header log's resolved config, then list-files in its "
                     "Pod)…")

    def show_error(self, error: str) -> None:
        self.read = None
        self.table.sync([])
        self._status(one_line(error), error=True)

    def show_read(self, read: CheckpointRead) -> None:
        """The rows of `read`; the first read puts the cursor on the latest complete checkpoint."""
        first, self.read = self.read is None, read
        latest = latest_complete(list(read.found))
        head = f"location: {read.where.path} ({read.where.family}, {read.listed_in})"
        if not read.found:
            self._status(f"{head}\nno checkpoints yet")
        else:
            incomplete = [f"{c.name} (missing {', '.join(c.missing)})" for c in read.found if not c.complete]
            more = f", and {len(incomplete) - SHOWN_INCOMPLETE} more" if len(incomplete) > SHOWN_INCOMPLETE else ""
            self._status(f"{head}\n{len(read.found)} checkpoint(s), latest complete: "
                         f"{latest.name if latest else 'none'} · {HINT}"
                         + (f"\nincomplete: {'; '.join(incomplete[-SHOWN_INCOMPLETE:])}{more}" if incomplete else ""))
        self.table.sync(Row(c.name, tuple(cells), (c.name, c.step, c.bytes, c.at, cells[4]))
                        for c, cells in zip(read.found, table_rows(read.found)))
        if latest is not None and first:
            self.table.select_key(latest.name)

    @property
    def selected(self) -> Checkpoint | None:
        key = self.table.selected_key
        found = self.read.found if self.read is not None else ()
        return next((c for c in found if c.name == key), None)

    def shown_text(self) -> str:
        """The status line and every row as plain text (what the user reads), for tests."""
        status = str(self.query_one("#checkpoints-status", Static).render())
        rows = ["  ".join(str(cell) for cell in self.table.get_row_at(i)) for i in range(self.table.row_count)]
        return "\n".join([status, *rows])

    def action_reload(self) -> None:
        self.post_message(self.Reload())
