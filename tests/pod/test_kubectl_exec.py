"""Real kubectl 1.32 `exec` and `cp` against a sandbox Pod through the member cluster's API on rlark-server
(`/api/proxy/gpu-a/api/kubernetes`, a client certificate; WebSocket, v5)."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from tests.pod.conftest import HEAD

pytestmark = [pytest.mark.kubectl,
              pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed")]


@pytest.fixture
def kubectl(shell_job, tmp_path):
    cert, key = shell_job.issue_client_cert({"permission:agent-proxy": "gpu-a"})
    (tmp_path / "c.crt").write_bytes(cert)
    (tmp_path / "c.key").write_bytes(key)
    (tmp_path / "c.key").chmod(0o600)
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path)}
    server = ["--kubeconfig", "/dev/null", "--server", f"{shell_job.server_url}/api/proxy/gpu-a/api/kubernetes",
              "--client-certificate", "c.crt", "--client-key", "c.key",
              "--certificate-authority", str(shell_job.ca_path), "-n", "rlark-system"]

    def run(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess:
        return subprocess.run(["kubectl", *server, *args], input=stdin, env=env, capture_output=True, timeout=60,
                              cwd=tmp_path)
    return run


def test_kubectl_exec_exit_code_and_stdin(kubectl):
    done = kubectl("exec", HEAD[1], "-c", "main", "--", "sh", "-c", "echo $RLARK_TASK_ROLE; exit 7")
    assert done.returncode == 7 and done.stdout == b"actor\n", done.stderr
    done = kubectl("exec", "-i", HEAD[1], "-c", "main", "--", "cat", stdin=b"piped\n")
    assert done.returncode == 0 and done.stdout == b"piped\n", done.stderr


def test_kubectl_cp_round_trip(kubectl, tmp_path):
    (tmp_path / "model.txt").write_bytes(b"weights\n" * 1000)
    up = kubectl("cp", "model.txt", f"{HEAD[1]}:/tmp/kubectl-cp.txt", "-c", "main")
    assert up.returncode == 0, up.stderr
    down = kubectl("cp", f"{HEAD[1]}:/tmp/kubectl-cp.txt", "back.txt", "-c", "main")
    assert down.returncode == 0, down.stderr
    assert (tmp_path / "back.txt").read_bytes() == b"weights\n" * 1000
