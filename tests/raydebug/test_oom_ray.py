"""issue 34 item 8 on real Ray, the two OOMs side by side (one wait for both Ray starts): rank 1 raises PyTorch's
CUDA OOM (the demo workload's `cudaoom:1`; the driver prints RLinf's crash chain with the rank's traceback), and
rank 1, on a worker Pod with a 2 GiB memory limit, grows past it (`hostoom:1`; the sandbox's kubelet kills the
container's processes, Ray's workers with them, and says OOMKilled; Ray loses that node). `rlark diagnose -o json`
names ActorGroup:1, its Pod and `cuda-oom` with the OutOfMemoryError line, and the OOMKilled Pod with `host-oom`."""

from __future__ import annotations

import json
from contextlib import ExitStack

import pytest

from tests.agent.helpers import wait_for
from tests.clirun import cli_runner
from tests.raydebug.faulty import faulty_job

pytestmark = pytest.mark.ray
CUDA = "diagnose-cudaoom"
HOST = "diagnose-hostoom"
TORCH_OOM = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of "


@pytest.fixture(scope="module")
def both(ray_sandbox, tmp_path_factory):
    with ExitStack() as stack:
        stack.enter_context(faulty_job(ray_sandbox, tmp_path_factory.mktemp("cuda"), CUDA, "cudaoom:1"))
        stack.enter_context(faulty_job(ray_sandbox, tmp_path_factory.mktemp("host"), HOST, "hostoom:1",
                                       worker_memory="2Gi"))
        yield ray_sandbox


def test_diagnose_names_the_cuda_oom_rank_and_the_oomkilled_pod(both, capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("RLARK_STATE_DIR", str(tmp_path / "state"))
    rlark = cli_runner(both.kubeconfig, capsys)
    found: dict[str, dict] = {}

    def both_failed():
        for name, cause in ((CUDA, "cuda-oom"), (HOST, "host-oom")):
            if name not in found:
                done = rlark("--readonly", "diagnose", name, "-o", "json")
                failure = json.loads(done.out)["first_failure"] if done.code == 0 else None
                if failure and failure["cause"] == cause:
                    found[name] = failure
        return len(found) == 2

    wait_for(both_failed, timeout=600, interval=1, what="both OOMs in diagnose")
    cuda, host = found[CUDA], found[HOST]
    assert (cuda["worker"], cuda["pod"], cuda["node"]) == ("ActorGroup:1", f"{CUDA}-actor-0", "gpu-a3"), cuda
    assert cuda["summary"].startswith(f"ActorGroup:1 failed first (cuda-oom): {TORCH_OOM}")
    assert any(line.startswith(TORCH_OOM) for line in cuda["evidence"]), cuda["evidence"]
    assert any("in step" in line and "demo_workload.py" in line for line in cuda["evidence"])
    pod = f"{HOST}-rollout-0"
    assert (host["worker"], host["pod"], host["node"]) == (pod, pod, "gpu-a2"), host
    assert host["summary"].startswith(f"{pod} failed first (host-oom): container main exited 137 (OOMKilled)")
