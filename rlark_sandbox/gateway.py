"""The RLark gateway routes the sandbox serves under `/api/v1/` (rlark-platform.md §5), with the platform's
answer shapes: job logs, pod events, TensorBoard here; clusters, storage classes, SSH user keys and login in
gateway_console.py; CRD routes in server.py. A path no platform route has gets gin's `404 page not found`.

- `GET /api/v1/rlinf.io/v1alpha1/jobs/<job>/logs` -> `{"pods": [{taskName, podName, phase, node, logs}]}`
  (`{"pods": null}` when the job has no Pod CRs): Tasks labelled `rlinf.io/job=<job>` in `rlark-*` namespaces,
  their Pod CRs by `rlark.io/task-name`; Running/Succeeded/Failed pods get the last 1000 lines of container
  `main` (current instance, no timestamps), others `pod is <phase>, no logs available`.
- `/api/v1/storage/storageclass/<name>/<cluster>/list|upload|object/<key>`: the storage file API over each
  class's local bucket (rlark_sandbox/objectstore.py).
- `GET /api/v1/rlinf.io/v1alpha1/pods/<pod CR>/events` -> `{"events": [NodeEvent]}`: the data-plane Events of
  that pod, Warning plus Normal Pulling/Pulled, newest first.
- `GET /api/v1/rlinf.io/v1alpha1/jobs/<job>/metrics` -> 501 `{"message": "not implemented"}`, as router.go has it.
- `ANY /api/v1/rlinf.io/v1alpha1/tasks/<task>/tensorboard/*path`: the Task's TensorBoard (rlark_sandbox/tensorboard.py).
- `GET /api/v1/system-config` -> `{sshJumpHost, sshJumpPort}` (strings, "" when unset); `PUT` the same shape:
  Secret `default/rlark-system-config` on the control plane (systemconfig_handler.go).
- `GET /api/v1/rlinf.io/v1alpha1/pods/<pod CR>/terminal` (WebSocket, `?container=main&command=/bin/sh`): the
  console's terminal on that Pod CR's data-plane pod (server.py, podexec.py).
"""

from __future__ import annotations

import base64
import json

from aiohttp import web

from rlark_sandbox import gateway_console as console
from rlark_sandbox import jsonbody, objectstore, tensorboard
from rlark_sandbox.logs import LogsNotFound, LogStore
from rlark_sandbox.resources import DATA_NAMESPACE, ROOT
from rlark_sandbox.routes import RouteLog
from rlark_sandbox.store import Store

SYSTEM_CONFIG_SECRET = ("default", "rlark-system-config")
SYSTEM_CONFIG_KEYS = ("sshJumpHost", "sshJumpPort")


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
    return _reply({"error": message}, status)


class Gateway:
    def __init__(self, store: Store, logs: LogStore, routes: RouteLog,
                 tensorboards: tensorboard.TensorBoards | None = None):
        self.store, self.logs, self.routes = store, logs, routes
        self.tensorboards = tensorboards if tensorboards is not None else tensorboard.TensorBoards()
        self.objects: objectstore.ObjectStore | None = None
        """The storage classes' buckets (set by `Sandbox`): the storage file routes, rlark_sandbox/objectstore.py."""

    async def handle(self, request: web.Request, path: str) -> web.StreamResponse:
        parts = [p for p in path.split("/") if p][2:]
        method = request.method
        if parts[:2] == ["storage", "storageclass"] and self.objects is not None:
            answer = await objectstore.handle(request, self.store, self.objects, parts)
            if answer is not None:
                return answer
        if parts == ["system-config"] and method in ("GET", "PUT"):
            return self.system_config() if method == "GET" else await self.set_system_config(request)
        console = await self._console(request, parts, method)
        if console is not None:
            return _reply(console[1], console[0])
        if (len(parts) == 5 and parts[:3] == ["rlinf.io", "v1alpha1", "jobs"] and parts[4] == "logs"
                and method == "GET"):
            return self.job_logs(parts[3])
        if (len(parts) == 5 and parts[:3] == ["rlinf.io", "v1alpha1", "jobs"] and parts[4] == "metrics"
                and method == "GET"):
            return _reply({"message": "not implemented"}, 501)
        if len(parts) >= 5 and parts[:3] == ["rlinf.io", "v1alpha1", "tasks"] and parts[4] == "tensorboard":
            rest = path.split("/tensorboard", 1)[1]
            return await tensorboard.proxy(request, self.store, self.tensorboards, parts[3], rest)
        if (len(parts) == 5 and parts[:3] == ["rlinf.io", "v1alpha1", "pods"] and parts[4] == "events"
                and method == "GET"):
            return self.pod_events(parts[3])
        return self.unknown(request)

    def unknown(self, request: web.Request) -> web.Response:
        """gin's answer to a path no gateway route has (recorded as an unknown route)."""
        self.routes.record(request)
        return web.Response(status=404, text="404 page not found")

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

    async def _console(self, request: web.Request, parts: list[str], method: str) -> console.Answer | None:
        """The operator pages' routes of gateway_console.py; None when none matches."""
        store, query = self.store, request.query
        if parts[:1] == ["clusters"] and method == "GET" and len(parts) <= 2:
            return console.cluster(store, parts[1]) if len(parts) == 2 else console.clusters(store)
        if parts == ["storage", "storageclass"] and method == "GET":
            return console.storage_classes(store, query.get("clusters"))
        if parts == ["storage", "storageclass", "provider"] and method == "GET":
            return console.providers()
        if parts == ["storage", "storageclass"] and method == "POST":
            return console.create_storage_class(store, await _json_body(request))
        if parts[:2] == ["storage", "storageclass"] and len(parts) == 3 and method == "PUT":
            return console.update_storage_class(store, parts[2], await _json_body(request))
        if parts[:2] == ["storage", "storageclass"] and len(parts) == 3 and method == "DELETE":
            return console.delete_storage_class(store, parts[2], query.get("clusters"), query.get("namespace"))
        if parts == ["ssh-user-keys"] and method == "GET":
            return console.list_keys(store, query.get("user"))
        if parts == ["ssh-user-keys"] and method == "POST":
            return console.add_key(store, await _json_body(request))
        if parts[:1] == ["ssh-user-keys"] and len(parts) == 2 and method == "DELETE":
            return console.delete_key(store, parts[1], query.get("user"))
        if parts == ["auth", "login"] and method == "POST":
            return console.login(store, await _json_body(request))
        return None

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


async def _json_body(request: web.Request) -> object:
    """The request's JSON body, or None when it is not JSON (handlers answer 400 "invalid request body")."""
    try:
        return jsonbody.loads(await request.read())
    except ValueError:
        return None
