"""Gateway routes with the platform's semantics: job logs, SSH user keys, storage classes, clusters, CRD routes.
Pod CRs, Tasks and logs are seeded through the store and the log storage, as the agent writes them.
"""

from __future__ import annotations

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ed25519

from tests.sandbox.helpers import job, raw

NS = "rlark-system"


@pytest.fixture(scope="module")
def sandbox(bare_sandbox):
    return bare_sandbox


def test_clusters_aggregated_from_node_crs(sandbox):
    reply = raw(sandbox, "GET", "/api/v1/clusters")
    assert reply.status == 200
    data = {c["id"]: c for c in reply.json()["data"]}
    assert reply.json()["success"] is True
    assert data["rlark-gpu-a"] == {"id": "rlark-gpu-a", "name": "rlark-gpu-a", "phase": "Online", "type": "Cloud",
                                   "nodeCount": 3, "onlineNodeCount": 3, "offlineNodeCount": 0, "gpuCount": 24}
    assert data["rlark-edge-b"]["type"] == "Embodied" and data["rlark-edge-b"]["nodeCount"] == 2
    one = raw(sandbox, "GET", "/api/v1/clusters/rlark-edge-b").json()
    assert one["data"]["gpuCount"] == 1
    assert raw(sandbox, "GET", "/api/v1/clusters/rlark-nowhere").status == 404


def test_storage_classes(sandbox):
    everything = raw(sandbox, "GET", "/api/v1/storage/storageclass").json()
    assert everything["success"] is True and list(everything["data"]) == ["s3-rclone"]
    entry = everything["data"]["s3-rclone"]
    assert entry["clusters"] == ["rlark-gpu-a"] and entry["bucket"] == "rlark-demo-ckpt"
    assert entry["pathStyle"] is True
    edge = raw(sandbox, "GET", "/api/v1/storage/storageclass?clusters=rlark-edge-b").json()
    assert edge["data"] == {}


def _public_key(comment: str) -> str:
    key = ed25519.Ed25519PrivateKey.generate().public_key()
    return key.public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH).decode() + \
        f" {comment}"


def test_ssh_user_keys(sandbox):
    first, second = _public_key("alice@laptop"), _public_key("alice@desk")
    created = raw(sandbox, "POST", "/api/v1/ssh-user-keys", {"user": "alice", "public_key": first})
    assert created.status == 201 and created.json()["index"] == 0
    assert raw(sandbox, "POST", "/api/v1/ssh-user-keys", {"user": "alice", "public_key": second}).status == 201
    assert raw(sandbox, "POST", "/api/v1/ssh-user-keys", {"user": "bob", "public_key": _public_key("b")}).status == 201
    duplicate = raw(sandbox, "POST", "/api/v1/ssh-user-keys", {"user": "alice", "public_key": first})
    assert duplicate.status == 409
    invalid = raw(sandbox, "POST", "/api/v1/ssh-user-keys", {"user": "alice", "public_key": "ssh-ed25519 AAAAnope"})
    assert invalid.status == 400
    listed = raw(sandbox, "GET", "/api/v1/ssh-user-keys?user=alice").json()
    assert [(k["index"], k["public_key"]) for k in listed] == [(0, first), (1, second)]
    assert all(k["user"] == "alice" and k["added_at"].endswith("Z") for k in listed)
    assert {k["user"] for k in raw(sandbox, "GET", "/api/v1/ssh-user-keys").json()} == {"alice", "bob"}
    assert raw(sandbox, "DELETE", "/api/v1/ssh-user-keys/0?user=alice").status == 200
    assert [k["public_key"] for k in raw(sandbox, "GET", "/api/v1/ssh-user-keys?user=alice").json()] == [second]
    assert raw(sandbox, "DELETE", "/api/v1/ssh-user-keys/5?user=alice").status == 404


def _pod_cr(sandbox, name: str, task: str, local: str, phase: str, node: str = "gpu-a1") -> None:
    pod = sandbox.store.create("pods", {"metadata": {
        "name": name, "namespace": "rlark-gpu-a",
        "labels": {"rlark.io/task-name": task, "rlark.io/local-pod-name": local,
                   "rlark.io/local-pod-namespace": NS}},
        "spec": {"taskNamespace": "rlark-gpu-a", "taskName": task, "podNamespace": NS, "podName": local}})
    sandbox.store.update("pods", {**pod, "status": {"phase": phase, "node": node}}, subresource="status")


def test_job_logs(sandbox):
    for task in ("gwlog-actor", "gwlog-rollout"):
        sandbox.store.create("tasks", {"metadata": {"name": task, "namespace": "rlark-gpu-a",
                                                    "labels": {"rlinf.io/job": "gwlog"}},
                                       "spec": {"role": "Actor"}})
    sandbox.store.create("tasks", {"metadata": {"name": "gwlog-lost", "namespace": "default",
                                                "labels": {"rlinf.io/job": "gwlog"}}, "spec": {"role": "Env"}})
    _pod_cr(sandbox, "uid-gwlog-1", "gwlog-actor", "gwlog-actor-0", "Running")
    _pod_cr(sandbox, "uid-gwlog-2", "gwlog-rollout", "gwlog-rollout-0", "Pending", node="")
    sandbox.logs.start_instance("rlark-gpu-a", NS, "gwlog-actor-0", "main")
    sandbox.logs.append("rlark-gpu-a", NS, "gwlog-actor-0", "main", "\n".join(f"line {i}" for i in range(1005)))
    pods = raw(sandbox, "GET", "/api/v1/rlinf.io/v1alpha1/jobs/gwlog/logs").json()["pods"]
    by_task = {p["taskName"]: p for p in pods}
    assert set(by_task) == {"gwlog-actor", "gwlog-rollout"}
    actor = by_task["gwlog-actor"]
    assert (actor["podName"], actor["phase"], actor["node"]) == ("gwlog-actor-0", "Running", "gpu-a1")
    lines = actor["logs"].splitlines()
    assert len(lines) == 1000 and lines[0] == "line 5" and lines[-1] == "line 1004"
    assert by_task["gwlog-rollout"]["logs"] == "pod is Pending, no logs available"
    assert raw(sandbox, "GET", "/api/v1/rlinf.io/v1alpha1/jobs/nothing/logs").json() == {"pods": None}


def test_crd_routes(sandbox):
    created = raw(sandbox, "POST", "/api/v1/rlinf.io/v1alpha1/jobs", job("gw-crd"))
    assert created.status == 201
    patched = raw(sandbox, "PATCH", "/api/v1/rlinf.io/v1alpha1/jobs/gw-crd", {"spec": {"stopped": False}},
                  headers={"Content-Type": "application/json"})
    assert patched.status == 200 and patched.json()["spec"]["stopped"] is False
    names = [j["metadata"]["name"] for j in raw(sandbox, "GET", "/api/v1/rlinf.io/v1alpha1/jobs").json()["items"]]
    assert "gw-crd" in names
    sandbox.store.create("tasks", {"metadata": {"name": "gw-crd-main", "namespace": "rlark-gpu-a"},
                                   "spec": {"role": "Actor", "tensorBoardDir": "/tb"}})
    task = raw(sandbox, "GET", "/api/v1/rlinf.io/v1alpha1/tasks/gw-crd-main?namespace=rlark-gpu-a").json()
    assert task["status"]["tensorBoardProxy"] == "/api/v1/rlinf.io/v1alpha1/tasks/gw-crd-main/tensorboard/"
    assert raw(sandbox, "DELETE", "/api/v1/rlinf.io/v1alpha1/pods/x?namespace=rlark-gpu-a").status == 405
    assert raw(sandbox, "DELETE", "/api/v1/rlinf.io/v1alpha1/jobs/gw-crd").status == 200
    assert raw(sandbox, "GET", "/api/v1/rlinf.io/v1alpha1/jobs/gw-crd").status == 404


def test_pod_events(sandbox):
    _pod_cr(sandbox, "uid-gwev-1", "gwev-actor", "gwev-actor-0", "Pending", node="")
    for index, (kind, reason) in enumerate((("Warning", "FailedScheduling"), ("Normal", "Pulling"),
                                            ("Normal", "Scheduled"))):
        sandbox.store.create("events", {
            "metadata": {"name": f"gwev-actor-0.{index}", "namespace": NS}, "type": kind, "reason": reason,
            "message": f"{reason} message", "count": 2, "lastTimestamp": f"2026-01-01T00:00:0{index}Z",
            "source": {"component": "default-scheduler"},
            "involvedObject": {"kind": "Pod", "name": "gwev-actor-0", "namespace": NS}}, plane="rlark-gpu-a")
    events = raw(sandbox, "GET", "/api/v1/rlinf.io/v1alpha1/pods/uid-gwev-1/events").json()["events"]
    assert [(e["type"], e["reason"]) for e in events] == [("Normal", "Pulling"), ("Warning", "FailedScheduling")]
    assert events[1] == {"type": "Warning", "reason": "FailedScheduling", "message": "FailedScheduling message",
                         "lastTime": "2026-01-01T00:00:00Z", "count": 2, "source": "default-scheduler",
                         "objectKind": "Pod", "objectName": "gwev-actor-0"}
    assert raw(sandbox, "GET", "/api/v1/rlinf.io/v1alpha1/pods/nope/events").status == 404
