"""Fixtures for exec tests: Job `shell` in the shared sandbox, whose Pods run without Ray (their prepare script
sleeps, so `main` stays Running), a ClusterAccess to that sandbox, and `run`, which runs `rlark` in-process.
"""

from __future__ import annotations

import signal
import time

import pytest

from rlark_tui.cli import main
from rlark_tui.cluster.access import ClusterAccess
from rlark_tui.local.config import RlarkConfig

JOB = "shell"
IMAGE = "registry.example/rlinf:no-ray"
HEAD = ("rlark-gpu-a", "shell-actor-0")
WORKER = ("rlark-edge-b", "shell-env-0")


def _role(name: str, head: bool, host: str) -> dict:
    return {"name": name, "head": head, "role": "Actor" if head else "Env", "agentType": "Kubernetes",
            "nodeSelector": {"kubernetes.io/hostname": host}, "prepareScript": "sleep 3600",
            "kubernetes": {"workload": {"kind": "StatefulSet", "replicas": 1, "template": {"spec": {"containers": [
                {"name": "main", "image": IMAGE, "env": [{"name": "RLARK_TASK_ROLE", "value": name}]}]}}}}}


def wait_running(sandbox, cluster: str, pod: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = sandbox.store.get("pods", pod, "rlark-system", cluster)
        if found and (found.get("status") or {}).get("phase") == "Running" and \
                sandbox.call(lambda: sandbox.agent.exec_target(cluster, pod)) is not None:
            return
        time.sleep(0.1)
    raise AssertionError(f"pod {pod} did not start")


def create_job(sandbox, name: str, roles: list[tuple[str, bool, str]], **spec) -> None:
    """A Job of (role, head, host) roles whose Pods run without Ray (and any other `spec` fields), unless it
    exists."""
    if sandbox.store.get("jobs", name, "") is None:
        sandbox.store.create("jobs", {"apiVersion": "rlinf.io/v1alpha1", "kind": "Job", "metadata": {"name": name},
                                      "spec": {"tasks": [_role(*role) for role in roles], **spec}})


@pytest.fixture
def shell_job(sandbox):
    """Job `shell`: Header role `actor` on gpu-a1 and role `env` on edge-b1, both Running without Ray."""
    create_job(sandbox, JOB, [("actor", True, "gpu-a1"), ("env", False, "edge-b1")])
    for cluster, pod in (HEAD, WORKER):
        wait_running(sandbox, cluster, pod)
    return sandbox


@pytest.fixture
def access(shell_job):
    acc = ClusterAccess.open(str(shell_job.kubeconfig), config=RlarkConfig(None))
    yield acc
    acc.close()


@pytest.fixture
def run(shell_job, env, capfd):
    """`rlark` in this process, its output read at the descriptors: (exit code, stdout bytes, stderr text)."""
    def call(*argv: str) -> tuple[int, bytes, str]:
        code = main(["--kubeconfig", str(shell_job.kubeconfig), *argv])
        out, err = capfd.readouterr()
        return code, out.encode(), err
    return call


def ctrl_c_default() -> None:
    """A child's SIGINT as a terminal's foreground command has it (Popen's preexec_fn): a suite started as a script's
    background job ignores SIGINT, and its children would inherit that and never see the test's Ctrl-C."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
