"""Progress rows and metric series parsed from Header logs: embodied tables (the demo workload's printer, which
draws RLinf's layout) and reasoning tqdm bars with `\r` redraws, plus the bad inputs (half a table, NaN/inf, no
progress). tests/metrics/test_rlinf_release.py holds the parsers to the released RLinf's own output."""

from __future__ import annotations

import math

import pytest

from rlark_sandbox.demo_workload import metric_table
from rlark_tui.telemetry.progress import MAX_TAGS, Progress, ProgressState, finite, latest_progress, metric_series

METRICS = {"time/step": 1.0, "env/return": 5.0, "rollout/rewards": 0.5, "train/actor/policy_loss": 0.25,
           "train/actor/grad_norm": 0.75, "train/actor/lr": 1e-4, "train/critic/value_loss": 0.125,
           "replay_buffer/a_very_long_metric_name_that_is_cut_in_its_cell": 2.0}


def table_lines(step: int, total: int = 40, at: float = 100.0, step_time: float = 1.0) -> list[tuple[float, str]]:
    return [(at, line) for line in metric_table(step, total, step * step_time, METRICS).splitlines()]


TQDM = ("Global Step:  {pct}%|██        | {n}/100 [00:{e:02d}<01:30, 1.00s/it, step_time=1.5, "
        "actor/training_time=0.5, rewards=0.{n}]")


@pytest.mark.parametrize("lines, expected", [
    (table_lines(3), Progress(3, 40, 7.5, 37.0, 1.0, 100.0, "table")),
    (table_lines(3) + table_lines(4, at=101.0), Progress(4, 40, 10.0, 36.0, 1.0, 101.0, "table")),
    ([(5.0, "\r".join(TQDM.format(pct=n, n=n, e=n) for n in (1, 2, 3)))],
     Progress(3, 100, 3.0, 90.0, 1.5, 7.0, "tqdm")),
    ([(5.0, TQDM.format(pct=1, n=1, e=1) + "\r")], Progress(1, 100, 1.0, 90.0, 1.5, 5.0, "tqdm")),
    ([(5.0, "\r".join(TQDM.format(pct=n, n=n, e=n) for n in (1, 2)) + "\r" + TQDM.format(pct=3, n=3, e=3)[:30])],
     Progress(2, 100, 2.0, 90.0, 1.5, 6.0, "tqdm")),
    (table_lines(3)[:4], Progress(3, 40, 7.5, None, None, 100.0, "table")),
    ([(None, "plain line"), (None, "Global Step: nonsense")], None),
    ([], None),
])
def test_latest_progress(lines, expected):
    assert latest_progress(lines) == expected


def test_stale_after_three_step_times():
    row = latest_progress(table_lines(3, step_time=2.0))
    assert not row.stale(100.0 + 5.9) and row.stale(100.0 + 6.1)
    assert row.render(106.1) == "3/40 8% ETA 01:14 (stale)"
    assert row.render(101.0) == "3/40 8% ETA 01:14"
    finished = latest_progress(table_lines(40))
    assert not finished.stale(10_000.0) and finished.render(10_000.0) == "40/40 100%"


def test_a_state_is_judged_as_of_its_read():
    """The list polls every 10 s: a row fresh at its read stays unmarked until the next read says otherwise."""
    row = latest_progress(table_lines(3, step_time=2.0))
    assert ProgressState(row, read_at=101.0).render(109.0) == "3/40 8% ETA 01:14"
    assert ProgressState(row, read_at=107.0).render(109.0) == "3/40 8% ETA 01:14 (stale)"
    assert ProgressState(row).render(109.0) == "3/40 8% ETA 01:14 (stale)"


def test_series_from_tables_map_certain_names_only():
    series = metric_series(table_lines(1, at=10.0) + table_lines(2, at=11.0))
    assert series.tables == 2 and not series.partial
    assert series.points["rollout/rewards"] == [(10.0, 1, 0.5), (11.0, 2, 0.5)]
    assert series.points["train/actor/policy_loss"][0] == (10.0, 1, 0.25)
    assert series.points["train/critic/value_loss"][0] == (10.0, 1, 0.125)
    assert "env/return" in series.points and "time/step" in series.points
    assert not any("a_very_long" in tag for tag in series.points)  # cut in its cell: no value to read


def test_half_a_table_is_left_out_and_reported():
    lines = table_lines(1) + table_lines(2)[:4]
    series = metric_series(lines)
    assert series.partial and series.tables == 1
    assert [p[1] for p in series.points["rollout/rewards"]] == [1]


def test_tqdm_postfix_series_one_point_per_step():
    redraws = "\r".join(TQDM.format(pct=n, n=n, e=n) for n in (1, 1, 2))
    series = metric_series([(7.0, redraws), (8.0, TQDM.format(pct=3, n=3, e=3))])
    assert series.points["rewards"] == [(7.0, 1, 0.1), (8.0, 2, 0.2), (8.0, 3, 0.3)]
    assert series.points["step_time"][-1] == (8.0, 3, 1.5)


def test_nan_and_inf_cells_are_kept_then_filtered():
    lines = [(1.0, line.replace("rewards=0.500", "rewards=nan")) for _, line in table_lines(1)]
    lines += [(2.0, line.replace("rewards=0.500", "rewards=inf")) for _, line in table_lines(2)]
    lines += table_lines(3, at=3.0)
    points = metric_series(lines).points["rollout/rewards"]
    assert math.isnan(points[0][2]) and math.isinf(points[1][2])
    assert finite(points) == [(3.0, 3, 0.5)]


@pytest.mark.parametrize("lines", [
    [(None, "│ Global Step: 3/10 │ x │ ..% │")],
    [(None, "│ Global Step: 3/10 │"), (None, "│ Elapsed: 00:01 │ ETA: 00:02 │ Step Time: .s")],
    [(None, "│ Global Step: 3/10 │ x │ " + "9" * 400 + "% │"),
     (None, "│ Elapsed: 00:01 │ ETA: 00:02 │ Step Time: 1" + "0" * 400 + "s")],
    [(None, "Global Step:  30%|███ | 3/10 [00:01<00:02, 1e-310it/s, step_time=nan]")],
    [(None, "Global Step:  30%|███ | 3/10 [00:01<00:02, 1e999s/it]")]])
def test_a_hostile_number_in_a_progress_row_is_unread_not_raised(lines):
    """Issue 33 item 3, a third round: a Header log's table row `Global Step: 3/10 │ ..%` or `Step Time: .s`
    raised ValueError in float() (every progress read, PROGRESS and STEP TIME of the Job), and 400 digits or
    a tqdm rate of 1e-310 it/s read as an infinite percent or step time. Such a number is unread: the percent
    is the step's share, the step time none."""
    row = latest_progress(lines)
    assert (row.step, row.total, row.percent, row.step_seconds) == (3, 10, 30.0, None)
    assert row.render() == "3/10 30%" + (" ETA 00:02" if row.eta_seconds else "")


def test_tensorboard_points_of_the_wrong_kind_are_left_out():
    """Issue 33 item 3, a third round: TensorBoard's scalars answer (through the gateway) with a step of 1e400
    or NaN (Python's JSON reads both) raised OverflowError or ValueError in int(), ending rlark metrics and the
    Metrics tab's read; such a point is left out, the others read."""
    from rlark_tui.telemetry.progress import scalar_points

    answer = [[1.0, 1, 0.5], [2.0, float("inf"), 0.5], [3.0, float("nan"), 0.5], [4.0, 2.5, 0.5], [5.0, True, 1.0],
              [float("inf"), 3, 0.5], [6.0, 4, float("nan")], "x", [7.0, 5], [8.0, 6.0, 2]]
    points = scalar_points(answer)
    assert points[:1] == [(1.0, 1, 0.5)] and points[2:] == [(8.0, 6, 2.0)] and points[1][1] == 4
    assert finite(points) == [(1.0, 1, 0.5), (8.0, 6, 2.0)] and scalar_points({"a": 1}) == []


def test_a_log_naming_thousands_of_tags_gives_the_first_max_tags_and_a_named_one():
    """Issue 33, round H33, a Job's Header log (its code names every cell): the log's tables gave a series for every
    cell, unlike TensorBoard's first MAX_TAGS, so a table of 200,000 cells was 200,000 series at every Metrics poll,
    5.8 s of the UI thread to open the Metrics tab and 2.9 s for its Time view. The first MAX_TAGS tags the log
    names are read, it says there were more, and a tag asked for by name (--tag) is read wherever it comes."""
    many = {f"time/p{i:05d}": 1.0 for i in range(2_000)}
    lines = [(10.0, line) for line in metric_table(1, 40, 1.0, {"time/step": 9.0, **many}).splitlines()]
    series = metric_series(lines)
    assert len(series.points) == MAX_TAGS and series.more_tags
    assert list(series.points)[:2] == ["time/p00000", "time/p00001"] and series.points["time/p00000"] == [(10.0, 1, 1.0)]
    named = metric_series(lines, tags=["time/step", "time/p01999"])
    assert named.points == {"time/p01999": [(10.0, 1, 1.0)], "time/step": [(10.0, 1, 9.0)]} and not named.more_tags
    assert not metric_series(table_lines(1)).more_tags
