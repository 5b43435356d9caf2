"""The sandbox's rlark-server over real mutual TLS: certificates and permissions, the routes of platform §0b
(control plane, member clusters, Pod and Task ports), faults, the admin Secret, the Lease, the kubeconfig
extension, unknown routes, and real kubectl through `/api/proxy/gpu-a/api/kubernetes`.
"""

from __future__ import annotations

import base64
import datetime as dt
import http.client
import http.server
import json
import os
import shutil
import socket
import ssl
import subprocess
import threading
import time
import urllib.error
import urllib.request

import pytest
import yaml
from kubernetes import client

from rlark_sandbox.rlark_server import lease_name
from tests.sandbox.helpers import admin_cert_files, member_kubectl, ray_token_header, server_raw

ADMIN = {"cert-role": "admin", "permission:admin": "true", "kubernetes-impersonation": "-"}


@pytest.fixture(scope="module")
def admin_files(plain_sandbox, tmp_path_factory):
    """client.crt / client.key taken from Secret default/rlark-admin-cert (only those two keys) through kcp."""
    secret = client.CoreV1Api(plain_sandbox.api_client()).read_namespaced_secret("rlark-admin-cert", "default")
    assert set(secret.data) == {"client.crt", "client.key"}
    return admin_cert_files(plain_sandbox, tmp_path_factory.mktemp("admin-cert"))


def cert_files(tmp_path, pem: tuple[bytes, bytes]):
    crt, key = tmp_path / f"c{len(list(tmp_path.iterdir()))}.crt", tmp_path / f"k{len(list(tmp_path.iterdir()))}.key"
    crt.write_bytes(pem[0])
    key.write_bytes(pem[1])
    key.chmod(0o600)
    return crt, key


def wait_for(predicate, timeout: float = 30.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError("timed out")


def test_no_client_certificate_fails_in_the_handshake(sandbox):
    with pytest.raises((ssl.SSLError, urllib.error.URLError), match="CERTIFICATE_REQUIRED"):
        server_raw(sandbox, "/api/kubernetes/version")


def test_admin_certificate_reaches_control_plane_and_member_cluster(sandbox, admin_files):
    jobs = server_raw(sandbox, "/api/kubernetes/apis/rlinf.io/v1alpha1/jobs", admin_files)
    assert jobs.status == 200
    assert "demo-ppo" in [j["metadata"]["name"] for j in jobs.json()["items"]]
    pods = wait_for(lambda: server_raw(sandbox, "/api/proxy/gpu-a/api/kubernetes/api/v1/namespaces/rlark-system/pods",
                                 admin_files).json()["items"])
    assert any(p["metadata"]["name"].startswith("demo-ppo-") for p in pods)


def test_agent_limited_certificate(sandbox, tmp_path):
    only_edge = cert_files(tmp_path, sandbox.issue_client_cert({"permission:agent-proxy": "edge-b"}))
    refused = server_raw(sandbox, "/api/proxy/gpu-a/api/kubernetes/api/v1/namespaces/rlark-system/pods", only_edge)
    assert refused.status == 403
    assert refused.json() == {"error": "client certificate does not have proxy permission for the target"}
    assert server_raw(sandbox, "/api/proxy/edge-b/api/kubernetes/api/v1/namespaces/rlark-system/pods",
                only_edge).status == 200
    assert server_raw(sandbox, "/api/kubernetes/apis/rlinf.io/v1alpha1/jobs", only_edge).status == 403
    every = cert_files(tmp_path, sandbox.issue_client_cert({"permission:agent-proxy": "*"}))
    assert server_raw(sandbox, "/api/proxy/gpu-a/api/kubernetes/api/v1/namespaces/rlark-system/pods", every).status == 200


def test_revoked_certificate_gets_401(sandbox, tmp_path):
    pem = sandbox.issue_client_cert(ADMIN)
    files = cert_files(tmp_path, pem)
    assert server_raw(sandbox, "/api/kubernetes/version", files).status == 200
    sandbox.revoke(pem[0])
    reply = server_raw(sandbox, "/api/kubernetes/version", files)
    assert (reply.status, reply.json()) == (401, {"error": "client certificate revoked"})


def test_expired_certificate_fails_in_the_handshake(sandbox, tmp_path):
    past = dt.datetime.now(dt.UTC) - dt.timedelta(days=3)
    files = cert_files(tmp_path, sandbox.issue_client_cert(ADMIN, days=1, not_before=past))
    with pytest.raises((ssl.SSLError, urllib.error.URLError), match="CERTIFICATE_EXPIRED"):
        server_raw(sandbox, "/api/kubernetes/version", files)


def test_offline_and_unknown_agents_get_502(sandbox, faults, admin_files):
    path = "/api/proxy/gpu-a/api/kubernetes/api/v1/namespaces/rlark-system/pods"
    faults.agent_offline("gpu-a")
    offline = server_raw(sandbox, path, admin_files)
    assert (offline.status, offline.body) == (502, b"")
    assert server_raw(sandbox, "/api/proxy/edge-b/api/kubernetes/api/v1/namespaces/rlark-system/pods",
                admin_files).status == 200
    faults.agent_offline("gpu-a", on=False)
    assert server_raw(sandbox, path, admin_files).status == 200
    assert server_raw(sandbox, "/api/proxy/nowhere/api/kubernetes/api/v1/pods", admin_files).status == 502


def refused(sandbox) -> bool:
    """Whether rlark-server's port refuses TCP connections."""
    try:
        socket.create_connection(("127.0.0.1", int(sandbox.server_url.rsplit(":", 1)[1])), timeout=2).close()
    except ConnectionRefusedError:
        return True
    return False


def test_server_down_while_control_plane_stays_up(sandbox, faults, admin_files):
    faults.server_down()
    wait_for(lambda: refused(sandbox), timeout=5)
    assert client.VersionApi(sandbox.api_client()).get_code().minor == "32"
    faults.server_down(on=False)
    wait_for(lambda: not refused(sandbox), timeout=5)
    assert server_raw(sandbox, "/api/kubernetes/version", admin_files).status == 200


@pytest.fixture
def pod_cr(sandbox):
    """A Pod CR of Task `probe-job-actor` on gpu-a (no agent manages it); removed afterwards."""
    store = sandbox.store
    made = []

    def make(uid: str, ip: str) -> dict:
        obj = store.create("pods", {
            "apiVersion": "rlinf.io/v1alpha1", "kind": "Pod",
            "metadata": {"name": uid, "namespace": "rlark-gpu-a"},
            "spec": {"taskName": "probe-job-actor", "taskNamespace": "rlark-gpu-a", "podName": "probe-job-actor-0",
                     "podNamespace": "rlark-system"}})
        made.append(uid)
        if ip:
            obj = store.mutate("pods", uid, lambda p: {**p, "status": {"ip": ip, "phase": "Running"}},
                               "rlark-gpu-a")
        return obj
    yield make
    for uid in made:
        store.delete("pods", uid, "rlark-gpu-a")


@pytest.fixture
def backend():
    """A local HTTP server answering `<path>` with its own path, standing in for a process in a Pod."""
    class Echo(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            body = f"echo {self.path}".encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Echo)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server.server_address[1]
    server.shutdown()


def test_task_and_pod_proxy(sandbox, admin_files, pod_cr, backend, tmp_path):
    missing = server_raw(sandbox, "/api/taskproxy/no-such-task:8265/", admin_files)
    assert (missing.status, missing.json()) == (404, {"error": "task no-such-task not found"})
    assert server_raw(sandbox, "/api/podproxy/no-such-pod:80/", admin_files).json() == {"error": "pod no-such-pod not found"}
    assert server_raw(sandbox, "/api/taskproxy/probe-job-actor/", admin_files).status == 400
    pod_cr("probe-uid-1", "")
    waiting = server_raw(sandbox, "/api/taskproxy/probe-job-actor:8265/", admin_files)
    assert (waiting.status, waiting.json()) == (503, {"error": "pod probe-job-actor-0 not ready"})
    pod_cr("probe-uid-2", "127.0.0.1")
    reached = server_raw(sandbox, f"/api/taskproxy/probe-job-actor:{backend}/api/version?x=1", admin_files)
    assert (reached.status, reached.body) == (200, b"echo /api/version?x=1")
    sandbox.proxies.register_pod("rlark-gpu-a", "probe-job-actor-0", 8265, f"http://127.0.0.1:{backend}")
    try:
        assert server_raw(sandbox, "/api/podproxy/probe-job-actor-0:8265/", admin_files).body == b"echo /"
    finally:
        sandbox.proxies.unregister_pod("rlark-gpu-a", "probe-job-actor-0")
    direct = server_raw(sandbox, f"/api/proxy/gpu-a/api/proxy/http://127.0.0.1:{backend}/logs/x", admin_files)
    assert direct.body == b"echo /logs/x"
    only_edge = cert_files(tmp_path, sandbox.issue_client_cert({"permission:agent-proxy": "edge-b"}))
    assert server_raw(sandbox, f"/api/taskproxy/probe-job-actor:{backend}/", only_edge).status == 403


def test_sign_and_revoke_over_the_api(sandbox, admin_files, tmp_path):
    signed = server_raw(sandbox, "/api/sign", admin_files, "POST", body={"role": "admin"})
    assert signed.status == 200 and signed.json()["cert_type"] == "x509"
    answer = signed.json()
    files = cert_files(tmp_path, (answer["cert_pem"].encode(), answer["key_pem"].encode()))
    assert server_raw(sandbox, "/api/kubernetes/version", files).status == 200
    limited = cert_files(tmp_path, sandbox.issue_client_cert({"permission:agent-proxy": "*"}))
    assert server_raw(sandbox, "/api/sign", limited, "POST", body={"role": "admin"}).json() == {
        "error": "admin permission required"}
    assert server_raw(sandbox, "/api/sign", admin_files, "POST", body={"role": "agent"}).status == 400
    revoke = {"cert_type": "x509", "serial_number": answer["serial_number"], "subject_key_id": answer["subject_key_id"]}
    assert server_raw(sandbox, "/api/revoke", admin_files, "POST", body=revoke).status == 200
    assert server_raw(sandbox, "/api/kubernetes/version", files).json() == {"error": "client certificate revoked"}


def test_agent_local_terminal_route(sandbox, admin_files):
    """`/api/proxy/<agent>/api/terminal/<ns>/<pod>` (agent/local_http.go) reaches the same terminal as
    `/api/terminal/<agent>/<ns>/<pod>` (tests/pod/test_terminal.py)."""
    import asyncio

    import aiohttp

    async def first_frame(path: str) -> dict:
        ctx = ssl.create_default_context(cafile=str(sandbox.ca_path))
        ctx.load_cert_chain(*admin_files)
        async with aiohttp.ClientSession() as session:
            async with session.ws_connect(sandbox.server_url + path, ssl=ctx) as ws:
                return json.loads((await ws.receive(timeout=10)).data)
    frame = asyncio.run(first_frame("/api/proxy/gpu-a/api/terminal/rlark-system/no-such-pod"))
    assert frame["type"] == "error" and "no-such-pod" in frame["message"]


def test_unknown_routes_are_recorded_on_both_ports(sandbox, admin_files):
    from tests.sandbox.helpers import raw
    before = len(sandbox.unknown_routes)
    assert server_raw(sandbox, "/api/invented/route", admin_files).status == 404
    assert server_raw(sandbox, "/api/proxy/gpu-a/api/invented", admin_files).status == 404
    assert raw(sandbox, "GET", "/api/v1/invented-gateway-route").status == 404
    assert raw(sandbox, "GET", "/clusters/root/apis/rlinf.io/v1alpha1/nosuchkinds").status == 404
    assert raw(sandbox, "GET", "/_sandbox/faults").status == 200
    assert sandbox.unknown_routes[before:] == [
        "GET /api/invented/route", "GET /api/proxy/gpu-a/api/invented", "GET /api/v1/invented-gateway-route",
        "GET /clusters/root/apis/rlinf.io/v1alpha1/nosuchkinds"]
    assert server_raw(sandbox, "/api/kubernetes/apis/rlinf.io/v1alpha1/jobs/no-such-job", admin_files).status == 404
    assert len(sandbox.unknown_routes) == before + 4


def test_admin_secret_lease_and_kubeconfig_extension(sandbox):
    from cryptography import x509

    from rlark_sandbox import certs
    core = client.CoreV1Api(sandbox.api_client())
    secret = core.read_namespaced_secret("rlark-admin-cert", "default")
    cert = x509.load_pem_x509_certificate(base64.b64decode(secret.data["client.crt"]))
    assert certs.metadata(cert) == ADMIN
    lease = client.CoordinationV1Api(sandbox.api_client()).read_namespaced_lease(lease_name(), "default")
    ip, peer_id, token = lease.spec.holder_identity.split("/")
    assert ip == "127.0.0.1" and peer_id and len(token) >= 16
    age = dt.datetime.now(dt.UTC) - lease.spec.renew_time
    assert age.total_seconds() < lease.spec.lease_duration_seconds
    config = yaml.safe_load(sandbox.kubeconfig.read_text())
    control = next(c for c in config["clusters"] if c["name"] == config["current-context"])
    extension = control["cluster"]["extensions"][0]
    assert extension["name"] == "rlark.io/server"
    assert extension["extension"]["server"] == sandbox.server_url
    assert base64.b64decode(extension["extension"]["certificate-authority-data"]) == sandbox.ca_path.read_bytes()


@pytest.mark.kubectl
@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed")
def test_real_kubectl_through_the_route(sandbox, tmp_path):
    """The issue's line: the admin certificate from the Secret with kubectl, then kubectl through rlark-server."""
    wait_for(lambda: any(p["metadata"]["name"].startswith("demo-ppo-")
                         for p in sandbox.store.list("pods", "rlark-system", plane="rlark-gpu-a")[0]))
    with member_kubectl(sandbox, tmp_path) as kubectl:
        assert lease_name() in kubectl("get", "lease", "-A", member=False)
        listed = kubectl("get", "pods", "-n", "rlark-system")
    assert "demo-ppo-actor-0" in listed.split()



def test_log_follow_through_the_server_ends_when_it_goes_down(bare_sandbox, tmp_path):
    """A `follow` stream through `/api/proxy/<agent>/api/kubernetes` is dropped by fault `server_down`; the
    control plane stays up; the server answers again once the fault is cleared."""
    sandbox = bare_sandbox
    files = cert_files(tmp_path, sandbox.issue_client_cert(ADMIN))
    sandbox.store.create("pods", {"apiVersion": "v1", "kind": "Pod",
                                  "metadata": {"name": "follow-me", "namespace": "rlark-system"},
                                  "spec": {"containers": [{"name": "main", "image": "x"}]}}, plane="rlark-gpu-a")
    sandbox.logs.start_instance("rlark-gpu-a", "rlark-system", "follow-me", "main")
    sandbox.logs.append("rlark-gpu-a", "rlark-system", "follow-me", "main", "first line")
    ctx = ssl.create_default_context(cafile=str(sandbox.ca_path))
    ctx.load_cert_chain(*files)
    url = (f"{sandbox.server_url}/api/proxy/gpu-a/api/kubernetes/api/v1/namespaces/rlark-system/pods/follow-me/log"
           "?container=main&follow=true")
    with sandbox.faults.cleared():
        with urllib.request.urlopen(url, context=ctx, timeout=10) as stream:
            assert stream.readline() == b"first line\n"
            sandbox.faults.server_down()
            started = time.monotonic()
            try:
                while stream.read(1):
                    pass
            except (OSError, http.client.HTTPException):
                pass
            assert time.monotonic() - started < 5
        assert client.VersionApi(sandbox.api_client()).get_code().minor == "32"
        sandbox.faults.server_down(on=False)
        wait_for(lambda: not refused(sandbox), timeout=5)
        assert server_raw(sandbox, "/api/kubernetes/version", files).status == 200


@pytest.mark.ray
def test_ray_dashboard_through_taskproxy(sandbox, tmp_path):
    files = cert_files(tmp_path, sandbox.issue_client_cert(ADMIN))

    path = "/api/taskproxy/demo-ppo-actor:8265/api/v0/nodes"

    def alive() -> int:
        reply = server_raw(sandbox, path, files, headers=ray_token_header(sandbox, "demo-ppo"))
        if reply.status != 200:
            return 0
        rows = reply.json()["data"]["result"]["result"]
        return sum(1 for row in rows if row["state"] == "ALIVE")
    assert wait_for(alive, timeout=300) >= 1
    refused = server_raw(sandbox, path, files)        # Ray's own token authentication, behind rlark-server's mTLS
    assert (refused.status, refused.body) == (401, b"Unauthorized: Missing authentication token")


@pytest.mark.kubectl
@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed")
def test_real_kubectl_exec_through_the_route(sandbox, admin_files, tmp_path):
    """Exec's WebSocket upgrade passes through `/api/proxy/<agent>/api/kubernetes` (Job `shell` of tests/pod)."""
    from tests.pod.conftest import HEAD, JOB, create_job, wait_running
    create_job(sandbox, JOB, [("actor", True, "gpu-a1"), ("env", False, "edge-b1")])
    wait_running(sandbox, *HEAD)
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path)}
    done = subprocess.run(
        ["kubectl", "--kubeconfig", "/dev/null", "--server", f"{sandbox.server_url}/api/proxy/gpu-a/api/kubernetes",
         "--client-certificate", str(admin_files[0]), "--client-key", str(admin_files[1]),
         "--certificate-authority", str(sandbox.ca_path), "-n", "rlark-system",
         "exec", HEAD[1], "-c", "main", "--", "sh", "-c", "echo $RLARK_TASK_ROLE; exit 3"],
        env=env, capture_output=True, timeout=60)
    assert (done.returncode, done.stdout) == (3, b"actor\n"), done.stderr
