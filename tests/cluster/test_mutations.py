"""submit / stop / start / delete through actions against the sandbox: the submission record, --dry-run,
--readonly, confirmation, --wait, terminal Jobs, and 403 / 409 / 422 from the server as one line each."""

import json
import threading

import yaml

from rlark_tui.cli import main
from rlark_tui.model.submission import SUBMITTED_SPEC_SHA256_ANNOTATION, spec_sha256, submitted_record
from tests.cluster.seeding import ROLES, job_manifest, remove_pod, seed_running_job

DRAFT = """\
name: {name}
type: rl
header: actor
roles:
  - name: actor
    role: Actor
    cluster: rlark-gpu-a
    selector: {{kubernetes.io/hostname: gpu-a3}}
    gpu: 1
    image: registry.example/rlinf@sha256:{digest}
    env: {{WANDB_API_KEY: wandb-secret-value-0123}}
domain: demo-net
runScript: python train.py
"""


def write_manifest(env, name, **changes):
    manifest = job_manifest(name, [dict(ROLES[0], node="gpu-a3")])
    manifest.update(changes)
    path = env / f"{name}.yaml"
    path.write_text(yaml.safe_dump(manifest))
    return path


def test_submit_manifest_stores_spec_and_sha_and_saves_masked_yaml(rl, sb, env):
    path = write_manifest(env, "sub-1")
    result = rl("submit", "-f", str(path))
    assert result.code == 0, result.err
    live = sb.store.get("jobs", "sub-1")
    record = submitted_record(live)
    assert record.intact and record.matches_live
    assert live["metadata"]["annotations"][SUBMITTED_SPEC_SHA256_ANNOTATION] == spec_sha256(live["spec"])
    lines = result.out.splitlines()
    assert lines[0] == f"job.rlinf.io/sub-1 created (spec sha256 {record.sha256[:16]}…)"
    saved = list((env / "state" / "submitted").glob(f"sub-1-*-{record.sha256[:12]}.yaml"))
    assert len(saved) == 1 and lines[1] == f"submitted YAML saved to {saved[0]}"
    text = saved[0].read_text()
    assert "hf_supersecretvalue" not in text and "HF_TOKEN" in text
    assert "Running only means scheduled" in lines[2]


def test_submit_dry_run_creates_nothing_and_readonly_allows_it(rl, sb, env):
    path = write_manifest(env, "sub-dry")
    result = rl("--readonly", "submit", "-f", str(path), "--dry-run")
    assert result.code == 0, result.err
    assert result.out == "job.rlinf.io/sub-dry valid (dry run: local checks and the server accepted it; nothing created)\n"
    assert sb.store.get("jobs", "sub-dry") is None
    assert not (env / "state" / "submitted").exists()


def test_submit_readonly_is_refused(rl, sb, env):
    path = write_manifest(env, "sub-ro")
    result = rl("submit", "-f", str(path), "--readonly")
    assert result.code == 1
    assert result.err == "error: read-only mode: refusing to submit job sub-ro (started with --readonly)\n"
    assert sb.store.get("jobs", "sub-ro") is None


def test_submit_draft_renders_against_live_nodes(rl, sb, env):
    path = env / "draft.yaml"
    path.write_text(DRAFT.format(name="sub-draft", digest="cd" * 32))
    result = rl("submit", "-f", str(path))
    assert result.code == 0, result.err
    live = sb.store.get("jobs", "sub-draft")
    task = live["spec"]["tasks"][0]
    assert task["head"] is True and task["nodeSelector"] == {"kubernetes.io/hostname": "gpu-a3"}
    assert task["kubernetes"]["workload"]["replicas"] == 1
    assert "rlark.io/deployment-plan" in live["metadata"]["annotations"]
    assert submitted_record(live).matches_live


def test_submit_draft_with_errors_prints_findings_and_submits_nothing(rl, sb, env):
    path = env / "bad-draft.yaml"
    path.write_text(DRAFT.format(name="sub-bad", digest="cd" * 32).replace("gpu-a3", "no-such-node"))
    result = rl("submit", "-f", str(path))
    assert result.code == 1
    assert any(line.startswith("error roles[0].selector") for line in result.err.splitlines())
    assert result.err.endswith("error: not submitted: fix the errors above\n")
    assert sb.store.get("jobs", "sub-bad") is None


def test_submit_unusable_files_exit_2(rl, env):
    missing = rl("submit", "-f", str(env / "absent.yaml"))
    assert missing.code == 2 and missing.err == f"error: manifest {env / 'absent.yaml'}: no such file\n"
    (env / "list.yaml").write_text("- a\n- b\n")
    listed = rl("submit", "-f", str(env / "list.yaml"))
    assert listed.code == 2 and "the top level must be a mapping" in listed.err
    (env / "broken.yaml").write_text("a: [\n")
    broken = rl("submit", "-f", str(env / "broken.yaml"))
    assert broken.code == 2 and "not valid YAML" in broken.err and "Traceback" not in broken.err


def test_submit_existing_name_is_a_local_finding(rl, sb, env):
    result = rl("submit", "-f", str(write_manifest(env, "demo-ppo")))
    assert result.code == 1
    assert "error metadata.name: a Job named demo-ppo already exists" in result.err


def test_server_409_is_one_line(rl, sb, env):
    sb.faults.fail(409, verb="create", resource="jobs", times=1)
    result = rl("submit", "-f", str(write_manifest(env, "sub-409")))
    assert result.code == 1
    assert result.err.startswith('error: conflict (409) on create jobs "sub-409": ')
    assert result.err.count("\n") == 1


def test_server_422_lists_field_causes(rl, sb, env):
    manifest = job_manifest("sub-422", [dict(ROLES[0], node="gpu-a3")])
    del manifest["spec"]["tasks"][0]["role"]
    path = env / "invalid.yaml"
    path.write_text(yaml.safe_dump(manifest))
    result = rl("submit", "-f", str(path))
    assert result.code == 1
    assert result.err.startswith('error: invalid (422): jobs "sub-422" rejected: spec.tasks[0].role: ')
    assert result.err.count("\n") == 1


def test_server_403_names_verb_and_resource(rl, sb, env):
    sb.faults.fail(403, verb="create", resource="jobs", times=1)
    result = rl("submit", "-f", str(write_manifest(env, "sub-403")))
    assert result.code == 1
    assert result.err.startswith('error: forbidden (403): not allowed to create jobs "sub-403" on the control plane')


def run_in_thread(argv):
    box = {}
    thread = threading.Thread(target=lambda: box.setdefault("code", main(argv)))
    thread.start()
    return thread, box


def test_stop_wait_returns_when_the_pods_are_gone(sb, env, capsys):
    pods = seed_running_job(sb, "life-stop", ROLES)
    thread, box = run_in_thread(["--kubeconfig", str(sb.kubeconfig), "stop", "life-stop", "--yes", "--wait",
                                 "--timeout", "30"])
    sb.store.wait_until(lambda store: store.get("jobs", "life-stop")["spec"].get("stopped") is True,
                        "job life-stop stopped")
    for cluster, pod in pods.values():
        remove_pod(sb, "life-stop", cluster, pod)
    thread.join(30)
    out = capsys.readouterr().out.splitlines()
    assert box["code"] == 0
    assert out[0] == "job life-stop stopped: its Pods are being deleted (Tasks, PVCs and the head Service stay)"
    assert out[1].startswith("all Pods of job life-stop are gone (")


def test_start_wait_returns_when_the_pods_are_back_and_says_no_resume(sb, env, capsys):
    seed_running_job(sb, "life-start", ROLES)
    for pod in sb.store.list("pods", namespace=None)[0]:
        if pod["metadata"]["labels"].get("rlark.io/task-name", "").startswith("life-start-"):
            sb.store.delete("pods", pod["metadata"]["name"], pod["metadata"]["namespace"])
    sb.store.mutate("jobs", "life-start", lambda job: {**job, "spec": {**job["spec"], "stopped": True}})
    thread, box = run_in_thread(["--kubeconfig", str(sb.kubeconfig), "start", "life-start", "-y", "--wait",
                                 "--timeout", "30"])
    sb.store.wait_until(lambda store: store.get("jobs", "life-start")["spec"].get("stopped") is False,
                        "job life-start started")
    seed_pods_again(sb, "life-start")
    thread.join(30)
    out = capsys.readouterr().out.splitlines()
    assert box["code"] == 0
    assert out[0] == ("job life-start started. Start re-creates the processes from the beginning; it does not "
                      "resume from a checkpoint.")
    assert out[1].startswith("job life-start has its 2/2 Pods back (")


def seed_pods_again(sb, name):
    import uuid
    for role in ROLES:
        task = f"{name}-{role['name']}"
        sb.store.create("pods", {"metadata": {"name": str(uuid.uuid4()), "namespace": role["cluster"],
                                              "labels": {"rlark.io/task-name": task}},
                                 "spec": {"taskName": task, "podName": f"{task}-0", "podNamespace": "rlark-system"},
                                 "status": {"phase": "Pending"}})


def test_stop_and_start_refuse_a_finished_job(rl, sb):
    seed_running_job(sb, "life-done", ROLES, phase="Succeeded")
    for verb in ("stop", "start"):
        result = rl(verb, "life-done", "--yes")
        assert result.code == 1
        assert result.err == (f"error: job life-done is Succeeded: the platform treats it as finished, so {verb} "
                              f"would do nothing — delete and re-create it, or start a copy with `rlark clone life-done`\n")


def test_confirmation_is_required_without_yes(rl, sb, monkeypatch):
    seed_running_job(sb, "life-ask", ROLES)
    result = rl("stop", "life-ask")
    assert result.code == 1
    assert result.err.splitlines()[-1] == "error: not confirmed: stdin is not a terminal; pass --yes to stop job life-ask"
    monkeypatch.setattr("sys.stdin.isatty", lambda: True, raising=False)
    monkeypatch.setattr("builtins.input", lambda prompt: "n")
    answered = rl("stop", "life-ask")
    assert answered.code == 1 and answered.err.endswith("error: not confirmed: job life-ask was not stopped\n")
    assert "Sets spec.stopped: true." in answered.err and "does NOT resume from a checkpoint" in answered.err
    assert sb.store.get("jobs", "life-ask")["spec"].get("stopped") is not True


def test_readonly_refuses_every_lifecycle_action(rl, sb):
    seed_running_job(sb, "life-ro", ROLES)
    for verb in ("stop", "start", "delete"):
        result = rl("--readonly", verb, "life-ro", "--yes")
        assert result.code == 1
        assert result.err == f"error: read-only mode: refusing to {verb} job life-ro (started with --readonly)\n"
    assert sb.store.get("jobs", "life-ro") is not None


def test_delete_wait(rl, sb):
    seed_running_job(sb, "life-del", ROLES)
    result = rl("delete", "life-del", "--yes", "--wait", "--timeout", "20")
    assert result.code == 0, result.err
    lines = result.out.splitlines()
    assert lines[0] == "job life-del deleted (its Tasks, workloads, head Service and task PVCs go with it)"
    assert lines[1].startswith("job life-del is gone (")
    assert sb.store.get("jobs", "life-del") is None
    again = rl("delete", "life-del", "--yes")
    assert again.code == 1 and again.err == 'error: not found (404): jobs "life-del"\n'


def test_get_submitted_annotation_reads_back_through_the_api(rl, sb, env):
    rl("submit", "-f", str(write_manifest(env, "sub-read")))
    document = json.loads(rl("get", "job", "sub-read", "-o", "json").out)
    assert document["metadata"]["annotations"][SUBMITTED_SPEC_SHA256_ANNOTATION] == spec_sha256(
        sb.store.get("jobs", "sub-read")["spec"])
