"""Table tests of the pure parts behind the screens.

Rows, ages, filters, dialog texts, header folding, row caching and the log ring buffer.
"""

from __future__ import annotations

import gc
from dataclasses import replace
from datetime import UTC, datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tui_factories import build_snapshot, job_dict, pod_dict

from rlark_tui.flow.snapshot import Snapshot
from rlark_tui.model.lifecycle import consequences
from rlark_tui.model.objects import Job
from rlark_tui.model.timefmt import age
from rlark_tui.view.index import SnapshotIndex, can_stop_or_start, job_rows, role_rows, ssh_fingerprint
from rlark_tui.widgets.filter_bar import make_matcher
from rlark_tui.widgets.log_pane import TEXT, LogBuffer
from rlark_tui.widgets.workers import NO_PODS

NOW = datetime(2026, 11, 29, 12, 0, 0, tzinfo=UTC)


@pytest.mark.parametrize("created, expected", [
    ("2026-11-29T11:59:30Z", "30s"),
    ("2026-11-29T11:50:00Z", "10m"),
    ("2026-11-29T07:00:00Z", "5h"),
    ("2026-11-26T12:00:00Z", "3d"),
    ("", ""),
    ("not a time", ""),
])
def test_age_is_kubectl_style(created, expected):
    assert age(created, NOW) == expected


def test_job_row_counts_running_pods_against_task_replicas_and_names_the_header_node():
    index = SnapshotIndex(build_snapshot([job_dict("demo-ppo", display="PPO demo")]))
    (row,) = job_rows(index)
    assert (row.name, row.display_name, row.job_type, row.phase) == ("demo-ppo", "PPO demo", "RL", "Running")
    assert row.roles == "Actor, Rollout, Environment"
    assert row.pods == "3/3"
    assert row.header_node == "gpu-a1"


def test_pending_pods_are_not_counted_ready_and_header_node_stays_empty_until_scheduled():
    snapshot = build_snapshot([job_dict("j")])
    pods = {key: dict(pod, status={"phase": "Pending", "node": "", "ip": ""})
            for key, pod in snapshot.pods.items()}
    index = SnapshotIndex(Snapshot(jobs=snapshot.jobs, tasks=snapshot.tasks, pods=pods))
    (row,) = job_rows(index)
    assert row.pods == "0/3"
    assert row.header_node == ""


def test_stopped_job_expects_zero_pods_and_offers_start():
    index = SnapshotIndex(build_snapshot([job_dict("j", phase="Stopped", stopped=True)]))
    (row,) = job_rows(index)
    assert row.pods == "0/0"
    assert row.phase == "Stopped"


def test_role_rows_follow_spec_order_and_show_placeholder_without_pods():
    index = SnapshotIndex(build_snapshot([job_dict("j")], with_pods=False))
    rows = role_rows(index, index.job("j")).rows
    assert [r.task_name for r in rows] == ["j-actor", "j-rollout", "j-env"]
    assert [r.head for r in rows] == [True, False, False]
    assert all(r.pods == () and r.expected == 1 for r in rows)
    assert NO_PODS == "No Pod details yet — waiting for task sync"


def test_role_rows_list_each_pod_with_node_and_ip():
    index = SnapshotIndex(build_snapshot([job_dict("j")]))
    rows = role_rows(index, index.job("j")).rows
    assert [(p.name, p.node, p.ip) for r in rows for p in r.pods] == [
        ("j-actor-0", "gpu-a1", "10.0.0.1"), ("j-rollout-0", "gpu-a2", "10.0.0.2"),
        ("j-env-0", "edge-b1", "10.0.0.3")]


@pytest.mark.parametrize("phase, allowed", [("Running", True), ("Pending", True), ("Stopped", True),
                                            ("Succeeded", False), ("Failed", False)])
def test_finished_jobs_cannot_be_stopped_or_started(phase, allowed):
    reason = can_stop_or_start(Job(job_dict("j", phase=phase)))
    assert (reason == "") is allowed
    if not allowed:
        assert reason == (f"job j is {phase}: the platform treats it as finished, so stop or start would do "
                          "nothing — delete and re-create it, or start a copy with `rlark clone j`")


def test_ssh_fingerprint_matches_ssh_keygen_format():
    key = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGu0 alice@example"
    assert ssh_fingerprint(key).startswith("ssh-ed25519 SHA256:")
    assert ssh_fingerprint(key).endswith(" alice@example")
    assert ssh_fingerprint("") == ""
    assert "unreadable" in ssh_fingerprint("ssh-rsa !!!")


@pytest.mark.parametrize("text, line, matches, error", [
    ("ppo", "demo-PPO", True, False),
    ("^demo-(ppo|sac)$", "demo-sac", True, False),
    ("^demo-(ppo|sac)$", "demo-dqn", False, False),
    ("ppo[", "x ppo[ y", True, True),
    ("ppo[", "ppo", False, True),
    ("", "anything", True, False),
])
def test_filter_is_regex_or_literal_with_a_message(text, line, matches, error):
    matcher = make_matcher(text)
    assert matcher.matches(line) is matches
    assert bool(matcher.error) is error


def test_confirm_texts_state_consequences():
    _, stop = consequences("stop", "demo", 3)
    assert "3 Pod(s)" in stop and "does NOT resume from a checkpoint" in stop
    _, start = consequences("start", "demo", 0)
    assert "does NOT resume from a checkpoint" in start
    _, delete = consequences("delete", "demo", 3)
    assert "cannot be undone" in delete and "PVCs" in delete


def test_a_confirm_dialog_holds_one_line_per_job_whatever_the_names():
    """Issue 33, a fifteenth round: the confirm dialogs (the TUI's stop/start/restart/delete and its bulk dialog,
    `rlark delete workflow`'s prompt) quoted Job and Workflow names as the control plane gave them, so a name
    'x\\n- prod: skipped: no longer listed' forged a line of the dialog that asks before a deletion."""
    from rlark_tui.jobspec.workflow import delete_consequences
    from rlark_tui.model.lifecycle import bulk_consequences, bulk_plan

    forged = "x\n- prod: skipped: no longer listed\u2028\u202e"
    for action in ("stop", "start", "restart", "delete"):
        title, _ = consequences(action, forged, 3)
        assert "\n" not in title and "\u2028" not in title and "\u202e" not in title, title
    _, body = bulk_consequences("delete", bulk_plan("delete", [(forged, False, "Running", 2),
                                                               ("prod", False, "Running", 1)]))
    assert [line.split(":")[0] for line in body.splitlines()] == [
        "- x\\n- prod", "- prod", "Each Job is acted on separately; the result of each is reported."], body
    title, body = delete_consequences(forged, [forged, "prod"])
    assert len((title + "\n" + body).splitlines()) == 2 and "\u202e" not in body, body


def test_log_buffer_is_bounded_and_counts_drops():
    buffer = LogBuffer(capacity=100)
    for n in range(250):
        buffer.append("actor/p-0", "", f"line {n}")
    assert len(buffer) == 100
    assert buffer.dropped == 150
    assert [line[TEXT] for line in buffer][0] == "line 150"
    assert buffer.first_seq == 150


def test_the_log_pane_holds_a_bounded_number_of_characters_however_long_a_pods_lines(monkeypatch):
    """A Pod's line is read up to 16 MiB (cluster/http.py), and the pane held 20,000 lines whatever their length: a
    Job printing 16 MiB lines made it hold 320 GiB. The pane and its queue of arriving lines hold at most MAX_CHARS
    of text each, the oldest lines dropped and counted as the line bound drops them. Here MAX_CHARS is 4 MiB and
    the lines 256 KiB, a sixteenth of the pane's 64 MiB and of 4 MiB lines: the same 16 lines are held."""
    from rlark_tui.widgets import log_pane
    from rlark_tui.widgets.log_pane import PendingLines

    monkeypatch.setattr(log_pane, "MAX_CHARS", 4 << 20)
    long = "x" * (256 << 10)
    kept = log_pane.MAX_CHARS // len(long)
    buffer, pending = LogBuffer(20_000), PendingLines(20_000)
    for _ in range(kept + 1):  # a line past MAX_CHARS, so both are at their bound when the last two arrive
        buffer.append("actor/p-0", "", long)
        pending.push("actor/p-0", "", long)
    buffer.extend([("actor/p-0", "", long, False), ("actor/p-0", "", "last", False)])
    pending.push_lines("actor/p-0", ["", ""], [long, "last"])
    assert sum(len(line[TEXT]) for line in buffer) == (kept - 1) * len(long) + 4
    assert buffer.dropped == 3 and [line[TEXT] for line in buffer][-1] == "last"
    assert [len(text) for _, _, text, _ in pending.take()] == [len(long)] * (kept - 1) + [4]
    assert pending.skipped == 3



def test_a_read_of_pod_lines_is_masked_and_cleaned_scanning_its_texts_once(monkeypatch):
    """Issue 34 (a log pane following 20,000 lines/s): the log screen's reading threads cleaned each read's texts
    and the pane's queue cleaned them again, two scans of every line. One scan of the texts and one of the
    timestamps a read; a Pod's OSC 52 is still removed and a known secret still masked."""
    from types import SimpleNamespace

    from rlark_tui.screens.logs import LogScreen
    from rlark_tui.text import sanitize
    from rlark_tui.widgets import log_pane
    from rlark_tui.widgets.log_pane import PendingLines

    scans: list[str] = []

    def counted(scan):
        return lambda text: scans.append(text) or scan(text)

    monkeypatch.setattr(sanitize, "has_control", counted(sanitize.has_control))
    monkeypatch.setattr(log_pane, "has_control", counted(log_pane.has_control))
    pending = PendingLines(1000)
    take, _job, redactor = LogScreen._line_taker(SimpleNamespace(state=SimpleNamespace(index=None),
                                                                  _pending=pending))
    redactor.add_known(["hunter2-secret-value"])
    stamp = "2026-12-07T03:00:00.000000000Z"
    take("actor/p-0", [stamp] * 200, [f"step {n} loss 0.{n}" for n in range(200)])
    assert len(scans) == 2
    take("actor/p-0", [stamp] * 2, ["\x1b]52;c;aGk=\x07copied", "token hunter2-secret-value"])
    texts = [text for _, _, text, _ in pending.take()]
    assert texts[199] == "step 199 loss 0.199" and texts[200] == "copied"
    assert "hunter2" not in texts[201] and texts[201].startswith("token ")

def test_header_folds_connected_data_planes_puts_unhealthy_first_unconfigured_last_and_leaves_ray_out():
    from rlark_tui.flow.snapshot import SourceState
    from rlark_tui.widgets.status_header import shown_sources

    sources = {"control plane": SourceState("control plane", "connected"),
               "data plane rlark-gpu-a": SourceState("data plane rlark-gpu-a", "connected"),
               "data plane rlark-edge-b": SourceState("data plane rlark-edge-b", "connected"),
               "gateway": SourceState("gateway", "unconfigured", "no gateway configured"),
               "ray demo-ppo": SourceState("ray demo-ppo", "disconnected", "503")}
    assert [name for name, _ in shown_sources(sources)] == ["control plane", "2 data planes", "gateway"]
    sources["data plane rlark-edge-b"] = SourceState("data plane rlark-edge-b", "disconnected", "refused")
    assert [name for name, _ in shown_sources(sources)] == [
        "control plane", "data plane rlark-edge-b", "data plane rlark-gpu-a", "gateway"]


def test_rows_of_unchanged_jobs_are_reused_and_changed_ones_derived_again():
    first = build_snapshot([job_dict("a"), job_dict("b")])
    index = SnapshotIndex(first)
    before = index.rows
    jobs = dict(first.jobs, b=job_dict("b", phase="Pending"))
    second = SnapshotIndex(Snapshot(jobs=jobs, tasks=first.tasks, pods=first.pods), index)
    after = second.rows
    assert after["a"] is before["a"]
    assert after["b"] is not before["b"] and after["b"].phase == "Pending"
    assert second.rows_changed_since(index.serial) == {"b"}
    third = SnapshotIndex(Snapshot(jobs={"a": jobs["a"]}, tasks=first.tasks, pods=first.pods), second)
    assert [row.name for row in job_rows(third)] == ["a"]
    assert third.rows_changed_since(index.serial) == {"b"} and third.rows_changed_since(third.serial) == set()
    assert SnapshotIndex(first).rows_changed_since(index.serial) is None


def test_a_changed_topic_result_derives_only_that_row_again_with_reason_and_progress():
    from rlark_tui.model.podstate import PodHealth
    from rlark_tui.telemetry.progress import Progress, ProgressState

    first = build_snapshot([job_dict("a"), job_dict("b")])
    index = SnapshotIndex(first)
    state = ProgressState(Progress(3, 10, 30.0, 20.0, 1.0, at=1000.0))
    health = {"a": {"x/p0": PodHealth(2, "OOMKilled (exit 137)"), "x/p1": PodHealth(1, "Error")}}
    second = SnapshotIndex(replace(first, health=health, progress={"a": state}), index)
    assert second.changed_results["health"] == {"a"} and second.changed_results["ray"] == set()
    assert second.rows_changed_since(index.serial) == {"a"} and second.rows["b"] is index.rows["b"]
    row = second.rows["a"]
    assert row.reason == "OOMKilled (exit 137) +1" and row.progress_text(1000.0) == state.render(1000.0)
    assert row.age(row.created_at) == "0s"


def test_gpu_percent_is_the_mean_over_a_running_jobs_sampled_gpus_and_a_new_round_derives_only_its_rows():
    from rlark_tui.telemetry.sample import PodUsage, usage_sample
    from rlark_tui.telemetry.usage import UsageState

    first = build_snapshot([job_dict("a"), job_dict("b"), job_dict("c", phase="Pending")])
    index = SnapshotIndex(first)
    pods = {key: pod["spec"]["taskName"].partition("-")[0] for key, pod in first.pods.items()}

    def sample(key: str, *utils: float) -> PodUsage:
        return usage_sample(key, 1.0, tuple((n, f"u{n}", util, 1.0, 80.0) for n, util in enumerate(utils)))

    a_pods = [key for key, job in pods.items() if job == "a"]
    samples = {a_pods[0]: sample(a_pods[0], 10.0, 30.0), a_pods[1]: sample(a_pods[1], 80.0),
               a_pods[2]: usage_sample(a_pods[2], 1.0, None, 500.0),  # no nvidia-smi: no GPU number
               **{key: sample(key, 50.0) for key, job in pods.items() if job == "c"},  # not Running
               "gone/pod": sample("gone/pod", 99.0)}  # not (or no longer) listed
    usage = {"all": UsageState(samples=samples)}
    second = SnapshotIndex(replace(first, usage=usage), index)
    assert second.gpu_percent == {"a": 40.0}
    assert second.rows["a"].gpu_percent == 40.0 and second.rows["b"].gpu_percent is None
    assert second.rows_changed_since(index.serial) == {"a"} and second.rows["b"] is index.rows["b"]


def test_usage_targets_kept_from_round_to_round_follow_a_changed_spec_and_a_pod_that_stops_running():
    from rlark_tui.cluster.usage_reads import GPUS, KEY, POD, Targets, targets_of

    first = build_snapshot([job_dict("a"), job_dict("b"), job_dict("c")])
    index, targets = SnapshotIndex(first), Targets()
    before = targets(index, index.jobs)
    assert before == targets_of(index, index.jobs) and {t[GPUS] for t in before} == {1.0}
    assert ("rlark-gpu-a/uid-a-actor-0", "rlark-gpu-a", "a-actor-0", 1.0) in before
    b = job_dict("b")
    b["spec"]["tasks"][0]["kubernetes"]["workload"]["template"]["spec"]["containers"][0]["resources"] = {
        "limits": {"nvidia.com/gpu": "4"}}
    pods = dict(first.pods, **{"rlark-edge-b/uid-c-env-0": pod_dict("c", "env", "rlark-edge-b", "edge-b1", "10.0.0.3",
                                                                    phase="Pending")})
    second = SnapshotIndex(replace(first, jobs=dict(first.jobs, b=b), pods=pods), index)
    after = targets(second, second.jobs)
    assert after == targets_of(second, second.jobs)
    assert [t[GPUS] for t in after if t[POD] == "b-actor-0"] == [4.0]
    assert "c-env-0" not in {t[POD] for t in after} and "c-actor-0" in {t[POD] for t in after}
    assert {id(t) for t in after if t[KEY].startswith("rlark-gpu-a/uid-a-")} <= {id(t) for t in before}
    gc.collect()  # kept from round to round, one a Running Pod: not among what each full pass of the collector walks
    assert [gc.is_tracked(t) for t in after].count(True) == 0
    assert targets(second, {"a": second.jobs["a"]}) == [t for t in after if t[POD].startswith("a-")]


def test_an_index_derived_change_by_change_equals_one_built_from_scratch():
    from tui_factories import pod_dict

    snapshot = build_snapshot([job_dict(name) for name in ("a", "b", "c")])
    index = SnapshotIndex(snapshot)
    gone = next(key for key in snapshot.pods if "uid-b-rollout" in key)
    pods = {key: pod for key, pod in snapshot.pods.items() if key != gone}
    jobs = {**snapshot.jobs, "b": job_dict("b", phase="Failed")}
    steps = [
        ({"jobs": jobs}, {"jobs": {"b"}}),
        ({"pods": pods}, {"pods": {gone}}),
        ({"pods": {**pods, "rlark-gpu-a/uid-c-actor-1": pod_dict("c", "actor", "rlark-gpu-a", "gpu-a1", "10.0.0.9",
                                                                  ordinal=1, phase="Pending")}}, None),
        ({"tasks": {k: v for k, v in snapshot.tasks.items() if "/a-" not in k},
          "jobs": {k: v for k, v in jobs.items() if k != "a"}}, {"tasks": None, "jobs": {"a"}}),
    ]
    for version, (parts, changes) in enumerate(steps, start=1):
        snapshot = Snapshot(**{**{kind: getattr(snapshot, kind) for kind in ("jobs", "tasks", "pods", "sources")},
                               **parts}, version=version,
                            changes={kind: frozenset(keys) for kind, keys in (changes or {}).items() if keys})
        index = SnapshotIndex(snapshot, index)
        fresh = SnapshotIndex(snapshot)
        assert sorted(job_rows(index), key=lambda r: r.name) == sorted(job_rows(fresh), key=lambda r: r.name)
        assert {k: [p.name for p in v] for k, v in index.pods_by_task.items() if v} == {
            k: [p.name for p in v] for k, v in fresh.pods_by_task.items() if v}
        assert index.changed_jobs is not None and len(index.changed_jobs) <= 1


def _task_for(job: str, role: tuple) -> tuple[str, dict]:
    from tui_factories import task_dict

    task = task_dict(job, role[0], role[4])
    return f"{role[4]}/{job}-{role[0]}", task


def _pod_for(job: str, role: tuple, ordinal: int, phase: str) -> tuple[str, dict]:
    from tui_factories import pod_dict

    pod = pod_dict(job, role[0], role[4], role[3], "10.0.0.1", ordinal=ordinal, phase=phase)
    return f"{role[4]}/{pod['metadata']['name']}", pod


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["job", "task", "pod", "pod", "pod"]), st.sampled_from("abc"),
                          st.integers(0, 2), st.integers(0, 2), st.booleans(), st.booleans()),
                min_size=1, max_size=25))
def test_random_changes_derive_the_same_index_as_building_it_afresh(steps):
    from tui_factories import ROLES

    jobs, tasks, pods = {}, {}, {}
    index = SnapshotIndex(Snapshot())
    for version, (kind, job, role_at, ordinal, delete, hinted) in enumerate(steps, start=1):
        role = ROLES[role_at]
        if kind == "job":
            target, key, value = jobs, job, job_dict(job, phase="Pending" if ordinal else "Running")
        elif kind == "task":
            target, (key, value) = tasks, _task_for(job, role)
        else:
            target, (key, value) = pods, _pod_for(job, role, ordinal, "Running" if ordinal % 2 else "Pending")
        if delete:
            target.pop(key, None)
        else:
            target[key] = value
        changes = {kind + "s": frozenset({key})} if hinted else {}
        snapshot = Snapshot(jobs=dict(jobs), tasks=dict(tasks), pods=dict(pods), version=version, changes=changes)
        index = SnapshotIndex(snapshot, index)
        fresh = SnapshotIndex(snapshot)
        assert sorted(job_rows(index), key=lambda r: r.name) == sorted(job_rows(fresh), key=lambda r: r.name)
        assert {k: [p.name for p in v] for k, v in index.pods_by_task.items() if v} == {
            k: [p.name for p in v] for k, v in fresh.pods_by_task.items() if v}
        assert {k: sorted(t.name for t in v) for k, v in index.tasks_by_job.items() if v} == {
            k: sorted(t.name for t in v) for k, v in fresh.tasks_by_job.items() if v}
        assert {k: v.name for k, v in index.tasks_by_name.items()} == {k: v.name for k, v in fresh.tasks_by_name.items()}
