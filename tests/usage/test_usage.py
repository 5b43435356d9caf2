"""Resource use on the shared sandbox (no Ray): a Job whose actor requests 2 GPUs and burns a CPU core for a
while, then idles, and a rollout without GPUs. Seen by real kubectl against the member cluster's metrics.k8s.io
through rlark-server, by `rlark top pods -A` (also under --readonly), by the TUI's Workers table and by
`rlark watch -o json --gpu-idle-seconds` once the burn is over."""

from __future__ import annotations

import gc
import json
import os
import re
import shutil
import subprocess
import sys
import time

import pytest

from rlark_tui.cluster import ClusterAccess
from rlark_tui.cluster.errors import NotFound
from rlark_tui.cluster.kinds import JOBS
from rlark_tui.cluster.usage_reads import gpu_read
from rlark_tui.flow.actions import Actions
from rlark_tui.telemetry.sample import CPU_MILLICORES, GPU_UTIL, GPUS, SOURCE
from rlark_tui.tui.app import RlarkApp
from rlark_tui.widgets.workers import RoleGpuUse, WorkersTree
from tests.alerts.conftest import Watch
from tests.clirun import cli_runner
from tests.pilot import wait_for
from tests.sandbox.helpers import data_plane_kubeconfig, plane_raw

NAME = "usage-burn"
CLUSTER = "rlark-gpu-a"
ACTOR, ROLLOUT = f"{NAME}-actor-0", f"{NAME}-rollout-0"
BURN_SECONDS = 120
"""The burn's bound; the tests end it sooner (`_end_burn`), once kubectl has read it."""
METRICS = "/apis/metrics.k8s.io/v1beta1/namespaces/rlark-system/pods"
pytestmark = pytest.mark.xdist_group("usage")
"""One worker runs the module: one burning Job, one sandbox."""


def _task(name: str, head: bool, gpus: int, script: str) -> dict:
    container = {"name": "main", "image": "registry.example.com/rlinf/rlinf:v0.2"}
    if gpus:
        container["resources"] = {"limits": {"nvidia.com/gpu": str(gpus)}}
    return {"name": name, "head": head, "role": "Actor" if head else "Rollout", "agentType": "Kubernetes",
            "nodeSelector": {"kubernetes.io/hostname": "gpu-a3"}, "prepareScript": script, "runScript": "echo never",
            "kubernetes": {"workload": {"kind": "StatefulSet", "replicas": 1,
                                        "template": {"spec": {"containers": [container]}}}}}


BURN = (f'end=$((SECONDS+{BURN_SECONDS})); while [ ! -e "$HOME/burn-over" ] && [ $SECONDS -lt $end ]; do :; done; '
        "sleep 600")
JOB = {"apiVersion": "rlinf.io/v1alpha1", "kind": "Job", "metadata": {"name": NAME},
       "spec": {"tasks": [_task("actor", True, 2, BURN), _task("rollout", False, 0, "sleep 600")]}}


def _end_burn(sandbox) -> None:
    """The actor's shell stops burning (`rlark exec`): it burns until then, however late a loaded machine reads it."""
    done = subprocess.run([sys.executable, "-m", "rlark_tui", "--kubeconfig", str(sandbox.kubeconfig), "exec", NAME,
                           "--", "sh", "-c", 'touch "$HOME/burn-over"'], stdin=subprocess.DEVNULL, capture_output=True,
                          env={**os.environ, "RLARK_CONFIG": "/nonexistent/config.yaml"}, timeout=120)
    assert done.returncode == 0, done.stderr


def _listed(sandbox) -> dict[str, dict]:
    reply = plane_raw(sandbox, CLUSTER, "GET", METRICS)
    assert reply.status == 200, reply.body
    return {item["metadata"]["name"]: item for item in reply.json()["items"]}


@pytest.fixture(scope="module")
def burning(plain_sandbox, tmp_path_factory):
    """The Job submitted, both Pods listed by PodMetrics; yields (access, state dir)."""
    state = tmp_path_factory.mktemp("usage-state")
    access = ClusterAccess.open(str(plain_sandbox.kubeconfig), plain_sandbox.context)
    try:
        Actions(access, state_dir=state).submit(JOB)
        deadline = time.monotonic() + 30
        while not {ACTOR, ROLLOUT} <= set(_listed(plain_sandbox)):
            assert time.monotonic() < deadline, "the Pods never got PodMetrics"
            time.sleep(0.2)
        yield access, state
    finally:
        try:
            access.delete(JOBS, NAME)
        except NotFound:
            pass
        access.close()


@pytest.mark.kubectl
@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed")
def test_kubectl_reads_pod_metrics_through_rlark_server(burning, plain_sandbox, tmp_path):
    config = data_plane_kubeconfig(plain_sandbox, CLUSTER, tmp_path)
    env = {**os.environ, "KUBECONFIG": config}

    def kubectl(*args: str) -> str:
        done = subprocess.run(["kubectl", "--cache-dir", str(tmp_path / "cache"), *args], env=env,
                              capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        return done.stdout

    # --raw takes the path from the server's root: rlark-server's proxy route in full
    route = f"/api/proxy/{CLUSTER.removeprefix('rlark-')}/api/kubernetes{METRICS}"
    deadline = time.monotonic() + 60
    while True:  # a window in which a loaded machine gave the shell no CPU reads 0n, as metrics-server would
        listed = json.loads(kubectl("get", "--raw", route))
        assert listed["kind"] == "PodMetricsList" and listed["apiVersion"] == "metrics.k8s.io/v1beta1"
        items = {item["metadata"]["name"]: item for item in listed["items"]}
        usage = items[ACTOR]["containers"][0]["usage"]
        assert re.fullmatch(r"\d+n", usage["cpu"]) and re.fullmatch(r"\d+Ki", usage["memory"]), usage
        if int(usage["cpu"][:-1]) > 10_000_000 or time.monotonic() > deadline:
            break
    assert int(usage["cpu"][:-1]) > 10_000_000, usage   # the burning shell: more than 10m
    _end_burn(plain_sandbox)  # read: the core is the suite's again (kubectl top below takes any number)
    one = json.loads(kubectl("get", "--raw", f"{route}/{ROLLOUT}"))
    assert one["kind"] == "PodMetrics" and one["containers"][0]["name"] == "main"
    # kubectl's own top finds the metrics API by discovery and prints the sandbox's numbers
    top = kubectl("top", "pod", "-n", "rlark-system", ACTOR, "--no-headers")
    assert top.split()[0] == ACTOR and top.split()[1].endswith("m"), top


def _row(text: str, pod: str) -> list[str]:
    return next(line.split() for line in text.splitlines() if pod in line.split())


def test_top_pods_shows_gpus_and_dashes_also_readonly(burning, plain_sandbox, capsys):
    rl = cli_runner(plain_sandbox.kubeconfig, capsys)
    for argv in (("top", "pods", "-A"), ("--readonly", "top", "pods", "-A")):
        result = rl(*argv)
        assert result.code == 0, result.err
        header = result.out.splitlines()[0].split()
        assert header == ["NAMESPACE", "NAME", "CPU(cores)", "MEMORY(bytes)", "GPUS", "GPU%", "GPU-MEM"]
        actor, rollout = _row(result.out, ACTOR), _row(result.out, ROLLOUT)
        assert actor[0] == CLUSTER and actor[4] == "2" and re.fullmatch(r"\d+%", actor[5]), actor
        assert re.fullmatch(r"\d+\.\d/160Gi", actor[6]), actor   # two H100 80GB from gpu-a3's model
        assert rollout[4:] == ["0", "-", "-"] and rollout[3].endswith("Mi"), rollout


def test_top_job_shows_gpu_use_by_role(burning, plain_sandbox, capsys):
    result = cli_runner(plain_sandbox.kubeconfig, capsys)("--readonly", "top", "job", NAME)
    assert result.code == 0, result.err
    lines = result.out.splitlines()
    assert lines[0].split() == ["ROLE", "PODS", "GPUS", "GPU%", "MIN/MEAN/MAX", "GPU-MEM", "MIN/MEAN/MAX"]
    actor, rollout = lines[1].split(), lines[2].split()
    assert actor[:3] == ["actor", "1", "2"] and re.fullmatch(r"\d+/\d+/\d+%", actor[3]), actor
    assert re.fullmatch(r"\d+/\d+/\d+Gi", actor[4]), actor
    assert rollout == ["rollout", "1", "0", "-", "-"] and "imbalance" not in result.out
    wrong = cli_runner(plain_sandbox.kubeconfig, capsys)("top", "pods", NAME)
    assert wrong.code == 2 and "takes no name" in wrong.err


async def test_workers_table_shows_gpu_numbers(burning, plain_sandbox):
    access = ClusterAccess.open(str(plain_sandbox.kubeconfig), plain_sandbox.context)
    app = RlarkApp(access)
    try:
        async with app.run_test(size=(200, 40)) as pilot:
            await wait_for(pilot, lambda: app.index is not None and app.index.job(NAME) is not None, "the Job")
            app.screen.table.select_key(NAME)
            await pilot.press("enter", "w")
            tree = app.screen.query_one(WorkersTree)

            def line(pod: str) -> str:
                return next((l for l in tree.shown_text().splitlines() if l.startswith(pod)), "")

            await wait_for(pilot, lambda: "/160Gi" in line(ACTOR) and line(ROLLOUT).rstrip().endswith("Mi"),
                           what="GPU, CPU and memory numbers in the Workers table", timeout=30)
            assert re.search(r"\s\d+%\s+\d+\.\d/160Gi\s+\d+m\s+\d+Mi", line(ACTOR)), line(ACTOR)
            assert re.search(r"\s-\s+-\s+\d+m\s+\d+Mi$", line(ROLLOUT).rstrip()), line(ROLLOUT)
            assert "GPU%" in tree.shown_text() and "GPU MEM" in tree.shown_text()
            by_role = str(app.screen.query_one(RoleGpuUse).render()).splitlines()   # as `rlark top job` says
            assert re.fullmatch(r"actor\s+1\s+2\s+\d+/\d+/\d+%\s+\d+/\d+/\d+Gi", by_role[1].rstrip()), by_role
            assert by_role[2].split() == ["rollout", "1", "0", "-", "-"], by_role
    finally:
        access.close()


def test_gpu_idle_fires_in_watch_once_the_burn_is_over(burning, plain_sandbox):
    access, state = burning
    _end_burn(plain_sandbox)
    deadline = time.monotonic() + 60
    while True:   # the burn is over once nvidia-smi in the Pod reads its GPUs idle
        gpus = gpu_read(access, CLUSTER, ACTOR)
        if gpus and all(gpu[GPU_UTIL] < 5 for gpu in gpus):
            break
        assert time.monotonic() < deadline, gpus
    assert gpu_read(access, CLUSTER, ROLLOUT) is None   # no GPUs requested: no nvidia-smi on its PATH
    env = {**os.environ, "KUBECONFIG": str(plain_sandbox.kubeconfig), "RLARK_STATE_DIR": str(state),
           "RLARK_CONFIG": str(state / "no-config.yaml")}
    watch = Watch(["--readonly", "watch", NAME, "-o", "json", "--gpu-idle-seconds", "2"], env)
    try:
        line = watch.wait_for(lambda l: l["rule"] == "gpu-idle" and l["state"] == "firing", "gpu-idle", timeout=40)
    finally:
        watch.close()
    assert line["job"] == NAME and line["object"] == ACTOR and line["severity"] == "warning", line
    assert f"Pod {ACTOR}'s GPUs idle below 5%" in line["message"], line


def test_a_round_that_reads_nothing_new_equals_the_last_one(burning):
    """The usage topic's reconciler publishes a result only when it differs: a round in which no Pod was due for a
    read keeps every sample (the very objects), so the 5,000-Job list does not repaint for it. The samples it keeps,
    GPU rows included, are plain tuples the cycle collector does not track (issue 34: bench tui's key latency)."""
    from rlark_tui.cluster.kinds import PODS, TASKS
    from rlark_tui.cluster.usage_reads import sample, targets_of
    from rlark_tui.flow.snapshot import Snapshot, source_key
    from rlark_tui.view.index import SnapshotIndex

    access, _state = burning
    index = SnapshotIndex(Snapshot(jobs={NAME: access.get(JOBS, NAME)},
                                   tasks={source_key(raw): raw for raw in access.list(TASKS, None).items},
                                   pods={source_key(raw): raw for raw in access.list(PODS, None).items}))
    targets = [(key, cluster, pod, gpus) for key, cluster, pod, gpus in targets_of(index, index.jobs) if cluster == CLUSTER]
    assert {pod for _, _, pod, _ in targets} == {ACTOR, ROLLOUT}
    first = sample(access, targets)
    actor = first.samples[f"{CLUSTER}/{index.pods_by_task[f'{NAME}-actor'][0].name}"]
    assert actor[GPUS] and actor[CPU_MILLICORES] is not None and actor[SOURCE] == "nvidia-smi+podmetrics"
    second = sample(access, targets, first)
    assert second == first and all(second.samples[key] is s for key, s in first.samples.items())
    for _ in range(3):  # a pass untracks a tuple whose items it found untracked: a sample, its GPUs, their rows
        gc.collect()  # kept from round to round, one a Running Pod: not among what each full pass of the collector walks
    assert [gc.is_tracked(s) for s in second.samples.values()].count(True) == 0
