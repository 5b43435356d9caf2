"""JobDraft + current Nodes → the `rlinf.io/v1alpha1` Job manifest the platform expects, with the plan.

Pure and total: renders whatever the draft holds (validation says whether it may be submitted).
"""

from __future__ import annotations

import bisect
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from rlark_tui.jobspec.draft import JobDraft, RoleDraft
from rlark_tui.model import keys
from rlark_tui.model.naming import volume_name
from rlark_tui.model.objects import Node
from rlark_tui.model.placement import (
    DEVICE,
    GPU,
    Hardware,
    NodeChanges,
    NodeSet,
    as_nodes,
    dict_of,
    hardware_named,
    hostname_selector,
    matching_nodes,
    updated_per_node_set,
)

PLAN_VERSION = 1


@dataclass(frozen=True)
class RolePlacement:
    """A role placed by hardware, as the console writes it: the chosen hardware (None when no Node of the cluster
    has that model, or none was named), the slots one worker asks for, the Nodes the hostname selector lists
    (automatic: every eligible Node; picked: the picked Nodes found), the picked names no Node has, and the
    replicas (automatic: `workers`; picked: one per picked Node)."""

    hardware: Hardware | None
    per_worker: float
    nodes: tuple[Node, ...]
    missing: tuple[str, ...]
    replicas: int

    @property
    def selector(self) -> dict[str, str]:
        return hostname_selector(node.name for node in self.nodes)


def per_worker(role: RoleDraft, hardware: Hardware | None) -> float:
    """The slots one worker of `role` takes on `hardware`: its GPUs, its devices of that resource, or none."""
    if hardware is None or hardware.kind == GPU:
        return float(role.gpu)
    if hardware.kind == DEVICE:
        return float(role.devices.get(hardware.resource, 0))
    return 0.0


def role_placement(role: RoleDraft, nodes: Iterable[Any]) -> RolePlacement:
    """Where the placement of a `placed` role puts it over the current Nodes (in its cluster, every cluster when
    it names none)."""
    nodes = as_nodes(nodes)
    hardware = hardware_named(nodes, role.cluster, role.hardware) if role.hardware else None
    amount = per_worker(role, hardware)
    if not role.nodes:
        eligible = tuple(slot.node for slot in hardware.eligible(amount)) if hardware is not None else ()
        return RolePlacement(hardware, amount, eligible, (), role.workers)
    named = _named(nodes, role.cluster)
    found = tuple(named[name][0] for name in dict.fromkeys(role.nodes) if name in named)
    missing = tuple(name for name in dict.fromkeys(role.nodes) if name not in named)
    return RolePlacement(hardware, amount, found, missing, len(role.nodes))


Named = Mapping[str, tuple[Node, ...]]
"""A name → the Nodes of that name, in (cluster, NodeSet order) order: the first is the one a picked name means."""


def _update_named(nodes: NodeSet, earlier: Named, changes: NodeChanges, cluster: str) -> Named:
    gone = {id(node) for node in changes.gone}
    touched = {node.name for node in changes.gone if not cluster or node.cluster == cluster}
    new = [node for node in changes.new if not cluster or node.cluster == cluster]
    named = dict_of(earlier)
    for name in touched | {node.name for node in new}:
        same = [node for node in named.get(name, ()) if id(node) not in gone]
        for node in new:
            if node.name == name:
                bisect.insort(same, node, key=lambda each: (each.cluster, nodes.place(each)))
        if same:
            named[name] = tuple(same)
        else:
            named.pop(name, None)
    return MappingProxyType(named)


@updated_per_node_set(_update_named)
def _named(nodes: Iterable[Node], cluster: str) -> Named:
    named: dict[str, list[Node]] = {}
    for node in sorted(nodes, key=lambda n: n.cluster):
        if not cluster or node.cluster == cluster:
            named.setdefault(node.name, []).append(node)
    return MappingProxyType({name: tuple(same) for name, same in named.items()})


def role_matches(role: RoleDraft, nodes: Iterable[Any]) -> list[Node]:
    """Nodes the role's selector matches, in every cluster (an empty selector matches none); for a placed role,
    the Nodes its placement lists."""
    if role.placed:
        return list(role_placement(role, nodes).nodes)
    if not role.selector:
        return []
    return matching_nodes(dict(role.selector), as_nodes(nodes))


def role_selector(role: RoleDraft, nodes: Iterable[Any]) -> dict[str, str]:
    """The nodeSelector the role's task gets: its placement's hostnames, else its selector."""
    return role_placement(role, nodes).selector if role.placed else dict(role.selector)


def role_replicas(role: RoleDraft, matched: list[Node]) -> int:
    """The role's workers: a placement's count (`workers`, or one per picked Node), else one per matched Node."""
    if role.placed:
        return len(role.nodes) if role.nodes else role.workers
    return len(matched)


def role_volumes(job_name: str, role: RoleDraft) -> list[tuple[str, dict, dict]]:
    """(volume name, volume, volumeMount) per mount; storage claims named `pvc-<job>-<task>-<volume>`."""
    result = []
    used: set[str] = set()
    for mount in role.mounts:
        base = volume_name(mount.target)
        name, suffix = base, 2
        while name in used:
            name = f"{base[:60]}-{suffix}"
            suffix += 1
        used.add(name)
        if mount.type == "storage":
            volume = {"name": name, "persistentVolumeClaim": {
                "claimName": f"pvc-{job_name}-{role.task_name}-{name}"}}
        else:
            volume = {"name": name, "hostPath": {"path": mount.source}}
        result.append((name, volume, {"name": name, "mountPath": mount.target}))
    return result


def _resources(role: RoleDraft) -> dict:
    accelerators: dict[str, str] = {}
    if role.gpu > 0:
        accelerators[keys.GPU_RESOURCE] = str(role.gpu)
    accelerators.update((name, str(amount)) for name, amount in role.devices.items() if amount > 0)
    requests = dict(accelerators)
    if role.cpu:
        requests["cpu"] = role.cpu
    if role.memory:
        requests["memory"] = role.memory
    resources: dict[str, dict] = {}
    if requests:
        resources["requests"] = requests
    if accelerators:
        resources["limits"] = dict(accelerators)
    return resources


def _task(draft: JobDraft, role: RoleDraft, is_head: bool, replicas: int, selector: dict[str, str]) -> dict:
    profiling = draft.debuggable and is_head
    container: dict[str, Any] = {"name": keys.MAIN_CONTAINER, "image": role.image,
                                 "env": [{"name": "RLARK_TASK_ROLE", "value": role.name}]
                                 + [{"name": k, "value": v} for k, v in role.env.items()
                                    if not (profiling and k == keys.PROFILING_ENV)]
                                 + ([{"name": keys.PROFILING_ENV, "value": "1"}] if profiling else [])}
    volumes = role_volumes(draft.name, role)
    if volumes:
        container["volumeMounts"] = [mount for _, _, mount in volumes]
    resources = _resources(role)
    if resources:
        container["resources"] = resources
    if draft.debuggable:
        container["securityContext"] = {"capabilities": {"add": [keys.PTRACE_CAPABILITY]}}
    pod_spec: dict[str, Any] = {"containers": [container]}
    if volumes:
        pod_spec["volumes"] = [volume for _, volume, _ in volumes]
    workload: dict[str, Any] = {"kind": "StatefulSet", "replicas": replicas}
    claims = {volume["persistentVolumeClaim"]["claimName"]: mount.storage_class
              for (_, volume, _), mount in zip(volumes, role.mounts) if "persistentVolumeClaim" in volume}
    if claims:
        workload["pvcStorageMap"] = claims
    workload["template"] = {"spec": pod_spec}

    task: dict[str, Any] = {"name": role.task_name}
    if is_head:
        task["head"] = True
    task.update({"role": role.platform_role, "agentType": "Kubernetes", "nodeSelector": selector})
    if role.prepare_script:
        task["prepareScript"] = role.prepare_script
    if is_head and draft.run_script:
        task["runScript"] = draft.run_script
    if is_head and draft.tensorboard_dir:
        task["tensorBoardDir"] = draft.tensorboard_dir
    task["kubernetes"] = {"workload": workload}
    return task


def deployment_plan(draft: JobDraft, nodes: Iterable[Any]) -> dict:
    """What the submit plans per role: task, cluster, matched Nodes (name + namespace), replicas, rank start,
    resources, image and mounts; the run check compares what ran against it."""
    nodes = as_nodes(nodes)
    header = draft.header_index()
    roles, rank = [], 0
    for index, role in enumerate(draft.roles):
        matched = role_matches(role, nodes)
        replicas = role_replicas(role, matched)
        planned = {
            "name": role.name, "task": role.task_name, "role": role.platform_role, "head": index == header,
            "cluster": role.cluster, "selector": role_selector(role, nodes),
            "nodes": [{"name": n.name, "namespace": n.cluster} for n in matched],
            "replicas": replicas, "rankStart": rank, "gpu": role.gpu, "devices": dict(role.devices),
            "cpu": role.cpu, "memory": role.memory, "image": role.image,
            "mounts": [{"type": m.type, "target": m.target, "source": m.source, "storageClass": m.storage_class}
                       for m in role.mounts],
        }
        if role.placed:
            planned["placement"] = {"hardware": role.hardware, "workers": replicas, "nodes": list(role.nodes)}
        roles.append(planned)
        rank += replicas
    return {"version": PLAN_VERSION, "job": draft.name, "domain": draft.domain, "totalNodes": rank,
            "roles": roles}


def render_job(draft: JobDraft, nodes: Iterable[Any]) -> dict:
    """The Job manifest for a draft: one StatefulSet task per role, replicas = matched Nodes (or a placement's
    workers), `head: true` on the Header role only, launch record and deployment plan as JSON annotations on the
    Job."""
    nodes = as_nodes(nodes)
    plan = deployment_plan(draft, nodes)
    header = draft.header_index()
    annotations: dict[str, str] = {}
    if draft.display_name:
        annotations[keys.DISPLAY_NAME_ANNOTATION] = draft.display_name
    if draft.record:
        annotations[keys.LAUNCH_RECORD_ANNOTATION] = _json(draft.record)
    annotations[keys.DEPLOYMENT_PLAN_ANNOTATION] = _json(plan)
    spec: dict[str, Any] = {}
    if draft.domain:
        spec["domain"] = draft.domain
    if draft.ssh_public_key:
        spec["sshPublicKey"] = draft.ssh_public_key.strip()
    spec["tasks"] = [_task(draft, role, index == header, planned["replicas"], planned["selector"])
                     for index, (role, planned) in enumerate(zip(draft.roles, plan["roles"]))]
    return {"apiVersion": "rlinf.io/v1alpha1", "kind": "Job",
            "metadata": {"name": draft.name, "annotations": annotations}, "spec": spec}


def _json(value: Mapping) -> str:
    return json.dumps(value, separators=(",", ":"), sort_keys=False, ensure_ascii=False)
