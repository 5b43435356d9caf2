"""NodeDetailScreen (`:nodes` → enter): one Node CR as the console's NodeDetailReal shows it — metadata (city,
category, GPU and device models), conditions, capacity / allocatable / reserved / free, image pull progress, labels,
events, and the Workers on it across Jobs (enter opens the Job). view/nodes.py derives it from the index."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.widgets import Static

from rlark_tui.flow.messages import OpenJob
from rlark_tui.model import nodeinfo
from rlark_tui.screens.base import TableScreen
from rlark_tui.text.sinks import cut, one_line
from rlark_tui.view.index import SnapshotIndex
from rlark_tui.view.nodes import node_detail
from rlark_tui.widgets.live_table import Column, LiveTable, Row

WORKER_COLUMNS = (
    Column("worker", "WORKER"),
    Column("job", "JOB"),
    Column("role", "ROLE"),
    Column("phase", "PHASE"),
    Column("ip", "IP"),
    Column("requests", "REQUESTS"),
)


class NodeDetailScreen(TableScreen):
    crumb = "Node"
    BINDINGS = [Binding("escape", "back", "Back")]

    def __init__(self, key: str) -> None:
        super().__init__()
        self.node_key = key
        self.detail: nodeinfo.NodeDetail | None = None
        self._summary_shown: str | None = None

    def compose_body(self) -> ComposeResult:
        with VerticalScroll(id="node-detail-summary"):
            yield Static("", id="node-detail-text", markup=False)
        yield Static("Workers", id="node-detail-workers-title", markup=False)
        yield LiveTable(WORKER_COLUMNS, id="node-worker-table")

    def show_snapshot(self, index: SnapshotIndex) -> None:
        self.update_header()
        detail = node_detail(index, self.node_key)
        text = self.query_one("#node-detail-text", Static)
        if detail is None:
            text.update(f"Node {one_line(self.node_key)} is not in the current snapshot (deleted, or another context).")
            self.query_one(LiveTable).sync([])
            return
        self.detail = detail
        self.crumb = f"Node {detail.name}"
        summary = self._summary(detail)
        if summary != self._summary_shown:  # laid out again only when it changed, not at every snapshot
            self._summary_shown = summary
            text.update(summary)
        self.query_one("#node-detail-workers-title", Static).update(
            f"Workers on {one_line(detail.name)} ({len(detail.workers)}; enter opens the Job)")
        self.query_one(LiveTable).sync(
            Row(w.key, (w.name, w.job, w.role, w.phase, w.ip, ", ".join(f"{k}={v}" for k, v in w.requests) or "-"),
                (w.name, w.job, w.role, w.phase, w.ip, "")) for w in detail.workers)

    @staticmethod
    def _summary(detail: nodeinfo.NodeDetail) -> str:
        """`rlark describe node`'s text without its Workers (the table shows them), each line to sinks.FIELD_CHARS
        (a member cluster's labels, capacities and conditions: ten labels of 100 KB held the UI thread 4.7 s to
        open the detail)."""
        text = nodeinfo.describe_node_text(detail)
        before, marker, after = text.partition("\nWorkers (")
        lines = before.split("\n")
        if marker:
            rest = after.split("\n")
            i = 1
            while i < len(rest) and rest[i].startswith("  "):
                i += 1
            lines += rest[i:]
        return "\n".join(map(cut, lines))

    def on_live_table_row_selected(self, event: LiveTable.RowSelected) -> None:
        event.stop()
        worker = next((w for w in (self.detail.workers if self.detail else ()) if w.key == event.row_key), None)
        if worker is not None:
            self.post_message(OpenJob(worker.job))

    def action_back(self) -> None:
        self.app.pop_screen()
