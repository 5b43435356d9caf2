"""Iterating on runs from the CLI against the sandbox over HTTPS: clone to a draft and submit it, diff two Jobs,
restart, and Workflow manifests checked before they are sent; --readonly refuses each write (read back)."""

from __future__ import annotations

import os
import stat

import yaml

from rlark_tui.model import keys
from tests.cluster.seeding import ROLES, job_manifest

WF_IMAGE = "registry.example/rlinf@sha256:" + "cd" * 32


def test_clone_to_a_draft_then_submit_and_diff_the_two_runs(rl, sb, env):
    draft_file = env / "clone.yaml"
    result = rl("clone", "demo-ppo", "--name", "demo-clone", "--file", str(draft_file))
    assert result.code == 0, result.err
    assert stat.S_IMODE(os.stat(draft_file).st_mode) == 0o600
    draft = yaml.safe_load(draft_file.read_text())
    assert draft["name"] == "demo-clone" and draft["record"]["runId"].startswith("demo-clone-")
    original = sb.store.get("jobs", "demo-ppo")
    old_record = original["metadata"]["annotations"][keys.LAUNCH_RECORD_ANNOTATION]
    assert draft["record"]["outputPath"] != yaml.safe_load(old_record)["outputPath"]
    draft["roles"][0]["env"] = {"LR": "1e-4"}
    draft_file.write_text(yaml.safe_dump(draft))
    result = rl("submit", "-f", str(draft_file))
    assert result.code == 0, result.err
    assert sb.store.get("jobs", "demo-clone") is not None

    result = rl("diff", "demo-ppo", "demo-clone")
    assert result.code == 1, result.err
    assert "@@ role actor" in result.out and "+env.LR: 1e-4" in result.out
    assert "-runId: " in result.out and "+runId: demo-clone-" in result.out and "+outputPath: " in result.out
    assert rl("diff", "demo-ppo", "demo-ppo").code == 0
    missing = rl("diff", "demo-ppo", "no-such-job")
    assert missing.code == 2 and missing.err.count("\n") == 1 and "no-such-job" in missing.err


def test_clone_to_stdout_masks_secrets_and_names_the_next_free_copy(rl, sb):
    sb.store.create("jobs", job_manifest("sec", [dict(ROLES[0], node="gpu-a3")]))
    sb.store.create("jobs", job_manifest("sec-copy", [dict(ROLES[0], node="gpu-a3")]))
    result = rl("clone", "sec")
    assert result.code == 0, result.err
    assert "name: sec-copy-2" in result.out
    assert "hf_supersecretvalue" not in result.out and "HF_TOKEN" in result.out
    assert "no deployment plan" in result.err and "no launch record" in result.err


def test_restart_un_stops_with_the_annotation_and_explains_a_running_job(rl, sb):
    sb.store.create("jobs", {**job_manifest("rs-1", [dict(ROLES[0], node="gpu-a3")]),
                             "spec": {**job_manifest("rs-1", [dict(ROLES[0], node="gpu-a3")])["spec"], "stopped": True}})
    refused = rl("--readonly", "restart", "rs-1", "--yes")
    assert refused.code == 1 and "read-only mode: refusing to restart job rs-1" in refused.err
    assert sb.store.get("jobs", "rs-1")["spec"]["stopped"] is True
    result = rl("restart", "rs-1", "--yes")
    assert result.code == 0, result.err
    live = sb.store.get("jobs", "rs-1")
    assert live["spec"]["stopped"] is False
    assert live["metadata"]["annotations"][keys.RESTARTED_AT_ANNOTATION].endswith("Z")
    assert "does not resume from a checkpoint" in result.out
    again = rl("restart", "rs-1", "--yes")
    assert again.code == 0 and "no controller reads it on a running Job" in again.out
    not_confirmed = rl("restart", "rs-1")
    assert not_confirmed.code == 1 and "It only un-stops a stopped Job" in not_confirmed.err


def test_restart_of_a_finished_job_is_refused(rl, sb):
    job = sb.store.create("jobs", job_manifest("rs-done", [dict(ROLES[0], node="gpu-a3")]))
    sb.store.update("jobs", {**job, "status": {"phase": "Succeeded"}}, subresource="status")
    result = rl("restart", "rs-done", "--yes")
    assert result.code == 1 and "rs-done is Succeeded" in result.err and result.err.count("\n") == 1


def workflow(name: str, templates: list[tuple[str, list[str]]]) -> dict:
    spec = job_manifest("x", [dict(ROLES[0], node="gpu-a3")])["spec"]
    return {"apiVersion": "rlinf.io/v1alpha1", "kind": "Workflow", "metadata": {"name": name},
            "spec": {"jobTemplates": [{"name": t, "dependencies": d, "spec": spec} for t, d in templates]}}


def test_workflow_manifests_are_checked_before_they_are_sent(rl, sb, env):
    path = env / "wf.yaml"
    path.write_text(yaml.safe_dump(workflow("wf-bad", [("train", ["prep"]), ("prep", [])])))
    result = rl("submit", "-f", str(path))
    assert result.code == 1 and "listed after it" in result.err
    assert sb.store.get("workflows", "wf-bad") is None

    path.write_text(yaml.safe_dump(workflow("wf-ok", [("prep", []), ("train", ["prep"])])))
    assert rl("--readonly", "submit", "-f", str(path)).code == 1
    assert sb.store.get("workflows", "wf-ok") is None
    assert rl("--readonly", "submit", "-f", str(path), "--dry-run").code == 0
    result = rl("submit", "-f", str(path))
    assert result.code == 0, result.err
    assert result.out.startswith("workflow.rlinf.io/wf-ok created")
    assert sb.store.get("workflows", "wf-ok")["spec"]["jobTemplates"][1]["dependencies"] == ["prep"]
    listed = rl("get", "workflows", "-o", "wide")
    assert listed.code == 0 and listed.out.split("\n")[0].split() == ["NAME", "PHASE", "JOBS", "AGE", "TEMPLATES"]
    assert any(line.split()[0] == "wf-ok" and line.split()[-1] == "prep,train" for line in listed.out.splitlines())
