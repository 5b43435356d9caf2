"""Numbers in cluster text are read by total functions (issue 33 item 3): a Unicode digit or a 5,000-digit step
in a hostile row is left out of the reading, never raised, and the rows beside it still count."""

from __future__ import annotations

import pytest

from rlark_sandbox.demo_workload import metric_table
from rlark_tui.telemetry.progress import clock_seconds, latest_progress, metric_series
from rlark_tui.telemetry.sample import parse_nvidia_smi
from rlark_tui.text.parse import SMALL_JSON_BYTES, JsonBound, ascii_float, ascii_int, load_json

HUGE = "9" * 5000


def test_numbers_are_ascii_and_bounded():
    assert ascii_int("42") == 42 and ascii_int("0") == 0
    for text in ("²", "٣", "-1", "", " 1", "1.0", HUGE, "9" * 19):
        assert ascii_int(text) is None, text
    assert ascii_float("1.5") == 1.5 and ascii_float("-2e3") == -2000.0 and ascii_float("3") == 3.0
    for text in ("nan", "inf", "1e999", "²", "٣.5", HUGE, ""):
        assert ascii_float(text) is None, text


def test_a_unicode_gpu_index_leaves_out_that_row_only():
    rows = parse_nvidia_smi("², GPU-x, 1, 500, 81920\n0, GPU-a, 1, 500, 81920\n" + HUGE + ", GPU-y, 1, 1, 1\n")
    assert [gpu[:2] for gpu in rows] == [(0, "GPU-a")]


def test_gpu_numbers_nvidia_smi_cannot_give_leave_that_row_out():
    """Issue 33, round H33, a hostile Pod (the Job's image answers the fixed `nvidia-smi` query): a utilisation or
    memory of 1e308 MiB was taken as read, so `rlark top job`'s GPU use by role and the Workers tab printed 309-digit
    numbers, and the job list's GPU% and the Pod's GPU cell 'inf%' (two such GPUs summed past a double). nvidia-smi
    says a utilisation from 0 to 100 and MiB under a PiB; a row that says more is left out."""
    from rlark_tui.telemetry.balance import by_role, memory_cell, util_cell
    from rlark_tui.telemetry.sample import GPU_UUID, usage_sample
    from rlark_tui.telemetry.usage import gpu_cell, gpu_mem_cell, mean_gpu_percent, percent_cell

    rows = parse_nvidia_smi("0, GPU-a, 1e308, 500, 81920\n1, GPU-b, 5, 1e308, 1e308\n2, GPU-c, -5, 500, 81920\n"
                            "3, GPU-d, 101, 500, 81920\n4, GPU-e, 40, -1, 81920\n5, GPU-f, 40, 500, 81920\n")
    assert [gpu[GPU_UUID] for gpu in rows] == ["GPU-f"]
    sample = usage_sample("ns/p", 1.0, rows)
    cells = [gpu_cell(sample), gpu_mem_cell(sample), percent_cell(mean_gpu_percent([sample])),
             *(cell(row) for row in by_role({"actor": [sample]}) for cell in (util_cell, memory_cell))]
    assert cells == ["40%", "0.5/80Gi", "40%", "40/40/40%", "0/0/0Gi"]


def test_a_huge_step_is_no_progress_and_no_raise():
    lines = [(1.0, f"Global Step: {HUGE}/40"), (2.0, f"Global Step:  5%|█ | {HUGE}/100 [00:01<01:30, 1.00s/it]")]
    assert latest_progress(lines) is None
    table = [(3.0, line) for line in metric_table(3, 40, 3.0, {"time/step": 1.0}).splitlines()]
    assert latest_progress(lines + table).step == 3
    hostile = [(1.0, line.replace("3/40", f"{HUGE}/40")) for _, line in table]
    metric_series(hostile)
    assert clock_seconds("00:²") is None and clock_seconds(f"00:{HUGE}") is None and clock_seconds("01:05") == 65


LAUGHS = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 10)}]\n" for i in range(8))


def test_yaml_is_read_within_depth_and_expanded_size():
    """A draft (or Workflow, or Node list) of a few hundred bytes whose aliases stand for 10**9 nodes, or nested
    past the bound, is one line naming the bound (exit 2 for `rlark submit`), before any data is built; anchors
    and aliases within the bound read as ever."""
    import pytest

    from rlark_tui.jobspec.draft import DraftInputError, parse_yaml
    from rlark_tui.text.parse import MAX_YAML_DEPTH

    assert len(LAUGHS) < 500
    with pytest.raises(DraftInputError, match=r"^draft stands for more than 2,000,000 nodes once its aliases "
                                              r"are expanded: not read$"):
        parse_yaml(LAUGHS)
    deep = "[" * (MAX_YAML_DEPTH + 1) + "]" * (MAX_YAML_DEPTH + 1)
    with pytest.raises(DraftInputError, match=r"^the Workflow is nested deeper than 100 levels: not read$"):
        parse_yaml(deep, what="the Workflow")
    assert parse_yaml("base: &b {image: x, gpus: 8}\ntasks: [*b, *b]\n") == {
        "base": {"image": "x", "gpus": 8}, "tasks": [{"image": "x", "gpus": 8}] * 2}
    assert parse_yaml("[" * MAX_YAML_DEPTH + "]" * MAX_YAML_DEPTH) is not None


def test_json_is_read_within_size_and_depth_and_keeps_a_huge_integer_as_text():
    assert load_json('{"a": [1, 2.5, "x", null]}') == {"a": [1, 2.5, "x", None]}
    assert load_json(b'{"a": "\xff", "n": NaN}')["a"] == "\ufffd"  # the standard library's repairs
    for deep in ("[" * 50_000 + "]" * 50_000, "[" * 65 + "]" * 65):
        with pytest.raises(JsonBound, match="nested deeper than"):
            load_json(deep)
    assert load_json("[" * 64 + "]" * 64, max_depth=None)
    with pytest.raises(JsonBound, match="larger than 10 bytes"):
        load_json("[" + "1," * 10 + "1]", max_bytes=10)
    assert load_json(f'{{"step": {HUGE}, "n": 7}}') == {"step": HUGE, "n": 7}
    # a 64-bit integer is a number whichever decoder the text's length chose (SMALL_JSON_BYTES)
    for padding in ("", " " * SMALL_JSON_BYTES):
        assert load_json(f'[{2**64 - 1}, {-2**63}, 7]{padding}') == [2**64 - 1, -2**63, 7]
    with pytest.raises(ValueError):
        load_json("{not json")


def test_a_unicode_or_huge_number_in_a_log_is_no_rank_step_or_progress():
    """The run check's log readers (checks/logscan.py) read numbers with ascii_int: a `²` or 5,000-digit rank,
    step or progress count is passed over, never raised."""
    from rlark_tui.checks.logscan import first_progress, first_step, parse_ranks, rank_line

    assert rank_line([f"RLINF_NODE_RANK: {HUGE}", "RLINF_NODE_RANK: ٣", "RLINF_NODE_RANK: 2"])[1] == 2
    table = "│ Global Step: {}/10 │"
    assert first_step([table.format(HUGE), table.format(4)])[1] == 4
    hit = first_progress(["step ² of 9", f"step {HUGE} of 9", "step 3 of 9"], r"step (\S+) of")
    assert hit is not None and hit.line == 3
    assert parse_ranks(f"0-{HUGE}") is None and parse_ranks("0-99999999999") is None and parse_ranks("²") is None
    assert parse_ranks("0,2,5-6") == {0, 2, 5, 6}
