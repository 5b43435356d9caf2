"""Seeds for an empty sandbox store: `demo` (two clusters, five Nodes, Domain demo-net, Job demo-ppo),
`scale:<jobs>:<pods>[:<age seconds>]` (many objects, for benchmarks; created that long ago) and `none`.

The demo Job is rendered from a JobDraft by `rlark_tui.model.render_job`, exactly as `rlark` would submit it
(launch record and deployment plan annotations included).
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

from rlark_sandbox import gateway_console
from rlark_sandbox.resources import DATA_NAMESPACE, ROOT
from rlark_sandbox.store import Store, now_iso
from rlark_tui.errors import UsageError
from rlark_tui.model import keys

DEMO_IMAGE = ("registry.rlark.local/rlinf/rlinf-sandbox@sha256:"
              "4d7f0b3c9a1e2f5d6c8b7a9e0f1d2c3b4a5f6e7d8c9b0a1f2e3d4c5b6a7f8e9d")
DEMO_CODE_REF = "9c4e1f7a2b8d3e6f0a5c1b9d7e2f4a8c6b3d0e1f"
DEMO_RUN_ID = "demo-ppo-001"
DEMO_STEPS = 40


def parse(seed: str) -> tuple[str, int, int, int]:
    """("demo"|"none"|"scale", jobs, pods, age seconds); UsageError for anything else."""
    if seed in ("demo", "none"):
        return seed, 0, 0, 0
    parts = seed.split(":")
    if len(parts) in (3, 4) and parts[0] == "scale" and all(
            p.isascii() and p.isdigit() and len(p) <= 7 for p in parts[1:]):
        return "scale", int(parts[1]), int(parts[2]), int(parts[3]) if len(parts) == 4 else 0
    shown = seed if len(seed) <= 40 else seed[:40] + "…"
    raise UsageError(f"unknown seed {shown!r}: use demo, none or scale:<jobs>:<pods>[:<age seconds>]")


def _node(name: str, cluster: str, labels: dict, capacity: dict, index: int) -> dict:
    return {
        "apiVersion": "rlinf.io/v1alpha1", "kind": "Node",
        "metadata": {
            "name": name, "namespace": cluster,
            "labels": {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
                       keys.CLUSTER_ID_LABEL: cluster, "rlark.io/agent-type": "Kubernetes", **labels},
        },
        "spec": {"agentType": "Kubernetes"},
        "status": {
            "phase": "Online", "diskPressure": False, "capacity": dict(capacity), "allocatable": dict(capacity),
            "used": {},
            "addresses": [{"type": "InternalIP", "address": f"10.20.0.{10 + index}"},
                          {"type": "Hostname", "address": name}],
            "nodeInfo": {"agentVersion": "sandbox", "architecture": "amd64", "kernelVersion": "6.8.0",
                         "operatingSystem": "linux"},
        },
    }


def demo_nodes() -> list[dict]:
    gpu = {"cpu": "64", "memory": "512Gi", "pods": "110", "nvidia.com/gpu": "8"}
    cloud = {"gpu-model": "h100", "rlark.io/node-category": "cloud", "rlark.io/model": "H100",
             "rlark.io/region": "sandbox"}
    nodes = [_node(f"gpu-a{i}", "rlark-gpu-a", cloud, gpu, i) for i in (1, 2, 3)]
    for node in nodes:
        node["metadata"]["annotations"] = {keys.GPU_MODEL_ANNOTATION: "NVIDIA H100 80GB HBM3"}
    nodes.append(_node("edge-b1", "rlark-edge-b", {"robot": "franka", "rlark.io/node-category": "robot",
                                                   "rlark.io/model": "franka"},
                       {"cpu": "16", "memory": "64Gi", "pods": "110", "nvidia.com/gpu": "1",
                        "rlinf.io/franka": "1"}, 4))
    nodes.append(_node("edge-b2", "rlark-edge-b", {"rlark.io/node-category": "edge"},
                       {"cpu": "8", "memory": "32Gi", "pods": "110"}, 5))
    return nodes


def demo_draft(output_dir: str) -> dict:
    """The JobDraft mapping of demo-ppo (a user could write the same YAML by hand)."""
    def role(name: str, platform_role: str, cluster: str, host: str) -> dict:
        return {"name": name, "role": platform_role, "cluster": cluster,
                "selector": {"kubernetes.io/hostname": host}, "gpu": 1, "image": DEMO_IMAGE}
    return {
        "name": "demo-ppo",
        "displayName": "Demo PPO (sandbox)",
        "type": "rl",
        "header": "actor",
        "roles": [role("actor", "Actor", "rlark-gpu-a", "gpu-a1"),
                  role("rollout", "Rollout", "rlark-gpu-a", "gpu-a2"),
                  role("env", "Env", "rlark-edge-b", "edge-b1")],
        "domain": "demo-net",
        "tensorboardDir": f"{output_dir}/tensorboard",
        "runScript": (f"python -m rlark_sandbox.demo_workload --run-id {DEMO_RUN_ID} "
                      f"--code-ref {DEMO_CODE_REF} --output {output_dir} --steps {DEMO_STEPS}"),
        "record": {"runId": DEMO_RUN_ID, "codeRef": DEMO_CODE_REF, "configRef": "examples/sandbox/ppo_demo.yaml",
                   "expectedNumNodes": 3, "progressPattern": r"Global Step:\s*(\d+)/(\d+)",
                   "maxWaitSeconds": 600, "outputPath": output_dir},
    }


def demo_job(output_dir: str, nodes: list[dict]) -> dict:
    """demo-ppo as `rlark submit` would send it: rendered, with its submitted-spec record."""
    from rlark_tui.jobspec.draft import load_draft
    from rlark_tui.jobspec.render import render_job
    from rlark_tui.model.submission import with_submission_record
    draft, _findings = load_draft(demo_draft(output_dir))
    return with_submission_record(render_job(draft, nodes))


def _storage_class(name: str, provisioner: str) -> dict:
    return {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": name},
            "provisioner": provisioner, "reclaimPolicy": "Delete", "volumeBindingMode": "Immediate"}


def _base(store: Store) -> list[dict]:
    nodes = demo_nodes()
    for node in nodes:
        store.create("nodes", node)
    store.create("domains", {"apiVersion": "rlinf.io/v1alpha1", "kind": "Domain",
                             "metadata": {"name": "demo-net"}, "spec": {"cidr": "10.88.0.0/16"}})
    gateway_console.create_storage_class(store, {
        "name": "s3-rclone", "description": "Sandbox object storage for checkpoints", "clusters": ["rlark-gpu-a"],
        "provider": "Minio", "endpoint": "http://127.0.0.1:9000", "access_key_id": "sandbox",
        "access_key_secret": "sandbox-secret", "bucket": "rlark-demo-ckpt", "region": "us-east-1",
        "path_style": True})
    for cluster in ("rlark-gpu-a", "rlark-edge-b"):
        store.create("storageclasses", _storage_class("local-path", "rancher.io/local-path"), plane=cluster)
    return nodes


def apply(store: Store, seed: str, output_dir: str = "/tmp/rlark-sandbox-outputs") -> None:
    """Fill an empty store with `seed`."""
    kind, jobs, pods, age = parse(seed)
    if kind == "none":
        return
    nodes = _base(store)
    if kind == "demo":
        store.create("jobs", demo_job(f"{output_dir}/{DEMO_RUN_ID}", nodes))
        return
    _scale(store, jobs, pods, age)


def _scale(store: Store, jobs: int, pods: int, age: int = 0) -> None:
    """`jobs` Jobs of one Docker-agent task each (the Kubernetes agent leaves them alone) and `pods` Pod CRs
    spread over them round-robin (Job i gets Pods i, i+jobs, ...), all Running. Each object is created with its
    status in place and handed to the store without copies (`create_many`)."""
    started = (datetime.now(UTC) - timedelta(seconds=age)).strftime("%Y-%m-%dT%H:%M:%SZ") if age else now_iso()
    names = [f"scale-{index:05d}" for index in range(jobs)]

    def task_spec(index: int) -> dict:
        return {"role": "Actor", "agentType": "Docker",
                "nodeSelector": {"kubernetes.io/hostname": f"gpu-a{1 + index % 3}"},
                "kubernetes": {"workload": {"kind": "StatefulSet", "replicas": 1, "template": {
                    "spec": {"containers": [{"name": "main", "image": DEMO_IMAGE}]}}}}}

    created = store.create_many("jobs", ({
        "metadata": {"name": name}, "spec": {"tasks": [{"name": "worker", "head": True, **task_spec(index)}]},
        "status": {"phase": "Running", "startTime": started,
                   "tasks": [{"name": "worker", "phase": "Running"}]}} for index, name in enumerate(names)),
        created=started)
    store.create_many("tasks", ({
        "metadata": {"name": f"{name}-worker", "namespace": "rlark-gpu-a", "labels": {keys.JOB_LABEL: name},
                     "ownerReferences": [{"apiVersion": "rlinf.io/v1alpha1", "kind": "Job", "name": name,
                                          "uid": job["metadata"]["uid"], "controller": True}]},
        "spec": task_spec(index), "status": {"phase": "Running"}}
        for index, (name, job) in enumerate(zip(names, created))))
    tasks = [f"{name}-worker" for name in names]
    store.create_many("pods", ({
        "metadata": {"name": str(uuid.uuid4()), "namespace": "rlark-gpu-a",
                     "labels": {keys.TASK_NAME_LABEL: tasks[index % len(tasks)],
                                "rlark.io/local-pod-name": f"{tasks[index % len(tasks)]}-{index // len(tasks)}",
                                "rlark.io/local-pod-namespace": DATA_NAMESPACE}},
        "spec": {"taskNamespace": "rlark-gpu-a", "taskName": tasks[index % len(tasks)],
                 "podNamespace": DATA_NAMESPACE, "podName": f"{tasks[index % len(tasks)]}-{index // len(tasks)}"},
        "status": {"phase": "Running", "node": f"gpu-a{1 + index % 3}", "ip": f"10.20.0.{11 + index % 3}"}}
        for index in range(pods if tasks else 0)), ROOT)
