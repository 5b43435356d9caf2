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


def edited_demo_copy(rl, sb, env, name: str) -> tuple[dict, object]:
    """A stopped copy of demo-ppo named `name` (submitted through rlark), and its draft as a file to edit."""
    draft_file = env / f"{name}.yaml"
    assert rl("clone", "demo-ppo", "--name", name, "--file", str(draft_file)).code == 0
    assert rl("submit", "-f", str(draft_file)).code == 0
    sb.store.mutate("jobs", name, lambda j: {**j, "spec": {**j["spec"], "stopped": True}})
    sb.store.mutate("jobs", name, lambda j: {**j, "metadata": {**j["metadata"], "annotations": {
        **j["metadata"]["annotations"], "team.example/owner": "alice"}}})
    return yaml.safe_load(draft_file.read_text()), draft_file


def test_edit_and_restart_keeps_annotations_and_renews_the_submission_record(rl, sb, env):
    from rlark_tui.model.submission import submitted_record
    draft, path = edited_demo_copy(rl, sb, env, "ed-1")
    draft["roles"][1]["env"] = {"ROLLOUT_BATCH": "64"}
    path.write_text(yaml.safe_dump(draft))
    assert rl("--readonly", "edit", "ed-1", "-f", str(path), "--yes").code == 1
    assert sb.store.get("jobs", "ed-1")["spec"]["stopped"] is True
    result = rl("edit", "ed-1", "-f", str(path), "--yes")
    assert result.code == 0, result.err
    live = sb.store.get("jobs", "ed-1")
    assert live["spec"]["stopped"] is False
    env_of_rollout = live["spec"]["tasks"][1]["kubernetes"]["workload"]["template"]["spec"]["containers"][0]["env"]
    assert {"name": "ROLLOUT_BATCH", "value": "64"} in env_of_rollout
    annotations = live["metadata"]["annotations"]
    assert annotations["team.example/owner"] == "alice" and keys.RESTARTED_AT_ANNOTATION in annotations
    record = submitted_record(live)
    assert record.intact and record.matches_live
    check = rl("check", "ed-1", "--format", "json")
    rows = {row["id"]: row for row in __import__("json").loads(check.out)["checks"]}
    assert rows[1]["result"] == "pass", rows[1]


def test_edit_sends_nothing_unchanged_and_refuses_a_rename_keeping_the_draft(rl, sb, env, monkeypatch):
    _draft, _path = edited_demo_copy(rl, sb, env, "ed-2")
    before = sb.store.get("jobs", "ed-2")["metadata"]["resourceVersion"]
    editor = env / "editor.sh"
    editor.write_text("#!/bin/sh\nexit 0\n")
    editor.chmod(0o755)
    monkeypatch.setenv("EDITOR", str(editor))
    result = rl("edit", "ed-2", "--yes")
    assert result.code == 0 and "unchanged; nothing was sent" in result.out
    assert sb.store.get("jobs", "ed-2")["metadata"]["resourceVersion"] == before
    editor.write_text("#!/bin/sh\nsed -i 's/^name: ed-2$/name: ed-2b/' \"$1\"\n")
    result = rl("edit", "ed-2", "--yes")
    assert result.code == 1 and "the name is locked to ed-2" in result.err
    kept = result.err.strip().splitlines()[-1].rsplit(" ", 1)[-1]
    assert "name: ed-2b" in open(kept).read() and stat.S_IMODE(os.stat(kept).st_mode) == 0o600
    assert sb.store.get("jobs", "ed-2b") is None


def test_edit_of_a_finished_job_is_refused_and_offers_clone(rl, sb):
    job = sb.store.create("jobs", job_manifest("ed-done", [dict(ROLES[0], node="gpu-a3")]))
    sb.store.update("jobs", {**job, "status": {"phase": "Failed"}}, subresource="status")
    result = rl("edit", "ed-done", "--yes")
    assert result.code == 1 and "ed-done is Failed" in result.err and "rlark clone ed-done" in result.err


def test_a_full_disk_is_one_line_and_leaves_nothing_half_written(sb, env):
    """Issue 33, a fourteenth round (a full disk): a write that found no room (ENOSPC, a quota, a file size
    limit) raised OSError out of the one writer, and `rlark clone --file`, `check --output`, `bundle` and every
    other command that writes ended in a crash report (which a full disk cannot hold either). A real `rlark clone`
    under a 256-byte file size limit (the stand-in for a full disk) says it in one line, exit 1, and leaves no
    file, temporary or not."""
    import resource
    import signal
    import subprocess
    import sys

    def limited() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (256, 256))

    out = env / "drafts"
    out.mkdir(mode=0o700)
    done = subprocess.run([sys.executable, "-m", "rlark_tui", "--kubeconfig", str(sb.kubeconfig), "clone",
                           "demo-ppo", "--file", str(out / "clone.yaml")], capture_output=True, text=True,
                          timeout=120, preexec_fn=limited, env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
    assert (done.returncode, done.stderr.splitlines()[-1]) == (
        1, f"error: cannot write {out / 'clone.yaml'}: File too large"), done.stderr
    assert list(out.iterdir()) == []
