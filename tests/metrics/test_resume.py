"""`rlark resume` (issue 35 item 4): runner.resume_dir set where the run command takes its Hydra overrides, an
incomplete checkpoint refused unless --force, --readonly refused, the diff shown; the demo workload resumes as
RLinf's EmbodiedRunner does (its line, the step after the checkpoint)."""

from __future__ import annotations

import json
import time

import pytest

from rlark_sandbox.demo_workload import metric_table, resume, write_checkpoint
from rlark_tui.cluster import ClusterAccess
from rlark_tui.cluster.kinds import JOBS
from rlark_tui.jobspec.resume import resume_step, with_resume_dir
from rlark_tui.telemetry.progress import latest_progress
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
    done = rlark("resume", NAME, "--yes")
    assert done.code == 0, done.err
    path = f"{listed}/ppo/checkpoints/global_step_20"
    assert f"resume {NAME} from global_step_20 (step 20)" in done.out and f"runner.resume_dir={path}" in done.out
    assert "+" in done.out and "replaced and restarted from global_step_20" in done.out
    access = ClusterAccess.open(str(sandbox.kubeconfig), sandbox.context)
    try:
        task = access.get(JOBS, NAME)["spec"]["tasks"][0]
    finally:
        access.close()
    assert task["runScript"].endswith(f" runner.resume_dir={path}")
