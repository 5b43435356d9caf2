"""Checkpoints in object storage (issue 35 items 3, 4 and 6): when the resolved config saves checkpoints below one
of the Job's object-storage mounts, `rlark checkpoints` lists them through the gateway's storage routes (the
Header Pod's listing is not used), the incomplete step marked; `rlark resume` then resumes from one at its path in
the Pods, where the demo workload's loader reads it back."""

from __future__ import annotations

import json
import time

import pytest

from rlark_sandbox.demo_workload import EXPERIMENT, resume
from rlark_tui.cluster import ClusterAccess
from rlark_tui.cluster.kinds import JOBS
from rlark_tui.flow.actions import Actions
from tests.checks import fixtures as fx
from tests.clirun import cli_runner
from tests.metrics.test_checkpoints import embodied

NAME = "ckpt-object"


def _job(target: str, run: str) -> dict:
    """A Pod that writes the demo's checkpoints of steps 10, 20 and 30 (30 without its .metadata) through an
    s3-rclone mount at `target`, then prints RLinf's resolved config saving them there."""
    job = fx.unschedulable_job(NAME)
    task = job["spec"]["tasks"][0]
    task["nodeSelector"] = {"kubernetes.io/hostname": "gpu-a3"}
    task["runScript"] = "cd /work\npython train_embodied_agent.py --config-name ppo\n"
    workload = task["kubernetes"]["workload"]
    workload["pvcStorageMap"] = {f"pvc-{NAME}-actor-ckpt": "s3-rclone"}
    pod = workload["template"]["spec"]
    pod["volumes"] = [{"name": "ckpt", "persistentVolumeClaim": {"claimName": f"pvc-{NAME}-actor-ckpt"}}]
    container = pod["containers"][0]
    container["resources"] = {}
    container["volumeMounts"] = [{"name": "ckpt", "mountPath": target}]
    config = dict(embodied(f"{target}/{run}"))
    config["runner"]["logger"]["experiment_name"] = EXPERIMENT
    printed = json.dumps(config, indent=2).replace("\n", "\\n")
    writer = ("from pathlib import Path; from rlark_sandbox.demo_workload import write_checkpoint as w; "
              f"[w(Path('{target}/{run}'), s, [s / 100] * 8) for s in (10, 20, 30)]")
    base = f"{target}/{run}/{EXPERIMENT}/checkpoints"
    task["prepareScript"] = (f"python -c \"{writer}\" && rm {base}/global_step_30/actor/dcp_checkpoint/.metadata"
                             f" && printf '{printed}\\n' && sleep 120")
    return job


@pytest.fixture
def stored(sandbox, tmp_path):
    target, run = str(tmp_path / "mnt" / "ckpt"), f"run-{tmp_path.name}"
    access = ClusterAccess.open(str(sandbox.kubeconfig), sandbox.context)
    Actions(access, state_dir=tmp_path / "state").submit(_job(target, run))
    try:
        yield f"{target}/{run}/{EXPERIMENT}/checkpoints", run
    finally:
        access.delete(JOBS, NAME)
        access.close()


def test_checkpoints_in_object_storage_are_listed_through_the_gateway_and_resumed_from(stored, sandbox, capsys):
    location, run = stored
    rlark = cli_runner(sandbox.kubeconfig, capsys)
    deadline = time.monotonic() + 60
    while True:
        listing = rlark("checkpoints", NAME, "-o", "json")
        if listing.code == 0 and json.loads(listing.out)["location"] == location and len(
                json.loads(listing.out)["checkpoints"]) == 3 or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert listing.code == 0, listing.err
    shape = json.loads(listing.out)
    assert [(c["name"], c["complete"], c["missing"]) for c in shape["checkpoints"]] == [
        ("global_step_10", True, []), ("global_step_20", True, []),
        ("global_step_30", False, ["actor/dcp_checkpoint/.metadata"])]
    assert shape["latest_complete"] == "global_step_20" and all(c["bytes"] > 4096 for c in shape["checkpoints"])
    stored_files = sandbox.state_dir / "storage" / "s3-rclone" / run / EXPERIMENT / "checkpoints"
    assert sorted(p.name for p in stored_files.iterdir()) == ["global_step_10", "global_step_20", "global_step_30"]
    text = rlark("--readonly", "checkpoints", NAME)
    assert text.code == 0, text.err
    assert text.out.splitlines()[0] == f"location: {location} (embodied, in object storage s3-rclone/gpu-a)"
    assert "incomplete: missing actor/dcp_checkpoint/.metadata" in text.out

    done = rlark("resume", NAME, "--yes")
    assert done.code == 0, done.err
    assert "replaced and restarted from global_step_20" in done.out
    access = ClusterAccess.open(str(sandbox.kubeconfig), sandbox.context)
    try:
        script = access.get(JOBS, NAME)["spec"]["tasks"][0]["runScript"]
    finally:
        access.close()
    assert script.rstrip("\n").endswith(f" runner.resume_dir={location}/global_step_20")
    assert resume(f"{location}/global_step_20") == (20, [0.2] * 8), "loaded back from the object-storage mount"
