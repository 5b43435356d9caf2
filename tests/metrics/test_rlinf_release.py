"""The parsers against what the released RLinf 0.3.0 prints: `print_metrics_table` taken from the wheel and run,
and tqdm driven with the reasoning runner's arguments. The demo workload's table must be RLinf's, byte for
byte; progress rows, ETA and metric series must come out of RLinf's own tables, and out of a never-closed tqdm
bar whether it arrives whole, cut inside a redraw, or in the 16 KiB pieces a CRI runtime writes."""

from __future__ import annotations

import pytest

from rlark_sandbox.demo_workload import metric_table
from rlark_tui.telemetry.progress import latest_progress, metric_series
from tests.rlinf_release import rlinf, tqdm_run  # noqa: F401 (the fixture)

pytest.importorskip("tqdm")


def embodied(step: int) -> dict:
    """Metrics as an embodied runner logs them (rlinf-runtime.md §2.4 keys), values across every number format."""
    return {"time/step": 3.0, "time/generate_rollouts": 1.25, "time/actor_training": 0.004,
            "env/success_once": step / 30, "env/return": 123.456 + step, "rollout/rewards": 0.1 * step,
            "eval/success_once": 0.0005, "train/actor/policy_loss": 1 / (step + 1), "train/actor/lr": 1e-4,
            "train/actor/grad_norm": 12345.678, "train/critic/value_loss": 0.0, "train/entropy": 7,
            "replay_buffer/size": 1000, "train/a_metric_name_far_too_long_for_its_cell_in_the_table": 0.5}


def lines_of(text: str, at: float) -> list[tuple[float, str]]:
    return [(at, line) for line in text.splitlines()]


@pytest.mark.parametrize("step, total, elapsed, start_step", [(1, 30, 3.0, 0), (12, 30, 36.5, 0), (30, 30, 90.0, 0),
                                                             (7, 40, 4000.0, 5), (100, 250, 0.2, 0)])
def test_demo_table_is_rlinfs_own(rlinf, step, total, elapsed, start_step):
    metrics = embodied(step)
    assert metric_table(step, total, elapsed, metrics, start_step) + "\n" == rlinf.table(
        step, total, elapsed, metrics, start_step)


def test_progress_and_eta_from_rlinfs_table(rlinf):
    lines = lines_of(rlinf.table(3, 30, 9.0, embodied(3)), 100.0)
    row = latest_progress(lines)
    assert (row.step, row.total, row.kind, row.eta_seconds, row.step_seconds) == (3, 30, "table", 81.0, 3.0)
    assert row.render(101.0) == "3/30 10% ETA 01:21"


def test_series_from_rlinfs_tables(rlinf):
    lines = []
    for step in (1, 2, 3):
        lines += lines_of(rlinf.table(step, 30, 3.0 * step, embodied(step)), 100.0 + step)
    series = metric_series(lines)
    assert series.tables == 3 and not series.partial
    assert series.points["rollout/rewards"] == [(101.0, 1, 0.1), (102.0, 2, 0.2), (103.0, 3, 0.3)]
    assert [p[2] for p in series.points["env/success_once"]] == [0.033, 0.067, 0.1]
    assert series.points["train/actor/policy_loss"][0] == (101.0, 1, 0.5)
    assert series.points["train/critic/value_loss"][0][2] == 0.0
    assert series.points["train/actor/grad_norm"][0][2] == 12300.0  # `.2e` over 10000: 1.23e+04
    assert series.points["time/actor_training"][0][2] == 0.004  # `.4f` under 0.01
    assert series.points["eval/success_once"][0][2] == 0.0005  # `.2e` under 0.001
    assert series.points["train/entropy"][0][2] == 7.0  # an int, printed with str()
    assert series.points["size"][0][2] == 1000.0  # Replay Buffer: the log's own name
    assert not any("far_too_long" in tag for tag in series.points)  # cut with `…`: no value


def test_half_of_rlinfs_table_is_left_out(rlinf):
    lines = lines_of(rlinf.table(1, 30, 3.0, embodied(1)), 1.0)
    lines += lines_of(rlinf.table(2, 30, 6.0, embodied(2)), 2.0)[:12]
    series = metric_series(lines)
    assert series.partial and [p[1] for p in series.points["rollout/rewards"]] == [1]
    assert latest_progress(lines).step == 2


def reasoning(step: int) -> dict:
    return {"step_time": 3.0, "rollout_time": 1.2, "actor/training_time": 0.9, "rewards": step / 10}


def test_never_closed_tqdm_bar_as_one_unterminated_line():
    bar = tqdm_run(30, 3.0, reasoning, initial=0)
    assert "\n" not in bar and bar.count("\r") == 31
    row = latest_progress([(1000.0, bar)])
    assert (row.step, row.total, row.kind, row.step_seconds, row.eta_seconds) == (30, 30, "tqdm", 3.0, 0.0)
    assert row.at == 1090.0  # the line's time plus the bar's elapsed 01:30
    series = metric_series([(1000.0, bar)])
    assert [p[1] for p in series.points["rewards"]] == list(range(1, 31))
    assert series.points["rewards"][2] == (1009.0, 3, 0.3)


def test_tqdm_bar_cut_inside_a_redraw_and_in_cri_pieces():
    bar = tqdm_run(12, 3.0, reasoning)
    cut = bar[: bar.rindex("\r") + 200]  # the newest redraw is only half there
    assert latest_progress([(0.0, cut)]).step == 11
    pieces = []
    data = bar.encode()
    for start in range(0, len(data), 16384):  # containerd's `P` entries of at most 16 KiB
        pieces.append(data[start:start + 16384])
    assert len(pieces) > 1
    seen = b""
    steps = []
    for piece in pieces:  # the kubelet hands the pieces out as they come, without a newline
        seen += piece
        row = latest_progress([(0.0, seen.decode("utf-8", "replace"))])
        steps.append(row.step if row else None)
    assert steps[-1] == 12 and steps == sorted(steps, key=lambda s: s or 0)


def test_a_read_from_inside_the_bars_line_dates_redraws_from_its_own_first_one():
    bar = tqdm_run(30, 3.0, reasoning)
    inside = bar[len(bar) // 2:]  # a tail or since read starts in the middle of the unterminated line
    row = latest_progress([(5000.0, inside)])
    first = next(seg for seg in inside.split("\r")[1:] if "]" in seg)
    assert row.step == 30 and row.at == 5000.0 + 90 - 3 * int(first.split("/30")[0].split()[-1])


def test_resumed_and_closed_bar():
    bar = tqdm_run(20, 2.0, reasoning, initial=15, close=True)
    assert bar.endswith("\n")
    row = latest_progress([(0.0, line) for line in bar.splitlines()])
    assert (row.step, row.total) == (20, 20) and row.render(0.0) == "20/20 100%"
