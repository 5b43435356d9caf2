"""The local HTTP tunnel (cluster.tunnel) over the sandbox's HTTPS with rlark's credentials: the token in the
path is required, read-only mode passes only GET/HEAD, a streaming answer arrives as it is written, a WebSocket
upgrade (an exec through the tunnel) works both ways; `rlark port-forward` prints its URL and serves it."""

from __future__ import annotations

import http.client
import json
import os
import socket
import subprocess
import sys
import time

import pytest
import websocket

from rlark_tui.cluster.tunnel import READ_ONLY_METHODS, Tunnel, Upstream
from tests.pod.conftest import HEAD, ctrl_c_default


@pytest.fixture
def tunnel(access):
    tun = Tunnel(Upstream.of(access.gateway_http()), name="gateway").start()
    yield tun
    tun.stop()


def _get(tun: Tunnel, path: str, method: str = "GET") -> tuple[int, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", tun.local_port, timeout=10)
    conn.request(method, path)
    resp = conn.getresponse()
    try:
        return resp.status, resp.read()
    finally:
        conn.close()


def test_token_required_and_credentials_added(tunnel):
    status, body = _get(tunnel, f"/{tunnel.token}/api/v1/clusters")
    assert status == 200 and json.loads(body)["success"] is True
    for path in ("/api/v1/clusters", f"/{tunnel.token[:-1]}/api/v1/clusters", f"/x{tunnel.token}/api/v1/clusters"):
        status, body = _get(tunnel, path)
        assert status == 403 and b"needs its token" in body
    assert tunnel.url == f"http://127.0.0.1:{tunnel.local_port}/{tunnel.token}/"


def test_read_only_passes_get_and_head_only(access):
    tun = Tunnel(Upstream.of(access.gateway_http()), methods=READ_ONLY_METHODS).start()
    try:
        assert _get(tun, f"/{tun.token}/api/v1/clusters")[0] == 200
        assert _get(tun, f"/{tun.token}/api/v1/clusters", "HEAD")[0] != 405
        status, body = _get(tun, f"/{tun.token}/api/v1/ssh-user-keys", "POST")
        assert status == 405 and b"read-only" in body
    finally:
        tun.stop()


def test_streaming_answer(tunnel, shell_job):
    conn = http.client.HTTPConnection("127.0.0.1", tunnel.local_port, timeout=10)
    conn.request("GET", f"/{tunnel.token}/clusters/root/apis/rlinf.io/v1alpha1/jobs?watch=true&resourceVersion=0"
                        "&timeoutSeconds=30")
    resp = conn.getresponse()
    assert resp.status == 200
    first = json.loads(resp.readline())
    assert first["type"] == "ADDED"
    shell_job.store.create("jobs", {"apiVersion": "rlinf.io/v1alpha1", "kind": "Job",
                                    "metadata": {"name": "tunnel-stream"}, "spec": {"tasks": []}})
    try:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            event = json.loads(resp.readline())
            if event["object"]["metadata"]["name"] == "tunnel-stream":
                break
        assert event["object"]["metadata"]["name"] == "tunnel-stream"
    finally:
        conn.close()
        shell_job.store.delete("jobs", "tunnel-stream", "")


def test_websocket_upgrade_through_the_tunnel(access):
    tunnel = Tunnel(Upstream.of(access.data_plane(HEAD[0])), name="data plane").start()  # rlark-server, mTLS
    ws = websocket.create_connection(
        f"ws://127.0.0.1:{tunnel.local_port}/{tunnel.token}/api/v1/namespaces/rlark-system/pods/"
        f"{HEAD[1]}/exec?command=cat&container=main&stdin=true&stdout=true", subprotocols=["v5.channel.k8s.io"],
        timeout=10)
    try:
        ws.send_binary(b"\x00through the tunnel")
        ws.send_binary(bytes([255, 0]))
        got = b""
        while b"through the tunnel" not in got:
            got += ws.recv()[1:]
    finally:
        ws.close()
        tunnel.stop()


def test_port_forward_command(shell_job):
    proc = subprocess.Popen([sys.executable, "-m", "rlark_tui", "--kubeconfig", str(shell_job.kubeconfig),
                             "port-forward", "shell", "tensorboard"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env={**os.environ, "RLARK_CONFIG": "/nonexistent/config.yaml"},
                            preexec_fn=ctrl_c_default)
    try:
        line = proc.stdout.readline().decode()
        assert line.startswith("Forwarding shell tensorboard at http://127.0.0.1:"), line
        url = line.split(" at ")[1].strip()
        port, token = url.split(":")[2].split("/")[0], url.split("/")[3]
        assert len(token) >= 24
        conn = http.client.HTTPConnection("127.0.0.1", int(port), timeout=10)
        conn.request("GET", "/")
        assert conn.getresponse().status == 403
        # Ctrl-C ends it with a connection still open mid-request (a browser's), quietly
        pending = socket.create_connection(("127.0.0.1", int(port)), timeout=10)
        pending.sendall(f"GET /{token}/ HTTP/1.1\r\n".encode())
    finally:
        proc.send_signal(2)
        assert proc.wait(60) == 130   # as a shell says Ctrl-C ended it; generous for a loaded machine
    assert b"Traceback" not in proc.stderr.read()
    pending.close()
    done = subprocess.run([sys.executable, "-m", "rlark_tui", "--kubeconfig", str(shell_job.kubeconfig),
                           "port-forward", "shell", "nonsense"], capture_output=True, timeout=30,
                          env={**os.environ, "RLARK_CONFIG": "/nonexistent/config.yaml"})
    assert done.returncode == 2 and b"use ray, tensorboard or a port number" in done.stderr


def test_port_of_the_header_pod_through_rlark_server(shell_job, access):
    """`PORT`: rlark-server's task proxy to the Header Pod's port, here a web server started in the Pod."""
    from rlark_tui.cluster.kinds import JOBS
    from rlark_tui.cluster.podexec import ExecSession
    from rlark_tui.cluster.tunnel import job_tunnel
    from rlark_tui.model.objects import Job
    ip = shell_job.store.get("pods", HEAD[1], "rlark-system", HEAD[0])["status"]["podIP"]
    server = ExecSession.open(access.data_plane_api_client(HEAD[0]), HEAD[1], [
        "sh", "-c", f"echo served-by-the-pod > index.html && exec python3 -m http.server 18265 --bind {ip}"])
    try:
        tun = job_tunnel(access, Job(access.get(JOBS, "shell")), "18265").start()
        try:
            deadline = time.monotonic() + 15
            status, body = _get(tun, f"/{tun.token}/index.html")
            while status != 200 and time.monotonic() < deadline:
                time.sleep(0.2)
                status, body = _get(tun, f"/{tun.token}/index.html")
            assert (status, body) == (200, b"served-by-the-pod\n")
        finally:
            tun.stop()
    finally:
        server.close()


def test_pod_flows_use_only_platform_routes(run, shell_job, access, tmp_path):
    """exec, cp, tunnels (Ray dashboard, TensorBoard, a port) and the ssh -J lookup add no unknown route."""
    from rlark_tui.cluster.errors import Request
    from rlark_tui.cluster.kinds import JOBS
    from rlark_tui.cluster.tunnel import job_tunnel
    from rlark_tui.model.objects import Job
    before = len(shell_job.unknown_routes)
    assert run("exec", "shell", "--", "true")[0] == 0
    assert run("cp", "shell:/etc/hostname", str(tmp_path / "hostname"))[0] == 0
    job = Job(access.get(JOBS, "shell"))
    for target in ("ray", "tensorboard", "18266"):
        tun = job_tunnel(access, job, target).start()
        try:
            _get(tun, f"/{tun.token}/")
        finally:
            tun.stop()
    access.gateway_http().json("GET", "/api/v1/system-config", Request("get", "system-config", source="gateway"))
    assert shell_job.unknown_routes[before:] == []
