"""The evidence gatherer: reads one Job's objects, logs, events, Ray status, records and outputs into RunEvidence.

The I/O edge of the run check (through ClusterAccess, the in-Pod exec and the gateway's storage API); a missing
source is recorded, not fatal. Nothing is read from this machine's disk but rlark's own saved submissions.
"""

from __future__ import annotations

import copy
import glob
import threading
from collections.abc import Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rlark_tui.checks.evidence import MainContainer, OutputProbe, PodEvent, PodLog, RayStatus, RunEvidence
from rlark_tui.checks.probe import probe_in_pod, probe_object_storage
from rlark_tui.cluster import ClusterAccess
from rlark_tui.cluster.errors import NotFound, Request
from rlark_tui.cluster.http import outside, tail_bytes, tail_left_out
from rlark_tui.cluster.kinds import JOBS
from rlark_tui.cluster.logmerge import Resume, split_raw
from rlark_tui.cluster.podexec import ExecResult, run_fixed
from rlark_tui.cluster.secrets import job_secrets
from rlark_tui.errors import RlarkError
from rlark_tui.local.fsutil import list_own
from rlark_tui.model import keys
from rlark_tui.model.objects import Job, Pod, Task, dig, main_container_status, restart_count
from rlark_tui.model.storage import mount_over
from rlark_tui.model.submission import submitted_record
from rlark_tui.text.redact import KnownSecrets
from rlark_tui.text.sinks import object_file_name

LOG_HEAD_BYTES = 64 << 20
"""Per container instance, how much of its log is read from the start."""
LOG_TAIL = 1000
"""Lines read from the end when the log is longer than LOG_HEAD_BYTES."""
LOG_TAIL_BYTES = tail_bytes(LOG_TAIL)
"""The most those lines hold (63 MiB, the newest; the check row says what was left out): what a kubelet's 1,000
lines may take, where a data plane's 1,000 lines of 16 MiB (http.MAX_LINE_BYTES) were 16 GiB per container
instance."""
LOG_READ_SECONDS = 30
PARALLEL_READS = 16


def gather(access: ClusterAccess, job_name: str, state_dir: Path | None = None,
           now: datetime | None = None) -> RunEvidence:
    """One snapshot of everything the run check looks at; control-plane failures other than 404 raise.

    Independent reads run concurrently: the Nodes beside the Tasks, then every Pod's data-plane state, events and
    logs, the Ray dashboard and the output probe at once (a slow server costs a few round trips, not dozens)."""
    try:
        job = access.get(JOBS, job_name)
    except NotFound:
        return RunEvidence(job_name=job_name, now=now or datetime.now(UTC))
    view = Job(job)
    with ThreadPoolExecutor(max_workers=PARALLEL_READS, thread_name_prefix="rlark-check") as pool:
        nodes_read = pool.submit(access.nodes)
        ray_read = pool.submit(_ray, access, view) if view.head_task else None
        tasks = access.job_tasks(job_name)
        pods = access.job_pods(job_name, tasks)
        record = view.launch_record or None
        output_path = (record or {}).get("outputPath")
        outputs_read = (pool.submit(_outputs, access, view, tasks, pods, output_path)
                        if isinstance(output_path, str) and output_path else None)
        sources: dict[str, str] = {}
        planes = {cluster: access.data_plane(cluster) for cluster in {Pod(raw).namespace for raw in pods}}
        gateway_logs: dict[str, list[str]] | None = None
        if any(planes.get(Pod(raw).namespace) is None for raw in pods):
            gateway_logs = _gateway_logs(access, job_name, sources)
        reads = _pod_reads(pool, access, pods, planes, gateway_logs, sources)
        nodes = nodes_read.result()
        ray = ray_read.result() if ray_read and pods else None
        outputs = outputs_read.result() if outputs_read else None
    containers: list[MainContainer] | None = []
    events: dict[str, tuple[PodEvent, ...]] = {}
    logs: list[PodLog] = []
    unread: list[str] = []
    for read in reads:
        if read.no_plane:
            containers = None
        elif read.container is not None and containers is not None:
            containers.append(read.container)
        if read.unread:
            unread.append(read.name)
        if read.events is not None:
            events[read.name] = read.events
        logs.extend(read.logs)
    masking = job_secrets(access, job, [(read.cluster, read.namespace, read.plane_pod) for read in reads
                                        if not read.no_plane], tasks)
    if masking.unreadable:
        sources["secrets"] = masking.notice()
    logs, events, ray = _masked(KnownSecrets(masking.values), logs, events, ray)
    submitted = submitted_record(job)
    evidence = RunEvidence(
        job_name=job_name,
        now=now or datetime.now(UTC),
        job=job,
        tasks=tuple(tasks),
        pods=tuple(pods),
        nodes=tuple(nodes),
        logs=tuple(logs),
        containers=tuple(containers) if containers is not None else None,
        unread_containers=tuple(unread),
        events=events,
        ray=ray,
        launch_record=record,
        plan=view.deployment_plan or None,
        submitted_spec=submitted.spec,
        submitted_sha256=submitted.sha256,
        submitted_intact=submitted.intact or submitted.spec is None,
        submitted_yaml_path=_saved_yaml(state_dir, job_name, submitted.sha256),
        outputs=outputs,
        sources=sources,
    )
    return evidence


def _masked(known: KnownSecrets, logs: list[PodLog], events: dict[str, tuple[PodEvent, ...]],
            ray: RayStatus | None) -> tuple[list[PodLog], dict[str, tuple[PodEvent, ...]], RayStatus | None]:
    """The logs, events and `ray status` text with the values of the Secrets the Job's Pods reference (and the Ray
    token) masked, before any check quotes them: nothing in the Job says a Secret's value is one."""
    if not known:
        return logs, events, ray
    logs = [replace(log, lines=tuple(known.mask(line) for line in log.lines)) for log in logs]
    events = {pod: tuple(replace(event, message=known.mask(event.message)) for event in found)
              for pod, found in events.items()}
    if ray is not None and ray.status_text:
        ray = replace(ray, status_text=known.mask(ray.status_text))
    return logs, events, ray


@dataclass
class _PodRead:
    """What was read about one Pod from its data plane (or the gateway)."""

    name: str
    cluster: str = ""
    namespace: str = ""
    plane_pod: dict[str, Any] | None = None
    """The data-plane Pod as read (the Secrets its env references are read to mask their values)."""
    container: MainContainer | None = None
    events: tuple[PodEvent, ...] | None = None
    logs: list[PodLog] = field(default_factory=list)
    unread: bool = False
    no_plane: bool = False


def _pod_reads(pool: ThreadPoolExecutor, access: ClusterAccess, pods: list[dict[str, Any]], planes: Mapping[str, object],
               gateway_logs: dict[str, list[str]] | None, sources: dict[str, str]) -> list[_PodRead]:
    """Every Pod's `main` state, events and current log read at once; then the previous instance's log of the Pods
    that restarted (its number is only known from the state)."""
    reads, pending = [], []
    for raw in pods:
        pod = Pod(raw)
        name, cluster, namespace = pod.pod_name, pod.namespace, pod.pod_namespace or keys.WORKLOAD_NAMESPACE
        read = _PodRead(name, cluster, namespace)
        reads.append(read)
        if planes.get(cluster) is None:
            read.no_plane = True
            sources["data-plane"] = (f"no data plane for cluster {cluster}: "
                                     f"{access.server_problem or 'no rlark-server'}")
            lines = (gateway_logs or {}).get(name)
            read.logs.append(PodLog(name, tuple(lines or ()), source="gateway",
                                    error=None if lines is not None else sources.get("gateway", "no gateway logs")))
            continue
        has_log = pod.phase in ("Running", "Succeeded", "Failed")
        pending.append((read, pod, pool.submit(access.data_plane_pod, cluster, name, namespace),
                        pool.submit(_events, access, cluster, name, namespace),
                        pool.submit(_log, access, cluster, name, namespace, None, True, pod.uid) if has_log else None))
    previous = []
    for read, pod, container, events, log in pending:
        name, cluster, namespace = pod.pod_name, pod.namespace, pod.pod_namespace or keys.WORKLOAD_NAMESPACE
        try:
            read.plane_pod = container.result()
            read.container = main_container(name, read.plane_pod)
        except RlarkError as exc:
            read.unread = True
            sources["data-plane"] = f"cannot read Pod {name} from cluster {cluster}: {exc}"
        read.events = events.result()
        instance = read.container.restart_count if read.container else None
        if log is None:
            read.logs.append(PodLog(name, instance=instance, source="data-plane",
                                    error=f"Pod is {pod.phase or 'Pending'}: no logs yet"))
            continue
        current = log.result()
        if instance is not None and _instance_changed(access, cluster, name, namespace, pod.uid, instance):
            current = _log(access, cluster, name, namespace, None, True, pod.uid)  # a restart: read anew
        read.logs.append(replace(current, instance=instance))
        if read.container and read.container.restart_count > 0:
            previous.append((read, pool.submit(_log, access, cluster, name, namespace,
                                               read.container.restart_count - 1, False, pod.uid)))
    for read, log in previous:
        read.logs.append(log.result())
    return reads


def output_source(job: Job, tasks: list[dict[str, Any]], pods: list[dict[str, Any]], location: str) -> tuple[str, ...] | None:
    """Where the run's output path lives (pure): ("storage", class, cluster, mount target) when a role mounts
    object storage over it, else ("pod", cluster, pod name, pod namespace) for a Running Pod (the Header's first)
    to read it in; None when there is no such Pod."""
    mount = mount_over(job, {Task(t).name: Task(t).namespace for t in tasks}, location)
    if mount is not None:
        return "storage", mount.storage_class, mount.cluster, mount.target
    specs = sorted(job.tasks, key=lambda spec: not spec.head)
    order = {job.task_name(spec): index for index, spec in enumerate(specs)}
    running = sorted((Pod(p) for p in pods if Pod(p).phase == "Running"),
                     key=lambda p: (order.get(p.task_name, len(order)), p.ordinal or 0, p.pod_name))
    for pod in running:
        return "pod", pod.namespace, pod.pod_name, pod.pod_namespace or keys.WORKLOAD_NAMESPACE
    return None


def _outputs(access: ClusterAccess, job: Job, tasks: list[dict[str, Any]], pods: list[dict[str, Any]],
             location: str) -> OutputProbe:
    """The run's outputs read where they live: object storage through the gateway, else inside a Running Pod."""
    if not location.startswith("/"):
        return OutputProbe(location, error="not an absolute path in the Pods: nothing to read")
    where = output_source(job, tasks, pods, location)
    if where is None:
        return OutputProbe(location, error="no Running Pod to read it in, and no object-storage mount covers it")
    if where[0] == "storage":
        _, storage_class, cluster, target = where
        gateway = access.gateway_http()
        if gateway is None:
            return OutputProbe(location, error="no gateway configured to list object storage — see `rlark config`")

        def get_json(path: str, query: list[tuple[str, str]]) -> object:
            return gateway.json("GET", path, Request("list", "storage objects", storage_class, source="gateway"),
                                query=query)
        return probe_object_storage(get_json, read_url, storage_class, cluster, target, location)
    _, cluster, pod, namespace = where

    def run(name: str, *params: str) -> ExecResult:
        return run_fixed(access, cluster, pod, name, *params, namespace=namespace)
    return probe_in_pod(run, location, pod)


def read_url(url: str, timeout: float, max_bytes: int) -> Iterator[bytes]:
    """A presigned object URL's body in pieces for the probe's read-back, over cluster/http.py (the system's CAs;
    messages name only the URL's origin, never its signature)."""
    store, target = outside(url, "object store")
    return store.chunks(target, Request("get", "object", source="object store"), timeout, max_bytes)


def main_container(pod: str, real: dict[str, Any] | None) -> MainContainer | None:
    """The `main` container's state from a data-plane pod (any field may be missing or wrongly typed)."""
    status = main_container_status(real)
    if not status:
        return None
    state = dig(status, "state", default={})
    kind = next(iter(state), "") if isinstance(state, dict) else ""
    return MainContainer(
        pod, restart_count(status) or 0, kind, _text(dig(state, kind, "reason")) if kind else "",
        _exit_code(dig(state, "terminated", "exitCode")),
        _exit_code(dig(status, "lastState", "terminated", "exitCode")),
        _text(dig(status, "lastState", "terminated", "reason")),
        _text(dig(status, "lastState", "terminated", "startedAt")),
        _text(dig(status, "lastState", "terminated", "finishedAt")), _text(status.get("imageID")))


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""


def _exit_code(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _events(access: ClusterAccess, cluster: str, pod: str, namespace: str) -> tuple[PodEvent, ...]:
    try:
        items = access.data_plane_events(cluster, pod, namespace)
    except RlarkError:
        return ()
    return tuple(PodEvent(str(e.get("type") or ""), str(e.get("reason") or ""), str(e.get("message") or ""))
                 for e in items if isinstance(e, dict))


@dataclass
class _LogSoFar:
    """What was read of one container instance's log from its start: the check's screen gathers every few
    seconds, and each read asks only for what came after (`sinceTime` plus the timestamp-and-count resume)."""
    lines: list[str] = field(default_factory=list)
    size: int = 0
    resume: Resume = field(default_factory=Resume)
    full: bool = False
    """The read budget was reached: from now on only the log's end is read."""
    restarts: int | None = None
    """The container's restart count when the current instance's log was read (a new instance starts afresh)."""


LOGS_KEPT = 256
"""Container instances whose read start is kept (the oldest is forgotten first)."""

LogKey = tuple[str, str, str, str, int | None, bool, int]
"""(cluster, namespace, Pod, Pod uid, instance, current, read budget): one container instance's log read."""


class LogHeads:
    """What the run check read of each container instance's log, by (cluster, namespace, Pod, Pod uid, instance,
    current, the read budget): one per ClusterAccess (`access.check_logs`), so per context, and gone with it; thread-safe (the
    Pods' logs are read in parallel)."""

    def __init__(self, kept: int = LOGS_KEPT) -> None:
        self.kept = kept
        self.lock = threading.Lock()
        self.reads: dict[LogKey, _LogSoFar] = {}

    def take(self, key: LogKey) -> _LogSoFar:
        """What was read under `key` (a fresh start when nothing), held by the caller until `put` back."""
        with self.lock:
            return self.reads.pop(key, None) or _LogSoFar()

    def put(self, key: LogKey, so_far: _LogSoFar) -> None:
        with self.lock:
            self.reads[key] = so_far
            while len(self.reads) > self.kept:
                del self.reads[next(iter(self.reads))]

    def instance_changed(self, key: LogKey, restarts: int) -> bool:
        """Note the current instance's restart count beside what was read of its log; True (and what was read
        forgotten) when the container restarted since."""
        with self.lock:
            so_far = self.reads.get(key)
            if so_far is None:
                return False
            if so_far.restarts is None or so_far.restarts == restarts:
                so_far.restarts = restarts
                return False
            del self.reads[key]
            return True


def _log(access: ClusterAccess, cluster: str, pod: str, namespace: str, instance: int | None,
         current: bool, uid: str = "") -> PodLog:
    """One container instance's log read from its start (start-up markers, ranks and versions are near the top),
    streamed up to LOG_HEAD_BYTES; past that budget the read stops and the last LOG_TAIL lines (progress, the
    latest failure) are read on their own. `read` says which part the check saw. What was read is kept per Pod
    (`uid` of its Pod CR: a Pod of the same name later is another) and container instance."""
    key = (cluster, namespace, pod, uid, instance, current, LOG_HEAD_BYTES)
    heads = access.check_logs
    so_far = heads.take(key)
    try:
        last = () if so_far.full else _read_on(access, cluster, pod, namespace, current, so_far)
        tail: tuple[str, ...] = ()
        left_out = ""
        if so_far.full:
            stream = access.pod_log(cluster, pod, namespace=namespace, previous=not current, timestamps=False,
                                    tail=LOG_TAIL, read_timeout=LOG_READ_SECONDS, tail_bytes=LOG_TAIL_BYTES)
            tail = tuple(stream)
            left_out = tail_left_out(stream)
    except RlarkError as exc:
        return PodLog(pod, instance=instance, current=current, source="data-plane", error=str(exc))
    finally:
        heads.put(key, so_far)
    head = tuple(so_far.lines)
    if not so_far.full:
        lines = head + last
        return PodLog(pod, lines, instance=instance, current=current, source="data-plane",
                      read=f"the whole log ({len(lines):,} lines)")
    return PodLog(pod, head + tail, instance=instance, current=current, source="data-plane", tail_start=len(head),
                  read=f"its first {LOG_HEAD_BYTES / 2**20:g} MiB ({len(head):,} lines: the read budget) and "
                       f"{left_out or f'its last {len(tail):,} lines'}")


def _instance_changed(access: ClusterAccess, cluster: str, pod: str, namespace: str, uid: str,
                      restarts: int) -> bool:
    """Note the current instance's restart count beside what was read of its log; True (and what was read
    forgotten) when the container restarted since, so that log belongs to an earlier instance."""
    return access.check_logs.instance_changed((cluster, namespace, pod, uid, None, True, LOG_HEAD_BYTES),
                                             restarts)


def _read_on(access: ClusterAccess, cluster: str, pod: str, namespace: str, current: bool,
             so_far: _LogSoFar) -> tuple[str, ...]:
    """Read the log on from where `so_far` ends, into it, up to the budget. The newest line is returned but not
    kept: it may still be growing (a partial line), so the next read takes it again, whole or longer."""
    stream = access.pod_log(cluster, pod, namespace=namespace, previous=not current, timestamps=True,
                            since_time=so_far.resume.since(), read_timeout=LOG_READ_SECONDS)
    so_far.resume.restart()
    held: tuple[int | None, str] | None = None
    for raw in stream:
        stamp, ts, text = split_raw(raw)
        if held is not None and so_far.resume.admit_ts(held[0]):
            so_far.size += len(held[1]) + 1
            if so_far.size > LOG_HEAD_BYTES:
                so_far.full = True
                stream.close()
                return ()
            so_far.lines.append(held[1])
        held = (ts, text)
    if held is None or not copy.copy(so_far.resume).admit_ts(held[0]):
        return ()
    return (held[1],)


def _gateway_logs(access: ClusterAccess, job: str, sources: dict[str, str]) -> dict[str, list[str]]:
    try:
        entries = access.gateway_job_logs(job)
    except RlarkError as exc:
        sources["gateway"] = str(exc)
        return {}
    result = {}
    for entry in entries:
        text = entry.get("logs")
        if isinstance(text, str) and entry.get("phase") in ("Running", "Succeeded", "Failed"):
            result[str(entry.get("podName"))] = text.splitlines()
    return result


def _ray(access: ClusterAccess, job: Job) -> RayStatus:
    """Alive nodes, `ray status` text and whether profiling is on from the Header's dashboard; each read on its
    own, so a route the dashboard lacks (e.g. jobs) never hides the node count."""
    try:
        dashboard = access.ray_dashboard(job)
    except RlarkError as exc:
        return RayStatus(error=str(exc))
    if dashboard is None:
        return RayStatus(error="no data-plane context or Ray dashboard URL configured for the Header's cluster")
    try:
        alive = dashboard.alive_nodes()
    except RlarkError as exc:
        return RayStatus(error=str(exc))
    try:
        text = dashboard.cluster_status_text()
    except RlarkError:
        text = ""
    try:
        profiling: bool | None = dashboard.profiling_enabled()
    except RlarkError:
        profiling = None
    return RayStatus(alive_nodes=alive, status_text=text, profiling=profiling)


def _saved_yaml(state_dir: Path | None, job: str, sha: str | None) -> str | None:
    """The newest submitted YAML rlark saved for this Job and spec sha256 (actions.submit), if on this machine."""
    if state_dir is None or not sha:
        return None
    found = list_own(state_dir / "submitted", f"{glob.escape(object_file_name(job))}-*-{glob.escape(sha[:12])}.yaml")
    return str(found[-1]) if found else None
