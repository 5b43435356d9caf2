"""The `:alerts` view's deriver: one row per alert of the book, current ones first (firing, acknowledged), then
the resolved ones, newest first. Alert messages were built from cleaned cluster text (alerting/rules.py)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime

from rlark_tui.alerting.rules import Alert, AlertsState
from rlark_tui.text.sanitize import clean
from rlark_tui.text.sinks import cut, one_line
from rlark_tui.view.jobs import context_cell
from rlark_tui.view.pods import Line


def _row_key(alert: Alert) -> str:
    """The table orders rows by key: current alerts, then resolved ones, newest first. Stable while the alert
    lasts, so the cursor stays on it while others fire."""
    group, when = ("1", alert.resolved_at) if alert.resolved_at is not None else ("0", alert.fired_at)
    return f"{group}{1e10 - when:017.3f}|{'|'.join(alert.key)}"


def alert_rows(state: AlertsState | None, context: str = "") -> tuple[list[Line], dict[str, Alert]]:
    """The rows, and each row key's alert (for `enter` and `a`). `context`: the book is that context's, among
    several (a CONTEXT cell first; see context_alert_rows)."""
    rows, by_key = [], {}
    for position, alert in enumerate(state.book.listing() if state is not None else []):
        when = alert.resolved_at if alert.resolved_at is not None else alert.fired_at
        key = _row_key(alert) + (f"|@{context}" if context else "")
        by_key[key] = alert
        cells: tuple[str, ...] = (datetime.fromtimestamp(when).strftime("%H:%M:%S"), alert.severity,
                                  clean(alert.job or "-"), alert.rule, clean(alert.message), alert.state)
        sort_values: tuple[object, ...] = (position, alert.severity, alert.job, alert.rule, alert.message, alert.state)
        if context:
            cells, sort_values = (context_cell(context), *cells), (context, *sort_values)
        rows.append(Line(key, cells, sort_values))
    return rows, by_key


def context_alert_rows(states: Mapping[str, AlertsState | None]) -> tuple[list[Line], dict[str, tuple[str, Alert]]]:
    """`:alerts` over several contexts: every context's book in one list (a CONTEXT column first), and each row
    key's context and alert. None: that context's rules were not evaluated yet."""
    rows: list[Line] = []
    by_key: dict[str, tuple[str, Alert]] = {}
    for context, state in states.items():
        lines, alerts = alert_rows(state, context)
        rows += lines
        by_key.update({key: (context, alert) for key, alert in alerts.items()})
    return rows, by_key


def not_read(state: AlertsState | None) -> str:
    """What the alert rounds could not read (a Header log, a data plane's pods): its first line and how many more;
    the rules judged what was read."""
    if state is None or not state.errors:
        return ""
    more = f" (and {len(state.errors) - 1} more)" if len(state.errors) > 1 else ""
    return f"not read: {one_line(cut(state.errors[0]))}{more}"
