"""`rlark stacks` where py-spy in the Pods cannot take a stack (issue 34 item 1, profiling off): the Job's Pods really
run (the shared sandbox's agent, no Ray), each a Python process that prints its PID; Ray's dashboard is a stand-in
listing one actor per Pod at that Pod's IP, profiling off, so rlark runs the fixed `py-spy-dump` in each Pod through
the data plane's exec. The actor Pod has py-spy on its PATH and dumps; the env Pod has none (a sandbox Pod without
Ray has only python); the rollout Pod runs the real py-spy without CAP_SYS_PTRACE (its PATH starts with a py-spy that
drops it with setpriv, as in a container without SYS_PTRACE), and the kernel refuses the ptrace; the noisy Pod's
py-spy is the Pod's own and prints 4 MB of frames (a hostile Pod): its dump is read to the fixed command's bound,
which is said. Each Pod that gave no stack is one line saying why and how to enable it; no traceback."""

from __future__ import annotations

import json
import os
import shutil
import sys
import uuid

import pytest

from rlark_tui.cluster.access import ClusterAccess
from rlark_tui.model.objects import Pod
from rlark_tui.telemetry.stacks import PTRACE_REFUSED, PY_SPY_MISSING
from tests.agent.helpers import wait_for
from tests.clirun import cli_runner
from tests.reliability.running_job import edge_task, pod_log_text, running_job
from tests.sandbox.test_stall_stacks import RecordedRay

NAME = f"stacks-pods-{uuid.uuid4().hex[:6]}"
SCRIPT = "exec python -c 'import os, time; print(\"stacks-pid\", os.getpid(), flush=True); time.sleep(600)'"
BIN = os.path.dirname(sys.executable)


@pytest.fixture(scope="module")
def pods(plain_sandbox, tmp_path_factory):
    """{pod name: (IP, PID of its Python process)} of the Job's three running Pods."""
    if shutil.which("setpriv") is None:
        pytest.skip("setpriv (util-linux) is not installed")
    unprivileged = tmp_path_factory.mktemp("no-ptrace")
    (unprivileged / "py-spy").write_text("#!/bin/sh\nexec setpriv --bounding-set -sys_ptrace --inh-caps -sys_ptrace "
                                         f"{shutil.which('py-spy', path=BIN)} \"$@\"\n")
    (unprivileged / "py-spy").chmod(0o755)
    noisy = tmp_path_factory.mktemp("noisy")
    (noisy / "py-spy").write_text("#!/bin/sh\nprintf 'Thread 1 (active): \"MainThread\"\\n'\n"
                                  "yes '    forged_frame (a.py:1)' | head -c 4000000\n")
    (noisy / "py-spy").chmod(0o755)
    roles = [edge_task("actor", "edge-b1", SCRIPT, [{"name": "PATH", "value": f"{BIN}:/usr/bin:/bin"}], head=True),
             edge_task("rollout", "edge-b2", SCRIPT, [{"name": "PATH", "value": f"{unprivileged}:{BIN}:/usr/bin:/bin"}]),
             edge_task("env", "edge-b2", SCRIPT, []),
             edge_task("noisy", "edge-b1", SCRIPT, [{"name": "PATH", "value": f"{noisy}:{BIN}:/usr/bin:/bin"}])]
    manifest = {"apiVersion": "rlinf.io/v1alpha1", "kind": "Job", "metadata": {"name": NAME}, "spec": {"tasks": roles}}
    printed = {f"{NAME}-{role}-0": "stacks-pid " for role in ("actor", "rollout", "env", "noisy")}
    with running_job(plain_sandbox, manifest, printed):
        access = ClusterAccess.open(str(plain_sandbox.kubeconfig), plain_sandbox.context)
        try:
            # a Pod printed before the agent wrote Running into its Pod CR, which rlark stacks needs of the Pod
            # holding a node IP (else that Pod's ranks are 'no Running Pod of … has node IP …')
            ips = wait_for(lambda: (found := {pod.pod_name: pod.ip for pod in map(Pod, access.job_pods(NAME))
                                              if pod.phase == "Running" and pod.ip}).keys() == printed.keys() and found,
                           timeout=60, interval=0.2, what="the three Pod CRs Running with their IPs")
            pids = {pod: int(pod_log_text(access, pod).split("stacks-pid ")[1].split()[0]) for pod in printed}
        finally:
            access.close()
        yield {pod: (ips[pod], pid) for pod, pid in pids.items()}


def test_each_pod_without_a_stack_says_why_and_the_others_are_shown(plain_sandbox, pods, env, capsys):
    ordered = sorted(pods)
    ray = RecordedRay(actors=[{"name": f"ActorGroup:{rank}", "class_name": "Worker", "state": "ALIVE", "pid": pid,
                               "node_id": f"node-{rank}", "actor_id": f"a{rank}"}
                              for rank, (_ip, pid) in enumerate(pods[pod] for pod in ordered)],
                      nodes={f"node-{rank}": pods[pod][0] for rank, pod in enumerate(ordered)}, profiling=False)
    (env / "config.yaml").write_text(f"ray:\n  urls:\n    {NAME}: {ray.url}\n")
    rlark = cli_runner(plain_sandbox.kubeconfig, capsys)
    try:
        found = rlark("--readonly", "stacks", NAME, "-o", "json")
        text = rlark("stacks", NAME)
    finally:
        ray.close()
    assert found.code == 0 and text.code == 0 and "Traceback" not in found.err + text.out + text.err, (found, text)
    answer = json.loads(found.out)
    assert answer["source"] == "py-spy" and "/worker/traceback" not in ray.asked
    assert [(g["count"], [w["pod"] for w in g["workers"]]) for g in answer["groups"]] == [(1, [f"{NAME}-actor-0"])], \
        answer
    assert answer["groups"][0]["frames"] == ["<module> (<string>:1)"]
    assert answer["errors"] == [{"pod": f"{NAME}-env-0", "reason": PY_SPY_MISSING},
                                {"pod": f"{NAME}-noisy-0", "reason": "py-spy's dump passed 256 KiB: not read past it"},
                                {"pod": f"{NAME}-rollout-0", "reason": PTRACE_REFUSED}], answer
    assert f"{NAME}-env-0: {PY_SPY_MISSING}" in text.out.splitlines()
    assert f"{NAME}-rollout-0: {PTRACE_REFUSED}" in text.out.splitlines()
