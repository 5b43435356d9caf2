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


def _random_node(rng, serial):
    """A small Node CR drawn from few values, so Nodes share names, labels, models and devices (and some have
    a non-string label or no namespace)."""
    cluster = rng.choice(["rlark-a", "rlark-b"])
    labels = {key: rng.choice(["1", "2"]) for key in rng.sample(["a", "b", "kubernetes.io/hostname"], rng.randint(0, 3))}
    if rng.random() < 0.1:
        labels["a"] = 1
    metadata = {"name": rng.choice(["n1", "n2", "n3", "n4", "n5"]), "labels": labels, "uid": str(serial)}
    if rng.random() < 0.8:
        metadata["namespace"] = cluster
    else:
        labels["rlark.io/cluster-id"] = cluster
    if rng.random() < 0.5:
        metadata["annotations"] = {"rlark.io/gpu-model": rng.choice(["H100", "A100"])}
    resource = rng.choice(["nvidia.com/gpu", "rlinf.io/device-franka", "rlinf.io/device", "cpu"])
    amount = str(rng.randint(0, 3))
    status = {"capacity": {resource: amount}, "allocatable": {resource: amount},
              "used": {resource: str(rng.randint(0, 2))}, "phase": rng.choice(["Online", "Offline"])}
    return {"metadata": metadata, "status": status, "spec": {"unschedulable": rng.random() < 0.2}}


def _derivations(nodes):
    """What the wizard derives of the Nodes, with each Node named by its place (the views of two NodeSets of the
    same dicts differ)."""
    from rlark_tui.jobspec import render
    from rlark_tui.jobspec import wizard_fields as wf
    from rlark_tui.model.placement import hardware_choices, hardware_named, node_clusters

    def member(slots):
        return nodes.place(slots.node), slots.kind, slots.model, slots.resource, slots.total, slots.free

    found = {"clusters": node_clusters(nodes)}
    for selector in ({"a": "1"}, {"a": "1,2", "b": "2"}, {"kubernetes.io/hostname": "2"}, {}):
        found[f"match {selector}"] = [nodes.place(node) for node in matching_nodes(selector, nodes)]
    for cluster in ("", "rlark-a", "rlark-b"):
        found[cluster] = (
            [(choice.kind, choice.model, [member(m) for m in choice.members])
             for choice in hardware_choices(nodes, cluster)],
            {model: member(hardware_named(nodes, cluster, model).members[0])
             for model in ("H100", "A100", "CPU", "rlinf.io/device") if hardware_named(nodes, cluster, model)},
            wf.label_choices(nodes, cluster), wf._label_options(nodes, cluster), wf._hardware_options(nodes, cluster),
            wf.device_summary(nodes, cluster), [wf._node_options(nodes, cluster, m) for m in ("H100", "CPU")],
            {name: [nodes.place(node) for node in same] for name, same in render._named(nodes, cluster).items()})
    return found


@pytest.mark.parametrize("seed", range(12))
def test_a_node_set_made_after_another_derives_what_one_made_from_scratch_does(seed):
    """Issue 33: the platform refreshes each Node CR every 30 s, so over 10,000 Nodes nearly every Snapshot has new
    Nodes, and the wizard derived its hardware choices, labels, devices and the labels' index again from every Node
    (half a second of the UI thread a Snapshot). A NodeSet made after the previous one updates each derivation by
    the Nodes that came and went: over random sequences of Nodes changed, added, removed and reordered, each
    derivation is the one a NodeSet of the same dicts derives from scratch."""
    import random

    from rlark_tui.model.placement import node_set_after

    rng = random.Random(seed)
    raws = {f"k{serial}": _random_node(rng, serial) for serial in range(rng.randint(0, 12))}
    nodes, serial, updated = NodeSet(raws.values()), 100, 0
    for step in range(30):
        for _ in range(rng.randint(1, 4)):
            serial += 1
            what = rng.random()
            if what < 0.5 and raws:
                raws[rng.choice(list(raws))] = _random_node(rng, serial)
            elif what < 0.75 or not raws:
                raws[f"k{serial}"] = _random_node(rng, serial)
            else:
                del raws[rng.choice(list(raws))]
        if rng.random() < 0.1:
            raws = dict(rng.sample(list(raws.items()), len(raws)))
        nodes = node_set_after(nodes, raws.values())
        updated += nodes.changes is not None
        if rng.random() < 0.8:
            assert _derivations(nodes) == _derivations(NodeSet(raws.values())), step
    assert updated >= 20
