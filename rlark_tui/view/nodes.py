"""The node views' derivers: one Node's detail (`:nodes` → enter, `rlark describe node`) and the member clusters'
rows (`:clusters`, `rlark get clusters`), from a SnapshotIndex only (its Node, Pod CR and Task views, each built
once by the index). The rules are the console's (model/nodeinfo.py describes them and lays the rows out as text).
Every cluster string in a row is cleaned here (`text.sanitize.clean`)."""

from __future__ import annotations

from datetime import datetime

from rlark_tui.model import keys
from rlark_tui.model.nodeinfo import (
    CATEGORY_LABEL,
    CITY_ANNOTATION,
    MAX_SHOWN,
    METADATA_ANNOTATIONS,
    REGION_LABEL,
    ClusterRow,
    NodeDetail,
    NodeWorker,
    ResourceRow,
    fmt_amount,
)
from rlark_tui.model.objects import Node, dig
from rlark_tui.model.quantity import parse_quantity
from rlark_tui.model.timefmt import age, parse_time
from rlark_tui.text.sanitize import clean
from rlark_tui.view.index import SnapshotIndex
from rlark_tui.view.pods import Line


def _amount(value: float | None) -> str:
    if value is None:
        return "-"
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


def node_rows(index: SnapshotIndex, now: datetime, namespace: str = "") -> list[Line]:
    """The `:nodes` rows (key `namespace/name`): every Node CR, or those of one cluster namespace."""
    rows = []
    for node in index.nodes:
        if namespace and node.namespace != namespace:
            continue
        allocatable = node.allocatable(keys.GPU_RESOURCE)
        gpu = f"{_amount(node.free(keys.GPU_RESOURCE))}/{_amount(allocatable)}" if allocatable is not None else "-"
        created = parse_time(node.creation_timestamp)
        key = f"{node.namespace}/{node.name}"
        cells = (clean(key), clean(node.cluster), clean(node.phase), "yes" if node.schedulable else "no", gpu,
                 clean(node.gpu_model), age(node.creation_timestamp, now))
        rows.append(Line(key, cells, (key, node.cluster, node.phase, node.schedulable, allocatable, node.gpu_model,
                                      -created.timestamp() if created else None)))
    return rows


def namespaces(index: SnapshotIndex) -> list[str]:
    """Every namespace the snapshot knows Nodes, Tasks or Pods in (the `:ns` picker's choices)."""
    found = {n.namespace for n in index.nodes}
    found |= {t.namespace for tasks in index.tasks_by_job.values() for t in tasks}
    return sorted(ns for ns in found if ns)


_PULL_FIELDS = ("image", "status", "downloaded", "total", "speed", "message")


def node_workers(index: SnapshotIndex, node: Node) -> list[NodeWorker]:
    """The Workers on `node`: Pod CRs scheduled there that belong to a Job's Task (Task names are `<job>-<task>`,
    unique as Job names are)."""
    workers = []
    for pod in index.all_pods():
        if pod.node != node.name or pod.namespace != node.namespace:
            continue
        task = index.tasks_by_name.get(pod.task_name)
        if task is None:
            continue
        job = task.labels.get(keys.JOB_LABEL, "")
        if not job:
            continue
        requests = dig(task.spec.pod_spec, "containers", 0, "resources", "requests", default={})
        requests = requests if isinstance(requests, dict) else {}
        workers.append(NodeWorker(f"{pod.namespace}/{pod.name}", clean(pod.pod_name or pod.name), clean(job),
                                  clean(task.spec.role or "-"), clean(pod.phase or "Pending"), clean(pod.ip or "-"),
                                  tuple(sorted((clean(str(k)), clean(str(v))) for k, v in requests.items())),
                                  pod.task_name))
    return sorted(workers, key=lambda w: w.name)


def _requested(workers: list[NodeWorker]) -> dict[str, float]:
    totals: dict[str, float] = {}
    for worker in workers:
        for resource, value in worker.requests:
            amount = parse_quantity(value)
            if amount is not None:
                totals[resource] = totals.get(resource, 0.0) + amount
    return totals


def _pull_line(entry: dict) -> str:
    return " ".join(str(entry.get(k)) for k in _PULL_FIELDS if isinstance(entry.get(k), str | int | float)
                    and entry.get(k))


def node_detail(index: SnapshotIndex, key: str) -> NodeDetail | None:
    """The detail of the Node under Snapshot key `key`; None when the Snapshot has no such Node."""
    raw = index.snapshot.nodes.get(key)
    if raw is None:
        return None
    node = Node(raw)
    workers = node_workers(index, node)
    used_raw = dig(node.raw, "status", "used", default={})
    reported = isinstance(used_raw, dict) and bool(used_raw)
    requested = _requested(workers)
    capacity = dig(node.raw, "status", "capacity", default={}) or {}
    allocatable = dig(node.raw, "status", "allocatable", default={}) or {}
    names = set()
    for section in (capacity, allocatable, used_raw if reported else requested):
        if isinstance(section, dict):
            names |= {str(k) for k in section}
    rows = []
    ordered = sorted(names, key=lambda r: (r not in ("cpu", "memory", keys.GPU_RESOURCE), r))
    for resource in ordered[:MAX_SHOWN]:
        cap = parse_quantity(capacity.get(resource)) if isinstance(capacity, dict) else None
        alloc = parse_quantity(allocatable.get(resource)) if isinstance(allocatable, dict) else None
        reserved = (parse_quantity(used_raw.get(resource)) or 0.0) if reported else requested.get(resource, 0.0)
        base = alloc if alloc is not None else cap
        rows.append(ResourceRow(clean(resource), fmt_amount(resource, cap), fmt_amount(resource, alloc),
                                fmt_amount(resource, reserved),
                                fmt_amount(resource, max(0.0, base - reserved) if base is not None else None)))
    labels, annotations = node.labels, node.annotations
    metadata = [(key, clean(annotations[key])) for key in METADATA_ANNOTATIONS if annotations.get(key)]
    metadata += [(key, clean(value)) for key, value in sorted(labels.items())
                 if key == CATEGORY_LABEL or key.startswith(CATEGORY_LABEL + "-")]
    disk = dig(node.raw, "status", "diskPressure")
    disk = disk if isinstance(disk, bool) else None
    conditions = [("Phase", clean(node.phase or "Offline")),
                  ("Schedulable", "yes" if node.schedulable else ("no (cordoned)" if node.unschedulable else "no")),
                  ("DiskPressure", "unknown" if disk is None else ("yes" if disk is True else "no"))]
    reason = dig(node.raw, "status", "reason")
    if isinstance(reason, str) and reason:
        conditions.append(("Reason", clean(reason)))
    pulls: list[tuple[str, dict]] = []
    progress = dig(node.raw, "status", "pullProgress", default=[])
    for entry in progress if isinstance(progress, list) else []:
        if isinstance(entry, dict):
            pulls.append(("", entry))
    for worker in workers:  # a Pending Worker's pulls, as the control plane copies them onto its Task
        task = index.tasks_by_name.get(worker.task)
        for entry in task.pull_progress if task is not None and worker.phase == "Pending" else []:
            pulls.append((f"{worker.name}: ", entry))
    events = [clean(f"{e.get('type', '')} {e.get('reason', '')}: {e.get('message', '')}") for e in node.events]
    ordered_labels = sorted(labels.items())
    left_out = tuple((section, count - MAX_SHOWN) for section, count in (
        ("resources", len(ordered)), ("image pulls", len(pulls)), ("labels", len(ordered_labels)))
        if count > MAX_SHOWN)
    return NodeDetail(clean(node.name), clean(node.cluster), clean(node.phase or "Offline"), node.schedulable,
                      clean(node.internal_ip or "-"), tuple(metadata),
                      tuple((clean(k), clean(v)) for k, v in ordered_labels[:MAX_SHOWN]), tuple(rows),
                      "Node CR status.used" if reported else "the Workers' requests (the Node reports no status.used)",
                      tuple(conditions), tuple(clean(who + _pull_line(entry)) for who, entry in pulls[:MAX_SHOWN]),
                      tuple(events[:20]), tuple(workers), left_out)


def cluster_rows(index: SnapshotIndex) -> list[ClusterRow]:
    """One row per member cluster (its Nodes' namespace): Nodes online, GPUs free/total by model, running Jobs."""
    grouped: dict[str, list[Node]] = {}
    for node in index.nodes:
        if node.cluster:
            grouped.setdefault(node.cluster, []).append(node)
    running = {name for name, job in index.jobs.items() if job.shown_status == "Running"}
    jobs_in: dict[str, set[str]] = {}
    for task in index.tasks_by_name.values():
        job = task.labels.get(keys.JOB_LABEL, "")
        if job in running:
            jobs_in.setdefault(task.namespace, set()).add(job)
    rows = []
    for cluster, members in sorted(grouped.items()):
        gpus: dict[str, list[int]] = {}
        for node in members:
            allocatable = node.allocatable(keys.GPU_RESOURCE)
            if not allocatable:
                continue
            model = node.gpu_model or (node.labels.get("rlark.io/model") if node.labels.get(CATEGORY_LABEL) == "cloud"
                                       else "") or "GPU"  # a robot's rlark.io/model names the robot
            free = max(0.0, node.free(keys.GPU_RESOURCE) or 0.0) if node.schedulable else 0.0
            entry = gpus.setdefault(clean(model), [0, 0])
            entry[0] += int(free)
            entry[1] += int(allocatable)
        region = next((n.labels.get(REGION_LABEL) for n in members if n.labels.get(REGION_LABEL)), "")
        city = next((n.annotations.get(CITY_ANNOTATION) for n in members if n.annotations.get(CITY_ANNOTATION)), "")
        where = " / ".join(part for part in (region, city) if part) or "-"
        rows.append(ClusterRow(clean(cluster), sum(1 for n in members if n.online), len(members),
                               tuple((m, f, t) for m, (f, t) in sorted(gpus.items())), len(jobs_in.get(cluster, ())),
                               clean(where)))
    return rows
