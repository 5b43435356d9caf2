"""Resource-use reads, as the platform allows them:

- CPU and memory: the member cluster's metrics.k8s.io PodMetrics through rlark-server
  (`/api/proxy/<agent>/api/kubernetes/apis/metrics.k8s.io/v1beta1/namespaces/<ns>/pods`: ONE list per cluster
  for all its Pods), else each Pod's cgroup (`cgroup-usage`, a fixed read-only exec);
- GPUs: `gpu-query` (nvidia-smi) through the fixed read-only exec, only in Running Pods that request GPUs. A Pod
  without nvidia-smi, or whose read fails, has no GPU numbers (`-`), never an error on screen.

`sample(...)` does one bounded round of them (the `usage` topic in polls.py, and `rlark top`).
"""

from __future__ import annotations

import heapq
import time
from collections.abc import Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Final, TypeAlias

from rlark_tui.cluster.errors import ApiError, Request, Unreachable
from rlark_tui.cluster.podexec import ExecFailed, run_fixed
from rlark_tui.errors import RlarkError
from rlark_tui.model import keys
from rlark_tui.telemetry.sample import (
    CPU_MILLICORES,
    MEMORY_BYTES,
    SOURCE,
    GpuSample,
    PodUsage,
    parse_nvidia_smi,
    usage_sample,
)
from rlark_tui.telemetry.sample import GPUS as SAMPLE_GPUS
from rlark_tui.telemetry.usage import CgroupReading, UsageState, cgroup_millicores, parse_cgroup, parse_pod_metrics

if TYPE_CHECKING:
    from rlark_tui.cluster.access import ClusterAccess
    from rlark_tui.model.objects import Job
    from rlark_tui.view.index import SnapshotIndex

METRICS_PATH = f"/apis/metrics.k8s.io/v1beta1/namespaces/{keys.WORKLOAD_NAMESPACE}/pods"
EXEC_SECONDS = 60.0
"""At most one exec per Pod per this many seconds."""
METRICS_SECONDS = 15.0
"""Each member cluster's PodMetrics list at most this often (metrics-server's own resolution)."""
EXECS_IN_FLIGHT = 2
EXECS_PER_ROUND = 4


Target: TypeAlias = tuple[str, str, str, float]
"""One Running Pod to sample, `(key, cluster, pod, gpus)` (KEY … GPUS name the places): its Pod CR key, cluster
namespace, data-plane pod name, the GPUs it requests. A plain tuple, not a dataclass: CPython's cycle collector stops
tracking a tuple of strings and numbers, and the TUI's usage reads keep one a Running Pod from round to round
(Targets): as dataclasses, bench/tui.py's 50,000 were a third of what each full pass of the collector walked."""
KEY: Final = 0
CLUSTER: Final = 1
POD: Final = 2
GPUS: Final = 3


def pod_metrics(access: ClusterAccess, cluster: str) -> dict[str, tuple[float, int]] | None:
    """{pod: (millicores, bytes)} of one member cluster; None when it serves no PodMetrics (or did not answer)."""
    try:
        plane = access.data_plane(cluster)
        if plane is None:
            return None
        body = plane.json("GET", METRICS_PATH, Request("list", "pods.metrics.k8s.io", None, keys.WORKLOAD_NAMESPACE,
                                                       plane.source), timeout=10)
    except (ApiError, Unreachable):
        return None
    return parse_pod_metrics(body) if isinstance(body, dict) else None


def _fixed_output(access: ClusterAccess, cluster: str, pod: str, name: str) -> str | None:
    """The stdout of fixed command `name` in the Pod; None when it is missing, failed or could not run."""
    try:
        result = run_fixed(access, cluster, pod, name)
    except (ExecFailed, ApiError, Unreachable, RlarkError):
        return None
    return result.stdout.decode("utf-8", "replace") if result.exit_code == 0 else None


def gpu_read(access: ClusterAccess, cluster: str, pod: str) -> tuple[GpuSample, ...] | None:
    """The Pod's GPUs (telemetry.sample.GpuSample rows); None when nvidia-smi is missing or its read failed."""
    text = _fixed_output(access, cluster, pod, "gpu-query")
    return (parse_nvidia_smi(text) or None) if text is not None else None


def cgroup_read(access: ClusterAccess, cluster: str, pod: str) -> CgroupReading | None:
    text = _fixed_output(access, cluster, pod, "cgroup-usage")
    return parse_cgroup(text, time.time()) if text is not None else None


def sample(access: ClusterAccess, targets: list[Target], previous: UsageState | None = None, *,
           exec_seconds: float = EXEC_SECONDS, execs_per_round: int | None = EXECS_PER_ROUND,
           metrics_seconds: float = METRICS_SECONDS, cpu_memory: bool = True) -> UsageState:
    """One round: each cluster's PodMetrics when due, then at most `execs_per_round` execs (None: every due Pod,
    as `rlark top` reads), EXECS_IN_FLIGHT at once, the longest-unread Pods first, none in a Pod exec'd into less
    than `exec_seconds` ago. Samples of Pods no longer in `targets` go. `cpu_memory=False`: GPUs only (no
    PodMetrics, no cgroup reads)."""
    from rlark_tui.cluster.access import parallel_map

    previous = previous or UsageState()
    now = time.time()
    wanted = {t[KEY] for t in targets}
    clusters = sorted({t[CLUSTER] for t in targets})
    metrics_at = {c: at for c, at in previous.metrics_at.items() if c in clusters}
    served = {c: ok for c, ok in previous.metrics_served.items() if c in clusters}
    due = [c for c in clusters if cpu_memory and now - metrics_at.get(c, float("-inf")) >= metrics_seconds]
    listed: dict[str, dict[str, tuple[float, int]]] = {}
    for cluster, answer in zip(due, parallel_map(lambda c: pod_metrics(access, c), due)):
        metrics_at[cluster] = now
        served[cluster] = answer is not None
        if answer is not None:
            listed[cluster] = answer

    exec_at = {k: v for k, v in previous.exec_at.items() if k in wanted}
    cgroups = {k: v for k, v in previous.cgroups.items() if k in wanted}

    def kind(target: Target) -> str | None:
        """The exec a Pod is due for: its GPUs, or its cgroup where the cluster serves no PodMetrics (a GPU Pod
        there alternates between the two, still one exec per interval)."""
        needs_cgroup = cpu_memory and not served.get(target[CLUSTER], False)
        if target[GPUS] > 0 and needs_cgroup:
            return "cgroup-usage" if exec_at.get(target[KEY], (0.0, ""))[1] == "gpu-query" else "gpu-query"
        return "gpu-query" if target[GPUS] > 0 else "cgroup-usage" if needs_cgroup else None

    due_execs = ((exec_at.get(t[KEY], (float("-inf"), ""))[0], t[KEY], t) for t in targets
                 if kind(t) is not None and now - exec_at.get(t[KEY], (float("-inf"), ""))[0] >= exec_seconds)
    first = (sorted(due_execs, key=lambda item: item[:2]) if execs_per_round is None
             else heapq.nsmallest(execs_per_round, due_execs, key=lambda item: item[:2]))
    chosen = [(t, what) for _, _, t in first if (what := kind(t)) is not None]

    def run(item: tuple[Target, str]) -> tuple[GpuSample, ...] | CgroupReading | None:
        (_, cluster, pod, _), what = item
        if what == "gpu-query":
            return gpu_read(access, cluster, pod)
        return cgroup_read(access, cluster, pod)

    gpus_read: dict[str, tuple[GpuSample, ...] | None] = {}
    for (target, what), read in zip(chosen, parallel_map(run, chosen, workers=EXECS_IN_FLIGHT)):
        exec_at[target[KEY]] = (now, what)
        if what == "gpu-query":
            gpus_read[target[KEY]] = read if isinstance(read, tuple) else None
        elif isinstance(read, CgroupReading):
            cgroups[target[KEY]] = read

    samples: dict[str, PodUsage] = {}
    for key, cluster, pod, _ in targets:
        old = previous.samples.get(key)
        gpus = gpus_read[key] if key in gpus_read else (old[SAMPLE_GPUS] if old is not None else None)
        cpu: float | None = None
        memory: int | None = None
        sources = ["nvidia-smi"] if gpus else []
        if cluster in listed or (served.get(cluster) and old is not None):
            found: tuple[float, int] | None = listed[cluster].get(pod) if cluster in listed else (
                (old[CPU_MILLICORES], old[MEMORY_BYTES])
                if old is not None and old[CPU_MILLICORES] is not None and old[MEMORY_BYTES] is not None else None)
            if found is not None:
                cpu, memory = found[0], int(found[1])
                sources.append("podmetrics")
        elif key in cgroups:
            reading = cgroups[key]
            before = previous.cgroups.get(key)
            cpu = cgroup_millicores(before, reading) if before is not reading else (
                old[CPU_MILLICORES] if old is not None else None)
            memory = reading.memory_bytes
            sources.append("cgroup")
        source = "+".join(sources) or "none"
        if (old is not None and old[SAMPLE_GPUS] is gpus and old[CPU_MILLICORES] == cpu and old[MEMORY_BYTES] == memory
                and old[SOURCE] == source):
            samples[key] = old  # the same numbers: a round that read nothing new equals the last one
        else:
            samples[key] = usage_sample(key, now, gpus, cpu, memory, source)
    return UsageState(MappingProxyType(samples), MappingProxyType(exec_at), MappingProxyType(cgroups),
                      MappingProxyType(metrics_at), MappingProxyType(served))


def _job_targets(index: SnapshotIndex, job: Job) -> tuple[tuple[tuple[str, object], ...], tuple[Target, ...]]:
    """One Job's targets, and the Pod list of each of its Tasks they were found in (the index's very lists)."""
    lists: list[tuple[str, object]] = []
    found: list[Target] = []
    for spec in job.tasks:
        task = job.task_name(spec)
        pods = index.pods_by_task.get(task)
        lists.append((task, pods))
        running = [pod for pod in pods or () if pod.phase == "Running" and pod.pod_name]
        if running:
            gpus = spec.gpu
            found.extend((f"{pod.namespace}/{pod.name}", pod.namespace, pod.pod_name, gpus) for pod in running)
    return tuple(lists), tuple(found)


def targets_of(index: SnapshotIndex, jobs: Mapping[str, Job]) -> list[Target]:
    """The Running Pods of these Jobs (a SnapshotIndex's Job views by name) with the GPUs their Task requests."""
    return [target for job in jobs.values() for target in _job_targets(index, job)[1]]


class Targets:
    """`targets_of` from round to round: a Job's targets are derived again only when its object or the Pod list of
    one of its Tasks is not the very one of the last call (a SnapshotIndex keeps unchanged ones identical; the
    watch makes a new dict per change). Reading every Job's specs and Pods each round is what bench/usage.py's
    5,000 Jobs with 50,000 Pods would spend a round's CPU on."""

    def __init__(self) -> None:
        self._jobs: dict[str, tuple[object, tuple[tuple[str, object], ...], tuple[Target, ...]]] = {}

    def __call__(self, index: SnapshotIndex, jobs: Mapping[str, Job]) -> list[Target]:
        by_task = index.pods_by_task
        kept: dict[str, tuple[object, tuple[tuple[str, object], ...], tuple[Target, ...]]] = {}
        found: list[Target] = []
        for name, job in jobs.items():
            entry = self._jobs.get(name)
            if entry is None or entry[0] is not job.raw or any(by_task.get(task) is not pods
                                                               for task, pods in entry[1]):
                entry = (job.raw, *_job_targets(index, job))
            kept[name] = entry
            found.extend(entry[2])
        self._jobs = kept
        return found


def job_gpu_percent(access: ClusterAccess, jobs: list[dict[str, Any]]) -> dict[str, float]:
    """Job name -> the mean utilisation over its Running Pods' GPUs, read at once (`get jobs -o wide`); Jobs
    without GPU numbers are left out."""
    from rlark_tui.cluster.kinds import PODS, TASKS
    from rlark_tui.flow.snapshot import Snapshot, source_key
    from rlark_tui.model.objects import Job
    from rlark_tui.telemetry.usage import mean_gpu_percent
    from rlark_tui.view.index import SnapshotIndex

    running = [raw for raw in jobs if Job(raw).phase == "Running"]   # the view reads a malformed status safely
    if not running:
        return {}
    index = SnapshotIndex(Snapshot(jobs={source_key(raw): raw for raw in running},
                                   tasks={source_key(raw): raw for raw in access.list(TASKS, None).items},
                                   pods={source_key(raw): raw for raw in access.list(PODS, None).items}))
    targets = [t for t in targets_of(index, index.jobs) if t[GPUS] > 0]
    samples = sample(access, targets, exec_seconds=0.0, execs_per_round=None, cpu_memory=False).samples
    found = {}
    for name, job in index.jobs.items():
        percent = mean_gpu_percent(samples.get(f"{p.namespace}/{p.name}") for p in index.job_pods(job))
        if percent is not None:
            found[name] = percent
    return found
