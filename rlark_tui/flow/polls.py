"""The periodic reads the reconciler runs per subscription (topic + key): Ray status, Pod health, run-check
evidence, gateway lookups, progress, metrics, Workflows. Each result lands in the Snapshot field named after its
topic, under its key.

Adding a topic: a blocking `fetch(access, index, key)` here (the index is the reconciler's latest SnapshotIndex:
what a read needs of the Snapshot it takes from there, e.g. `index.job_pods(job)`), a `Topic` entry in TOPICS,
and a Snapshot field of the same name; screens subscribe through `Intents.subscribe(topic, key)` (rlark_tui.flow.services).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import TYPE_CHECKING

from rlark_tui.cluster.errors import ApiError, Request, Unreachable
from rlark_tui.cluster.kinds import WORKFLOWS as WORKFLOW_KIND
from rlark_tui.cluster.metrics import PROGRESS_SECONDS, poll_metrics, snapshot_header
from rlark_tui.cluster.podhealth import health_from, pod_states, pods_health
from rlark_tui.errors import RlarkError
from rlark_tui.flow import alertpoll
from rlark_tui.flow.snapshot import SourceStatus
from rlark_tui.model.podstate import PodHealth
from rlark_tui.telemetry.progress import ProgressState
from rlark_tui.text.parse import ascii_int
from rlark_tui.view.index import SnapshotIndex

if TYPE_CHECKING:
    from rlark_tui.checks import CheckReport, RunEvidence
    from rlark_tui.cluster.access import ClusterAccess
    from rlark_tui.cluster.usage_reads import Targets

RAY = "ray"
EVIDENCE = "evidence"
DIAGNOSIS = "diagnosis"
"""A Job's first failure (`telemetry.diagnosis.Diagnosis`, the job detail's Diagnosis card): `rlark diagnose`'s
read (Pods, the Header log's last DIAGNOSIS_TAIL lines, Ray's actors, workers and dead workers' stderr) joined
with the evidence kept in the state dir, and kept when it learns more."""
DIAGNOSIS_SECONDS = 15.0
DIAGNOSIS_TAIL = 2000
LOOKUPS = "lookups"
HEALTH = "health"
"""A Job's Pods' restart counts and failure reasons (Pod CR key -> PodHealth). In brief (the job list's REASON for
the Running, Pending and Failed Jobs on screen): one pod list per data plane every 10 s. In detail (the job
detail's Workers): each Pod and its events every 3 s."""
PROGRESS = "progress"
"""A Running Job's newest progress row (the job list subscribes the Running Jobs on screen), from its Header log as
`ClusterAccess.log_reads` last read it: by the alert rounds when they read that Job (no read of its own), else by
this topic (at most once per PROGRESS_SECONDS); an alert round that read a shown Job's log has it looked at
again at once (no request: what log_reads holds), so that row is on screen without waiting for the next poll."""
METRICS = "metrics"
"""A Job's scalar series (the Metrics tab while shown, the compare screen)."""
WORKFLOWS = "workflows"
"""Every Workflow of the control plane (the Workflows view while open), under ALL_KEY."""
STORAGE = "storage"
"""Storage classes (key ALL_KEY: `Listed` of {storageClass, cluster}) and folders (key `storage_key(...)`: a
`Folder`) of the gateway's storage file API, while the Storage view is open."""
SSH_KEYS = "sshkeys"
"""The gateway's registered SSH keys (`Listed` of its entries) under ALL_KEY, while the SSH keys view is open."""
USAGE = "usage"
"""Resource use of the Running Pods of every Job in scope (key: `alertpoll.scope_key`, ALL_KEY for `-A`): a
`telemetry.usage.UsageState` whose samples the Workers table, the job list's GPU% and the gpu-idle alert read.
Each round reads each member cluster's PodMetrics at most every 15 s and at most 4 fixed execs (2 at once), none
into a Pod exec'd into in the last 60 s (cluster/usage_reads.py)."""
USAGE_SECONDS = 10.0
MAX_FOLDER_ENTRIES = 2000
ALL_KEY = alertpoll.ALL_KEY
ALERTS = alertpoll.ALERTS
"""The alert book of every Job in scope (the app subscribes ALL_KEY for as long as it runs; `rlark watch` its scope)."""
GATEWAY_KEY = "gateway"
"""The one key of the LOOKUPS topic (the gateway is one per context)."""


@dataclass(frozen=True)
class Gathered:
    """Run-check evidence of one Job: the last gathered, its report (evaluated in the topic's worker, without the
    hand-over fields a screen adds: `checks.with_hand_over`), and why the latest gathering failed (if it did)."""

    evidence: RunEvidence | None
    error: str = ""
    report: CheckReport | None = None


@dataclass(frozen=True)
class GatewayLookups:
    """What the gateway offers a new Job: clusters (its `clusters` answer as sent), storage classes per cluster namespace
    (None: unknown; parsed as `ClusterAccess.storage_classes`, the same data `rlark submit` validates against)
    and registered SSH keys (the gateway's `ssh-user-keys` entries), and its system config (the SSH jump host).
    `notes` say what could not be read.
    Domains are watched objects: `Snapshot.domains`."""

    clusters: object = None
    storage_classes: Mapping[str, list[str]] | None = None
    ssh_keys: tuple[dict, ...] = ()
    notes: tuple[str, ...] = field(default=())
    system_config: Mapping[str, str] | None = None
    """The gateway's `system-config` (`sshJumpHost`, `sshJumpPort`) for the `ssh -J` line; None: unknown."""


@dataclass(frozen=True)
class Listed:
    """Objects of one kind as last listed, or why the list failed (the objects of the last good list stay)."""

    items: tuple[dict, ...] = ()
    error: str = ""


Fetch = Callable[["ClusterAccess", SnapshotIndex, str], object]


@dataclass(frozen=True)
class Topic:
    """One kind of periodic read. `fetch` blocks (it runs in a worker thread) and returns the result to publish,
    or None when the Snapshot does not hold what it needs yet (tried again soon); `source` optionally maps a
    result to the health of a source named in `Snapshot.sources`. A topic with a `detailed` read runs that one
    instead (every `detail_interval`) while any subscriber asks for detail. A topic with `rounds` keeps bookkeeping
    between its reads: `rounds(poll_soon)` makes its fetch, once per Reconciler (the bookkeeping lives and goes with
    it); `poll_soon(topic, key)` has another subscription read again at once (thread-safe)."""

    name: str
    interval: float
    fetch: Fetch | None
    """None when `rounds` makes it."""
    source: Callable[[str, object], tuple[str, SourceStatus, str]] | None = None
    detailed: Fetch | None = None
    detail_interval: float | None = None
    rounds: Callable[[Callable[[str, str], None]], Fetch] | None = None
    reserved: bool = False
    """Its reads have places of their own, outside the reconciler's MAX_PARALLEL_POLLS and MAX_POLLS_PER_KEY (the
    alert rounds: no Job's slow reads keep them waiting)."""
    per_job: bool = False
    """Keyed by a Job's name: a result whose Job is no longer listed and that no one subscribes to is dropped, so a
    session under churn (Jobs made and deleted under new names) holds no result of every Job it ever read."""

    def read(self, detail: bool) -> tuple[Fetch | None, float]:
        """The fetch and interval of a subscription with (or without) detail (fetch None: `rounds` makes it)."""
        if detail and self.detailed is not None:
            return self.detailed, self.detail_interval or self.interval
        return self.fetch, self.interval


def fetch_ray(access: ClusterAccess, index: SnapshotIndex, job_name: str) -> dict | None:
    """The Ray tab's poll: the Job's Ray status with the values of the Secrets the Job, its Tasks and its data-plane
    Pods reference masked (each Secret read through `access.secret_reads`, kept cluster/secrets.SECRET_TTL; each
    role's data-plane Pod from the alert rounds' pod lists, alertpoll.listed_pods: a poll every 2 s reads neither
    again)."""
    from rlark_tui.cluster.secrets import job_secrets
    from rlark_tui.model import keys
    from rlark_tui.raydash.client import masked
    from rlark_tui.text.redact import KnownSecrets

    job = index.job(job_name)
    if job is None:
        return None
    head = index.tasks_by_name.get(job.head_task_name)
    status = access.ray_status(job, head.namespace if head is not None else None)
    pods = index.job_pods(job)
    listed = alertpoll.listed_pods(access, pods)
    places: dict[tuple[str, str, str], tuple[str, str, Mapping | None]] = {}
    for pod in pods:  # one per role: its replicas share their template, so their references
        place = (pod.cluster, pod.pod_namespace or keys.WORKLOAD_NAMESPACE)
        real = listed.get(pod.name)
        if real is not None or (*place, pod.task_name) not in places:
            places[(*place, pod.task_name)] = (*place, real)
    tasks = [task.raw for spec in job.tasks if (task := index.task_for(job, spec)) is not None]
    return masked(status, KnownSecrets(job_secrets(access, job.raw, list(places.values()), tasks).values))


def ray_source(job_name: str, status: object) -> tuple[str, SourceStatus, str]:
    error = status.get("error") if isinstance(status, dict) else "no status"
    return f"ray {job_name}", "disconnected" if error else "connected", error or ""


def fetch_health(access: ClusterAccess, index: SnapshotIndex, job_name: str) -> Mapping[str, PodHealth] | None:
    """In brief: the restart count and reason of each Pod of the Job from ONE pod list per data plane, no events
    (Pods the data planes do not list are left out); no request at all while the alerts topic's own lists of those
    data planes (every Job's pods, every 5 s) are younger than this topic's interval."""
    job = index.job(job_name)
    if job is None:
        return None
    if access.server_endpoint() is None and not access.config.clusters:
        return {}
    pods = index.job_pods(job)
    listed = alertpoll.fresh_planes(access, {pod.namespace for pod in pods}, TOPICS[HEALTH].interval)
    return health_from(pods, listed) if listed is not None else pods_health(access, pods)


def fetch_health_detail(access: ClusterAccess, index: SnapshotIndex,
                        job_name: str) -> Mapping[str, PodHealth] | None:
    """In detail: each Pod's data-plane pod and its events (lastState, BackOff, FailedMount, Unhealthy); Pods it
    cannot read are left out."""
    job = index.job(job_name)
    if job is None:
        return None
    if access.server_endpoint() is None and not access.config.clusters:
        return {}
    pods = index.job_pods(job)
    states = pod_states(access, [pod.raw for pod in pods])
    return {f"{pod.namespace}/{pod.name}": PodHealth(number, reason)
            for pod in pods for count, reason in [states[pod.name]] if (number := ascii_int(count)) is not None}


def fetch_progress(access: ClusterAccess, index: SnapshotIndex, job_name: str) -> ProgressState | None:
    """A Running Job's newest progress row as `access.log_reads` last saw it (else the row before, which then turns
    stale), read here only when no alert round reads that Job's Header log. None (no request made) while the Job is
    not Running or its Header Pod is not in the Snapshot."""
    job = index.job(job_name)
    if job is None or job.phase != "Running":
        return None
    header = snapshot_header(index, job_name)
    if header is None:
        return None
    log_reads = access.log_reads
    log_reads.want(job_name)
    previous = index.snapshot.progress.get(job_name)
    kept = previous.row if isinstance(previous, ProgressState) else None
    if log_reads.scheduled(job_name):
        seen = log_reads.seen(header.cluster, header.pod)
        if seen is None:
            return previous if isinstance(previous, ProgressState) else ProgressState()
    else:
        seen = log_reads.read(access, header.cluster, header.pod, max_age=PROGRESS_SECONDS)
    if seen.error:
        return ProgressState(seen.progress or kept, seen.error, seen.wall_at)
    return ProgressState(seen.progress or kept, read_at=seen.wall_at)


def fetch_evidence(access: ClusterAccess, index: SnapshotIndex, job_name: str) -> Gathered:
    """The Job's evidence gathered and judged here, in the worker (a launch record's pattern may spend its whole
    budget: text/patterns.py), each of rows 1-5 keeping the time it first showed its present result; on a failed
    gathering the last evidence and report stay, with the error."""
    from rlark_tui.checks.evaluate import carry_settled, evaluate
    from rlark_tui.checks.gather import gather
    from rlark_tui.local.config import state_dir

    found = index.snapshot.evidence.get(job_name)
    previous = found if isinstance(found, Gathered) else None
    try:
        evidence = gather(access, job_name, state_dir())
    except RlarkError as exc:
        return replace(previous, error=str(exc)) if previous is not None else Gathered(None, str(exc))
    report = evaluate(evidence, slow=access.slow_patterns)
    return Gathered(evidence, report=carry_settled(previous.report if previous is not None else None, report))


def fetch_diagnosis(access: ClusterAccess, index: SnapshotIndex, job_name: str) -> object | None:
    """The first failure as `rlark diagnose` finds it; on a failed read the last one stays."""
    from rlark_tui.local.config import state_dir
    from rlark_tui.raydash.diagnose import diagnose

    if index.job(job_name) is None:
        return None
    try:
        return diagnose(access, job_name, state_dir(), tail=DIAGNOSIS_TAIL).diagnosis
    except RlarkError:
        return index.snapshot.diagnosis.get(job_name)


def fetch_lookups(access: ClusterAccess, index: SnapshotIndex, key: str) -> GatewayLookups:
    gateway = access.gateway_http()
    if gateway is None:
        return GatewayLookups(notes=("no gateway configured: storage classes and registered SSH keys are not "
                                     "offered",))
    notes = []
    clusters: object = None
    ssh_keys: object = []
    try:
        clusters = access.gateway_clusters()
    except (ApiError, Unreachable) as exc:
        notes.append(f"gateway clusters: {exc}")
    classes = access.storage_classes()
    if classes is None:
        notes.append("gateway: storage classes unknown")
    try:
        ssh_keys = gateway.json("GET", "/api/v1/ssh-user-keys", Request("list", "ssh-user-keys", source="gateway"),
                                timeout=10)
    except (ApiError, Unreachable) as exc:
        notes.append(f"gateway: {exc}")
    system_config = None
    try:
        system_config = gateway.json("GET", "/api/v1/system-config",
                                     Request("get", "system-config", source="gateway"), timeout=10)
    except (ApiError, Unreachable) as exc:
        notes.append(f"gateway: {exc}")
    return GatewayLookups(
        system_config=system_config if isinstance(system_config, dict) else None,
        clusters=clusters,
        storage_classes=classes,
        ssh_keys=tuple(entry for entry in ssh_keys if isinstance(entry, dict)) if isinstance(ssh_keys, list) else (),
        notes=tuple(notes))


@dataclass(frozen=True)
class Folder:
    """One folder of a storage class as last listed (`model.storage.Entry`s, every page up to MAX_FOLDER_ENTRIES),
    or why the listing failed (the last good entries stay)."""

    entries: tuple = ()
    truncated: bool = False
    error: str = ""


def storage_key(storage_class: str, cluster: str, prefix: str) -> str:
    """The STORAGE key of a folder (class names and agent IDs hold no `|`; the prefix may)."""
    return f"{storage_class}|{cluster}|{prefix}"


def fetch_storage(access: ClusterAccess, index: SnapshotIndex, key: str) -> Listed | Folder:
    previous = index.snapshot.storage.get(key)
    if key == ALL_KEY:
        try:
            classes = access.storage_class_clusters()
        except (ApiError, Unreachable) as exc:
            return Listed(previous.items if isinstance(previous, Listed) else (), str(exc))
        return Listed(tuple({"storageClass": name, "cluster": cluster}
                            for name, clusters in sorted(classes.items()) for cluster in clusters))
    from rlark_tui.model.storage import Entry, parse_page

    storage_class, cluster, prefix = key.split("|", 2)
    entries: list[Entry] = []
    marker = ""
    try:
        while len(entries) < MAX_FOLDER_ENTRIES:
            page = parse_page(access.storage_list(storage_class, cluster, prefix, marker=marker, max_keys=500),
                              prefix)
            entries.extend(page.entries)
            if not page.truncated or not page.next_marker or page.next_marker == marker:
                return Folder(tuple(entries))
            marker = page.next_marker
    except (ApiError, Unreachable) as exc:
        return Folder(previous.entries if isinstance(previous, Folder) else (), error=str(exc))
    return Folder(tuple(entries[:MAX_FOLDER_ENTRIES]), truncated=True)


def fetch_ssh_keys(access: ClusterAccess, index: SnapshotIndex, key: str) -> Listed:
    try:
        return Listed(tuple(access.ssh_keys()))
    except (ApiError, Unreachable) as exc:
        previous = index.snapshot.sshkeys.get(key)
        return Listed(previous.items if isinstance(previous, Listed) else (), str(exc))


def fetch_workflows(access: ClusterAccess, index: SnapshotIndex, key: str) -> Listed:
    try:
        return Listed(tuple(access.list(WORKFLOW_KIND).items))
    except (ApiError, Unreachable) as exc:
        previous = index.snapshot.workflows.get(key)
        return Listed(previous.items if isinstance(previous, Listed) else (), str(exc))


class UsageRounds:
    """The usage rounds of one Reconciler: per scope key, the Running Jobs in scope (found again only when the
    index's Jobs mapping is not the last round's) and their targets (usage.Targets), so that a round in which
    nothing changed reads no Job's specs or Pods again."""

    def __init__(self) -> None:
        self._running: dict[str, tuple[object, dict]] = {}
        self._targets: dict[str, Targets] = {}

    def __call__(self, access: ClusterAccess, index: SnapshotIndex, key: str) -> object:
        from rlark_tui.cluster import usage_reads as usage

        jobs_map, running = self._running.get(key, (None, {}))
        if jobs_map is not index.jobs:
            running = {name: job for name, job in index.jobs.items()
                       if alertpoll.in_scope(key, name) and job.phase == "Running"}
            self._running[key] = (index.jobs, running)
        targets = self._targets.get(key) or self._targets.setdefault(key, usage.Targets())
        return usage.sample(access, targets(index, running), index.usage_of(key))


TOPICS: Mapping[str, Topic] = MappingProxyType({topic.name: topic for topic in (
    Topic(RAY, 2.0, fetch_ray, ray_source, per_job=True),
    Topic(HEALTH, 10.0, fetch_health, detailed=fetch_health_detail, detail_interval=3.0, per_job=True),
    Topic(EVIDENCE, 5.0, fetch_evidence, per_job=True),
    Topic(DIAGNOSIS, DIAGNOSIS_SECONDS, fetch_diagnosis, per_job=True),
    Topic(LOOKUPS, 60.0, fetch_lookups),
    Topic(PROGRESS, PROGRESS_SECONDS, fetch_progress, per_job=True),
    Topic(METRICS, 5.0, poll_metrics, per_job=True),
    Topic(WORKFLOWS, 2.0, fetch_workflows),
    Topic(alertpoll.ALERTS, alertpoll.ROUND_SECONDS, None,
          rounds=lambda poll_soon: alertpoll.AlertRounds(lambda job: poll_soon(PROGRESS, job)), reserved=True),
    Topic(USAGE, USAGE_SECONDS, None, rounds=lambda poll_soon: UsageRounds()),
    Topic(STORAGE, 15.0, fetch_storage),
    Topic(SSH_KEYS, 10.0, fetch_ssh_keys),
)})


def _from_bundle(read: str) -> Fetch:
    """A topic's read in a bundle session (`rlark --bundle`, cluster/bundle_source.py): what the bundle captured
    for the Job, from its BundleAccess (`read` names the method); None when it holds nothing for it."""
    def fetch(access, index: SnapshotIndex, key: str) -> object | None:
        return getattr(access, read)(key) if index.job(key) is not None else None
    return fetch


def _nothing(access, index: SnapshotIndex, key: str) -> None:
    return None


OFFLINE: Mapping[str, Fetch] = MappingProxyType({DIAGNOSIS: _from_bundle("diagnosis"),
                                                 METRICS: _from_bundle("metrics")})
BUNDLE_TOPICS: Mapping[str, Topic] = MappingProxyType({
    name: Topic(name, topic.interval, OFFLINE.get(name, _nothing), per_job=topic.per_job)
    for name, topic in TOPICS.items()})
"""The topics of a bundle session: the diagnosis and the metric series as captured; every other read has nothing
to read (no request leaves the machine)."""
