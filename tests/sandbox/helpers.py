"""Test helpers: raw HTTPS requests to a sandbox (verified against its CA) and kubernetes API objects.
Requests carry the sandbox's bearer token unless a test asks for none or a wrong one.
"""

from __future__ import annotations

import json
import ssl
import urllib.error
import urllib.request
from dataclasses import dataclass

from kubernetes import client

GROUP, VERSION = "rlinf.io", "v1alpha1"


@dataclass
class Reply:
    status: int
    headers: dict
    body: bytes

    def json(self):
        return json.loads(self.body)


def raw(sandbox, method: str, path: str, body=None, headers: dict | None = None, token: str | None = "",
        timeout: float = 10.0) -> Reply:
    """One HTTPS request to the sandbox; token "" = the sandbox's own, None = no Authorization header."""
    ctx = ssl.create_default_context(cafile=str(sandbox.state_dir / "tls" / "ca.crt"))
    data = body if isinstance(body, bytes) or body is None else json.dumps(body).encode()
    request = urllib.request.Request(sandbox.gateway + path, data=data, method=method)
    for key, value in (headers or {}).items():
        request.add_header(key, value)
    if data is not None and "Content-Type" not in (headers or {}):
        request.add_header("Content-Type", "application/json")
    if token is not None:
        request.add_header("Authorization", f"Bearer {token or sandbox.token}")
    try:
        with urllib.request.urlopen(request, context=ctx, timeout=timeout) as resp:
            return Reply(resp.status, dict(resp.headers), resp.read())
    except urllib.error.HTTPError as err:
        return Reply(err.code, dict(err.headers), err.read())


def custom(sandbox, context: str | None = None) -> client.CustomObjectsApi:
    return client.CustomObjectsApi(sandbox.api_client(context))


def job(name: str, **spec) -> dict:
    """A minimal valid Job with one head task."""
    task = {"name": "main", "head": True, "role": "Actor", "agentType": "Docker",
            "nodeSelector": {"kubernetes.io/hostname": "gpu-a3"},
            "kubernetes": {"workload": {"kind": "StatefulSet", "replicas": 1, "template": {
                "spec": {"containers": [{"name": "main", "image": "img@sha256:abc"}]}}}}}
    return {"apiVersion": "rlinf.io/v1alpha1", "kind": "Job", "metadata": {"name": name},
            "spec": {"stopped": True, "tasks": [task], **spec}}


def task(name: str, namespace: str, labels: dict | None = None) -> dict:
    return {"apiVersion": "rlinf.io/v1alpha1", "kind": "Task",
            "metadata": {"name": name, "namespace": namespace, "labels": labels or {}},
            "spec": {"role": "Env", "agentType": "Docker"}}
