"""stacks_s: `rlark stacks` of a hung Job of 16 ranks on 4 Pods (issue 34 item 1), wall time of the command as a
user runs it, against the sandbox with real Ray: `rlark sandbox --seed demo` (demo-ppo deleted at once), a Job of
four Pods on three Nodes (the Header, two rollout and one env Pod, each a Ray node) running the demo workload with 16 `ActorGroup:<r>`
ranks round the four nodes and its `hang:5` fault, so rank 5 sits in next_batch and the other 15 wait in allreduce.
Once the stacks show that ([15, 1]), `python -m rlark_tui stacks JOB -o json` is timed 3 times (median): Ray's
State API, then `py-spy dump` in each Pod through the platform's exec (profiling off, as the platform's head
script starts Ray), 8 at once. Run it under `flock /work/wt/.ray.lock`; `--quick` (CI's smoke run) skips it.

stacks_group_ms: the pure part of the same for 16 ranks (quick: the same): each rank's dump parsed, the ranks
grouped by main-thread frames, the odd ones named, every text cleaned and the Job's secret values masked
(telemetry.stacks.masked), and the text rendered, from the hung demo run's dumps recorded in the Ray sandbox
(tests/raydebug/data/hang): rank r is the recording of rank r % 4 with its own PID, on one of four Pods, so 4 of
the 16 sit in next_batch. Median of 15 (5 quick) after one warm-up, wall clock and the CPU time of the timing
thread."""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

from bench.harness import REPO, app_env, start_sandbox
from rlark_tui.telemetry import stacks

RANKS = 16
ODD = 5
JOB = "bench-stacks"
RECORDED = Path(__file__).resolve().parent.parent / "tests" / "raydebug" / "data" / "hang"
KNOWN = ("s3cr3t-token-value", "hf_Zq7RkV2pW9xT4mN8bL3cY6dF1gH5jK0s")
IMAGE = "registry.rlark.local/rlinf/rlinf-sandbox@sha256:" + "ab" * 32


def dumps(ranks: int) -> list[tuple[str, str, int, str, str]]:
    """(name, class, pid, pod, dump text) of `ranks` ranks made from the recorded four."""
    recorded = json.loads((RECORDED / "workers.json").read_text())
    made = []
    for rank in range(ranks):
        source = recorded[rank % len(recorded)]
        pid = 20_000 + rank
        text = (RECORDED / f"dump-{source['pid']}.txt").read_text().replace(str(source["pid"]), str(pid))
        made.append((f"ActorGroup:{rank}", source["class"], pid, f"bench-actor-{rank // 4}", text))
    return made


def take(made: list[tuple[str, str, int, str, str]]) -> tuple[stacks.Stacks, str]:
    workers = [stacks.Worker(name, cls, pid, pod, f"node-{pod[-1]}", stacks.parse_dump(text))
               for name, cls, pid, pod, text in made]
    found = stacks.masked(stacks.group("bench-hang", "py-spy", workers), KNOWN)
    return found, stacks.render(found)


def grouping(quick: bool) -> dict[str, float]:
    made = dumps(RANKS)
    found, _ = take(made)
    assert [g.count for g in found.groups] == [12, 4] and len(found.outliers) == 4, found.groups
    wall, cpu = [], []
    for _ in range(5 if quick else 15):
        started, started_cpu = time.perf_counter(), time.thread_time()
        take(made)
        wall.append((time.perf_counter() - started) * 1000)
        cpu.append((time.thread_time() - started_cpu) * 1000)
    print(f"stacks: grouping {RANKS} recorded ranks on 4 Pods, {len(found.groups)} groups; {stacks.summary(found)}")
    return {"stacks_group_ms": round(statistics.median(wall), 2), "stacks_group_cpu_ms": round(statistics.median(cpu), 2)}


def _task(name: str, hosts: str, replicas: int, env: list[dict], run: str = "") -> dict:
    task = {"name": name, "role": "Actor" if run else name.title(), "agentType": "Kubernetes",
            "nodeSelector": {"kubernetes.io/hostname": hosts},
            "kubernetes": {"workload": {"kind": "StatefulSet", "replicas": replicas, "template": {"spec": {
                "containers": [{"name": "main", "image": IMAGE, "env": env}]}}}}}
    if run:
        task.update(head=True, runScript=run)
    return task


def _manifest(output: Path) -> dict:
    # the ranks run in the workers' raylets, so every Pod carries the fault's env, not only the driver's
    env = [{"name": "RLARK_DEMO_RANKS", "value": str(RANKS)}, {"name": "RLARK_DEMO_FAULT", "value": f"hang:{ODD}"}]
    run = (f"python -m rlark_sandbox.demo_workload --run-id {JOB} --code-ref x --output {output} --steps 50 "
           "--step-seconds 0.2")
    return {"apiVersion": "rlinf.io/v1alpha1", "kind": "Job", "metadata": {"name": JOB},
            "spec": {"tasks": [_task("actor", "gpu-a1", 1, env, run), _task("rollout", "gpu-a2,gpu-a3", 2, env),
                               _task("env", "gpu-a2", 1, env)]}}  # a Task's Pods each on a Node of their own


def _stacks(kubeconfig: Path, env: dict[str, str]) -> tuple[float, dict | None, str]:
    """(seconds, the JSON printed or None, stderr) of one `rlark stacks JOB -o json` in a process of its own."""
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "rlark_tui", "--kubeconfig", str(kubeconfig), "stacks", JOB,
                           "-o", "json"], cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    seconds = time.perf_counter() - started
    return seconds, json.loads(done.stdout) if done.returncode == 0 else None, done.stderr.strip()


def live(workdir: Path) -> dict[str, float]:
    from rlark_tui.cluster import ClusterAccess
    from rlark_tui.cluster.kinds import JOBS

    sandbox = start_sandbox(workdir, "demo", agent=True)
    env = app_env(workdir)
    try:
        access = ClusterAccess.open(str(sandbox.kubeconfig), sandbox.context)
        try:
            access.delete(JOBS, "demo-ppo")  # its three Ray nodes would share the two cores
            access.create(JOBS, _manifest(workdir / "output"))
        finally:
            access.close()
        _stacks(sandbox.kubeconfig, env)  # warms the bytecode cache (app_env's private one)
        deadline, found, why = time.monotonic() + 900, None, ""
        while time.monotonic() < deadline:
            _, found, why = _stacks(sandbox.kubeconfig, env)
            counts = [g["count"] for g in found["groups"]] if found else []
            if counts == [RANKS - 1, 1]:
                break
            why = why or f"groups {counts}, errors {found['errors'] if found else []}"
            time.sleep(2)
        else:
            raise RuntimeError(f"the {RANKS} ranks of {JOB} never hung as set: {why[-300:]}")
        assert found is not None and [o["name"] for o in found["outliers"]] == [f"ActorGroup:{ODD}"], found
        assert found["source"] == "py-spy" and not found["errors"], found
        pods = {w["pod"] for g in found["groups"] for w in g["workers"]}
        assert len(pods) == 4, pods
        times = []
        for _ in range(3):
            seconds, again, why = _stacks(sandbox.kubeconfig, env)
            assert again is not None and sum(g["count"] for g in again["groups"]) == RANKS, why or again
            times.append(seconds)
    finally:
        sandbox.stop()
    outlier = found["outliers"][0]
    print(f"stacks: `rlark stacks` of {RANKS} hung ranks on {len(pods)} Pods (py-spy in the Pods): "
          f"{', '.join(f'{t:.2f}' for t in times)} s; {outlier['name']} is elsewhere: {outlier['frame']}")
    return {"stacks_s": round(statistics.median(times), 2)}


def run(workdir: Path, quick: bool) -> dict[str, float]:
    results = grouping(quick)
    if not quick:
        results.update(live(workdir))
    return results
