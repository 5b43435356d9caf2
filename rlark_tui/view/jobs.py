"""The Job views' derivers besides the job list's JobRow (view/index.py): the CLI's Job table row, read in one pass
from the API dict so that `rlark get jobs` stays fast (bench/cli_get.py), with the facts the TUI shows."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from types import MappingProxyType
from typing import TYPE_CHECKING, Protocol

from rlark_tui.model.check_summary import check_cell
from rlark_tui.model.keys import CHECK_SUMMARY_ANNOTATION
from rlark_tui.model.objects import Job, TaskSpec, shown_status
from rlark_tui.text.sanitize import clean
from rlark_tui.text.sinks import cut, one_line

if TYPE_CHECKING:
    from rlark_tui.text.redact import KnownSecrets


class Ages(Protocol):
    """An AGE cell of a timestamp (cluster.output's kubectl ages at one `now`, which it carries as `.now`)."""

    now: datetime

    def __call__(self, stamp: object, /) -> str: ...


_NONE: Mapping = MappingProxyType({})


def _section(obj: Mapping, key: str) -> Mapping:
    value = obj.get(key)
    return value if isinstance(value, dict) else _NONE


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""


def cli_job_row(obj: Mapping, wide: bool, ages: Ages) -> list[str]:
    """`rlark get jobs`' cells: the Job's name, shown_status, running/roles, role names, age and the saved run
    check's summary (CHECK, model/check_summary.py), read straight from the dict: the whole object or the lean shape
    `cluster.output.JobTableList` decodes (the wide cells read the whole object). The same facts as the job
    list's JobRow (view/index.py), from the same functions of model/objects.py."""
    meta, spec, status = _section(obj, "metadata"), _section(obj, "spec"), _section(obj, "status")
    tasks = spec.get("tasks")
    tasks = [t for t in tasks if isinstance(t, dict)] if isinstance(tasks, list) else []
    entries = status.get("tasks")
    phases = [_text(t.get("phase")) for t in entries if isinstance(t, dict)] if isinstance(entries, list) else []
    row = [_text(meta.get("name")), shown_status(spec.get("stopped") is True, _text(status.get("phase")), phases),
           f"{phases.count('Running')}/{len(tasks)}", ",".join([_text(t.get("name")) for t in tasks]) or "-",
           ages(meta.get("creationTimestamp"))]
    annotations = meta.get("annotations")
    row.append((check_cell(annotations, ages.now) or "-") if isinstance(annotations, dict)
               and CHECK_SUMMARY_ANNOTATION in annotations else "-")
    if wide:
        job, specs = Job(obj), [TaskSpec(t) for t in tasks]
        head = next((t.name for t in specs if t.head), "-")
        row += [job.job_type, head, str(sum(t.replicas for t in specs)), job.domain or "-", job.display_name or "-"]
    return row


def context_cell(context: str) -> str:
    """The CONTEXT cell of a Job read from one of several control planes (`rlark get --all-contexts`, the TUI's
    merged list): the kubeconfig context's name, one line."""
    return clean(context).replace("\n", " ") or "-"


def progress_note(name: str, error: str, known: KnownSecrets) -> str:
    """Why a Job's PROGRESS cell is `?` (its Header log's read failed), for the line under the job list when its
    row is highlighted: one line, the Job's own secret values (`known`) and anything that looks like a secret
    masked, cut at sinks.FIELD_CHARS."""
    from rlark_tui.text.redact import redact_text  # only for the TUI (cost of a plain get: bench/cli_get.py)

    return one_line(cut(redact_text(known.mask_lines(f"{name}: PROGRESS ? · not read: {error}"))))
