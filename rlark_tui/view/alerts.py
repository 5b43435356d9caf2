"""The `:alerts` view's deriver: one row per alert of the book, current ones first (firing, acknowledged), then
the resolved ones, newest first. Alert messages were built from cleaned cluster text (alerting/rules.py)."""

from __future__ import annotations

from datetime import datetime

from rlark_tui.alerting.rules import Alert, AlertsState
from rlark_tui.text.sanitize import clean
from rlark_tui.view.pods import Line


def _row_key(alert: Alert) -> str:
    """The table orders rows by key: current alerts, then resolved ones, newest first. Stable while the alert
    lasts, so the cursor stays on it while others fire."""
    group, when = ("1", alert.resolved_at) if alert.resolved_at is not None else ("0", alert.fired_at)
    return f"{group}{1e10 - when:017.3f}|{'|'.join(alert.key)}"


def alert_rows(state: AlertsState | None) -> tuple[list[Line], dict[str, Alert]]:
    """The rows, and each row key's alert (for `enter` and `a`)."""
    rows, by_key = [], {}
    for position, alert in enumerate(state.book.listing() if state is not None else []):
        when = alert.resolved_at if alert.resolved_at is not None else alert.fired_at
        key = _row_key(alert)
        by_key[key] = alert
        cells = (datetime.fromtimestamp(when).strftime("%H:%M:%S"), alert.severity, clean(alert.job or "-"),
                 alert.rule, clean(alert.message), alert.state)
        rows.append(Line(key, cells, (position, alert.severity, alert.job, alert.rule, alert.message, alert.state)))
    return rows, by_key
