"""Pure table rendering: kubectl ages, column padding, wide columns, namespaces with -A."""

from datetime import UTC, datetime

import pytest

from rlark_tui.cluster.kinds import JOBS, NODES
from rlark_tui.cluster.output import kubectl_age, render_objects, render_table, table

NOW = datetime(2026, 11, 29, 12, 0, 0, tzinfo=UTC)


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
              '"pass"],"decision":"continue","by":"rlark"}'
    job = {"metadata": {"name": "ppo", "annotations": {"rlark.io/check-summary": summary}}, "spec": {"tasks": []}}
    hostile = {"metadata": {"name": "x", "annotations": {"rlark.io/check-summary": '{"at":"2026-11-29T10:00:00Z",'
                                                          '"recorder":"\\u001b[31mbob","results":["fail"]}'}}}
    broken = {"metadata": {"name": "y", "annotations": {"rlark.io/check-summary": "not json"}}}
    lines = render_table(JOBS, [job, hostile, broken], now=NOW).splitlines()
    assert lines[1].endswith("6/6 continue 2h ago alice")
    assert lines[2].endswith("claim? 2h ago bob")  # not written by rlark; the escape sequence is gone
    assert lines[3].split()[-1] == "malformed?"


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


def test_a_job_table_from_its_fields_alone_is_the_table_of_the_whole_objects():
    """`rlark get jobs` decodes only the fields its table reads (JobTableList, cluster/transport.py decode_json): for every
    Job below, odd and hostile ones included, the table is the one the whole objects give, and an answer the
    shape does not fit is decoded whole."""
    import json

    from rlark_tui.cluster.output import TABLES, JobTableList
    from rlark_tui.cluster.transport import decode_json

    summary = '{"at":"2026-11-29T10:00:00Z","recorder":"al","results":["pass"],"decision":"continue"}'
    jobs = [
        {"metadata": {"name": "ppo", "namespace": "ns", "creationTimestamp": "2026-11-29T11:00:00Z",
                      "annotations": {"rlark.io/check-summary": summary, "other": "x" * 100},
                      "labels": {"a": "b"}},
         "spec": {"stopped": True, "tasks": [{"name": "actor", "head": True, "kubernetes": {"workload": {}}},
                                             {"name": "env"}]},
         "status": {"phase": "Running", "tasks": [{"name": "ppo-actor", "phase": "Running"}, {"phase": 3}]}},
        {"metadata": {"name": 7, "creationTimestamp": None, "annotations": {"rlark.io/check-summary": ["x"]}},
         "spec": {"stopped": "yes", "tasks": []}, "status": {"phase": None}},
        {"metadata": {"name": "\x1b]52;c;aGk=\x07evil"}, "spec": {}, "status": {}},
        {"metadata": {}},
        {},
    ]
    assert TABLES[JOBS.plural].reads is JobTableList
    whole_rows = render_table(JOBS, jobs, all_namespaces=True, now=NOW)
    body = json.dumps({"kind": "JobList", "metadata": {"resourceVersion": "9"}, "items": jobs}).encode()
    shaped = decode_json(body, shape=JobTableList)
    assert shaped["metadata"] == {"resourceVersion": "9"} and shaped["items"][0]["metadata"].keys() == {
        "name", "namespace", "creationTimestamp", "annotations"}
    assert render_table(JOBS, shaped["items"], all_namespaces=True, now=NOW) == whole_rows

    for odd in ({"items": [{"spec": {"tasks": "x"}}]}, {"items": [None]}, {"items": None},
                {"items": [{"metadata": []}]}, {"items": [{"spec": {"tasks": [1]}}]}):
        data = json.dumps(odd).encode()
        assert decode_json(data, shape=JobTableList) == decode_json(data) == odd
    assert decode_json(b"", shape=JobTableList) == {} and decode_json(b"\xff{", shape=JobTableList) == "\ufffd{"
