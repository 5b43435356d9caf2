"""Pure rendering of API objects for the headless commands: kubectl-style tables, `-o wide|json|yaml`.

Objects are redacted before json/yaml output; table cells hold only values the platform reports, cleaned of
escape sequences and control characters (a cell is one line); json/yaml escape them instead.
"""

from __future__ import annotations

from datetime import datetime, timezone

import yaml

from rlark_tui.cluster.kinds import DOMAINS, JOBS, NODES, PODS, TASKS, WORKFLOWS, Kind
from rlark_tui.model import keys
from rlark_tui.model.redact import redact_object
from rlark_tui.model.sanitize import clean, json_dumps
from rlark_tui.model import timefmt
from rlark_tui.model.views import Job, Node, Pod, Task, dig
from rlark_tui.model.workflow import templates as workflow_templates

FORMATS = ("table", "wide", "json", "yaml", "name")


def kubectl_age(stamp: str, now: datetime | None = None) -> str:
    """kubectl's short age: 45s, 12m, 5h, 3d (`<unknown>` when there is no readable timestamp)."""
    return timefmt.age(stamp, now, unknown="<unknown>")


def table(headers: list[str], rows: list[list[str]]) -> str:
    """Columns separated by three spaces, padded to the widest cell, like kubectl (cells shown with str(), on one
    line, without escape sequences: the padding counts what the terminal shows)."""
    rows = [[_cell(cell) for cell in row] for row in rows]
    widths = [len(h) for h in headers]
    for row in rows:
        for index, cell in enumerate(row):
            widths[index] = max(widths[index], len(cell))
    lines = []
    for row in [headers, *rows]:
        cells = [cell.ljust(widths[index]) for index, cell in enumerate(row)]
        lines.append("   ".join(cells).rstrip())
    return "\n".join(lines)


def _cell(value: object) -> str:
    return clean(str(value)).replace("\n", " ").replace("\t", " ")


def _gpu(value: float | None) -> str:
    if value is None:
        return "-"
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


def _job_row(obj: dict, wide: bool, now) -> list[str]:
    job = Job(obj)
    tasks = job.tasks  # each view property re-reads the dict: read the tasks once per row (5,000-Job lists)
    running = sum(1 for t in job.status_tasks if t["phase"] == "Running")
    row = [job.name, job.shown_status, f"{running}/{len(tasks)}", ",".join(t.name for t in tasks) or "-",
           kubectl_age(job.creation_timestamp, now)]
    if wide:
        head = next((t.name for t in tasks if t.head), "-")
        row += [job.job_type, head, str(sum(t.replicas for t in tasks)), job.domain or "-", job.display_name or "-"]
    return row


def _task_row(obj: dict, wide: bool, now) -> list[str]:
    task = Task(obj)
    spec = task.spec
    row = [task.name, task.job_name or "-", spec.role or "-", task.phase or "-", str(task.replicas),
           kubectl_age(task.creation_timestamp, now)]
    if wide:
        selector = ",".join(f"{k}={v}" for k, v in spec.node_selector.items()) or "-"
        rank = task.rank_start
        row += ["yes" if task.is_head else "no", "-" if rank is None else str(rank), selector, spec.image or "-"]
    return row


def _pod_row(obj: dict, wide: bool, now) -> list[str]:
    pod = Pod(obj)
    row = [pod.pod_name or pod.name, pod.task_name or "-", pod.phase or "-", pod.node or "-", pod.ip or "-",
           kubectl_age(pod.creation_timestamp, now)]
    if wide:
        row += [pod.name, pod.message or "-"]
    return row


def _node_row(obj: dict, wide: bool, now) -> list[str]:
    node = Node(obj)
    category = node.labels.get("rlark.io/node-category", "-")
    row = [node.name, node.phase or "-", _gpu(node.allocatable(keys.GPU_RESOURCE)), category,
           kubectl_age(node.creation_timestamp, now)]
    if wide:
        row += [node.gpu_model or "-", _gpu(node.free(keys.GPU_RESOURCE)), node.internal_ip or "-",
                ",".join(node.device_resources) or "-"]
    return row


def _domain_row(obj: dict, wide: bool, now) -> list[str]:
    name = dig(obj, "metadata", "name", default="")
    row = [name, str(dig(obj, "spec", "cidr", default="-")),
           kubectl_age(dig(obj, "metadata", "creationTimestamp", default=""), now)]
    if wide:
        row.append(str(len(dig(obj, "status", "ipAllocations", default=[]) or [])))
    return row


def _workflow_row(obj: dict, wide: bool, now) -> list[str]:
    entries = [e for e in dig(obj, "status", "jobs", default=[]) or [] if isinstance(e, dict)]
    listed = workflow_templates(obj)
    created = sum(1 for e in entries if e.get("phase"))
    row = [str(dig(obj, "metadata", "name", default="")), str(dig(obj, "status", "phase", default="") or "-"),
           f"{created}/{len(listed)}",
           kubectl_age(str(dig(obj, "metadata", "creationTimestamp", default="") or ""), now)]
    if wide:
        row.append(",".join(str(t.get("name", "")) for t in listed) or "-")
    return row


COLUMNS = {
    JOBS.plural: (["NAME", "STATUS", "WORKERS", "ROLES", "AGE"],
                  ["TYPE", "HEADER", "NODES", "DOMAIN", "DISPLAY NAME"], _job_row),
    TASKS.plural: (["NAME", "JOB", "ROLE", "PHASE", "REPLICAS", "AGE"],
                   ["HEAD", "RANK START", "NODE SELECTOR", "IMAGE"], _task_row),
    PODS.plural: (["NAME", "TASK", "PHASE", "NODE", "IP", "AGE"], ["POD CR", "MESSAGE"], _pod_row),
    NODES.plural: (["NAME", "PHASE", "GPU", "CATEGORY", "AGE"], ["GPU MODEL", "FREE GPU", "IP", "DEVICES"],
                   _node_row),
    DOMAINS.plural: (["NAME", "CIDR", "AGE"], ["ALLOCATIONS"], _domain_row),
    WORKFLOWS.plural: (["NAME", "PHASE", "JOBS", "AGE"], ["TEMPLATES"], _workflow_row),
}


def render_table(kind: Kind, items: list[dict], wide: bool = False, all_namespaces: bool = False,
                 now: datetime | None = None, progress: dict[str, str] | None = None,
                 health: dict[str, tuple[str, str]] | None = None) -> str:
    """`progress` (Job name -> text, see cluster/metrics.py) adds a PROGRESS column to a wide Job table; `health`
    (Pod CR name -> (restarts, failure reason), cluster/podhealth.py) RESTARTS and REASON to a wide Pod table."""
    base, extra, row_of = COLUMNS[kind.plural]
    now = now or datetime.now(timezone.utc)
    progress = progress if wide and kind is JOBS else None
    health = health if wide and kind is PODS else None
    headers = list(base) + (list(extra) if wide else []) + (["PROGRESS"] if progress is not None else [])
    headers += ["RESTARTS", "REASON"] if health is not None else []
    show_ns = all_namespaces and kind.namespaced
    if show_ns:
        headers.insert(0, "NAMESPACE")
    rows = []
    for obj in sort_items(items):
        row = row_of(obj, wide, now)
        if progress is not None:
            row.append(progress.get(dig(obj, "metadata", "name", default=""), "-"))
        if health is not None:
            restarts, reason = health.get(dig(obj, "metadata", "name", default=""), ("-", ""))
            row += [restarts, reason or "-"]
        if show_ns:
            row.insert(0, dig(obj, "metadata", "namespace", default="") or "-")
        rows.append(row)
    return table(headers, rows)


def sort_items(items: list[dict]) -> list[dict]:
    return sorted(items, key=lambda o: (str(dig(o, "metadata", "namespace", default="")),
                                        str(dig(o, "metadata", "name", default=""))))


def render_objects(kind: Kind, items: list[dict], fmt: str, single: bool = False) -> str:
    """json / yaml / name output; secrets are masked. A single named object prints bare, else a List."""
    redacted = [redact_object(obj) for obj in sort_items(items)]
    if fmt == "name":
        return "\n".join(f"{kind.plural[:-1]}.rlinf.io/{dig(o, 'metadata', 'name', default='')}" for o in redacted)
    document = redacted[0] if single and len(redacted) == 1 else {
        "apiVersion": "v1", "kind": "List", "items": redacted, "metadata": {"resourceVersion": ""}}
    if fmt == "json":
        return json_dumps(document, indent=4, ensure_ascii=False)
    return yaml.safe_dump(document, sort_keys=False, allow_unicode=True).rstrip("\n")
