"""The agent's pure decisions: Job -> Tasks, pod names, scheduling and the platform's phase machines."""

import pytest

from rlark_sandbox import plan


def node(name, cluster, labels=None, gpu=8, phase="Online", unschedulable=False, extra=None):
    allocatable = {"nvidia.com/gpu": str(gpu), **(extra or {})}
    return {
        "metadata": {"name": name, "namespace": cluster,
                     "labels": {"kubernetes.io/hostname": name, **(labels or {})}},
        "spec": {"unschedulable": unschedulable},
        "status": {"phase": phase, "allocatable": allocatable, "capacity": allocatable},
    }


NODES = [
    node("gpu-a1", "rlark-gpu-a", {"gpu-model": "h100"}),
    node("gpu-a2", "rlark-gpu-a", {"gpu-model": "h100"}),
    node("gpu-a3", "rlark-gpu-a", {"gpu-model": "h100"}),
    node("edge-b1", "rlark-edge-b", {"robot": "franka"}, gpu=1, extra={"rlinf.io/franka": "1"}),
]


def task_entry(name, selector, replicas=1, head=False, gpu=0):
    container = {"name": "main", "image": "img@sha256:1"}
    if gpu:
        container["resources"] = {"requests": {"nvidia.com/gpu": str(gpu)}, "limits": {"nvidia.com/gpu": str(gpu)}}
    entry = {"name": name, "role": "Actor", "agentType": "Kubernetes", "nodeSelector": selector,
             "kubernetes": {"workload": {"kind": "StatefulSet", "template": {"spec": {"containers": [container]}}}}}
    if replicas is not None:
        entry["kubernetes"]["workload"]["replicas"] = replicas
    if head:
        entry["head"] = True
    return entry


def job(tasks, stopped=False, domain="", ssh=""):
    spec = {"tasks": tasks}
    if stopped:
        spec["stopped"] = True
    if domain:
        spec["domain"] = domain
    if ssh:
        spec["sshPublicKey"] = ssh
    return {"metadata": {"name": "ppo", "uid": "job-uid"}, "spec": spec}


def test_tasks_are_named_labelled_owned_and_ranked_in_list_order():
    tasks = plan.desired_tasks(job([
        task_entry("rollout", {"kubernetes.io/hostname": "gpu-a2,gpu-a3"}, replicas=2),
        task_entry("actor", {"kubernetes.io/hostname": "gpu-a1"}, head=True),
        task_entry("env", {"robot": "franka"}, replicas=None),
    ], domain="net", ssh="ssh-ed25519 AAAA x"), NODES)
    assert [t["metadata"]["name"] for t in tasks] == ["ppo-rollout", "ppo-actor", "ppo-env"]
    assert [t["metadata"]["namespace"] for t in tasks] == ["rlark-gpu-a", "rlark-gpu-a", "rlark-edge-b"]
    for task in tasks:
        assert task["metadata"]["labels"] == {"rlinf.io/job": "ppo"}
        owner = task["metadata"]["ownerReferences"][0]
        assert (owner["kind"], owner["name"], owner["uid"], owner["controller"]) == ("Job", "ppo", "job-uid", True)
        assert task["metadata"]["annotations"]["rlark.io/ray-total-nodes"] == "4"
        assert task["metadata"]["annotations"]["rlark.io/ray-head-task-name"] == "ppo-actor"
        assert task["spec"]["domain"] == "net" and task["spec"]["sshPublicKey"] == "ssh-ed25519 AAAA x"
        assert "name" not in task["spec"] and "head" not in task["spec"]
    annotations = [t["metadata"]["annotations"] for t in tasks]
    assert [a["rlark.io/ray-node-rank-start"] for a in annotations] == ["0", "2", "3"]
    assert [a["rlark.io/ray-role"] for a in annotations] == ["worker", "head", "worker"]


@pytest.mark.parametrize("selector, namespace", [
    ({"kubernetes.io/hostname": "edge-b1,gpu-a1"}, "rlark-edge-b"),   # cut at the first comma
    ({"kubernetes.io/hostname": "gpu-a3"}, "rlark-gpu-a"),
    ({"gpu-model": "h100"}, "rlark-gpu-a"),
    ({"kubernetes.io/hostname": "nowhere"}, "default"),
    ({}, "default"),
])
def test_task_namespace_is_the_first_matching_node_cluster(selector, namespace):
    [task] = plan.desired_tasks(job([task_entry("a", selector, head=True)]), NODES)
    assert task["metadata"]["namespace"] == namespace


def test_stopped_job_forces_zero_replicas_but_keeps_rank_annotations():
    tasks = plan.desired_tasks(job([
        task_entry("actor", {"kubernetes.io/hostname": "gpu-a1"}, head=True),
        task_entry("rollout", {"kubernetes.io/hostname": "gpu-a2,gpu-a3"}, replicas=2),
    ], stopped=True), NODES)
    assert [t["spec"]["kubernetes"]["workload"]["replicas"] for t in tasks] == [0, 0]
    assert tasks[1]["metadata"]["annotations"]["rlark.io/ray-node-rank-start"] == "1"
    assert tasks[1]["metadata"]["annotations"]["rlark.io/ray-total-nodes"] == "3"


def test_job_without_head_has_no_head_annotation():
    [task] = plan.desired_tasks(job([task_entry("a", {"kubernetes.io/hostname": "gpu-a1"})]), NODES)
    assert "rlark.io/ray-head-task-name" not in task["metadata"]["annotations"]


def test_task_changed_only_when_spec_or_owned_metadata_differ():
    [task] = plan.desired_tasks(job([task_entry("a", {"kubernetes.io/hostname": "gpu-a1"}, head=True)]), NODES)
    stored = {**task, "status": {"phase": "Running"},
              "metadata": {**task["metadata"], "resourceVersion": "7", "finalizers": ["x"]}}
    assert not plan.task_changed(stored, task)
    [stopped] = plan.desired_tasks(job([task_entry("a", {"kubernetes.io/hostname": "gpu-a1"}, head=True)],
                                       stopped=True), NODES)
    assert plan.task_changed(stored, stopped)


@pytest.mark.parametrize("agent_type, kind, namespace, runs", [
    ("Kubernetes", "StatefulSet", "rlark-gpu-a", True),
    ("Kubernetes", "Deployment", "rlark-gpu-a", False),   # the sandbox runs StatefulSets only
    ("Kubernetes", "CloneSet", "rlark-gpu-a", False),
    ("Docker", "StatefulSet", "rlark-gpu-a", False),
    ("", "StatefulSet", "rlark-gpu-a", False),
    ("Kubernetes", "StatefulSet", "default", False),
])
def test_only_kubernetes_tasks_in_agent_namespaces_run(agent_type, kind, namespace, runs):
    task = {"metadata": {"namespace": namespace},
            "spec": {"agentType": agent_type, "kubernetes": {"workload": {"kind": kind}}}}
    assert plan.runs_here(task) is runs


@pytest.mark.parametrize("count, existing, created", [
    (2, {}, ["t-0"]),
    (2, {"t-0": False}, []),                  # OrderedReady: wait for t-0
    (2, {"t-0": True}, ["t-1"]),
    (2, {"t-0": True, "t-1": True}, []),
    (0, {}, []),
])
def test_statefulset_creates_pods_in_ordinal_order(count, existing, created):
    assert plan.statefulset_pods_to_create("t", count, existing) == created


def test_scale_down_deletes_highest_ordinals_first():
    assert plan.pods_to_delete("t", 1, ["t-0", "t-1", "t-2", "other-5"]) == ["t-2", "t-1"]
    assert plan.pods_to_delete("t", 0, ["t-0"]) == ["t-0"]


def test_a_changed_template_rolls_one_pod_at_a_time_from_the_highest_ordinal():
    spec = {"runScript": "python t.py", "kubernetes": {"workload": {"kind": "StatefulSet", "replicas": 2}}}
    old = plan.template_revision(spec)
    scaled = {**spec, "kubernetes": {"workload": {"kind": "StatefulSet", "replicas": 5}}}
    assert plan.template_revision(scaled) == old, "a scale is not a new revision"
    new = plan.template_revision({**spec, "runScript": "python t.py runner.resume_dir=/o/global_step_2"})
    assert new != old
    assert plan.pod_to_roll("t", new, {"t-0": (old, True), "t-1": (old, True)}) == "t-1"
    assert plan.pod_to_roll("t", new, {"t-0": (old, True), "t-1": (new, False)}) is None, "waits for t-1 ready"
    assert plan.pod_to_roll("t", new, {"t-0": (old, True), "t-1": (new, True)}) == "t-0"
    assert plan.pod_to_roll("t", new, {"t-0": (new, True), "t-1": ("", True)}) is None


def test_requests_fall_back_to_limits():
    spec = {"kubernetes": {"workload": {"template": {"spec": {"containers": [{
        "name": "main", "resources": {"limits": {"nvidia.com/gpu": "2", "rlinf.io/franka": "1"},
                                      "requests": {"nvidia.com/gpu": "1", "cpu": "500m"}}}]}}}}}
    assert plan.pod_requests(spec) == {"nvidia.com/gpu": 1.0, "rlinf.io/franka": 1.0, "cpu": 0.5}


GPU_A = [n for n in NODES if n["metadata"]["namespace"] == "rlark-gpu-a"]


@pytest.mark.parametrize("selector, requests, used, taken, placed, message", [
    ({"kubernetes.io/hostname": "gpu-a2"}, {"nvidia.com/gpu": 8}, {}, [], "gpu-a2", ""),
    ({"gpu-model": "h100"}, {"nvidia.com/gpu": 1}, {}, ["gpu-a1"], "gpu-a2", ""),
    ({"kubernetes.io/hostname": "gpu-a2"}, {"nvidia.com/gpu": 9}, {}, [], None,
     "0/3 nodes are available: 1 Insufficient nvidia.com/gpu, "
     "2 node(s) didn't match Pod's node affinity/selector."),
    ({"kubernetes.io/hostname": "gpu-a1"}, {"nvidia.com/gpu": 4}, {"gpu-a1": {"nvidia.com/gpu": 6}}, [], None,
     "0/3 nodes are available: 1 Insufficient nvidia.com/gpu, "
     "2 node(s) didn't match Pod's node affinity/selector."),
    ({"kubernetes.io/hostname": "gpu-a1"}, {}, {}, ["gpu-a1"], None,
     "0/3 nodes are available: 1 node(s) didn't match pod anti-affinity rules, "
     "2 node(s) didn't match Pod's node affinity/selector."),
    ({"kubernetes.io/hostname": "gpu-a1"}, {"rlinf.io/franka": 1}, {}, [], None,
     "0/3 nodes are available: 1 Insufficient rlinf.io/franka, "
     "2 node(s) didn't match Pod's node affinity/selector."),
])
def test_scheduling_like_kubernetes(selector, requests, used, taken, placed, message):
    result = plan.schedule(selector, requests, GPU_A, used, taken)
    assert result.node == placed
    if placed is None:
        assert result.message == message


def test_offline_and_cordoned_nodes_take_no_pods():
    nodes = [node("n1", "rlark-x", phase="Offline"), node("n2", "rlark-x", unschedulable=True)]
    result = plan.schedule({}, {}, nodes, {}, [])
    assert result.node is None
    assert "1 node(s) were unschedulable" in result.message and "not-ready" in result.message


def test_used_sums_requests():
    assert plan.used_resources([{"nvidia.com/gpu": 1}, {"nvidia.com/gpu": 2, "cpu": 1}]) == {
        "nvidia.com/gpu": 3, "cpu": 1}


@pytest.mark.parametrize("kind, want, ready, unavailable, phase", [
    ("StatefulSet", 0, 0, 0, "Stopped"),
    ("StatefulSet", 2, 2, 0, "Running"),
    ("StatefulSet", 2, 1, 1, "Pending"),       # never Failed
    ("Deployment", 0, 0, 0, "Stopped"),
    ("Deployment", 1, 1, 0, "Running"),
    ("Deployment", 1, 0, 1, "Failed"),
    ("Deployment", 1, 0, 0, "Pending"),
    ("DaemonSet", 2, 2, 0, "Running"),
    ("DaemonSet", 2, 1, 1, "Failed"),
    ("DaemonSet", 2, 1, 0, "Pending"),
])
def test_task_phase_by_workload(kind, want, ready, unavailable, phase):
    assert plan.task_phase(kind, want, ready, unavailable) == phase


def _job(phase="", stopped=False, tasks=("a", "b"), status=None):
    status = dict(status or {})
    if phase:
        status["phase"] = phase
    spec = {"tasks": [{"name": t} for t in tasks]}
    if stopped:
        spec["stopped"] = True
    return {"metadata": {"name": "j"}, "spec": spec, "status": status}


@pytest.mark.parametrize("phase, stopped, task_phases, expected", [
    ("", False, {}, "Pending"),
    ("Pending", False, {"j-a": "Pending", "j-b": "Running"}, "Running"),
    ("Pending", False, {"j-a": "Failed"}, "Pending"),          # no Pending -> Failed
    ("Running", False, {"j-a": "Pending", "j-b": "Pending"}, "Running"),  # no Running -> Pending
    ("Running", False, {"j-a": "Failed", "j-b": "Running"}, "Failed"),
    ("Running", False, {"j-a": "Succeeded", "j-b": "Succeeded"}, "Succeeded"),
    ("Running", True, {"j-a": "Running"}, "Stopped"),
    ("Pending", True, {}, "Stopped"),
    ("Stopped", False, {"j-a": "Stopped"}, "Pending"),
    ("Stopped", True, {"j-a": "Stopped"}, "Stopped"),
    ("Failed", True, {"j-a": "Running"}, "Failed"),             # terminal
    ("Succeeded", False, {"j-a": "Pending"}, "Succeeded"),
])
def test_job_state_machine(phase, stopped, task_phases, expected):
    status = plan.job_status(_job(phase, stopped), {k: (v, "") for k, v in task_phases.items()}, "T")
    assert status["phase"] == expected


def test_job_times_and_task_entries():
    status = plan.job_status(_job(), {}, "T1")
    assert status["startTime"] == "T1" and "endTime" not in status
    assert status["tasks"] == [{"name": "a", "phase": "Pending"}, {"name": "b", "phase": "Pending"}]
    running = plan.job_status(_job("Pending", status=status), {"j-a": ("Running", ""), "j-b": ("Pending", "wait")},
                              "T2")
    assert running["startTime"] == "T1"
    assert running["tasks"][1] == {"name": "b", "phase": "Pending", "message": "wait"}
    older = plan.job_status(_job("Running", status={"phase": "Running", "tasks": [{"name": "j-a"}, {"name": "b"}]}),
                            {"j-a": ("Running", "")}, "T2")
    assert older["tasks"] == [{"name": "a", "phase": "Running"}, {"name": "b"}]
    stopped = plan.job_status(_job("Running", stopped=True, status=running), {}, "T3")
    assert "endTime" not in stopped
    done = plan.job_status(_job("Running", status=running),
                           {"j-a": ("Succeeded", ""), "j-b": ("Succeeded", "")}, "T4")
    assert done["endTime"] == "T4"
    later = plan.job_status(_job("Running", tasks=("a", "b", "c"), status=running), {}, "T5")
    assert [t["name"] for t in later["tasks"]] == ["a", "b"]   # built once


@pytest.mark.parametrize("domain, address", [("", "ppo-actor-ray-head"), ("net", "ppo-actor-0.rlark-domain")])
def test_head_address(domain, address):
    assert plan.head_address("ppo-actor", domain) == address
