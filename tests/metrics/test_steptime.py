"""Where the step time goes (issue 35 item 1), from what the released RLinf 0.3.0 prints: its own
`print_metrics_table` with time rows, and tqdm driven with the reasoning runner's postfix."""

from __future__ import annotations

import pytest

from rlark_tui.telemetry.progress import metric_series
from rlark_tui.telemetry.steptime import bars, breakdown, phase_of, step_time_cell
from tests.rlinf_release import rlinf, tqdm_run  # noqa: F401 (the fixture)

pytest.importorskip("tqdm")


def times(step: int) -> dict:
    """RLinf #777's split, with actor training growing by 2 s a step."""
    training = 185.0 + 2 * step
    return {"time/step": training + 119.0 + 36.0, "time/actor_training": training,
            "time/env_interact": 119.0, "time/generate_rollouts": 36.0, "env/return": 1.0}


def table_lines(rlinf, steps) -> list[tuple[float, str]]:
    lines = []
    for step in steps:
        lines += [(100.0 + step, line) for line in rlinf.table(step, 40, 340.0 * step, times(step)).splitlines()]
    return lines


def test_breakdown_of_rlinfs_tables_names_the_bottleneck_and_its_rising_share(rlinf):
    result = breakdown(metric_series(table_lines(rlinf, range(1, 26))).points)
    assert [s.step for s in result.steps] == list(range(1, 26))
    last = result.steps[-1]
    assert last.total == 390.0 and last.phases == {"actor_training": 235.0, "env_interact": 119.0,
                                                    "generate_rollouts": 36.0}
    assert (result.bottleneck.phase, round(result.bottleneck.share, 3), result.bottleneck.trend) == (
        "actor_training", 0.603, "rising")
    assert step_time_cell(result) == "390 s/step, actor_training 60%"
    shape = result.to_json("ppo")
    assert shape["job"] == "ppo" and shape["bottleneck"] == {"phase": "actor_training", "share": 0.6026,
                                                             "trend": "rising"}
    assert shape["steps"][0] == {"step": 1, "total": 342.0,
                                 "phases": {"actor_training": 187.0, "env_interact": 119.0, "generate_rollouts": 36.0}}


def test_breakdown_of_the_reasoning_runners_tqdm_postfix():
    bar = tqdm_run(20, 3.0, lambda step: {"step_time": 3.0, "rollout_time": 2.1, "actor/training_time": 0.6},
                   initial=0)
    result = breakdown(metric_series([(1000.0, bar)]).points)
    assert len(result.steps) == 20 and result.steps[-1].phases == {"rollout": 2.1, "actor_training": 0.6}
    assert (result.bottleneck.phase, round(result.bottleneck.share, 6), result.bottleneck.trend) == (
        "rollout", 0.7, "steady")


def test_phase_names_and_totals_without_a_step_row():
    assert [phase_of(t) for t in ("time/step", "step_time", "time/sync_weights", "actor/training_time", "env/return")
            ] == [None, None, "sync_weights", "actor_training", None]
    result = breakdown({"time/a": [(0.0, 1, 1.0)], "time/b": [(0.0, 1, 3.0)], "time/c": [(0.0, 1, float("nan"))]})
    assert result.steps[0].total == 4.0 and result.bottleneck.phase == "b" and result.bottleneck.share == 0.75
    assert step_time_cell(breakdown({"env/return": [(0.0, 1, 1.0)]})) == step_time_cell(None) == "-"
    hostile = breakdown({"time/step": [(0.0, 1, 2.0)], "time/\x1b[2Jwipe": [(0.0, 1, 1.5)]})
    assert step_time_cell(hostile) == "2.0 s/step, wipe 75%"  # the escape sequence from the log is not shown


def test_time_bars_fit_80_columns_and_read_in_monochrome(rlinf):
    result = breakdown(metric_series(table_lines(rlinf, range(1, 6))).points)
    lines = bars(result, 80, 20)
    assert len(lines) == 5 and all(len(line) <= 80 for line in lines)
    assert lines[-1].startswith("5    350 s ") and lines[-1].count("A") > lines[-1].count("E") > lines[-1].count("G")


@pytest.mark.parametrize("series", [
    {"time/generate_rollouts": [(0.0, 1, 1e308), (0.0, 2, 1.0)], "time/actor_training": [(0.0, 1, 1e308), (0.0, 2, 2.0)]},
    {"time/step": [(0.0, 1, 1e308), (0.0, 2, 5e-324), (0.0, 3, 1e-300)],
     "time/actor_training": [(0.0, 1, 1e308), (0.0, 2, 1e308), (0.0, 3, 1e300)]}])
def test_step_times_past_any_number_draw_bars_without_raising(series):
    """Issue 33 item 3, a third round: a Header log's metric table with two phases of 1e308 s (their sum is
    infinite) raised ValueError in the Metrics tab's Time bars (round of NaN: the TUI crashed on a hostile Pod's
    log), and a step time of 5e-324 s under a phase of 1e308 s, or steps of 1e308 s beside 1e-300 s, raised
    OverflowError (and its 309-digit time pushed the line past the terminal). Such a step is left out, or its
    bar is cut at its width, and its time is in exponent form."""
    lines = bars(breakdown(series), 80, 10)
    assert all(len(line) <= 80 for line in lines)
    assert "/step" in step_time_cell(breakdown(series)) and len(step_time_cell(breakdown(series))) < 60


def test_a_phase_named_by_the_job_is_one_short_line_wherever_it_is_shown():
    """Issue 33, a fourteenth round (TensorBoard tags are the Job's code's to name): a tag 'time/x<LF>bottleneck:
    ...' made a phase whose name kept its line break through `clean`, so `rlark metrics --time` printed a forged
    'bottleneck:' line under its own (the header too: table() one-lines only rows), and the Metrics tab's Time
    view and the STEP TIME cell a line of their own; a 100,000-character tag was a header of 100,000 columns.
    A phase's name is one line of at most PHASE_CHARS."""
    from rlark_tui.telemetry.steptime import PHASE_CHARS
    forged = "time/x\nbottleneck: generate_rollouts 99% of the step\u2028\u202e"
    result = breakdown({"time/step": [(0.0, 1, 4.0)], forged: [(0.0, 1, 3.0)], "time/" + "y" * 100_000: [(0.0, 1, 0.5)]})
    names = {phase for step in result.steps for phase in step.phases}
    assert all(name.isprintable() and len(name) <= PHASE_CHARS for name in names), names
    assert result.bottleneck.phase.startswith("x\\nbottleneck: generate_rollouts")
    assert "\n" not in step_time_cell(result) and all("\n" not in line for line in bars(result, 80, 5))


def test_a_phase_past_its_step_and_times_past_a_billion_seconds_stay_short_wherever_shown():
    """Issue 33, round H33, a Job's log (its code prints the time rows): a step of 1e-300 s with a phase of 1.5 s
    made a share of 1.5e300, a 300-digit percentage in the STEP TIME cell (`get jobs -o wide`, the Job detail's
    header) and in `rlark metrics --time`'s bottleneck line, and times of 1e308 s were 309-digit cells of its table
    (the bars and the cell said them in exponent form already). A phase past its step counts as the whole step, as
    the bars draw it, and the table says every time as they do (steptime.seconds)."""
    from rlark_tui.telemetry.steptime import table_cells
    result = breakdown({"time/step": [(0.0, 1, 1e308), (0.0, 2, 1e-300)],
                        "time/rollout": [(0.0, 1, 1e308), (0.0, 2, 1.5)], "time/actor": [(0.0, 1, 5.0)]})
    assert step_time_cell(result) == "0.0 s/step, rollout 100%"
    assert result.bottleneck.share == 1.0 and abs(result.bottleneck.change) <= 1.0
    assert table_cells(result, ["rollout", "actor"], 20) == [["1", "1e+308 s", "1e+308 s 100%", "5.0 s   0%"],
                                                             ["2", "0.0 s", "1.5 s 100%", "-"]]
