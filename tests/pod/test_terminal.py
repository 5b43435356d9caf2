"""The console's own terminal on sandbox Pods (gateway `pods/<pod CR>/terminal` and rlark-server
`/api/terminal/<agent>/<ns>/<pod>`): raw bytes, JSON resize, the close message with the exit code, errors as
frames; and the gateway's `system-config` (`{sshJumpHost, sshJumpPort}` from Secret rlark-system-config)."""

from __future__ import annotations

import json
import ssl

import websocket

from tests.pod.conftest import HEAD


def _pod_cr(sandbox, pod: str) -> str:
    pods, _ = sandbox.store.list("pods", fields=None)
    return next(p["metadata"]["name"] for p in pods if (p.get("spec") or {}).get("podName") == pod)


def _talk(ws, commands: bytes) -> tuple[bytes, str]:
    ws.send_binary(commands)
    out = b""
    while True:
        opcode, data = ws.recv_data(control_frame=True)
        if opcode == websocket.ABNF.OPCODE_CLOSE:
            return out, data[2:].decode()
        if opcode == websocket.ABNF.OPCODE_BINARY:
            out += data


def test_gateway_terminal(shell_job):
    url = shell_job.gateway.replace("https://", "wss://")
    ws = websocket.create_connection(f"{url}/api/v1/rlinf.io/v1alpha1/pods/{_pod_cr(shell_job, HEAD[1])}/terminal",
                                     header=[f"Authorization: Bearer {shell_job.token}"],
                                     sslopt={"ca_certs": str(shell_job.ca_path)}, timeout=15)
    ws.send(json.dumps({"type": "resize", "rows": 27, "cols": 91}))
    out, reason = _talk(ws, b"echo role=$RLARK_TASK_ROLE; stty size; exit 4\n")
    assert b"role=actor" in out and b"27 91" in out
    assert reason == "terminal exited with code 4"


def test_server_terminal_needs_permission(shell_job):
    url = shell_job.server_url.replace("https://", "wss://")
    path = f"{url}/api/terminal/gpu-a/rlark-system/{HEAD[1]}?command=/bin/sh"

    def connect(metadata: dict[str, str], tmp: str):
        cert, key = shell_job.issue_client_cert(metadata)
        with open(f"{tmp}.crt", "wb") as fh:
            fh.write(cert)
        with open(f"{tmp}.key", "wb") as fh:
            fh.write(key)
        return websocket.create_connection(path, timeout=15, sslopt={
            "ca_certs": str(shell_job.ca_path), "certfile": f"{tmp}.crt", "keyfile": f"{tmp}.key",
            "cert_reqs": ssl.CERT_REQUIRED})

    ws = connect({"permission:agent-proxy": "gpu-a"}, str(shell_job.state_dir / "term-ok"))
    out, reason = _talk(ws, b"echo $RLARK_TASK_ROLE; exit\n")
    assert b"actor" in out and reason == "terminal session ended"
    try:
        connect({"permission:agent-proxy": "edge-b"}, str(shell_job.state_dir / "term-no"))
        raise AssertionError("connected without permission")
    except websocket.WebSocketBadStatusException as exc:
        assert exc.status_code == 403 and b"proxy permission" in exc.resp_body


def test_terminal_on_a_missing_pod_reports_an_error_frame(shell_job):
    url = shell_job.gateway.replace("https://", "wss://")
    shell_job.store.create("pods", {"apiVersion": "rlinf.io/v1alpha1", "kind": "Pod",
                                    "metadata": {"name": "ghost-cr", "namespace": "rlark-gpu-a"},
                                    "spec": {"podNamespace": "rlark-system", "podName": "ghost-0"}})
    try:
        ws = websocket.create_connection(f"{url}/api/v1/rlinf.io/v1alpha1/pods/ghost-cr/terminal",
                                         header=[f"Authorization: Bearer {shell_job.token}"],
                                         sslopt={"ca_certs": str(shell_job.ca_path)}, timeout=15)
        message = json.loads(ws.recv())
        assert message["type"] == "error" and "ghost-0" in message["message"]
    finally:
        shell_job.store.delete("pods", "ghost-cr", "rlark-gpu-a")


def test_system_config(shell_job):
    from rlark_tui.cluster.access import ClusterAccess
    from rlark_tui.cluster.errors import Request
    from rlark_tui.local.config import RlarkConfig
    access = ClusterAccess.open(str(shell_job.kubeconfig), config=RlarkConfig(None))
    gateway = access.gateway_http()
    req = Request("get", "system-config", source="gateway")
    assert gateway.json("GET", "/api/v1/system-config", req) in (
        {"sshJumpHost": "", "sshJumpPort": ""}, {"sshJumpHost": "jump.example", "sshJumpPort": "2222"})
    body = {"sshJumpHost": "jump.example", "sshJumpPort": "2222"}
    assert gateway.json("PUT", "/api/v1/system-config", req, body=body) == body
    assert gateway.json("GET", "/api/v1/system-config", req) == body


def test_terminal_file_upload_and_download(shell_job):
    url = shell_job.gateway.replace("https://", "wss://")
    ws = websocket.create_connection(f"{url}/api/v1/rlinf.io/v1alpha1/pods/{_pod_cr(shell_job, HEAD[1])}/terminal",
                                     header=[f"Authorization: Bearer {shell_job.token}"],
                                     sslopt={"ca_certs": str(shell_job.ca_path)}, timeout=15)

    def next_json() -> dict:
        while True:
            opcode, data = ws.recv_data()
            if opcode == websocket.ABNF.OPCODE_TEXT:
                return json.loads(data)

    payload = b"weights " * 10000
    ws.send(json.dumps({"type": "file-upload", "path": "/tmp/rlark-terminal-up.bin", "size": len(payload),
                        "mode": 0o644}))
    ws.send_binary(payload[:40000])
    ws.send_binary(payload[40000:])
    ws.send(json.dumps({"type": "file-upload-end"}))
    assert next_json() == {"type": "file-transfer-done", "success": True}
    ws.send(json.dumps({"type": "file-download", "path": "/tmp/rlark-terminal-up.bin"}))
    assert next_json() == {"type": "file-download-start", "size": len(payload), "name": "rlark-terminal-up.bin"}
    got = b""
    while True:
        opcode, data = ws.recv_data()
        if opcode == websocket.ABNF.OPCODE_TEXT:
            assert json.loads(data) == {"type": "file-download-end"}
            break
        got += data
    assert got == payload
    ws.send(json.dumps({"type": "file-download", "path": "/tmp/no-such-file-here"}))
    done = next_json()
    assert done["type"] == "file-transfer-done" and done["success"] is False and "No such file" in done["error"]
    ws.close()
