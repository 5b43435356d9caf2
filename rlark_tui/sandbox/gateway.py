"""The RLark gateway routes the sandbox serves under `/api/v1/` (rlark-platform.md §5), with the platform's
answer shapes: job logs, SSH user keys, storage classes, clusters. (CRD routes are mapped in server.py.)

- `GET /api/v1/rlinf.io/v1alpha1/jobs/<job>/logs` -> `{"pods": [{taskName, podName, phase, node, logs}]}`
  (`{"pods": null}` when the job has no Pod CRs): Tasks labelled `rlinf.io/job=<job>` in `rlark-*` namespaces,
  their Pod CRs by `rlark.io/task-name`; Running/Succeeded/Failed pods get the last 1000 lines of container
  `main` (current instance, no timestamps), others `pod is <phase>, no logs available`.
- `GET /api/v1/ssh-user-keys[?user=u]` -> `[{index, user, public_key, added_at}]`; `POST {user, public_key,
  notes?}` -> 201 + the entry (400 invalid key, 409 duplicate); `DELETE /api/v1/ssh-user-keys/<index>?user=u`.
  Backing store: Secret `default/rlark-ssh-keys` on the control plane (data: user -> newline-separated keys).
- `GET /api/v1/storage/storageclass[?clusters=rlark-a,rlark-b]` -> `{success, data: {<name>: {name,
  clusters[], description, bucket, provider, endpoint, region, pathStyle, accessKeyId}}}` from the data planes'
  StorageClasses with provisioner `rclone.csi.veloxpack.io` (default/local-path/hostpath hidden).
- `GET /api/v1/rlinf.io/v1alpha1/pods/<pod CR>/events` -> `{"events": [NodeEvent]}`: the data-plane Events of
  that pod, Warning plus Normal Pulling/Pulled, newest first.
- `ANY /api/v1/rlinf.io/v1alpha1/tasks/<task>/tensorboard/*path`: the Task's TensorBoard (sandbox/tensorboard.py).
- `GET /api/v1/system-config` -> `{sshJumpHost, sshJumpPort}` (strings, "" when unset); `PUT` the same shape:
  Secret `default/rlark-system-config` on the control plane (systemconfig_handler.go).
- `GET /api/v1/rlinf.io/v1alpha1/pods/<pod CR>/terminal` (WebSocket, `?container=main&command=/bin/sh`): the
  console's terminal on that Pod CR's data-plane pod (server.py, podexec.py).
- `GET /api/v1/clusters[/<id>]` -> `{success, data}`: per `rlark.io/cluster-id` of the Node CRs
  `{id, name, phase Online|Degraded|Offline, type Cloud|Embodied|Hybrid, nodeCount, onlineNodeCount,
  offlineNodeCount, gpuCount}`.
"""

from __future__ import annotations

import base64
import binascii
import json
import re

from aiohttp import web

from rlark_tui.sandbox import tensorboard
from rlark_tui.sandbox.logs import LogsNotFound, LogStore
from rlark_tui.sandbox.resources import DATA_NAMESPACE, ROOT
from rlark_tui.sandbox.routes import RouteLog
from rlark_tui.sandbox.store import Store, now_iso

KEYS_SECRET = ("default", "rlark-ssh-keys")
SYSTEM_CONFIG_SECRET = ("default", "rlark-system-config")
SYSTEM_CONFIG_KEYS = ("sshJumpHost", "sshJumpPort")
ADDED_AT = "rlark.io/ssh-keys-added-at"
RCLONE = "rclone.csi.veloxpack.io"
HIDDEN_CLASSES = {"default", "local-path", "hostpath"}
_KEY = re.compile(r"^(ssh-ed25519|ssh-rsa|ssh-dss|ecdsa-sha2-nistp256|ecdsa-sha2-nistp384|ecdsa-sha2-nistp521|"
                  r"sk-ssh-ed25519@openssh\.com|sk-ecdsa-sha2-nistp256@openssh\.com) ([A-Za-z0-9+/]+=*)( .*)?$")


def resource_of(path: str) -> str:
    """The name fault switches use for a gateway path."""
    parts = [p for p in path.split("/") if p][2:]
    if parts[:2] == ["rlinf.io", "v1alpha1"]:
        rest = parts[2:]
        return f"{rest[0]}/{rest[2]}" if len(rest) > 2 else (rest[0] if rest else "")
    return parts[0] if parts else ""


def crd_route(path: str) -> tuple[str, str | None] | None:
    """(plural, name) for a gateway CRD route; None for every other gateway path (job logs, pod events)."""
    parts = [p for p in path.split("/") if p][2:]
    if parts[:2] != ["rlinf.io", "v1alpha1"] or len(parts) not in (3, 4):
        return None
    return parts[2], (parts[3] if len(parts) == 4 else None)


def terminal_route(path: str) -> str | None:
    """The Pod CR name of a console terminal path (`/api/v1/rlinf.io/v1alpha1/pods/<pod CR>/terminal`), else None."""
    parts = [p for p in path.split("/") if p][2:]
    if len(parts) == 5 and parts[:3] == ["rlinf.io", "v1alpha1", "pods"] and parts[4] == "terminal":
        return parts[3]
    return None


def _reply(data, status: int = 200) -> web.Response:
    return web.Response(body=json.dumps(data).encode(), status=status,
                        headers={"Content-Type": "application/json"})


def _error(status: int, message: str) -> web.Response:
    return _reply({"success": False, "error": message}, status)


def valid_public_key(text: str) -> bool:
    match = _KEY.match(text.strip())
    if not match:
        return False
    try:
        blob = base64.b64decode(match.group(2), validate=True)
    except (binascii.Error, ValueError):
        return False
    if len(blob) < 4:
        return False
    length = int.from_bytes(blob[:4], "big")
    return blob[4:4 + length].decode("ascii", "replace") == match.group(1)


class Gateway:
    def __init__(self, store: Store, logs: LogStore, routes: RouteLog,
                 tensorboards: tensorboard.TensorBoards | None = None):
        self.store, self.logs, self.routes = store, logs, routes
        self.tensorboards = tensorboards if tensorboards is not None else tensorboard.TensorBoards()

    async def handle(self, request: web.Request, path: str) -> web.StreamResponse:
        parts = [p for p in path.split("/") if p][2:]
        method = request.method
        if parts[:1] == ["clusters"] and method == "GET" and len(parts) <= 2:
            return self.clusters(parts[1] if len(parts) == 2 else None)
        if parts == ["storage", "storageclass"] and method == "GET":
            return self.storage_classes(request.query.get("clusters"))
        if parts == ["system-config"] and method in ("GET", "PUT"):
            return self.system_config() if method == "GET" else await self.set_system_config(request)
        if parts[:1] == ["ssh-user-keys"]:
            if len(parts) == 1 and method == "GET":
                return self.list_keys(request.query.get("user"))
            if len(parts) == 1 and method == "POST":
                return await self.add_key(request)
            if len(parts) == 2 and method == "DELETE":
                return self.delete_key(parts[1], request.query.get("user"))
        if (len(parts) == 5 and parts[:3] == ["rlinf.io", "v1alpha1", "jobs"] and parts[4] == "logs"
                and method == "GET"):
            return self.job_logs(parts[3])
        if len(parts) >= 5 and parts[:3] == ["rlinf.io", "v1alpha1", "tasks"] and parts[4] == "tensorboard":
            rest = path.split("/tensorboard", 1)[1]
            return await tensorboard.proxy(request, self.store, self.tensorboards, parts[3], rest)
        if (len(parts) == 5 and parts[:3] == ["rlinf.io", "v1alpha1", "pods"] and parts[4] == "events"
                and method == "GET"):
            return self.pod_events(parts[3])
        self.routes.record(request)
        return _error(404, f"no route for {method} {path}")

    # ----- clusters -----
    def clusters(self, wanted: str | None) -> web.Response:
        nodes, _ = self.store.list("nodes")
        groups: dict[str, list[dict]] = {}
        for node in nodes:
            meta = node.get("metadata", {})
            cid = (meta.get("labels") or {}).get("rlark.io/cluster-id") or meta.get("namespace", "")
            groups.setdefault(cid, []).append(node)
        data = []
        for cid, members in sorted(groups.items()):
            online = sum(1 for n in members if (n.get("status") or {}).get("phase") == "Online")
            categories = {((n.get("metadata") or {}).get("labels") or {}).get("rlark.io/node-category", "cloud")
                          for n in members}
            kind = "Cloud" if categories == {"cloud"} else "Embodied" if "cloud" not in categories else "Hybrid"
            phase = "Online" if online == len(members) else "Offline" if online == 0 else "Degraded"
            gpus = 0
            for n in members:
                try:
                    gpus += int(((n.get("status") or {}).get("capacity") or {}).get("nvidia.com/gpu", 0))
                except (TypeError, ValueError):
                    pass
            data.append({"id": cid, "name": cid, "phase": phase, "type": kind, "nodeCount": len(members),
                         "onlineNodeCount": online, "offlineNodeCount": len(members) - online, "gpuCount": gpus})
        if wanted is not None:
            found = [c for c in data if c["id"] == wanted]
            if not found:
                return _error(404, f"cluster {wanted} not found")
            return _reply({"success": True, "data": found[0]})
        return _reply({"success": True, "data": data})

    # ----- storage classes -----
    def storage_classes(self, clusters: str | None) -> web.Response:
        wanted = [c for c in (clusters or "").split(",") if c.startswith("rlark-")] if clusters else \
            self.store.clusters()
        data: dict[str, dict] = {}
        for cluster in wanted:
            items, _ = self.store.list("storageclasses", plane=cluster)
            for sc in items:
                name = sc["metadata"]["name"]
                if sc.get("provisioner") != RCLONE or name in HIDDEN_CLASSES:
                    continue
                params = sc.get("parameters") or {}
                entry = data.setdefault(name, {
                    "name": name, "clusters": [],
                    "description": (sc["metadata"].get("annotations") or {}).get("description", ""),
                    "bucket": params.get("remotePath", ""), "provider": params.get("s3-provider", ""),
                    "endpoint": params.get("s3-endpoint", ""), "region": params.get("s3-region", ""),
                    "pathStyle": params.get("s3-force-path-style", "") == "true",
                    "accessKeyId": params.get("s3-access-key-id", ""),
                })
                entry["clusters"].append(cluster)
        return _reply({"success": True, "data": data})

    # ----- system config -----
    def system_config(self) -> web.Response:
        secret = self.store.get("secrets", SYSTEM_CONFIG_SECRET[1], SYSTEM_CONFIG_SECRET[0], ROOT) or {}
        data = secret.get("data") or {}
        return _reply({key: base64.b64decode(data.get(key, "")).decode("utf-8", "replace")
                       for key in SYSTEM_CONFIG_KEYS})

    async def set_system_config(self, request: web.Request) -> web.Response:
        try:
            body = await request.json()
        except ValueError:
            body = None
        if not isinstance(body, dict):
            return _reply({"error": "invalid request body"}, 400)
        values = {key: str(body.get(key) or "") for key in SYSTEM_CONFIG_KEYS}
        secret = {"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
                  "metadata": {"name": SYSTEM_CONFIG_SECRET[1], "namespace": SYSTEM_CONFIG_SECRET[0]},
                  "data": {key: base64.b64encode(value.encode()).decode() for key, value in values.items()}}
        self._put_secret(secret)
        return _reply(values)

    def _put_secret(self, secret: dict) -> None:
        """Create or replace a control-plane Secret."""
        meta = secret["metadata"]
        if self.store.get("secrets", meta["name"], meta["namespace"], ROOT) is None:
            self.store.create("secrets", secret, ROOT)
        else:
            self.store.update("secrets", secret, ROOT, keep_status=False)

    # ----- ssh keys -----
    def _keys(self) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
        secret = self.store.get("secrets", KEYS_SECRET[1], KEYS_SECRET[0], ROOT) or {}
        keys = {user: [k for k in base64.b64decode(value).decode().splitlines() if k.strip()]
                for user, value in (secret.get("data") or {}).items()}
        added = json.loads(((secret.get("metadata") or {}).get("annotations") or {}).get(ADDED_AT, "{}"))
        return keys, added

    def _save_keys(self, keys: dict[str, list[str]], added: dict[str, list[str]]) -> None:
        secret = {"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
                  "metadata": {"name": KEYS_SECRET[1], "namespace": KEYS_SECRET[0],
                               "annotations": {ADDED_AT: json.dumps(added)}},
                  "data": {user: base64.b64encode("\n".join(values).encode()).decode()
                           for user, values in keys.items() if values}}
        self._put_secret(secret)

    def list_keys(self, user: str | None) -> web.Response:
        keys, added = self._keys()
        out = []
        for name in sorted(keys):
            if user and name != user:
                continue
            stamps = added.get(name, [])
            for index, key in enumerate(keys[name]):
                out.append({"index": index, "user": name, "public_key": key,
                            "added_at": stamps[index] if index < len(stamps) else ""})
        return _reply(out)

    async def add_key(self, request: web.Request) -> web.Response:
        try:
            body = await request.json()
        except ValueError:
            return _error(400, "the request body is not valid JSON")
        user = str((body or {}).get("user") or "").strip()
        key = str((body or {}).get("public_key") or "").strip()
        if not user:
            return _error(400, "user is required")
        if not valid_public_key(key):
            return _error(400, "invalid SSH public key: expected one OpenSSH public key line")
        keys, added = self._keys()
        mine = keys.setdefault(user, [])
        if any(k.split()[:2] == key.split()[:2] for k in mine):
            return _error(409, "SSH public key already exists for this user")
        mine.append(key)
        stamp = now_iso()
        added.setdefault(user, []).append(stamp)
        self._save_keys(keys, added)
        return _reply({"index": len(mine) - 1, "user": user, "public_key": key, "added_at": stamp}, 201)

    def delete_key(self, raw_index: str, user: str | None) -> web.Response:
        if not user:
            return _error(400, "user is required")
        keys, added = self._keys()
        if not raw_index.isdigit() or int(raw_index) >= len(keys.get(user, [])):
            return _error(404, f"no SSH key {raw_index} for user {user}")
        index = int(raw_index)
        keys[user].pop(index)
        stamps = added.get(user, [])
        if index < len(stamps):
            stamps.pop(index)
        self._save_keys(keys, added)
        return _reply({"success": True})

    # ----- pod events -----
    def pod_events(self, pod_cr: str) -> web.Response:
        found, _ = self.store.list("pods", fields=f"metadata.name={pod_cr}")
        if not found:
            return _error(404, f"pod {pod_cr} not found")
        pod = found[0]
        cluster, spec = pod["metadata"]["namespace"], pod.get("spec") or {}
        namespace = spec.get("podNamespace") or DATA_NAMESPACE
        events, _ = self.store.list("events", namespace, plane=cluster,
                                    fields=f"involvedObject.name={spec.get('podName', '')}")
        out = []
        for event in events:
            kind, reason = event.get("type", ""), event.get("reason", "")
            if kind != "Warning" and reason not in ("Pulling", "Pulled"):
                continue
            involved = event.get("involvedObject") or {}
            out.append({"type": kind, "reason": reason, "message": event.get("message", ""),
                        "lastTime": event.get("lastTimestamp") or event["metadata"].get("creationTimestamp", ""),
                        "count": int(event.get("count") or 1),
                        "source": (event.get("source") or {}).get("component", ""),
                        "objectKind": involved.get("kind", ""), "objectName": involved.get("name", "")})
        out.sort(key=lambda e: e["lastTime"], reverse=True)
        return _reply({"events": out})

    # ----- job logs -----
    def job_logs(self, job: str) -> web.Response:
        tasks, _ = self.store.list("tasks", labels=f"rlinf.io/job={job}")
        pods_out = []
        for task in tasks:
            task_ns = task["metadata"].get("namespace", "")
            if not task_ns.startswith("rlark-"):
                continue
            task_name = task["metadata"]["name"]
            pods, _ = self.store.list("pods", labels=f"rlark.io/task-name={task_name}")
            for pod in pods:
                spec, status = pod.get("spec") or {}, pod.get("status") or {}
                phase = status.get("phase") or "Pending"
                local_name = spec.get("podName") or (pod["metadata"].get("labels") or {}).get(
                    "rlark.io/local-pod-name", "")
                entry = {"taskName": task_name, "podName": local_name, "phase": phase,
                         "node": status.get("node", "")}
                if phase in ("Running", "Succeeded", "Failed"):
                    try:
                        lines = self.logs.read(pod["metadata"]["namespace"], spec.get("podNamespace") or
                                               DATA_NAMESPACE, local_name, "main", tail=1000)
                        entry["logs"] = "\n".join(lines) + ("\n" if lines else "")
                    except LogsNotFound as exc:
                        entry["logs"] = f"error fetching logs: {exc}"
                else:
                    entry["logs"] = f"pod is {phase}, no logs available"
                pods_out.append(entry)
        return _reply({"pods": pods_out or None})
