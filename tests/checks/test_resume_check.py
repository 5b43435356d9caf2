"""The run check's progress row confirms a resume (issue 35 item 4): with runner.resume_dir on the Header's run
command, it passes on RLinf's resume line and a first progress row of N+1 (the sandbox demo's own output: its
resume line and metric tables), and otherwise fails quoting the line it saw."""

from __future__ import annotations

from rlark_sandbox.demo_workload import metric_table, resume, write_checkpoint
from rlark_tui.checks import evaluate, logscan, to_text
from rlark_tui.jobspec.resume import resume_dir_of

from . import fixtures as fx
from .scenarios import REASONING, REASONING_RESUME, SCENARIOS, _resumed


def _progress_row(evidence):
    report = evaluate(evidence, fx.DECIDED)
    return report, report.rows[4]


def test_the_demo_workloads_own_resume_passes(tmp_path, capsys):
    actor = write_checkpoint(tmp_path, 20, [0.5] * 8)
    resume(str(actor.parent))
    said = capsys.readouterr().out.splitlines()
    tables = [line for step in (21, 22) for line in metric_table(step, 40, 2.0, {"time/step": 1.0},
                                                                   start_step=20).splitlines()]
    report, row = _progress_row(_resumed(said + tables, resume_dir=str(actor.parent)))
    assert row.result == "pass", row.findings
    assert "resume confirmed: from step 20, the first progress row is step 21" in row.notes
    assert f"Resuming training from checkpoint directory {actor.parent}." in [e.value.split("] ")[-1]
                                                                               for e in row.evidence]


def test_a_resume_that_did_not_happen_fails_quoting_the_line_seen():
    _, row = _progress_row(SCENARIOS["resume dir set, run started from scratch"][0])
    assert row.result == "fail" and row.stage == "progress"
    message = next(f.message for f in row.findings if f.result == "fail")
    assert message.startswith("runner.resume_dir is set but RLinf printed no 'Resuming training from checkpoint "
                              "directory …' or 'Setting global step to N' before its first progress row: ")
    assert message.endswith("│ Global Step: 1/10 │ Progress: ████░░░░░░░░░░░░░░░░░░░░░░░░░░░░░░░░░░░░ │ 10.0% │")
    _, wrong = _progress_row(SCENARIOS["resume line, then step 1"][0])
    assert any(f.message.startswith("resumed from step 2 but the first progress row after it is step 1, not 3: "
                                    "│ Global Step: 1/10 │") for f in wrong.findings)
    _, other = _progress_row(SCENARIOS["resumed at another step"][0])
    assert [f.message for f in other.findings if f.result == "fail"] == [
        "resumed at the wrong step: runner.resume_dir names step 2, the log says: Setting global step to 3"]
    report, _ = _progress_row(SCENARIOS["resume dir not a global_step_N"][0])
    assert ("runner.resume_dir=/out/ppo-demo-1/latest is not a global_step_<N> directory: RLinf takes N from the "
            "text after global_step_") in to_text(report)


def test_a_reasoning_bar_redrawn_on_one_line_counts_each_redraw():
    bar = ("Global Step:  20%|██        | 2/10 [00:00<?, ?it/s]\rGlobal Step:  30%|███       | 3/10 "
           "[00:05<00:35,  5.00s/it, step_time=5.0]")
    hit, step, text = logscan.first_step([bar], skip=2)
    assert (hit.line, step) == (1, 3) and text.startswith("Global Step: 30%|")
    report, row = _progress_row(_resumed(REASONING_RESUME + [bar], launch_record=REASONING))
    assert "resume confirmed: from step 2, the first progress row is step 3" in row.notes
    jumped = bar.replace("3/10", "5/10")
    _, row = _progress_row(_resumed(REASONING_RESUME + [jumped], launch_record=REASONING))
    assert any("first progress row after it is step 5, not 3: Global Step: 30%|███ | 5/10" in f.message
               for f in row.findings)


def test_the_run_commands_resume_dir_as_the_shell_reads_it():
    assert resume_dir_of("python t.py runner.resume_dir='/o/x y/global_step_2' a=1") == "/o/x y/global_step_2"
    assert resume_dir_of("python t.py a=1") is None
    assert resume_dir_of("python t.py xrunner.resume_dir=/a") is None
