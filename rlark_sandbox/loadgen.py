"""Log load for benchmarks and tests: a Job of N Running Pods whose `main` logs grow at a given total rate.

`LoadGen(store, logs)` lives on the sandbox loop. `start(pods=10, lines_per_s=20000, seconds=60, job="loadgen",
width=100)` creates the Job if it is absent (one task `load`, N Running Pod CRs and their data-plane pods in the
first cluster of the store, empty logs), then appends lines every TICK seconds until `seconds` have passed or
`stop()` is called. Line k (k = 0, 1, 2 ... over all Pods) goes to Pod k mod N and reads

    load seq=<k> pod=<i> n=<line number within that Pod> t=<send time, epoch seconds> <padding to `width`>

so a reader can compute lag (shown time - t) and count lost lines (gaps in seq, or in n per Pod).
`status()` says what was written. A new `start` while one runs replaces it (the Job is reused).

HTTP (same token as the API): `POST /_sandbox/loadgen` with `{"pods": 10, "lines_per_s": 20000, "seconds": 60}`
(optional "job", "width") starts and answers the status; `GET` answers the status; `DELETE` stops.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime

from rlark_sandbox.logs import LogStore, format_ts
from rlark_sandbox.store import ROOT, Store
from rlark_tui.model import keys

TICK = 0.01
CONTAINER = "main"
IMAGE = "registry.example/rlinf-loadgen@sha256:" + "0" * 64
LIMITS = {"pods": (1, 1000), "lines_per_s": (1, 1_000_000), "seconds": (0.1, 3600), "width": (40, 4096)}


@dataclass
class LoadRun:
    job: str
    cluster: str
    pods: list[str]
    lines_per_s: float
    seconds: float
    width: int
    started: float = field(default_factory=time.time)
    written: int = 0
    done: bool = False

    def describe(self) -> dict:
        return {"job": self.job, "cluster": self.cluster, "namespace": keys.WORKLOAD_NAMESPACE,
                "container": CONTAINER, "pods": self.pods, "linesPerSecond": self.lines_per_s,
                "seconds": self.seconds, "started": self.started, "written": self.written, "running": not self.done}


def parse_args(body: dict) -> dict:
    """The JSON body of `POST /_sandbox/loadgen` -> keyword arguments of `start`; ValueError when out of range."""
    if not isinstance(body, dict):
        raise ValueError("loadgen expects a JSON object")
    known = set(LIMITS) | {"job"}
    unknown = set(body) - known
    if unknown:
        raise ValueError(f"unknown loadgen field(s): {', '.join(sorted(unknown))}; known: {', '.join(sorted(known))}")
    args: dict = {}
    for name, (low, high) in LIMITS.items():
        if name in body:
            value = body[name]
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not low <= value <= high:
                raise ValueError(f"loadgen {name} must be a number from {low} to {high}")
            args[name] = int(value) if name in ("pods", "width") else float(value)
    if "job" in body:
        if not isinstance(body["job"], str) or not body["job"]:
            raise ValueError("loadgen job must be a non-empty name")
        args["job"] = body["job"]
    return args


class LoadGen:
    def __init__(self, store: Store, logs: LogStore) -> None:
        self.store, self.logs = store, logs
        self.run: LoadRun | None = None
        self._task: asyncio.Task | None = None

    def status(self) -> dict:
        return self.run.describe() if self.run else {"running": False}

    def start(self, pods: int = 10, lines_per_s: float = 20_000, seconds: float = 60, job: str = "loadgen",
              width: int = 100) -> dict:
        """Begin writing (call on the sandbox loop); ValueError when the store has no cluster to put Pods in."""
        self.stop()
        clusters = self.store.clusters()
        if not clusters:
            raise ValueError("the sandbox has no cluster (Node CRs) for load Pods: seed it with demo or scale")
        names = self._ensure_job(job, clusters[0], pods)
        self.run = LoadRun(job, clusters[0], names, float(lines_per_s), float(seconds), int(width))
        self._task = asyncio.get_running_loop().create_task(self._write(self.run))
        return self.status()

    def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            self._task = None
        if self.run is not None:
            self.run.done = True

    def _ensure_job(self, job: str, cluster: str, count: int) -> list[str]:
        task = f"{job}-load"
        names = [f"{task}-{i}" for i in range(count)]
        store = self.store
        if not store.list("jobs", fields=f"metadata.name={job}")[0]:
            spec = {"role": "Actor", "agentType": "Docker", "nodeSelector": {keys.HOSTNAME_LABEL: "loadgen"},
                    "kubernetes": {"workload": {"kind": "StatefulSet", "replicas": count, "template": {
                        "spec": {"containers": [{"name": CONTAINER, "image": IMAGE}]}}}}}
            created = store.create("jobs", {"apiVersion": "rlinf.io/v1alpha1", "kind": "Job",
                                            "metadata": {"name": job},
                                            "spec": {"tasks": [{"name": "load", "head": True, **spec}]}})
            store.update("jobs", {**created, "status": {"phase": "Running", "tasks": [
                {"name": "load", "phase": "Running"}]}}, subresource="status")
            made = store.create("tasks", {"apiVersion": "rlinf.io/v1alpha1", "kind": "Task", "metadata": {
                "name": task, "namespace": cluster, "labels": {keys.JOB_LABEL: job},
                "ownerReferences": [{"apiVersion": "rlinf.io/v1alpha1", "kind": "Job", "name": job,
                                     "uid": created["metadata"]["uid"], "controller": True}]}, "spec": spec})
            store.update("tasks", {**made, "status": {"phase": "Running"}}, subresource="status")
        have = {p["spec"].get("podName") for p in store.list("pods", namespace=cluster, copy=False)[0]
                if p["spec"].get("taskName") == task}
        for name in names:
            if name not in have:
                self._add_pod(cluster, task, name)
            if not self.logs.instances(cluster, keys.WORKLOAD_NAMESPACE, name, CONTAINER):
                self.logs.start_instance(cluster, keys.WORKLOAD_NAMESPACE, name, CONTAINER)
        return names

    def _add_pod(self, cluster: str, task: str, name: str) -> None:
        started = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        self.store.create("pods", {
            "apiVersion": "rlinf.io/v1alpha1", "kind": "Pod",
            "metadata": {"name": str(uuid.uuid4()), "namespace": cluster,
                         "labels": {keys.TASK_NAME_LABEL: task, "rlark.io/local-pod-name": name,
                                    "rlark.io/local-pod-namespace": keys.WORKLOAD_NAMESPACE}},
            "spec": {"taskNamespace": cluster, "taskName": task, "podNamespace": keys.WORKLOAD_NAMESPACE,
                     "podName": name},
            "status": {"phase": "Running", "node": "loadgen", "ip": "10.99.0.1"}}, ROOT)
        self.store.create("pods", {
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": keys.WORKLOAD_NAMESPACE, "labels": {"app": task}},
            "spec": {"containers": [{"name": CONTAINER, "image": IMAGE}], "nodeName": "loadgen"},
            "status": {"phase": "Running", "containerStatuses": [
                {"name": CONTAINER, "restartCount": 0, "ready": True, "state": {"running": {"startedAt": started}}}]}},
            plane=cluster)

    async def _write(self, run: LoadRun) -> None:
        """Every TICK, append to each Pod's file the lines due by then (one write per Pod per tick)."""
        count = len(run.pods)
        files = [self.logs.path(run.cluster, keys.WORKLOAD_NAMESPACE, name, CONTAINER,
                                self.logs.instances(run.cluster, keys.WORKLOAD_NAMESPACE, name, CONTAINER)[-1])
                 for name in run.pods]
        handles = [path.open("a", encoding="utf-8") for path in files]
        begin = time.monotonic()
        try:
            while True:
                elapsed = min(time.monotonic() - begin, run.seconds)
                due = int(run.lines_per_s * elapsed)
                if due > run.written:
                    now = time.time()
                    stamp = format_ts(datetime.fromtimestamp(now, UTC))
                    chunks: list[list[str]] = [[] for _ in range(count)]
                    for seq in range(run.written, due):
                        pod = seq % count
                        head = f"{stamp} stdout F load seq={seq} pod={pod} n={seq // count} t={now:.6f} "
                        chunks[pod].append(head.ljust(len(stamp) + 10 + run.width, "x") + "\n")
                    for handle, lines in zip(handles, chunks):
                        if lines:
                            handle.write("".join(lines))
                            handle.flush()
                    run.written = due
                if elapsed >= run.seconds:
                    break
                await asyncio.sleep(TICK)
        finally:
            run.done = True
            for handle in handles:
                handle.close()
