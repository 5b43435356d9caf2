"""The `alerts` subscription topic: the reconciler evaluates the alert rules (alerting/rules.py) for every Job in
scope, whether or not a screen shows it, every ROUND_SECONDS. The rounds are an `AlertRounds` object, one per
Reconciler (`polls.Topic.rounds`), which keeps what the next round needs; the Snapshot gets only the book.

Reads, each bounded and shared where another topic reads the same thing:
- the data-plane pods: ONE list per member cluster (label `app`, as the platform labels workload pods) every
  PLANE_SECONDS, for every Job at once (kept in `ClusterAccess.recent_reads`: the job list's REASON uses it);
- the Header log of each Running Job, through `ClusterAccess.log_reads` (cluster/logreads.py), which the PROGRESS
  topic reads too: each read asks only for the lines after the last one seen. At most LOG_READS_PER_ROUND per
  round (4 per second) and once per LOG_SECONDS per Job; the order: Jobs on screen never read or changed, Jobs on
  screen unread for SHOWN_MAX_SECONDS, other Jobs never read or changed (new, restarted, a new phase: a Job that
  left Running is read once more), then the longest-unread. With N Running Jobs in scope each is read at least
  every max(LOG_SECONDS, N / 4) seconds while N ≤ 120 (the screen's Jobs at least every SHOWN_MAX_SECONDS beyond);
  while a costly round's COST_FACTOR holds the next one back (thousands of Jobs), each ROUND_SECONDS still reads
  the Header logs of the Jobs on screen alone, as a round would;
- the other Running Pods' logs (run-oom), each at most once per WORKER_LOG_SECONDS, WORKER_LOGS_PER_ROUND in all;
- Ray's alive nodes of each Running Job: the Ray tab's own result when it is subscribed, else at most once per
  RAY_SECONDS per Job and one read per RAY_SPACING_SECONDS in all;
- the acknowledgements file (acks.py), when it changed;
- the `usage` topic's samples (polls.USAGE, subscribed with the same key) for gpu-idle: no reads of its own;
- the stacks of a Job of at most STACKS_MAX_RANKS ranks once per stall (raydash.stacks.take), in the round that
  first finds it progress-stalled, before the alert fires: its message and evidence quote the outliers line. The
  takes run on threads of their own (StackTakes) and the round waits STACKS_WAIT_SECONDS for them at most, so that
  a slow Ray head holds no other Job's alert.
The rules run again only for the Jobs whose inputs changed (their objects, their log's facts or progress, their
data-plane pods, Ray, usage) or whose rules read the clock and reached their time (a stall, a restart's quiet time);
a round in which nothing changed merges nothing and returns the published state itself (no new Snapshot).
"""

from __future__ import annotations

import functools
import heapq
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ALL_COMPLETED, FIRST_COMPLETED, Future, wait
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from rlark_tui.alerting import rules
from rlark_tui.alerting.rules import AlertsState, Evaluated, frozen
from rlark_tui.cluster.errors import ApiError, Unreachable
from rlark_tui.cluster.metrics import PROGRESS_SECONDS, snapshot_header
from rlark_tui.cluster.secrets import job_secrets
from rlark_tui.errors import RlarkError
from rlark_tui.local import acks
from rlark_tui.model import keys
from rlark_tui.model.objects import Job, Pod, dig
from rlark_tui.telemetry.sample import GPUS, SOURCE
from rlark_tui.view.index import SnapshotIndex

if TYPE_CHECKING:
    from rlark_tui.cluster.access import ClusterAccess

ALERTS = "alerts"
ALL_KEY = rules.ALL_KEY
ROUND_SECONDS = 2.0
PLANE_SECONDS = 5.0
LOG_SECONDS = 10.0
LOG_READS_PER_ROUND = 8
"""At most this many Header-log reads per round (4 per second): with many Running Jobs each is read less often."""
SHOWN_MAX_SECONDS = 30.0
"""A Job on screen (its PROGRESS asked for) unread this long goes before the others, however many Jobs there are."""
JUDGED_PER_ROUND = 150
"""At most this many Jobs are judged again per round (a first round over 5,000 Jobs is spread over several, so
that it never holds the interpreter long); the others keep their last judgement until their turn."""
COST_FACTOR = 40.0
"""A round that took C seconds of CPU is followed by the next only after COST_FACTOR x C seconds."""
WORKER_LOG_SECONDS = 60.0
WORKER_LOGS_PER_ROUND = 1
WORKER_SCAN_PER_ROUND = 50
"""The other Running Pods' logs (CUDA and Ray memory kills happen in any Pod): each at most once a minute, one per
round (0.5 per second); at most WORKER_SCAN_PER_ROUND due Jobs are looked at per round for a Running Pod to read
(thousands of Running Jobs whose other Pods are not Running would otherwise be walked Pod by Pod every round)."""
CHUNK_JOBS = 100
CHUNK_PAUSE_SECONDS = 0.001
"""The round's walk over the Jobs it judges pauses this long after each CHUNK_JOBS Jobs: it runs in a worker
thread but holds the interpreter while it computes, and a stretch of hundreds of milliseconds over 5,000 Jobs
made the UI thread wait for it at every turn of its event loop (key and filter latency)."""
RAY_SECONDS = 30.0
RAY_SPACING_SECONDS = 4.0
"""One Ray read per this many seconds in all (0.25 per second), each Job at most once per RAY_SECONDS."""
APP_SELECTOR = "app"
STACKS_MAX_RANKS = 64
"""A progress-stalled Job of at most this many ranks has its stacks taken once per stall (more: `rlark stacks`)."""
STACKS_WAIT_SECONDS = 3.0
"""A round waits at most this long, in all, for the stacks of the Jobs it finds stalled: a slow Ray head (64 ranks,
each dump bounded by raydash.stacks.TRACEBACK_TIMEOUT, 15 s, 8 at once: two minutes) held the round, and every
other Job's alert with it. A take not done by then is quoted as such and goes on to its own bounds by itself."""
STACKS_TAKES = 4
"""At most this many takes under way at once (each up to raydash.stacks.PARALLEL requests)."""
READ_WAIT_SECONDS = 3.0
"""A round waits at most this long, in all, for its reads (data-plane Pod lists, Header and other Pods' logs, a Ray
status): a data plane or Ray head answering slowly or dripping its answer (each read ends at its own bounds, up to
transport.BODY_TIMEOUTS read timeouts: minutes) held the round, and every other Job's alert with it. A read not done
by then goes on by itself; its Job keeps the facts last read and the round says so in one line."""
READS_PER_SOURCE = 4
"""At most this many reads under way at once from one member cluster or one Ray head, so that one source's slow
reads hold no thread another source's read needs."""
PENDING = object()
"""What RoundReads gives for a read still under way when the round stops waiting."""
BUSY = object()
"""What RoundReads gives for an item it started no read for (its source had READS_PER_SOURCE reads under way until
the round stopped waiting): nothing was asked, so the item is due again at the next round."""


def scope_key(jobs: list[str] | tuple[str, ...] = ()) -> str:
    """The subscription key of a scope: ALL_KEY, or the Job names (`rlark watch JOB…`)."""
    return ",".join(sorted(set(jobs))) if jobs else ALL_KEY


def in_scope(key: str, job: str) -> bool:
    return key == ALL_KEY or job in key.split(",")


def plane_read(cluster: str) -> tuple[str, str, str]:
    """The `recent_reads` key of a data plane's workload pod list (the alert rounds' and the REASON column's)."""
    return ("data-plane pods", cluster, APP_SELECTOR)


def _plane_pods(access: ClusterAccess, cluster: str) -> Mapping[str, dict] | None:
    try:
        found = access.data_plane_pods(cluster, APP_SELECTOR)
    except (ApiError, Unreachable):
        return None
    if found is None:
        return None
    return MappingProxyType({str((pod.get("metadata") or {}).get("name", "")): pod for pod in found})


def fresh_planes(access: ClusterAccess, clusters: set[str], max_age: float) -> Mapping[str, Mapping[str, dict]] | None:
    """The data-plane pod lists of these clusters (cluster -> pod name -> pod) when an alert round listed every one
    of them within `max_age` seconds; else None. The job list's REASON reads them instead of listing again."""
    found: dict[str, Mapping[str, dict]] = {}
    for cluster in clusters:
        hit = access.recent_reads.peek(plane_read(cluster), max_age)
        if hit is None or not isinstance(hit[1], Mapping):
            return None
        found[cluster] = hit[1]
    return found


def listed_pods(access: ClusterAccess, crs: Iterable[Pod]) -> dict[str, Mapping[str, Any]]:
    """The data-plane pod of each of these Pod CRs, by CR name (the pod's uid), from the data-plane pod lists the
    alert rounds keep: a list of any age while it holds that very pod (its uid), as what a pod's spec says (the
    Secrets its env references among it) does not change in its life; a cluster whose list lacks one is listed
    again, under the rounds' key (they take it), unless its list is younger than PLANE_SECONDS. A CR whose pod no
    list holds (another namespace, not listed yet, its data plane not answering) is left out."""
    wanted: dict[str, list[Pod]] = {}
    for cr in crs:
        if cr.pod_name and (cr.pod_namespace or keys.WORKLOAD_NAMESPACE) == keys.WORKLOAD_NAMESPACE:
            wanted.setdefault(cr.namespace, []).append(cr)
    found: dict[str, Mapping[str, Any]] = {}
    for cluster, of_cluster in wanted.items():
        hit = access.recent_reads.peek(plane_read(cluster), access.recent_reads.keep)
        listed = hit[1] if hit is not None and isinstance(hit[1], Mapping) else None
        if listed is None or any(dig(listed.get(cr.pod_name), "metadata", "uid") != cr.name for cr in of_cluster):
            try:
                listed = access.recent_reads.get(plane_read(cluster), PLANE_SECONDS,
                                                 functools.partial(_plane_pods, access, cluster))
            except RlarkError:
                listed = None
        for cr in of_cluster:
            pod = (listed or {}).get(cr.pod_name)
            if pod is not None and dig(pod, "metadata", "uid") == cr.name:
                found[cr.name] = pod
    return found


@dataclass
class _Scope:
    """What the rounds of one scope key keep between rounds (only the round of that key touches it)."""

    book: rules.Book
    restarts: dict[str, tuple[int, int, float]]
    planes: dict[str, tuple[float, Mapping[str, dict] | None]] = field(default_factory=dict)
    """Cluster -> (monotonic time of the list, its pods by name; None: the list failed)."""
    log_read: dict[str, float] = field(default_factory=dict)
    """Job -> monotonic time its Header log was last read for this scope."""
    read_as: dict[str, tuple] = field(default_factory=dict)
    """Job -> (Header Pod CR key, container instance) of that read."""
    seen: dict[str, object] = field(default_factory=dict)
    """Job -> the logreads.Seen its last judgement used."""
    running: frozenset[str] = frozenset()
    final: set[str] = field(default_factory=set)
    """Jobs that left Running whose log is read once more (the lines of their last moments)."""
    jobs_map: object = None
    clusters_of: tuple[object, list[str]] = (None, [])
    """(the Snapshot's Pods mapping, the member clusters they are in)."""
    running_of: tuple[object, frozenset[str]] = (None, frozenset())
    """(the Snapshot's Jobs mapping, the Running ones among them in scope)."""
    next_wake: float = float("-inf")
    """The earliest `wake_at` of the judgements kept."""
    worker_read: dict[str, float] = field(default_factory=dict)
    worker_logs: dict[str, Mapping[str, rules.LogFacts]] = field(default_factory=dict)
    ray: dict[str, tuple[float, Mapping]] = field(default_factory=dict)
    ack_file: acks.AckFile = field(default_factory=acks.AckFile)
    """The acknowledgements file as this scope last read it."""
    ray_at: float = float("-inf")
    stacks: dict[str, tuple[tuple, str]] = field(default_factory=dict)
    """Job -> (the stall its stacks were taken for: rules.stall_key, the outliers line or why none was taken)."""
    cache: dict[str, Evaluated] = field(default_factory=dict)
    objects: dict[str, tuple] = field(default_factory=dict)
    """Job -> its objects (the Job, Tasks and Pods) when last judged."""
    dirty: dict[str, int] = field(default_factory=dict)
    """Jobs still to judge again (over a round's budget) -> the round that found them so: the longest waiting are
    judged first, so Jobs whose objects change at every round never keep another Job's judgement waiting."""
    rounds: int = 0
    merged: rules.Evaluation | None = None
    sources: rules.Evaluation | None = None
    samples: object = None
    usage: dict[str, tuple | None] = field(default_factory=dict)
    thresholds: object = None
    serial: int = 0
    judged_at: float = float("-inf")
    cost: float = 0.0
    published: AlertsState | None = None


class AlertRounds:
    """The alert rounds of one Reconciler: a fetch (`rounds(access, index, key)`) that keeps, per scope key, what
    the next round needs (read times, Ray results, each Job's last judgement and the facts it was made from)."""

    def __init__(self, shown_read: Callable[[str], None] = lambda job: None) -> None:
        self._scopes: dict[str, _Scope] = {}
        self._shown_read = shown_read
        """Told each Job on screen whose Header log a round read (the PROGRESS topic then looks again at once)."""
        self._reads = RoundReads()
        self._takes = StackTakes()

    def __call__(self, access: ClusterAccess, index: SnapshotIndex, key: str) -> AlertsState:
        published = index.alerts_of(key)
        scope = self._scopes.get(key)
        if scope is None:
            # a new Reconciler (ctrl+r) goes on from the book the last one published
            scope = self._scopes[key] = _Scope(published.book if published else rules.Book(),
                                               dict(published.restarts.counts) if published else {})
        mono, cpu = time.monotonic(), time.thread_time()
        if mono - scope.judged_at < COST_FACTOR * scope.cost:
            # the last round was costly (thousands of Jobs): keep its CPU share at 1/COST_FACTOR, but the Jobs on
            # screen have their Header logs read meanwhile (their PROGRESS), to be judged at the next round; what
            # those reads could not read is said with the round's own (the next round says its own again)
            errors = self._read_shown(access, index, key, scope, mono)
            state = published or scope.published or AlertsState(scope.book)
            if not set(errors) <= set(state.errors):
                state = scope.published = replace(state, errors=tuple(dict.fromkeys((*state.errors, *errors))))
            return state
        state = _round(access, index, key, scope, mono, self._reads, self._shown_read, self._takes)
        scope.judged_at, scope.cost, scope.serial = mono, time.thread_time() - cpu, index.serial
        if published is not None and state.book is published.book and state.errors == published.errors:
            return published  # a quiet round: no new Snapshot, no repaint
        scope.published = state
        return state

    def _read_shown(self, access: ClusterAccess, index: SnapshotIndex, key: str, scope: _Scope,
                    mono: float) -> list[str]:
        """Between costly rounds: the Header-log reads of the Jobs on screen only (a few dozen, not the thousands a
        round walks), as a round reads them; a Job whose log said something new waits for the next round's judging.
        With 5,000 Jobs a round costs 0.1-0.5 s of CPU, so rounds came every 4 to 20 s, 8 reads each: the ~48 rows
        of the list waited a minute or more for their PROGRESS. What could not be read, one line each."""
        errors: list[str] = []
        if not scope.rounds or not scope.running:
            return errors
        jobs = index.jobs if key == ALL_KEY else {name: job for name, job in index.jobs.items() if in_scope(key, name)}
        running = frozenset(name for name in scope.running if name in jobs and jobs[name].phase == "Running")
        shown = access.log_reads.wanted(2 * PROGRESS_SECONDS + ROUND_SECONDS) & running
        if not shown:
            return errors
        changed: set[str] = set()
        _read_headers(access, index, key, scope, jobs, running, changed, scope.planes,
                      lambda name: index.job_pods(jobs[name]), mono, errors, self._reads, self._shown_read, only=shown)
        for name in changed:
            scope.dirty.setdefault(name, scope.rounds)
        return errors


class RoundReads:
    """The reads of the rounds, each on a daemon thread of its own: `reads(fn, items, source)` is `[fn(item) for
    item in items]` read at once, where a read not done within READ_WAIT_SECONDS (in all) is PENDING and goes on by
    itself. One read per item at a time (an item whose read is under way is PENDING, or that read's answer once it
    is done) and READS_PER_SOURCE per source (`source(item)`: its member cluster or Ray head): an item past that
    bound starts once one of its source's reads ends, within the same READ_WAIT_SECONDS, and is BUSY if none
    did (eight Header logs of one cluster, four at a time, are read in one round, not four and the others marked
    read without a read: bench alerts' fifth and sixth crashes came 10 to 80 s late)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._flying: dict[object, Future] = {}
        self._per_source: dict[str, int] = {}

    def __call__(self, fn: Callable, items: Iterable, source: Callable[[Any], str]) -> list:
        items = list(items)
        futures: list[Future | None] = [None] * len(items)
        waiting = list(range(len(items)))
        deadline = time.monotonic() + READ_WAIT_SECONDS
        while True:
            waiting = [i for i in waiting if not self._start(fn, items[i], source(items[i]), futures, i)]
            under_way = [f for f in futures if f is not None and not f.done()]
            left = deadline - time.monotonic()
            if not under_way or left <= 0:
                break
            wait(under_way, timeout=left, return_when=FIRST_COMPLETED if waiting else ALL_COMPLETED)
        return [BUSY if f is None else f.result() if f.done() else PENDING for f in futures]

    def _start(self, fn: Callable, item: object, where: str, futures: list[Future | None], i: int) -> bool:
        """The item's read under way (started now, or earlier) in futures[i]; False when its source is at its bound."""
        with self._lock:
            future = self._flying.get(item)
            start = future is None and self._per_source.get(where, 0) < READS_PER_SOURCE
            if start:
                future = self._flying[item] = Future()
                self._per_source[where] = self._per_source.get(where, 0) + 1
        if start and future is not None:
            threading.Thread(target=self._read, args=(fn, item, where, future), name="rlark-alerts",
                             daemon=True).start()
        futures[i] = future
        return future is not None

    def _read(self, fn: Callable, item: object, where: str, future: Future) -> None:
        try:
            _answer(future, fn, item)
        finally:
            with self._lock:
                self._flying.pop(item, None)
                self._per_source[where] -= 1
                if not self._per_source[where]:
                    del self._per_source[where]


def _answer(future: Future, fn: Callable, arg: object) -> None:
    """`fn(arg)`'s result into `future`, or what it raised: a bug, raised again on the round's thread by result()."""
    try:
        future.set_result(fn(arg))
    except BaseException as exc:  # noqa: BLE001 - see the docstring
        future.set_exception(exc)


class StackTakes:
    """The stacks of stalled Jobs, each taken on a daemon thread of its own (at most STACKS_TAKES at once): a
    round waits for them STACKS_WAIT_SECONDS at most, and one not taken by then ends on its own thread (to the
    bounds of raydash.stacks), its line quoting why there is none; so does a Job's whose earlier take is under way."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._running: set[str] = set()

    def __call__(self, take: Callable[[str], str], names: list[str]) -> list[str]:
        futures: dict[str, Future[str]] = {}
        for name in names:
            with self._lock:
                free = name not in self._running and len(self._running) < STACKS_TAKES
                if free:
                    self._running.add(name)
            if free:
                futures[name] = Future()
                threading.Thread(target=self._take, args=(take, name, futures[name]), name="rlark-stacks",
                                 daemon=True).start()
        wait(futures.values(), timeout=STACKS_WAIT_SECONDS)
        return [futures[name].result() if name in futures and futures[name].done() else
                f"not taken within {STACKS_WAIT_SECONDS:g} s (the Ray dashboard is slow)" if name in futures else
                "not taken (earlier takes are still under way)" for name in names]

    def _take(self, take: Callable[[str], str], name: str, future: Future[str]) -> None:
        try:
            _answer(future, take, name)
        finally:
            with self._lock:
                self._running.discard(name)


def _round(access: ClusterAccess, index: SnapshotIndex, key: str, scope: _Scope, mono: float,
           reads: RoundReads, shown_read: Callable[[str], None],
           take_stacks: Callable[[Callable[[str], str], list[str]], list[str]]) -> AlertsState:
    from rlark_tui.local.config import state_dir

    snapshot = index.snapshot
    now = time.time()
    thresholds = access.config.alerts
    jobs = index.jobs if key == ALL_KEY else {name: job for name, job in index.jobs.items() if in_scope(key, name)}
    pods: dict[str, list[Pod]] = {}

    def pods_of(name: str) -> list[Pod]:
        """The Job's Pods, found when first needed (most rounds judge few Jobs)."""
        found = pods.get(name)
        if found is None:
            found = pods[name] = index.job_pods(jobs[name])
        return found

    errors: list[str] = []
    # the Jobs whose objects (the Job, its Tasks, its Pods) or row may differ from those the last round read
    moved = index.rows_changed_since(scope.serial) if scope.serial else None
    if moved is None or thresholds is not scope.thresholds:
        changed: set[str] = set(jobs)
    else:  # a row also moves with its PROGRESS, REASON or alert mark: only a Job whose objects differ counts
        changed = {name for name in moved if name in jobs
                   and _objects(index, jobs[name], pods_of) != scope.objects.get(name)}
    scope.thresholds = thresholds

    access.log_reads.forget_gone(snapshot.pods, lambda: {(pod.namespace, pod.pod_name)
                                                         for pods in index.pods_by_task.values() for pod in pods})
    # data planes: one list per member cluster holding Pods of the Jobs in scope
    if key == ALL_KEY and snapshot.pods is not scope.clusters_of[0]:
        scope.clusters_of = (snapshot.pods, index.pod_namespaces())  # found once per pods mapping
    clusters = scope.clusters_of[1] if key == ALL_KEY else sorted(
        {namespace for name in jobs for pod in pods_of(name) if (namespace := pod.namespace)})
    planes = {cluster: scope.planes[cluster] for cluster in clusters if cluster in scope.planes}
    due = [c for c in clusters if mono - planes.get(c, (float("-inf"), None))[0] >= PLANE_SECONDS]
    answers = reads(lambda c: access.recent_reads.get(plane_read(c), PLANE_SECONDS, lambda: _plane_pods(access, c)),
                    due, str)
    moved_pods: set[tuple[str, str]] = set()
    for cluster, answer in zip(due, answers):
        if answer is BUSY:
            continue
        if answer is PENDING:
            errors.append(f"data plane {cluster}: pods not listed within {READ_WAIT_SECONDS:g} s (the list goes on)")
            continue
        old = planes.get(cluster, (0.0, None))[1]
        listed = _same_objects(old, answer)
        if listed is not old:
            moved_pods |= _moved_pods(cluster, old, listed)
        planes[cluster] = (mono, listed)
        if answer is None:
            errors.append(f"data plane {cluster}: pods not listed")
    scope.planes = planes
    if moved_pods:
        changed |= {name for name in jobs if name not in changed and any(
            (pod.namespace, pod.pod_name or pod.name) in moved_pods for pod in pods_of(name))}

    relisted = snapshot.jobs is not scope.running_of[0]  # a Job was added, changed or removed
    if relisted:
        scope.running_of = (snapshot.jobs, frozenset(name for name, job in jobs.items()
                                                     if job.phase == "Running"))
    running = scope.running_of[1]
    _read_headers(access, index, key, scope, jobs, running, changed, planes, pods_of, mono, errors, reads,
                  shown_read)
    _read_workers(access, scope, jobs, running, planes, pods_of, mono, changed, reads, relisted)
    _read_ray(access, snapshot, scope, jobs, running, mono, changed, relisted, reads)
    _note_usage(snapshot, key, scope, jobs, pods_of, changed)
    scope.running = running

    # the rules, again only for the Jobs whose inputs changed or whose clock-read rules reached their time
    for name in [n for n in scope.cache if n not in jobs] if relisted else []:
        del scope.cache[name]
        scope.seen.pop(name, None)
        scope.log_read.pop(name, None)
        scope.read_as.pop(name, None)
        scope.objects.pop(name, None)
        scope.stacks.pop(name, None)
    scope.rounds += 1
    waiting = {name: since for name, since in scope.dirty.items() if name in jobs}
    due = list(changed)
    if now >= scope.next_wake:
        due += [name for name, kept in scope.cache.items() if kept.wake_at <= now]
    if len(scope.cache) < len(jobs):
        due += [name for name in jobs if name not in scope.cache]
    for name in due:
        waiting.setdefault(name, scope.rounds)
    scope.dirty = waiting
    judged = [name for _, name in heapq.nsmallest(JUDGED_PER_ROUND, ((since, name) for name, since in waiting.items()))]
    rejudged = False
    for position, name in enumerate(judged):
        if position % CHUNK_JOBS == CHUNK_JOBS - 1:
            time.sleep(CHUNK_PAUSE_SECONDS)  # let the UI thread have the interpreter between slices of Jobs
        del scope.dirty[name]
        scope.objects[name] = _objects(index, jobs[name], pods_of)
        evaluated = _judged(access, index, jobs[name], scope, planes, pods_of, thresholds, now)
        kept = scope.cache.get(name)
        if kept is None or kept.found != evaluated.found or kept.restarts != evaluated.restarts \
                or kept.updates != evaluated.updates:
            rejudged = True
        scope.cache[name] = evaluated
    # a stall seen first: the Jobs' stacks (at once), then judged again so that the alert fires quoting them (not
    # for an alert of this stall already firing: a new Reconciler goes on from the book)
    stalls = [(name, stall) for name in judged if (stall := scope.cache[name].stall) is not None
              and ((alert := scope.book.alerts.get((name, "progress-stalled", name))) is None
                   or alert.occurrence != rules.stall_occurrence(stall))]
    for (name, stall), line in zip(stalls, take_stacks(lambda name: _stacks_line(access, jobs[name]),
                                                       [name for name, _ in stalls])):
        scope.stacks[name] = (stall, line)
        scope.cache[name] = _judged(access, index, jobs[name], scope, planes, pods_of, thresholds, now)
        rejudged = True
    if judged or now >= scope.next_wake:
        scope.next_wake = min((kept.wake_at for kept in scope.cache.values()), default=float("inf"))
    sources = rules.source_findings(snapshot.sources, thresholds)
    names = scope.merged.jobs if scope.merged is not None else None
    if snapshot.jobs is not scope.jobs_map:
        scope.jobs_map, names = snapshot.jobs, frozenset(snapshot.jobs)
    if rejudged or scope.merged is None or sources != scope.sources or names != scope.merged.jobs:
        scope.sources = sources
        scope.merged = rules.merge([sources, *(part for kept in scope.cache.values()
                                               for part in (kept.found, kept.restarts))], jobs=names)
        # the restart memory of the Jobs not judged yet (a first round over thousands) stays as it was
        unjudged = {} if len(scope.cache) >= len(jobs) else scope.restarts
        scope.restarts = {**unjudged, **{pod: entry for judged in scope.cache.values()
                                     for pod, entry in judged.updates.items()}}
    scope.book = rules.step(scope.book, scope.merged, now, scope.ack_file.load(state_dir()))
    return AlertsState(scope.book, rules.RestartMemory(frozen(scope.restarts)), tuple(errors))


def _read_headers(access, index, key, scope, jobs, running, changed, planes, pods_of, mono, errors,
                  reads, shown_read, only: set[str] | None = None) -> None:
    """This round's Header-log reads (the order is the module's docstring's); the Jobs whose log said something new
    join `changed`. `only`: of these Jobs alone (on screen, between rounds)."""
    log_reads = access.log_reads
    log_reads.schedule(key, None if key == ALL_KEY else frozenset(jobs), mono + 3 * ROUND_SECONDS
                       + COST_FACTOR * scope.cost)
    shown = log_reads.wanted(2 * PROGRESS_SECONDS + ROUND_SECONDS)
    scope.final = {name for name in scope.final | (scope.running - running) if name in jobs and name not in running
                   and name in scope.log_read}
    never = float("-inf")
    ranked = []
    found: dict[str, tuple] = {}
    for name in only if only is not None else running | scope.final:
        last = scope.log_read.get(name, never)
        if mono - last < LOG_SECONDS:
            continue
        urgent = last == never or name in scope.final
        if not urgent and name in changed:
            # its objects or data-plane pod moved: a new Header Pod or container instance is read first
            found[name] = _header_instance(index, name, pods_of, planes)
            urgent = found[name][1:] != scope.read_as.get(name)
        on_screen = name in shown
        rank = 0 if on_screen and urgent else 1 if on_screen and mono - last >= SHOWN_MAX_SECONDS \
            else 2 if urgent else 3
        ranked.append((rank, last, name))
    chosen: dict[str, tuple] = {}
    for _, _, name in heapq.nsmallest(2 * LOG_READS_PER_ROUND, ranked):
        if len(chosen) >= LOG_READS_PER_ROUND:
            break
        header, *identity = found.get(name) or _header_instance(index, name, pods_of, planes)
        if header is not None:
            chosen[name] = (header, *identity)
        else:
            scope.log_read[name] = mono
            scope.final.discard(name)

    def read(item: tuple[str, str, object]):
        cluster, pod, instance = item
        return log_reads.read(access, cluster, pod, max_age=LOG_SECONDS, instance=instance)

    items = [(header.cluster, header.pod, instance) for header, _, instance in chosen.values()]
    for name, seen in zip(list(chosen), reads(read, items, lambda item: item[0])):
        if seen is BUSY:
            del chosen[name]  # not read: first again at the next round
            continue
        scope.log_read[name] = mono
        if seen is PENDING:
            errors.append(f"{name}: its Header log not read within {READ_WAIT_SECONDS:g} s (the read goes on)")
            continue
        scope.read_as[name] = tuple(chosen[name][1:])
        if seen.error:
            errors.append(f"{name}: {seen.error}")
        if seen.left_out:
            errors.append(f"{name}: its Header log: {seen.left_out}")
        if scope.seen.get(name) is not seen:
            old = scope.seen.get(name)
            scope.seen[name] = seen
            if old is None or old.facts is not seen.facts or old.progress != seen.progress:
                changed.add(name)
        if name in shown:
            shown_read(name)
    scope.final -= chosen.keys()  # a Job that left Running: its last lines are read once, then no more


def _header_instance(index, name, pods_of, planes) -> tuple:
    """(the Job's Header (metrics.Header) or None, its Pod's `cluster/name`, the container instance its log facts
    belong to: alerting.rules.header_instance)."""
    header = snapshot_header(index, name)
    if header is None:
        return None, "", None
    cr = _pod_cr(pods_of(name), header.pod)
    plane = _plane_pod(planes, cr) if cr is not None else None
    pod_key = f"{header.cluster}/{cr.name if cr is not None else header.pod}"
    return header, pod_key, rules.header_instance(plane if isinstance(plane, dict) else None, pod_key)


def _read_workers(access, scope, jobs, running, planes, pods_of, mono, changed, reads, relisted) -> None:
    """The other Running Pods' logs (run-oom in any Pod's log), far less often: a few Jobs per round, the
    longest-unread first, each Job's Running non-Header Pods."""
    for name in [n for n in scope.worker_read if n not in jobs] if relisted else []:
        del scope.worker_read[name]
        scope.worker_logs.pop(name, None)
    due_jobs = heapq.nsmallest(WORKER_SCAN_PER_ROUND, (
        (scope.worker_read.get(name, float("-inf")), name) for name in running
        if mono - scope.worker_read.get(name, float("-inf")) >= WORKER_LOG_SECONDS))
    chosen: list[tuple[str, Pod]] = []
    for _, name in due_jobs:
        if len(chosen) >= WORKER_LOGS_PER_ROUND:
            break
        scope.worker_read[name] = mono
        head = jobs[name].head_task_name
        chosen += [(name, pod) for pod in pods_of(name) if pod.phase == "Running" and pod.pod_name
                   and pod.task_name != head][:WORKER_LOGS_PER_ROUND]

    def read(item):
        _, pod = item
        plane = _plane_pod(planes, pod)
        instance = rules.header_instance(plane if isinstance(plane, dict) else None, f"{pod.namespace}/{pod.name}")
        return access.log_reads.read(access, pod.namespace, pod.pod_name, max_age=WORKER_LOG_SECONDS,
                                     instance=instance)

    for (name, pod), seen in zip(chosen, reads(read, chosen, lambda item: item[1].namespace)):
        if seen is BUSY:
            scope.worker_read.pop(name, None)  # not read: due again at the next round
            continue
        if seen is PENDING or seen.error:
            continue
        kept = scope.worker_logs.get(name, frozen())
        pod_key = f"{pod.namespace}/{pod.name}"
        if kept.get(pod_key) is not seen.facts:
            scope.worker_logs[name] = frozen({**kept, pod_key: seen.facts})
            changed.add(name)


def _read_ray(access, snapshot, scope, jobs, running, mono, changed, relisted, reads) -> None:
    """Ray: the Ray tab's result when subscribed, else a read of our own now and then."""
    for name in [n for n in scope.ray if n not in jobs] if relisted else []:
        del scope.ray[name]
    changed |= {name for name in running if name in snapshot.ray}  # the Ray tab's own reads, every 2 s
    if mono - scope.ray_at < RAY_SPACING_SECONDS:
        return
    wanted = min(((scope.ray.get(name, (float("-inf"), None))[0], name) for name in running
                  if name not in snapshot.ray and mono - scope.ray.get(name, (float("-inf"), None))[0] >= RAY_SECONDS),
                 default=None)
    if wanted is None:
        return
    name = wanted[1]
    scope.ray_at = mono
    status = reads(lambda job: access.ray_status(jobs[job]), [name], lambda job: f"ray {job}")[0]
    if status is BUSY:  # not asked: again after RAY_SPACING_SECONDS
        return
    old = scope.ray.get(name, (0.0, None))[1]
    if status is PENDING:  # the read goes on by itself; the Job is asked again at its turn, RAY_SECONDS on
        scope.ray[name] = (mono, old)
        return
    scope.ray[name] = (mono, status)
    if status != old:
        changed.add(name)


def _note_usage(snapshot, key, scope, jobs, pods_of, changed) -> None:
    """gpu-idle reads the usage topic's samples: the Jobs whose samples' numbers changed are judged again."""
    samples = _usage_samples(snapshot, key)
    if samples is scope.samples:
        return
    scope.samples = samples
    for name in jobs:
        signature = None if samples is None else _usage_signature(
            {pod_key: samples[pod_key] for pod in pods_of(name) if (pod_key := f"{pod.namespace}/{pod.name}") in samples}
        ) if samples else ()
        if scope.usage.get(name, ()) != signature or name not in scope.usage:
            changed.add(name)
        scope.usage[name] = signature


def _objects(index, job, pods_of) -> tuple:
    """A Job's objects: the Job, its Tasks, its Pod CRs (compared by identity first: the watch makes a new dict
    for each change)."""
    return (job.raw, *(task.raw for spec in job.tasks if (task := index.task_for(job, spec)) is not None),
            None, *(pod.raw for pod in pods_of(job.name)))


def _judged(access, index, job, scope, planes, pods_of, thresholds, now) -> Evaluated:
    try:
        return _judge(access, index, job, scope, planes, pods_of, thresholds, now)
    except rules.UNREADABLE as error:  # one hostile Job: marked, and every other Job is still judged
        return rules.Evaluated(rules.unreadable(job, error), rules.Evaluation(), frozen())


def _stacks_line(access: ClusterAccess, job: Job) -> str:
    """Where a stalled Job's ranks are (its outliers line), or why no stack was taken, in one line. The stacks'
    modules are imported by the first stall: the TUI's start-up does not need them (bench/startup.py)."""
    from rlark_tui.raydash import stacks as raystacks
    from rlark_tui.telemetry.stacks import summary
    try:
        return summary(raystacks.take(access, job, max_ranks=STACKS_MAX_RANKS))
    except RlarkError as exc:
        return f"not taken ({str(exc).removeprefix('stacks: ')})"


def _judge(access, index, job, scope, planes, pods_of, thresholds, now) -> Evaluated:
    """One Job's rules over what this round knows of it. When they would quote a log line, the values of the
    Secrets the Job's Pods reference are masked in it (read then, cluster/secrets.py keeps them SECRET_TTL). A
    stall whose stacks were taken quotes them; one whose stacks were not is the judgement's `stall`."""
    name = job.name
    job_pods = pods_of(name)
    plane_sig = tuple(_plane_pod(planes, pod) for pod in job_pods)
    header = snapshot_header(index, name)
    seen = scope.seen.get(name)
    samples = scope.samples if isinstance(scope.samples, Mapping) else None
    ray_now = index.snapshot.ray.get(name) if name in index.snapshot.ray else (
        scope.ray[name][1] if name in scope.ray else None)
    inputs = rules.JobInputs(
        job=job.raw,
        tasks=tuple(task.raw for spec in job.tasks if (task := index.task_for(job, spec)) is not None),
        pods=tuple(pod.raw for pod in job_pods),
        plane_pods=None if _UNKNOWN in plane_sig else {
            f"{pod.namespace}/{pod.name}": real for pod, real in zip(job_pods, plane_sig) if isinstance(real, dict)},
        log=seen.facts if seen is not None and seen.wall_at is not None else None,
        header_pod=f"{header.cluster}/{_pod_cr_name(job_pods, header.pod)}" if header else "",
        progress=seen.progress if seen is not None else None,
        ray=ray_now,
        usage=None if samples is None else {
            pod_key: samples[pod_key] for pod in job_pods if (pod_key := f"{pod.namespace}/{pod.name}") in samples},
        worker_logs=scope.worker_logs.get(name) or frozen(),
    )
    if _quotes_log(inputs):
        places = [(pod.namespace, _plane_namespace(real), real if isinstance(real, Mapping) else None)
                  for pod, real in zip(job_pods, plane_sig)]
        inputs = replace(inputs, known=job_secrets(access, job.raw, places, inputs.tasks).values)
    stall = rules.stall_key(inputs)
    taken = scope.stacks.get(name)
    if stall is not None and taken is not None and taken[0] == stall:
        inputs = replace(inputs, stacks=taken[1])
    found = rules.job_findings(inputs, thresholds, now)
    restart_eval, updates = rules.restart_findings(inputs, rules.RestartMemory(scope.restarts), now)
    return Evaluated(found, restart_eval, frozen(updates), rules.wake_at(inputs, thresholds, updates, now),
                     stall if inputs.stacks is None and rules.stalled(found) else None)


def _quotes_log(inputs: rules.JobInputs) -> bool:
    """Whether the rules would quote a free-form line of the Job's logs (a crash, an OOM, Ray not ready; the
    start and finish lines they quote are fixed texts): only then are the Job's Secrets read to mask it."""
    facts = [inputs.log, *inputs.worker_logs.values()]
    return any(f is not None and (f.first_failure or f.oom or f.ray_not_ready) for f in facts)


def _plane_namespace(real: object) -> str:
    meta = real.get("metadata") if isinstance(real, Mapping) else None
    namespace = meta.get("namespace") if isinstance(meta, Mapping) else None
    return namespace if isinstance(namespace, str) else ""


def _usage_samples(snapshot, key: str) -> Mapping | None:
    """The `usage` topic's samples for this scope (its own key, else the ALL_KEY one); None when nothing reads
    usage (gpu-idle then neither fires nor resolves)."""
    state = snapshot.usage.get(key) or snapshot.usage.get(ALL_KEY)
    samples = getattr(state, "samples", None)
    return samples if isinstance(samples, Mapping) else None


def _usage_signature(usage: Mapping | None) -> tuple | None:
    """What gpu-idle reads of a Job's samples (not their times: a new sample of the same numbers changes nothing)."""
    return None if usage is None else tuple((k, s[GPUS], s[SOURCE]) for k, s in sorted(usage.items()))


_UNKNOWN = object()
"""A Pod whose data plane did not answer (its Job's pod rules can neither fire nor resolve)."""


def _plane_pod(planes: Mapping, pod: Pod) -> object:
    """The data-plane pod of a Pod CR (None: not listed; _UNKNOWN: its data plane did not answer). Read straight
    from the dicts: it runs for every Pod of every Job judged."""
    spec = pod.raw.get("spec")
    listed = planes.get(pod.namespace, (0.0, None))[1]
    if listed is None:
        return _UNKNOWN
    name = spec.get("podName") if isinstance(spec, dict) else None
    return listed.get(name if isinstance(name, str) and name else pod.pod_name or pod.name)


def _same_objects(old: Mapping[str, dict] | None, new: Mapping[str, dict] | None) -> Mapping[str, dict] | None:
    """A new pod list that keeps the previous list's very objects where a pod did not change, so that the Jobs
    whose pods did not change are not judged again."""
    if old is None or new is None:
        return new
    if new is old:
        return old
    kept = {name: old[name] if old.get(name) == pod else pod for name, pod in new.items()}
    if len(kept) == len(old) and all(kept[name] is old.get(name) for name in kept):
        return old
    return MappingProxyType(kept)


def _moved_pods(cluster: str, old: Mapping[str, dict] | None, new: Mapping[str, dict] | None) -> set[tuple[str, str]]:
    """(cluster, pod name) of the pods that differ between two lists of one data plane (every pod of both when one
    of them is missing)."""
    old, new = old or {}, new or {}
    return {(cluster, name) for name in old.keys() | new.keys() if old.get(name) is not new.get(name)}


def _pod_cr(pods: list[Pod], pod_name: str) -> Pod | None:
    return next((pod for pod in pods if pod.pod_name == pod_name), None)


def _pod_cr_name(pods: list[Pod], pod_name: str) -> str:
    """The Pod CR name (a uid) of the data-plane pod `pod_name`."""
    cr = _pod_cr(pods, pod_name)
    return cr.name if cr is not None else pod_name
