"""A Pod CR's `main` container health read from its data plane: restart count and failure reason (lastState,
waiting reason, BackOff/FailedMount/Unhealthy events), for `describe`, `get pods -o wide` and the job detail.

I/O: one data-plane pod read and one events read per Pod; the phrase itself is model/podstate.py (pure).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rlark_tui.cluster.access import ClusterAccess, parallel_map
from rlark_tui.cluster.errors import ApiError, Unreachable
from rlark_tui.model import keys
from rlark_tui.model.objects import Pod, main_container_status, restart_count
from rlark_tui.model.podstate import PodHealth, failure_reason


def pod_state(access: ClusterAccess, pod: Pod) -> tuple[str, str]:
    """(restart count, failure reason) as text: "?" when the data plane did not answer, "-" without a data-plane
    pod; the reason is "" when nothing is wrong."""
    namespace = pod.pod_namespace or keys.WORKLOAD_NAMESPACE
    name = pod.pod_name or pod.name
    try:
        real = access.data_plane_pod(pod.namespace, name, namespace)
    except (ApiError, Unreachable):
        return "?", ""
    if real is None:
        return "-", ""
    try:
        events = access.data_plane_events(pod.namespace, name, namespace)
    except (ApiError, Unreachable):
        events = []
    reason = failure_reason(real, events)
    status = main_container_status(real)
    if not status:
        return "0", reason
    count = restart_count(status)
    return ("?" if count is None and "restartCount" in status else str(count or 0)), reason


def pods_health(access: ClusterAccess, pods: list[Pod]) -> dict[str, PodHealth]:
    """Pod CR key -> restart count and reason of `main`, from ONE pod list per data plane (the platform labels
    every workload pod `app=<task>`), without events: the job list's REASON column for many Jobs at once.
    Data planes that do not answer are left out."""
    by_cluster: dict[str, list[Pod]] = {}
    for pod in pods:
        by_cluster.setdefault(pod.namespace, []).append(pod)

    def read(cluster: str) -> dict[str, dict[str, Any]]:
        tasks = sorted({pod.task_name for pod in by_cluster[cluster] if pod.task_name})
        try:
            found = access.data_plane_pods(cluster, f"app in ({','.join(tasks)})") if tasks else None
        except (ApiError, Unreachable):
            found = None
        return {str((item.get("metadata") or {}).get("name", "")): item for item in found or []}

    return health_from(pods, dict(zip(by_cluster, parallel_map(read, list(by_cluster)))))


def health_from(pods: list[Pod], listed: Mapping[str, Mapping[str, dict[str, Any]]]) -> dict[str, PodHealth]:
    """Pod CR key -> restart count and reason of `main`, from data-plane pods already listed (cluster -> pod name
    -> pod); Pods not in them are left out."""
    health = {}
    for pod in pods:
        found = listed.get(pod.namespace, {}).get(pod.pod_name or pod.name)
        if found is not None:
            count = restart_count(main_container_status(found))
            health[f"{pod.namespace}/{pod.name}"] = PodHealth(count or 0, failure_reason(found))
    return health


def pod_states(access: ClusterAccess, pods: Sequence[Mapping[str, Any]]) -> dict[str, tuple[str, str]]:
    """Pod CR name -> pod_state, read for all Pods at once."""
    states = parallel_map(lambda raw: pod_state(access, Pod(raw)), pods)
    return {Pod(raw).name: state for raw, state in zip(pods, states)}
