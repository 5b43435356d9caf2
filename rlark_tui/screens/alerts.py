"""AlertsScreen (`:alerts`): every alert of the reconciler's book, current ones first (firing, acknowledged), then
the resolved ones, newest first: time, severity, Job, rule, message, state. `enter` opens the Job at the evidence
(the Pod's previous-instance logs for an OOMKill or a back-off, the Header log for a log rule, else the Job's
Workers); `a` acknowledges the alert under the cursor; `S` on a progress-stalled alert opens its Job's stacks (where
each rank is, the odd ones named)."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import Static

from rlark_tui.alerting.rules import FIRING, Alert, AlertsState
from rlark_tui.flow.messages import AcknowledgeAlert, FocusContext, OpenJob, OpenLogs, OpenStacks
from rlark_tui.flow.polls import ALL_KEY
from rlark_tui.model.logtarget import Scope
from rlark_tui.screens.base import TableScreen
from rlark_tui.view.alerts import alert_rows, context_alert_rows, not_read
from rlark_tui.view.index import SnapshotIndex
from rlark_tui.widgets.live_table import Column, LiveTable, Row

CONTEXT_COLUMNS = (Column("context", "CONTEXT"),)
"""With several contexts, first."""
COLUMNS = (
    Column("time", "TIME"),
    Column("severity", "SEVERITY"),
    Column("job", "JOB"),
    Column("rule", "RULE"),
    Column("message", "MESSAGE"),
    Column("state", "STATE"),
)
STALLED = "progress-stalled"
LOG_RULES = ("run-crashed", "run-oom", "ray-not-ready", "start-stalled", "run-finished", "progress-stalled")


def alert_state(index: SnapshotIndex | None) -> AlertsState | None:
    return index.alerts_of(ALL_KEY) if index is not None else None


def open_alert(screen: Screen, alert: Alert) -> None:
    """`enter` on an alert (here and in `:overview`): its Job at the evidence, the Pod's previous-instance logs for
    an OOMKill or a back-off, the Header log for a log rule, else the Job's Workers."""
    if not alert.job:
        screen.notify("this alert is about a source, not a Job: the header shows its state", severity="warning")
    elif alert.pod and alert.rule not in LOG_RULES:
        screen.post_message(OpenLogs(alert.job, Scope.pod(alert.pod), previous=alert.previous))
    elif alert.rule in LOG_RULES:
        screen.post_message(OpenLogs(alert.job, Scope.pod(alert.pod) if alert.pod else Scope.HEADER))
    else:
        screen.post_message(OpenJob(alert.job))


class AlertsScreen(TableScreen):
    """esc returns to the job list. With several contexts, every context's alerts (a CONTEXT column first); enter,
    a and S on one focus its context first, so they go to that context's Job."""

    crumb = "Alerts"
    shows_every_context = True
    BINDINGS = [Binding("escape", "back", "Back"), Binding("a", "acknowledge", "Acknowledge"),
                Binding("S", "stacks", "Stacks (progress-stalled)")]

    def __init__(self) -> None:
        super().__init__()
        self.alerts: dict[str, Alert] = {}
        self.contexts: dict[str, str] = {}
        """With several contexts: each row key's context."""

    def compose_body(self) -> ComposeResult:
        yield LiveTable(CONTEXT_COLUMNS + COLUMNS if self.state.several else COLUMNS, id="alert-table")
        yield Static("", id="alert-message", markup=False)

    def show_snapshot(self, index: SnapshotIndex) -> None:
        self.update_header()
        if self.state.several:
            states = {context: alert_state(each) for context, each in self.state.contexts.items()}
            lines, keyed = context_alert_rows(states)
            self.alerts = {key: alert for key, (_context, alert) in keyed.items()}
            self.contexts = {key: context for key, (context, _alert) in keyed.items()}
            state = next((each for each in states.values() if each is not None), None)
        else:
            state = alert_state(index)
            lines, self.alerts = alert_rows(state)
        self.query_one(LiveTable).sync([Row(line.key, line.cells, line.sort_values) for line in lines])
        message = ("Evaluating the alert rules…" if state is None else
                   "No alerts: every Job in scope looks healthy." if not lines else "")
        self.say("#alert-message", "\n".join(filter(None, [message, not_read(state)])))

    def _current(self, key: str | None = None) -> Alert | None:
        """The alert under the cursor (or of row `key`); with several contexts its context is focused first."""
        key = self.query_one(LiveTable).selected_key if key is None else key
        alert = self.alerts.get(key) if key is not None else None
        context = self.contexts.get(key) if alert is not None and key is not None else None
        if context is not None and context != self.state.context:
            self.post_message(FocusContext(context))
        return alert

    def on_live_table_row_selected(self, event: LiveTable.RowSelected) -> None:
        event.stop()
        alert = self._current(event.row_key)
        if alert is not None:
            open_alert(self, alert)

    def action_acknowledge(self) -> None:
        alert = self._current()
        if alert is None:
            return
        if alert.state != FIRING:
            self.notify(f"{alert.rule} of {alert.job or alert.object} is {alert.state}", timeout=3)
            return
        self.post_message(AcknowledgeAlert([alert.ack_key]))

    def action_stacks(self) -> None:
        alert = self._current()
        if alert is None:
            return
        if alert.rule != STALLED or not alert.job:
            self.notify(f"S takes the stacks of a {STALLED} alert's Job; this one is {alert.rule}", timeout=4)
            return
        self.post_message(OpenStacks(alert.job))

    def action_back(self) -> None:
        self.rlark.run_command("jobs")
