"""`rlark resume` (issue 35 item 4): runner.resume_dir set where the run command takes its Hydra overrides, an
incomplete checkpoint refused unless --force, --readonly refused, the diff shown; the demo workload resumes as
RLinf's EmbodiedRunner does (its line, the step after the checkpoint)."""

from __future__ import annotations

import json
import shlex
import time
from pathlib import Path

import pytest

from rlark_sandbox.demo_workload import metric_table, resume, write_checkpoint
from rlark_tui.cluster import ClusterAccess
from rlark_tui.cluster.kinds import JOBS
from rlark_tui.errors import RlarkError
from rlark_tui.flow.actions import Actions
from rlark_tui.jobspec.resume import resume_dir_of, resume_step, resumed, with_resume_dir
from rlark_tui.telemetry.progress import latest_progress
from tests.checks import fixtures as fx
from tests.clirun import cli_runner
from tests.metrics.test_checkpoints import NAME, listed  # noqa: F401 (the fixture)


def test_override_appended_to_the_run_command_or_replaced():
    assert with_resume_dir("python train.py runner.max_steps=40", "/o/global_step_20") == \
        "python train.py runner.max_steps=40 runner.resume_dir=/o/global_step_20"
    assert with_resume_dir("cd /w\npython train.py \\\n  a=1\n# done\n", "/o/x y/global_step_2") == \
        "cd /w\npython train.py \\\n  a=1 runner.resume_dir='/o/x y/global_step_2'\n# done\n"
    assert with_resume_dir("python t.py runner.resume_dir='/old dir' b=2", "/n/global_step_3") == \
        "python t.py runner.resume_dir=/n/global_step_3 b=2"
    with pytest.raises(ValueError):
        with_resume_dir("# nothing\n", "/o/global_step_1")
    assert [resume_step(p) for p in ("/o/global_step_20", "/o/global_step_20/", "/o/x", "/o/global_step_²")] == [
        20, 20, None, None]


def test_the_override_goes_into_the_command_never_into_a_comment():
    """A last command line ending in `# comment` took the override inside the comment, and so did a comment that
    named an earlier resume_dir: the resumed run started from scratch. A `#` inside a word or quotes is no comment."""
    assert with_resume_dir("python train.py a=1  # the PPO run\n", "/o/global_step_20") == \
        "python train.py a=1 runner.resume_dir=/o/global_step_20 # the PPO run\n"
    script = "# was runner.resume_dir=/old/global_step_1\npython t.py 'x # y' b#c"
    assert resume_dir_of(script) is None
    resumed = with_resume_dir(script, "/o/global_step_2")
    assert resumed == "# was runner.resume_dir=/old/global_step_1\npython t.py 'x # y' b#c runner.resume_dir=/o/global_step_2"
    assert resume_dir_of(resumed) == "/o/global_step_2"
    assert with_resume_dir(resumed, "/n/global_step_3").endswith("b#c runner.resume_dir=/n/global_step_3")


def test_a_second_resume_replaces_the_whole_quoted_word_of_the_first():
    """A location with a quote (from a hostile Header log) is quoted `'/o/x'"'"'y/…'`; the next resume replaced only
    `'/o/x'` and left the rest glued to its own path (runner.resume_dir=/n/global_step_3'y/…). A word with escapes or
    double quotes is replaced to its end too, never leaving half a quote."""
    first = with_resume_dir("python t.py a=1", "/o/x'y $(id)`id`/global_step_2")
    assert shlex.split(first)[-1] == "runner.resume_dir=/o/x'y $(id)`id`/global_step_2"
    assert resume_dir_of(first) == "/o/x'y $(id)`id`/global_step_2"
    assert with_resume_dir(first, "/n/global_step_3") == "python t.py a=1 runner.resume_dir=/n/global_step_3"
    for existing in ('runner.resume_dir=/a/"b c"', "runner.resume_dir=/a/b\\ c", 'runner.resume_dir="/a/\\"q"'):
        assert with_resume_dir(f"python t.py {existing} b=2", "/n/global_step_3") == \
            "python t.py runner.resume_dir=/n/global_step_3 b=2"


def test_a_job_nested_deeper_than_a_manifest_may_be_is_not_resumed_in_one_line():
    """Issue 33, round H33, a Job author's spec (fields the platform keeps as given) or a hostile control plane: a
    field nested 600 levels (the cluster's answers are decoded to 1,024) made the resume's copy of the Job raise
    RecursionError, a crash report of `rlark resume` and of the TUI at the Checkpoints tab's u. A Job nested deeper
    than a manifest rlark sends may be (jobspec.draft's YAML bound, 100 levels) is refused in one line."""
    deep: list = []
    for _ in range(600):
        deep = [deep]
    job = fx.job()
    job["spec"]["tasks"][0]["kubernetes"]["workload"]["template"]["spec"]["extra"] = deep
    with pytest.raises(RlarkError, match=r"^resume: the Job nests deeper than 100 levels, more than a manifest rlark "
                                         r"sends may \(submit -f reads 100\): not resumed$"):
        resumed(job, "/o/ppo/checkpoints/global_step_20")
    job["spec"]["tasks"][0]["kubernetes"]["workload"]["template"]["spec"]["extra"] = [[[["shallow"]]]]
    assert "runner.resume_dir=" in str(resumed(job, "/o/ppo/checkpoints/global_step_20")["spec"])


def test_demo_workload_resumes_at_the_step_after_the_checkpoint(tmp_path, capsys):
    actor = write_checkpoint(tmp_path, 20, [0.5] * 8)
    step, weights = resume(str(actor.parent))
    assert (step, weights) == (20, [0.5] * 8)
    assert f"Resuming training from checkpoint directory {actor.parent}." in capsys.readouterr().out
    table = metric_table(21, 40, 3.0, {"time/step": 3.0}, start_step=20)
    row = latest_progress([(1.0, line) for line in table.splitlines()])
    assert (row.step, row.total) == (21, 40)
    with pytest.raises(SystemExit, match="does not exist"):
        resume(str(tmp_path / "global_step_99"))
    sizes = [f.stat().st_size for f in actor.rglob("*") if f.is_file()]
    assert len(sizes) == 3 and sum(sizes) > 4096, "a few KB, with the three files §3.2 names"


def test_demo_workload_resumes_as_the_reasoning_runners_say_and_fails_late_on_an_incomplete_one(tmp_path, capsys):
    actor = write_checkpoint(tmp_path, 30, [0.25] * 8)
    assert resume(str(actor.parent), reasoning=True)[0] == 30
    assert capsys.readouterr().out.splitlines() == [f"Load from checkpoint folder: {actor.parent}",
                                                    "Setting global step to 30"]
    (actor / "dcp_checkpoint" / ".metadata").unlink()
    with pytest.raises(SystemExit, match=r"FileNotFoundError: \[Errno 2\] No such file or directory: .*\.metadata"):
        resume(str(actor.parent))


def test_resume_sets_the_override_refuses_incomplete_and_readonly(listed, sandbox, capsys):  # noqa: F811
    rlark = cli_runner(sandbox.kubeconfig, capsys)
    deadline = time.monotonic() + 60
    while True:
        listing = rlark("checkpoints", NAME, "-o", "json")
        if listing.code == 0 and len(json.loads(listing.out)["checkpoints"]) == 3 or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    refused = rlark("--readonly", "resume", NAME, "--yes")
    assert refused.code == 1 and "read-only" in refused.err
    incomplete = rlark("resume", NAME, "--from", "global_step_30", "--yes")
    assert incomplete.code == 1 and "global_step_30 is incomplete (missing actor/dcp_checkpoint/.metadata)" \
        in incomplete.err and "--force" in incomplete.err
    unknown = rlark("resume", NAME, "--from", "global_step_7", "--yes")
    assert unknown.code == 2 and "no checkpoint global_step_7" in unknown.err
    access = ClusterAccess.open(str(sandbox.kubeconfig), sandbox.context)
    try:
        before = {pod["metadata"]["uid"] for pod in access.job_pods(NAME)}
        done = rlark("resume", NAME, "--yes")
        assert done.code == 0, done.err
        path = f"{listed}/ppo/checkpoints/global_step_20"
        assert f"resume {NAME} from global_step_20 (step 20)" in done.out and f"runner.resume_dir={path}" in done.out
        assert "+" in done.out and "replaced and restarted from global_step_20" in done.out
        task = access.get(JOBS, NAME)["spec"]["tasks"][0]
        assert task["runScript"].endswith(f" runner.resume_dir={path}")
        deadline = time.monotonic() + 60
        while not (after := {pod["metadata"]["uid"] for pod in access.job_pods(NAME)}) or after & before:
            assert time.monotonic() < deadline, "the StatefulSet's rolling update replaces the Header Pod"
            time.sleep(0.5)
        # again from the same checkpoint: the PUT would change no Pod template, so the Job is stopped and started
        asked = rlark("resume", NAME)
        assert asked.code == 1 and "The run command already resumes from there" in asked.err, asked.err
        deadline = time.monotonic() + 60
        while (again := rlark("resume", NAME, "--yes")).code != 0:
            assert time.monotonic() < deadline, f"the second resume: {again.err}"
            time.sleep(0.5)
        assert f"job {NAME} already resumes from global_step_20: stopping it and starting it again" in again.out
        assert f"job.rlinf.io/{NAME} stopped and started again from global_step_20" in again.out
        job = access.get(JOBS, NAME)
        assert job["spec"]["stopped"] is False and job["spec"]["tasks"][0]["runScript"].endswith(path)
        deadline = time.monotonic() + 60
        while not (restarted := {pod["metadata"]["uid"] for pod in access.job_pods(NAME)}) or restarted & after:
            assert time.monotonic() < deadline, "the stopped Job's Pods are created again"
            time.sleep(0.5)
    finally:
        access.close()


def test_resume_of_a_finished_job_deletes_and_creates_it_again(listed, sandbox, capsys):  # noqa: F811
    """A Succeeded Job is terminal for the platform's controller (a PUT would change nothing): the resume is its
    delete and re-create under the same name, from the checkpoint, with the Job's annotations kept."""
    rlark = cli_runner(sandbox.kubeconfig, capsys)
    deadline = time.monotonic() + 60
    while True:
        listing = rlark("checkpoints", NAME, "-o", "json")
        if listing.code == 0 and json.loads(listing.out)["location"] == f"{listed}/ppo/checkpoints" and len(
                json.loads(listing.out)["checkpoints"]) == 3 or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    old = sandbox.store.get("jobs", NAME)
    sandbox.store.update("jobs", {**old, "status": {**old.get("status", {}), "phase": "Succeeded"}},
                         subresource="status")
    refused = rlark("--readonly", "resume", NAME, "--yes")
    assert refused.code == 1 and f"read-only mode: refusing to resume job {NAME}" in refused.err
    asked = rlark("resume", NAME, "--from", "global_step_20")
    assert asked.code == 1 and "The Job is Succeeded: the platform treats a finished Job as done" in asked.err
    assert sandbox.store.get("jobs", NAME)["metadata"]["uid"] == old["metadata"]["uid"], "not confirmed: kept"
    done = rlark("resume", NAME, "--from", "global_step_20", "--yes")
    assert done.code == 0, done.err
    assert f"job {NAME} is Succeeded: deleting it and creating it again" in done.out
    assert f"job.rlinf.io/{NAME} deleted and created again from global_step_20" in done.out
    new = sandbox.store.get("jobs", NAME)
    assert new["metadata"]["uid"] != old["metadata"]["uid"] and (new.get("status") or {}).get("phase") != "Succeeded"
    path = f"{listed}/ppo/checkpoints/global_step_20"
    assert new["spec"]["tasks"][0]["runScript"].endswith(f" runner.resume_dir={path}")
    assert new["spec"]["stopped"] is False and "rlark.io/restarted-at" in new["metadata"]["annotations"]
    kept = {k: v for k, v in old["metadata"]["annotations"].items() if not k.startswith("rlark.io/submitted")}
    assert kept.items() <= new["metadata"]["annotations"].items()


def test_a_finished_job_that_is_slow_to_go_is_not_created_again(sandbox, tmp_path):
    """A finished Job held by a finalizer (the platform's DB sync keeps one): the resume waits for it, then says it
    was not re-created and where its resumed spec is kept."""
    name = "resume-held"
    job = sandbox.store.create("jobs", {**fx.unschedulable_job(name), "metadata": {"name": name,
                                                                                   "finalizers": ["sync.rlinf.io/persist"]}})
    sandbox.store.update("jobs", {**job, "status": {"phase": "Failed"}}, subresource="status")
    access = ClusterAccess.open(str(sandbox.kubeconfig), sandbox.context)
    try:
        actions = Actions(access, state_dir=tmp_path / "state")
        with pytest.raises(RlarkError) as failed:
            actions.resume(resumed(access.get(JOBS, name), "/o/ppo/checkpoints/global_step_20"), timeout=1.0)
        message = str(failed.value)
        assert message.startswith(f"job {name} was deleted but it, its Tasks or their Pods are still there after")
        assert "so it was not created again; its spec is kept at " in message and "`rlark submit`" in message
        kept = Path(message.split("kept at ")[1].split(" (secret")[0])
        assert "runner.resume_dir=/o/ppo/checkpoints/global_step_20" in kept.read_text()
    finally:
        sandbox.store.mutate("jobs", name, lambda o: {**o, "metadata": {**o["metadata"], "finalizers": []}})
        access.close()
