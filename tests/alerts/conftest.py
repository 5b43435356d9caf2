"""Four faulty Jobs on the shared sandbox (no Ray: each does its fault in the prepare script), a local webhook
receiver, and a real `rlark watch -A -o json --webhook …` subprocess watching them; module scope, so that the
watch, webhook and TUI tests share one start-up and the Jobs' faults."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from rlark_tui.cluster import ClusterAccess
from rlark_tui.cluster.errors import NotFound
from rlark_tui.cluster.kinds import JOBS
from rlark_tui.flow.actions import Actions

SECRET = "hf_Zq8ShouldNeverLeaveThePod0000000000"
OWN = "zqAlertWandb5521"
"""The crashing Job's own WANDB_API_KEY: its crash line prints the bare value."""
REFERENCED = "zqAlertRefSecret7730"
"""A value of a Secret the crashing Job's Pod takes by secretKeyRef into RUN_NOTE (a name that says nothing)."""
REF_SECRET = "alert-crash-note"
CRASH_CHAIN = f"""\
[INFO 03:05:01 RLinf] RLinf is running on a cluster with 1 node and 1 accelerator.
Exception occurred while running EmbodiedFSDPActor's function run_training: exception is \
ray::EmbodiedFSDPActor.run_training() (pid=4121, ip=10.244.1.7) HF_TOKEN={SECRET} wandb {OWN} note {REFERENCED}
torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. \
GPU 0 has a total capacity of 79.15 GiB.
Exception occurred while running EnvWorker's function interact: exception is \
The actor died unexpectedly before finishing this task.
The actor is dead because it was killed by `ray.kill`.
Exiting main process due to a failure upon worker execution.
"""
BAR = "─" * 118
TABLE = "\n".join([
    "", f"╭{BAR}╮", "├" + " Metric Table ".center(118, "─") + "┤",
    "│ Global Step:    1/40 │ Progress: " + "█" + "░" * 39 + " │   2.5%".ljust(118 - 59) + "│",
    "│ Elapsed: 00:01 │ ETA: 00:39 │ Step Time: 1.000s".ljust(119) + "│", f"╰{BAR}╯", ""])
NAMES = {"crash": "alert-crash", "exit": "alert-exit", "oom": "alert-oom", "stall": "alert-stall"}


def _job(name: str, script: str, kind: str = "StatefulSet", limit: str = "", env: list | None = None) -> dict:
    container = {"name": "main", "image": "registry.example.com/rlinf/rlinf:v0.2", **({"env": env} if env else {})}
    if limit:
        container["resources"] = {"limits": {"memory": limit}, "requests": {"memory": "64Mi"}}
    return {"apiVersion": "rlinf.io/v1alpha1", "kind": "Job", "metadata": {"name": name},
            "spec": {"tasks": [{
                "name": "actor", "head": True, "role": "Actor", "agentType": "Kubernetes",
                "nodeSelector": {"kubernetes.io/hostname": "gpu-a3"},
                "prepareScript": script, "runScript": "echo never",
                "kubernetes": {"workload": {"kind": kind, "replicas": 1,
                                            "template": {"spec": {"containers": [container]}}}}}]}}


def _heredoc(text: str) -> str:
    return f"cat <<'RLARK_EOF'\n{text}RLARK_EOF\n"


JOBS_UNDER_TEST = [
    _job(NAMES["crash"], _heredoc(CRASH_CHAIN) + "sleep 600", env=[
        {"name": "WANDB_API_KEY", "value": OWN},
        {"name": "RUN_NOTE", "valueFrom": {"secretKeyRef": {"name": REF_SECRET, "key": "note"}}}]),
    _job(NAMES["exit"], "sleep 2; echo giving up; exit 1"),
    # 4 GiB in 256 MiB steps under a 3Gi limit: the sandbox kills the process group as a kubelet would (OOMKilled)
    _job(NAMES["oom"], "python3 -c \"import time\nchunks = []\nfor _ in range(16):\n"
                       "    chunks.append(b'x' * (256 << 20)); time.sleep(0.05)\ntime.sleep(600)\"", limit="3Gi"),
    _job(NAMES["stall"], _heredoc(TABLE) + "sleep 600"),
]


class Receiver:
    """A webhook receiver on 127.0.0.1: every POST body, parsed."""

    def __init__(self) -> None:
        self.bodies: list[dict] = []
        self.raw: list[bytes] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 - http.server's name
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                outer.raw.append(body)
                outer.bodies.append(json.loads(body))
                self.send_response(200)
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        # close waits for serve_forever to look at its flag, every poll_interval: 0.5 s by default
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class Watch:
    """`rlark watch` as a subprocess; `lines` are its parsed JSON lines, as they come."""

    def __init__(self, argv: list[str], env: dict) -> None:
        self.proc = subprocess.Popen([sys.executable, "-m", "rlark_tui", *argv], stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, env=env, text=True)
        self.lines: list[dict] = []
        self.text: list[str] = []
        self.errors: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=lambda: self.errors.extend(self.proc.stderr), daemon=True).start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            self.text.append(line)
            self.lines.append(json.loads(line))

    def wait_for(self, predicate, what: str, timeout: float = 60.0) -> dict:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = next((line for line in list(self.lines) if predicate(line)), None)
            if found is not None:
                return found
            time.sleep(0.1)
        raise AssertionError(f"no watch line for {what} in {timeout}s:\n" + "".join(self.text)
                             + "".join(self.errors[-5:]))

    def close(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


@pytest.fixture(scope="module")
def faulty(plain_sandbox, tmp_path_factory):
    """(watch, receiver, submitted-at) with the four Jobs submitted after `rlark watch` started."""
    state = tmp_path_factory.mktemp("alerts-state")
    env = {**os.environ, "KUBECONFIG": str(plain_sandbox.kubeconfig), "RLARK_STATE_DIR": str(state),
           "RLARK_CONFIG": str(state / "no-config.yaml")}
    receiver = Receiver()
    watch = Watch(["watch", "-A", "-o", "json", "--webhook", receiver.url, "--stall-min-seconds", "5",
                   "--stall-factor", "1"], env)
    access = ClusterAccess.open(str(plain_sandbox.kubeconfig), plain_sandbox.context)
    plain_sandbox.store.create("secrets", {   # as an operator's kubectl create in the member cluster would
        "apiVersion": "v1", "kind": "Secret", "type": "Opaque",
        "metadata": {"name": REF_SECRET, "namespace": "rlark-system", "creationTimestamp": "2026-12-01T00:00:00Z"},
        "data": {"note": base64.b64encode(REFERENCED.encode()).decode()}}, plane="rlark-gpu-a")
    try:
        submitted = time.time()
        actions = Actions(access, state_dir=state)
        for job in JOBS_UNDER_TEST:
            actions.submit(job)
        yield watch, receiver, submitted, state
    finally:
        watch.close()
        receiver.close()
        for name in NAMES.values():
            try:
                access.delete(JOBS, name)
            except NotFound:
                pass
        plain_sandbox.store.delete("secrets", REF_SECRET, "rlark-system", "rlark-gpu-a")
        access.close()
