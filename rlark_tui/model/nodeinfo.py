"""A Node's detail and the member clusters' summary, as the web console shows them: the rows and their text layout
(view/nodes.py derives them from a SnapshotIndex) (apps/rlark-ui/src/pages/
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

Pure; every cluster-supplied string in a row was sanitised where the row was built (`text.sanitize.clean`), and is
printed through `text.sinks.one_line` (no line break or bidi control forges a field or a row).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rlark_tui.model import keys
from rlark_tui.text.sinks import cell_width, one_line, pad

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
    left_out: tuple[tuple[str, int], ...] = ()
    """(section, how many) of the labels, resources and image pulls past MAX_SHOWN each."""

    def more(self, section: str) -> int:
        return dict(self.left_out).get(section, 0)


MAX_SHOWN = 200
"""Labels, resources and image pulls of one Node shown (each): the Node CR is its member cluster's text, and one of
60,000 labels, 20,000 resources and 20,000 pulls (1.8 MB) was 100,000 lines, 7.5-10 s of the TUI's UI thread at
every snapshot while its detail was open."""


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


def describe_node_text(detail: NodeDetail) -> str:
    """`rlark describe node NAME` (the console's node detail as text)."""
    out: list[str] = []

    def field(label: str, value: object) -> None:
        out.append(f"{one_line(label) + ':':<16}{one_line(value)}")

    field("Name", detail.name)
    field("Cluster", detail.cluster)
    field("Internal IP", detail.internal_ip)
    for key, value in detail.metadata:
        field(key.removeprefix("rlark.io/"), value)
    out.append("Conditions:")
    out.extend(f"  {one_line(name) + ':':<14}{one_line(value)}" for name, value in detail.conditions)
    def more(section: str) -> None:
        if detail.more(section):
            out.append(f"  … {detail.more(section):,} more {section} (the first {MAX_SHOWN} shown)")

    out.append(f"Resources (reserved = {detail.reserved_source}; scheduler reservations, not measured use):")
    rows = [("RESOURCE", "CAPACITY", "ALLOCATABLE", "RESERVED", "FREE")]
    rows += [(r.resource, r.capacity, r.allocatable, r.reserved, r.free) for r in detail.resources]
    out.extend("  " + line for line in _columns(rows))
    more("resources")
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
        out.extend(f"  {one_line(line)}" for line in detail.pull_progress)
        more("image pulls")
    out.append("Labels:")
    out.extend(f"  {one_line(k)}={one_line(v)}" for k, v in detail.labels)
    more("labels")
    if detail.events:
        out.append("Events:")
        out.extend(f"  {one_line(line)}" for line in detail.events)
    return "\n".join(out)


def _columns(rows: Sequence[tuple[str, ...]]) -> list[str]:
    rows = [tuple(one_line(cell) for cell in row) for row in rows]
    widths = [max(cell_width(row[i]) for row in rows) for i in range(len(rows[0]))]
    return [" ".join(pad(cell, width) for cell, width in zip(row, widths)).rstrip() for row in rows]


def clusters_table(rows: list[ClusterRow]) -> str:
    table = [("CLUSTER", "NODES", "GPUS FREE/TOTAL", "RUNNING JOBS", "REGION")]
    table += [(r.cluster, f"{r.nodes_online}/{r.nodes_total}", r.gpu_text, str(r.running_jobs), r.region)
              for r in rows]
    return "\n".join(_columns(table))
