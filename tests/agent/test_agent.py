"""The simulated agent through the shared sandbox, seen over HTTPS with the real kubernetes client and kubectl:
Tasks, pods, Pod CRs, scheduling, stop/start, delete cascade, restarts and the special images.

These jobs never start Ray (a long prepare script, an image without Ray, an image that cannot be pulled),
so they stay fast; real Ray runs in test_ray.py.
"""

import shutil
import subprocess
import time

import pytest

from tests.sandbox.helpers import data_plane_kubeconfig

from .helpers import Api, delete_and_wait, job, pod_processes, task, wait_for

HOLD = "echo prepared; sleep 600"   # keeps `main` running before Ray starts


def test_job_becomes_named_tasks_pods_and_pod_crs_then_delete_cascades(api, sandbox):
    api.create_job(job("h3-names", [
        task("env", "edge-b2", prepare=HOLD),
        task("actor", "gpu-a3", head=True, gpu=2, prepare=HOLD, run="sleep 600"),
        task("rollout", "gpu-a2,gpu-a3", replicas=2, gpu=1, prepare=HOLD),
    ]))
    tasks = wait_for(lambda: (t := api.tasks("h3-names")) and len(t) == 3 and t, what="3 tasks")
    by_name = {t["metadata"]["name"]: t for t in tasks}
    assert {n: t["metadata"]["namespace"] for n, t in by_name.items()} == {
        "h3-names-env": "rlark-edge-b", "h3-names-actor": "rlark-gpu-a", "h3-names-rollout": "rlark-gpu-a"}
    ranks = {n: t["metadata"]["annotations"]["rlark.io/ray-node-rank-start"] for n, t in by_name.items()}
    assert ranks == {"h3-names-env": "0", "h3-names-actor": "1", "h3-names-rollout": "2"}
    for t in tasks:
        annotations = t["metadata"]["annotations"]
        assert annotations["rlark.io/ray-total-nodes"] == "4"
        assert annotations["rlark.io/ray-head-task-name"] == "h3-names-actor"
        assert t["metadata"]["ownerReferences"][0]["name"] == "h3-names"
    assert by_name["h3-names-actor"]["metadata"]["annotations"]["rlark.io/ray-role"] == "head"

    wait_for(lambda: api.get_job("h3-names").get("status", {}).get("phase") == "Running", what="job Running")
    rollout = sorted(api.pods("rlark-gpu-a", "h3-names-rollout"), key=lambda p: p.metadata.name)
    assert [p.metadata.name for p in rollout] == ["h3-names-rollout-0", "h3-names-rollout-1"]
    assert {p.spec.node_name for p in rollout} == {"gpu-a2", "gpu-a3"}          # one pod per node
    assert all(p.spec.host_network for p in rollout)
    head = api.pod("rlark-gpu-a", "h3-names-actor-0")
    assert not head.spec.host_network and head.spec.node_name == "gpu-a3"

    log = wait_for(lambda: "Executing prepare script..." in (t := api.log("rlark-gpu-a", "h3-names-rollout-1"))
                   and t, what="rollout-1 log")
    assert log.splitlines()[0] == "RLINF_NODE_RANK: 3"
    assert api.log("rlark-edge-b", "h3-names-env-0").splitlines()[0] == "RLINF_NODE_RANK: 0"

    crs = wait_for(lambda: (c := api.pod_crs(list(by_name))) and len(c) == 4 and c, what="4 Pod CRs")
    pods = {p.metadata.uid: p for p in rollout + [head] + api.pods("rlark-edge-b", "h3-names-env")}
    for cr in crs:
        pod = pods[cr["metadata"]["name"]]                                      # Pod CR name = pod uid
        labels = cr["metadata"]["labels"]
        assert labels["rlark.io/local-pod-name"] == pod.metadata.name
        assert labels["rlark.io/local-pod-namespace"] == "rlark-system"
        assert labels["rlark.io/task-name"] == pod.metadata.labels["app"]
        assert cr["status"]["node"] == pod.spec.node_name
        assert cr["spec"]["podName"] == pod.metadata.name
    gpu_a3 = wait_for(lambda: (n := api.node("rlark-gpu-a", "gpu-a3"))["status"]["used"].get("nvidia.com/gpu") == "3"
                      and n, what="gpu-a3 used 3 GPUs")
    assert gpu_a3["status"]["phase"] == "Online"
    services = api.core("rlark-gpu-a").list_namespaced_service("rlark-system").items
    assert "h3-names-actor-ray-head" in {s.metadata.name for s in services}

    uids = list(pods)
    assert pod_processes(uids)
    delete_and_wait(api, "h3-names")
    wait_for(lambda: not api.pods("rlark-gpu-a", "h3-names-rollout") and not api.pods("rlark-edge-b", "h3-names-env")
             and not api.pods("rlark-gpu-a", "h3-names-actor"), what="pods deleted")
    assert not api.pod_crs(list(by_name))
    services = api.core("rlark-gpu-a").list_namespaced_service("rlark-system").items
    assert "h3-names-actor-ray-head" not in {s.metadata.name for s in services}
    assert not pod_processes(uids)
    assert api.node("rlark-gpu-a", "gpu-a3")["status"]["used"].get("nvidia.com/gpu", "0") == "0"


def test_stop_scales_to_zero_and_start_makes_new_pods(api):
    api.create_job(job("h3-stop", [task("actor", "gpu-a3", head=True, prepare=HOLD, run="sleep 600")]))
    wait_for(lambda: api.get_job("h3-stop").get("status", {}).get("phase") == "Running", what="job Running")
    first = wait_for(lambda: api.pods("rlark-gpu-a", "h3-stop-actor"), what="pod")[0]
    wait_for(lambda: pod_processes([first.metadata.uid]), what="pod process")

    api.patch_job("h3-stop", {"spec": {"stopped": True}})
    wait_for(lambda: api.get_job("h3-stop")["status"]["phase"] == "Stopped", what="job Stopped")
    stopped_task = wait_for(lambda: (t := api.tasks("h3-stop")[0])["status"]["phase"] == "Stopped" and t,
                            what="task Stopped")
    assert stopped_task["spec"]["kubernetes"]["workload"]["replicas"] == 0
    wait_for(lambda: not api.pods("rlark-gpu-a", "h3-stop-actor"), what="pod deleted")
    wait_for(lambda: not api.pod_crs(["h3-stop-actor"]), what="Pod CR deleted")
    assert not pod_processes([first.metadata.uid])
    assert "endTime" not in api.get_job("h3-stop")["status"]

    api.patch_job("h3-stop", {"spec": {"stopped": False}})
    wait_for(lambda: api.get_job("h3-stop")["status"]["phase"] == "Running", what="job Running again")
    second = wait_for(lambda: api.pods("rlark-gpu-a", "h3-stop-actor"), what="new pod")[0]
    assert second.metadata.name == "h3-stop-actor-0" and second.metadata.uid != first.metadata.uid
    assert api.tasks("h3-stop")[0]["spec"]["kubernetes"]["workload"]["replicas"] == 1
    delete_and_wait(api, "h3-stop")
    wait_for(lambda: not pod_processes([second.metadata.uid]), timeout=10, what="processes gone")


def test_gpu_shortage_leaves_the_pod_pending_with_failed_scheduling(api):
    api.create_job(job("h3-gpu", [task("actor", "gpu-a1", head=True, gpu=8, prepare=HOLD, run="true")]))
    pod = wait_for(lambda: api.pods("rlark-gpu-a", "h3-gpu-actor"), what="pod")[0]
    events = wait_for(lambda: [e for e in api.events("rlark-gpu-a", pod.metadata.name)
                               if e.reason == "FailedScheduling"], what="FailedScheduling")
    assert events[0].type == "Warning"
    assert "Insufficient nvidia.com/gpu" in events[0].message and events[0].message.startswith("0/3 nodes")
    pod = api.pod("rlark-gpu-a", "h3-gpu-actor-0")
    assert pod.status.phase == "Pending" and not pod.spec.node_name
    task_status = wait_for(lambda: (t := api.tasks("h3-gpu")[0]).get("status", {}).get("events") and t["status"],
                           what="task events")
    assert task_status["phase"] == "Pending"
    assert any(e["reason"] == "FailedScheduling" and e["objectName"] == "h3-gpu-actor-0"
               for e in task_status["events"])
    [cr] = api.pod_crs(["h3-gpu-actor"])
    assert cr["status"]["phase"] == "Pending" and cr["status"]["node"] == ""
    assert api.get_job("h3-gpu")["status"]["phase"] == "Pending"
    assert not pod_processes([pod.metadata.uid])
    delete_and_wait(api, "h3-gpu")


def test_image_without_ray_crash_loops_with_back_off_and_restart_counts(api, fast_agent):
    api.create_job(job("h3-noray", [task("actor", "gpu-a3", head=True, image="example.com/rlinf:no-ray",
                                         run="true")]))
    pod = wait_for(lambda: (p := api.pods("rlark-gpu-a", "h3-noray-actor")) and
                   (p[0].status.container_statuses or [None])[0] and
                   p[0].status.container_statuses[0].restart_count >= 2 and p[0], timeout=30,
                   what="two restarts")
    status = pod.status.container_statuses[0]
    assert status.last_state.terminated.exit_code == 1
    assert status.last_state.terminated.reason == "Error"
    assert pod.status.phase == "Running"                      # a crash-looping pod stays Running
    previous = api.log("rlark-gpu-a", "h3-noray-actor-0", previous=True)
    assert previous.splitlines() == ["RLINF_NODE_RANK: 0",
                                     "Error: Ray CLI is not found. Please ensure Ray is installed."]
    wait_for(lambda: any((s := api.pod("rlark-gpu-a", "h3-noray-actor-0").status.container_statuses[0]).state.waiting
                         and s.state.waiting.reason == "CrashLoopBackOff" for _ in [0]),
             timeout=20, interval=0.05, what="CrashLoopBackOff state")
    reasons = {e.reason for e in api.events("rlark-gpu-a", "h3-noray-actor-0")}
    assert {"Scheduled", "Pulled", "Created", "Started", "BackOff"} <= reasons
    [cr] = api.pod_crs(["h3-noray-actor"])
    assert cr["status"]["phase"] == "Running"
    delete_and_wait(api, "h3-noray")


def test_invalid_image_fails_like_an_image_pull(api):
    api.create_job(job("h3-pull", [task("actor", "gpu-a3", head=True, image="example.com/invalid:1", run="true")]))
    wait_for(lambda: {"Failed", "BackOff"} <= {e.reason for e in api.events("rlark-gpu-a", "h3-pull-actor-0")},
             what="pull events")
    messages = {e.message for e in api.events("rlark-gpu-a", "h3-pull-actor-0")}
    assert {"Error: ErrImagePull", "Error: ImagePullBackOff"} <= messages
    pod = api.pod("rlark-gpu-a", "h3-pull-actor-0")
    assert pod.status.phase == "Pending"
    assert pod.status.container_statuses[0].state.waiting.reason == "ImagePullBackOff"
    with pytest.raises(Exception, match="waiting to start: ImagePullBackOff"):
        api.log("rlark-gpu-a", "h3-pull-actor-0")
    assert not pod_processes([pod.metadata.uid])
    assert api.tasks("h3-pull")[0]["status"]["phase"] == "Pending"
    delete_and_wait(api, "h3-pull")


@pytest.mark.kubectl
@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed")
def test_kubectl_logs_shows_the_main_container(api, sandbox, tmp_path):
    api.create_job(job("h3-kubectl", [task("actor", "gpu-a3", head=True, prepare=HOLD, run="true")]))
    wait_for(lambda: "prepared" in api.log("rlark-gpu-a", "h3-kubectl-actor-0"), what="log line")
    result = subprocess.run(
        ["kubectl", "logs", "-n", "rlark-system", "h3-kubectl-actor-0", "-c", "main",
         "--kubeconfig", data_plane_kubeconfig(sandbox, "rlark-gpu-a", tmp_path)],
        capture_output=True, text=True, timeout=30)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[:3] == ["RLINF_NODE_RANK: 0", "Executing prepare script...", "prepared"]
    delete_and_wait(api, "h3-kubectl")


def test_sandbox_exit_ends_pod_processes_and_a_restart_runs_persisted_pods_again(tmp_path):
    from rlark_sandbox import Sandbox, seed
    state_dir = tmp_path / "sandbox"
    first = Sandbox(state_dir, seed="none").start()
    try:
        for node in seed.demo_nodes():
            first.store.create("nodes", node)
        api = Api(first)
        api.create_job(job("h3-restart", [task("actor", "gpu-a1", head=True, prepare=HOLD, run="true")]))
        wait_for(lambda: "prepared" in api.log("rlark-gpu-a", "h3-restart-actor-0"), what="pod running")
        uid = api.pod("rlark-gpu-a", "h3-restart-actor-0").metadata.uid
        assert pod_processes([uid])
    finally:
        began = time.monotonic()
        first.stop()
    assert time.monotonic() - began < 10
    assert not pod_processes([uid])

    second = Sandbox(state_dir, seed="none").start()
    try:
        api = Api(second)
        wait_for(lambda: pod_processes([uid]), what="persisted pod restarted")
        assert api.pod("rlark-gpu-a", "h3-restart-actor-0").metadata.uid == uid
        assert second.logs.instances("rlark-gpu-a", "rlark-system", "h3-restart-actor-0", "main") == [0, 1]
        wait_for(lambda: "prepared" in api.log("rlark-gpu-a", "h3-restart-actor-0"), what="new instance log")
        assert "prepared" in api.log("rlark-gpu-a", "h3-restart-actor-0", previous=True)
    finally:
        second.stop()
    assert not pod_processes([uid])


def test_domain_lists_a_virtual_ip_per_pod(api):
    api.create_job(job("h3-domain", [task("actor", "gpu-a3", head=True, prepare=HOLD, run="true")], domain="demo-net"))
    pod = wait_for(lambda: api.pods("rlark-gpu-a", "h3-domain-actor"), what="pod")[0]
    assert pod.metadata.annotations["rlark.io/management-task-domain"] == "demo-net"

    def allocation():
        domain = api.crd.get_cluster_custom_object("rlinf.io", "v1alpha1", "domains", "demo-net")
        return next((a for a in domain.get("status", {}).get("ipAllocations", [])
                     if a["pod"] == "rlark-gpu-a/rlark-system/h3-domain-actor-0"), None)
    found = wait_for(allocation, what="ip allocation")
    assert found["ip"].startswith("10.88.")
    log = wait_for(lambda: "prepared" in (t := api.log("rlark-gpu-a", "h3-domain-actor-0")) and t, what="log")
    assert log.splitlines()[:2] == ["RLINF_NODE_RANK: 0", "Executing prepare script..."]
    delete_and_wait(api, "h3-domain")
    wait_for(lambda: allocation() is None, what="allocation released")


def test_pods_wait_without_processes_while_running_pods_is_off(api, sandbox):
    sandbox.call(sandbox.agent.set_run_pods, False)
    try:
        api.create_job(job("h3-hold", [task("actor", "gpu-a3", head=True, prepare=HOLD, run="true")]))
        pod = wait_for(lambda: (p := api.pods("rlark-gpu-a", "h3-hold-actor")) and p[0].spec.node_name and p[0],
                       what="scheduled pod")
        time.sleep(1)
        assert api.pod("rlark-gpu-a", "h3-hold-actor-0").status.phase == "Pending"
        assert not pod_processes([pod.metadata.uid])
    finally:
        sandbox.call(sandbox.agent.set_run_pods, True)
    wait_for(lambda: "prepared" in api.log("rlark-gpu-a", "h3-hold-actor-0"), what="pod started once allowed")
    delete_and_wait(api, "h3-hold")
