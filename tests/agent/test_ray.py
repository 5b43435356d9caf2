"""Real Ray through the shared sandbox: a 2-role job forms a Ray cluster the service-proxied dashboard reports,
node loss shows, stop leaves no process; a worker that cannot reach its head fails the cluster check."""

import base64
import json
import os
import re
import signal

import pytest
import ray
from kubernetes.client.exceptions import ApiException

from .helpers import delete_and_wait, job, pod_processes, task, wait_for, wait_log

pytestmark = pytest.mark.ray


def dashboard(api, service, path, job="h3-ray"):
    """GET a Ray dashboard route through the data plane's service proxy (real kubernetes client), with the Job's
    Ray token from its Secret in the data plane, as a KubeRay client sends it through a proxy."""
    core = api.core("rlark-gpu-a")
    token = base64.b64decode(core.read_namespaced_secret(f"{job}-ray-token", "rlark-system").data["auth_token"])
    response = core.connect_get_namespaced_service_proxy_with_path_with_http_info(
        f"{service}:8265", "rlark-system", path, _preload_content=False,
        _headers={"X-Ray-Authorization": f"Bearer {token.decode()}"})
    return json.loads(response.data)


def alive_nodes(api, service):
    nodes = dashboard(api, service, "api/v0/nodes")["data"]["result"]["result"]
    return sum(1 for node in nodes if node["state"] == "ALIVE")


def raylet_of(uid):
    for pid in pod_processes([uid]):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as fh:
                argv0 = fh.read().split(b"\0")[0]
        except OSError:
            continue
        if argv0.endswith(b"/raylet"):
            return pid
    return None


@pytest.fixture
def restarts(sandbox):
    """The agent's settings, with the restart back-off restored after the test."""
    settings = sandbox.agent.settings
    saved = settings.backoff_base
    try:
        yield settings
    finally:
        settings.backoff_base = saved


def test_two_role_job_runs_real_ray_seen_through_the_service_proxy(api, restarts):
    api.create_job(job("h3-ray", [task("actor", "gpu-a3", head=True, run="echo run started; sleep 600"),
                                  task("rollout", "gpu-a2")]))
    try:
        head_log = wait_log(api, "rlark-gpu-a", "h3-ray-actor-0", "Executing run script...", timeout=300)
    except AssertionError as exc:
        worker = "\n".join(api.log("rlark-gpu-a", "h3-ray-rollout-0").splitlines()[-30:])
        raise AssertionError(f"{exc}\nworker log:\n{worker}") from None
    lines = head_log.splitlines()
    assert lines[0] == "RLINF_NODE_RANK: 0"
    assert "Waiting for 2 nodes to join the Ray cluster..." in lines
    assert "Ray cluster check passed." in lines
    assert lines.index("Ray cluster check passed.") < lines.index("Ray cluster is ready. Printing cluster information:")
    assert "run started" in wait_for(lambda: api.log("rlark-gpu-a", "h3-ray-actor-0"), what="run script output")
    worker_log = api.log("rlark-gpu-a", "h3-ray-rollout-0").splitlines()
    assert worker_log[0] == "RLINF_NODE_RANK: 1"
    assert "Head is reachable at" in "\n".join(worker_log)

    service = "h3-ray-actor-ray-head"
    assert dashboard(api, service, "api/version")["ray_version"] == ray.__version__
    assert alive_nodes(api, service) == 2

    worker = api.pod("rlark-gpu-a", "h3-ray-rollout-0")
    head = api.pod("rlark-gpu-a", "h3-ray-actor-0")
    raylet = raylet_of(worker.metadata.uid)
    assert raylet is not None
    restarts.backoff_base = 120.0              # keep the crashed worker down while its node is declared dead
    os.kill(raylet, signal.SIGKILL)
    wait_for(lambda: alive_nodes(api, service) == 1, timeout=90, interval=0.5, what="ALIVE count drops to 1")

    uids = [worker.metadata.uid, head.metadata.uid]
    api.patch_job("h3-ray", {"spec": {"stopped": True}})
    wait_for(lambda: not api.pods("rlark-gpu-a", "h3-ray-actor") and not api.pods("rlark-gpu-a", "h3-ray-rollout"),
             timeout=30, what="pods deleted")
    assert pod_processes(uids) == []
    assert api.get_job("h3-ray")["status"]["phase"] == "Stopped"
    delete_and_wait(api, "h3-ray")
    with pytest.raises(ApiException) as gone:          # the Job's Ray token Secret goes with its last Task
        api.core("rlark-gpu-a").read_namespaced_secret("h3-ray-ray-token", "rlark-system")
    assert gone.value.status == 404


def test_unreachable_head_fails_the_cluster_check_which_the_head_ignores(api, sandbox, fast_agent):
    fast_agent.cluster_check_timeout = 8
    api.create_job(job("h3-cut", [
        task("actor", "gpu-a3", head=True, run="echo run started; sleep 600"),
        task("rollout", "gpu-a2", image="registry.rlark.local/rlinf:unreachable-head"),
    ]))
    head_log = wait_log(api, "rlark-gpu-a", "h3-cut-actor-0", "Executing run script...", timeout=300)
    lines = head_log.splitlines()
    failed = lines.index("Warning: Ray cluster check failed, proceeding anyway.")
    error, waited, said = lines[failed - 3:failed]
    assert (error, said) == ("Error: Cluster did not become ready within 8 seconds (required 2 nodes).",
                             "Ray cluster check failed.")
    assert re.fullmatch(r"Sandbox: waited for 2 ALIVE nodes in the head's State API \(http://[\d.]+:\d+/api/v0/nodes"
                        r"\?limit=10000\); last answer: 1 of 1 nodes alive", waited), waited
    assert "Ray cluster check passed." not in lines
    assert "Found 1 total nodes, 1 of which are alive." in lines
    assert lines.index("Ray cluster is ready. Printing cluster information:") > failed
    worker_log = wait_for(lambda: api.log("rlark-gpu-a", "h3-cut-rollout-0", previous=True), what="a worker restart")
    assert "Waiting for head to be reachable at h3-cut-actor-ray-head:" in worker_log
    *_, error, waited = worker_log.splitlines()
    assert error.endswith("is not reachable.")
    assert re.fullmatch(r"Sandbox: waited 3 attempts, 1 s apart, for h3-cut-actor-ray-head to resolve in the hosts "
                        r"file /dev/null, its GCS port to accept connections and its dashboard \(port \d+\) to list "
                        r"the head node ALIVE", waited), waited
    uids = [p.metadata.uid for p in api.pods("rlark-gpu-a", "h3-cut-actor") + api.pods("rlark-gpu-a", "h3-cut-rollout")]
    delete_and_wait(api, "h3-cut")
    wait_for(lambda: not pod_processes(uids), timeout=10, what="no process left")
