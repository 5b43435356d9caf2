"""The `alerts` subscription topic: the reconciler evaluates the alert rules (model/alerts.py) for every Job in
scope, whether or not a screen shows it, every ROUND_SECONDS.

Reads, each bounded and shared where a screen already reads the same thing:
- the data-plane pods: ONE list per member cluster (label `app`, as the platform labels workload pods) every
  PLANE_SECONDS, for every Job at once;
- the Header log of each Running Job (`cluster.metrics.header_log`, the read the progress topic makes: tail 200,
  last 10 minutes, timestamps), at most once per LOG_SECONDS per Job and LOG_READS_PER_ROUND in all per round,
  the longest-unread first;
- the other Running Pods' logs (run-oom), each at most once per WORKER_LOG_SECONDS, WORKER_LOGS_PER_ROUND in all;
- Ray's alive nodes of each Running Job: the Ray tab's own result when it is subscribed, else at most once per
  RAY_SECONDS per Job;
- the acknowledgements file (acks.py), when it changed;
- the `usage` topic's samples (polls.USAGE, subscribed with the same key) for gpu-idle: no reads of its own.
The result (AlertsState) carries everything the next round needs, so that the rules themselves stay pure. It is
published (a new Snapshot, repaints) only when its book or read errors changed; a quiet round's state is kept in
`_rounds` for the next round and the published one is returned unchanged.
"""

from __future__ import annotations

import time
import weakref
from collections.abc import Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING

from rlark_tui import acks
from rlark_tui.cluster.access import parallel_map
from rlark_tui.cluster.errors import ApiError, Unreachable
from rlark_tui.cluster.metrics import PROGRESS_SINCE_SECONDS, header_log, read_log, snapshot_header
from rlark_tui.model import alerts as rules
from rlark_tui.model.alerts import AlertsState, Evaluated, frozen
from rlark_tui.model.progress import latest_progress
from rlark_tui.model.view_model import SnapshotIndex
from rlark_tui.model.views import Pod

if TYPE_CHECKING:
    from rlark_tui.cluster.access import ClusterAccess

ALERTS = "alerts"
ALL_KEY = rules.ALL_KEY
ROUND_SECONDS = 2.0
PLANE_SECONDS = 5.0
LOG_SECONDS = 10.0
LOG_READS_PER_ROUND = 6
"""At most this many Header-log reads per round (3 per second): with many Running Jobs each is read less often."""
JUDGED_PER_ROUND = 150
"""At most this many Jobs are judged again per round (a first round over 5,000 Jobs is spread over several, so
that it never holds the interpreter long); the others keep their last judgement until their turn."""
COST_FACTOR = 40.0
"""A round that took C seconds of CPU is followed by the next only after COST_FACTOR x C seconds."""
WORKER_LOG_SECONDS = 60.0
WORKER_LOGS_PER_ROUND = 1
WORKER_SCAN_PER_ROUND = 50
WORKER_TAIL_LINES = 100
"""The other Running Pods' logs (CUDA and Ray memory kills happen in any Pod): each at most once a minute, the
newest 100 lines of the last 10 minutes, one per round (0.5 per second); at most WORKER_SCAN_PER_ROUND due Jobs
are looked at per round for a Running Pod to read (thousands of Running Jobs whose other Pods are not Running
would otherwise be walked Pod by Pod every round)."""
CHUNK_JOBS = 100
CHUNK_PAUSE_SECONDS = 0.001
"""The round's walk over every Job in scope pauses this long after each CHUNK_JOBS Jobs: it runs in a worker
thread but holds the interpreter while it computes, and a stretch of hundreds of milliseconds over 5,000 Jobs
made the UI thread wait for it at every turn of its event loop (key and filter latency)."""
RAY_SECONDS = 30.0
RAY_READS_PER_ROUND = 2
APP_SELECTOR = "app"


def scope_key(jobs: list[str] | tuple[str, ...] = ()) -> str:
    """The subscription key of a scope: ALL_KEY, or the Job names (`rlark watch JOB…`)."""
    return ",".join(sorted(set(jobs))) if jobs else ALL_KEY


def in_scope(key: str, job: str) -> bool:
    return key == ALL_KEY or job in key.split(",")


def _plane_pods(access: ClusterAccess, cluster: str) -> Mapping[str, dict] | None:
    try:
        found = access.data_plane_pods(cluster, APP_SELECTOR)
    except (ApiError, Unreachable):
        return None
    if found is None:
        return None
    return MappingProxyType({str((pod.get("metadata") or {}).get("name", "")): pod for pod in found})


def fetch_alerts(access: ClusterAccess, index: SnapshotIndex, key: str) -> AlertsState:
    from rlark_tui.config import state_dir

    snapshot = index.snapshot
    published = snapshot.alerts.get(key)
    published = published if isinstance(published, AlertsState) else None
    previous = _continued(access, key, published)
    now, mono, cpu = time.time(), time.monotonic(), time.thread_time()
    if mono - previous.judged_at < COST_FACTOR * previous.cost:
        # the last round was costly (thousands of Jobs): keep its CPU share at 1/COST_FACTOR
        return published or previous
    thresholds = access.config.alerts
    jobs = {name: job for name, job in index.jobs.items() if in_scope(key, name)}
    pods: dict[str, list[Pod]] = {}

    def pods_of(name: str) -> list[Pod]:
        """The Job's Pods, found when first needed (most rounds judge few Jobs)."""
        found = pods.get(name)
        if found is None:
            found = pods[name] = index.job_pods(jobs[name])
        return found

    errors: list[str] = []

    # data planes: one list per member cluster holding Pods of the Jobs in scope
    clusters = _clusters(snapshot.pods) if key == ALL_KEY else sorted(
        {namespace for name in jobs for pod in pods_of(name) if (namespace := _namespace(pod.raw))})
    planes = {cluster: previous.planes[cluster] for cluster in clusters if cluster in previous.planes}
    due = [c for c in clusters if mono - planes.get(c, (float("-inf"), None))[0] >= PLANE_SECONDS]
    for cluster, answer in zip(due, parallel_map(lambda c: _plane_pods(access, c), due)):
        planes[cluster] = (mono, _same_objects(planes.get(cluster, (0.0, None))[1], answer))
        if answer is None:
            errors.append(f"data plane {cluster}: pods not listed")

    # Header logs of Running Jobs, the longest-unread first
    facts, progress, log_read = dict(previous.facts), dict(previous.progress), dict(previous.log_read)
    running = [name for name, job in jobs.items() if _phase(job.raw) == "Running"]
    headers = {}
    for _, name in sorted((log_read.get(name, float("-inf")), name) for name in running
                          if mono - log_read.get(name, float("-inf")) >= LOG_SECONDS):
        if len(headers) >= LOG_READS_PER_ROUND:
            break
        header = snapshot_header(index, name)
        if header is not None:
            headers[name] = header

    def read(name: str):
        try:
            return header_log(access, headers[name], LOG_SECONDS)
        except (ApiError, Unreachable) as exc:
            return exc

    for name, lines in zip(list(headers), parallel_map(read, list(headers))):
        log_read[name] = mono
        if isinstance(lines, Exception):
            errors.append(f"{name}: {lines}")
            continue
        header = headers[name]
        pod_key = f"{header.cluster}/{_pod_cr_name(pods_of(name), header.pod)}"
        plane = next((real for pod in pods_of(name) if pod.pod_name == header.pod
                      for real in [_plane_pod(planes, pod)] if isinstance(real, dict)), None)
        facts[name] = rules.scan_log(lines, facts.get(name), rules.header_instance(plane, pod_key))
        row = latest_progress(lines)
        if row is not None:
            progress[name] = row

    # the other Running Pods' logs (run-oom in any Pod's log), far less often: a few Jobs per round, the
    # longest-unread first, each Job's Running non-Header Pods
    worker_logs = {name: previous.worker_logs[name] for name in jobs if name in previous.worker_logs}
    worker_read = {name: at for name, at in previous.worker_read.items() if name in jobs}
    due_jobs = sorted((worker_read.get(name, float("-inf")), name) for name in running
                      if mono - worker_read.get(name, float("-inf")) >= WORKER_LOG_SECONDS)
    chosen = []
    for _, name in due_jobs[:WORKER_SCAN_PER_ROUND]:
        if len(chosen) >= WORKER_LOGS_PER_ROUND:
            break
        worker_read[name] = mono
        head = jobs[name].head_task_name
        chosen += [(name, pod) for pod in pods_of(name) if pod.phase == "Running" and pod.pod_name
                   and pod.task_name != head][:WORKER_LOGS_PER_ROUND]

    def read_worker(item):
        _, pod = item
        try:
            return read_log(access, pod.namespace, pod.pod_name, WORKER_TAIL_LINES, PROGRESS_SINCE_SECONDS)
        except (ApiError, Unreachable) as exc:
            return exc

    for (name, pod), lines in zip(chosen, parallel_map(read_worker, chosen)):
        if isinstance(lines, Exception):
            continue
        pod_key = f"{pod.namespace}/{pod.name}"
        plane = _plane_pod(planes, pod)
        instance = rules.header_instance(plane if isinstance(plane, dict) else None, pod_key)
        kept = worker_logs.get(name, {})
        worker_logs[name] = frozen({**kept, pod_key: rules.scan_log(lines, kept.get(pod_key), instance)})

    # Ray: the Ray tab's result when subscribed, else a read of our own now and then
    ray = {name: previous.ray[name] for name in jobs if name in previous.ray}
    wanted = [name for name in running if name not in snapshot.ray
              and mono - ray.get(name, (float("-inf"), None))[0] >= RAY_SECONDS][:RAY_READS_PER_ROUND]
    for name, status in zip(wanted, parallel_map(lambda n: access.ray_status(jobs[n]), wanted)):
        ray[name] = (mono, status)

    # the rules, again only for Jobs whose inputs changed or whose rules read the clock (a stall, a restart)
    evaluations = [rules.source_findings(snapshot.sources, thresholds)]
    restart_counts: dict[str, tuple[int, int, float]] = {}
    cache: dict[str, Evaluated] = {}
    budget = JUDGED_PER_ROUND
    plane_lists = tuple(planes[cluster][1] for cluster in clusters if cluster in planes)
    samples = _usage_samples(snapshot, key)
    # the Jobs whose objects (the Job, its Tasks, its Pods) may differ from those of the index the last round read
    moved = index.rows_changed_since(previous.serial) if previous.serial else None
    for position, (name, job) in enumerate(jobs.items()):
        if position % CHUNK_JOBS == CHUNK_JOBS - 1:
            time.sleep(CHUNK_PAUSE_SECONDS)  # let the UI thread have the interpreter between slices of Jobs
        ray_now = snapshot.ray.get(name) if name in snapshot.ray else (ray[name][1] if name in ray else None)
        job_workers = worker_logs.get(name)
        job_usage = None if samples is None else {} if not samples else {
            pod_key: samples[pod_key] for pod in pods_of(name) if (pod_key := f"{pod.namespace}/{pod.name}") in samples}
        # the data planes' lists by identity: a relist that changed nothing keeps its very mapping
        rest = (plane_lists, facts.get(name), progress.get(name), ray_now, thresholds, job_workers,
                _usage_signature(job_usage))
        kept = previous.cache.get(name)
        if (kept is not None and moved is not None and name not in moved and kept.signature[0] is job.raw
                and kept.signature[2:] == rest):
            signature = kept.signature  # neither its objects nor its other inputs changed: its Pods need no walk
        else:
            signature = (job.raw, tuple(pod.raw for pod in pods_of(name)), *rest)
        stale = kept is None or kept.timed or kept.signature != signature
        if stale and budget > 0:
            budget -= 1
            job_pods = pods_of(name)
            plane_sig = tuple(_plane_pod(planes, pod) for pod in job_pods)
            header = headers.get(name) or snapshot_header(index, name)
            inputs = rules.JobInputs(
                job=job.raw,
                tasks=tuple(task.raw for spec in job.tasks if (task := index.task_for(job, spec)) is not None),
                pods=tuple(pod.raw for pod in job_pods),
                plane_pods=None if _UNKNOWN in plane_sig else {
                    f"{pod.namespace}/{pod.name}": real for pod, real in zip(job_pods, plane_sig) if real is not None},
                log=facts.get(name),
                header_pod=f"{header.cluster}/{_pod_cr_name(job_pods, header.pod)}" if header else "",
                progress=progress.get(name),
                ray=ray_now,
                usage=job_usage,
                worker_logs=job_workers or frozen(),
            )
            found = rules.job_findings(inputs, thresholds, now)
            restart_eval, updates = rules.restart_findings(inputs, previous.restarts, now)
            timed = (_phase(job.raw) == "Running" and progress.get(name) is not None) or any(
                count > base for base, count, _ in updates.values())
            kept = Evaluated(signature, found, restart_eval, frozen(updates), timed)
        if kept is None:  # judged in a later round (the budget); until then its alerts stay as they are
            continue
        cache[name] = kept
        evaluations += [kept.found, kept.restarts]
        restart_counts.update(kept.updates)
    book = rules.step(previous.book, rules.merge(evaluations, jobs=list(snapshot.jobs)), now,
                      acks.load(state_dir()))
    return _outcome(access, key, published, AlertsState(book, rules.RestartMemory(frozen(restart_counts)),
                       frozen({n: f for n, f in facts.items() if n in jobs}),
                       frozen({n: p for n, p in progress.items() if n in jobs}), frozen(worker_logs),
                       frozen(worker_read), frozen(planes), frozen(ray),
                       frozen({n: t for n, t in log_read.items() if n in jobs}), tuple(errors), frozen(cache),
                       mono, time.thread_time() - cpu, index.serial))


_rounds: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
"""ClusterAccess -> scope key -> the newest round's AlertsState, published or not."""


def _continued(access: ClusterAccess, key: str, published: AlertsState | None) -> AlertsState:
    """The state the next round starts from: the newest round's when it continues the published book (its read
    times, log facts and judgements are newer than those of the round that last changed the book), else the
    published one (another reconciler, a context switch), else a fresh one."""
    newest = _rounds.get(access, {}).get(key)
    if newest is not None and published is not None and newest.book is published.book:
        return newest
    return published or AlertsState()


def _outcome(access: ClusterAccess, key: str, published: AlertsState | None, state: AlertsState) -> AlertsState:
    """What the round publishes: the published state itself when the book (firing alerts, events, pending
    holds, acknowledgements) and the read errors are unchanged, so that a quiet round makes no new Snapshot and
    no screen repaints; the round's bookkeeping (read times, caches) is kept here for the next round."""
    _rounds.setdefault(access, {})[key] = state
    if published is not None and state.book is published.book and state.errors == published.errors:
        return published
    return state


def fresh_planes(snapshot, clusters: set[str], max_age: float) -> Mapping[str, Mapping[str, dict]] | None:
    """The data-plane pod lists of these clusters from the ALL_KEY alert round (cluster -> pod name -> pod), when
    every one of them answered within `max_age` seconds; else None. The job list's REASON reads them instead of
    listing the same pods again."""
    state = snapshot.alerts.get(ALL_KEY)
    if not isinstance(state, AlertsState):
        return None
    # a quiet round published nothing: its lists are in the newest round's state that continues this book
    state = next((newest for rounds in list(_rounds.values()) if (newest := rounds.get(ALL_KEY)) is not None
                  and newest.book is state.book), state)
    now, found = time.monotonic(), {}
    for cluster in clusters:
        at, listed = state.planes.get(cluster, (float("-inf"), None))
        if listed is None or now - at > max_age:
            return None
        found[cluster] = listed
    return found


def _usage_samples(snapshot, key: str) -> Mapping | None:
    """The `usage` topic's samples for this scope (its own key, else the ALL_KEY one); None when nothing reads
    usage (gpu-idle then neither fires nor resolves)."""
    state = snapshot.usage.get(key) or snapshot.usage.get(ALL_KEY)
    samples = getattr(state, "samples", None)
    return samples if isinstance(samples, Mapping) else None


def _usage_signature(usage: Mapping | None) -> tuple | None:
    """What gpu-idle reads of a Job's samples (not their times: a new sample of the same numbers changes nothing)."""
    return None if usage is None else tuple((k, s.gpus, s.source) for k, s in sorted(usage.items()))


_UNKNOWN = object()
"""A Pod whose data plane did not answer (its Job's pod rules can neither fire nor resolve)."""


def _phase(raw: Mapping) -> str:
    status = raw.get("status")
    return status.get("phase", "") if isinstance(status, dict) else ""


_clusters_of: tuple[object, list[str]] = (None, [])


def _clusters(pods: Mapping[str, dict]) -> list[str]:
    """The cluster namespaces of a Snapshot's Pod CRs (keys `namespace/name`), found once per pods mapping."""
    global _clusters_of
    cached = _clusters_of
    if cached[0] is not pods:
        cached = _clusters_of = (pods, sorted({key.partition("/")[0] for key in pods if "/" in key}))
    return cached[1]


def _namespace(raw: Mapping) -> str:
    meta = raw.get("metadata")
    namespace = meta.get("namespace", "") if isinstance(meta, dict) else ""
    return namespace if isinstance(namespace, str) else ""


def _plane_pod(planes: Mapping, pod: Pod) -> object:
    """The data-plane pod of a Pod CR (None: not listed; _UNKNOWN: its data plane did not answer). Read straight
    from the dicts: it runs for every Pod of every Job each round."""
    spec = pod.raw.get("spec")
    listed = planes.get(_namespace(pod.raw), (0.0, None))[1]
    if listed is None:
        return _UNKNOWN
    name = spec.get("podName") if isinstance(spec, dict) else None
    return listed.get(name if isinstance(name, str) and name else pod.pod_name or pod.name)


def _same_objects(old: Mapping[str, dict] | None, new: Mapping[str, dict] | None) -> Mapping[str, dict] | None:
    """A new pod list that keeps the previous list's very objects where a pod did not change, so that the Jobs
    whose pods did not change are not judged again."""
    if old is None or new is None:
        return new
    kept = {name: old[name] if old.get(name) == pod else pod for name, pod in new.items()}
    if len(kept) == len(old) and all(kept[name] is old.get(name) for name in kept):
        return old
    return MappingProxyType(kept)


def _pod_cr_name(pods: list[Pod], pod_name: str) -> str:
    """The Pod CR name (a uid) of the data-plane pod `pod_name`."""
    return next((pod.name for pod in pods if pod.pod_name == pod_name), pod_name)

