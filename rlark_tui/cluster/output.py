"""Pure rendering of API objects for the headless commands: kubectl-style tables, `-o wide|json|yaml`.

Objects are redacted before json/yaml output; table cells hold only values the platform reports, cleaned of
escape sequences and control characters (a cell is one line); json/yaml escape them instead.
One table per kind (TABLES): its columns, its `-o wide` columns and a row function; a new kind or column is one
entry or one cell there. Rows are built in one pass over the raw dicts (5,000 Jobs in a few milliseconds: see
bench/cli_get.py), with the same values as the typed views in model/objects.py.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from types import MappingProxyType
from typing import Any, NamedTuple, TypedDict

from rlark_tui.cluster.kinds import DOMAINS, JOBS, NODES, PODS, TASKS, WORKFLOWS, Kind
from rlark_tui.model import keys, timefmt
from rlark_tui.model.objects import Node, Pod, Task, dig
from rlark_tui.text.sanitize import json_dumps
from rlark_tui.text.sinks import cell_width, one_line, pad, yaml_dumps
from rlark_tui.view.jobs import cli_job_row, context_cell


def kubectl_age(stamp: str, now: datetime | None = None) -> str:
    """kubectl's short age: 45s, 12m, 5h, 3d (`<unknown>` when there is no readable timestamp)."""
    return timefmt.age(stamp, now, unknown="<unknown>")


class _Ages:
    """kubectl_age of many timestamps at one `now`, each distinct timestamp parsed once."""

    def __init__(self, now: datetime) -> None:
        self.now = now
        self._seen: dict[object, str] = {}

    def __call__(self, stamp: object) -> str:
        if not isinstance(stamp, str):
            return kubectl_age("", self.now)
        age = self._seen.get(stamp)
        if age is None:
            age = self._seen[stamp] = kubectl_age(stamp, self.now)
        return age


def table(headers: list[str], rows: list[list[str]]) -> str:
    """Columns separated by three spaces, padded to the widest cell, like kubectl (cells shown with str(), on one
    line, without escape sequences or bidi controls (`sinks.one_line`): the padding counts the columns the
    terminal shows, `sinks.cell_width`)."""
    rows = [list(map(str, row)) for row in rows]
    text = "".join(["".join(row) for row in rows])
    if not text.isprintable():  # some cell holds a control character
        rows = [[one_line(cell) for cell in row] for row in rows]
    if not text.isascii() or not set(map(len, rows)) <= {len(headers)}:
        return _ragged_table(headers, rows)
    widths = [max(len(header), *map(len, column)) for header, column in zip(headers, zip(*rows))] if rows \
        else [len(header) for header in headers]
    template = "   ".join(f"{{:<{width}}}" for width in widths)
    return "\n".join([template.format(*row).rstrip() for row in [headers, *rows]])


def _ragged_table(headers: list[str], rows: list[list[str]]) -> str:
    """`table` for rows shorter than the headers, or cells not all ASCII (padded by the columns each shows)."""
    widths = [cell_width(h) for h in headers]
    for row in rows:
        for index, cell in enumerate(row):
            widths[index] = max(widths[index], cell_width(cell))
    return "\n".join("   ".join(pad(cell, widths[index]) for index, cell in enumerate(row)).rstrip()
                     for row in [headers, *rows])


def _gpu(value: float | None) -> str:
    if value is None:
        return "-"
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


def _task_row(obj: dict[str, Any], wide: bool, ages: _Ages) -> list[str]:
    task = Task(obj)
    spec = task.spec
    row = [task.name, task.job_name or "-", spec.role or "-", task.phase or "-", str(task.replicas),
           ages(task.creation_timestamp)]
    if wide:
        selector = ",".join(f"{k}={v}" for k, v in spec.node_selector.items()) or "-"
        rank = task.rank_start
        row += ["yes" if task.is_head else "no", "-" if rank is None else str(rank), selector, spec.image or "-"]
    return row


def _pod_row(obj: dict[str, Any], wide: bool, ages: _Ages) -> list[str]:
    pod = Pod(obj)
    row = [pod.pod_name or pod.name, pod.task_name or "-", pod.phase or "-", pod.node or "-", pod.ip or "-",
           ages(pod.creation_timestamp)]
    if wide:
        row += [pod.name, pod.message or "-"]
    return row


def _node_row(obj: dict[str, Any], wide: bool, ages: _Ages) -> list[str]:
    node = Node(obj)
    category = node.labels.get("rlark.io/node-category", "-")
    row = [node.name, node.phase or "-", _gpu(node.allocatable(keys.GPU_RESOURCE)), category,
           ages(node.creation_timestamp)]
    if wide:
        row += [node.gpu_model or "-", _gpu(node.free(keys.GPU_RESOURCE)), node.internal_ip or "-",
                ",".join(node.device_resources) or "-"]
    return row


def _domain_row(obj: dict[str, Any], wide: bool, ages: _Ages) -> list[str]:
    name = dig(obj, "metadata", "name", default="")
    row = [name, str(dig(obj, "spec", "cidr", default="-")),
           ages(dig(obj, "metadata", "creationTimestamp"))]
    if wide:
        row.append(str(len(dig(obj, "status", "ipAllocations", default=[]) or [])))
    return row


def _workflow_row(obj: dict[str, Any], wide: bool, ages: _Ages) -> list[str]:
    from rlark_tui.jobspec.workflow import templates  # the wizard's tables: only for Workflows (cost of a get)

    entries = [e for e in dig(obj, "status", "jobs", default=[]) or [] if isinstance(e, dict)]
    listed = templates(obj)
    created = sum(1 for e in entries if e.get("phase"))
    row = [str(dig(obj, "metadata", "name", default="")), str(dig(obj, "status", "phase", default="") or "-"),
           f"{created}/{len(listed)}",
           ages(dig(obj, "metadata", "creationTimestamp"))]
    if wide:
        row.append(",".join(str(t.get("name", "")) for t in listed) or "-")
    return row


# What the Job table (without -o wide) and the sort read of a list: `rlark get jobs` decodes only these fields
# (cluster/lean.py decode). `Any` where a row function checks the type itself; a list or object of another type
# makes the whole answer decode as ever. tests/cluster/test_output.py holds the rows to the whole objects' rows.
class _JobTask(TypedDict, total=False):
    name: Any
class _JobTaskState(TypedDict, total=False):
    phase: Any
# keys.CHECK_SUMMARY_ANNOTATION, spelled out: a TypedDict key must be a literal
_JobAnnotations = TypedDict("_JobAnnotations", {"rlark.io/check-summary": Any}, total=False)
class _JobMetadata(TypedDict, total=False):
    name: Any
    namespace: Any
    creationTimestamp: Any
    annotations: _JobAnnotations
class _JobSpec(TypedDict, total=False):
    stopped: Any
    tasks: list[_JobTask]
class _JobStatus(TypedDict, total=False):
    phase: Any
    tasks: list[_JobTaskState]
class _JobItem(TypedDict, total=False):
    metadata: _JobMetadata
    spec: _JobSpec
    status: _JobStatus
class JobTableList(TypedDict, total=False):
    metadata: Any
    items: list[_JobItem]


class Table(NamedTuple):
    """One kind's table: its columns, the columns `-o wide` adds, and `row(obj, wide, ages)`, the cells of one
    object (as many as the columns, plus the wide ones when `wide`; `ages(timestamp)` gives an AGE cell);
    `reads`: the fields of a list answer that the rows without -o wide and the sort read (None: all)."""

    columns: tuple[str, ...]
    wide_columns: tuple[str, ...]
    row: Callable[[dict[str, Any], bool, _Ages], list[str]]
    reads: type | None = None


TABLES: Mapping[str, Table] = MappingProxyType({
    JOBS.plural: Table(("NAME", "STATUS", "WORKERS", "ROLES", "AGE", "CHECK"),
                       ("TYPE", "HEADER", "NODES", "DOMAIN", "DISPLAY NAME"), cli_job_row, JobTableList),
    TASKS.plural: Table(("NAME", "JOB", "ROLE", "PHASE", "REPLICAS", "AGE"),
                        ("HEAD", "RANK START", "NODE SELECTOR", "IMAGE"), _task_row),
    PODS.plural: Table(("NAME", "TASK", "PHASE", "NODE", "IP", "AGE"), ("POD CR", "MESSAGE"), _pod_row),
    NODES.plural: Table(("NAME", "PHASE", "GPU", "CATEGORY", "AGE"), ("GPU MODEL", "FREE GPU", "IP", "DEVICES"),
                        _node_row),
    DOMAINS.plural: Table(("NAME", "CIDR", "AGE"), ("ALLOCATIONS",), _domain_row),
    WORKFLOWS.plural: Table(("NAME", "PHASE", "JOBS", "AGE"), ("TEMPLATES",), _workflow_row),
})


def render_table(kind: Kind, items: list[dict[str, Any]], wide: bool = False, all_namespaces: bool = False,
                 now: datetime | None = None, progress: dict[str, str] | None = None,
                 health: dict[str, tuple[str, str]] | None = None, gpu: dict[str, float] | None = None,
                 step_time: dict[str, str] | None = None) -> str:
    """The table of `items`; see table_cells."""
    return table(*table_cells(kind, items, wide, all_namespaces, now, progress, health, gpu, step_time))


def table_cells(kind: Kind, items: list[dict[str, Any]], wide: bool = False, all_namespaces: bool = False,
                now: datetime | None = None, progress: dict[str, str] | None = None,
                health: dict[str, tuple[str, str]] | None = None, gpu: dict[str, float] | None = None,
                step_time: dict[str, str] | None = None) -> tuple[list[str], list[list[str]]]:
    """`progress` and `step_time` (Job name -> text, see cluster/metrics.py) add PROGRESS and STEP TIME columns
    to a wide Job table (`-` for the Jobs without one), `gpu`
    (Job name -> mean GPU utilisation, cluster/usage_reads.py) a GPU% column; `health`
    (Pod CR name -> (restarts, failure reason), cluster/podhealth.py) RESTARTS and REASON to a wide Pod table."""
    base, extra, row_of, _reads = TABLES[kind.plural]
    ages = _Ages(now or datetime.now(UTC))
    progress = progress if wide and kind is JOBS else None
    health = health if wide and kind is PODS else None
    headers = list(base) + (list(extra) if wide else []) + (["PROGRESS"] if progress is not None else [])
    step_time = step_time if wide and kind is JOBS else None
    headers += ["STEP TIME"] if step_time is not None else []
    gpu = gpu if wide and kind is JOBS else None
    headers += ["GPU%"] if gpu is not None else []
    headers += ["RESTARTS", "REASON"] if health is not None else []
    show_ns = all_namespaces and kind.namespaced
    if show_ns:
        headers.insert(0, "NAMESPACE")
    if gpu is not None:
        from rlark_tui.telemetry.usage import percent_cell  # only for -o wide (cost of a plain get)
    rows = []
    width = len(base) + (len(extra) if wide else 0)
    for obj in sort_items(items):
        if isinstance(obj, dict):  # the checks of one row, inline: a call a row was 2 % of a get's time
            try:
                row = row_of(obj, wide, ages)
            except UNREADABLE as exc:
                row = _unreadable_row(obj, f"{type(exc).__name__} reading it", width)
        else:
            row = _unreadable_row(obj, f"the item is {type(obj).__name__}, not an object", width)
        name = _name(obj, "name") if wide else ""
        if progress is not None:
            row.append(progress.get(name, "-"))
        if step_time is not None:
            row.append(step_time.get(name, "-"))
        if gpu is not None:
            row.append(percent_cell(gpu.get(name)))
        if health is not None:
            restarts, reason = health.get(name, ("-", ""))
            row += [restarts, reason or "-"]
        if show_ns:
            row.insert(0, _name(obj, "namespace") or "-")
        rows.append(row)
    return headers, rows


def merged_table(parts: list[tuple[str, list[str], list[list[str]]]]) -> str:
    """Several contexts' tables (context, headers, rows from table_cells, the contexts in the order given) as one,
    with a CONTEXT column first; the headers are those of the first part (every part has the same ones)."""
    headers = ["CONTEXT", *(parts[0][1] if parts else [])]
    return table(headers, [[context_cell(context), *row] for context, _headers, rows in parts for row in rows])


UNREADABLE = (RecursionError, ValueError, TypeError, AttributeError, KeyError, IndexError, OverflowError)
"""What reading a hostile object can raise: its row is marked instead (`unreadable: <why>`)."""


def _unreadable_row(obj: object, why: str, width: int) -> list[str]:
    """The one marked row of an item that is not an object, or that a row function cannot read (its name when it
    has one, `unreadable: <why>`, `-` in the other cells), so the rest of the table shows."""
    return [_name(obj, "name") or "-", f"unreadable: {why}", *["-"] * (width - 2)]


def _name(obj: object, field: str) -> str:
    value = dig(obj, "metadata", field)
    return value if isinstance(value, str) else ""


def sort_items(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """By namespace, then name (as text; missing ones first), as kubectl sorts a list."""
    return sorted(items, key=_sort_key)


def _sort_key(obj: dict[str, Any]) -> tuple[str, str]:
    meta = obj.get("metadata") if isinstance(obj, dict) else dig(obj, "metadata")
    if not isinstance(meta, dict):
        return "", ""
    namespace, name = meta.get("namespace", ""), meta.get("name", "")
    if isinstance(namespace, str) and isinstance(name, str):
        return namespace, name
    return _sort_text(namespace), _sort_text(name)


def _sort_text(value: object) -> str:
    """A name as sort text: a string as is, a number as its digits, anything else (a list, a map) as ""."""
    if isinstance(value, str):
        return value
    return str(value) if isinstance(value, int | float) and abs(value) < 10 ** 100 else ""


def render_objects(kind: Kind, items: list[dict[str, Any]], fmt: str, single: bool = False,
                   related: Mapping[str, list[dict[str, Any]]] | None = None) -> str:
    """json / yaml / name output; secrets are masked, each object's knowing also those of the objects `related`
    names for it by its name (a Job's Tasks: text.redact.redact_related). A single named object prints bare, else
    a List."""
    from rlark_tui.text.redact import redact_object, redact_related  # only for these outputs (cost of a plain get)

    def redacted_one(obj: dict[str, Any]) -> Any:
        name = dig(obj, "metadata", "name", default="")
        others = related.get(name) if related is not None and isinstance(name, str) else None
        return redact_related(obj, others) if others else redact_object(obj)

    redacted = [redacted_one(obj) for obj in sort_items(items)]
    if fmt == "name":
        return "\n".join(f"{kind.plural[:-1]}.rlinf.io/{one_line(dig(o, 'metadata', 'name', default=''))}"
                         for o in redacted)
    document = redacted[0] if single and len(redacted) == 1 else {
        "apiVersion": "v1", "kind": "List", "items": redacted, "metadata": {"resourceVersion": ""}}
    if fmt == "json":
        return json_dumps(document, indent=4, ensure_ascii=False)
    return yaml_dumps(document, sort_keys=False, allow_unicode=True).rstrip("\n")
