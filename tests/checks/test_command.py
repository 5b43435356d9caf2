"""`rlark check` against the sandbox over HTTPS: exit codes, one JSON document on stdout, saved private records."""

from __future__ import annotations

import json
import os
import stat
import time

import pytest
import yaml

from rlark_tui import cli
from rlark_tui.checks import evaluate
from rlark_tui.checks.gather import gather
from rlark_tui.cluster import ClusterAccess
from rlark_tui.cluster.kinds import JOBS
from rlark_tui.flow.actions import Actions
from rlark_tui.model.keys import LAUNCH_RECORD_ANNOTATION

from . import fixtures as fx

UNSCHEDULABLE = "check-unscheduled"


@pytest.fixture
def access(sandbox):
    access = ClusterAccess.open(str(sandbox.kubeconfig), sandbox.context)
    yield access
    access.close()


@pytest.fixture
def state(tmp_path, monkeypatch):
    monkeypatch.setenv("RLARK_STATE_DIR", str(tmp_path / "state"))
    return tmp_path / "state"


@pytest.fixture
def unscheduled(access, state):
    Actions(access, state_dir=state).submit(fx.unschedulable_job(UNSCHEDULABLE))
    yield UNSCHEDULABLE
    access.delete(JOBS, UNSCHEDULABLE)


def _run(sandbox, capsys, *args) -> tuple[int, str, str]:
    code = cli.main(["--kubeconfig", str(sandbox.kubeconfig), "--context", sandbox.context, "check", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_missing_job_fails_check_1_with_exit_1_and_one_json_document(sandbox, capsys, state):
    code, out, err = _run(sandbox, capsys, "no-such-job", "--format", "json")
    assert code == 1
    document = json.loads(out)
    assert document["job"] == "no-such-job"
    assert document["checks"][0]["result"] == "fail"
    assert document["checks"][0]["notes"] == ["Job no-such-job does not exist"]
    assert document["earliestFailingStage"] == "job"
    assert document["conclusion"] is None
    saved = sorted((state / "checks").iterdir())
    assert [p.suffix for p in saved] == [".json", ".md"]
    for path in saved:
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert "record saved: " in err


def test_job_whose_pods_cannot_start_is_pending_not_pass(sandbox, capsys, state, unscheduled):
    started = time.monotonic()
    code, out, err = _run(sandbox, capsys, unscheduled, "--wait", "2", "--format", "md", "--lang", "zh",
                          "--recorder", "Han Meimei", "--decision", "keep", "--output", str(state / "copy.md"))
    assert time.monotonic() - started < 30
    assert code == 3
    assert "| 1. Job 已创建且配置一致 | 符合预期 |" in out
    assert "| 2. Pod 数量和所在节点正确 | 待确认 |" in out
    assert "- 记录人：Han Meimei" in out
    assert "本次运行在" not in out
    assert "wandb-secret-value-123" not in out
    assert "pending; waiting" in err
    copy = state / "copy.md"
    assert copy.read_text() == out
    umask = os.umask(0o022)
    os.umask(umask)
    assert stat.S_IMODE(copy.stat().st_mode) == 0o666 & ~umask  # a path the user named: the ordinary mode


def test_gathered_evidence_carries_the_submission_record(sandbox, access, state, unscheduled):
    evidence = gather(access, unscheduled, state)
    assert evidence.submitted_spec == evidence.job["spec"]
    assert evidence.submitted_intact
    assert evidence.submitted_yaml_path and evidence.submitted_yaml_path.startswith(str(state / "submitted"))
    assert evidence.launch_record is None


def test_bad_wait_is_a_usage_error(sandbox, capsys, state):
    code, _, err = _run(sandbox, capsys, "demo-ppo", "--wait", "-1")
    assert code == 2
    assert err.strip() == "error: --wait must be 0 or more seconds"


def test_without_data_plane_contexts_logs_come_from_the_gateway_and_restarts_are_unknown(
        sandbox, tmp_path, state, unscheduled, monkeypatch):
    config = yaml.safe_load(sandbox.kubeconfig.read_text())
    config["contexts"] = [c for c in config["contexts"] if c["name"] == sandbox.context]
    for extension in config["contexts"][0]["context"].get("extensions", []):
        extension["extension"].pop("dataPlaneContexts", None)
    for entry in config["clusters"]:  # no rlark.io/server extension: discovery finds no CA and refuses
        entry["cluster"].pop("extensions", None)
    control_only = tmp_path / "control-only.kubeconfig"
    control_only.write_text(yaml.safe_dump(config))
    monkeypatch.setenv("RLARK_CONFIG", str(tmp_path / "no-config.yaml"))
    access = ClusterAccess.open(str(control_only), sandbox.context)
    try:
        # the agent makes the Pod CRs, and a loaded machine takes its time: the check is taken until it read some
        # (the same read the assertions judge; a Pod seen by a read before it may be gone, or not yet made, by then)
        deadline = time.monotonic() + 120
        while not (evidence := gather(access, unscheduled, state)).pods:
            assert time.monotonic() < deadline, "the agent made no Pod CR for the Job"
            time.sleep(0.2)
    finally:
        access.close()
    assert evidence.containers is None
    assert "no data plane for cluster rlark-gpu-a: no CA to verify rlark-server" in evidence.sources["data-plane"]
    assert evidence.pods and all(log.source == "gateway" for log in evidence.logs)
    pods = evaluate(evidence).row(2)
    assert pods.result == "pending"
    assert any(n.startswith("restart counts and exit codes need a data plane") for n in pods.all_notes())


def test_pods_still_pending_after_the_max_wait_fail_at_the_pods_stage(sandbox, capsys, state, access):
    job = fx.unschedulable_job("check-timeout")
    job["metadata"]["annotations"] = {LAUNCH_RECORD_ANNOTATION: json.dumps({"maxWaitSeconds": 1})}
    Actions(access, state_dir=state).submit(job)
    try:  # its 1 s max wait runs out while the check waits for the pending rows to settle
        code, out, _ = _run(sandbox, capsys, "check-timeout", "--wait", "20", "--format", "json")
        document = json.loads(out)
        assert code == 1
        assert document["earliestFailingStage"] == "pods"
        pods = document["checks"][1]
        assert pods["result"] == "fail"
        assert any(n.endswith("(max wait passed)") for n in pods["notes"])
    finally:
        access.delete(JOBS, "check-timeout")


def test_a_state_dir_that_cannot_be_read_or_written_still_gives_the_check(sandbox, capsys, monkeypatch, tmp_path):
    """Issue 33, a seventeenth round (HOME as bastion users have it: sudo -u keeps another user's, a path the file
    system refuses): the saved-YAML look-up listed <state>/submitted unguarded, so a state dir that could not be
    read ended rlark check of a submitted Job in a crash report (PermissionError; here ENAMETOOLONG), and a record
    that could not be saved lost the check's answer. The answer is printed, then one line says the record is not."""
    state = tmp_path / ("s" * 300)
    monkeypatch.setenv("RLARK_STATE_DIR", str(state))
    code, out, err = _run(sandbox, capsys, "demo-ppo", "--format", "json")
    monkeypatch.setenv("RLARK_STATE_DIR", str(tmp_path))  # where the fixtures look for crash reports
    assert json.loads(out)["job"] == "demo-ppo"
    assert code == 1 and err.startswith(f"error: cannot write the record to {state}/checks/") and err.count("\n") == 1
