"""Pure view model of the screens: job list rows, Workers rows and Pod rows from one Snapshot.

No Textual and no I/O here: every value shown comes from the Snapshot (L3: nothing invented).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime

from rlark_tui.model import Job, Node, Pod, Task, TaskSpec
from rlark_tui.model.timefmt import parse_time, short_age
from rlark_tui.snapshot import Snapshot

TERMINAL_PHASES = ("Succeeded", "Failed")


def age(created: str, now: datetime) -> str:
    """kubectl-style age (`45s`, `12m`, `3h`, `2d`); empty when the time is unknown."""
    start = parse_time(created)
    return short_age(start, now) if start else ""


class SnapshotIndex:
    """Jobs, their Tasks and the Tasks' Pods of one Snapshot, grouped once.

    Given the previous index, objects that are the very same dicts as before (the reconciler keeps
    unchanged objects) reuse their views and derived keys, so a small change costs little.
    """

    def __init__(self, snapshot: Snapshot, previous: "SnapshotIndex | None" = None) -> None:
        self.snapshot = snapshot
        self.jobs = {name: Job(raw) for name, raw in snapshot.jobs.items()}
        old_tasks = previous._task_entries if previous is not None else {}
        old_pods = previous._pod_entries if previous is not None else {}
        self._task_entries: dict[str, tuple[dict, Task, str, str]] = {}
        self.tasks_by_job: dict[str, list[Task]] = defaultdict(list)
        self.tasks_by_name: dict[str, Task] = {}
        for key, raw in snapshot.tasks.items():
            entry = old_tasks.get(key)
            if entry is None or entry[0] is not raw:
                task = Task(raw)
                entry = (raw, task, task.job_name, task.name)
            self._task_entries[key] = entry
            self.tasks_by_job[entry[2]].append(entry[1])
            self.tasks_by_name[entry[3]] = entry[1]
        self._pod_entries: dict[str, tuple[dict, tuple[int, str, str], str, Pod]] = {}
        grouped: dict[str, list[tuple[tuple[int, str, str], Pod]]] = defaultdict(list)
        seen: set[tuple[str, str]] = set()
        for key, raw in snapshot.pods.items():
            entry = old_pods.get(key)
            if entry is None or entry[0] is not raw:
                pod = Pod(raw)
                shown = pod.pod_name or pod.name
                tail = shown.rpartition("-")[2]
                entry = (raw, (int(tail) if tail.isdigit() else 1 << 30, shown, pod.name), pod.task_name, pod)
            self._pod_entries[key] = entry
            sort_key, task_name = entry[1], entry[2]
            if (task_name, sort_key[1]) in seen:
                continue
            seen.add((task_name, sort_key[1]))
            grouped[task_name].append((sort_key, entry[3]))
        self.pods_by_task: dict[str, list[Pod]] = defaultdict(list)
        for task_name, pods in grouped.items():
            pods.sort(key=lambda item: item[0])
            self.pods_by_task[task_name] = [pod for _, pod in pods]
        self.nodes = [Node(raw) for raw in snapshot.nodes.values()]

    def job(self, name: str) -> Job | None:
        return self.jobs.get(name)

    def task_for(self, job: Job, spec: TaskSpec) -> Task | None:
        return self.tasks_by_name.get(job.task_name(spec))

    def job_pods(self, job: Job) -> list[Pod]:
        return [pod for spec in job.tasks for pod in self.pods_by_task.get(job.task_name(spec), [])]


@dataclass(frozen=True)
class JobRow:
    """One line of the job list."""

    name: str
    display_name: str
    job_type: str
    phase: str
    roles: str
    pods_ready: int
    pods_expected: int
    header_node: str
    created: str

    @property
    def pods(self) -> str:
        return f"{self.pods_ready}/{self.pods_expected}"

    def search_fields(self) -> tuple[str, ...]:
        """What the `/` filter matches against, field by field (so `^` and `$` anchor to a field)."""
        return (self.name, self.display_name, self.job_type, self.phase, self.roles, self.header_node)


def expected_pods(index: SnapshotIndex, job: Job) -> int:
    """Replicas the platform currently asks for: the Tasks' replicas (0 while stopped), else the Job spec."""
    if job.stopped:
        return 0
    total = 0
    for spec in job.tasks:
        task = index.task_for(job, spec)
        total += task.replicas if task is not None else spec.replicas
    return total


def job_row(index: SnapshotIndex, job: Job) -> JobRow:
    pods = index.job_pods(job)
    head_task = job.head_task_name
    header_node = next((p.node for p in pods if p.task_name == head_task and p.node), "")
    roles = ", ".join(dict.fromkeys(spec.role_display_name for spec in job.tasks))
    return JobRow(
        name=job.name,
        display_name=job.display_name,
        job_type=job.job_type,
        phase=job.shown_status,
        roles=roles,
        pods_ready=sum(1 for p in pods if p.phase == "Running"),
        pods_expected=expected_pods(index, job),
        header_node=header_node,
        created=job.creation_timestamp,
    )


RowCache = dict[str, tuple[tuple, JobRow]]


def job_rows(index: SnapshotIndex, cache: RowCache | None = None) -> list[JobRow]:
    """Rows of every Job; with a cache, a Job whose Job, Task and Pod objects are the very same objects
    as last time (snapshots share unchanged dicts) reuses its row instead of deriving it again."""
    if cache is None:
        return [job_row(index, job) for job in index.jobs.values()]
    rows = []
    for name, job in index.jobs.items():
        sources = (job.raw, *(t.raw for t in index.tasks_by_job.get(name, ())), *(p.raw for p in index.job_pods(job)))
        cached = cache.get(name)
        if cached is not None and len(cached[0]) == len(sources) and all(
                a is b for a, b in zip(cached[0], sources)):
            rows.append(cached[1])
            continue
        row = job_row(index, job)
        cache[name] = (sources, row)
        rows.append(row)
    for gone in [name for name in cache if name not in index.jobs]:
        del cache[gone]
    return rows


@dataclass(frozen=True)
class PodRow:
    """One Pod of a role, as the Pod CR reports it."""

    key: str
    name: str
    node: str
    ip: str
    phase: str
    message: str


@dataclass(frozen=True)
class RoleRow:
    """One role (Task) of a Job in the Workers view: expected vs actual Pods and the Pods."""

    task_name: str
    role: str
    head: bool
    expected: int
    phase: str
    message: str
    namespace: str
    pods: tuple[PodRow, ...] = field(default_factory=tuple)

    @property
    def running(self) -> int:
        return sum(1 for p in self.pods if p.phase == "Running")


def role_rows(index: SnapshotIndex, job: Job) -> list[RoleRow]:
    """One row per role in `spec.tasks` order; Pods from the Pod CRs labelled with the Task name."""
    status_by_task = {t.get("name"): t for t in job.status_tasks}
    rows = []
    for spec in job.tasks:
        task_name = job.task_name(spec)
        task = index.task_for(job, spec)
        status = status_by_task.get(task_name, {})
        pods = tuple(
            PodRow(key=pod.namespace + "/" + pod.name, name=pod.pod_name or pod.name, node=pod.node,
                   ip=pod.ip, phase=pod.phase, message=pod.message)
            for pod in index.pods_by_task.get(task_name, [])
        )
        rows.append(RoleRow(
            task_name=task_name,
            role=spec.role_display_name,
            head=spec.head,
            expected=0 if job.stopped else (task.replicas if task else spec.replicas),
            phase=(task.phase if task else "") or str(status.get("phase") or ""),
            message=(task.message if task else "") or str(status.get("message") or ""),
            namespace=task.namespace if task else "",
            pods=pods,
        ))
    return rows


def can_stop_or_start(job: Job) -> str:
    """Empty when Stop/Start applies; otherwise why not (Succeeded/Failed Jobs are terminal)."""
    if job.phase in TERMINAL_PHASES:
        return (f"{job.name} is {job.phase}: a finished Job cannot be stopped or started on the "
                "platform, only deleted (ctrl+d) and re-created")
    return ""


def ssh_fingerprint(public_key: str) -> str:
    """`SHA256:<base64>` fingerprint and comment of an OpenSSH public key, as ssh-keygen -l prints it."""
    parts = public_key.split()
    if len(parts) < 2:
        return "invalid key" if public_key.strip() else ""
    try:
        blob = base64.b64decode(parts[1], validate=True)
    except (binascii.Error, ValueError):
        return f"{parts[0]} (unreadable key data)"
    digest = base64.b64encode(hashlib.sha256(blob).digest()).decode().rstrip("=")
    comment = " ".join(parts[2:])
    return f"{parts[0]} SHA256:{digest}" + (f" {comment}" if comment else "")
