"""alert_latency_s: fault to `rlark watch -o json` line. A sandbox without Ray (demo seed; its agent runs each
Pod's prepare script) and a real `rlark watch -A -o json` in its own process; Jobs whose script prints the time
and then RLinf's crash chain and sleeps (run-crashed, from the Header log: the phase stays Running), and Jobs
set Failed the way the controller does (job-failed, from the watch). Latency: the watch line's arrival minus the
fault's own time (the time the script printed; the store write). p50 and p95 over every fault (6 of each kind;
quick: 1). Also status_tmux_s_p95: the wall time of `rlark status --tmux` as tmux runs it (a new process each
time; 20 runs, quick: 2)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

from bench.harness import percentile

CRASH = ("Exception occurred while running EmbodiedFSDPActor's function run_training: exception is "
         "torch.OutOfMemoryError: CUDA out of memory.")


def _job(name: str, script: str) -> dict:
    return {"apiVersion": "rlinf.io/v1alpha1", "kind": "Job", "metadata": {"name": name},
            "spec": {"tasks": [{
                "name": "actor", "head": True, "role": "Actor", "agentType": "Kubernetes",
                "nodeSelector": {"kubernetes.io/hostname": "gpu-a3"}, "prepareScript": script, "runScript": "true",
                "kubernetes": {"workload": {"kind": "StatefulSet", "replicas": 1, "template": {"spec": {
                    "containers": [{"name": "main", "image": "registry.example.com/rlinf/rlinf:v0.2"}]}}}}}]}}


def run(workdir: Path, quick: bool) -> dict:
    from rlark_sandbox import Sandbox
    from rlark_sandbox.agent import AgentSettings
    from rlark_tui.cluster import ClusterAccess
    from rlark_tui.flow.actions import Actions

    faults = 1 if quick else 6
    with Sandbox(workdir / "alerts-sandbox", seed="demo", agent_settings=AgentSettings(ray=False)) as sandbox:
        state = workdir / "alerts-state"
        env = {**os.environ, "KUBECONFIG": str(sandbox.kubeconfig), "RLARK_STATE_DIR": str(state),
               "RLARK_CONFIG": str(workdir / "alerts-no-config.yaml")}
        watch = subprocess.Popen([sys.executable, "-m", "rlark_tui", "watch", "-A", "-o", "json"], env=env,
                                 stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        arrived: dict[tuple[str, str], float] = {}

        def read() -> None:
            for line in watch.stdout:
                record = json.loads(line)
                if record["state"] == "firing":
                    arrived.setdefault((record["rule"], record["job"]), time.time())

        threading.Thread(target=read, daemon=True).start()
        access = ClusterAccess.open(str(sandbox.kubeconfig), sandbox.context)
        actions = Actions(access, state_dir=state)
        fault_at: dict[tuple[str, str], float] = {}
        try:
            time.sleep(3)  # the watch's first list and round
            crashed = [f"bench-crash-{i}" for i in range(faults)]
            failed = [f"bench-failed-{i}" for i in range(faults)]
            for name in crashed:
                actions.submit(_job(name, f"echo \"FAULT_AT $(date +%s.%N)\"; echo \"{CRASH}\"; sleep 600"))
            for name in failed:
                actions.submit(_job(name, "sleep 600"))
            for name in failed:
                _wait(lambda n=name: access.job(n).phase == "Running", 60)
                time.sleep(1.5)

                def fail(job: dict) -> dict:
                    job["status"] = {**(job.get("status") or {}), "phase": "Failed", "message": "bench"}
                    return job
                fault_at[("job-failed", name)] = time.time()
                sandbox.call(lambda n=name: sandbox.store.mutate("jobs", n, fail))
            for name in crashed:
                _wait(lambda n=name: ("run-crashed", n) in arrived, 90)
                fault_at[("run-crashed", name)] = _printed_at(access, name)
            _wait(lambda: all(key in arrived for key in fault_at), 90)
        finally:
            watch.terminate()
            watch.wait(10)
            access.close()
        latencies = [arrived[key] - at for key, at in fault_at.items() if key in arrived and at]
        status = _status_times(env, 2 if quick else 20)
    return {"status_tmux_s_p95": round(percentile(status, 95), 3),"alert_latency_s_p50": round(percentile(latencies, 50), 2),
            "alert_latency_s_p95": round(percentile(latencies, 95), 2),
            "alert_faults": len(latencies)}


def _status_times(env: dict, runs: int) -> list[float]:
    """Wall time of `rlark status --tmux` (a process each, as tmux runs it), the cache refreshed meanwhile."""
    times = []
    for _ in range(runs):
        begin = time.perf_counter()
        subprocess.run([sys.executable, "-m", "rlark_tui", "status", "--tmux"], env=env, capture_output=True,
                       timeout=10, check=False)
        times.append(time.perf_counter() - begin)
        time.sleep(0.2)
    return times


def _printed_at(access, name: str) -> float:
    from rlark_tui.cluster.http import tail_bytes
    from rlark_tui.cluster.metrics import read_log

    for _, text in read_log(access, "rlark-gpu-a", f"{name}-actor-0", 50, tail_bytes(50)).lines:
        if text.startswith("FAULT_AT "):
            return float(text.split()[1])
    return 0.0


def _wait(predicate, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if predicate():
                return
        except Exception:  # noqa: BLE001 - not there yet (a Job being created)
            pass
        time.sleep(0.2)
