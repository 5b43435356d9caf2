"""Gateway routes with the platform's semantics: job logs, SSH user keys, storage classes, clusters, CRD routes.
Pod CRs, Tasks and logs are seeded through the store and the log storage, as the agent writes them.
"""

from __future__ import annotations

import base64
import json

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
    assert reply.status == 200 and reply.json()["success"] is True
    data = reply.json()["data"]
    assert [c["id"] for c in data] == ["rlark-edge-b", "rlark-gpu-a"]
    assert data[1] == {"id": "rlark-gpu-a", "name": "rlark-gpu-a", "type": "Cloud", "region": "sandbox",
                       "location": "", "phase": "Online", "totalNodes": 3, "onlineNodes": 3, "offlineNodes": 0,
                       "cloudNodes": 3, "embodiedNodes": 0, "robots": 0, "gpuModels": ["H100"], "robotModels": [],
                       "cpuUsage": 0, "gpuUsage": 0, "robotUsage": 0, "runningJobs": 0, "description": ""}
    edge = data[0]
    assert (edge["type"], edge["embodiedNodes"], edge["robots"], edge["robotModels"]) == ("Embodied", 1, 1, ["franka"])
    one = raw(sandbox, "GET", "/api/v1/clusters/rlark-edge-b").json()
    assert one["success"] is True and sorted(n["metadata"]["name"] for n in one["data"]["nodes"]) == \
        ["edge-b1", "edge-b2"]
    assert {k: v for k, v in one["data"].items() if k != "nodes"} == edge
    missing = raw(sandbox, "GET", "/api/v1/clusters/rlark-nowhere")
    assert (missing.status, missing.json()) == (404, {"success": False, "message": "cluster not found"})


@pytest.mark.parametrize("phases, categories, phase, kind", [
    (["Online", "Offline"], ["cloud", "edge"], "Degraded", "Hybrid"),
    (["Offline"], ["robot"], "Offline", "Embodied"),
    (["Online"], [None], "Online", "Hybrid"),
])
def test_cluster_phase_and_type(phases, categories, phase, kind):
    from rlark_sandbox.gateway_console import cluster_info
    nodes = [{"metadata": {"labels": {"rlark.io/node-category": c} if c else {}}, "status": {"phase": p}}
             for p, c in zip(phases, categories)]
    info = cluster_info("rlark-x", nodes)
    assert (info["phase"], info["type"], info["totalNodes"]) == (phase, kind, len(nodes))


def test_storage_classes(sandbox):
    everything = raw(sandbox, "GET", "/api/v1/storage/storageclass").json()
    assert everything["success"] is True and list(everything["data"]) == ["s3-rclone"]
    assert everything["data"]["s3-rclone"] == {
        "name": "s3-rclone", "clusters": ["gpu-a"], "description": "Sandbox object storage for checkpoints",
        "bucket": "rlark-demo-ckpt", "provider": "Minio", "endpoint": "http://127.0.0.1:9000",
        "region": "us-east-1", "pathStyle": True, "accessKeyId": "sandbox"}
    assert raw(sandbox, "GET", "/api/v1/storage/storageclass?clusters=rlark-edge-b").json()["data"] == {}
    assert raw(sandbox, "GET", "/api/v1/storage/storageclass?clusters=gpu-a").json()["data"] == {}
    picked = raw(sandbox, "GET", "/api/v1/storage/storageclass?clusters=rlark-edge-b,rlark-gpu-a").json()
    assert picked["data"]["s3-rclone"]["clusters"] == ["gpu-a"]
    providers = raw(sandbox, "GET", "/api/v1/storage/storageclass/provider").json()
    assert {"name": "MinIO", "value": "Minio"} in providers["data"]


def test_storage_class_create_update_delete(sandbox):
    body = {"name": "team-oss", "description": "team bucket", "clusters": ["rlark-gpu-a", "edge-b"],
            "provider": "Alibaba", "access_key_id": "AKID", "access_key_secret": "s3cr3t", "bucket": "team",
            "region": "cn-beijing", "path_style": False}
    created = raw(sandbox, "POST", "/api/v1/storage/storageclass", body)
    assert (created.status, created.json()) == (200, {"success": True})
    listed = raw(sandbox, "GET", "/api/v1/storage/storageclass").json()["data"]["team-oss"]
    assert listed == {"name": "team-oss", "clusters": ["edge-b", "gpu-a"], "description": "team bucket",
                      "bucket": "team", "provider": "Alibaba", "endpoint": "team.oss-cn-beijing.aliyuncs.com",
                      "region": "cn-beijing", "pathStyle": False, "accessKeyId": "AKID"}
    secret = sandbox.store.get("secrets", "team-oss-secret", "default", "rlark-gpu-a")
    assert "s3cr3t" not in json.dumps(listed) and secret["data"]["remotePath"]
    moved = raw(sandbox, "PUT", "/api/v1/storage/storageclass/team-oss",
                {**body, "clusters": ["gpu-a"], "access_key_secret": "", "provider": "Minio", "endpoint": "http://m"})
    assert moved.json() == {"success": True}
    assert sandbox.store.get("storageclasses", "team-oss", "", "rlark-edge-b") is None
    assert sandbox.store.get("secrets", "team-oss-secret", "default", "rlark-edge-b") is None
    kept = base64.b64decode(sandbox.store.get("secrets", "team-oss-secret", "default", "rlark-gpu-a")["data"][
        "configData"]).decode()
    assert "secret_access_key = s3cr3t" in kept and "endpoint = http://m" in kept
    for bad, error in (({**body, "bucket": ""}, "name and bucket are required"),
                       ({**body, "access_key_secret": ""}, "access_key_secret is required"),
                       ({**body, "clusters": []}, "clusters is required")):
        refused = raw(sandbox, "POST", "/api/v1/storage/storageclass", bad)
        assert (refused.status, refused.json()) == (400, {"error": error})
    renamed = raw(sandbox, "PUT", "/api/v1/storage/storageclass/team-oss", {**body, "name": "other"})
    assert renamed.json() == {"error": "storage class name cannot be changed"}
    assert raw(sandbox, "POST", "/api/v1/storage/storageclass", {**body, "clusters": ["nowhere"]}).status == 500
    assert raw(sandbox, "DELETE", "/api/v1/storage/storageclass/team-oss").json() == {"success": True}
    assert "team-oss" not in raw(sandbox, "GET", "/api/v1/storage/storageclass").json()["data"]
    assert sandbox.store.get("secrets", "team-oss-secret", "default", "rlark-gpu-a") is None


def _public_key(comment: str) -> str:
    key = ed25519.Ed25519PrivateKey.generate().public_key()
    return key.public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH).decode() + \
        f" {comment}"


def test_ssh_user_keys(sandbox):
    first, second = _public_key("alice@laptop"), _public_key("alice@desk")
    created = raw(sandbox, "POST", "/api/v1/ssh-user-keys", {"user": "alice", "public_key": first})
    assert (created.status, created.json()) == (200, {"ok": True, "user": "alice"})
    assert raw(sandbox, "POST", "/api/v1/ssh-user-keys", {"user": "alice", "public_key": second}).status == 200
    assert raw(sandbox, "POST", "/api/v1/ssh-user-keys", {"user": "bob", "public_key": _public_key("b")}).status == 200
    duplicate = raw(sandbox, "POST", "/api/v1/ssh-user-keys", {"user": "alice", "public_key": first.rsplit(" ", 1)[0]})
    assert (duplicate.status, duplicate.json()) == (409, {"error": "public key already exists for this user"})
    invalid = raw(sandbox, "POST", "/api/v1/ssh-user-keys", {"user": "alice", "public_key": "ssh-ed25519 AAAAnope"})
    assert invalid.status == 400 and invalid.json()["error"].startswith("invalid public key")
    assert raw(sandbox, "POST", "/api/v1/ssh-user-keys", {"public_key": first}).json() == {
        "error": "invalid request body"}
    listed = raw(sandbox, "GET", "/api/v1/ssh-user-keys?user=alice").json()
    stored = [" ".join(k.split()[:2]) for k in (first, second)]
    assert [(k["index"], k["public_key"]) for k in listed] == [(0, stored[0]), (1, stored[1])]
    assert all(k["user"] == "alice" and k["added_at"].endswith("Z") for k in listed)
    assert {k["user"] for k in raw(sandbox, "GET", "/api/v1/ssh-user-keys").json()} == {"alice", "bob"}
    deleted = raw(sandbox, "DELETE", "/api/v1/ssh-user-keys/0?user=alice")
    assert (deleted.status, deleted.json()) == (200, {"ok": True})
    assert [k["public_key"] for k in raw(sandbox, "GET", "/api/v1/ssh-user-keys?user=alice").json()] == [stored[1]]
    out_of_range = raw(sandbox, "DELETE", "/api/v1/ssh-user-keys/5?user=alice")
    assert (out_of_range.status, out_of_range.json()) == (400, {"error": "key index out of range"})
    assert raw(sandbox, "DELETE", "/api/v1/ssh-user-keys/0?user=carol").json() == {"error": "no keys found for user"}
    assert raw(sandbox, "DELETE", "/api/v1/ssh-user-keys/0").status == 400
    assert raw(sandbox, "GET", "/api/v1/ssh-user-keys?user=nobody").json() is None


def test_login_against_the_ui_auth_secret(sandbox):
    secret = sandbox.store.get("secrets", "rlark-ui-auth", "default")
    password = {k: base64.b64decode(v).decode() for k, v in secret["data"].items()}
    assert len(password["admin-password"]) >= 16 and password["admin-password"] != password["user-password"]
    for username in ("admin", "user"):
        ok = raw(sandbox, "POST", "/api/v1/auth/login", {"username": username,
                                                        "password": password[f"{username}-password"]})
        assert (ok.status, ok.json()) == (200, {"ok": True, "role": username})
    for body in ({"username": "admin", "password": "wrong"}, {"username": "root", "password": "x"},
                 {"username": "user", "password": password["admin-password"]}):
        refused = raw(sandbox, "POST", "/api/v1/auth/login", body)
        assert (refused.status, refused.json()) == (401, {"error": "invalid credentials"})
    assert raw(sandbox, "POST", "/api/v1/auth/login", {"username": "admin"}).json() == {
        "error": "username and password are required"}
    assert raw(sandbox, "POST", "/api/v1/auth/login", b"not json").json() == {"error": "invalid request body"}


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
    metrics = raw(sandbox, "GET", "/api/v1/rlinf.io/v1alpha1/jobs/gwlog/metrics")
    assert (metrics.status, metrics.json()) == (501, {"message": "not implemented"})


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
    assert raw(sandbox, "DELETE", "/api/v1/rlinf.io/v1alpha1/pods/x?namespace=rlark-gpu-a").body == \
        b"404 page not found"
    assert raw(sandbox, "POST", "/api/v1/rlinf.io/v1alpha1/jobs", job("gw-crd")).status == 500
    deleted = raw(sandbox, "DELETE", "/api/v1/rlinf.io/v1alpha1/jobs/gw-crd")
    assert (deleted.status, deleted.json()) == (200, {"message": "deleted"})
    gone = raw(sandbox, "GET", "/api/v1/rlinf.io/v1alpha1/jobs/gw-crd")
    assert (gone.status, gone.json()) == (404, {"error": 'jobs.rlinf.io "gw-crd" not found'})


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
