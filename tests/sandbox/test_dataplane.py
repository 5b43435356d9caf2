"""Data planes over HTTPS with the kubernetes client: pods, container logs (tail, timestamps, previous, since,
follow), events, services and the service proxy to a registered local backend."""

from __future__ import annotations

import http.server
import json
import threading
from datetime import UTC, datetime, timedelta

import pytest
from kubernetes import client, watch
from kubernetes.client.rest import ApiException

from tests.sandbox.helpers import data_plane_api, plane_raw, raw
from tests.streams import follow_opens, sent_all

CLUSTER = "rlark-gpu-a"
NS = "rlark-system"


@pytest.fixture(scope="module")
def sandbox(bare_sandbox):
    return bare_sandbox


@pytest.fixture(scope="module")
def core(sandbox):
    return client.CoreV1Api(data_plane_api(sandbox, CLUSTER))


def data_pod(name: str, restarts: int = 0, phase: str = "Running") -> dict:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": NS, "labels": {"app": name.rsplit("-", 1)[0]}},
            "spec": {"nodeName": "gpu-a1", "containers": [{"name": "main", "image": "img@sha256:1"}]},
            "status": {"phase": phase, "containerStatuses": [{
                "name": "main", "ready": phase == "Running", "restartCount": restarts, "image": "img@sha256:1",
                "imageID": "", "state": {"running": {"startedAt": "2026-01-01T00:00:00Z"}}}]}}


@pytest.fixture(scope="module")
def logged_pod(sandbox):
    """A data-plane pod with two container instances: instance 0 (previous) and 1 (current)."""
    sandbox.store.create("pods", data_pod("dp-logs-0", restarts=1), plane=CLUSTER)
    logs = sandbox.logs
    old = datetime.now(UTC) - timedelta(hours=1)
    logs.start_instance(CLUSTER, NS, "dp-logs-0", "main")
    logs.append(CLUSTER, NS, "dp-logs-0", "main", "first run line 1\nfirst run line 2", when=old)
    logs.end_instance(CLUSTER, NS, "dp-logs-0", "main", 1)
    logs.start_instance(CLUSTER, NS, "dp-logs-0", "main")
    logs.append(CLUSTER, NS, "dp-logs-0", "main", "old line", when=old)
    logs.append(CLUSTER, NS, "dp-logs-0", "main", "RLINF_NODE_RANK: 0\nExecuting prepare script...\nnew line 3")
    return "dp-logs-0"


def test_pods_list_with_container_statuses(core, logged_pod):
    pods = core.list_namespaced_pod(NS).items
    pod = next(p for p in pods if p.metadata.name == logged_pod)
    assert pod.status.container_statuses[0].restart_count == 1
    assert pod.status.phase == "Running"
    assert core.read_namespaced_pod(logged_pod, NS).spec.node_name == "gpu-a1"
    everywhere = core.list_pod_for_all_namespaces(field_selector=f"metadata.name={logged_pod}").items
    assert [p.metadata.name for p in everywhere] == [logged_pod]


def test_logs_tail_timestamps_previous_since(core, logged_pod):
    full = core.read_namespaced_pod_log(logged_pod, NS, container="main")
    assert full == "old line\nRLINF_NODE_RANK: 0\nExecuting prepare script...\nnew line 3\n"
    assert core.read_namespaced_pod_log(logged_pod, NS, tail_lines=2) == "Executing prepare script...\nnew line 3\n"
    stamped = core.read_namespaced_pod_log(logged_pod, NS, container="main", timestamps=True).splitlines()
    stamp, _, text = stamped[-1].partition(" ")
    assert text == "new line 3" and stamp.endswith("Z") and len(stamp) == len("2026-01-01T00:00:00.000000000Z")
    previous = core.read_namespaced_pod_log(logged_pod, NS, container="main", previous=True)
    assert previous == "first run line 1\nfirst run line 2\n"
    recent = core.read_namespaced_pod_log(logged_pod, NS, container="main", since_seconds=60)
    assert recent.splitlines() == ["RLINF_NODE_RANK: 0", "Executing prepare script...", "new line 3"]


def test_log_errors(core, sandbox, logged_pod):
    with pytest.raises(ApiException) as err:
        core.read_namespaced_pod_log(logged_pod, NS, container="sidecar")
    assert err.value.status == 400 and "not valid for pod" in json.loads(err.value.body)["message"]
    sandbox.store.create("pods", data_pod("dp-fresh-0", phase="Pending"), plane=CLUSTER)
    with pytest.raises(ApiException) as err:
        core.read_namespaced_pod_log("dp-fresh-0", NS, container="main", previous=True)
    assert json.loads(err.value.body)["message"] == \
        'previous terminated container "main" in pod "dp-fresh-0" not found'
    with pytest.raises(ApiException) as err:
        core.read_namespaced_pod_log("dp-fresh-0", NS, container="main")
    assert json.loads(err.value.body)["message"] == \
        'container "main" in pod "dp-fresh-0" is waiting to start: ContainerCreating'
    with pytest.raises(ApiException) as err:
        core.read_namespaced_pod_log("dp-fresh-0", NS, container="main", follow=True)
    assert err.value.status == 400 and "is waiting to start" in json.loads(err.value.body)["message"]
    with pytest.raises(ApiException) as err:
        core.read_namespaced_pod_log("dp-missing-0", NS)
    assert err.value.status == 404


def test_log_follow_streams_until_the_container_ends(core, sandbox):
    sandbox.store.create("pods", data_pod("dp-follow-0"), plane=CLUSTER)
    sandbox.logs.start_instance(CLUSTER, NS, "dp-follow-0", "main")
    sandbox.logs.append(CLUSTER, NS, "dp-follow-0", "main", "before")
    with follow_opens(sandbox, "dp-follow-0"):
        response = core.read_namespaced_pod_log("dp-follow-0", NS, container="main", follow=True,
                                                _preload_content=False)
    got: list[str] = []

    def read():
        for chunk in response.stream(64):
            got.append(chunk.decode())

    reader = threading.Thread(target=read)
    reader.start()
    sandbox.logs.append(CLUSTER, NS, "dp-follow-0", "main", "during 1\nduring 2")
    sent_all(sandbox, "dp-follow-0")
    sandbox.logs.end_instance(CLUSTER, NS, "dp-follow-0", "main", 0)
    reader.join(5)
    assert not reader.is_alive()
    assert "".join(got) == "before\nduring 1\nduring 2\n"


def test_watch_data_plane_pods(core, sandbox):
    rv = core.list_namespaced_pod(NS).metadata.resource_version
    sandbox.store.create("pods", data_pod("dp-watch-0"), plane=CLUSTER)
    sandbox.store.create("pods", data_pod("dp-other-cluster-0"), plane="rlark-edge-b")
    seen = [(e["type"], e["object"].metadata.name)
            for e in watch.Watch().stream(core.list_namespaced_pod, NS, resource_version=rv, timeout_seconds=1)]
    assert seen == [("ADDED", "dp-watch-0")]


def test_events_and_services(core, sandbox):
    sandbox.store.create("events", {
        "apiVersion": "v1", "kind": "Event", "metadata": {"name": "dp-ev.1", "namespace": NS},
        "involvedObject": {"kind": "Pod", "name": "dp-logs-0", "namespace": NS},
        "reason": "FailedScheduling", "message": "0/3 nodes are available", "type": "Warning", "count": 1},
        plane=CLUSTER)
    events = core.list_namespaced_event(NS, field_selector="involvedObject.name=dp-logs-0").items
    assert [(e.reason, e.type) for e in events] == [("FailedScheduling", "Warning")]
    with pytest.raises(ApiException) as err:
        core.create_namespaced_event(NS, {"metadata": {"name": "x"}, "involvedObject": {}})
    assert err.value.status == 405


class _Dashboard(http.server.BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802 (http.server API)
        body = json.dumps({"ray_version": "2.60.0", "path": self.path}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def test_service_proxy_forwards_to_registered_backend(core, sandbox):
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Dashboard)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        sandbox.store.create("services", {
            "apiVersion": "v1", "kind": "Service", "metadata": {"name": "dp-job-actor-ray-head", "namespace": NS},
            "spec": {"clusterIP": "None", "ports": [{"name": "dashboard", "port": 8265}]}}, plane=CLUSTER)
        path = f"/api/v1/namespaces/{NS}/services/dp-job-actor-ray-head:8265/proxy/api/version?x=1"
        assert plane_raw(sandbox, CLUSTER, "GET", path).status == 503
        sandbox.proxies.register(CLUSTER, "dp-job-actor-ray-head", 8265, f"http://127.0.0.1:{server.server_port}")
        reply = plane_raw(sandbox, CLUSTER, "GET", path)
        assert reply.status == 200 and reply.json() == {"ray_version": "2.60.0", "path": "/api/version?x=1"}
        jobs_path = path.replace("api/version?x=1", "api/jobs/")
        assert plane_raw(sandbox, CLUSTER, "GET", jobs_path).json()["path"] == "/api/jobs/"
        via_client = core.connect_get_namespaced_service_proxy_with_path(
            "dp-job-actor-ray-head:8265", NS, "api/version")
        assert "2.60.0" in str(via_client)
        assert core.read_namespaced_service("dp-job-actor-ray-head", NS).spec.ports[0].port == 8265
        sandbox.proxies.unregister(CLUSTER, "dp-job-actor-ray-head")
        assert plane_raw(sandbox, CLUSTER, "GET", path).status == 503
    finally:
        server.shutdown()


def test_data_plane_discovery(sandbox):
    assert plane_raw(sandbox, CLUSTER, "GET", "/api").json()["versions"] == ["v1"]
    names = [r["name"] for r in plane_raw(sandbox, CLUSTER, "GET", "/api/v1").json()["resources"]]
    assert {"pods", "pods/log", "events", "services", "services/proxy"} <= set(names)
    assert raw(sandbox, "GET", "/clusters/root/api").json()["versions"] == ["v1"]
    control = [r["name"] for r in raw(sandbox, "GET", "/clusters/root/api/v1").json()["resources"]]
    assert control == ["secrets"]
    assert plane_raw(sandbox, CLUSTER, "GET", "/version").json()["minor"] == "32"
