"""Typed views answer with plain values and never raise on missing, partial or mistyped fields."""

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rlark_tui.model.objects import Job, Node, Pod, Task

JOB = {
    "apiVersion": "rlinf.io/v1alpha1", "kind": "Job",
    "metadata": {"name": "ppo", "creationTimestamp": "2026-01-01T00:00:00Z",
                 "annotations": {"rlark.io/display-name": "PPO",
                                 "rlark.io/launch-record": json.dumps({"runId": "r1"}),
                                 "rlark.io/deployment-plan": "not json"}},
    "spec": {"domain": "d", "tasks": [
        {"name": "actor", "head": True, "role": "Actor", "kubernetes": {"workload": {
            "kind": "StatefulSet", "replicas": 1, "template": {"spec": {
                "containers": [{"name": "sidecar", "image": "x"},
                               {"name": "main", "image": "img@sha256:ab",
                                "env": [{"name": "RLARK_TASK_ROLE", "value": "Actor"}],
                                "resources": {"requests": {"nvidia.com/gpu": "8", "rlinf.io/franka": 1},
                                              "limits": {"nvidia.com/gpu": "8"}},
                                "volumeMounts": [{"name": "d", "mountPath": "/data"},
                                                 {"name": "c", "mountPath": "/ckpt"}]}],
                "volumes": [{"name": "d", "hostPath": {"path": "/srv"}},
                            {"name": "c", "persistentVolumeClaim": {"claimName": "pvc-1"}}]}}}}},
        {"name": "env", "role": "Env", "kubernetes": {"workload": {"kind": "StatefulSet"}}},
    ]},
    "status": {"phase": "Running", "tasks": [{"name": "ppo-actor", "phase": "Running"},
                                             {"name": "ppo-env", "phase": "Pending"}]},
}


def test_job_view_reads_roles_and_records():
    job = Job(JOB)
    assert (job.name, job.display_name, job.domain, job.job_type) == ("ppo", "PPO", "d", "RL")
    head = job.head_task
    assert head.name == "actor" and job.head_task_name == "ppo-actor"
    assert head.image == "img@sha256:ab" and head.gpu == 8 and head.devices == {"rlinf.io/franka": 1}
    assert head.mounts == [{"target": "/data", "type": "host", "source": "/srv", "volume": "d"},
                           {"target": "/ckpt", "type": "storage", "source": "pvc-1", "volume": "c"}]
    assert [t.replicas for t in job.tasks] == [1, 1] and job.total_nodes == 2
    assert job.launch_record == {"runId": "r1"} and job.deployment_plan == {}
    assert job.shown_status == "Running" and job.workers_running == 1


@pytest.mark.parametrize("written, read", [
    (["actor", "env"], ["ppo-actor", "ppo-env"]),             # the platform's controller: short role names
    (["ppo-actor", "ppo-env"], ["ppo-actor", "ppo-env"]),     # older writers: the Task object names
    (["actor", "ppo-env"], ["ppo-actor", "ppo-env"]),         # mixed
    (["other", ""], ["other", ""]),                           # no such role: left as written
])
def test_status_task_names_in_both_forms(written, read):
    raw = {**JOB, "status": {"phase": "Running", "tasks": [{"name": n, "phase": "Running"} for n in written]}}
    job = Job(raw)
    assert [t["name"] for t in job.status_tasks] == read
    assert job.workers_running == 2


@pytest.mark.parametrize("phase, stopped, task_phases, shown", [
    ("Running", False, ["Running", "Failed"], "Failed"),
    ("Running", False, ["Succeeded", "Succeeded"], "Succeeded"),
    ("Running", False, ["Pending"], "Pending"),
    ("Running", True, ["Running"], "Stopped"),
    ("Stopped", False, [], "Stopped"),
    ("", False, [], "Pending"),
])
def test_job_shown_status_as_console(phase, stopped, task_phases, shown):
    raw = {"spec": {"stopped": stopped}, "status": {"phase": phase,
                                                   "tasks": [{"phase": p} for p in task_phases]}}
    assert Job(raw).shown_status == shown


@pytest.mark.parametrize("raw", [
    {}, None, "text", [], {"metadata": None, "spec": None, "status": None},
    {"metadata": {"labels": "x", "annotations": [1]}, "spec": {"tasks": "nope"}, "status": {"tasks": [3, None]}},
    {"spec": {"tasks": [None, {"kubernetes": {"workload": {"template": {"spec": {"containers": "x"}}}}}]}},
])
def test_views_never_raise_on_partial_objects(raw):
    job, task, pod, node = Job(raw), Task(raw), Pod(raw), Node(raw)
    values = [job.name, job.labels, job.annotations, job.tasks, job.head_task, job.shown_status,
              job.launch_record, job.total_nodes, job.job_type,
              task.job_name, task.rank_start, task.replicas, task.observed_nodes, task.is_head,
              task.spec.image, task.spec.mounts, task.spec.gpu, task.spec.devices,
              pod.task_name, pod.ordinal, pod.node, pod.ip, pod.phase,
              node.cluster, node.online, node.schedulable, node.allocatable("nvidia.com/gpu"),
              node.free("cpu"), node.resources, node.internal_ip]
    assert values[0] == "" and values[3] in ([], values[3])
    for t in job.tasks:
        assert t.image == "" and t.replicas == 1


def test_task_pod_node_views():
    task = Task({"metadata": {"name": "ppo-env", "namespace": "rlark-edge",
                              "labels": {"rlinf.io/job": "ppo"},
                              "annotations": {"rlark.io/ray-role": "worker", "rlark.io/ray-node-rank-start": "1",
                                              "rlark.io/ray-total-nodes": "3"}},
                 "spec": {"kubernetes": {"workload": {"replicas": 2}}},
                 "status": {"observedNodes": ["r1", "r2"]}})
    assert (task.job_name, task.is_head, task.rank_start, task.total_nodes, task.replicas) == \
        ("ppo", False, 1, 3, 2)
    pod = Pod({"metadata": {"name": "uid-1", "namespace": "rlark-edge",
                            "labels": {"rlark.io/task-name": "ppo-env"}},
               "spec": {"podName": "ppo-env-1"}, "status": {"phase": "Running", "node": "r2", "ip": "10.0.0.2"}})
    assert (pod.task_name, pod.ordinal, pod.cluster, pod.node) == ("ppo-env", 1, "rlark-edge", "r2")
    assert Pod({"spec": {"podName": "ppo-env-7d9f8"}}).ordinal is None
    assert Pod({"spec": {"podName": "ppo-env-²"}}).ordinal is None
    assert Task({"metadata": {"annotations": {"rlark.io/ray-node-rank-start": "--5"}}}).rank_start is None
    node = Node({"metadata": {"name": "r2", "namespace": "rlark-edge"}, "spec": {"unschedulable": True},
                 "status": {"phase": "Online", "allocatable": {"nvidia.com/gpu": "8", "memory": "64Gi",
                                                                "rlinf.io/franka": 1},
                            "used": {"nvidia.com/gpu": 6}}})
    assert node.online and not node.schedulable
    assert node.free("nvidia.com/gpu") == 2 and node.allocatable("memory") == 64 * 2**30
    assert node.free("rlinf.io/other") is None and node.device_resources == ["rlinf.io/franka"]


json_like = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=8)),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
        st.sampled_from(["metadata", "spec", "status", "name", "namespace", "labels", "annotations", "tasks",
                         "kubernetes", "workload", "template", "containers", "env", "resources", "limits",
                         "allocatable", "used", "phase", "replicas", "podName", "volumes", "volumeMounts",
                         "rlark.io/launch-record", "nvidia.com/gpu", "head", "observedNodes"]),
        inner, max_size=4),
    max_leaves=20)


def _read_every_property(view) -> None:
    for cls in type(view).__mro__:
        for name, member in vars(cls).items():
            if isinstance(member, property):
                getattr(view, name)


@settings(max_examples=150, deadline=None)
@given(json_like)
def test_views_never_raise_on_arbitrary_objects(raw):
    for view in (Job(raw), Task(raw), Pod(raw), Node(raw)):
        _read_every_property(view)
    for task in Job(raw).tasks + [Task(raw).spec]:
        _read_every_property(task)
    node = Node(raw)
    assert isinstance(node.free("nvidia.com/gpu"), (float, type(None))) and isinstance(node.cluster, str)


def test_sample_nodes_are_valid_node_crs(nodes):
    from .jobschema import crd_validator
    for node in nodes:
        assert list(crd_validator("nodes").iter_errors(node)) == [], node["metadata"]["name"]
