"""Real kubectl 1.32 `exec` and `cp` against a sandbox Pod through the data-plane route (WebSocket, v5)."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from rlark_tui.sandbox.kubeconfig import data_plane_context
from tests.pod.conftest import HEAD

pytestmark = [pytest.mark.kubectl,
              pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed")]


@pytest.fixture
def kubectl(shell_job, tmp_path):
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path), "KUBECONFIG": str(shell_job.kubeconfig)}

    def run(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess:
        return subprocess.run(["kubectl", "--context", data_plane_context(HEAD[0]), "-n", "rlark-system", *args],
                              input=stdin, env=env, capture_output=True, timeout=60, cwd=tmp_path)
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
