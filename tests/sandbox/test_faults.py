"""Fault switches: forced status codes, delays, closed and expired watches, outages, cut log streams.
Each test clears the switches it set; the store, logs and HTTPS path are the real ones.
"""

from __future__ import annotations

import http.client
import json
import threading
import time
import urllib.error

import pytest
from kubernetes import watch
from kubernetes.client.rest import ApiException

from tests.sandbox.helpers import GROUP, VERSION, admin_cert_files, custom, job, raw, server_raw
from tests.streams import follow_opens


@pytest.fixture(scope="module")
def sandbox(bare_sandbox):
    return bare_sandbox


@pytest.fixture
def faults(sandbox):
    sandbox.faults.clear()
    yield sandbox.faults
    sandbox.faults.clear()


@pytest.fixture(scope="module")
def api(sandbox):
    return custom(sandbox)


@pytest.mark.parametrize("code,reason", [(403, "Forbidden"), (409, "Conflict"), (422, "Invalid"),
                                         (500, "InternalError")])
def test_forced_status(faults, api, code, reason):
    faults.fail(code, verb="create", resource="jobs", times=1)
    with pytest.raises(ApiException) as err:
        api.create_cluster_custom_object(GROUP, VERSION, "jobs", job(f"fault-{code}"))
    body = json.loads(err.value.body)
    assert err.value.status == code and body["reason"] == reason and body["kind"] == "Status"
    assert api.create_cluster_custom_object(GROUP, VERSION, "jobs", job(f"fault-{code}"))["metadata"]["name"]


def test_admin_route(sandbox, faults, api):
    request = {"op": "fail", "args": {"code": 500, "verb": "list", "resource": "nodes"}}
    assert raw(sandbox, "POST", "/_sandbox/faults", request, token=None).status == 401
    set_reply = raw(sandbox, "POST", "/_sandbox/faults", request)
    assert set_reply.status == 200 and set_reply.json()["fail"][0]["code"] == 500
    with pytest.raises(ApiException) as err:
        api.list_cluster_custom_object(GROUP, VERSION, "nodes")
    assert err.value.status == 500
    assert api.list_cluster_custom_object(GROUP, VERSION, "jobs")["items"]
    assert raw(sandbox, "POST", "/_sandbox/faults", {"op": "explode"}).status == 400
    assert raw(sandbox, "DELETE", "/_sandbox/faults").json()["fail"] == []
    assert api.list_cluster_custom_object(GROUP, VERSION, "nodes")["items"]


def test_gateway_fault(sandbox, faults):
    faults.fail(503, plane="gateway", resource="clusters")
    assert raw(sandbox, "GET", "/api/v1/clusters").status == 503
    assert raw(sandbox, "GET", "/api/v1/storage/storageclass").status == 200


def test_delay(faults, api):
    faults.delay(0.6, verb="get", resource="jobs")
    started = time.monotonic()
    api.get_cluster_custom_object(GROUP, VERSION, "jobs", "demo-ppo")
    assert time.monotonic() - started >= 0.6
    started = time.monotonic()
    api.list_cluster_custom_object(GROUP, VERSION, "jobs")
    assert time.monotonic() - started < 0.6


def test_close_watches_every(faults, api):
    faults.close_watches_every(0.5)
    rv = api.list_cluster_custom_object(GROUP, VERSION, "jobs")["metadata"]["resourceVersion"]
    started = time.monotonic()
    resp = api.list_cluster_custom_object(GROUP, VERSION, "jobs", watch=True, resource_version=rv,
                                          _preload_content=False)
    assert resp.read() == b""
    assert 0.4 < time.monotonic() - started < 3


def test_expire_watches(faults, api):
    faults.expire_watches("jobs")
    rv = api.list_cluster_custom_object(GROUP, VERSION, "jobs")["metadata"]["resourceVersion"]
    with pytest.raises(ApiException) as err:
        list(watch.Watch().stream(api.list_cluster_custom_object, GROUP, VERSION, "jobs", resource_version=rv,
                                  timeout_seconds=1))
    assert err.value.status == 410


def test_outage(sandbox, faults, monkeypatch):
    now = [1000.0]
    monkeypatch.setattr(faults, "clock", lambda: now[0])
    faults.outage(0.6, mode="503")
    assert raw(sandbox, "GET", "/clusters/root/apis/rlinf.io/v1alpha1/jobs").status == 503
    faults.outage(0.6, mode="drop")
    with pytest.raises((urllib.error.URLError, http.client.RemoteDisconnected, ConnectionError)):
        raw(sandbox, "GET", "/clusters/root/apis/rlinf.io/v1alpha1/jobs")
    assert raw(sandbox, "GET", "/_sandbox/faults").json()["outage"]["mode"] == "drop"
    now[0] += 0.5
    assert raw(sandbox, "GET", "/_sandbox/faults").json()["outage"]["mode"] == "drop"
    now[0] += 0.2
    assert raw(sandbox, "GET", "/clusters/root/apis/rlinf.io/v1alpha1/jobs").status == 200


def data_plane(cluster: str) -> str:
    """The member cluster's core/v1 API through rlark-server."""
    return f"/api/proxy/{cluster.removeprefix('rlark-')}/api/kubernetes/api/v1"


def test_cut_logs(sandbox, faults, tmp_path):
    cluster, ns = "rlark-gpu-a", "rlark-system"
    sandbox.store.create("pods", {"metadata": {"name": "cut-0", "namespace": ns},
                                  "spec": {"containers": [{"name": "main"}]}, "status": {"phase": "Running"}},
                         plane=cluster)
    sandbox.logs.append(cluster, ns, "cut-0", "main", "complete line\nthis line gets cut\nnever sent")
    faults.cut_logs(after_lines=1)
    files, path = admin_cert_files(sandbox, tmp_path), f"{data_plane(cluster)}/namespaces/{ns}/pods/cut-0/log"
    with pytest.raises(http.client.IncompleteRead) as err:
        server_raw(sandbox, path, files)
    assert err.value.partial.decode().startswith("complete line\nthis line")
    assert not err.value.partial.decode().endswith("\n")
    whole = server_raw(sandbox, path, files)
    assert whole.body.decode() == "complete line\nthis line gets cut\nnever sent\n"
    faults.cut_logs(after_lines=1, follow_only=True)  # one-off reads pass, the next follow stream is cut
    assert server_raw(sandbox, path, files).body == whole.body
    with pytest.raises(http.client.IncompleteRead) as err:
        server_raw(sandbox, path + "?follow=true", files)
    assert err.value.partial.decode().startswith("complete line\nthis line")


def test_outage_drops_an_idle_log_follow(sandbox, faults, tmp_path):
    cluster, ns = "rlark-gpu-a", "rlark-system"
    sandbox.store.create("pods", {"metadata": {"name": "idle-0", "namespace": ns},
                                  "spec": {"containers": [{"name": "main"}]}, "status": {"phase": "Running"}},
                         plane=cluster)
    sandbox.logs.append(cluster, ns, "idle-0", "main", "only line")
    files, outcome = admin_cert_files(sandbox, tmp_path), []

    def follow():
        try:
            outcome.append(server_raw(sandbox, f"{data_plane(cluster)}/namespaces/{ns}/pods/idle-0/log?follow=true",
                                      files).body)
        except (http.client.IncompleteRead, ConnectionError) as exc:
            outcome.append(exc)

    reader = threading.Thread(target=follow)
    with follow_opens(sandbox, "idle-0"):
        reader.start()
    assert outcome == []
    faults.outage(1.0, mode="drop")
    reader.join(3)
    assert not reader.is_alive() and isinstance(outcome[0], (http.client.IncompleteRead, ConnectionError))
