"""Put a running Job straight into a sandbox store (Job, Tasks, Pod CRs, data-plane pods, container logs),
as the agent would, so cluster tests need no Ray.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

IMAGE = "registry.example/rlinf@sha256:" + "ab" * 32


def job_manifest(name: str, roles: list[dict]) -> dict:
    tasks = []
    for role in roles:
        tasks.append({
            "name": role["name"], "head": role.get("head", False), "role": role.get("role", "Actor"),
            "agentType": "Kubernetes", "nodeSelector": {"kubernetes.io/hostname": role["node"]},
            **({"runScript": "python train.py"} if role.get("head") else {}),
            "kubernetes": {"workload": {"kind": "StatefulSet", "replicas": 1, "template": {"spec": {
                "containers": [{"name": "main", "image": IMAGE,
                                "env": [{"name": "RLARK_TASK_ROLE", "value": role["name"]},
                                        {"name": "HF_TOKEN", "value": "hf_supersecretvalue0123456789"}]}]}}}},
        })
    return {"apiVersion": "rlinf.io/v1alpha1", "kind": "Job", "metadata": {"name": name}, "spec": {"tasks": tasks}}


def seed_running_job(sb, name: str, roles: list[dict], phase: str = "Running") -> dict:
    """Create the Job and, per role, its Task, one Running Pod CR, the data-plane pod and an empty log."""
    store = sb.store
    job = store.create("jobs", job_manifest(name, roles))
    store.update("jobs", {**job, "status": {"phase": phase, "tasks": [
        {"name": f"{name}-{r['name']}", "phase": "Running" if phase == "Running" else phase} for r in roles]}},
        subresource="status")
    pods = {}
    for rank, role in enumerate(roles):
        task = f"{name}-{role['name']}"
        cluster = role["cluster"]
        created = store.create("tasks", {
            "apiVersion": "rlinf.io/v1alpha1", "kind": "Task",
            "metadata": {"name": task, "namespace": cluster, "labels": {"rlinf.io/job": name},
                         "annotations": {"rlark.io/ray-role": "head" if role.get("head") else "worker",
                                         "rlark.io/ray-node-rank-start": str(rank)}},
            "spec": {k: v for k, v in job["spec"]["tasks"][rank].items() if k not in ("name", "head")}})
        store.update("tasks", {**created, "status": {"phase": "Running"}}, subresource="status")
        pod_name = f"{task}-0"
        store.create("pods", {
            "apiVersion": "rlinf.io/v1alpha1", "kind": "Pod",
            "metadata": {"name": str(uuid.uuid4()), "namespace": cluster,
                         "labels": {"rlark.io/task-name": task, "rlark.io/local-pod-name": pod_name,
                                    "rlark.io/local-pod-namespace": "rlark-system"}},
            "spec": {"taskNamespace": cluster, "taskName": task, "podNamespace": "rlark-system", "podName": pod_name},
            "status": {"phase": "Running", "node": role["node"], "ip": f"10.0.0.{rank + 10}"}})
        store.create("pods", {
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": pod_name, "namespace": "rlark-system", "labels": {"app": task}},
            "spec": {"containers": [{"name": "main", "image": IMAGE}], "nodeName": role["node"]},
            "status": {"phase": "Running", "containerStatuses": [
                {"name": "main", "restartCount": role.get("restarts", 0), "ready": True,
                 "state": {"running": {"startedAt": "2026-11-29T10:00:00Z"}}}]}}, plane=cluster)
        if role.get("head"):
            store.create("services", {
                "apiVersion": "v1", "kind": "Service",
                "metadata": {"name": f"{task}-ray-head", "namespace": "rlark-system"},
                "spec": {"clusterIP": "None", "selector": {"app": task},
                         "ports": [{"name": "ray", "port": 6379}, {"name": "dashboard", "port": 8265}]}},
                plane=cluster)
        sb.logs.start_instance(cluster, "rlark-system", pod_name, "main")
        pods[role["name"]] = (cluster, pod_name)
    return pods


def write_log(sb, cluster: str, pod: str, lines: list[str], when: datetime | None = None) -> None:
    """Append lines; all lines of one call share one timestamp (the resume must keep them apart by count)."""
    sb.logs.append(cluster, "rlark-system", pod, "main", "\n".join(lines), when=when)


def at(seconds: float) -> datetime:
    return datetime(2026, 11, 29, 10, 0, 0, tzinfo=UTC) + timedelta(seconds=seconds)


def remove_pod(sb, name: str, cluster: str, pod_name: str) -> None:
    """The Pod disappears (CR and data-plane pod), as after Stop."""
    store = sb.store
    for pod in store.list("pods", namespace=cluster)[0]:
        if pod["spec"].get("podName") == pod_name:
            store.delete("pods", pod["metadata"]["name"], cluster)
    store.delete("pods", pod_name, "rlark-system", plane=cluster)
    sb.logs.end_instance(cluster, "rlark-system", pod_name, "main", 0)


ROLES = [
    {"name": "actor", "role": "Actor", "head": True, "cluster": "rlark-gpu-a", "node": "gpu-a1", "restarts": 2},
    {"name": "env", "role": "Env", "cluster": "rlark-edge-b", "node": "edge-b1"},
]
