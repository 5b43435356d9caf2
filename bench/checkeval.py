"""check_eval_ms: the pure run check (`rlark_tui.checks.evaluate`) over a healthy 10-Pod Job whose Pods each
logged 1,000 lines (the Header's RLinf start-up, config dump and metric tables; the workers' Ray join and
training lines). Only `evaluate` is timed; median of 15 (5 quick) after one warm-up, wall clock and (less
sensitive to a loaded machine) the CPU time of the evaluating thread."""

from __future__ import annotations

import hashlib
import json
import statistics
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from rlark_sandbox.demo_workload import metric_table
from rlark_tui.checks import MainContainer, OutputFile, OutputProbe, PodLog, RayStatus, RunEvidence, evaluate

PODS = 10
LINES = 1000
START = datetime(2026, 11, 29, 12, 0, 0, tzinfo=UTC)
IMAGE = "registry.example.com/rlinf@sha256:" + "ab" * 32
CODE_REF = "0123456789abcdef0123456789abcdef01234567"
RUN_ID = "ppo-bench-1"
NAME = "bench-ppo"
CLUSTER = "rlark-gpu-a"
CONFIG = {"cluster": {"num_nodes": PODS, "component_placement": {"actor": "0-4", "rollout": "5-9"}},
          "runner": {"logger": {"log_path": f"/out/{RUN_ID}", "experiment_name": "ppo"}, "max_steps": 500},
          "algorithm": {"adv_type": "gae"}, "actor": {"group_name": "ActorGroup"}}
ROLES = [(f"r{index}", "Actor" if index < 5 else "Rollout", f"gpu-a{index}", index == 0) for index in range(PODS)]


def _iso(value: datetime) -> str:
    return value.strftime("%Y-%m-%dT%H:%M:%SZ")


def _task_spec(name: str, role: str, node: str, head: bool) -> dict:
    spec = {"name": name, "role": role, "agentType": "Kubernetes", "nodeSelector": {"kubernetes.io/hostname": node},
            "prepareScript": "echo preparing",
            "kubernetes": {"workload": {"kind": "StatefulSet", "replicas": 1, "template": {"spec": {"containers": [{
                "name": "main", "image": IMAGE, "env": [{"name": "RLARK_TASK_ROLE", "value": role}],
                "resources": {"requests": {"nvidia.com/gpu": "1"}, "limits": {"nvidia.com/gpu": "1"}}}]}}}}}
    if head:
        spec.update(head=True, runScript=f"python train.py --run-id {RUN_ID}")
    return spec


def _head_lines() -> list[str]:
    lines = ["RLINF_NODE_RANK: 0", "Executing prepare script...", "preparing",
             f"Waiting for {PODS} nodes to join the Ray cluster...", "Starting Ray cluster status check...",
             f"Found {PODS} total nodes, {PODS} of which are alive.", f"Current node count: {PODS}",
             f"Cluster is ready: {PODS} nodes available (required: {PODS}).", "Ray cluster check passed.",
             "Ray cluster is ready. Printing cluster information:", "=" * 60, "Node status", "Active:",
             *(f" 1 node_{index:06x}" for index in range(PODS)), "=" * 60, "Executing run script...",
             f"run_id: {RUN_ID}", f"code_ref: {CODE_REF}",
             f"[INFO 12:00:41 RLinf] RLinf is running on a cluster with {PODS} nodes and {PODS} accelerators. "
             "The nodes' details are: ", *json.dumps(CONFIG, indent=2).splitlines()]
    step = 0
    while len(lines) < LINES - 1:
        step += 1
        lines += metric_table(step, 500, 1.2 * step, {"train/actor/policy_loss": 1 / step,
                                                      "rollout/rewards": step / 100}).splitlines()
    return lines[:LINES - 1] + ["Saving checkpoint at step 1."]


def _worker_lines(rank: int) -> list[str]:
    lines = [f"RLINF_NODE_RANK: {rank}", "Executing prepare script...", "preparing",
             f"Connecting to Ray head at {NAME}-r0-ray-head:6379...", "HEAD IP: 10.0.0.1",
             "Head is reachable at 10.0.0.1:6379", f"Local node IP: 10.0.0.{rank + 1}"]
    lines += [f"(RolloutWorker pid={1000 + rank}) [INFO 12:{i % 60:02d}:{i % 60:02d}] generated batch {i}: "
              f"{256 + i % 7} sequences, mean length {300 + i % 50} tokens" for i in range(LINES - len(lines))]
    return lines


def evidence() -> RunEvidence:
    now = START + timedelta(minutes=20)
    job = {"apiVersion": "rlinf.io/v1alpha1", "kind": "Job",
           "metadata": {"name": NAME, "creationTimestamp": _iso(START - timedelta(seconds=5))},
           "spec": {"tasks": [_task_spec(*role) for role in ROLES]},
           "status": {"phase": "Running", "startTime": _iso(START)}}
    tasks = tuple({"metadata": {"name": f"{NAME}-{task}", "namespace": CLUSTER, "labels": {"rlinf.io/job": NAME},
                                "annotations": {"rlark.io/ray-role": "head" if head else "worker",
                                                "rlark.io/ray-total-nodes": str(PODS),
                                                "rlark.io/ray-node-rank-start": str(index),
                                                "rlark.io/ray-head-task-name": f"{NAME}-r0"}},
                   "spec": _task_spec(task, role, node, head), "status": {"phase": "Running"}}
                  for index, (task, role, node, head) in enumerate(ROLES))
    pods = tuple({"metadata": {"name": f"uid-{task}", "namespace": CLUSTER,
                               "creationTimestamp": _iso(START + timedelta(seconds=2)),
                               "labels": {"rlark.io/task-name": f"{NAME}-{task}",
                                          "rlark.io/local-pod-name": f"{NAME}-{task}-0",
                                          "rlark.io/local-pod-namespace": "rlark-system"}},
                  "spec": {"taskNamespace": CLUSTER, "taskName": f"{NAME}-{task}", "podNamespace": "rlark-system",
                           "podName": f"{NAME}-{task}-0"},
                  "status": {"phase": "Running", "node": node, "ip": f"10.0.0.{index + 1}"}}
                 for index, (task, _role, node, _head) in enumerate(ROLES))
    nodes = tuple({"metadata": {"name": node, "namespace": CLUSTER,
                                "labels": {"kubernetes.io/hostname": node, "rlark.io/cluster-id": CLUSTER}},
                   "status": {"phase": "Online"}} for _task, _role, node, _head in ROLES)
    logs = tuple(PodLog(f"{NAME}-{task}-0", tuple(_head_lines() if head else _worker_lines(index)), instance=0,
                        source="data-plane") for index, (task, _role, _node, head) in enumerate(ROLES))
    config_sum = hashlib.sha256(json.dumps(CONFIG, sort_keys=True, separators=(",", ":")).encode()).hexdigest()
    plan = {"version": 1, "job": NAME, "domain": "", "totalNodes": PODS,
            "roles": [{"name": task, "task": task, "role": role, "head": head, "cluster": CLUSTER,
                       "nodes": [{"name": node, "namespace": CLUSTER}], "replicas": 1, "rankStart": index,
                       "image": IMAGE} for index, (task, role, node, head) in enumerate(ROLES)]}
    when = START + timedelta(minutes=5)
    return RunEvidence(
        job_name=NAME, now=now, job=job, tasks=tasks, pods=pods, nodes=nodes, logs=logs,
        containers=tuple(MainContainer(f"{NAME}-{task}-0", 0, "running") for task, *_ in ROLES),
        ray=RayStatus(alive_nodes=PODS),
        launch_record={"runId": RUN_ID, "codeRef": CODE_REF, "configRef": "sha256:" + config_sum,
                       "expectedNumNodes": PODS, "maxWaitSeconds": 600, "outputPath": f"/out/{RUN_ID}",
                       "progressPattern": r"Global Step:\s*(\d+)/(\d+)"},
        plan=plan, submitted_spec=json.loads(json.dumps(job["spec"])), submitted_sha256="5e" * 32,
        submitted_yaml_path=f"/state/submitted/{NAME}.yaml",
        outputs=OutputProbe(f"/out/{RUN_ID}", (
            OutputFile(f"/out/{RUN_ID}/ppo/checkpoints/global_step_1/actor/full_weights.pt", 2048, when, "c0" * 32),
            OutputFile(f"/out/{RUN_ID}/metrics.log", 512, when, "d1" * 32))))


def run(workdir: Path, quick: bool) -> dict[str, float]:
    data = evidence()
    evaluate(data)
    wall, cpu = [], []
    for _ in range(5 if quick else 15):
        started, started_cpu = time.perf_counter(), time.thread_time()
        evaluate(data)
        wall.append((time.perf_counter() - started) * 1000)
        cpu.append((time.thread_time() - started_cpu) * 1000)
    return {"check_eval_ms": round(statistics.median(wall), 2), "check_eval_cpu_ms": round(statistics.median(cpu), 2)}
