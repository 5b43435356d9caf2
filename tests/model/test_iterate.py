"""Iterating on runs, the pure parts: what changed between two Jobs, a Job back as a draft (clone, edit), and
Workflows (the controller's next step, why a template waits, checks before submit)."""

from __future__ import annotations

import copy
import json
from datetime import UTC, datetime

import pytest

from rlark_sandbox.workflows import next_state
from rlark_tui.jobspec.build import build_job
from rlark_tui.jobspec.clone import clone_of, draft_of, free_name, new_run
from rlark_tui.jobspec.draft import load_draft
from rlark_tui.jobspec.jobdiff import diff_jobs, render_side_by_side, render_unified
from rlark_tui.jobspec.workflow import template_states, workflow_findings

NOW = datetime(2026, 12, 1, 4, 0, 0, tzinfo=UTC)
NODES = [{"metadata": {"name": n, "namespace": ns, "labels": {"kubernetes.io/hostname": n}},
          "status": {"phase": "Online", "allocatable": {"nvidia.com/gpu": "8"}, "capacity": {"nvidia.com/gpu": "8"}}}
         for n, ns in (("gpu-a1", "rlark-gpu-a"), ("gpu-a2", "rlark-gpu-a"), ("edge-b1", "rlark-edge-b"))]
DRAFT = """\
name: ppo-7
displayName: PPO 7
type: rl
header: actor
roles:
  - name: actor
    role: Actor
    cluster: rlark-gpu-a
    selector: {kubernetes.io/hostname: gpu-a1}
    gpu: 2
    memory: 16Gi
    image: registry.example/rlinf@sha256:<digest>
    prepareScript: pip install -e .
    env: {LR: "3e-4", WANDB_API_KEY: wandb-secret-value-0123}
    mounts:
      - {type: storage, target: /mnt/ckpt, storageClass: s3-rclone}
      - {type: host, target: /mnt/data, source: /data/sets}
  - name: rollout
    role: Rollout
    cluster: rlark-gpu-a
    selector: {kubernetes.io/hostname: gpu-a2}
    image: registry.example/rlinf@sha256:<digest>
runScript: |
  cd /workspace/RLinf
  bash examples/run_ppo.sh
tensorboardDir: /mnt/ckpt/tb
record:
  runId: ppo-7
  codeRef: 0123456789abcdef0123456789abcdef01234567
  outputPath: /mnt/ckpt/ppo-7
""".replace("<digest>", "ab" * 32)


def job_from(text: str) -> dict:
    result = build_job(text, NODES, [])
    assert result.ok, result.findings
    return result.manifest


@pytest.fixture(scope="module")
def job() -> dict:
    return job_from(DRAFT)


# -- diff -------------------------------------------------------------------------------------------------------

def test_a_job_against_itself_has_no_changes(job):
    assert diff_jobs(job, copy.deepcopy(job)) == []
    assert render_unified([], "a", "b") == "" and render_side_by_side([], "a", "b") == ""


def test_diff_shows_env_record_and_script_changes_per_role_and_masks_secrets(job):
    other = job_from(DRAFT.replace('LR: "3e-4"', 'LR: "1e-4"').replace("wandb-secret-value-0123", "wandb-other-secret-9")
                     .replace("runId: ppo-7", "runId: ppo-8").replace("bash examples/run_ppo.sh", "bash run2.sh"))
    changes = {(c.section, c.field): (c.old, c.new) for c in diff_jobs(job, other)}
    assert changes[("role actor", "env.LR")] == ("3e-4", "1e-4")
    assert changes[("record", "runId")] == ("ppo-7", "ppo-8")
    assert ("role actor", "runScript") in changes
    assert ("role actor", "env.WANDB_API_KEY") not in changes      # both masked: a secret's change is not shown
    text = render_unified(diff_jobs(job, other), "ppo-7", "ppo-8")
    assert "wandb-" not in text and "@@ role actor" in text and "-env.LR: 3e-4" in text and "+env.LR: 1e-4" in text
    assert "-bash examples/run_ppo.sh" in text.replace("   ", "") and "+bash run2.sh" in text.replace("   ", "")


def test_a_diff_masks_either_jobs_secret_env_values_wherever_either_shows_them(job):
    """Issue 33, secrets in another shape and a secret renamed by a hostile control plane: `rlark diff` (the diff
    screen, resume's diff) masked an env entry by its name only, so a run script that logged in with the
    WANDB_API_KEY's value, and the other Job's entry that a control plane renamed `0`, showed the value."""
    value = "zqDiffWandb77x1"
    one, other = copy.deepcopy(job), copy.deepcopy(job)
    one["spec"]["tasks"][0]["runScript"] = f"wandb login {value}\npython train.py"
    for side, name in ((one, "WANDB_API_KEY"), (other, "0")):
        side["spec"]["tasks"][0]["kubernetes"]["workload"]["template"]["spec"]["containers"][0]["env"].append(
            {"name": name, "value": value})
    changes = diff_jobs(one, other)
    for text in (render_unified(changes, "a", "b"), render_side_by_side(changes, "a", "b", 200)):
        assert value not in text, text
    assert {(c.field, c.new) for c in changes} >= {("env.0", "***")}


def test_a_diff_line_holds_one_field_whatever_the_jobs_text(job):
    """Issue 33, an eleventh round: a one-line value or a field's name (an env name, a record key) was printed as it
    was, and the diff screen splits its lines where str.splitlines does, so a display name 'x<U+2028>+stopped: yes'
    showed a forged green line '+stopped: yes' as a change of its own; side by side kept U+2028 and bidi controls.
    Each line of both renderings holds one field (sinks.one_line)."""
    other = copy.deepcopy(job)
    other["metadata"].setdefault("annotations", {})["rlark.io/display-name"] = "x\u2028+stopped: yes\u202e"
    other["spec"]["tasks"][0]["kubernetes"]["workload"]["template"]["spec"]["containers"][0]["env"].append(
        {"name": "A\u2029+env.LR: 9", "value": "1"})
    for text in (render_unified(diff_jobs(job, other), "a", "b"), render_side_by_side(diff_jobs(job, other), "a", "b")):
        assert text.splitlines() == text.split("\n")[:-1] and "\u202e" not in text, text
        assert not [line for line in text.splitlines() if line.startswith(("+stopped", "+env.LR: 9"))], text


def test_an_env_entry_named_by_no_text_is_no_entry_of_the_jobs_role(job):
    """Issue 33, round H33, a Job author's container env (the platform keeps the pod template as given) or a hostile
    control plane: an env entry whose name was a list or an object was a dict key in the diff, TypeError
    (unhashable): `rlark diff`, `rlark resume` (it prints the diff first) and the TUI's resume dialog and diff screen
    ended in a crash report. The typed view reads an env entry only with a name that is text (model.objects)."""
    from rlark_tui.model.objects import Job

    other = copy.deepcopy(job)
    env = other["spec"]["tasks"][0]["kubernetes"]["workload"]["template"]["spec"]["containers"][0]["env"]
    env += [{"name": ["forged"], "value": "1"}, {"name": {"a": 1}, "value": "2"}, {"value": "3"}]
    assert diff_jobs(job, other) == [] and Job(other).tasks[0].env == Job(job).tasks[0].env


def test_side_by_side_keeps_each_jobs_text_in_its_column_whatever_its_width(job):
    """Issue 33, a sixteenth round (Unicode that forges a table without a newline): `rlark diff` and the diff screen
    cut and padded a value by its length in code points, so a Job author's env value of 22 wide characters and
    '  forged-new' took 20 columns more than its own and showed 'forged-new' under the other Job's header, the
    real value pushed aside; combining marks took fewer. Each cell is cut and padded by the columns it shows."""
    from rlark_tui.text.sinks import cell_width

    other = copy.deepcopy(job)
    env = other["spec"]["tasks"][0]["kubernetes"]["workload"]["template"]["spec"]["containers"][0]["env"]
    env += [{"name": "WIDE", "value": "中" * 22 + "  forged-new"}, {"name": "MARKS", "value": "x\u0301" * 60},
            {"name": "ＦＵＬＬ" * 9, "value": "ｖ" * 40}]
    text = render_side_by_side(diff_jobs(other, job), "other", "ppo-7", width=100)
    header, *lines = text.splitlines()
    start = cell_width(header[:header.index("ppo-7")])

    def right(line: str) -> str:  # what a terminal shows from the right column's first cell on
        shown = next(i for i in range(len(line) + 1) if cell_width(line[:i]) >= start)
        return line[shown:].lstrip()

    rows = {line.split()[0]: line for line in lines if not line.startswith("[")}
    assert right(rows["env.WIDE"]) == right(rows["env.MARKS"]) == "(none)", text
    full = next(line for field, line in rows.items() if field.startswith("env.ＦＵＬＬ"))
    assert right(full) == "(none)" and cell_width(full[:full.index("ｖ")]) == cell_width(
        header[:header.index("other")]), text


def test_scripts_too_long_to_compare_line_by_line_are_said_so(job):
    """A Job author's script is compared line by line only within DIFF_LINES: difflib's matching is quadratic, and
    scripts of 40,000 lines, one line in two alike, took minutes of the TUI's UI thread in the diff screen."""
    from rlark_tui.jobspec.jobdiff import DIFF_LINES

    lines = DIFF_LINES + 1
    long = copy.deepcopy(job)
    long["spec"]["tasks"][0]["runScript"] = "\n".join(f"l{i}" for i in range(lines))
    other = copy.deepcopy(job)
    other["spec"]["tasks"][0]["runScript"] = "\n".join(f"l{i}" if i % 2 else f"m{i}" for i in range(lines))
    text = render_unified(diff_jobs(long, other), "a", "b")
    assert f"   {lines:,} lines -> {lines:,} lines: more than {DIFF_LINES:,}, not compared line by line" in text
    assert "+m0" not in text.replace("   ", "")


def test_diff_leaves_out_names_derived_from_the_job_name_and_rlark_noise(job):
    renamed = job_from(DRAFT.replace("name: ppo-7\n", "name: ppo-9\n", 1))
    renamed["status"] = {"phase": "Running"}
    renamed["metadata"]["annotations"]["rlark.io/submitted-spec-sha256"] = "f" * 64
    assert "pvc-ppo-9-actor" in str(renamed) and "pvc-ppo-7-actor" in str(job)
    assert diff_jobs(job, renamed) == []


def test_diff_names_a_role_only_one_side_has_and_side_by_side_has_both_values(job):
    other = copy.deepcopy(job)
    other["spec"]["tasks"] = other["spec"]["tasks"][:1]
    other["spec"]["tasks"][0]["kubernetes"]["workload"]["template"]["spec"]["containers"][0]["image"] = "x/rlinf:v2"
    changes = diff_jobs(job, other)
    assert {c.section for c in changes} == {"role actor", "role rollout"}
    assert any(c.section == "role rollout" and c.field == "image" and c.new == "(none)" for c in changes)
    text = render_side_by_side(changes, "ppo-7", "other", width=100)
    assert "[role actor]" in text and "x/rlinf:v2" in text


# -- clone and edit --------------------------------------------------------------------------------------------

def test_a_draft_of_a_wizard_made_job_renders_the_same_spec(job):
    recovered = draft_of(job)
    assert recovered.notes == ()
    again = build_job(recovered.draft, NODES, [])
    assert again.ok, again.findings
    assert again.manifest["spec"] == job["spec"]
    assert again.manifest["metadata"]["annotations"] == job["metadata"]["annotations"]


def test_a_clone_differs_only_in_name_derived_fields_run_id_and_output_prefix(job):
    recovered = clone_of(job, ["ppo-7", "ppo-7-copy"], NOW)
    draft = recovered.draft
    assert draft.name == "ppo-7-copy-2"
    assert draft.record["runId"] == "ppo-7-copy-2-20261201T040000Z"
    assert draft.record["outputPath"] == "/mnt/ckpt/ppo-7-copy-2-20261201T040000Z"
    assert any("output prefix" in n for n in recovered.notes)
    copy_job = build_job(draft, NODES, [job]).manifest
    assert diff_jobs(job, copy_job) == [c for c in diff_jobs(job, copy_job) if c.section == "record"]
    assert {c.field for c in diff_jobs(job, copy_job)} == {"runId", "outputPath"}
    claims = copy_job["spec"]["tasks"][0]["kubernetes"]["workload"]["pvcStorageMap"]
    assert claims == {"pvc-ppo-7-copy-2-actor-mnt-ckpt": "s3-rclone"}


@pytest.mark.parametrize("record, out", [
    ({"runId": "r1", "outputPath": "/ck/r1/ckpt"}, "/ck/run-T/ckpt"),
    ({"runId": "r1", "outputPath": "/ck/shared/"}, "/ck/shared/run-T"),
    ({"outputPath": "/ck"}, "/ck/run-T"),
    ({"runId": "r1"}, None),
])
def test_new_run_gets_its_own_output_prefix(record, out):
    result = new_run(record, "run", NOW)
    assert result["runId"] == "run-20261201T040000Z"
    assert result.get("outputPath") == (out.replace("run-T", "run-20261201T040000Z") if out else None)


def test_free_name_stays_a_dns_label():
    assert free_name("a" * 63, []) == "a" * 58 + "-copy"
    assert free_name("x", ["x-copy", "x-copy-2"]) == "x-copy-3"


def test_a_job_made_outside_rlark_says_what_it_could_not_recover():
    manifest = {"apiVersion": "rlinf.io/v1alpha1", "kind": "Job", "metadata": {"name": "hand"}, "spec": {"tasks": [
        {"name": "actor", "head": True, "role": "Actor", "nodeSelector": {"pool": "h100,a100"},
         "runScript": "python t.py", "kubernetes": {"workload": {"kind": "StatefulSet", "replicas": 2, "template": {
             "spec": {"containers": [{"name": "main", "image": "i@sha256:" + "cd" * 32, "env": [
                 {"name": "RLARK_TASK_ROLE", "value": "Actor"},
                 {"name": "TOKEN", "valueFrom": {"secretKeyRef": {"name": "s", "key": "t"}}}]}]}}}}}]}}
    recovered = draft_of(manifest)
    notes = " | ".join(recovered.notes)
    for expected in ("no deployment plan", "no launch record", "cluster was not recorded", "several values",
                     "env TOKEN comes from a reference"):
        assert expected in notes
    role = recovered.draft.roles[0]
    assert (role.name, recovered.draft.header, recovered.draft.run_script) == ("Actor", "Actor", "python t.py")


def test_each_note_of_a_clone_is_one_line_whatever_the_jobs_text(job):
    """issue 33, a twelfth round: a note quotes the Job's text (an env name, the record's output prefix), and
    `rlark clone` printed each as 'note: …' and the TUI's toast joined them, so a line break forged a note."""
    hostile = copy.deepcopy(job)
    container = hostile["spec"]["tasks"][0]["kubernetes"]["workload"]["template"]["spec"]["containers"][0]
    container["env"].append({"name": "X\nnote: all recovered\u2028\u202egnp", "valueFrom": {"secretKeyRef": {}}})
    record = json.loads(hostile["metadata"]["annotations"]["rlark.io/launch-record"])
    record["outputPath"] = "/o/x\r\nnote: forged\x1b[2J"
    hostile["metadata"]["annotations"]["rlark.io/launch-record"] = json.dumps(record)
    notes = clone_of(hostile, [], NOW).notes
    assert any("comes from a reference" in n for n in notes) and any("output prefix" in n for n in notes)
    for note in notes:
        assert note.isprintable(), note


def test_loaded_clone_draft_round_trips_through_yaml(job):
    from rlark_tui.jobspec.draft import dump_draft
    draft = clone_of(job, [], NOW).draft
    again, findings = load_draft(dump_draft(draft))
    assert findings == [] and again == draft


def test_a_clone_draft_shows_a_jobs_bidi_controls_and_line_separators_as_escapes(job):
    """`rlark clone` prints the draft and `rlark edit` opens it in the user's editor, to read before it is sent: a
    run script's U+202E (right-to-left override) was written raw, so the terminal or editor showed the command
    reordered (what is run is not what is read), and a display name's U+2028 broke its line. Each is an escape in a
    double-quoted string, read back to the same draft."""
    from rlark_tui.jobspec.draft import dump_draft

    hostile = copy.deepcopy(job)
    hostile["metadata"]["annotations"]["rlark.io/display-name"] = "PPO\u2028Status: ok\x85"
    hostile["spec"]["tasks"][0]["runScript"] = "cd /w\nrm -rf ~ # \u202e\u2066 ls \u2069\u2067"
    draft = clone_of(hostile, [], NOW).draft
    text = dump_draft(draft)
    assert not any(c in text for c in "\u202e\u2066\u2067\u2069\u2028\x85"), text
    assert "\\u202e" in text and "\\L" in text
    again, findings = load_draft(text)
    assert findings == [] and again == draft


# -- workflows ---------------------------------------------------------------------------------------------------

def spec(kind: str = "StatefulSet") -> dict:
    return {"tasks": [{"name": "actor", "head": True, "role": "Actor", "agentType": "Kubernetes",
                       "nodeSelector": {"kubernetes.io/hostname": "gpu-a1"}, "runScript": "python t.py",
                       "kubernetes": {"workload": {"kind": kind, "replicas": 1, "template": {"spec": {"containers": [
                           {"name": "main", "image": "i@sha256:" + "cd" * 32}]}}}}}]}


def workflow(templates: list[tuple[str, list[str]]], status: dict | None = None) -> dict:
    wf = {"apiVersion": "rlinf.io/v1alpha1", "kind": "Workflow", "metadata": {"name": "wf", "uid": "u-1"},
          "spec": {"jobTemplates": [{"name": n, "dependencies": d, "spec": spec()} for n, d in templates]}}
    if status is not None:
        wf["status"] = status
    return wf


def test_first_pass_starts_the_workflow_and_creates_only_jobs_without_dependencies():
    status, create = next_state(workflow([("prep", []), ("train", ["prep"])]), {}, "T0")
    assert status["phase"] == "Running" and status["startTime"] == "T0"
    assert status["jobs"] == [{"name": "prep", "phase": "Pending", "message": ""}, {"name": "train"}]
    [job] = create
    assert job["metadata"]["name"] == "wf-prep"
    assert job["metadata"]["labels"] == {"rlinf.io/workflow": "wf"}
    assert job["metadata"]["ownerReferences"][0]["uid"] == "u-1" and job["spec"] == spec()


def test_a_dependent_is_created_once_its_dependency_succeeded_and_never_twice():
    wf = workflow([("prep", []), ("train", ["prep"])], {"phase": "Running", "jobs": [
        {"name": "prep", "phase": "Pending"}, {"name": "train"}]})
    status, create = next_state(wf, {"wf-prep": {"status": {"phase": "Running"}}}, "T1")
    assert create == [] and status["jobs"][0]["phase"] == "Running"
    wf["status"] = status
    status, create = next_state(wf, {"wf-prep": {"status": {"phase": "Succeeded"}}}, "T2")
    assert [j["metadata"]["name"] for j in create] == ["wf-train"]
    wf["status"] = status
    jobs = {"wf-prep": {"status": {"phase": "Succeeded"}}, "wf-train": {"status": {"phase": "Running"}}}
    status, create = next_state(wf, jobs, "T3")
    assert create == [] and status["jobs"][1]["phase"] == "Running"


@pytest.mark.parametrize("phases, final", [(("Succeeded", "Failed"), "Failed"), (("Succeeded", "Succeeded"), "Succeeded")])
def test_any_failed_job_fails_the_workflow_and_all_succeeded_succeeds_it(phases, final):
    wf = workflow([("prep", []), ("train", ["prep"])], {"phase": "Running", "jobs": [
        {"name": "prep", "phase": "Succeeded"}, {"name": "train", "phase": "Running"}]})
    jobs = {"wf-prep": {"status": {"phase": phases[0]}}, "wf-train": {"status": {"phase": phases[1]}}}
    status, _ = next_state(wf, jobs, "T9")
    assert status["phase"] == final and status["endTime"] == "T9"
    wf["status"] = status
    assert next_state(wf, jobs, "T10") == (None, [])


def test_a_forward_dependency_is_rejected_whole_and_nothing_is_written():
    assert next_state(workflow([("train", ["prep"]), ("prep", [])]), {}, "T0") == (None, [])
    states = template_states(workflow([("train", ["prep"]), ("prep", [])]), {})
    assert all("depends on unknown job 'prep'" in s.waiting for s in states)


def test_the_view_says_why_a_template_waits_in_dependency_order():
    wf = workflow([("prep", []), ("train", ["prep"]), ("eval", ["train"]), ("lint", [])])
    states = template_states(wf, {"wf-prep": {"status": {"phase": "Running"}}})
    assert [(s.name, s.layer, s.phase) for s in states] == [("prep", 0, "Running"), ("lint", 0, ""),
                                                             ("train", 1, ""), ("eval", 2, "")]
    assert states[0].waiting == ""
    assert states[1].waiting == "due: the controller creates its Job on its next pass"
    assert "waits for prep (Job wf-prep is Running; it must reach Succeeded" in states[2].waiting
    assert "StatefulSet Job never reaches Succeeded" in states[2].waiting
    assert states[3].waiting == "waits for train (its Job is not created yet)"


@pytest.mark.parametrize("templates, message", [
    ([("train", ["prep"]), ("prep", [])], "listed after it"),
    ([("train", ["nope"])], "depends on unknown job 'nope'"),
    ([("train", ["train"])], "depends on itself"),
    ([("a", []), ("a", [])], "two templates are named 'a'"),
])
def test_workflow_findings_refuse_what_the_controller_would_reject(templates, message):
    findings = workflow_findings(workflow(templates), NODES, [])
    assert any(f.level == "error" and message in f.message for f in findings), findings


def test_workflow_findings_check_each_template_like_a_job_and_existing_job_names():
    wf = workflow([("prep", []), ("train", ["prep"])])
    wf["spec"]["jobTemplates"][1]["spec"]["tasks"][0]["nodeSelector"] = {"kubernetes.io/hostname": "nowhere"}
    findings = workflow_findings(wf, NODES, [{"metadata": {"name": "wf-prep"}}])
    fields = {(f.level, f.field) for f in findings}
    assert ("error", "spec.jobTemplates[1].spec.tasks[0].nodeSelector") in fields
    assert ("error", "spec.jobTemplates[0].name") in fields          # wf-prep exists: the controller adopts it
    assert ("warning", "spec.jobTemplates[0].spec") in fields        # train waits on a StatefulSet Job


def test_a_template_waiting_for_many_names_five_and_counts_the_rest():
    """A Workflow's author sets how many dependencies a template has: one depending on 70,000 listed before it
    was a 2.5 MB cell of the Workflow's table, laid out at every poll."""
    wf = workflow([*((f"d{i}", []) for i in range(1000)), ("last", [f"d{i}" for i in range(1000)])])
    waiting = template_states(wf, {"wf-d0": {"status": {"phase": "Succeeded"}}})[-1].waiting
    assert waiting.startswith("waits for d1 (its Job is not created yet), d2 (")
    assert waiting.endswith("d5 (its Job is not created yet) and 994 more") and len(waiting) < 300


def test_workflow_findings_read_each_templates_dependencies_a_bounded_number_of_times(monkeypatch):
    """Issue 33, an eighteenth round (a Workflow manifest someone hands over, `rlark submit -f`): the findings asked
    every template whether any other depended on it, and looked for each forward dependency among all the templates
    after it, so 4,000 templates took 13 s before anything was sent, 800 that each depended on every later one
    14 s, and a 4 MiB manifest (aliases let it name 60,000) most of an hour. Each template's dependencies are read
    a bounded number of times, whatever their number; the findings are the same."""
    from rlark_tui.jobspec import workflow as wf_module

    count = 100
    calls = []
    read = wf_module.dependencies
    monkeypatch.setattr(wf_module, "dependencies", lambda template: calls.append(1) or read(template))
    wf = workflow([(f"t{i}", [f"t{j}" for j in range(i + 1, min(i + 4, count))]) for i in range(count)])
    findings = workflow_findings(wf, NODES, [])
    assert len(calls) <= 3 * count, f"{len(calls):,} reads of {count:,} templates' dependencies"
    forward = [f for f in findings if "listed after it" in f.message]
    assert len(forward) == 3 * count - 6 and forward[0].field == "spec.jobTemplates[0].dependencies"
    assert sum("start only when its Job is Succeeded" in f.message for f in findings) == count - 1
