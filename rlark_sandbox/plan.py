"""Pure decisions of the simulated RLark agent: Job -> Tasks, Task -> pod names, scheduling, phase machines.

No I/O: functions take API dicts and return the objects or decisions the agent writes (rlark-platform.md §2-§3).
"""

from __future__ import annotations

import copy
import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from rlark_tui.model import keys
from rlark_tui.model.objects import Node, TaskSpec, dig
from rlark_tui.model.placement import (
    header_task_index,
    replicas,
    selector_matches,
    task_namespace,
    total_nodes,
)
from rlark_tui.model.quantity import parse_quantity

AGENT_TYPE = "Kubernetes"
RUN_KINDS = ("StatefulSet",)
"""Workload kinds the sandbox agent runs (the platform also runs Deployments and DaemonSets; UI-made Jobs
are always StatefulSets)."""
MANAGEMENT_TASK_ANNOTATION = "rlark.io/management-task-name"
MANAGEMENT_NAMESPACE_ANNOTATION = "rlark.io/management-task-namespace"
MANAGEMENT_DOMAIN_ANNOTATION = "rlark.io/management-task-domain"
REVISION_LABEL = "controller-revision-hash"
"""The StatefulSet revision a Pod was made from (Kubernetes' label)."""
LOCAL_POD_NAME_LABEL = "rlark.io/local-pod-name"
LOCAL_POD_NAMESPACE_LABEL = "rlark.io/local-pod-namespace"
DOMAIN_SUFFIX = ".rlark-domain"


def job_task_name(job_name: str, task_name: str) -> str:
    return f"{job_name}-{task_name}"


def desired_tasks(job: Mapping, nodes: Sequence[Mapping]) -> list[dict]:
    """The Tasks the Job controller keeps for a Job (§2.1): one per `spec.tasks[]`, named `<job>-<task>`,
    labelled with the Job, owned by it, in the namespace of the first Node its cut selector matches."""
    meta = job.get("metadata") or {}
    spec = job.get("spec") or {}
    name = meta.get("name", "")
    entries = [t for t in spec.get("tasks") or [] if isinstance(t, Mapping)]
    head_index = header_task_index(entries)
    head_task = job_task_name(name, entries[head_index].get("name", "")) if head_index is not None else ""
    total = total_nodes(entries)
    tasks = []
    rank = 0
    for entry in entries:
        task_spec = {k: copy.deepcopy(v) for k, v in entry.items() if k not in ("name", "head")}
        for field in ("domain", "sshPublicKey"):
            if spec.get(field):
                task_spec[field] = spec[field]
            else:
                task_spec.pop(field, None)
        if spec.get("stopped") is True:
            workload = task_spec.setdefault("kubernetes", {}).setdefault("workload", {})
            workload["replicas"] = 0
        annotations = {
            keys.RAY_ROLE_ANNOTATION: "head" if entry.get("head") is True else "worker",
            keys.RAY_TOTAL_NODES_ANNOTATION: str(total),
            keys.RAY_RANK_START_ANNOTATION: str(rank),
        }
        if head_task:
            annotations[keys.RAY_HEAD_TASK_ANNOTATION] = head_task
        rank += replicas(entry)
        tasks.append({
            "apiVersion": "rlinf.io/v1alpha1",
            "kind": "Task",
            "metadata": {
                "name": job_task_name(name, entry.get("name", "")),
                "namespace": task_namespace(entry.get("nodeSelector") or {}, nodes),
                "labels": {keys.JOB_LABEL: name},
                "annotations": annotations,
                "ownerReferences": [{
                    "apiVersion": "rlinf.io/v1alpha1", "kind": "Job", "name": name,
                    "uid": meta.get("uid", ""), "controller": True, "blockOwnerDeletion": True,
                }],
            },
            "spec": task_spec,
        })
    return tasks


def task_changed(current: Mapping, desired: Mapping) -> bool:
    """Whether the controller must write `desired` over `current` (spec, labels or annotations differ)."""
    if current.get("spec") != desired.get("spec"):
        return True
    cur_meta, want_meta = current.get("metadata") or {}, desired.get("metadata") or {}
    for field in ("labels", "annotations"):
        have = cur_meta.get(field) or {}
        if any(have.get(k) != v for k, v in (want_meta.get(field) or {}).items()):
            return True
    return False


def runs_here(task: Mapping) -> bool:
    """Whether an agent of the Task's cluster runs it: agentType Kubernetes, a StatefulSet workload, and a
    namespace an agent watches (`rlark-<id>`, never `default`)."""
    spec = TaskSpec(task.get("spec"))
    namespace = dig(task, "metadata", "namespace", default="")
    return (spec.agent_type == AGENT_TYPE and spec.workload_kind in RUN_KINDS
            and namespace.startswith(keys.CLUSTER_NAMESPACE_PREFIX))


def statefulset_pods_to_create(task_name: str, count: int, existing: Mapping[str, bool]) -> list[str]:
    """Pod names a StatefulSet (OrderedReady) creates next: `<task>-<ordinal>` in order; ordinal i only once
    every lower ordinal exists and is ready. `existing` maps pod name -> ready."""
    create = []
    for ordinal in range(count):
        pod = f"{task_name}-{ordinal}"
        if pod not in existing:
            create.append(pod)
            break
        if not existing[pod]:
            break
    return create


def template_revision(task_spec: Mapping) -> str:
    """The revision of the Pod template the agent builds from a Task's spec: its pull reconciler copies the
    template, with the run command in its RLARK_RUN_SCRIPT env (ray_init.go), into the StatefulSet whenever the
    Task changes (pull.go createOrUpdateWorkload). Everything but the replica count: a changed run command,
    image or env is a new revision, a scale is not."""
    spec = copy.deepcopy(dict(task_spec))
    workload = dig(spec, "kubernetes", "workload")
    if isinstance(workload, dict):
        workload.pop("replicas", None)
    return hashlib.sha256(json.dumps(spec, sort_keys=True, default=str).encode()).hexdigest()[:10]


def pod_to_roll(task_name: str, revision: str, pods: Mapping[str, tuple[str, bool]]) -> str | None:
    """The Pod a StatefulSet's RollingUpdate (OrderedReady, its default) deletes next for the new `revision`:
    the highest ordinal still of an older revision, once every Pod already of the new one is ready; None when
    none is out of date or one is still starting. `pods` maps pod name -> (its revision, ready); a Pod without a
    revision is taken as current."""
    if not all(ready for rev, ready in pods.values() if rev in ("", revision)):
        return None
    old = [(int(name.rpartition("-")[2]), name) for name, (rev, _) in pods.items()
           if rev not in ("", revision) and name.startswith(f"{task_name}-") and name.rpartition("-")[2].isdigit()]
    return max(old)[1] if old else None


def pods_to_delete(task_name: str, count: int, existing: Iterable[str]) -> list[str]:
    """StatefulSet pods beyond `count` replicas (scale down, stop), highest ordinal first."""
    extra = []
    for pod in existing:
        ordinal = pod.rpartition("-")[2]
        if pod.startswith(f"{task_name}-") and ordinal.isdigit() and int(ordinal) >= count:
            extra.append((int(ordinal), pod))
    return [pod for _, pod in sorted(extra, reverse=True)]


def pod_requests(task_spec: Mapping) -> dict[str, float]:
    """Resource requests of the `main` container (limits stand in for missing requests, as Kubernetes
    defaults them), as numbers."""
    container = TaskSpec(task_spec).main_container
    resources = container.get("resources") or {}
    merged = dict(resources.get("limits") or {})
    merged.update(resources.get("requests") or {})
    result = {}
    for name, value in merged.items():
        amount = parse_quantity(value)
        if amount:
            result[str(name)] = amount
    return result


def used_resources(requests: Iterable[Mapping[str, float]]) -> dict[str, float]:
    """Σ requests of the non-terminal pods on one node (the Node CR's `status.used`)."""
    used: dict[str, float] = {}
    for req in requests:
        for name, amount in req.items():
            used[name] = used.get(name, 0.0) + amount
    return used


@dataclass(frozen=True)
class Placement:
    node: str | None
    message: str = ""


def schedule(selector: Mapping, requests: Mapping[str, float], nodes: Sequence[Mapping],
             used: Mapping[str, Mapping[str, float]], taken: Iterable[str]) -> Placement:
    """Pick a node for one pod as the Kubernetes scheduler would: the node must match the selector, be
    Online and not cordoned, not already hold a pod of this task (anti-affinity), and have free allocatable
    for every request. `used` maps node name -> used resources; `taken` = nodes with a pod of this task.
    Unplaceable -> `Placement(None, "0/N nodes are available: ...")`, the FailedScheduling message."""
    taken = set(taken)
    reasons: dict[str, int] = {}
    ordered = sorted(nodes, key=lambda n: dig(n, "metadata", "name", default=""))
    for raw in ordered:
        node = Node(raw)
        reason = _unfit_reason(node, selector, requests, used.get(node.name, {}), taken)
        if reason is None:
            return Placement(node.name)
        reasons[reason] = reasons.get(reason, 0) + 1
    detail = ", ".join(sorted(f"{count} {reason}" for reason, count in reasons.items()))
    message = f"0/{len(ordered)} nodes are available"
    return Placement(None, f"{message}: {detail}." if detail else f"{message}.")


def _unfit_reason(node: Node, selector: Mapping, requests: Mapping[str, float], used: Mapping[str, float],
                  taken: set[str]) -> str | None:
    if not node.online:
        return "node(s) had untolerated taint {node.kubernetes.io/not-ready: }"
    if node.unschedulable:
        return "node(s) were unschedulable"
    if not selector_matches(selector, node.labels):
        return "node(s) didn't match Pod's node affinity/selector"
    if node.name in taken:
        return "node(s) didn't match pod anti-affinity rules"
    for name in sorted(requests):
        allocatable = node.allocatable(name) or 0.0
        if requests[name] > allocatable - used.get(name, 0.0):
            return f"Insufficient {name}"
    return None


def task_phase(kind: str, want: int, ready: int, unavailable: int = 0) -> str:
    """Task phase from its workload (§2.5). StatefulSet: 0 replicas -> Stopped, all ready -> Running, else
    Pending. Deployment: 0 -> Stopped, all ready -> Running, unavailable -> Failed, else Pending.
    DaemonSet: all ready -> Running, unavailable -> Failed, else Pending."""
    if kind == "DaemonSet":
        if want > 0 and ready >= want:
            return "Running"
        return "Failed" if unavailable > 0 else "Pending"
    if want == 0:
        return "Stopped"
    if ready >= want:
        return "Running"
    if kind == "Deployment" and unavailable > 0:
        return "Failed"
    return "Pending"


TERMINAL_JOB_PHASES = ("Succeeded", "Failed")


def job_status(job: Mapping, task_phases: Mapping[str, tuple[str, str]], now: str) -> dict:
    """The Job's next `status` by the controller's state machine (§3). `task_phases` maps Task name ->
    (phase, message) for the Tasks that exist. Succeeded/Failed are terminal and returned unchanged."""
    status = copy.deepcopy(job.get("status") or {})
    phase = status.get("phase", "")
    if phase in TERMINAL_JOB_PHASES:
        return status
    meta = job.get("metadata") or {}
    spec = job.get("spec") or {}
    job_name = meta.get("name", "")
    short_names = [t.get("name", "") for t in spec.get("tasks") or [] if isinstance(t, Mapping)]
    if "tasks" not in status:
        status["tasks"] = [{"name": name, "phase": "Pending"} for name in short_names]
    for entry in status["tasks"]:
        name = entry.get("name", "")
        if name not in short_names and name.startswith(f"{job_name}-") and name[len(job_name) + 1:] in short_names:
            entry["name"] = name = name[len(job_name) + 1:]
        task = job_task_name(job_name, name)
        if task in task_phases:
            entry["phase"], message = task_phases[task]
            if message:
                entry["message"] = message
            else:
                entry.pop("message", None)
    if not phase:
        phase = "Pending"
        status.setdefault("startTime", now)
        status.pop("endTime", None)
    phases = [p for p, _ in task_phases.values()]
    if spec.get("stopped") is True:
        if phase in ("Pending", "Running"):
            phase = "Stopped"
    elif phase == "Stopped":
        phase = "Pending"
    elif phase == "Pending" and "Running" in phases:
        phase = "Running"
    elif phase == "Running":
        if "Failed" in phases:
            phase = "Failed"
        elif phases and all(p == "Succeeded" for p in phases):
            phase = "Succeeded"
            status["endTime"] = now
    status["phase"] = phase
    return status


def head_address(head_task: str, domain: str) -> str:
    """`RLARK_HEAD_ADDRESS` of workers (§2.3): `<head task>-0.rlark-domain` with a domain, else the head
    Service `<head task>-ray-head` (resolvable only inside the head's cluster)."""
    if domain:
        return f"{head_task}-0{DOMAIN_SUFFIX}"
    return f"{head_task}-ray-head"
