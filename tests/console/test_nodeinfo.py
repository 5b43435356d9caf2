"""view/nodes.py and model/nodeinfo.py on hand-made platform objects: Workers joined to their Tasks as the console does, the reserved
fallback when a Node reports no status.used, clusters' GPUs by model and running Jobs, and sanitised text."""

from __future__ import annotations

from rlark_tui.commands.nodeinfo import listed_index
from rlark_tui.model import nodeinfo
from rlark_tui.view import nodes


def _detail(node, pods, tasks):
    index = listed_index(nodes=[node], pods=pods, tasks=tasks)
    return nodes.node_detail(index, next(iter(index.snapshot.nodes)))


def _clusters(node_list, jobs, tasks):
    return nodes.cluster_rows(listed_index(nodes=node_list, jobs=jobs, tasks=tasks))


def _node(name="n1", used=None, gpus="8", cluster="rlark-c", category="cloud", phase="Online"):
    status = {"phase": phase, "diskPressure": True, "capacity": {"nvidia.com/gpu": gpus, "memory": "64Gi"},
              "allocatable": {"nvidia.com/gpu": gpus, "memory": "64Gi"},
              "pullProgress": [{"image": "img:1", "status": "Pulling", "downloaded": "1GB", "total": "3GB"}]}
    if used is not None:
        status["used"] = used
    return {"metadata": {"name": name, "namespace": cluster,
                         "labels": {"rlark.io/node-category": category, "rlark.io/region": "north\x1b[31m"},
                         "annotations": {"rlark.io/gpu-model": "A100", "rlark.io/city": "Beijing"}},
            "status": status}


def _task(job, role, gpu):
    return {"metadata": {"name": f"{job}-{role.lower()}", "namespace": "rlark-c", "labels": {"rlinf.io/job": job}},
            "spec": {"role": role, "kubernetes": {"workload": {"template": {"spec": {"containers": [
                {"name": "main", "resources": {"requests": {"nvidia.com/gpu": gpu, "memory": "8Gi"}}}]}}}}}}


def _pod(task, node, uid, phase="Running"):
    return {"metadata": {"name": uid, "namespace": "rlark-c", "labels": {"rlark.io/task-name": task}},
            "spec": {"taskName": task, "podName": f"{task}-0"}, "status": {"phase": phase, "node": node}}


def test_workers_and_reserved_from_requests_when_no_used():
    tasks = [_task("a", "Actor", "2"), _task("b", "Rollout", "4")]
    pods = [_pod("a-actor", "n1", "u1"), _pod("b-rollout", "n1", "u2"), _pod("b-rollout", "n2", "u3"),
            _pod("orphan", "n1", "u4")]
    detail = _detail(_node(), pods, tasks)
    assert [(w.name, w.job, w.role) for w in detail.workers] == [("a-actor-0", "a", "Actor"),
                                                                ("b-rollout-0", "b", "Rollout")]
    gpu = next(r for r in detail.resources if r.resource == "nvidia.com/gpu")
    assert (gpu.allocatable, gpu.reserved, gpu.free) == ("8", "6", "2")
    memory = next(r for r in detail.resources if r.resource == "memory")
    assert (memory.reserved, memory.free) == ("16Gi", "48Gi")
    assert "Workers' requests" in detail.reserved_source
    assert ("DiskPressure", "yes") in detail.conditions and detail.pull_progress == ("img:1 Pulling 1GB 3GB",)
    assert ("rlark.io/city", "Beijing") in detail.metadata
    text = nodeinfo.describe_node_text(detail)
    assert "\x1b" not in text and "rlark.io/region=north\n" in text + "\n"


def test_pending_worker_pulls_from_its_task():
    task = _task("a", "Actor", "1")
    task["status"] = {"pullProgress": [{"image": "rlinf:2", "status": "Downloading", "downloaded": "2GB",
                                        "total": "9GB", "speed": "50MB/s"}]}
    detail = _detail(_node(), [_pod("a-actor", "n1", "u1", phase="Pending")],
                                  [task])
    assert "a-actor-0: rlinf:2 Downloading 2GB 9GB 50MB/s" in detail.pull_progress
    running = _detail(_node(), [_pod("a-actor", "n1", "u1")], [task])
    assert not any(line.startswith("a-actor-0") for line in running.pull_progress)


def test_reported_used_wins():
    detail = _detail(_node(used={"nvidia.com/gpu": "3"}), [], {})
    assert nodeinfo.reserved_gpus(detail) == "3/8" and detail.reserved_source == "Node CR status.used"


def test_clusters_gpus_by_model_and_running_jobs():
    listed = [_node("n1", used={"nvidia.com/gpu": "3"}), _node("n2"),
             _node("n3", phase="Offline"), _node("r1", gpus="1", cluster="rlark-r", category="robot")]
    running = {"metadata": {"name": "a"}, "spec": {"tasks": [{"name": "actor"}]},
               "status": {"phase": "Running", "tasks": [{"name": "actor", "phase": "Running"}]}}
    stopped = {"metadata": {"name": "b"}, "spec": {"stopped": True}, "status": {"phase": "Stopped"}}
    rows = {r.cluster: r for r in _clusters(listed, [running, stopped],
                                                         [_task("a", "Actor", "1"), _task("b", "Env", "1")])}
    c = rows["rlark-c"]
    assert (c.nodes_online, c.nodes_total, c.gpus, c.running_jobs) == (2, 3, (("A100", 13, 24),), 1)
    assert c.region == "north / Beijing"
    assert rows["rlark-r"].gpus == (("A100", 1, 1),)
    assert "rlark-c 2/3   A100 13/24      1" in nodeinfo.clusters_table(list(rows.values()))


def test_malformed_objects_never_break_the_views():
    """Every field of a Node, Task, Pod CR, storage page and SSH key entry replaced by a value of the wrong type:
    the node detail, clusters, listing rows and key rows still come out (values missing, never an exception)."""
    from rlark_tui.model import sshkey, storage
    from tests.reliability.malformed import variants

    node, task, pod = _node(used={"nvidia.com/gpu": "1"}), _task("a", "Actor", "2"), _pod("a-actor", "n1", "u1")
    job = {"metadata": {"name": "a"}, "status": {"phase": "Running", "tasks": [{"name": "actor"}]}}
    count = 0
    for _, bad in variants(node):
        nodeinfo.describe_node_text(_detail(bad, [pod], [task]))
        _clusters([bad], [job], [task])
        count += 1
    for _, bad in variants(task):
        _detail(node, [pod], [bad])
        _clusters([node], [job], [bad])
        count += 1
    for _, bad in variants(pod):
        _detail(node, [bad], [task])
        count += 1
    page = {"objects": [{"key": "p/a", "size": 1, "etag": "x", "last_modified": "t"}], "common_prefixes": ["p/b/"],
            "is_truncated": False, "next_marker": ""}
    for _, bad in variants(page):
        storage.parse_page(bad, "p/")
        count += 1
    entry = {"index": 0, "user": "u", "public_key": "ssh-ed25519 AAAA", "added_at": "t"}
    for _, bad in variants(entry):
        sshkey.key_rows([bad])
        count += 1
    assert count > 150
