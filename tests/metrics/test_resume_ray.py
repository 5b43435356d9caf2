"""The issue's resume Done-when on live Ray (the one live resume test): a demo run saves global_step_N in the
embodied layout, `rlark resume --from` restarts it, its log shows RLinf's resume line and continues at N+1, and
the run check's progress row confirms the resume."""

from __future__ import annotations

import json
import time

import pytest

from rlark_tui import cli
from rlark_tui.checks import evaluate
from rlark_tui.checks.gather import gather
from rlark_tui.cluster import ClusterAccess
from rlark_tui.cluster.kinds import JOBS
from rlark_tui.flow.actions import Actions
from rlark_tui.model.keys import LAUNCH_RECORD_ANNOTATION
from tests.agent.helpers import job, task
from tests.clirun import cli_runner

NAME = "resume-live"
STEPS = 8


def _until(fn, ok, seconds: float, what: str):
    deadline = time.monotonic() + seconds
    while True:
        value = fn()
        if ok(value):
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} within {seconds:.0f} s; last: {value}")
        time.sleep(1)


@pytest.mark.ray
def test_resume_restarts_the_demo_at_the_step_after_and_the_check_confirms_it(sandbox, env, tmp_path, capsys):
    output = tmp_path / NAME
    header = task("actor", "gpu-a3", head=True,
                  run=f"python -m rlark_sandbox.demo_workload --run-id {NAME} --code-ref x --output {output} "
                      f"--steps {STEPS} --save-interval 4 --step-seconds 0.2")
    manifest = job(NAME, [header])
    manifest["metadata"]["annotations"] = {LAUNCH_RECORD_ANNOTATION: json.dumps({
        "runId": NAME, "outputPath": str(output), "progressPattern": r"Global Step:\s*(\d+)/(\d+)",
        "maxWaitSeconds": 600})}
    rlark = cli_runner(sandbox.kubeconfig, capsys)
    access = ClusterAccess.open(str(sandbox.kubeconfig), sandbox.context)
    Actions(access, state_dir=tmp_path / "state").submit(manifest)
    try:
        listed = _until(lambda: rlark("checkpoints", NAME, "-o", "json"),
                        lambda r: r.code == 0 and json.loads(r.out)["latest_complete"] == f"global_step_{STEPS}",
                        240, "the run's last checkpoint")
        assert [c["name"] for c in json.loads(listed.out)["checkpoints"]] == ["global_step_4", "global_step_8"]

        done = rlark("resume", NAME, "--from", "global_step_4", "--yes")
        assert done.code == 0, done.err
        resumed_from = f"{json.loads(listed.out)['location']}/global_step_4"

        said = f"Resuming training from checkpoint directory {resumed_from}."

        def after_resume() -> list[str]:
            lines = rlark("logs", NAME, "--tail", "400").out.splitlines()
            start = next((i for i, line in enumerate(lines) if said in line), None)
            return [] if start is None else [line for line in lines[start:] if "│ Global Step:" in line]

        rows = _until(after_resume, bool, 240, "a progress row after the resume line")
        assert "Global Step:    5/8" in rows[0], "the first progress row after the resume line is step 5"

        row = _until(lambda: evaluate(gather(access, NAME)).row(5), lambda r: any(
            n.startswith("resume confirmed") for n in r.notes), 120, "check 5 confirming the resume")
        assert "resume confirmed: from step 4, the first progress row is step 5" in row.notes
        assert not [f for f in row.findings if f.result == "fail"], row.findings
        code = cli.main(["--kubeconfig", str(sandbox.kubeconfig), "--context", sandbox.context, "check", NAME,
                         "--format", "json"])
        by_id = {c["id"]: c for c in json.loads(capsys.readouterr().out)["checks"]}
        assert "resume confirmed: from step 4, the first progress row is step 5" in by_id[5]["notes"], code
    finally:
        access.delete(JOBS, NAME)
        access.close()
