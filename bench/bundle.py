"""bundle_s, bundle_rss_mb: `rlark bundle` (raydash.bundle.write_bundle, issue 34 item 5) of a Job whose four Pods
logged 200 MB in all (quick: 5 MB), in a process of its own. The platform is a stand-in that serves the Job, its
Pod CRs and data-plane Pods and each Pod's log as generated lines (RLinf's metric-table rows, with a secret env value
echoed every 1,000th line), so what is timed is rlark's part: every line masked, each log through its spool file,
the archive compressed and digested; the HTTP reads of a real platform are not. Each log is under the 64 MiB
budget, so the bundle holds every byte of it (checked, and that the secret is in no member). bundle_rss_mb is the
process's peak RSS (ru_maxrss; target 300 MB)."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import tarfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from bench.harness import REPO

PODS = 4
FULL_BYTES = 200 * 1000 * 1000
QUICK_BYTES = 5 * 1000 * 1000
SECRET = "zqBenchSecret8472"
JOB = "bench-bundle"
LINE = ("2026-12-02T10:00:00.{n:09d}Z │actor/grad_norm={g}.538   │actor/lr=1.00e-04   │actor/policy_loss=0.{p:03d}"
        "   │rollout/rewards=0.{p:03d}   │time/step=3.{g}1 │")


def _job() -> dict[str, Any]:
    container = {"name": "main", "image": "rlinf", "env": [{"name": "HF_TOKEN", "value": SECRET}]}
    return {"apiVersion": "rlinf.io/v1alpha1", "kind": "Job", "metadata": {"name": JOB, "uid": "u-bench"},
            "spec": {"tasks": [{"name": "actor", "head": True, "kubernetes": {"workload": {"template": {"spec": {
                "containers": [container]}}}}}]}}


def _cr(rank: int) -> dict[str, Any]:
    return {"metadata": {"name": f"cr-{rank}", "namespace": "rlark-gpu-a",
                         "labels": {"rlark.io/task-name": f"{JOB}-actor"}},
            "spec": {"podName": f"{JOB}-actor-{rank}", "podNamespace": "rlark-system", "taskName": f"{JOB}-actor"},
            "status": {"phase": "Running", "node": f"gpu-a{rank}"}}


def _pod(name: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "rlark-system"},
            "spec": {"containers": [{"name": "main", "env": [{"name": "HF_TOKEN", "value": SECRET}]}]},
            "status": {"phase": "Running", "containerStatuses": [{"name": "main", "restartCount": 0}]}}


class Platform:
    """ClusterAccess as write_bundle uses it, with `per_pod` bytes of log per Pod."""

    def __init__(self, per_pod: int) -> None:
        self.per_pod = per_pod
        self.context = "bench"
        self.server_problem = "a stand-in: no rlark-server"
        self.config = type("Config", (), {"ray_token": None})()
        self.ray_tokens = None

    def get(self, kind, name, namespace=None):
        return _job()

    def job(self, name):
        from rlark_tui.model.objects import Job
        return Job(_job())

    def job_tasks(self, name):
        return [{"metadata": {"name": f"{JOB}-actor", "namespace": "rlark-gpu-a"}}]

    def job_pods(self, name, tasks=None):
        return [_cr(rank) for rank in range(PODS)]

    def data_plane_pod(self, cluster, pod, namespace="rlark-system"):
        return _pod(pod)

    def data_plane_events(self, cluster, pod, namespace="rlark-system"):
        return []

    def pod_log(self, cluster, pod, **kwargs) -> Iterator[str]:
        if kwargs.get("previous"):
            return iter(())
        return self._lines(self.per_pod if kwargs.get("tail") is None else 0)

    def _lines(self, size: int) -> Iterator[str]:
        written, n = 0, 0
        while written < size:
            line = LINE.format(n=n, g=n % 7, p=n % 997)
            if n % 1000 == 999:
                line += f" login with {SECRET}"
            written += len(line.encode()) + 1
            n += 1
            yield line

    def ray_dashboard(self, job):
        return None

    def secret_reads(self):
        raise AssertionError("the stand-in's Job references no Secret")

    def close(self) -> None:
        pass


def child(workdir: Path, total: int) -> dict[str, Any]:
    from rlark_tui.raydash.bundle import write_bundle

    path = workdir / "bench.tar.gz"
    started = time.perf_counter()
    manifest = write_bundle(Platform(total // PODS), JOB, path, workdir / "state")  # type: ignore[arg-type]
    seconds = time.perf_counter() - started
    logs = [m for m in manifest.members if m.read is not None]
    return {"seconds": seconds, "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            "read": sum(m.read or 0 for m in logs), "left_out": sum(m.left_out for m in logs),
            "size": os.path.getsize(path), "path": str(path)}


def run(workdir: Path, quick: bool) -> dict[str, float]:
    total = QUICK_BYTES if quick else FULL_BYTES
    done = subprocess.run([sys.executable, "-m", "bench.bundle", str(workdir), str(total)], cwd=REPO,
                          capture_output=True, text=True, check=True)
    result = json.loads(done.stdout.splitlines()[-1])
    assert result["read"] >= total * 0.99 and result["left_out"] == 0, result  # less the masked secret's bytes
    with tarfile.open(result["path"]) as tar:
        for member in tar:
            handle = tar.extractfile(member)
            while handle is not None and (chunk := handle.read(1 << 20)):
                assert SECRET.encode() not in chunk, member.name
    print(f"bundle: {result['read'] / 1e6:,.0f} MB of logs from {PODS} Pods in {result['seconds']:.1f} s, archive "
          f"{result['size'] / 1e6:,.1f} MB, peak RSS {result['rss_mb']:.0f} MB")
    return {"bundle_s": round(result["seconds"], 2), "bundle_rss_mb": round(result["rss_mb"], 1)}


if __name__ == "__main__":
    print(json.dumps(child(Path(sys.argv[1]), int(sys.argv[2]))))
