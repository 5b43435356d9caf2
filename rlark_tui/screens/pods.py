"""`:pods`: every Pod of every Job in scope (the chosen namespace, else all) with its Job, role, Node, phase, failure
reason and restarts, `/` filters, `enter` opens that Pod's log; `:events`: the Tasks' recent events (about the
Task or one of its Pods, as the platform reports them), newest first, `enter` opens the Job.

Everything comes from the snapshot (view/pods.py derives the rows): Pod CRs and Tasks from the watches, reason and restarts from the reconciler's
HEALTH read, subscribed here for the Jobs whose Pods may be unwell while `:pods` is shown.
"""

from __future__ import annotations

from datetime import UTC, datetime

from rlark_tui.flow.messages import OpenJob, OpenLogs
from rlark_tui.flow.polls import HEALTH
from rlark_tui.model.logtarget import Scope
from rlark_tui.screens.base import ListScreen
from rlark_tui.view.index import UNSETTLED, SnapshotIndex
from rlark_tui.view.pods import event_rows, pod_rows
from rlark_tui.widgets.live_table import Column, LiveTable, Row

POD_COLUMNS = (
    Column("job", "JOB"),
    Column("pod", "POD"),
    Column("role", "ROLE", priority=2),
    Column("node", "NODE", priority=1),
    Column("phase", "PHASE"),
    Column("reason", "REASON"),
    Column("restarts", "RESTARTS", priority=3, min_width=4),
)
EVENT_COLUMNS = (
    Column("time", "LAST SEEN"),
    Column("job", "JOB"),
    Column("type", "TYPE", priority=2),
    Column("reason", "REASON"),
    Column("object", "OBJECT", priority=1),
    Column("message", "MESSAGE"),
)
HEALTH_JOBS = 50
"""At most this many Jobs' health is read while `:pods` is shown."""


class PodsScreen(ListScreen):
    crumb = "Pods"
    columns = POD_COLUMNS
    noun = "Pods"
    view_name = "pods"

    def __init__(self) -> None:
        super().__init__()
        self._watched: set[str] = set()

    def rows(self, index: SnapshotIndex) -> list[Row]:
        wanted = {name for name, row in list(index.rows.items()) if row.phase in UNSETTLED
                  and (job := index.job(name)) is not None and index.job_pods(job)}
        wanted = set(sorted(wanted)[:HEALTH_JOBS])
        for name in self._watched - wanted:
            self.intents.unsubscribe(HEALTH, name)
        for name in wanted - self._watched:
            self.intents.subscribe(HEALTH, name)
        self._watched = wanted
        return [Row(*line) for line in pod_rows(index, self.state.namespace)]

    def on_unmount(self) -> None:
        for name in self._watched:
            self.intents.unsubscribe(HEALTH, name)
        self._watched = set()
        super().on_unmount()

    def on_live_table_row_selected(self, event: LiveTable.RowSelected) -> None:
        event.stop()
        key, _, job = event.row_key.partition("\t")
        self.post_message(OpenLogs(job, Scope.pod(key)))


class EventsScreen(ListScreen):
    crumb = "Events"
    columns = EVENT_COLUMNS
    noun = "events"
    view_name = "events"
    default_sort = "time"

    def rows(self, index: SnapshotIndex) -> list[Row]:
        return [Row(*line) for line in event_rows(index, datetime.now(UTC), self.state.namespace)]

    def on_live_table_row_selected(self, event: LiveTable.RowSelected) -> None:
        event.stop()
        self.post_message(OpenJob(event.row_key.partition("\t")[2], "events"))
