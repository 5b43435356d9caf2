"""Outputs read where they live: inside a sandbox Pod over the data plane's exec (find, sha256sum), judged by check 5,
and never opened on this machine (an audit hook watches every open and directory scan during the check)."""

from __future__ import annotations

import hashlib
import json
import sys
import time
from pathlib import Path

import pytest

from rlark_tui import cli
from rlark_tui.checks import evaluate
from rlark_tui.checks.gather import gather
from rlark_tui.cluster import ClusterAccess
from rlark_tui.cluster.kinds import JOBS
from rlark_tui.flow.actions import Actions

from . import fixtures as fx

NAME = "check-in-pod"
RUN = "run-7"


def _job(out: Path) -> dict:
    job = fx.unschedulable_job(NAME)
    task = job["spec"]["tasks"][0]
    task["nodeSelector"] = {"kubernetes.io/hostname": "gpu-a3"}
    container = task["kubernetes"]["workload"]["template"]["spec"]["containers"][0]
    container["resources"] = {}
    old = out / RUN / "old.bin"
    task["prepareScript"] = (
        f"mkdir -p {out}/{RUN}/ckpt {out}/{RUN}-other && printf 'weights' > {out}/{RUN}/ckpt/model.pt && "
        f"printf 'log' > {out}/{RUN}/metrics.log && : > {out}/{RUN}/empty && printf x > {out}/{RUN}-other/x && "
        f"printf o > {old} && touch -d '2020-01-01' {old} && sleep 120")
    job["metadata"]["annotations"] = {"rlark.io/launch-record": (
        '{"runId": "' + RUN + '", "outputPath": "' + f"{out}/{RUN}" + '", "progressPattern": "never"}')}
    return job


@pytest.fixture
def in_pod(sandbox, tmp_path):
    out = tmp_path / "out"
    access = ClusterAccess.open(str(sandbox.kubeconfig), sandbox.context)
    Actions(access, state_dir=tmp_path / "state").submit(_job(out))
    try:
        yield access, out
    finally:
        access.delete(JOBS, NAME)
        access.close()


def _audited(location: Path, fn):
    """fn() while recording every open / scandir / listdir of a path under `location` in this process."""
    seen: list[str] = []
    watched = str(location)

    def hook(event, args):
        if event in ("open", "os.scandir", "os.listdir") and args and isinstance(args[0], (str, bytes, Path)):
            path = str(args[0] if not isinstance(args[0], bytes) else args[0].decode(errors="replace"))
            if path.startswith(watched):
                seen.append(f"{event} {path}")
    active = [True]
    sys.addaudithook(lambda event, args: hook(event, args) if active[0] else None)
    try:
        return fn(), seen
    finally:
        active[0] = False


def test_outputs_are_read_inside_the_pod_and_never_on_this_machine(in_pod):
    access, out = in_pod
    deadline = time.monotonic() + 30
    while True:
        evidence, opened = _audited(out, lambda: gather(access, NAME))
        if evidence.outputs and evidence.outputs.files or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert opened == []
    _, local = _audited(out, lambda: list((out / RUN).iterdir()) + [(out / RUN / "metrics.log").read_bytes()])
    assert local and all(str(out) in entry for entry in local)  # the hook does see a local read
    probe = evidence.outputs
    assert probe.error is None and probe.source.startswith(f"in Pod {NAME}-actor-0 (exec")
    by_path = {f.path: f for f in probe.files}
    model = by_path[f"{out}/{RUN}/ckpt/model.pt"]
    assert model.size == 7 and model.sha256 == hashlib.sha256(b"weights").hexdigest()
    assert f"{out}/{RUN}-other/x" not in by_path and by_path[f"{out}/{RUN}/old.bin"].mtime.year == 2020

    row = evaluate(evidence).row(5)
    files = {item.ref: item for item in row.evidence if item.kind == "file"}
    assert set(files) == {f"{out}/{RUN}/ckpt/model.pt", f"{out}/{RUN}/metrics.log"}  # not the empty or old one
    assert files[f"{out}/{RUN}/ckpt/model.pt"].sha256 == hashlib.sha256(b"weights").hexdigest()
    assert f"outputs read in Pod {NAME}-actor-0 (exec: find, sha256sum)" in row.all_notes()
    assert row.result == "pending"  # the agreed progress pattern never matches: outputs alone do not pass


def test_read_only_mode_still_runs_the_fixed_in_pod_probes(sandbox, in_pod, capsys):
    access, out = in_pod
    deadline = time.monotonic() + 30
    while not (gather(access, NAME).outputs.files or time.monotonic() > deadline):
        time.sleep(0.5)
    code = cli.main(["--readonly", "--kubeconfig", str(sandbox.kubeconfig), "--context", sandbox.context, "check",
                     NAME, "--format", "json"])
    document = json.loads(capsys.readouterr().out)
    outputs = next(c for c in document["checks"] if c["id"] == 5)
    assert code == 3 and f"outputs read in Pod {NAME}-actor-0 (exec: find, sha256sum)" in outputs["notes"]
    assert any(e["kind"] == "file" and e["ref"] == f"{out}/{RUN}/ckpt/model.pt" for e in outputs["evidence"])


@pytest.mark.parametrize("page", [
    {"objects": [{"key": "out/huge", "size": float("inf"), "last_modified": "2026-12-06T10:00:00Z"},
                 {"key": "out/ok", "size": 3, "last_modified": "2026-12-06T10:00:00Z"}]},
    {"objects": 5}, {"objects": {"key": "x"}, "is_truncated": True, "next_marker": ["m"]},
], ids=["size-inf", "objects-number", "objects-map"])
def test_a_storage_listing_of_the_wrong_shape_is_probed_without_a_crash(page):
    """The gateway's storage listing is cluster text: a size of 1e400 (inf once decoded) raised OverflowError past
    the probe's int() (it caught TypeError and ValueError), and `objects: 5` TypeError: rlark check crashed on
    its output probe. Such an object is left out, and the others are listed."""
    from rlark_tui.checks.probe import probe_object_storage

    found = probe_object_storage(lambda path, query: page, lambda url, limit: b"", "s3", "gpu-a", "/data", "/data/out")
    assert [f.path for f in found.files] == (["/data/out/ok"] if page.get("objects") != 5 and
                                             isinstance(page["objects"], list) else []), found


def test_an_object_key_with_a_lone_surrogate_is_read_back_without_a_crash():
    """Issue 33, a fifteenth round (a hostile gateway's storage listing): JSON may escape a lone surrogate
    ('\\ud800'), and the read-back's path was made by urllib's quote of the key's text, which raised
    UnicodeEncodeError out of rlark check's output probe. The key is asked for by its own bytes."""
    from rlark_tui.checks.probe import probe_object_storage

    page = {"objects": [{"key": "out/x\ud800", "size": 3, "last_modified": "2026-12-06T10:00:00Z"}]}
    asked: list[str] = []

    def get_json(path, query):
        asked.append(path)
        return page if path.endswith("/list") else {"url": "http://127.0.0.1:1/x"}

    found = probe_object_storage(get_json, lambda url, timeout, limit: [b"abc"], "s3", "gpu-a", "/data", "/data/out")
    assert [(f.path, f.sha256) for f in found.files] == [
        ("/data/out/x\ud800", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")], found
    assert asked[-1] == "/api/v1/storage/storageclass/s3/gpu-a/object/out/x%ED%A0%80"
