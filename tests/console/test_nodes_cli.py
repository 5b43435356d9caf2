"""`rlark describe node` and `rlark get clusters` on the shared sandbox: gpu-a1 carries demo-ppo's actor Worker and
its reserved GPU, rlark-gpu-a its GPUs free/total by model; kubectl reads the same Node CR."""

from __future__ import annotations

import json
import shutil
import subprocess
import time

import pytest

from tests.clirun import cli_runner


@pytest.fixture
def rlark(sandbox, capsys, env):
    return cli_runner(sandbox.kubeconfig, capsys)


def _actor_scheduled(rlark) -> str:
    out = ""

    def ready() -> bool:
        nonlocal out
        out = rlark("describe", "node", "gpu-a1").out
        return "demo-ppo-actor-0" in out
    deadline = time.monotonic() + 60
    while not ready():
        assert time.monotonic() < deadline, "demo-ppo-actor-0 never showed on gpu-a1"
        time.sleep(0.5)
    return out


def test_describe_node_shows_workers_and_reserved_gpus(rlark, sandbox):
    before = len(sandbox.unknown_routes)
    out = _actor_scheduled(rlark)
    worker = next(line for line in out.splitlines() if "demo-ppo-actor-0" in line).split()
    assert worker[1:3] == ["demo-ppo", "Actor"] and "nvidia.com/gpu=1" in worker[-1]
    gpu = next(line for line in out.splitlines() if line.strip().startswith("nvidia.com/gpu")).split()
    assert gpu[3] == "1"  # reserved by the actor's request; capacity, allocatable, reserved, free
    assert int(gpu[4]) == int(gpu[2]) - 1
    assert "gpu-model:" in out and "NVIDIA H100" in out and "DiskPressure: no" in out
    kubectl = shutil.which("kubectl")
    if kubectl:
        node = json.loads(subprocess.run(
            [kubectl, "--kubeconfig", str(sandbox.kubeconfig), "get", "nodes.rlinf.io", "gpu-a1", "-n", "rlark-gpu-a",
             "-o", "json"], capture_output=True, text=True, timeout=30, check=True).stdout)
        assert node["status"]["used"]["nvidia.com/gpu"] in ("1", 1) and node["status"]["allocatable"][
            "nvidia.com/gpu"] in (gpu[2], int(gpu[2]))
    missing = rlark("describe", "node", "nowhere")
    assert missing.code == 1 and "not found" in missing.err
    assert rlark("get", "clusters").code == 0
    assert sandbox.unknown_routes[before:] == []


def test_get_clusters_gpus_free_total(rlark):
    _actor_scheduled(rlark)
    out = rlark("get", "clusters")
    assert out.code == 0, out.err
    row = next(line for line in out.out.splitlines() if line.startswith("rlark-gpu-a"))
    assert "3/3" in row and "NVIDIA H100 80GB HBM3" in row
    data = {c["cluster"]: c for c in json.loads(rlark("get", "clusters", "-o", "json").out)}
    gpus = data["rlark-gpu-a"]["gpus"][0]
    assert gpus["free"] < gpus["total"]  # the demo's actor and rollout reserve some
    assert data["rlark-edge-b"]["nodesTotal"] == 2
    assert rlark("get", "clusters", "gpu-a", "-o", "name").out.split() == ["cluster/rlark-gpu-a"]
