"""ClustersScreen (`:clusters`): per member cluster, Nodes online/total, GPUs free/total by GPU model, running
Jobs and region, as the console's cluster overview (ClusterManagement.tsx, Overview.tsx) counts them from the
Node CRs (view/nodes.py); enter opens `:nodes` filtered to that cluster."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import Static

from rlark_tui.flow.messages import OpenNodes
from rlark_tui.screens.base import TableScreen
from rlark_tui.view.index import SnapshotIndex
from rlark_tui.view.nodes import cluster_rows
from rlark_tui.widgets.live_table import Column, LiveTable, Row

COLUMNS = (
    Column("cluster", "CLUSTER"),
    Column("nodes", "NODES ONLINE/TOTAL"),
    Column("gpus", "GPUS FREE/TOTAL"),
    Column("jobs", "RUNNING JOBS"),
    Column("region", "REGION"),
)


class ClustersScreen(TableScreen):
    crumb = "Clusters"
    BINDINGS = [Binding("escape", "back", "Back")]

    def compose_body(self) -> ComposeResult:
        yield LiveTable(COLUMNS, id="cluster-table")
        yield Static("", id="cluster-message", markup=False)

    def show_snapshot(self, index: SnapshotIndex) -> None:
        self.update_header()
        rows = cluster_rows(index)
        self.query_one(LiveTable).sync(
            Row(r.cluster, (r.cluster, f"{r.nodes_online}/{r.nodes_total}", r.gpu_text, str(r.running_jobs),
                            r.region), (r.cluster, r.nodes_online, r.gpu_free, r.running_jobs, r.region))
            for r in rows)
        self.query_one("#cluster-message", Static).update("" if rows else "No member clusters (no Node CRs).")

    def on_live_table_row_selected(self, event: LiveTable.RowSelected) -> None:
        event.stop()
        self.post_message(OpenNodes(event.row_key))

    def action_back(self) -> None:
        self.rlark.run_command("jobs")
