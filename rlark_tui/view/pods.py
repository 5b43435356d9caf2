"""The `:pods` and `:events` views' derivers, from a SnapshotIndex only: one line per Pod CR of a Job (its Job, role,
Node, phase, failure reason and restarts from the health topic) and the Tasks' events, newest first. Every cluster
string in a line is cleaned here (`text.sanitize.clean`), event messages redacted first."""

from __future__ import annotations

from datetime import datetime
from typing import Any, NamedTuple

from rlark_tui.model.podstate import PodHealth
from rlark_tui.model.timefmt import parse_time, short_age
from rlark_tui.text.redact import redact_text
from rlark_tui.text.sanitize import clean
from rlark_tui.view.index import SnapshotIndex


class Line(NamedTuple):
    """One table line: its key, its cells (the view's columns) and per-column sort values (a widget Row's fields)."""

    key: str
    cells: tuple[str, ...]
    sort_values: tuple[Any, ...]


def pod_rows(index: SnapshotIndex, namespace: str = "") -> list[Line]:
    """One row per Pod CR of a Job (key: the Pod CR's `namespace/name`, then the Job after a tab)."""
    rows = []
    for job_name in index.snapshot.jobs:
        health = index.health_of(job_name)
        for task in index.tasks_by_job.get(job_name, []):
            for pod in index.pods_by_task.get(task.name, []):
                if namespace and pod.namespace != namespace:
                    continue
                key = f"{pod.namespace}/{pod.name}"
                seen = health.get(key)
                seen = seen if isinstance(seen, PodHealth) else None
                reason = clean(seen.reason or "") if seen is not None else ""
                restarts = str(seen.restarts) if seen is not None else "-"
                cells = (clean(job_name), clean(pod.pod_name or pod.name), clean(task.spec.role or task.name),
                         clean(pod.node or "-"), clean(pod.phase or "-"), reason or "-", restarts)
                rows.append(Line(f"{key}\t{job_name}", cells, (job_name, cells[1], cells[2], cells[3], cells[4],
                                                               reason, seen.restarts if seen is not None else None)))
    return rows


EVENT_ROWS_PER_JOB = 200
"""Events a Job has rows for, in its Tasks' order (as many as its Events tab shows); one more row counts the rest.
A Task holds up to model.objects.MAX_EVENTS (500), and a Job of 200 such Tasks was 100,000 rows derived (0.8 s)
and laid out on the UI thread at each Snapshot while the view was open."""


def event_rows(index: SnapshotIndex, now: datetime, namespace: str = "") -> list[Line]:
    """The Tasks' events, newest first (sorted by their last time; the key carries the Job after a tab): the first
    EVENT_ROWS_PER_JOB of each Job, and a row counting the Job's others."""
    rows = []
    for job_name in index.snapshot.jobs:
        budget, more = EVENT_ROWS_PER_JOB, 0
        for task in index.tasks_by_job.get(job_name, []):
            if namespace and task.namespace != namespace:
                continue
            if budget <= 0:
                more += task.event_count
                continue
            events = task.events[:budget]
            more += task.event_count - len(events)
            budget -= len(events)
            for number, event in enumerate(events):
                last = parse_time(str(event.get("lastTime") or event.get("firstTime") or ""))
                count = f" ×{event.get('count')}" if event.get("count") else ""
                cells = (f"{short_age(last, now)} ago" if last else "-", clean(job_name),
                         clean(str(event.get("type", "")) or "-"), clean(str(event.get("reason", "")) + count),
                         clean(f"{event.get('objectKind', '')} {event.get('objectName', '')}".strip() or task.name),
                         clean(redact_text(str(event.get("message", "")))).replace("\n", " "))
                stamp = last.timestamp() if last else float("-inf")
                rows.append(Line(f"{task.namespace}/{task.name}/{number}\t{job_name}", cells,
                                (-stamp, job_name, cells[2], cells[3], cells[4], cells[5])))
        if more:
            cells = ("-", clean(job_name), "-", "-", "-",
                     f"… {more:,} more events of this Job (the first {EVENT_ROWS_PER_JOB} shown)")
            rows.append(Line(f"more\t{job_name}", cells, (float("inf"), job_name, "", "", "", "")))
    return rows
