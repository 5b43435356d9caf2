"""server_requests_per_s: the requests per second one TUI sends to rlark-server with 100 Running Jobs.

A sandbox without Ray (demo seed, demo-ppo deleted: the sandbox runs at most 100 Pods), 100 Jobs of one Pod each
whose prepare script sleeps (Running; 21 of them request a GPU, 7 on each GPU Node, so those Pods get nvidia-smi),
then the real app headless (`run_test`, 160x50) on the job list for a while: every request rlark-server answers
is counted (`RouteLog.served_count`: the alert rounds' data-plane lists and log reads, the usage topic's
PodMetrics lists and nvidia-smi execs, the list's PROGRESS reads, the header's data-plane probes). The first 10 s
(the first round of every read at once) are left out; the figure is the steady rate after them.
"""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path

JOBS = 100
GPU_JOBS = 21
GPU_NODES = ("gpu-a1", "gpu-a2", "gpu-a3")
"""The demo seed's GPU Nodes (8 GPUs each)."""
WARM_SECONDS = 10.0


def _job(name: str, gpu_node: str | None) -> dict:
    """One Pod that sleeps; with `gpu_node`, it requests one GPU there."""
    container = {"name": "main", "image": "registry.example.com/rlinf/rlinf:v0.2"}
    if gpu_node:
        container["resources"] = {"limits": {"nvidia.com/gpu": "1"}}
    return {"apiVersion": "rlinf.io/v1alpha1", "kind": "Job", "metadata": {"name": name},
            "spec": {"tasks": [{
                "name": "actor", "head": True, "role": "Actor", "agentType": "Kubernetes",
                "nodeSelector": {"kubernetes.io/hostname": gpu_node or "gpu-a3"}, "prepareScript": "sleep 3600",
                "runScript": "true", "kubernetes": {"workload": {"kind": "StatefulSet", "replicas": 1,
                                                                 "template": {"spec": {"containers": [container]}}}}}]}}


def run(workdir: Path, quick: bool) -> dict:
    from rlark_tui.actions import Actions
    from rlark_tui.app import RlarkApp
    from rlark_tui.cluster import ClusterAccess
    from rlark_tui.cluster.kinds import JOBS as JOBS_KIND
    from rlark_tui.model.views import Job
    from rlark_tui.sandbox import Sandbox
    from rlark_tui.sandbox.agent import AgentSettings

    measure = 20.0 if quick else 60.0
    with Sandbox(workdir / "usage-sandbox", seed="demo", agent_settings=AgentSettings(ray=False)) as sandbox:
        access = ClusterAccess.open(str(sandbox.kubeconfig), sandbox.context)
        actions = Actions(access, state_dir=workdir / "usage-state")
        access.delete(JOBS_KIND, "demo-ppo")
        for i in range(JOBS):
            actions.submit(_job(f"bench-usage-{i:03d}", GPU_NODES[i % 3] if i < GPU_JOBS else None))
        deadline = time.monotonic() + 180
        while sum(1 for raw in access.list(JOBS_KIND).items if Job(raw).phase == "Running"
                  and Job(raw).name.startswith("bench-usage-")) < JOBS:
            if time.monotonic() > deadline:
                raise RuntimeError("the 100 Jobs did not all become Running")
            time.sleep(1)
        app = RlarkApp(ClusterAccess.open(str(sandbox.kubeconfig), sandbox.context))

        async def drive() -> tuple[int, float]:
            async with app.run_test(size=(160, 50)) as pilot:
                await asyncio.sleep(WARM_SECONDS)
                start, began = sandbox.routes.served_count, time.monotonic()
                await asyncio.sleep(measure)
                await pilot.pause()
                return sandbox.routes.served_count - start, time.monotonic() - began

        try:
            served, took = asyncio.run(drive())
        finally:
            app.access.close()
            access.close()
    rate = served / took
    print(f"usage: {served} rlark-server requests in {took:.0f} s from one TUI with {JOBS} Running Jobs "
          f"({GPU_JOBS} with a GPU Pod)", file=sys.stderr)
    return {"server_requests_per_s": round(rate, 2)}
