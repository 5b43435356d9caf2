"""kubectl_get_jobs_s, rlark_get_jobs_s, get_jobs_ratio: `kubectl get rljob -A` vs `rlark get jobs -A`
against the same 5,000-Job sandbox (200 quick), in the same run; median of 5 each after a warm-up, runs
interleaved (quick: one each, no warm-up).
kubectl_get_jobs_cpu_s, rlark_get_jobs_cpu_s: the CPU time (user + system) of those processes, median of the
same runs (on a loaded machine the wall times grow with the others' work; the CPU times much less)."""

from __future__ import annotations

import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

from bench.harness import REPO, app_env, start_sandbox


def _timed(argv: list[str], expected_lines: int, env: dict[str, str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of one run."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    result = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=300, env=env)
    elapsed = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    if result.returncode != 0:
        raise RuntimeError(f"{' '.join(argv[:3])}… exited {result.returncode}: "
                           f"{result.stderr.strip().splitlines()[-1:] or ''}")
    lines = len(result.stdout.splitlines())
    if lines != expected_lines:
        raise RuntimeError(f"{' '.join(argv[:3])}… printed {lines} lines, expected {expected_lines}")
    return elapsed, cpu


def run(workdir: Path, quick: bool) -> dict[str, float]:
    jobs = 200 if quick else 5000
    sandbox = start_sandbox(workdir, f"scale:{jobs}:{jobs * 10}")
    kubectl = ["kubectl", "--kubeconfig", str(sandbox.kubeconfig), "get", "rljob", "-A"]
    rlark = [sys.executable, "-m", "rlark_tui", "--kubeconfig", str(sandbox.kubeconfig), "get", "jobs", "-A"]
    expected_lines = jobs + 1
    env = app_env(workdir)
    try:
        if not quick:  # warm-up (disk cache, sandbox first list); not counted
            _timed(kubectl, expected_lines, env)
            _timed(rlark, expected_lines, env)
        kubectl_runs, rlark_runs = [], []
        for _ in range(1 if quick else 5):
            kubectl_runs.append(_timed(kubectl, expected_lines, env))
            rlark_runs.append(_timed(rlark, expected_lines, env))
    finally:
        sandbox.stop()
    kubectl_s, rlark_s = (statistics.median(wall for wall, _ in runs) for runs in (kubectl_runs, rlark_runs))
    kubectl_cpu, rlark_cpu = (statistics.median(cpu for _, cpu in runs) for runs in (kubectl_runs, rlark_runs))
    return {"kubectl_get_jobs_s": round(kubectl_s, 3), "rlark_get_jobs_s": round(rlark_s, 3),
            "get_jobs_ratio": round(kubectl_s / rlark_s, 2),
            "kubectl_get_jobs_cpu_s": round(kubectl_cpu, 3), "rlark_get_jobs_cpu_s": round(rlark_cpu, 3)}
