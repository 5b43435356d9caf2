"""server_requests_per_s: the requests per second one TUI sends to rlark-server with 100 Running Jobs.

A sandbox without Ray (demo seed, demo-ppo deleted: the sandbox runs at most 100 Pods), 100 Jobs of one Pod each
whose prepare script sleeps (Running; 21 of them request a GPU, 7 on each GPU Node, so those Pods get nvidia-smi),
then the real app headless (`run_test`, 160x50) on the job list for a while: every request rlark-server answers
is counted (`RouteLog.served_count`: the alert rounds' data-plane lists and log reads, the usage topic's
PodMetrics lists and nvidia-smi execs, the list's PROGRESS reads, the header's data-plane probes). The first 10 s
(the first round of every read at once) are left out; the figure is the steady rate after them, over 60 s (quick:
40 Jobs, 8 with a GPU, on a 160x30 screen; the first 2 s, then 5 s).

alert_latency_offscreen_s_max: meanwhile FAULTS of the Jobs, last in the list and so never on screen, print the time
and RLinf's crash chain (their phase stays Running) once the bench drops a file for them, one every FAULT_SPACING
seconds; the figure is the longest time from the printed time to the TUI's alert book holding their run-crashed
alert (issue 27: within 30 s for every Job in scope, with 100 Running Jobs). That is the time to the next read of the
Job's Header log, so 5 faults sample the read cycle at 5 moments, fixed by FAULT_SPACING against it: a tree that
reads each log every 27 s may show 20 s, and one that reads it every 25 s, 25 s.

offscreen_read_gap_s_max: the longest time, over the measured window, between two reads of a faulty Job's Header log
(or from the last read to the window's end): what a fault at the worst moment waits before any round can see it.
"""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path

JOBS = 100
GPU_JOBS = 21
SIZE, QUICK_SIZE = (160, 50), (160, 30)
QUICK_JOBS, QUICK_GPU_JOBS = 40, 8
"""The quick run's Jobs: still more than its 30-row screen shows, so the faulty last ones stay off it. With 40
Running Jobs each Header log is read every LOG_SECONDS (with 60, every 15 s), so the smoke run waits less for
its alert."""
GPU_NODES = ("gpu-a1", "gpu-a2", "gpu-a3")
"""The demo seed's GPU Nodes (8 GPUs each)."""
WARM_SECONDS = 10.0
FAULTS = 5
FAULT_SPACING = 9.0
CRASH = ("Exception occurred while running EmbodiedFSDPActor's function run_training: exception is "
         "torch.OutOfMemoryError: CUDA out of memory.")


def _fault_script(trigger: Path) -> str:
    """Sleeps until `trigger` exists, then prints the time and RLinf's first crash line, and sleeps on."""
    return (f"while [ ! -e {trigger} ]; do sleep 0.5; done; echo \"FAULT_AT $(date +%s.%N)\"; echo \"{CRASH}\"; "
            "sleep 3600")


def _job(name: str, gpu_node: str | None, script: str = "sleep 3600") -> dict:
    """One Pod that runs `script` (sleeps); with `gpu_node`, it requests one GPU there."""
    container = {"name": "main", "image": "registry.example.com/rlinf/rlinf:v0.2"}
    if gpu_node:
        container["resources"] = {"limits": {"nvidia.com/gpu": "1"}}
    return {"apiVersion": "rlinf.io/v1alpha1", "kind": "Job", "metadata": {"name": name},
            "spec": {"tasks": [{
                "name": "actor", "head": True, "role": "Actor", "agentType": "Kubernetes",
                "nodeSelector": {"kubernetes.io/hostname": gpu_node or "gpu-a3"}, "prepareScript": script,
                "runScript": "true", "kubernetes": {"workload": {"kind": "StatefulSet", "replicas": 1,
                                                                 "template": {"spec": {"containers": [container]}}}}}]}}


def run(workdir: Path, quick: bool) -> dict:
    from rlark_sandbox import Sandbox
    from rlark_sandbox.agent import AgentSettings
    from rlark_tui.cluster import ClusterAccess
    from rlark_tui.cluster.kinds import JOBS as JOBS_KIND
    from rlark_tui.flow.actions import Actions
    from rlark_tui.model.objects import Job
    from rlark_tui.tui.app import RlarkApp

    warm, measure = (2.0, 5.0) if quick else (WARM_SECONDS, 60.0)
    jobs, gpu_jobs, size = (QUICK_JOBS, QUICK_GPU_JOBS, QUICK_SIZE) if quick else (JOBS, GPU_JOBS, SIZE)
    with Sandbox(workdir / "usage-sandbox", seed="demo", agent_settings=AgentSettings(ray=False)) as sandbox:
        access = ClusterAccess.open(str(sandbox.kubeconfig), sandbox.context)
        actions = Actions(access, state_dir=workdir / "usage-state")
        access.delete(JOBS_KIND, "demo-ppo")
        triggers = workdir / "usage-faults"
        triggers.mkdir(exist_ok=True)
        faulty = [f"bench-usage-{i:03d}" for i in range(jobs - FAULTS, jobs)]
        for i in range(jobs):
            name = f"bench-usage-{i:03d}"
            actions.submit(_job(name, GPU_NODES[i % 3] if i < gpu_jobs else None,
                                _fault_script(triggers / name) if name in faulty else "sleep 3600"))
        deadline = time.monotonic() + 180
        while sum(1 for raw in access.list(JOBS_KIND).items if Job(raw).phase == "Running"
                  and Job(raw).name.startswith("bench-usage-")) < jobs:
            if time.monotonic() > deadline:
                raise RuntimeError(f"the {jobs} Jobs did not all become Running")
            time.sleep(1)
        app = RlarkApp(ClusterAccess.open(str(sandbox.kubeconfig), sandbox.context))

        alerted: dict[str, float] = {}
        shown: list[str] = []

        def note_alerts() -> None:
            index = app.index
            state = index.snapshot.alerts.get("all") if index is not None else None
            for alert in getattr(getattr(state, "book", None), "alerts", {}).values():
                if alert.rule == "run-crashed" and alert.job in faulty:
                    alerted.setdefault(alert.job, time.time())

        async def drive() -> tuple[int, float, float]:
            sandbox.routes.keep_paths()
            async with app.run_test(size=size) as pilot:
                await asyncio.sleep(warm)
                start, began = sandbox.routes.served_count, time.monotonic()
                dropped = 0
                while (left := measure - (time.monotonic() - began)) > 0:
                    if dropped < FAULTS and time.monotonic() - began >= (dropped + 0.5) * FAULT_SPACING:
                        if ("progress", faulty[dropped]) in app.reconciler.subscriptions:
                            shown.append(faulty[dropped])
                        (triggers / faulty[dropped]).touch()
                        dropped += 1
                    note_alerts()
                    await asyncio.sleep(min(0.2, left))
                await pilot.pause()
                served, took = sandbox.routes.served_count - start, time.monotonic() - began
                deadline = time.monotonic() + 60
                while len(alerted) < dropped and time.monotonic() < deadline:
                    note_alerts()
                    await asyncio.sleep(0.2)
                return served, began, took

        try:
            served, began, took = asyncio.run(drive())
            given_up = time.time()
            printed = {name: at for name in faulty if (at := _printed_at(access, name))}
            missed = [name for name in printed if name not in alerted]
            # a fault never alerted counts with the time waited for it (a lower bound, said in the line below)
            latencies = [alerted.get(name, given_up) - at for name, at in printed.items()]
        finally:
            app.access.close()
            access.close()
    rate = served / took
    gap = _read_gap(sandbox.routes.served_paths, faulty, began, began + took)
    print(f"usage: {served} rlark-server requests in {took:.0f} s from one TUI with {jobs} Running Jobs "
          f"({gpu_jobs} with a GPU Pod); off-screen crash to alert: "
          + ", ".join(f"{t:.1f} s" for t in latencies) + (f"; never alerted: {', '.join(missed)}" if missed else "")
          + (f"; on screen after all: {', '.join(shown)}" if shown else "")
          + f"; their Header logs read at most {gap:.1f} s apart", file=sys.stderr)
    return {"server_requests_per_s": round(rate, 2),
            "alert_latency_offscreen_s_max": round(max(latencies), 1) if latencies else None,
            "offscreen_read_gap_s_max": round(gap, 1)}


def _read_gap(paths: list[tuple[float, str]], jobs: list[str], start: float, end: float) -> float:
    """The longest time between two reads of one of `jobs`' Header logs that ends within [start, end], counting the
    time from a Job's last read to `end`, and from `start` to its first read when none came before."""
    longest = 0.0
    for name in jobs:
        suffix = f"/pods/{name}-actor-0/log"
        times = sorted(at for at, path in paths if path.endswith(suffix) and at <= end)
        marks = [*([] if times and times[0] <= start else [start]), *times, end]
        longest = max(longest, *(later - earlier for earlier, later in zip(marks, marks[1:]) if later >= start))
    return longest


def _printed_at(access, name: str) -> float:
    from rlark_tui.cluster.http import tail_bytes
    from rlark_tui.cluster.metrics import read_log

    for _, text in read_log(access, "rlark-gpu-a", f"{name}-actor-0", 50, tail_bytes(50)).lines:
        if text.startswith("FAULT_AT "):
            return float(text.split()[1])
    return 0.0
