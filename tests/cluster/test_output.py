"""Pure table rendering: kubectl ages, column padding, wide columns, namespaces with -A."""

from datetime import datetime, timezone

import pytest

from rlark_tui.cluster.kinds import JOBS, NODES
from rlark_tui.cluster.output import kubectl_age, render_objects, render_table, table

NOW = datetime(2026, 11, 29, 12, 0, 0, tzinfo=timezone.utc)


@pytest.mark.parametrize("stamp, shown", [
    ("2026-11-29T11:59:15Z", "45s"), ("2026-11-29T11:58:00Z", "2m"), ("2026-11-29T09:00:00Z", "3h"),
    ("2026-11-26T12:00:00Z", "3d"), ("", "<unknown>"), ("garbage", "<unknown>"),
])
def test_age(stamp, shown):
    assert kubectl_age(stamp, NOW) == shown


def test_table_pads_columns_with_three_spaces():
    assert table(["NAME", "AGE"], [["a-long-name", "5m"], ["b", "10d"]]) == (
        "NAME          AGE\na-long-name   5m\nb             10d")


def test_job_table_and_wide():
    job = {"metadata": {"name": "ppo", "creationTimestamp": "2026-11-29T11:00:00Z"},
           "spec": {"domain": "net", "tasks": [
               {"name": "actor", "head": True, "role": "Actor"},
               {"name": "env", "role": "Env", "kubernetes": {"workload": {"replicas": 2}}}]},
           "status": {"phase": "Running", "tasks": [{"name": "ppo-actor", "phase": "Running"},
                                                    {"name": "ppo-env", "phase": "Pending"}]}}
    assert render_table(JOBS, [job], now=NOW).splitlines()[1].split() == ["ppo", "Running", "1/2", "actor,env", "60m",
                                                                          "-"]
    wide = render_table(JOBS, [job], wide=True, now=NOW).splitlines()[1].split()
    assert wide[6:10] == ["RL", "actor", "3", "net"]


def test_job_table_check_column_shows_the_saved_check_summary():
    summary = '{"at":"2026-11-29T10:00:00Z","recorder":"alice","results":["pass","pass","pass","pass","pass",' \
              '"pass"],"decision":"continue"}'
    job = {"metadata": {"name": "ppo", "annotations": {"rlark.io/check-summary": summary}}, "spec": {"tasks": []}}
    hostile = {"metadata": {"name": "x", "annotations": {"rlark.io/check-summary": '{"at":"2026-11-29T10:00:00Z",'
                                                          '"recorder":"\\u001b[31mbob","results":["fail"]}'}}}
    broken = {"metadata": {"name": "y", "annotations": {"rlark.io/check-summary": "not json"}}}
    lines = render_table(JOBS, [job, hostile, broken], now=NOW).splitlines()
    assert lines[1].endswith("6/6 continue 2h ago alice")
    assert lines[2].endswith("0/1 - 2h ago bob")  # the escape sequence is gone
    assert lines[3].split()[-1] == "-"


def test_nodes_with_all_namespaces_and_missing_fields():
    nodes = [{"metadata": {"name": "b", "namespace": "rlark-y"}},
             {"metadata": {"name": "a", "namespace": "rlark-x", "labels": {"rlark.io/node-category": "cloud"}},
              "status": {"phase": "Online", "allocatable": {"nvidia.com/gpu": "8"}}}]
    lines = render_table(NODES, nodes, all_namespaces=True, now=NOW).splitlines()
    assert lines[0].split() == ["NAMESPACE", "NAME", "PHASE", "GPU", "CATEGORY", "AGE"]
    assert lines[1].split() == ["rlark-x", "a", "Online", "8", "cloud", "<unknown>"]
    assert lines[2].split() == ["rlark-y", "b", "-", "-", "-", "<unknown>"]


def test_name_output():
    assert render_objects(JOBS, [{"metadata": {"name": "b"}}, {"metadata": {"name": "a"}}], "name") == (
        "job.rlinf.io/a\njob.rlinf.io/b")
