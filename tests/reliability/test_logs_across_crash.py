"""No log line lost across a crash of the sandbox: a Job's container prints a numbered line every 50 ms while
rlark's log follower (what `rlark logs -f --timestamps` runs) reads it; the sandbox process is SIGKILLed and
started again on the same state dir, which starts the container anew (a new instance). The follower must
resume with every line of the old instance exactly once, in order, its last one included, then the new one's.

The sandbox runs as a real process of its own (without Ray: its Pods run their prepare script only); the
follower runs in this process against it over HTTPS.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from kubernetes import client, config

from rlark_tui.cluster import ClusterAccess
from rlark_tui.cluster.logs import LogFollower
from rlark_tui.model.logtarget import LogTarget
from tests.agent.helpers import GROUP, VERSION, job, task, wait_for
from tests.reliability.test_sandbox_restart import stop

JOB, CLUSTER = "crash-follow", "rlark-gpu-a"
POD = f"{JOB}-actor-0"
DRIVER = """import signal, sys
from rlark_sandbox.agent import AgentSettings
from rlark_sandbox.instance import Sandbox
sandbox = Sandbox(sys.argv[1], seed="demo", agent_settings=AgentSettings(ray=False)).start()
print("ready", sandbox.kubeconfig, flush=True)
signal.pause()
"""
PRINTER = """import itertools, os, time
for number in itertools.count():
    print(f"{os.getpid()} line {number}", flush=True)
    time.sleep(0.05)
"""


def start(state: Path) -> tuple[subprocess.Popen, Path]:
    proc = subprocess.Popen([sys.executable, "-c", DRIVER, str(state)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    line = proc.stdout.readline()
    if not line.startswith("ready "):
        proc.kill()
        pytest.fail(f"sandbox did not start: {line!r} {proc.communicate()[1][-2000:]}")
    return proc, Path(line.split()[1])


def instance_lines(state: Path, instance: int) -> list[str]:
    path = state / "logs" / CLUSTER / "rlark-system" / POD / "main" / f"{instance}.log"
    return [line.split(" ", 3)[3] for line in path.read_text().splitlines()
            if line.split(" ", 3)[1] == "stdout" and " line " in line]


def test_follow_keeps_the_old_instances_last_line_across_a_sigkill(tmp_path, env):
    state = tmp_path / "state"
    printer = tmp_path / "printer.py"
    printer.write_text(PRINTER)
    proc, kubeconfig = start(state)
    follower = None
    try:
        crd = client.CustomObjectsApi(config.new_client_from_config(str(kubeconfig)))
        crd.create_cluster_custom_object(GROUP, VERSION, "jobs", job(JOB, [
            task("actor", "gpu-a3", head=True, prepare=f"{sys.executable} {printer}")]))
        access = ClusterAccess.open(str(kubeconfig))
        seen: list[tuple[str, str]] = []
        lock = threading.Lock()

        def on_lines(_source: str, stamps: list[str], texts: list[str]) -> None:
            with lock:
                seen.extend(zip(stamps, texts))
        notices: list[str] = []
        follower = LogFollower(access, on_lines, notices.append)
        target = LogTarget("actor", POD, CLUSTER, "rlark-system", "Running")
        first = state / "logs" / CLUSTER / "rlark-system" / POD / "main" / "0.log"
        wait_for(first.exists, 60, interval=0.1, what="the Pod's first instance")
        follower.add(target, JOB)
        wait_for(lambda: len(seen) >= 20, 60, interval=0.1, what="20 lines followed")
        stop(proc, signal.SIGKILL)
        old = instance_lines(state, 0)
        wait_for(lambda: any("connection refused" in n for n in notices), 30, interval=0.1,
                 what="a reconnect refused while it is down")
        proc, _ = start(state)
        wait_for(lambda: any(" line " in text and text.split()[0] != old[0].split()[0] for _, text in seen), 60,
                 interval=0.1, what="a line of the container's new instance")
        follower.close()
        texts = [text for _, text in seen if " line " in text]
        first_pid = old[0].split()[0]
        from_old = [text for text in texts if text.split()[0] == first_pid]
        assert from_old == old, f"{len(from_old)} of {len(old)} old lines, last {old[-1]!r}"
        assert texts[:len(old)] == old and all(stamp.endswith("Z") for stamp, _ in seen)
        assert texts[len(old):] == instance_lines(state, 1)[:len(texts) - len(old)]
    finally:
        if follower is not None:
            follower.close()
        stop(proc)
