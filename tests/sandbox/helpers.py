"""Test helpers: raw HTTPS requests to a sandbox (verified against its CA) and kubernetes API objects.
Requests carry the sandbox's bearer token unless a test asks for none or a wrong one.
"""

from __future__ import annotations

import base64
import contextlib
import json
import ssl
import urllib.error
import urllib.request
from dataclasses import dataclass

from kubernetes import client

from rlark_tui.model import keys

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


def free_port() -> int:
    import socket
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def tensorboard_pod(sandbox, task_name: str, pod: str, logdir, cluster: str = "rlark-gpu-a") -> str:
    """A Running Pod CR of `task_name` (local name `pod`) whose TensorBoard sidecar serves `logdir`, as the agent
    declares it for a head Pod with a tensorBoardDir; returns the Pod CR's name (undo with `forget_pod`)."""
    import uuid

    from rlark_tui.model import keys
    uid = str(uuid.uuid4())
    sandbox.store.create("pods", {
        "apiVersion": "rlinf.io/v1alpha1", "kind": "Pod",
        "metadata": {"name": uid, "namespace": cluster, "labels": {keys.TASK_NAME_LABEL: task_name}},
        "spec": {"taskName": task_name, "taskNamespace": cluster, "podName": pod},
        "status": {"phase": "Running"}})
    host = f"127.{sandbox.network.octet}.200.2"     # a Pod address no port block hands out (rlark_sandbox/podnet.py)
    sandbox.call(sandbox.tensorboards.declare, cluster, pod, uid, str(logdir), host, free_port(),
                 sandbox.state_dir / "tb-pods")
    return uid


def forget_pod(sandbox, uid: str, pod: str, cluster: str = "rlark-gpu-a") -> None:
    sandbox.call(sandbox.tensorboards.forget, cluster, pod)
    sandbox.store.delete("pods", uid, cluster)


def data_plane_api(sandbox, cluster: str) -> client.ApiClient:
    """A kubernetes ApiClient for one member cluster, through rlark-server (`/api/proxy/<agent>/api/kubernetes`)
    with the admin certificate of Secret rlark-admin-cert, as rlark itself reaches it."""
    from kubernetes import config
    directory = sandbox.state_dir / "test-data-planes"
    directory.mkdir(mode=0o700, exist_ok=True)
    return config.new_client_from_config(config_file=data_plane_kubeconfig(sandbox, cluster, directory),
                                         persist_config=False)


def admin_cert_files(sandbox, directory) -> tuple:
    """(admin.crt, admin.key) in `directory`, taken from Secret default/rlark-admin-cert (key mode 0600)."""
    import base64
    secret = client.CoreV1Api(sandbox.api_client()).read_namespaced_secret("rlark-admin-cert", "default")
    (directory / "admin.crt").write_bytes(base64.b64decode(secret.data["client.crt"]))
    (directory / "admin.key").write_bytes(base64.b64decode(secret.data["client.key"]))
    (directory / "admin.key").chmod(0o600)
    return directory / "admin.crt", directory / "admin.key"


def server_raw(sandbox, path: str, files=None, method: str = "GET", timeout: float = 10.0, body=None,
               headers: dict[str, str] | None = None) -> Reply:
    """One request to rlark-server, verified against the sandbox CA, with the client certificate `files`
    ((cert, key) paths; None = no certificate) and `headers`."""
    ctx = ssl.create_default_context(cafile=str(sandbox.ca_path))
    if files is not None:
        ctx.load_cert_chain(*files)
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(sandbox.server_url + path, method=method, data=data,
                                     headers={**({"Content-Type": "application/json"} if data else {}),
                                              **(headers or {})})
    try:
        with urllib.request.urlopen(request, context=ctx, timeout=timeout) as resp:
            return Reply(resp.status, dict(resp.headers), resp.read())
    except urllib.error.HTTPError as err:
        return Reply(err.code, dict(err.headers), err.read())


def ray_token_header(sandbox, job: str, cluster: str = "rlark-gpu-a") -> dict[str, str]:
    """`X-Ray-Authorization` with the Job's Ray token, from its Secret in the data plane (as KubeRay keeps it);
    no header before the Secret exists."""
    secret = sandbox.store.get("secrets", f"{job}-ray-token", "rlark-system", cluster)
    if secret is None:
        return {}
    return {"X-Ray-Authorization": f"Bearer {base64.b64decode(secret['data']['auth_token']).decode()}"}


def data_plane_kubeconfig(sandbox, cluster: str, directory) -> str:
    """A kubeconfig for kubectl on one member cluster through rlark-server, with the admin certificate (tests)."""
    import yaml
    crt, key = admin_cert_files(sandbox, directory)
    agent = cluster.removeprefix("rlark-")
    config = {"apiVersion": "v1", "kind": "Config", "current-context": cluster,
              "clusters": [{"name": cluster, "cluster": {
                  "server": f"{sandbox.server_url}/api/proxy/{agent}/api/kubernetes",
                  "certificate-authority": str(sandbox.ca_path)}}],
              "users": [{"name": "admin", "user": {"client-certificate": str(crt), "client-key": str(key)}}],
              "contexts": [{"name": cluster, "context": {"cluster": cluster, "user": "admin",
                                                         "namespace": "rlark-system"}}]}
    path = directory / f"{cluster}.kubeconfig"
    path.write_text(yaml.safe_dump(config))
    path.chmod(0o600)
    return str(path)


def plane_raw(sandbox, cluster: str, method: str, path: str) -> Reply:
    """One request to a member cluster's Kubernetes API `path` through rlark-server, with the admin certificate."""
    directory = sandbox.state_dir / "test-data-planes"
    directory.mkdir(mode=0o700, exist_ok=True)
    data_plane_kubeconfig(sandbox, cluster, directory)
    ctx = ssl.create_default_context(cafile=str(sandbox.ca_path))
    ctx.load_cert_chain(str(directory / "admin.crt"), str(directory / "admin.key"))
    url = f"{sandbox.server_url}/api/proxy/{cluster.removeprefix('rlark-')}/api/kubernetes{path}"
    try:
        with urllib.request.urlopen(urllib.request.Request(url, method=method), context=ctx, timeout=10) as resp:
            return Reply(resp.status, dict(resp.headers), resp.read())
    except urllib.error.HTTPError as err:
        return Reply(err.code, dict(err.headers), err.read())


@contextlib.contextmanager
def member_kubectl(sandbox, directory, agent: str = "gpu-a"):
    """Real kubectl as an operator runs it: through the sandbox's kubeconfig it takes the admin certificate from
    Secret default/rlark-admin-cert, then reaches member cluster `agent`'s API through rlark-server with it.
    Gives `run(*args, member=True)`: kubectl's stdout (exit 0 asserted), on the member cluster or, with
    `member=False`, the control plane. The key file is removed at the end (key-material tests search /tmp)."""
    import os
    import subprocess
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(directory), "KUBECONFIG": str(sandbox.kubeconfig)}

    def kubectl(*args: str) -> str:
        done = subprocess.run(["kubectl", "--cache-dir", str(directory / "cache"), *args], env=env,
                              capture_output=True, timeout=60)
        assert done.returncode == 0, done.stderr
        return done.stdout.decode()

    for field, name in (("client\\.crt", "c.crt"), ("client\\.key", "c.key")):
        data = kubectl("get", "secret", "rlark-admin-cert", "-n", "default", "-o", f"jsonpath={{.data.{field}}}")
        (directory / name).write_bytes(base64.b64decode(data))
    (directory / "c.key").chmod(0o600)
    through = ["--kubeconfig", "/dev/null", "--server", f"{sandbox.server_url}/api/proxy/{agent}/api/kubernetes",
               "--client-certificate", str(directory / "c.crt"), "--client-key", str(directory / "c.key"),
               "--certificate-authority", str(sandbox.ca_path)]

    def run(*args: str, member: bool = True) -> str:
        return kubectl(*through, *args) if member else kubectl(*args)
    try:
        yield run
    finally:
        (directory / "c.key").unlink(missing_ok=True)


def running_job_with_header_log(sb, name: str, log: str, cluster: str, ns: str, *, node: str = "gpu-a1",
                                pod_status: dict | None = None, when=None, **spec) -> list[tuple]:
    """A Running Job (`spec`: more of its spec) whose Header Pod on `node` logged `log` (written `when`, else now;
    `pod_status`: more of its Pod CR's status); what delete_made removes after it."""
    task_name, pod = f"{name}-main", f"{name}-main-0"
    made = job(name, **spec)
    made["status"] = {"phase": "Running"}
    sb.store.create("jobs", made)
    sb.store.create("tasks", task(task_name, cluster, {keys.JOB_LABEL: name}))
    real = sb.store.create("pods", {"apiVersion": "v1", "kind": "Pod",
                                    "metadata": {"name": pod, "namespace": ns, "labels": {"app": task_name}},
                                    "spec": {"nodeName": node, "containers": [{"name": "main", "image": "i@sha256:1"}]},
                                    "status": {"phase": "Running", "containerStatuses": [
                                        {"name": "main", "restartCount": 0, "state": {"running": {}}}]}}, plane=cluster)
    uid = real["metadata"]["uid"]  # the Pod CR is named by its data-plane pod's uid, as RLark's agent names it
    sb.store.create("pods", {
        "apiVersion": "rlinf.io/v1alpha1", "kind": "Pod",
        "metadata": {"name": uid, "namespace": cluster, "labels": {keys.TASK_NAME_LABEL: task_name}},
        "spec": {"taskName": task_name, "taskNamespace": cluster, "podName": pod},
        "status": {"phase": "Running", **(pod_status or {})}})
    sb.logs.start_instance(cluster, ns, pod, "main")
    sb.logs.append(cluster, ns, pod, "main", log, **({"when": when} if when else {}))
    return [("pods", uid, cluster, None), ("pods", pod, ns, cluster), ("tasks", task_name, cluster, None),
            ("jobs", name, None, None)]


def delete_made(sb, made: list[tuple]) -> None:
    """Remove what running_job_with_header_log made."""
    for kind, name, namespace, plane in made:
        if plane:
            sb.store.delete(kind, name, namespace, plane=plane)
        elif namespace:
            sb.store.delete(kind, name, namespace)
        else:
            sb.store.delete(kind, name)
