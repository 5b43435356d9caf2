"""Issue 32 item 1: one row deriver per view, fed only by the SnapshotIndex (rlark_tui/view/), used by the screens
and by the CLI alike: `rlark get jobs`' row (whole objects or the lean decoded shape) says what the job list's row
says of the same Jobs, `rlark describe node` is the Node screen's detail, and no screen derives rows itself."""

from __future__ import annotations

import ast
import json
from datetime import UTC, datetime
from pathlib import Path

from rlark_tui.cluster.kinds import JOBS
from rlark_tui.cluster.output import JobTableList, render_table
from rlark_tui.cluster.transport import decode_json
from rlark_tui.commands.nodeinfo import listed_index
from rlark_tui.flow.snapshot import Snapshot
from rlark_tui.view.index import SnapshotIndex
from rlark_tui.view.nodes import node_detail
from tests.console.test_nodeinfo import _node, _pod, _task
from tests.sources import parsed
from tests.tui.tui_factories import job_dict

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
SCREENS = Path(__file__).parents[2] / "rlark_tui" / "screens"


def _jobs() -> list[dict]:
    running = job_dict("ppo")
    stopped = job_dict("old")
    stopped["spec"]["stopped"] = True
    failed = job_dict("bad")
    failed["status"] = {"phase": "Running", "tasks": [{"name": "bad-actor", "phase": "Failed"}]}
    return [running, stopped, failed, job_dict("new", phase="Pending"), {"metadata": {"name": "bare"}}]


def test_the_cli_job_row_and_the_job_list_row_of_the_same_jobs_agree():
    jobs = _jobs()
    rows = SnapshotIndex(Snapshot(jobs={job["metadata"]["name"]: job for job in jobs})).rows
    body = json.dumps({"kind": "JobList", "metadata": {}, "items": jobs}).encode()
    for items in (jobs, decode_json(body, shape=JobTableList)["items"]):
        lines = render_table(JOBS, items, now=NOW).splitlines()[1:]
        shown = {line.split()[0]: line.split()[1] for line in lines}
        assert shown == {name: row.phase for name, row in rows.items()}


def test_describe_node_is_the_node_screens_detail():
    listed = {"nodes": [_node()], "pods": [_pod("a-actor", "n1", "u1")], "tasks": [_task("a", "Actor", "2")]}
    index = listed_index(**listed)
    detail = node_detail(index, "rlark-c/n1")
    assert detail is not None and [(w.name, w.job) for w in detail.workers] == [("a-actor-0", "a")]


def test_one_hostile_job_is_a_marked_row_and_the_others_show():
    jobs = [job_dict("ppo"), 5, {"metadata": {"name": "odd"}, "spec": "x"}]
    lines = render_table(JOBS, jobs, now=NOW).splitlines()
    assert any(line.startswith("ppo ") for line in lines)
    assert any("unreadable: the item is int, not an object" in line for line in lines)
    assert any(line.startswith("odd ") for line in lines)


def test_screens_import_no_deriving_code_of_their_own():
    """Screens reach a Snapshot's objects only through the view/ derivers: no screen builds a typed view from a
    raw dict (Job(raw), Pod(raw), Task(raw), Node(raw)) or walks the Snapshot's raw kinds."""
    found = []
    for path in sorted(SCREENS.glob("*.py")):
        if path.name == "check.py":
            continue  # it reads the run check's evidence (its topic's result), not the Snapshot's objects
        for node in ast.walk(parsed(path)):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in (
                    "Job", "Pod", "Task", "Node"):
                found.append(f"{path.name}:{node.lineno} {node.func.id}(...)")
            if isinstance(node, ast.Attribute) and node.attr in ("pods", "tasks", "nodes") and isinstance(
                    node.value, ast.Attribute) and node.value.attr == "snapshot":
                found.append(f"{path.name}:{node.lineno} snapshot.{node.attr}")
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "dig":
                found.append(f"{path.name}:{node.lineno} dig(...) of a raw object")
    assert not found, found


def test_no_screen_has_a_row_function_of_its_own():
    """A table's rows come from a view/ deriver (the screen only wraps its lines in the widget's Row): no
    module-level function of a screen builds Rows."""
    found = []
    for path in sorted(SCREENS.glob("*.py")):
        for function in parsed(path).body:
            if isinstance(function, ast.FunctionDef) and any(
                    isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "Row"
                    for node in ast.walk(function)):
                found.append(f"{path.name}:{function.lineno} {function.name}")
    assert not found, found


TOPICS = ("ray", "evidence", "health", "progress", "metrics", "workflows", "alerts", "usage", "storage", "sshkeys",
          "lookups")


def test_topic_results_are_read_through_the_index_typed_accessors():
    """Issue 32 item 5: a topic's result is read with the index's typed accessor; one of the wrong type is None
    (or no health), never an object a screen must test with isinstance; no screen reads `snapshot.<topic>`."""
    odd = {"j": "not a result"}
    index = SnapshotIndex(Snapshot(ray=odd, health=odd, progress=odd, metrics=odd, alerts=odd, usage=odd))
    assert (index.ray_of("j"), index.progress_of("j"), index.metrics_of("j"), index.alerts_of("j"),
            index.usage_of("j"), index.health_of("j")) == (None, None, None, None, None, {})
    found = [f"{path.name}:{node.lineno} snapshot.{node.attr}" for path in sorted(SCREENS.glob("*.py"))
             for node in ast.walk(parsed(path))
             if isinstance(node, ast.Attribute) and node.attr in TOPICS and isinstance(node.value, ast.Attribute)
             and node.value.attr == "snapshot"]
    assert not found, found
