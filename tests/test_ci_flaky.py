""".ci/run names the tests that passed only on its rerun, under one heading (a flaky test to fix)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

FLAKY = Path(__file__).resolve().parents[1] / ".ci" / "flaky.py"


def run(first: Path, after: Path) -> str:
    return subprocess.run([sys.executable, str(FLAKY), str(first), str(after)], capture_output=True, text=True,
                          check=True).stdout


def test_the_tests_that_passed_only_on_the_rerun_are_listed_under_one_heading(tmp_path):
    first, after = tmp_path / "first", tmp_path / "after"
    first.write_text(json.dumps({"tests/a.py::test_flaky": True, "tests/b.py::test_broken": True,
                                 "tests/a.py::test_also_flaky[1]": True}))
    after.write_text(json.dumps({"tests/b.py::test_broken": True}))
    assert run(first, after).splitlines() == ["ci: passed only on the rerun (flaky, to fix):",
                                              "  tests/a.py::test_also_flaky[1]", "  tests/a.py::test_flaky"]


def test_nothing_is_printed_when_every_rerun_test_failed_again_or_none_failed(tmp_path):
    first, after = tmp_path / "first", tmp_path / "after"
    first.write_text(json.dumps({"tests/b.py::test_broken": True}))
    after.write_text(json.dumps({"tests/b.py::test_broken": True}))
    assert run(first, after) == ""
    after.unlink()
    first.write_text("{}")
    assert run(first, after) == ""


def test_a_grouped_test_is_run_again_and_named_by_its_node_id(tmp_path):
    """xdist's loadgroup caches `<id>@<group>`: the rerun (one process) must be given `<id>`, or it runs nothing."""
    first, after = tmp_path / "first", tmp_path / "after"
    first.write_text(json.dumps({"tests/u.py::test_metrics@usage": True, "tests/a.py::test_x[a@b]": True}))
    ids = subprocess.run([sys.executable, str(FLAKY), "--ids", str(first)], capture_output=True, text=True,
                         check=True).stdout.splitlines()
    assert ids == ["tests/a.py::test_x[a@b]", "tests/u.py::test_metrics"]
    after.write_text(json.dumps({}))
    assert run(first, after).splitlines()[1:] == ["  tests/a.py::test_x[a@b]", "  tests/u.py::test_metrics"]
