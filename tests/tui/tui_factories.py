"""Snapshots built from small API-shaped dicts for the TUI tests (no cluster needed).

Shapes follow rlark-platform.md: Job → Tasks `<job>-<task>` labelled rlinf.io/job → Pod CRs labelled
rlark.io/task-name; Nodes gpu-a1 / gpu-a2 (rlark-gpu-a) and edge-b1 (rlark-edge-b) as in the demo.
"""

from __future__ import annotations

from rlark_tui.flow.snapshot import Snapshot, SourceState

ROLES = (("actor", "Actor", "Actor", "gpu-a1", "rlark-gpu-a"),
         ("rollout", "Rollout", "Rollout", "gpu-a2", "rlark-gpu-a"),
         ("env", "Env", "Environment", "edge-b1", "rlark-edge-b"))


def job_dict(name: str, *, phase: str = "Running", stopped: bool = False, display: str = "",
             roles=ROLES, created: str = "2026-11-29T10:00:00Z", env_extra=()) -> dict:
    tasks = []
    for index, (task, role, display_role, node, _) in enumerate(roles):
        env = [{"name": "RLARK_TASK_ROLE", "value": display_role}, *env_extra]
        tasks.append({
            "name": task, "head": index == 0, "role": role, "agentType": "Kubernetes",
            "nodeSelector": {"kubernetes.io/hostname": node},
            "prepareScript": "export HF_TOKEN=hf_abcdefghijklmnopqrstuvwxyz123456",
            **({"runScript": "python train.py", "tensorBoardDir": "/mnt/tb"} if index == 0 else {}),
            "kubernetes": {"workload": {"kind": "StatefulSet", "replicas": 1, "template": {"spec": {
                "containers": [{"name": "main", "image": "rlinf/rlinf@sha256:" + "a" * 64, "env": env,
                                "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}}}},
        })
    meta = {"name": name, "resourceVersion": "1", **({"creationTimestamp": created} if created else {})}
    if display:
        meta["annotations"] = {"rlark.io/display-name": display}
    return {"apiVersion": "rlinf.io/v1alpha1", "kind": "Job", "metadata": meta,
            "spec": {"stopped": stopped, "tasks": tasks,
                     "sshPublicKey": "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGu0 alice@example"},
            "status": {"phase": phase,
                       "tasks": [{"name": f"{name}-{t[0]}", "phase": phase} for t in roles]}}


def task_dict(job: str, task: str, namespace: str, *, replicas: int = 1, phase: str = "Running",
              events=()) -> dict:
    return {"apiVersion": "rlinf.io/v1alpha1", "kind": "Task",
            "metadata": {"name": f"{job}-{task}", "namespace": namespace, "labels": {"rlinf.io/job": job}},
            "spec": {"name": task, "kubernetes": {"workload": {"kind": "StatefulSet", "replicas": replicas}}},
            "status": {"phase": phase, "events": list(events)}}


def pod_dict(job: str, task: str, namespace: str, node: str, ip: str, *, ordinal: int = 0,
             phase: str = "Running") -> dict:
    uid = f"uid-{job}-{task}-{ordinal}"
    return {"apiVersion": "rlinf.io/v1alpha1", "kind": "Pod",
            "metadata": {"name": uid, "namespace": namespace,
                         "labels": {"rlark.io/task-name": f"{job}-{task}"}},
            "spec": {"taskName": f"{job}-{task}", "podName": f"{job}-{task}-{ordinal}",
                     "podNamespace": "rlark-system"},
            "status": {"phase": phase, "node": node, "ip": ip}}


def build_snapshot(jobs: list[dict], *, with_pods: bool = True, pod_phase: str = "Running",
                   control: str = "connected", reason: str = "", ray=None) -> Snapshot:
    tasks, pods = {}, {}
    for job in jobs:
        name = job["metadata"]["name"]
        stopped = job["spec"].get("stopped", False)
        for index, spec in enumerate(job["spec"]["tasks"]):
            role = next((r for r in ROLES if r[0] == spec["name"]), ROLES[index % len(ROLES)])
            namespace = role[4]
            task = task_dict(name, spec["name"], namespace, replicas=0 if stopped else 1)
            tasks[f"{namespace}/{task['metadata']['name']}"] = task
            if with_pods and not stopped:
                pod = pod_dict(name, spec["name"], namespace, role[3], f"10.0.0.{index + 1}", phase=pod_phase)
                pods[f"{namespace}/{pod['metadata']['name']}"] = pod
    return Snapshot(jobs={j["metadata"]["name"]: j for j in jobs}, tasks=tasks, pods=pods,
                    sources={"control plane": SourceState("control plane", control, reason)},
                    ray=ray or {})
