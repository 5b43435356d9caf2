"""Pod failure reasons end to end on the shared sandbox: a Job over its memory limit is OOM-killed the way a kubelet
does it (exit 137, lastState OOMKilled, back-off, BackOff event), and `describe` and check 2 show why; the
data-plane Pod reports the pulled imageID as a kubelet does."""

from __future__ import annotations

import time
from dataclasses import replace

import pytest

from rlark_tui import cli
from rlark_tui.checks import evaluate
from rlark_tui.checks.gather import gather
from rlark_tui.cluster import ClusterAccess
from rlark_tui.cluster.errors import NotFound
from rlark_tui.cluster.kinds import JOBS
from rlark_tui.flow.actions import Actions
from rlark_tui.model.objects import main_container_status
from rlark_tui.screens.job_detail import JobDetailScreen
from rlark_tui.tui.app import RlarkApp
from rlark_tui.widgets.workers import WorkersTree
from tests.pilot import wait_for

NAME = "check-oom"
TAG = "registry.example.com/rlinf/rlinf:v0.2"
PULLED = "registry.example.com/rlinf/rlinf@sha256:2e3d15b1c4c7d5197c93beda3d87897e65423cfa66fd2224ec347107e05acb58"


def _job() -> dict:
    return {
        "apiVersion": "rlinf.io/v1alpha1", "kind": "Job", "metadata": {"name": NAME},
        "spec": {"tasks": [{
            "name": "actor", "head": True, "role": "Actor", "agentType": "Kubernetes",
            "nodeSelector": {"kubernetes.io/hostname": "gpu-a3"},
            "prepareScript": "python3 -c \"b = b'x' * (256 << 20); import time; time.sleep(30)\"",
            "runScript": "echo never",
            "kubernetes": {"workload": {"kind": "StatefulSet", "replicas": 1, "template": {"spec": {"containers": [{
                "name": "main", "image": TAG,
                "resources": {"limits": {"memory": "64Mi"}, "requests": {"memory": "64Mi"}},
            }]}}}},
        }]},
    }


@pytest.fixture
def oom_job(sandbox, tmp_path, monkeypatch):
    monkeypatch.setenv("RLARK_STATE_DIR", str(tmp_path / "state"))
    access = ClusterAccess.open(str(sandbox.kubeconfig), sandbox.context)
    Actions(access, state_dir=tmp_path / "state").submit(_job())
    try:
        yield access
    finally:
        access.delete(JOBS, NAME)
        access.close()


def _main(access) -> dict:
    try:
        return main_container_status(access.data_plane_pod("rlark-gpu-a", f"{NAME}-actor-0", "rlark-system"))
    except NotFound:
        return {}


def test_a_job_over_its_memory_limit_is_oom_killed_and_every_view_says_so(sandbox, oom_job, capsys):
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        status = _main(oom_job)
        if status.get("lastState"):
            break
        time.sleep(0.3)
    assert status["lastState"]["terminated"]["reason"] == "OOMKilled"
    assert status["lastState"]["terminated"]["exitCode"] == 137
    assert status["restartCount"] >= 1 and status["imageID"] == PULLED
    events = oom_job.data_plane_events("rlark-gpu-a", f"{NAME}-actor-0", "rlark-system")
    assert any(e.get("reason") == "BackOff" and e.get("type") == "Warning" for e in events)

    evidence = gather(oom_job, NAME)
    pods = evaluate(evidence).row(2)
    assert pods.result == "fail"
    assert any("OOMKilled (exit code 137)" in note for note in pods.all_notes()), pods.all_notes()
    assert any(item.path == "status.ip" and item.value for item in pods.evidence)

    def image_findings(record: dict) -> list[str]:
        report = evaluate(replace(evidence, launch_record=record))
        return [f.message for f in report.row(4).findings if TAG in f.message or "imageID" in f.message]
    assert any("a tag cannot prove what ran" in m and PULLED in m for m in image_findings({}))
    built = {"buildRecord": "ci/build 812 sha256:" + PULLED.split("sha256:")[1]}
    assert image_findings(built) == []
    assert f"actor: {TAG} (pulled {PULLED})" in evaluate(replace(evidence, launch_record=built)).facts.images
    wrong = {"buildRecord": "sha256:" + "0" * 64}
    assert any("differs from the build record's digest" in m for m in image_findings(wrong))

    code = cli.main(["--kubeconfig", str(sandbox.kubeconfig), "--context", sandbox.context, "describe", "job", NAME])
    out = capsys.readouterr().out
    assert code == 0
    row = next(line for line in out.splitlines() if line.split()[:2] == ["actor", f"{NAME}-actor-0"])
    assert "OOMKilled (exit 137)" in row and "REASON" in out

    code = cli.main(["--kubeconfig", str(sandbox.kubeconfig), "--context", sandbox.context, "get", "pods", "-A",
                     "-o", "wide", "-l", f"rlark.io/task-name={NAME}-actor"])
    listed = capsys.readouterr().out
    assert code == 0 and "RESTARTS" in listed.splitlines()[0] and "REASON" in listed.splitlines()[0]
    assert "OOMKilled (exit 137)" in listed.splitlines()[1]


async def test_the_job_list_and_the_details_workers_row_say_oomkilled(oom_job):
    app = RlarkApp(oom_job)
    async with app.run_test(size=(160, 40)) as pilot:
        await wait_for(pilot, lambda: app.screen.table.select_key(NAME), what=f"{NAME} in the list")
        table = app.screen.table

        def listed() -> list[str]:
            rows = [[getattr(c, "plain", c) for c in table.get_row_at(i)] for i in range(table.row_count)]
            return next(row for row in rows if row[0] == NAME)
        await wait_for(pilot, lambda: "OOMKilled (exit 137)" in listed()[-3], timeout=40,
                       what="the list's REASON column")
        await pilot.press("d")
        assert isinstance(app.screen, JobDetailScreen)
        await pilot.press("w")
        tree = app.screen.query_one(WorkersTree)
        await wait_for(pilot, lambda: "OOMKilled (exit 137)" in tree.shown_text(), timeout=40,
                       what="the OOM-killed Pod's reason in its Workers row")
        row = next(line for line in tree.shown_text().splitlines() if line.startswith(f"{NAME}-actor-0"))
        assert "REASON" in tree.shown_text() and row.split()[-5] not in ("-", "0")  # RESTARTS
