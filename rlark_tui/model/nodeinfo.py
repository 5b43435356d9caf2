"""A Node's detail and the member clusters' summary, as the web console shows them (apps/rlark-ui/src/pages/
Clusters.tsx NodeDetailReal, ClusterManagement.tsx, Overview.tsx; apps/rlark/docs/concepts.md §4).

- **Workers on a Node**: the Pod CRs whose `status.node` is the Node's name (in the Node's cluster namespace),
  each joined to its Task (`spec.taskName`) for the Job (`rlinf.io/job` label), the role and the first container's
  `resources.requests` of the Task's template, as NodeDetailReal does.
- **Reserved**: the Node CR's `status.used` (the agent's sum of the requests of non-terminal pods) when it reports
  one, else the sum of the Workers' requests, the console's fallback; it is the scheduler's reservation, not
  measured use.
- **Clusters**: per cluster namespace (`rlark-<id>`), nodes online/total, GPUs free/total by GPU model (free =
  allocatable - reserved on schedulable Nodes, the wizard's rule), running Jobs (Jobs whose shown status is
  Running with a Task in that cluster) and the region (`rlark.io/region` label, city annotation `rlark.io/city`),
  the fields of the gateway's ClusterInfo (clusters_handler.go).

Pure; every cluster-supplied string is sanitised (`text.sanitize.clean`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from rlark_tui.model import keys
from rlark_tui.model.objects import Job, Node, Pod, Task, dig
from rlark_tui.model.quantity import parse_quantity
from rlark_tui.text.sanitize import clean

CITY_ANNOTATION = "rlark.io/city"
REGION_LABEL = "rlark.io/region"
CATEGORY_LABEL = "rlark.io/node-category"
METADATA_ANNOTATIONS = (CITY_ANNOTATION, keys.GPU_MODEL_ANNOTATION, "rlark.io/device-model", "rlark.io/model")
"""The console's business fields on a Node CR (kept by kcp across the agent's refreshes)."""
MEMORY_LIKE = ("memory", "ephemeral-storage", "hugepages-")


@dataclass(frozen=True)
class NodeWorker:
    key: str
    """`<cluster namespace>/<Pod CR name>`."""
    name: str
    job: str
    role: str
    phase: str
    ip: str
    requests: tuple[tuple[str, str], ...]
    task: str = ""
    """The Task's name as the Pod CR gives it (not for display)."""


@dataclass(frozen=True)
class ResourceRow:
    resource: str
    capacity: str
    allocatable: str
    reserved: str
    free: str


@dataclass(frozen=True)
class NodeDetail:
    name: str
    cluster: str
    phase: str
    schedulable: bool
    internal_ip: str
    metadata: tuple[tuple[str, str], ...]
    """City, GPU model, device model, model, categories (what the console shows as the Node's identity)."""
    labels: tuple[tuple[str, str], ...]
    resources: tuple[ResourceRow, ...]
    reserved_source: str
    conditions: tuple[tuple[str, str], ...]
    pull_progress: tuple[str, ...]
    events: tuple[str, ...]
    workers: tuple[NodeWorker, ...]


def fmt_amount(resource: str, value: float | None) -> str:
    if value is None:
        return "-"
    if resource.startswith(MEMORY_LIKE):
        for unit, size in (("Ti", 1 << 40), ("Gi", 1 << 30), ("Mi", 1 << 20), ("Ki", 1 << 10)):
            if abs(value) >= size:
                return f"{value / size:.1f}{unit}".replace(".0" + unit, unit)
        return f"{value:g}"
    if resource == "cpu" and not float(value).is_integer():
        return f"{round(value * 1000)}m"
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


def node_workers(node: Node, pods: Iterable[dict], tasks: dict[str, dict]) -> list[NodeWorker]:
    """The Workers on `node`: Pod CRs scheduled there that belong to a Job's Task (`tasks`: Task name -> raw Task;
    Task names are `<job>-<task>`, unique as Job names are)."""
    workers = []
    for raw in pods:
        pod = Pod(raw)
        if pod.node != node.name or pod.namespace != node.namespace:
            continue
        task_raw = tasks.get(pod.task_name)
        if task_raw is None:
            continue
        task = Task(task_raw)
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


def node_detail(node: Node, pods: Iterable[dict], tasks: dict[str, dict]) -> NodeDetail:
    workers = node_workers(node, pods, tasks)
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
    for resource in sorted(names, key=lambda r: (r not in ("cpu", "memory", keys.GPU_RESOURCE), r)):
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
    pulls = []
    progress = dig(node.raw, "status", "pullProgress", default=[])
    for entry in progress if isinstance(progress, list) else []:
        if isinstance(entry, dict):
            pulls.append(clean(" ".join(str(entry.get(k)) for k in ("image", "status", "downloaded", "total",
                                                                   "speed", "message") if entry.get(k))))
    for worker in workers:  # a Pending Worker's pulls, as the control plane copies them onto its Task
        task_raw = tasks.get(worker.task)
        for entry in Task(task_raw).pull_progress if task_raw is not None and worker.phase == "Pending" else []:
            pulls.append(clean(f"{worker.name}: " + " ".join(str(entry.get(k)) for k in (
                "image", "status", "downloaded", "total", "speed", "message") if entry.get(k))))
    events = [clean(f"{e.get('type', '')} {e.get('reason', '')}: {e.get('message', '')}") for e in node.events]
    return NodeDetail(clean(node.name), clean(node.cluster), clean(node.phase or "Offline"), node.schedulable,
                      clean(node.internal_ip or "-"), tuple(metadata),
                      tuple((clean(k), clean(v)) for k, v in sorted(labels.items())), tuple(rows),
                      "Node CR status.used" if reported else "the Workers' requests (the Node reports no status.used)",
                      tuple(conditions), tuple(pulls), tuple(events[:20]), tuple(workers))


def tasks_by_name(tasks: Iterable[dict]) -> dict[str, dict]:
    return {Task(t).name: t for t in tasks}


def reserved_gpus(detail: NodeDetail) -> str:
    row = next((r for r in detail.resources if r.resource == keys.GPU_RESOURCE), None)
    return f"{row.reserved}/{row.allocatable}" if row else "-"


# ----- clusters -----

@dataclass(frozen=True)
class ClusterRow:
    cluster: str
    nodes_online: int
    nodes_total: int
    gpus: tuple[tuple[str, int, int], ...]
    """(GPU model, free, total) per model."""
    running_jobs: int
    region: str

    @property
    def gpu_text(self) -> str:
        return ", ".join(f"{model} {free}/{total}" for model, free, total in self.gpus) or "-"

    @property
    def gpu_free(self) -> int:
        return sum(free for _, free, _ in self.gpus)

    @property
    def gpu_total(self) -> int:
        return sum(total for _, _, total in self.gpus)


def cluster_rows(nodes: Iterable[Node], jobs: Iterable[Job], tasks: Iterable[dict]) -> list[ClusterRow]:
    grouped: dict[str, list[Node]] = {}
    for node in nodes:
        if node.cluster:
            grouped.setdefault(node.cluster, []).append(node)
    running = {job.name for job in jobs if job.shown_status == "Running"}
    jobs_in: dict[str, set[str]] = {}
    for raw in tasks:
        task = Task(raw)
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


def describe_node_text(detail: NodeDetail) -> str:
    """`rlark describe node NAME` (the console's node detail as text)."""
    out: list[str] = []

    def field(label: str, value: object) -> None:
        out.append(f"{label + ':':<16}{value}")

    field("Name", detail.name)
    field("Cluster", detail.cluster)
    field("Internal IP", detail.internal_ip)
    for key, value in detail.metadata:
        field(key.removeprefix("rlark.io/"), value)
    out.append("Conditions:")
    out.extend(f"  {name + ':':<14}{value}" for name, value in detail.conditions)
    out.append(f"Resources (reserved = {detail.reserved_source}; scheduler reservations, not measured use):")
    rows = [("RESOURCE", "CAPACITY", "ALLOCATABLE", "RESERVED", "FREE")]
    rows += [(r.resource, r.capacity, r.allocatable, r.reserved, r.free) for r in detail.resources]
    out.extend("  " + line for line in _columns(rows))
    out.append(f"Workers ({len(detail.workers)}):")
    if detail.workers:
        workers = [("WORKER", "JOB", "ROLE", "PHASE", "IP", "REQUESTS")]
        workers += [(w.name, w.job, w.role, w.phase, w.ip, ", ".join(f"{k}={v}" for k, v in w.requests) or "-")
                    for w in detail.workers]
        out.extend("  " + line for line in _columns(workers))
    else:
        out.append("  none")
    if detail.pull_progress:
        out.append("Image pulls:")
        out.extend(f"  {line}" for line in detail.pull_progress)
    out.append("Labels:")
    out.extend(f"  {k}={v}" for k, v in detail.labels)
    if detail.events:
        out.append("Events:")
        out.extend(f"  {line}" for line in detail.events)
    return "\n".join(out)


def _columns(rows: list[tuple[str, ...]]) -> list[str]:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return [" ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip() for row in rows]


def clusters_table(rows: list[ClusterRow]) -> str:
    table = [("CLUSTER", "NODES", "GPUS FREE/TOTAL", "RUNNING JOBS", "REGION")]
    table += [(r.cluster, f"{r.nodes_online}/{r.nodes_total}", r.gpu_text, str(r.running_jobs), r.region)
              for r in rows]
    return "\n".join(_columns(table))
