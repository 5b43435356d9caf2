"""The Workflow views' derivers: `:workflows` (one row per Workflow) and one Workflow's templates in dependency
order, from the index's WORKFLOWS read and watched Jobs (which template waits for what is jobspec/workflow.py).
Every cluster string in a row is cleaned here (`text.sanitize.clean`)."""

from __future__ import annotations

from dataclasses import dataclass
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


def workflow_version(index: SnapshotIndex, workflow_name: str) -> str:
    """The resourceVersion of the Workflow `workflow_name` as listed ("" when it is not listed or has none)."""
    for workflow in _workflows(index):
        if _name(workflow) == workflow_name:
            version = dig(workflow, "metadata", "resourceVersion", default="")
            return version if isinstance(version, str) else ""
    return ""


MAX_TEMPLATES_SHOWN = 500
"""Templates the Workflow's table shows, in dependency order; the rest are counted. A Workflow's author sets how
many: 20,000 were 2 s of the UI thread to open the screen and 0.5 s at every poll while it was open."""
MAX_INDENT = 16
"""Layers a template's name is indented by; a deeper one says its layer (a chain of 20,000 templates was a cell of
40,000 characters)."""


@dataclass(frozen=True)
class Templates:
    """The rows of one Workflow's templates shown, and how many templates it has."""

    lines: tuple[Line, ...]
    total: int

    @property
    def more(self) -> int:
        return self.total - len(self.lines)


def _indented(name: str, layer: int) -> str:
    if layer <= MAX_INDENT:
        return "··" * layer + name
    return "··" * MAX_INDENT + f"(layer {layer:,}) " + name


def template_rows(index: SnapshotIndex, workflow_name: str, limit: int) -> Templates:
    """One row per template of the Workflow `workflow_name`, by layer (`··` per layer of dependencies), the first
    `limit` of them; a row's key sorts in that order and ends with the template's Job name once the Job exists. No
    rows: it is not listed."""
    for workflow in (w for w in _workflows(index) if _name(w) == workflow_name):
        name = clean(workflow_name)
        phase = clean(str(dig(workflow, "status", "phase", default="") or "-"))
        states = template_states(workflow, index.snapshot.jobs)
        rows = []
        for number, state in enumerate(states[:limit]):
            job = clean(state.job) if state.phase else "-"
            cells = (f"{name} ({phase})" if number == 0 else "", clean(_indented(state.name, state.layer)), job,
                     clean(state.phase or "not created"), clean(state.waiting))
            key = f"{workflow_name}/{number:04d}/{state.job if state.phase else ''}"
            rows.append(Line(key, cells, (workflow_name, number, state.job, state.phase, state.waiting)))
        return Templates(tuple(rows), len(states))
    return Templates((), 0)
