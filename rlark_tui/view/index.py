"""Pure view model of the screens: job list rows, Workers rows and Pod rows from one Snapshot.

`SnapshotIndex` is the one place that derives data from a Snapshot (Pods by Task, a Job's Pods, the job list's
complete rows, which rows and topic results changed): the reconciler's topic reads and every screen use it.
No Textual and no I/O here: every value shown comes from the Snapshot (L3: nothing invented).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import itertools
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING

from rlark_tui.alerting.rules import ALL_KEY as ALERT_SCOPE
from rlark_tui.alerting.rules import MARKS, Alert, AlertsState
from rlark_tui.flow.snapshot import RESULTS, Snapshot
from rlark_tui.model.lifecycle import finished_refusal
from rlark_tui.model.naming import job_type
from rlark_tui.model.objects import Job, Pod, Task, TaskSpec
from rlark_tui.model.placement import NodeSet, node_set_after
from rlark_tui.model.podstate import PodHealth
from rlark_tui.model.timefmt import parse_time, short_age
from rlark_tui.telemetry.balance import RoleUse, by_role, imbalance
from rlark_tui.telemetry.curves import MetricsState
from rlark_tui.telemetry.progress import ProgressState
from rlark_tui.telemetry.sample import GPUS, PodUsage
from rlark_tui.telemetry.usage import UsageState, mean_gpu_percent, pod_usage
from rlark_tui.text.parse import ascii_int
from rlark_tui.text.sinks import shell_line

if TYPE_CHECKING:
    from rlark_tui.telemetry.diagnosis import Diagnosis

UNSETTLED = ("Running", "Pending", "Failed")
"""Phases whose Pods may exist and be unwell: the job list's REASON reads their health."""
HISTORY = 32
"""Derivations an index remembers: a screen that skipped up to this many indexes still updates only what changed."""
MAX_ROLES_SHOWN = 64
"""Roles the Job detail's Overview details, its Workers tab and GPU use show, and whose Tasks' events its Events tab
shows; the rest are counted. A Job's author sets how many: 3,000 tasks were 100,000 lines of the Overview, 4.6-5.9 s
of the UI thread at each change of the Job while its detail was open, then 2.5-2.7 s of the Workers tab's and the
rest's derivations."""
MAX_PODS_SHOWN = 64
"""Pods of a role the Workers tab shows (a role's replicas are its author's); the rest are counted."""


TaskEntry = tuple[dict, Task, str, str]
"""A Task CR: its dict, its view, its Job's name and its own name."""
PodEntry = tuple[dict, tuple[int, str, str], str, Pod]
"""A Pod CR: its dict, its sort key (ordinal, shown name, name), its Task's name and its view."""


def _task_entry(raw: dict) -> TaskEntry:
    task = Task(raw)
    return raw, task, task.job_name, task.name


def _pod_entry(raw: dict) -> PodEntry:
    pod = Pod(raw)
    shown = pod.pod_name or pod.name
    ordinal = ascii_int(shown.rpartition("-")[2])
    return raw, (ordinal if ordinal is not None else 1 << 30, shown, pod.name), pod.task_name, pod


class SnapshotIndex:
    """Jobs, their Tasks and the Tasks' Pods of one Snapshot, grouped once.

    Given the previous index, only the objects that changed are looked at again: the Snapshot's `changes`
    name them when it directly follows the previous one, else they are found by identity (the reconciler
    keeps unchanged objects as the very same dicts). `changed_jobs` names the Jobs whose objects may differ
    from the previous index (None: all of them); `changed_results[topic]` the keys whose subscription result
    differs; `rows` holds every Job's complete JobRow (derived again only for changed Jobs and results) and
    `rows_changed_since(serial)` names the rows that differ from an earlier index's. The previous index is never
    modified.
    """

    _serials = itertools.count(1)

    def __init__(self, snapshot: Snapshot, previous: SnapshotIndex | None = None) -> None:
        self.snapshot = snapshot
        self.serial = next(self._serials)
        self.base = previous.serial if previous is not None else 0
        """Serial of the index this one was derived from (0: built from scratch)."""
        if previous is None:
            self._build()
        else:
            self._derive(previous)
        self.nodes: NodeSet = (NodeSet(snapshot.nodes.values()) if previous is None
                               else node_set_after(previous.nodes, snapshot.nodes.values())
                               if self._changed_keys("nodes", previous) else previous.nodes)
        """The Nodes, kept from the previous index while they are the same (and so what was derived of them), else
        made after them: what was derived of them is updated by the Nodes that changed."""
        self.changed_results: dict[str, frozenset[str] | None] = {
            name: self._changed_results(name, previous) for name in RESULTS}
        self.alert_marks: dict[str, str] = (
            previous.alert_marks if previous is not None and not self.changed_results["alerts"]
            else job_alert_marks(self.alerts_of()))
        """Job name -> the mark of its most severe firing alert and that alert's rule (`✗ run-crashed`)."""
        self.gpu_percent: dict[str, float] = (
            previous.gpu_percent if previous is not None and not self.changed_results["usage"]
            else job_gpu_percent(self, self.usage_of()))
        """Job name -> the mean utilisation over its Running Pods' GPUs (the usage topic's samples)."""
        self.rows, self.changed_rows = self._derive_rows(previous)
        self._history: tuple[tuple[int, int, frozenset[str] | None], ...] = (
            (previous._history[1 - HISTORY:] if previous is not None else ())
            + ((self.base, self.serial, self.changed_rows),))

    def _changed_results(self, name: str, previous: SnapshotIndex | None) -> frozenset[str] | None:
        """The keys of topic `name` whose result is not the previous index's very object (None: no previous)."""
        if previous is None:
            return None
        new, old = getattr(self.snapshot, name), getattr(previous.snapshot, name)
        if new is old:
            return frozenset()
        return frozenset({key for key, value in new.items() if old.get(key) is not value}
                         | {key for key in old if key not in new})

    def _derive_rows(self, previous: SnapshotIndex | None) -> tuple[dict[str, JobRow], frozenset[str] | None]:
        """Every Job's row; from a previous index only the Jobs whose objects, health or progress changed are
        derived again. Returns the rows and the names derived again or dropped (None: all)."""
        health, progress = self.changed_results["health"], self.changed_results["progress"]
        if previous is None or self.changed_jobs is None or health is None or progress is None:
            return {name: job_row(self, job) for name, job in self.jobs.items()}, None
        marks, before = self.alert_marks, previous.alert_marks
        names = {name for name in (self.changed_jobs | health | progress
                                   | {n for n in marks.keys() | before.keys() if marks.get(n) != before.get(n)}
                                   | {n for n in self.gpu_percent.keys() | previous.gpu_percent.keys()
                                      if self.gpu_percent.get(n) != previous.gpu_percent.get(n)})
                 if name in self.jobs or name in previous.rows}
        if not names:
            return previous.rows, frozenset()
        rows = dict(previous.rows)
        for name in names:
            job = self.jobs.get(name)
            if job is None:
                rows.pop(name, None)
            else:
                rows[name] = job_row(self, job)
        return rows, frozenset(names)

    def rows_changed_since(self, serial: int) -> frozenset[str] | None:
        """The Jobs whose rows differ from those of index `serial` (an earlier index of this chain); None when
        that index is too far back or was not an ancestor (then every row may differ)."""
        if serial == self.serial:
            return frozenset()
        names: set[str] = set()
        for base, _serial, changed in reversed(self._history):
            if changed is None:
                return None
            names |= changed
            if base == serial:
                return frozenset(names)
        return None

    def _changed_keys(self, kind: str, previous: SnapshotIndex) -> set[str]:
        new, old = getattr(self.snapshot, kind), getattr(previous.snapshot, kind)
        if new is old:
            return set()
        hint = self.snapshot.changes.get(kind) if self.snapshot.version == previous.snapshot.version + 1 else None
        if hint is not None:
            return set(hint)
        return {key for key, raw in new.items() if old.get(key) is not raw} | {key for key in old if key not in new}

    def _build(self) -> None:
        snapshot = self.snapshot
        self.changed_jobs: frozenset[str] | None = None
        self.jobs = {name: Job(raw) for name, raw in snapshot.jobs.items()}
        self._job_by_task = {job.task_name(spec): name for name, job in self.jobs.items() for spec in job.tasks}
        self._task_entries: dict[str, TaskEntry] = {}
        self._task_keys_by_job: dict[str, dict[str, None]] = defaultdict(dict)
        for key, raw in snapshot.tasks.items():
            entry = self._task_entries[key] = _task_entry(raw)
            self._task_keys_by_job[entry[2]][key] = None
        self.tasks_by_job: dict[str, list[Task]] = defaultdict(list)
        self.tasks_by_name: dict[str, Task] = {}
        for entry in self._task_entries.values():
            self.tasks_by_job[entry[2]].append(entry[1])
            self.tasks_by_name[entry[3]] = entry[1]
        self._pod_entries: dict[str, PodEntry] = {}
        self._pod_keys_by_task: dict[str, dict[str, None]] = defaultdict(dict)
        for key, raw in snapshot.pods.items():
            pod_entry = self._pod_entries[key] = _pod_entry(raw)
            self._pod_keys_by_task[pod_entry[2]][key] = None
        self.pods_by_task: dict[str, list[Pod]] = defaultdict(list)
        for task_name, keys in self._pod_keys_by_task.items():
            self.pods_by_task[task_name] = self._group_pods(keys)

    def _derive(self, previous: SnapshotIndex) -> None:
        snapshot = self.snapshot
        affected_jobs: set[str] = set()
        affected_tasks: set[str] = set()
        job_keys = self._changed_keys("jobs", previous)
        task_keys = self._changed_keys("tasks", previous)
        pod_keys = self._changed_keys("pods", previous)
        # unchanged parts are shared with the previous index (neither is ever modified afterwards)
        self.jobs = dict(previous.jobs) if job_keys else previous.jobs
        self._job_by_task = dict(previous._job_by_task) if job_keys else previous._job_by_task
        for name in job_keys:
            affected_jobs.add(name)
            old_job = self.jobs.pop(name, None)
            if old_job is not None:
                for spec in old_job.tasks:
                    self._job_by_task.pop(old_job.task_name(spec), None)
            raw = snapshot.jobs.get(name)
            if raw is not None:
                job = self.jobs[name] = Job(raw)
                for spec in job.tasks:
                    self._job_by_task[job.task_name(spec)] = name
        copy = bool(task_keys)
        self._task_entries = dict(previous._task_entries) if copy else previous._task_entries
        self._task_keys_by_job = defaultdict(dict, previous._task_keys_by_job) if copy else previous._task_keys_by_job
        self.tasks_by_job = defaultdict(list, previous.tasks_by_job) if copy else previous.tasks_by_job
        self.tasks_by_name = dict(previous.tasks_by_name) if copy else previous.tasks_by_name
        regroup_jobs: set[str] = set()
        for key in task_keys:
            old = self._task_entries.pop(key, None)
            raw = snapshot.tasks.get(key)
            new = _task_entry(raw) if raw is not None else None
            if new is not None:
                self._task_entries[key] = new
            for entry in (old, new):
                if entry is not None:
                    regroup_jobs.add(entry[2])
                    affected_tasks.add(entry[3])
            if old is not None and (new is None or new[2] != old[2]):
                keys = self._task_keys_by_job[old[2]] = dict(self._task_keys_by_job[old[2]])
                keys.pop(key, None)
            if new is not None and key not in self._task_keys_by_job.get(new[2], ()):
                self._task_keys_by_job[new[2]] = {**self._task_keys_by_job.get(new[2], {}), key: None}
        for job_name in regroup_jobs:
            entries = [self._task_entries[key] for key in self._task_keys_by_job.get(job_name, ())]
            if entries:
                self.tasks_by_job[job_name] = [entry[1] for entry in entries]
            else:
                self.tasks_by_job.pop(job_name, None)
                self._task_keys_by_job.pop(job_name, None)
            affected_jobs.add(job_name)
        for task_name in affected_tasks:
            self.tasks_by_name.pop(task_name, None)
        for entry in self._task_entries.values() if affected_tasks else ():
            if entry[3] in affected_tasks:
                self.tasks_by_name[entry[3]] = entry[1]
        copy = bool(pod_keys)
        self._pod_entries = dict(previous._pod_entries) if copy else previous._pod_entries
        self._pod_keys_by_task = defaultdict(dict, previous._pod_keys_by_task) if copy else previous._pod_keys_by_task
        self.pods_by_task = defaultdict(list, previous.pods_by_task) if copy else previous.pods_by_task
        regroup_tasks: set[str] = set()
        for key in pod_keys:
            old_pod = self._pod_entries.pop(key, None)
            raw = snapshot.pods.get(key)
            new_pod = _pod_entry(raw) if raw is not None else None
            if new_pod is not None:
                self._pod_entries[key] = new_pod
            if old_pod is not None and (new_pod is None or new_pod[2] != old_pod[2]):
                keys = self._pod_keys_by_task[old_pod[2]] = dict(self._pod_keys_by_task[old_pod[2]])
                keys.pop(key, None)
            if new_pod is not None and key not in self._pod_keys_by_task.get(new_pod[2], ()):
                self._pod_keys_by_task[new_pod[2]] = {**self._pod_keys_by_task.get(new_pod[2], {}), key: None}
            regroup_tasks.update(entry[2] for entry in (old_pod, new_pod) if entry is not None)
        for task_name in regroup_tasks:
            pod_keys_of_task = self._pod_keys_by_task.get(task_name)
            if pod_keys_of_task:
                self.pods_by_task[task_name] = self._group_pods(pod_keys_of_task)
            else:
                self.pods_by_task.pop(task_name, None)
                self._pod_keys_by_task.pop(task_name, None)
        affected_tasks |= regroup_tasks
        affected_jobs.update(self._job_by_task[name] for name in affected_tasks if name in self._job_by_task)
        self.changed_jobs = frozenset(affected_jobs)

    def _group_pods(self, keys: Iterable[str]) -> list[Pod]:
        """The Pods of one Task by ordinal, the first of each shown name only."""
        seen: set[str] = set()
        found: list[tuple[tuple[int, str, str], Pod]] = []
        for key in keys:
            _raw, sort_key, _task, pod = self._pod_entries[key]
            if sort_key[1] not in seen:
                seen.add(sort_key[1])
                found.append((sort_key, pod))
        found.sort(key=lambda item: item[0])
        return [pod for _, pod in found]

    def job(self, name: str) -> Job | None:
        return self.jobs.get(name)

    def task_for(self, job: Job, spec: TaskSpec) -> Task | None:
        return self.tasks_by_name.get(job.task_name(spec))

    def job_pods(self, job: Job) -> list[Pod]:
        return [pod for spec in job.tasks for pod in self.pods_by_task.get(job.task_name(spec), [])]

    # ---- the topics' results, typed (a result of another type, or none, is None) -------------------------------

    def ray_of(self, job: str) -> dict | None:
        """The Job's last Ray dashboard status (alive nodes, status text, error, polled_at)."""
        found = self.snapshot.ray.get(job)
        return found if isinstance(found, dict) else None

    def diagnosis_of(self, job: str) -> Diagnosis | None:
        """The Job's first failure and timeline as last read (None before a read). The diagnosis module is
        imported by the first read of one: the TUI's start-up does not need it (bench/startup.py)."""
        from rlark_tui.telemetry.diagnosis import Diagnosis
        found = self.snapshot.diagnosis.get(job)
        return found if isinstance(found, Diagnosis) else None

    def health_of(self, job: str) -> Mapping[str, PodHealth]:
        """Pod CR key -> the health of its `main` container, as last read ({} before a read)."""
        found = self.snapshot.health.get(job)
        return found if isinstance(found, Mapping) else {}

    def progress_of(self, job: str) -> ProgressState | None:
        found = self.snapshot.progress.get(job)
        return found if isinstance(found, ProgressState) else None

    def metrics_of(self, job: str) -> MetricsState | None:
        found = self.snapshot.metrics.get(job)
        return found if isinstance(found, MetricsState) else None

    def alerts_of(self, key: str = ALERT_SCOPE) -> AlertsState | None:
        """The alert book of a scope (default: the app's, every Job)."""
        found = self.snapshot.alerts.get(key)
        return found if isinstance(found, AlertsState) else None

    def usage_of(self, key: str = ALERT_SCOPE) -> UsageState | None:
        found = self.snapshot.usage.get(key)
        return found if isinstance(found, UsageState) else None

    def evidence_of(self, job: str) -> object | None:
        """The Job's run-check evidence (`flow.polls.Gathered`: a type of the flow above this package)."""
        return self.snapshot.evidence.get(job)

    def listed(self, topic: str, key: str) -> object | None:
        """A listing topic's result (workflows, storage, sshkeys, lookups: `flow.polls.Listed`, `Folder`,
        `GatewayLookups`, types of the flow above this package)."""
        if topic not in ("workflows", "storage", "sshkeys", "lookups"):
            raise ValueError(f"{topic} is not a listing topic")
        return getattr(self.snapshot, topic).get(key)

    def pod(self, key: str) -> Pod | None:
        """The Pod CR under Snapshot key `namespace/name`, or None."""
        entry = self._pod_entries.get(key)
        return entry[3] if entry is not None else None

    def all_pods(self) -> list[Pod]:
        """Every Pod CR of the Snapshot (each Task's, all ordinals), in the Snapshot's order."""
        return [entry[3] for entry in self._pod_entries.values()]

    def pod_namespaces(self) -> list[str]:
        """The member clusters' namespaces that hold Pod CRs (from the Snapshot's `namespace/name` keys), sorted."""
        return sorted({key.partition("/")[0] for key in self.snapshot.pods if "/" in key})


@dataclass(frozen=True)
class JobRow:
    """One line of the job list, complete: the screen maps it to cells and derives nothing. A new column (an
    alert mark, GPU%) is a field here, filled in `job_row` from the index (its topic result in the Snapshot),
    and its topic named in `SnapshotIndex._derive_rows` so a new result derives the row again."""

    name: str
    display_name: str
    job_type: str
    phase: str
    roles: str
    pods_running: int
    """Pods in phase Running (not Kubernetes' Ready condition)."""
    pods_expected: int
    header_node: str
    created: str
    created_at: datetime | None = None
    reason: str = ""
    """The first failure reason among the Job's Pods (`OOMKilled (exit 137)`), `+N` when more Pods have one."""
    progress: ProgressState | None = None
    """The Running Job's `telemetry.progress.ProgressState` (rendered against the clock: `progress_text`)."""
    alert: str = ""
    """The mark and rule of the Job's most severe firing alert (`✗ run-crashed`, `+N` when more fire)."""
    gpu_percent: float | None = None
    """The mean utilisation over the Job's GPUs (None: no GPU numbers)."""
    context: str = ""
    """The kubeconfig context of the Job in a list of several contexts (view.contexts.merged_rows); "" for one."""

    @property
    def key(self) -> str:
        """The row's key in the list: the Job name, and in a list of several contexts also its context."""
        return row_key(self.context, self.name)

    @property
    def pods(self) -> str:
        return f"{self.pods_running}/{self.pods_expected}"

    @property
    def reason_cell(self) -> str:
        """The REASON column: the alert mark first, then the Pods' failure reason."""
        return f"{self.alert} {self.reason}".strip() if self.alert else self.reason

    def progress_text(self, now: float) -> str:
        return self.progress.render(now) if self.progress is not None else ""

    def age(self, now: datetime) -> str:
        return short_age(self.created_at, now) if self.created_at is not None else ""

    def search_fields(self) -> tuple[str, ...]:
        """What the `/` filter matches against, field by field (so `^` and `$` anchor to a field)."""
        fields = (self.name, self.display_name, self.job_type, self.phase, self.roles, self.header_node)
        return (self.context, *fields) if self.context else fields


def row_key(context: str, name: str) -> str:
    """A job list row's key: the Job name; with a context, `name@context` (no Job name holds an `@`)."""
    return f"{name}@{context}" if context else name


def expected_pods(index: SnapshotIndex, job: Job, specs: list[TaskSpec] | None = None,
                  task_names: list[str] | None = None) -> int:
    """Replicas the platform currently asks for: the Tasks' replicas (0 while stopped), else the Job spec
    (`specs` and their `task_names`: the Job's `tasks` and Task names, when the caller has them already)."""
    if job.stopped:
        return 0
    specs = job.tasks if specs is None else specs
    names = [job.task_name(spec) for spec in specs] if task_names is None else task_names
    total = 0
    for spec, name in zip(specs, names):
        task = index.tasks_by_name.get(name)
        total += task.replicas if task is not None else spec.replicas
    return total


def job_alert_marks(state: AlertsState | None) -> dict[str, str]:
    """Job name -> `✗ run-crashed` for its most severe firing alert (+N when it has more), from an alert book."""
    if state is None:
        return {}
    firing: dict[str, list[Alert]] = {}
    for alert in state.book.firing():
        if alert.job:
            firing.setdefault(alert.job, []).append(alert)
    return {job: f"{MARKS[found[0].severity]} {found[0].rule}" + (f" +{len(found) - 1}" if len(found) > 1 else "")
            for job, found in firing.items()}


def job_gpu_percent(index: SnapshotIndex, state: UsageState | None) -> dict[str, float]:
    """Job name -> the mean GPU utilisation of its Pods' samples in a `usage` result (Jobs without GPU numbers
    are left out). Only the Jobs of the samples with GPU numbers are looked at: a round's result arrives on the
    UI thread, and walking every Job's Pods for the few sampled by nvidia-smi would hold it (bench/usage.py)."""
    samples = state.samples if state is not None else {}
    candidates = {index._job_by_task.get(entry[2]) for key, sample in samples.items()
                  if sample[GPUS] and (entry := index._pod_entries.get(key)) is not None}
    found: dict[str, float] = {}
    for name in candidates:
        job = index.jobs.get(name) if name is not None else None
        if name is None or job is None or job.phase != "Running":
            continue
        percent = mean_gpu_percent(pod_usage(state, [f"{p.namespace}/{p.name}" for p in index.job_pods(job)]).values())
        if percent is not None:
            found[name] = percent
    return found


def failure_reason(health: Mapping[str, PodHealth]) -> str:
    """The first failure reason of a health result (Pod key -> PodHealth), `+N` when more Pods have one."""
    reasons = [h.reason for h in health.values() if isinstance(h, PodHealth) and h.reason]
    return "" if not reasons else reasons[0] + (f" +{len(reasons) - 1}" if len(reasons) > 1 else "")


def job_row(index: SnapshotIndex, job: Job) -> JobRow:
    """The Job's row; its role specs are read once (each `job.tasks` builds them again: a relist of 5,000 Jobs,
    and the first list, derive every row)."""
    name = job.name
    specs = job.tasks
    task_names = [job.task_name(spec) for spec in specs]
    pods = [pod for task_name in task_names for pod in index.pods_by_task.get(task_name, ())]
    head_task = next((task_name for spec, task_name in zip(specs, task_names) if spec.head), None)
    header_node = next((p.node for p in pods if p.task_name == head_task and p.node), "")
    roles = ", ".join(dict.fromkeys(spec.role_display_name for spec in specs))
    phase = job.shown_status
    return JobRow(
        name=name,
        display_name=job.display_name,
        job_type=job_type(spec.role for spec in specs),
        phase=phase,
        roles=roles,
        pods_running=sum(1 for p in pods if p.phase == "Running"),
        pods_expected=expected_pods(index, job, specs, task_names),
        header_node=header_node,
        created=job.creation_timestamp,
        created_at=parse_time(job.creation_timestamp),
        reason=failure_reason(index.health_of(name)) if phase in UNSETTLED else "",
        progress=index.progress_of(name) if phase == "Running" else None,
        alert=index.alert_marks.get(name, ""),
        gpu_percent=index.gpu_percent.get(name),
    )


def job_rows(index: SnapshotIndex) -> list[JobRow]:
    """Rows of every Job (the index's own)."""
    return list(index.rows.values())


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
    """One role (Task) of a Job in the Workers view: expected vs actual Pods and the first of its Pods."""

    task_name: str
    role: str
    head: bool
    expected: int
    phase: str
    message: str
    namespace: str
    pods: tuple[PodRow, ...] = field(default_factory=tuple)
    """The Pods shown: the first `role_rows`' `pods_shown` by ordinal (and a kept one)."""
    pod_count: int = 0
    """All the role's Pods (`pods` may hold fewer)."""
    running: int = 0
    """Of all the role's Pods, those in phase Running."""


@dataclass(frozen=True)
class Roles:
    """The Workers view of a Job: the roles shown (the first ones in `spec.tasks` order, and a kept one) and how
    many the Job has in all."""

    rows: tuple[RoleRow, ...]
    total: int

    @property
    def more(self) -> int:
        return self.total - len(self.rows)


def _pod_row(pod: Pod) -> PodRow:
    return PodRow(key=pod.namespace + "/" + pod.name, name=pod.pod_name or pod.name, node=pod.node, ip=pod.ip,
                  phase=pod.phase, message=pod.message)


def _status_of(job: Job, specs: Sequence[TaskSpec]) -> dict[str, Mapping]:
    """Task name -> its `status.tasks` entry, for these roles only (an entry names the Task by its object name
    or, as the platform's controller writes it, by the role's short name)."""
    prefix = job.name + "-"
    wanted = {prefix + spec.name: spec.name for spec in specs}
    short = {name: task_name for task_name, name in wanted.items()}
    found: dict[str, Mapping] = {}
    status = job.raw.get("status")
    entries = status.get("tasks") if isinstance(status, Mapping) else None
    for entry in entries if isinstance(entries, list) else ():
        name = entry.get("name") if isinstance(entry, Mapping) else None
        if not isinstance(name, str):
            continue
        task_name = name if name in wanted else short.get(name)
        if task_name is not None:
            found[task_name] = entry
    return found


def _text(entry: Mapping | None, key: str) -> str:
    value = entry.get(key) if entry is not None else None
    return value if isinstance(value, str) else ""


def role_rows(index: SnapshotIndex, job: Job, limit: int = MAX_ROLES_SHOWN, pods_shown: int = MAX_PODS_SHOWN,
              keep: str = "", keep_pod: str = "") -> Roles:
    """The first `limit` roles in `spec.tasks` order, and the role of Task name `keep` wherever it is (the one
    selected), each with its first `pods_shown` Pods by ordinal (and the Pod of key `keep_pod`); Pods from the
    Pod CRs labelled with the Task name. A Job's author sets how many roles, so only those shown are derived:
    3,000 tasks were 2.5 s of the UI thread at each change of the Job while its detail was open."""
    specs = job.tasks
    prefix = job.name + "-"
    chosen = [spec for number, spec in enumerate(specs) if number < limit or prefix + spec.name == keep]
    status = _status_of(job, chosen)
    rows = []
    for spec in chosen:
        task_name = prefix + spec.name
        task = index.tasks_by_name.get(task_name)
        all_pods = index.pods_by_task.get(task_name, [])
        pods = tuple(_pod_row(pod) for number, pod in enumerate(all_pods)
                     if number < pods_shown or (keep_pod and pod.namespace + "/" + pod.name == keep_pod))
        rows.append(RoleRow(
            task_name=task_name,
            role=spec.role_display_name,
            head=spec.head,
            expected=0 if job.stopped else (task.replicas if task else spec.replicas),
            phase=(task.phase if task else "") or _text(status.get(task_name), "phase"),
            message=(task.message if task else "") or _text(status.get(task_name), "message"),
            namespace=task.namespace if task else "",
            pods=pods,
            pod_count=len(all_pods),
            running=sum(1 for pod in all_pods if pod.phase == "Running"),
        ))
    return Roles(tuple(rows), len(specs))


def tasks_with_events(index: SnapshotIndex, job: Job, limit: int) -> tuple[list[Task], int]:
    """The first `limit` of the Job's Tasks (in `spec.tasks` order) with events or image pull progress, and how
    many more have some: the Events tab's, whose Tasks a Job's author sets the number of."""
    prefix = job.name + "-"
    found: list[Task] = []
    more = 0
    for spec in job.tasks:
        task = index.tasks_by_name.get(prefix + spec.name)
        status = task.raw.get("status") if task is not None else None
        if task is None or not isinstance(status, Mapping) or not (status.get("events") or status.get("pullProgress")):
            continue
        if len(found) == limit:
            more += 1
        elif task.events or task.pull_progress:
            found.append(task)
    return found, more


@dataclass(frozen=True)
class GpuByRole:
    """The Workers tab's GPU use by role: `rlark top job`'s rows (telemetry.balance) and its imbalance note."""

    rows: tuple[RoleUse, ...]
    note: str | None

    @property
    def measured(self) -> bool:
        return any(row.util is not None for row in self.rows)


def gpu_by_role(index: SnapshotIndex, job: Job, placement: object = None) -> GpuByRole:
    """Per role, its Running Pods' samples in the usage topic's result through telemetry.balance.by_role, as
    `rlark top job` reads them, and the imbalance note (naming RLinf's component placement when it is known).
    Every role counts, shown or not; none is looked at when the Job is not Running or none of its Pods has a sample
    with GPUs (the index's `gpu_percent` knows, from the same result)."""
    state = index.usage_of()
    if state is None or job.name not in index.gpu_percent:
        return GpuByRole((), None)
    samples = state.samples
    prefix = job.name + "-"
    pods: dict[str, list[PodUsage | None]] = {}
    for spec in job.tasks:
        pods[spec.role_display_name] = [samples.get(pod.namespace + "/" + pod.name)
                                        for pod in index.pods_by_task.get(prefix + spec.name, ())
                                        if pod.phase == "Running"]
    uses = by_role(pods)
    return GpuByRole(tuple(uses), imbalance(uses, placement))


def can_stop_or_start(job: Job, verb: str = "stop or start") -> str:
    """Empty when `verb` applies; otherwise why not (model.lifecycle: Succeeded/Failed Jobs are finished)."""
    return finished_refusal(job.name, job.phase, verb)


def first_pod(index: SnapshotIndex, task_name: str) -> Pod | None:
    """The Pod CR of a Task with the lowest data-plane name (the StatefulSet's `-0`), or None."""
    pods = index.pods_by_task.get(task_name, [])
    return min(pods, key=lambda p: p.pod_name or p.name) if pods else None


def cpu_memory(requests: dict, limits: dict) -> str:
    """The overview's CPU / memory of one worker: `requests cpu 4, memory 16Gi; limits cpu 8, memory 32Gi` as the
    spec writes them (Kubernetes takes the limit as the request when only a limit is set)."""
    parts = []
    for label, values in (("requests", requests), ("limits", limits)):
        shown = [f"{name} {values[name]}" for name in ("cpu", "memory") if values.get(name) not in (None, "")]
        if shown:
            parts.append(f"{label} " + ", ".join(str(item) for item in shown))
    return "; ".join(parts) or "none set (best effort: no CPU or memory reserved)"


def running_time(start: str, end: str, now: datetime) -> str:
    """How long the Job has run (from its status.startTime to its endTime, else to `now`); '' before it started."""
    started = parse_time(start)
    if started is None:
        return ""
    ended = parse_time(end)
    return short_age(started, ended or now) + ("" if ended else " so far")


def ssh_jump_command(system_config: object, pod_name: str, user: str = "<ssh-user>") -> str:
    """The console's SSH line for a Pod: `ssh -J <user>@<sshJumpHost>[:<sshJumpPort>] root@<pod>`; "" when the
    gateway's system config names no jump host. Each word from the gateway or the cluster is quoted
    (text.sinks.shell_line): a newline in the jump host stays in its word, no second command."""
    config = system_config if isinstance(system_config, dict) else {}
    host = str(config.get("sshJumpHost") or "").strip()
    if not host or not pod_name:
        return ""
    port = str(config.get("sshJumpPort") or "").strip()
    who = user if user == "<ssh-user>" else shell_line([user])  # the placeholder is the user's to replace
    return f"ssh -J {who}@{shell_line([host + (':' + port if port else '')])} {shell_line(['root@' + pod_name])}"


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
