"""The evidence gatherer: reads one Job's objects, logs, events, Ray status, records and outputs into RunEvidence.

The I/O edge of the run check (through ClusterAccess and the output probe); a missing source is recorded, not fatal.
"""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

from rlark_tui.model.submission import submitted_record
from rlark_tui.checks.evidence import MainContainer, PodEvent, PodLog, RayStatus, RunEvidence
from rlark_tui.checks.probe import probe_output
from rlark_tui.cluster import ClusterAccess
from rlark_tui.cluster.errors import NotFound
from rlark_tui.cluster.kinds import JOBS
from rlark_tui.errors import RlarkError
from rlark_tui.model import keys
from rlark_tui.model.views import Job, Pod, dig, main_container_status, restart_count

LOG_TAIL = 1000


def gather(access: ClusterAccess, job_name: str, state_dir: Path | None = None,
           now: datetime | None = None) -> RunEvidence:
    """One snapshot of everything the run check looks at; control-plane failures other than 404 raise."""
    try:
        job = access.get(JOBS, job_name)
    except NotFound:
        return RunEvidence(job_name=job_name, now=now or datetime.now(timezone.utc))
    view = Job(job)
    tasks = access.job_tasks(job_name)
    pods = access.job_pods(job_name, tasks)
    nodes = access.nodes()
    sources: dict[str, str] = {}
    containers: list[MainContainer] | None = []
    events: dict[str, tuple[PodEvent, ...]] = {}
    logs: list[PodLog] = []
    unread: list[str] = []
    gateway_logs: dict[str, list[str]] | None = None
    for raw in pods:
        pod = Pod(raw)
        name, cluster, namespace = pod.pod_name, pod.namespace, pod.pod_namespace or keys.WORKLOAD_NAMESPACE
        if access.data_plane_contexts().get(cluster) is None:
            containers = None
            sources["data-plane"] = f"no data-plane context configured for cluster {cluster}"
            if gateway_logs is None:
                gateway_logs = _gateway_logs(access, job_name, sources)
            lines = gateway_logs.get(name)
            logs.append(PodLog(name, tuple(lines or ()), source="gateway",
                               error=None if lines is not None else sources.get("gateway", "no gateway logs")))
            continue
        try:
            container = main_container(name, access.data_plane_pod(cluster, name, namespace))
        except RlarkError as exc:
            container = None
            unread.append(name)
            sources["data-plane"] = f"cannot read Pod {name} from cluster {cluster}: {exc}"
        if containers is not None and container is not None:
            containers.append(container)
        events[name] = _events(access, cluster, name, namespace)
        instance = container.restart_count if container else None
        if pod.phase not in ("Running", "Succeeded", "Failed"):
            logs.append(PodLog(name, instance=instance, source="data-plane",
                               error=f"Pod is {pod.phase or 'Pending'}: no logs yet"))
            continue
        logs.append(_log(access, cluster, name, namespace, instance, current=True))
        if container and container.restart_count > 0:
            logs.append(_log(access, cluster, name, namespace, container.restart_count - 1, current=False))
    submitted = submitted_record(job)
    record = view.launch_record or None
    output_path = (record or {}).get("outputPath")
    return RunEvidence(
        job_name=job_name,
        now=now or datetime.now(timezone.utc),
        job=job,
        tasks=tuple(tasks),
        pods=tuple(pods),
        nodes=tuple(nodes),
        logs=tuple(logs),
        containers=tuple(containers) if containers is not None else None,
        unread_containers=tuple(unread),
        events=events,
        ray=_ray(access, view) if view.head_task and pods else None,
        launch_record=record,
        plan=view.deployment_plan or None,
        submitted_spec=submitted.spec,
        submitted_sha256=submitted.sha256,
        submitted_intact=submitted.intact or submitted.spec is None,
        submitted_yaml_path=_saved_yaml(state_dir, job_name, submitted.sha256),
        outputs=probe_output(output_path) if isinstance(output_path, str) and output_path else None,
        sources=sources,
    )


def main_container(pod: str, real: dict | None) -> MainContainer | None:
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
        _text(dig(status, "lastState", "terminated", "reason")), _text(status.get("imageID")))


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


def _log(access: ClusterAccess, cluster: str, pod: str, namespace: str, instance: int | None,
         current: bool) -> PodLog:
    try:
        stream = access.pod_log(cluster, pod, namespace=namespace, previous=not current, timestamps=False,
                                tail=LOG_TAIL, read_timeout=15)
        lines = tuple(stream)
    except RlarkError as exc:
        return PodLog(pod, instance=instance, current=current, source="data-plane", error=str(exc))
    return PodLog(pod, lines, instance=instance, current=current, source="data-plane")


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
    """Alive nodes and `ray status` text from the Header's dashboard; each read on its own, so a route the
    dashboard lacks (e.g. jobs) never hides the node count."""
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
    return RayStatus(alive_nodes=alive, status_text=text)


def _saved_yaml(state_dir: Path | None, job: str, sha: str | None) -> str | None:
    """The newest submitted YAML rlark saved for this Job and spec sha256 (actions.submit), if on this machine."""
    if state_dir is None or not sha:
        return None
    found = sorted((state_dir / "submitted").glob(f"{job}-*-{sha[:12]}.yaml"))
    return str(found[-1]) if found else None
