"""Check 5 on object storage, end to end on the shared sandbox: a Job writes its checkpoint through a storage mount,
the check lists and reads it back through the gateway's storage file API (also once the Pods are gone), and an
unreachable presigned URL leaves the row pending, never failed."""

from __future__ import annotations

import hashlib
import json
import time

import pytest

from rlark_tui.checks import evaluate
from rlark_tui.checks.gather import gather
from rlark_tui.cluster import ClusterAccess
from rlark_tui.cluster.kinds import JOBS
from rlark_tui.flow.actions import Actions
from rlark_tui.model.keys import LAUNCH_RECORD_ANNOTATION

from . import fixtures as fx

NAME = "check-object-storage"
RUN = "run-9"


def _job(target: str) -> dict:
    job = fx.unschedulable_job(NAME)
    task = job["spec"]["tasks"][0]
    task["nodeSelector"] = {"kubernetes.io/hostname": "gpu-a3"}
    workload = task["kubernetes"]["workload"]
    workload["pvcStorageMap"] = {f"pvc-{NAME}-actor-ckpt": "s3-rclone"}
    pod = workload["template"]["spec"]
    pod["volumes"] = [{"name": "ckpt", "persistentVolumeClaim": {"claimName": f"pvc-{NAME}-actor-ckpt"}}]
    container = pod["containers"][0]
    container["resources"] = {}
    container["volumeMounts"] = [{"name": "ckpt", "mountPath": target}]
    task["prepareScript"] = (f"echo 'Executing run script...'; mkdir -p {target}/{RUN}/ckpt && "
                             f"printf 'weights-9' > {target}/{RUN}/ckpt/model.pt && echo 'ckpt step 1 saved'; "
                             "sleep 1")
    record = {"runId": RUN, "outputPath": f"{target}/{RUN}", "progressPattern": r"ckpt step (\d+) saved",
              "maxWaitSeconds": 600}
    job["metadata"]["annotations"] = {LAUNCH_RECORD_ANNOTATION: json.dumps(record)}
    return job


@pytest.fixture
def stored(sandbox, tmp_path):
    target = str(tmp_path / "mnt" / "ckpt")
    access = ClusterAccess.open(str(sandbox.kubeconfig), sandbox.context)
    Actions(access, state_dir=tmp_path / "state").submit(_job(target))
    try:
        yield access, target
    finally:
        access.delete(JOBS, NAME)
        access.close()


def _until(fn, ok, seconds: float = 30.0):
    deadline = time.monotonic() + seconds
    while True:
        value = fn()
        if ok(value) or time.monotonic() > deadline:
            return value
        time.sleep(0.5)


def test_checkpoints_in_object_storage_pass_check_5_and_stay_readable_without_pods(sandbox, stored):
    access, target = stored
    model = f"{target}/{RUN}/ckpt/model.pt"
    evidence = _until(lambda: gather(access, NAME), lambda e: e.outputs and e.outputs.files
                      and any("ckpt step" in line for log in e.logs for line in log.lines))
    assert evidence.outputs.source == "from object storage s3-rclone/gpu-a (gateway file API)"
    assert (sandbox.state_dir / "storage" / "s3-rclone" / RUN / "ckpt" / "model.pt").read_bytes() == b"weights-9"
    row = evaluate(evidence).row(5)
    assert row.result == "pass", row.all_notes()
    files = [item for item in row.evidence if item.kind == "file"]
    assert [(f.ref, f.size, f.sha256) for f in files] == [(model, 9, hashlib.sha256(b"weights-9").hexdigest())]

    Actions(access).stop(NAME)
    gone = _until(lambda: gather(access, NAME), lambda e: not e.pods)
    assert not gone.pods and [f.path for f in gone.outputs.files] == [model]
    assert gone.outputs.files[0].sha256 == hashlib.sha256(b"weights-9").hexdigest()

    endpoint, sandbox.objects.endpoint = sandbox.objects.endpoint, "http://127.0.0.1:9"
    try:
        unreachable = gather(access, NAME)
    finally:
        sandbox.objects.endpoint = endpoint
    judged = evaluate(unreachable).row(5)
    assert unreachable.outputs.files[0].sha256 is None
    assert unreachable.outputs.source.endswith(f"; read-back failed: {RUN}/ckpt/model.pt: cannot reach the object "
                                               "store at http://127.0.0.1:9: connection refused")
    assert judged.result == "pending"
    assert any("could be read back" in note for note in judged.all_notes())
