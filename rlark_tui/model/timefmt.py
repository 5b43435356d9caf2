"""API timestamps and kubectl-style ages, shared by the CLI tables, the screens and the run check.

Pure: RFC 3339 text in, aware datetimes and short age strings out.
"""

from __future__ import annotations

from datetime import UTC, datetime


def parse_time(text: str | None) -> datetime | None:
    """An RFC 3339 timestamp as the API writes it, as an aware datetime; None when absent or unreadable, or past
    the calendar in UTC (9999-12-31T23:59:59-14:00 is year 10000 there: its timestamp() is no time a reader can
    turn back into a date)."""
    if not text or not isinstance(text, str):
        return None
    try:
        value = datetime.fromisoformat(text.replace("Z", "+00:00"))
        value = value if value.tzinfo else value.replace(tzinfo=UTC)
        value.astimezone(UTC)
    except (ValueError, OverflowError):
        return None
    return value


def age(created: str | None, now: datetime | None = None, unknown: str = "") -> str:
    """kubectl-style age of an API timestamp at `now` (default: the current time); `unknown` when it is absent
    or unreadable (kubectl's tables show `<unknown>`, the screens leave the cell empty)."""
    start = parse_time(created)
    return short_age(start, now or datetime.now(UTC)) if start else unknown


def short_age(start: datetime, now: datetime) -> str:
    """kubectl's short age of `start` at `now`: 45s, 12m, 5h, 3d."""
    seconds = max(0, int((now - start).total_seconds()))
    if seconds < 120:
        return f"{seconds}s"
    if seconds < 2 * 3600:
        return f"{seconds // 60}m"
    if seconds < 2 * 86400:
        return f"{seconds // 3600}h"
    return f"{seconds // 86400}d"
