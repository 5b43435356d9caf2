"""The Workflow views' derivers: `:workflows` (one row per Workflow) and one Workflow's templates in dependency
order, from the index's WORKFLOWS read and watched Jobs (which template waits for what is jobspec/workflow.py).
Every cluster string in a row is cleaned here (`text.sanitize.clean`)."""

from __future__ import annotations

from datetime import datetime

from rlark_tui.alerting.rules import ALL_KEY
from rlark_tui.jobspec.workflow import template_states, templates
from rlark_tui.model.objects import dig
from rlark_tui.model.timefmt import parse_time, short_age
from rlark_tui.text.sanitize import clean
from rlark_tui.view.index import SnapshotIndex
from rlark_tui.view.pods import Line


def _workflows(index: SnapshotIndex) -> tuple[dict, ...]:
    listed = index.listed("workflows", ALL_KEY)
    items = getattr(listed, "items", None) or ()
    return tuple(item for item in items if isinstance(item, dict))


def _name(workflow: dict) -> str:
    return str(dig(workflow, "metadata", "name", default=""))


def workflow_list_rows(index: SnapshotIndex, now: datetime) -> list[Line]:
    """One row per Workflow (key: its name): phase, Jobs created of its templates, age."""
    rows = []
    for workflow in _workflows(index):
        name = _name(workflow)
        entries = [e for e in dig(workflow, "status", "jobs", default=[]) or [] if isinstance(e, dict)]
        created = sum(1 for e in entries if e.get("phase"))
        stamp = parse_time(dig(workflow, "metadata", "creationTimestamp"))
        rows.append(Line(name, (clean(name), clean(str(dig(workflow, "status", "phase", default="") or "-")),
                                f"{created}/{len(templates(workflow))}", short_age(stamp, now) if stamp else ""),
                         (name, "", created, -stamp.timestamp() if stamp else None)))
    return rows


def template_rows(index: SnapshotIndex, workflow_name: str) -> list[Line]:
    """One row per template of the Workflow `workflow_name`, by layer (`··` per layer of dependencies); a row's
    key sorts in that order and ends with the template's Job name once the Job exists. No rows: it is not listed."""
    rows = []
    for workflow in (w for w in _workflows(index) if _name(w) == workflow_name):
        name = clean(workflow_name)
        phase = clean(str(dig(workflow, "status", "phase", default="") or "-"))
        for number, state in enumerate(template_states(workflow, index.snapshot.jobs)):
            job = clean(state.job) if state.phase else "-"
            cells = (f"{name} ({phase})" if number == 0 else "", clean("··" * state.layer + state.name), job,
                     clean(state.phase or "not created"), clean(state.waiting))
            key = f"{workflow_name}/{number:04d}/{state.job if state.phase else ''}"
            rows.append(Line(key, cells, (workflow_name, number, state.job, state.phase, state.waiting)))
    return rows
