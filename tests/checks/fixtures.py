"""Evidence fixtures for the run check: a healthy 3-pod demo-ppo written from the specs' exact log lines.

Fault cases are small edits of the healthy evidence (see test_faults.py).
"""

from __future__ import annotations

import copy
import hashlib
import json
from dataclasses import replace
from datetime import UTC, datetime, timedelta

from rlark_sandbox.demo_workload import metric_table
from rlark_tui.checks import (
    HandOver,
    MainContainer,
    OutputFile,
    OutputProbe,
    PodLog,
    RayStatus,
    RunEvidence,
)

START = datetime(2026, 11, 29, 12, 0, 0, tzinfo=UTC)
NOW = START + timedelta(minutes=3)
DIGEST = "registry.example.com/rlinf@sha256:" + "ab" * 32
CODE_REF = "0123456789abcdef0123456789abcdef01234567"
RUN_ID = "ppo-demo-1"
PROGRESS = r"Global Step:\s*(\d+)/(\d+)"
DECIDED = HandOver(recorder="me", decision="continue")
"""A hand-over with what check 6 needs to pass."""

ROLES = (
    # task, role, cluster namespace, node, head
    ("actor", "Actor", "rlark-gpu-a", "gpu-a1", True),
    ("rollout", "Rollout", "rlark-gpu-a", "gpu-a2", False),
    ("env", "Env", "rlark-robot-b", "robot-b1", False),
)

CONFIG = {
    "cluster": {
        "num_nodes": 3,
        "component_placement": {"actor": "0-1", "rollout": "2", "env": "2"},
        "node_groups": [{"label": "gpus", "node_ranks": "0-2"}],
    },
    "runner": {"logger": {"log_path": "/out/ppo-demo-1", "experiment_name": "ppo"}, "max_steps": 10},
    "algorithm": {"adv_type": "gae"},
    "actor": {"group_name": "ActorGroup"},
    "rollout": {"group_name": "RolloutGroup"},
}
CONFIG_SUM = hashlib.sha256(json.dumps(CONFIG, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def _iso(value: datetime) -> str:
    return value.strftime("%Y-%m-%dT%H:%M:%SZ")


def task_spec(name: str, role: str, node: str, head: bool, image: str = DIGEST) -> dict:
    spec = {
        "name": name, "role": role, "agentType": "Kubernetes",
        "nodeSelector": {"kubernetes.io/hostname": node},
        "prepareScript": "echo preparing",
        "kubernetes": {"workload": {"kind": "StatefulSet", "replicas": 1, "template": {"spec": {
            "containers": [{
                "name": "main", "image": image,
                "env": [{"name": "RLARK_TASK_ROLE", "value": role}, {"name": "HF_TOKEN", "value": "hf_secretvalue"}],
                "volumeMounts": [{"name": "out", "mountPath": "/out"}],
                "resources": {"requests": {"nvidia.com/gpu": "1"}, "limits": {"nvidia.com/gpu": "1"}},
            }],
            "volumes": [{"name": "out", "hostPath": {"path": "/data/out"}}],
        }}}},
    }
    if head:
        spec["head"] = True
        spec["runScript"] = "python -m rlark_sandbox.demo_workload --run-id ppo-demo-1 --steps 10"
    return spec


def job(name: str = "demo-ppo", image: str = DIGEST) -> dict:
    return {
        "apiVersion": "rlinf.io/v1alpha1", "kind": "Job",
        "metadata": {"name": name, "creationTimestamp": _iso(START - timedelta(seconds=5))},
        "spec": {"tasks": [task_spec(t, r, n, h, image) for t, r, _, n, h in ROLES]},
        "status": {"phase": "Running", "startTime": _iso(START)},
    }


def tasks(job_obj: dict) -> tuple[dict, ...]:
    name = job_obj["metadata"]["name"]
    result = []
    for index, (task, _, namespace, _, head) in enumerate(ROLES):
        result.append({
            "metadata": {"name": f"{name}-{task}", "namespace": namespace, "labels": {"rlinf.io/job": name},
                         "annotations": {"rlark.io/ray-role": "head" if head else "worker",
                                         "rlark.io/ray-total-nodes": "3",
                                         "rlark.io/ray-node-rank-start": str(index),
                                         "rlark.io/ray-head-task-name": f"{name}-actor"}},
            "spec": copy.deepcopy(job_obj["spec"]["tasks"][index]),
            "status": {"phase": "Running"},
        })
    return tuple(result)


def pods(name: str = "demo-ppo", phase: str = "Running") -> tuple[dict, ...]:
    result = []
    for index, (task, _, namespace, node, _) in enumerate(ROLES):
        result.append({
            "metadata": {"name": f"uid-{task}", "namespace": namespace,
                         "creationTimestamp": _iso(START + timedelta(seconds=2)),
                         "labels": {"rlark.io/task-name": f"{name}-{task}",
                                    "rlark.io/local-pod-name": f"{name}-{task}-0",
                                    "rlark.io/local-pod-namespace": "rlark-system"}},
            "spec": {"taskNamespace": namespace, "taskName": f"{name}-{task}", "podNamespace": "rlark-system",
                     "podName": f"{name}-{task}-0"},
            "status": {"phase": phase, "node": node, "ip": f"10.0.0.{index + 1}"},
        })
    return tuple(result)


def nodes() -> tuple[dict, ...]:
    return tuple({
        "metadata": {"name": node, "namespace": namespace,
                     "labels": {"kubernetes.io/hostname": node, "rlark.io/cluster-id": namespace}},
        "status": {"phase": "Online"},
    } for _, _, namespace, node, _ in ROLES)


def head_lines(num_nodes: int = 3, run_id: str = RUN_ID, code_ref: str = CODE_REF, steps: int = 2) -> list[str]:
    lines = [
        "RLINF_NODE_RANK: 0",
        "Executing prepare script...",
        "preparing",
        f"Waiting for {num_nodes} nodes to join the Ray cluster...",
        "Starting Ray cluster status check...",
        f"Found {num_nodes} total nodes, {num_nodes} of which are alive.",
        f"Current node count: {num_nodes}",
        f"Cluster is ready: {num_nodes} nodes available (required: {num_nodes}).",
        "Ray cluster check passed.",
        "Ray cluster is ready. Printing cluster information:",
        "=" * 60,
        "======== Autoscaler status: 2026-11-29 12:00:30 ========",
        "Node status",
        "Active:",
        " 1 node_6fbe01",
        " 1 node_6936a2",
        " 1 node_77c0b3",
        "=" * 60,
        "Executing run script...",
        f"run_id: {run_id}",
        f"code_ref: {code_ref}",
        "[INFO 12:00:41 RLinf] RLinf is running on a cluster with 3 nodes and 3 accelerators. "
        "The nodes' details are: ",
    ]
    lines += json.dumps(CONFIG, indent=2).splitlines()
    for step in range(1, steps + 1):
        lines += metric_table(step, 10, 1.2 * step, {"rollout/rewards": step / 10, "env/success_once": 0.5,
                                                    "train/actor/policy_loss": 1 / step}).splitlines()
    lines.append("Saving checkpoint at step 1.")
    return lines


def worker_lines(rank: int, head: str = "demo-ppo-actor-ray-head") -> list[str]:
    return [
        f"RLINF_NODE_RANK: {rank}",
        "Executing prepare script...",
        "preparing",
        f"Connecting to Ray head at {head}:6379...",
        "HEAD IP: 127.0.0.1",
        "Head is reachable at 127.0.0.1:6379",
        "Local node IP: 127.0.0.1",
    ]


def logs(name: str = "demo-ppo") -> tuple[PodLog, ...]:
    return (
        PodLog(f"{name}-actor-0", tuple(head_lines()), instance=0, source="data-plane"),
        PodLog(f"{name}-rollout-0", tuple(worker_lines(1)), instance=0, source="data-plane"),
        PodLog(f"{name}-env-0", tuple(worker_lines(2)), instance=0, source="data-plane"),
    )


def record() -> dict:
    return {"runId": RUN_ID, "codeRef": CODE_REF, "configRef": "sha256:" + CONFIG_SUM, "expectedNumNodes": 3,
            "maxWaitSeconds": 600, "outputPath": "/out/ppo-demo-1", "progressPattern": PROGRESS}


def plan() -> dict:
    """The deployment plan as rlark_tui.jobspec.render writes it."""
    return {"version": 1, "job": "demo-ppo", "domain": "", "totalNodes": 3,
            "roles": [{"name": t, "task": t, "role": r, "head": h, "cluster": ns,
                       "nodes": [{"name": n, "namespace": ns}], "replicas": 1, "rankStart": i, "image": DIGEST}
                      for i, (t, r, ns, n, h) in enumerate(ROLES)]}


def outputs(mtime: datetime | None = None) -> OutputProbe:
    when = mtime or START + timedelta(seconds=90)
    base = "/out/ppo-demo-1/ppo/checkpoints/global_step_1/actor"
    return OutputProbe("/out/ppo-demo-1", (
        OutputFile(f"{base}/model_state_dict/full_weights.pt", 2048, when, "c0" * 32),
        OutputFile("/out/ppo-demo-1/metrics.log", 512, when, "d1" * 32),
    ))


def healthy(**changes) -> RunEvidence:
    job_obj = job()
    evidence = RunEvidence(
        job_name="demo-ppo",
        now=NOW,
        job=job_obj,
        tasks=tasks(job_obj),
        pods=pods(),
        nodes=nodes(),
        logs=logs(),
        containers=tuple(MainContainer(f"demo-ppo-{t}-0", 0, "running", image_id=DIGEST) for t, *_ in ROLES),
        ray=RayStatus(alive_nodes=3),
        launch_record=record(),
        plan=plan(),
        submitted_spec=copy.deepcopy(job_obj["spec"]),
        submitted_sha256="5e" * 32,
        submitted_yaml_path="/state/submitted/demo-ppo.yaml",
        outputs=outputs(),
    )
    return replace(evidence, **changes)


def with_log(evidence: RunEvidence, pod: str, lines, **log_changes) -> RunEvidence:
    """The evidence with one Pod's current log replaced."""
    new = tuple(replace(log, lines=tuple(lines), **log_changes) if log.pod == pod and log.current else log
                for log in evidence.logs)
    return replace(evidence, logs=new)


def unschedulable_job(name: str) -> dict:
    """A Job whose only Pod asks for more GPUs than its Node has: it can never start (no Ray, no logs)."""
    return {
        "apiVersion": "rlinf.io/v1alpha1", "kind": "Job", "metadata": {"name": name},
        "spec": {"tasks": [{
            "name": "actor", "head": True, "role": "Actor", "agentType": "Kubernetes",
            "nodeSelector": {"kubernetes.io/hostname": "gpu-a3"},
            "runScript": "echo never",
            "kubernetes": {"workload": {"kind": "StatefulSet", "replicas": 1, "template": {"spec": {"containers": [{
                "name": "main", "image": DIGEST,
                "env": [{"name": "WANDB_API_KEY", "value": "wandb-secret-value-123"}],
                "resources": {"requests": {"nvidia.com/gpu": "64"}, "limits": {"nvidia.com/gpu": "64"}},
            }]}}}},
        }]},
    }


def post_evidence(app, job_name: str, evidence) -> None:
    """Deliver run-check evidence to a running app the way the reconciler does: judged (as the evidence topic's
    worker judges it), in a new Snapshot."""
    from types import MappingProxyType

    from rlark_tui.checks import evaluate
    from rlark_tui.flow.messages import SnapshotChanged
    from rlark_tui.flow.polls import Gathered
    from rlark_tui.flow.snapshot import Snapshot

    gathered = Gathered(evidence, report=evaluate(evidence))
    app.post_message(SnapshotChanged(Snapshot(evidence=MappingProxyType({job_name: gathered}))))
