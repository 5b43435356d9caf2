"""Placement rules as the platform computes them: selectors, replicas, Ray ranks, clusters, names, job type."""

import pytest

from rlark_tui.model.naming import (
    derive_task_name,
    head_service_name,
    is_job_name,
    job_type,
    platform_role,
    volume_name,
)
from rlark_tui.model.placement import (
    NodeSet,
    expected_node_rank,
    matching_nodes,
    node_cluster,
    rank_starts,
    replicas,
    selector_matches,
    task_namespace,
    total_nodes,
)


def node(name, cluster, **labels):
    labels = {"kubernetes.io/hostname": name, "rlark.io/cluster-id": cluster, **labels}
    return {"metadata": {"name": name, "namespace": cluster, "labels": labels}}


NODES = [
    node("gpu-a1", "rlark-gpu-a", pool="h100"),
    node("gpu-a2", "rlark-gpu-a", pool="h100"),
    node("gpu-b1", "rlark-gpu-b", pool="h100"),
    node("robot-1", "rlark-edge", pool="franka"),
]


@pytest.mark.parametrize("selector, labels, expected", [
    ({"a": "1"}, {"a": "1", "b": "2"}, True),
    ({"a": "1"}, {"a": "2"}, False),
    ({"a": "1", "b": "2"}, {"a": "1", "b": "2"}, True),
    ({"a": "1", "b": "2"}, {"a": "1"}, False),
    ({"a": "1,2"}, {"a": "2"}, True),
    ({"a": "1,2"}, {"a": "3"}, False),
    ({"a": "1, 2"}, {"a": "2"}, True),
    ({"a": "1,2", "b": "x,y"}, {"a": "9", "b": "y"}, True),    # comma terms are ORed
    ({"a": "1,2", "c": "z"}, {"a": "1", "c": "q"}, False),     # single values are ANDed
    ({}, {"a": "1"}, True),
    ({"a": 1}, {"a": "1"}, False),
    ("junk", {"a": "1"}, False),
])
def test_selector_matches(selector, labels, expected):
    assert selector_matches(selector, labels) is expected


def test_matching_nodes_spans_every_cluster_in_given_order():
    matched = matching_nodes({"pool": "h100"}, NODES)
    assert [n["metadata"]["name"] for n in matched] == ["gpu-a1", "gpu-a2", "gpu-b1"]
    assert {node_cluster(n) for n in matched} == {"rlark-gpu-a", "rlark-gpu-b"}
    assert matching_nodes({"kubernetes.io/hostname": "gpu-a2,robot-1"}, NODES) == [NODES[1], NODES[3]]


def test_a_node_sets_labels_index_matches_the_nodes_each_selector_matches():
    """Of a NodeSet (the wizard's Nodes of a snapshot) a selector's Nodes are found through the labels' index, not
    by judging every Node: the same Nodes in the same order as selector_matches judges each."""
    labels = [{"a": "1", "b": "2"}, {"a": "2"}, {"a": "1"}, {"a": "3", "b": "y"}, {"a": "9", "b": "y"},
              {"a": "1", "c": "q"}, {"a": 1}, {}, {"a": "1", "b": "x"}, {"a": "1", "c": "z"}, "junk"]
    nodes = NodeSet({"metadata": {"name": f"n{i}", "labels": each}} for i, each in enumerate(labels))
    selectors = [{"a": "1"}, {"a": "2"}, {"a": "1", "b": "2"}, {"a": "1,2"}, {"a": "1, 2"}, {"a": "1,2", "b": "x,y"},
                 {"a": "1,2", "c": "z"}, {"b": ","}, {"a": "1", "b": "x,y", "c": "q,z"}, {}, {"a": 1}, {"z": "1"},
                 "junk"]
    for selector in selectors:
        assert matching_nodes(selector, nodes) == matching_nodes(selector, list(nodes)), selector
    assert [node.name for node in matching_nodes({"a": "1,2", "c": "z"}, nodes)] == ["n9"]


@pytest.mark.parametrize("selector, expected", [
    ({"kubernetes.io/hostname": "robot-1"}, "rlark-edge"),
    ({"kubernetes.io/hostname": "gpu-b1,gpu-a1"}, "rlark-gpu-b"),   # first value only
    ({"pool": "h100"}, "rlark-gpu-a"),
    ({}, "default"),
    ({"pool": "none"}, "default"),
])
def test_task_namespace(selector, expected):
    assert task_namespace(selector, list(reversed(NODES))) == expected


@pytest.mark.parametrize("node_obj, expected", [
    ({"metadata": {"namespace": "rlark-x"}}, "rlark-x"),
    ({"metadata": {"labels": {"rlark.io/cluster-id": "rlark-y"}}}, "rlark-y"),
    ({}, ""),
    ({"metadata": None}, ""),
])
def test_node_cluster(node_obj, expected):
    assert node_cluster(node_obj) == expected


def task(n=None):
    workload = {"kind": "StatefulSet"} if n is None else {"kind": "StatefulSet", "replicas": n}
    return {"name": "t", "kubernetes": {"workload": workload}}


@pytest.mark.parametrize("spec, expected", [
    (task(None), 1), (task(3), 3), (task(0), 0), ({}, 1), ({"kubernetes": None}, 1), (task("2"), 2),
    (task("x"), 1), (task(True), 1),
])
def test_replicas_nil_is_one(spec, expected):
    assert replicas(spec) == expected


def test_rank_start_and_expected_rank_follow_list_order():
    tasks = [task(2), task(None), task(3)]
    assert rank_starts(tasks) == [0, 2, 3]
    assert total_nodes(tasks) == 6
    assert [expected_node_rank(rank_starts(tasks)[2], o) for o in range(3)] == [3, 4, 5]


@pytest.mark.parametrize("role_name, expected", [
    ("Environment", "environment"), ("New Role", "new-role"), ("  Actor ", "actor"), ("a_b.c", "a-b-c"),
    ("--x--", "x"), ("机器人", ""), ("Robot 2", "robot-2"),
])
def test_derive_task_name(role_name, expected):
    assert derive_task_name(role_name) == expected


@pytest.mark.parametrize("roles, expected", [
    (["Actor", "Rollout", "Env"], "RL"), (["Rollout", "Env"], "Evaluation"), (["Env"], "DataCollection"),
    (["Rollout"], "RL"), ([], "Custom"), (["Other"], "Custom"), ([{"role": "Env"}, {"role": "Rollout"}], "Evaluation"),
])
def test_job_type_as_console(roles, expected):
    assert job_type(roles) == expected


@pytest.mark.parametrize("name, expected", [
    ("Actor", "Actor"), ("Learner", "Actor"), ("Rollout", "Rollout"), ("Camera Worker", "Rollout"),
    ("Environment", "Env"), ("Uploader", "Env"), ("my env", "Env"), ("whatever", "Actor"),
])
def test_platform_role_from_name(name, expected):
    assert platform_role(name) == expected


@pytest.mark.parametrize("name, ok", [
    ("ppo-7", True), ("a", True), ("7ppo", False), ("-a", False), ("a-", False), ("A", False),
    ("a" * 63, True), ("a" * 64, False), ("", False), ("a_b", False),
])
def test_job_name_rule(name, ok):
    assert is_job_name(name) is ok


def test_derived_platform_names():
    assert head_service_name("ppo", "actor") == "ppo-actor-ray-head"
    assert volume_name("/mnt/ckpt") == "mnt-ckpt"
    assert volume_name("/") == "vol"
    assert volume_name("/Data_Sets/x") == "data-sets-x"
