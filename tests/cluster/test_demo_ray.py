"""End to end with real Ray on the shared sandbox: the seeded demo-ppo as `rlark` shows it (read-only)."""

from __future__ import annotations

import base64
import json
import time

import pytest
from kubernetes import client

from rlark_tui.cli import main
from rlark_tui.cluster import ClusterAccess
from tests.sandbox.helpers import data_plane_api

JOB = "demo-ppo"


def run(sandbox, capsys, *argv):
    code = main(["--kubeconfig", str(sandbox.kubeconfig), *argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def alive_by_rows(sandbox) -> int:
    """ALIVE nodes counted from the rows, fetched with the kubernetes client's own service-proxy call and the Job's
    Ray token from its Secret in the data plane (as a KubeRay client sends it through a proxy)."""
    core = client.CoreV1Api(data_plane_api(sandbox, "rlark-gpu-a"))
    token = base64.b64decode(core.read_namespaced_secret(f"{JOB}-ray-token", "rlark-system").data["auth_token"])
    response = core.connect_get_namespaced_service_proxy_with_path(
        "demo-ppo-actor-ray-head:8265", "rlark-system", "api/v0/nodes", _preload_content=False,
        _headers={"X-Ray-Authorization": f"Bearer {token.decode()}"})
    rows = json.loads(response.data)["data"]["result"]["result"]
    return sum(1 for row in rows if row["state"] == "ALIVE")


@pytest.mark.ray
def test_demo_ppo_pods_logs_and_ray_alive_nodes(sandbox, env, capsys):
    access = ClusterAccess.open(str(sandbox.kubeconfig))
    deadline = time.monotonic() + 300
    status = {}
    while time.monotonic() < deadline:
        status = access.ray_status(access.job(JOB))
        if status.get("error") is None:
            break
        time.sleep(2)
    access.close()
    assert status.get("error") is None, status
    assert status["expected"] == 3 and status["status_text"]  # `ray status` text, verbatim

    for _attempt in range(3):
        before = alive_by_rows(sandbox)
        code, out, err = run(sandbox, capsys, "describe", "job", JOB)
        if before == alive_by_rows(sandbox):
            break
    assert code == 0, err
    assert f"  alive nodes {before} / expected 3  (Ray dashboard of demo-ppo (rlark-server))" in out
    pods = {line.split()[1]: line.split() for line in out.split("Pods:\n", 1)[1].split("Ray:", 1)[0].splitlines()[1:]}
    assert pods["demo-ppo-actor-0"][2] == "gpu-a1"

    code, out, err = run(sandbox, capsys, "logs", JOB, "--role", "actor")
    assert code == 0, err
    assert "[actor/demo-ppo-actor-0] RLINF_NODE_RANK: 0" in out.splitlines()
    code, out, _ = run(sandbox, capsys, "get", "pods", "-A", "-l", "rlark.io/task-name=demo-ppo-actor")
    assert out.splitlines()[1].split()[:5] == ["rlark-gpu-a", "demo-ppo-actor-0", "demo-ppo-actor", "Running", "gpu-a1"]
