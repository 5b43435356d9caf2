"""python -m bench: the printed table and the JSON keys (no benchmark is run here)."""

from __future__ import annotations

import json

import pytest

from bench.__main__ import TARGETS, main, table, verdict


def test_verdict_reads_each_target_the_right_way():
    assert verdict(0.8, 1.0, "max") == "yes"
    assert verdict(1.2, 1.0, "max") == "NO"
    assert verdict(25000, 20000, "min") == "yes"
    assert verdict(None, 1.0, "max") == "n/a"
    assert verdict(3.0, None, None) == ""


def test_table_lists_every_key_with_null_for_missing_values():
    text = table({"startup_first_list_s": 0.5})
    lines = text.splitlines()
    assert len(lines) == len(TARGETS) + 1
    assert "startup_first_list_s" in lines[1] and "0.5" in lines[1] and lines[1].endswith("yes")
    assert all(key in text for key in TARGETS)
    assert "null" in text


def test_only_an_unknown_module_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["--only", "nope"])
    assert exit_info.value.code == 2
    assert "unknown module 'nope'" in capsys.readouterr().err


def test_checkeval_alone_writes_every_key(tmp_path, capsys):
    out = tmp_path / "bench.json"
    assert main(["--quick", "--only", "checkeval", "--json", str(out)]) == 0
    data = json.loads(out.read_text())
    assert set(TARGETS) <= set(data)
    assert data["check_eval_ms"] > 0 and data["startup_first_list_s"] is None
    assert data["machine"]["cores"] >= 1 and data["machine"]["python"]
    assert "check_eval_ms" in capsys.readouterr().out


def test_lanes_run_each_module_in_a_process_of_its_own_and_gather_their_keys(tmp_path, capsys):
    out = tmp_path / "bench.json"
    assert main(["--quick", "--lanes", "2", "--only", "diagnose,stacks", "--json", str(out)]) == 0
    data = json.loads(out.read_text())
    assert data["diagnose_ms"] > 0 and data["stacks_group_ms"] > 0 and data["startup_first_list_s"] is None
    assert data["errors"] == {}
    with pytest.raises(SystemExit) as exit_info:
        main(["--lanes", "2"])
    assert exit_info.value.code == 2
    assert "only with --quick" in capsys.readouterr().err


def test_a_latency_with_no_sample_is_null_and_said_not_a_failed_module(capsys):
    """A loaded CI run's smoke bench failed its tui module: no filter keystroke's frame came within its timeout,
    and the percentile of no values raised. Such a measure stays null (n/a in the table), with a line saying why."""
    from bench.tui import _record

    results: dict[str, float] = {}
    _record(results, [], "a filter keystroke", filter_keystroke_ms_p95=95)
    _record(results, [10.0, 30.0], "a key", key_latency_ms_p95=50)
    assert results == {"key_latency_ms_p95": 20.0}
    assert "no frame of a filter keystroke came within its timeout; filter_keystroke_ms_p95 left null" \
        in capsys.readouterr().err
    assert table(results).splitlines()[[*TARGETS].index("filter_keystroke_ms_p95") + 1].endswith("n/a")


def test_the_offscreen_read_gap_is_the_longest_wait_for_a_read_in_the_window():
    """bench usage's off-screen alert latency samples the read cycle at 5 moments; the read gap is its bound: the
    longest time between two reads of a faulty Job's Header log that ends in the window, or from its last read to
    the window's end."""
    from bench.usage import _read_gap

    log = "/api/proxy/gpu-a/api/kubernetes/api/v1/namespaces/rlark-system/pods/{}-actor-0/log"
    paths = [(5.0, log.format("a")), (30.0, log.format("a")), (52.0, log.format("a")), (12.0, log.format("ab")),
             (40.0, log.format("b")), (45.0, "/api/proxy/gpu-a/api/kubernetes/api/v1/namespaces/rlark-system/pods")]
    assert _read_gap(paths, ["a"], 10.0, 60.0) == 25.0  # 5 -> 30 ends in the window
    assert _read_gap(paths, ["a"], 31.0, 60.0) == 22.0
    assert _read_gap(paths, ["b"], 10.0, 60.0) == 30.0  # no read before the window: from its start
    assert _read_gap(paths, ["c"], 10.0, 60.0) == 50.0
