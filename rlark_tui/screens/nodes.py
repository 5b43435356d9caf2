"""NodeListScreen (`:nodes`) and the `:ns` / `:ctx` pickers.

Nodes are the platform's Node CRs of every member cluster (namespace `rlark-<id>`), filtered by the
chosen namespace and the `/` filter; values shown are what the Node CR reports, nothing derived.
"""

from __future__ import annotations

from datetime import UTC, datetime

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from rlark_tui.flow.messages import OpenNode
from rlark_tui.screens.base import ListScreen
from rlark_tui.text.sinks import one_line
from rlark_tui.view.index import SnapshotIndex
from rlark_tui.view.nodes import node_rows
from rlark_tui.widgets.live_table import Column, LiveTable, Row

NODE_COLUMNS = (
    Column("name", "NAME"),
    Column("cluster", "CLUSTER", priority=1),
    Column("phase", "PHASE"),
    Column("schedulable", "SCHEDULABLE", priority=2, min_width=5),
    Column("gpu", "GPU FREE/ALLOC"),
    Column("model", "GPU MODEL", priority=3),
    Column("age", "AGE"),
)


class NodeListScreen(ListScreen):
    """The Node CRs (of one cluster when opened from `:clusters`); enter opens a Node, esc returns to the job list."""

    crumb = "Nodes"
    BINDINGS = [
        Binding("N", "sort('name')", "Sort name", show=False),
        Binding("S", "sort('phase')", "Sort phase", show=False),
        Binding("A", "sort('age')", "Sort age", show=False),
    ]
    columns = NODE_COLUMNS
    noun = "Nodes"
    id_prefix = "node"
    view_name = "nodes"

    def __init__(self, cluster: str = "") -> None:
        super().__init__()
        self.cluster = cluster
        """Only this cluster namespace's Nodes (empty: the chosen namespace's, or all)."""
        if cluster:
            self.crumb = f"Nodes of {cluster}"

    def rows(self, index: SnapshotIndex) -> list[Row]:
        lines = node_rows(index, datetime.now(UTC), self.cluster or self.state.namespace)
        return [Row(line.key, line.cells, line.sort_values) for line in lines]

    def empty_text(self) -> str:
        return f"No Nodes in {self.cluster or self.state.namespace or 'any namespace'}."

    def on_live_table_row_selected(self, event: LiveTable.RowSelected) -> None:
        event.stop()
        self.post_message(OpenNode(event.row_key))

    def action_sort(self, column: str) -> None:
        self.query_one(LiveTable).sort_by(column)
        self.keep_view()

    def action_back(self) -> None:
        if self.cluster:  # opened from :clusters: back there
            self.app.pop_screen()
        else:
            self.rlark.run_command("jobs")


class PickerScreen(ModalScreen[str | None]):
    """A small modal list (namespaces or contexts); Enter picks, esc cancels."""

    BINDINGS = [Binding("escape", "dismiss(None)", "Cancel")]

    def __init__(self, title: str, choices: list[str], current: str) -> None:
        super().__init__()
        self.title_text = title
        self.choices = choices
        self.current = current

    def compose(self) -> ComposeResult:
        with Vertical(id="picker-dialog"):
            yield Static(self.title_text, id="picker-title", markup=False)
            # a namespace is the control plane's text: plain (a str prompt is markup), on its one line
            yield OptionList(*[Option(Text(("● " if c == self.current else "  ") + one_line(c)), id=c)
                               for c in self.choices],
                             id="picker-list")

    def on_mount(self) -> None:
        options = self.query_one(OptionList)
        if self.current in self.choices:
            options.highlighted = self.choices.index(self.current)
        options.focus()

    @on(OptionList.OptionSelected)
    def _picked(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(event.option.id)
