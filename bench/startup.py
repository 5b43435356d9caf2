"""startup_first_list_s and list_rss_mb: the real `rlark` TUI process on a pseudo-terminal, as a user starts it.

startup_first_list_s: process start → a Job name painted, 1,000 Jobs (10,000 Pods); median of 5 after a warm-up
(quick: 1, no warm-up);
startup_first_list_cpu_s: the CPU time the app used until then (less sensitive to a loaded machine).
startup_first_list_delay100_s: the same first list while the sandbox's delay switch holds every answer 100 ms
(a per-request server delay, as a bastion far from its cluster sees); median of 3 (1 quick).
list_rss_mb: RSS of the app on 5,000 Jobs / 50,000 Pods once the first and the last Job rows show all their
Pods counted (`G` moves to the last row), after an uncounted run of the same on the first sandbox: the first lists
end at the first paint, and the modules loaded after it (the full client's, the reads') would otherwise be compiled
in the measured process, as an installed rlark never does (app_env), leaving it 10-15 MB more.
"""

from __future__ import annotations

import statistics
import time
from pathlib import Path

from bench.harness import PtyApp, cpu_seconds, rss_mb, start_sandbox

JOB_NAME = rb"scale-\d{5}"
LAST_ROW_KEY = b"G"


def _first_list(kubeconfig: Path, workdir: Path) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the app) from process start to a Job name on screen."""
    app = PtyApp(["--kubeconfig", str(kubeconfig)], workdir)
    try:
        wall = app.wait_for(JOB_NAME, 120)
        return wall, cpu_seconds(app.process.pid)
    finally:
        app.close()


def _settled_rss(pid: int, seconds: float = 2.0, limit: float = 30.0) -> float:
    """The RSS once it has stopped growing by more than 1 % for `seconds`; the last value after `limit`."""
    deadline = time.perf_counter() + limit
    last, stable_since = rss_mb(pid), time.perf_counter()
    while time.perf_counter() < deadline:
        time.sleep(0.25)
        now = rss_mb(pid)
        if now > last * 1.01:
            last, stable_since = now, time.perf_counter()
        elif time.perf_counter() - stable_since >= seconds:
            break
    return max(last, rss_mb(pid))


def _list_rss(kubeconfig: Path, workdir: Path, jobs: int, pods: int) -> float:
    per_job = pods // jobs
    app = PtyApp(["--kubeconfig", str(kubeconfig)], workdir)
    try:
        app.wait_for(rb"scale-00000 [^\n]*? %d/" % per_job, 300)
        mark = len(app.text)
        app.send(LAST_ROW_KEY)
        app.wait_for(rb"scale-%05d [^\n]*? %d/" % (jobs - 1, per_job), 120, since=mark)
        app.drain(0.5)
        return _settled_rss(app.process.pid)
    finally:
        app.close()


def run(workdir: Path, quick: bool) -> dict[str, float]:
    jobs, pods, runs = (200, 2000, 1) if quick else (1000, 10000, 5)
    sandbox = start_sandbox(workdir, f"scale:{jobs}:{pods}")
    try:
        if not quick:
            _first_list(sandbox.kubeconfig, workdir)  # warm the disk cache; not counted
        samples = [_first_list(sandbox.kubeconfig, workdir) for _ in range(runs)]
        sandbox.post("/_sandbox/faults", {"op": "delay", "args": {"seconds": 0.1}})
        delayed = [_first_list(sandbox.kubeconfig, workdir)[0] for _ in range(1 if quick else 3)]
        sandbox.post("/_sandbox/faults", {"op": "clear"})
        _list_rss(sandbox.kubeconfig, workdir, jobs, pods)  # compiles what the list loads after its first paint
        if quick:  # the same seed: its list's RSS on this sandbox, without the delay
            rss = _list_rss(sandbox.kubeconfig, workdir, jobs, pods)
    finally:
        sandbox.stop()
    if not quick:
        jobs, pods = 5000, 50000
        sandbox = start_sandbox(workdir, f"scale:{jobs}:{pods}")
        try:
            rss = _list_rss(sandbox.kubeconfig, workdir, jobs, pods)
        finally:
            sandbox.stop()
    return {"startup_first_list_s": round(statistics.median(wall for wall, _ in samples), 3),
            "startup_first_list_cpu_s": round(statistics.median(cpu for _, cpu in samples), 3),
            "startup_first_list_delay100_s": round(statistics.median(delayed), 3),
            "list_rss_mb": round(rss, 1)}
