"""OverviewScreen (`:overview`): what needs attention, the first screen of a shift: offline, cordoned or disk-pressured
Nodes, Pending or unschedulable Jobs with why, firing alerts, and Jobs whose check summary fails or is stale
(view/overview.py derives the lines), of every context shown (`--context A --context B`: a CONTEXT column). `enter`
opens the line's object, in its own context: the Node, the Job on its Events, the alert's evidence as `:alerts`
opens it, the Job's run check."""

from __future__ import annotations

from datetime import UTC, datetime

from textual.binding import Binding

from rlark_tui.alerting.rules import Alert
from rlark_tui.flow.messages import FocusContext, OpenCheck, OpenJob, OpenNode
from rlark_tui.screens.alerts import alert_state, open_alert
from rlark_tui.screens.base import ListScreen
from rlark_tui.view.index import SnapshotIndex
from rlark_tui.view.overview import ALERT, CHECK, JOB, NODE, attention_lines, in_context, target_of
from rlark_tui.view.pods import Line
from rlark_tui.widgets.live_table import Column, LiveTable, Row

COLUMNS = (
    Column("kind", "KIND"),
    Column("object", "OBJECT"),
    Column("state", "STATE"),
    Column("why", "WHY"),
    Column("age", "AGE", priority=1),
)
CONTEXT_COLUMNS = (Column("context", "CONTEXT", priority=2), *COLUMNS)


class OverviewScreen(ListScreen):
    """esc returns to the job list."""

    crumb = "Overview"
    BINDINGS = [Binding("escape", "back", "Back")]
    columns: tuple[Column, ...] = COLUMNS
    noun = "lines"
    id_prefix = "overview"
    view_name = "overview"

    def __init__(self) -> None:
        super().__init__()
        self.alerts: dict[tuple[str, str], Alert] = {}
        """(context, alert key) -> the firing alert of a line."""
        if self.state.several:
            self.columns = CONTEXT_COLUMNS

    def _lines(self, index: SnapshotIndex, now: datetime, context: str) -> list[Line]:
        state = alert_state(index)
        firing = state.book.firing() if state is not None else []
        self.alerts.update({(context, "|".join(alert.key)): alert for alert in firing})
        return attention_lines(index, now, firing)

    def rows(self, index: SnapshotIndex) -> list[Row]:
        now = datetime.now(UTC)
        self.alerts = {}
        if not self.state.several:
            return [Row(*line) for line in self._lines(index, now, "")]
        return [Row(*in_context(line, context)) for context, each in self.state.contexts.items()
                if each is not None for line in self._lines(each, now, context)]

    def empty_text(self) -> str:
        return ("Nothing needs attention: every Node is online and schedulable, no Job waits, no alert fires and "
                "no check summary fails or is stale.")

    def on_live_table_row_selected(self, event: LiveTable.RowSelected) -> None:
        event.stop()
        kind, context, target = target_of(event.row_key)
        if context and context != self.state.context:
            self.post_message(FocusContext(context))
        if kind == NODE:
            self.post_message(OpenNode(target))
        elif kind == JOB:
            self.post_message(OpenJob(target, "events"))
        elif kind == CHECK:
            self.post_message(OpenCheck(target))
        elif kind == ALERT and (alert := self.alerts.get((context, target))) is not None:
            open_alert(self, alert)
