"""Helpers for the agent tests: Job manifests, the real kubernetes client on the shared sandbox, waiting,
and finding the local processes of sandbox pods."""

from __future__ import annotations

import os
import time

from kubernetes import client

from tests.sandbox.helpers import data_plane_api

GROUP, VERSION = "rlinf.io", "v1alpha1"
SYSTEM = "rlark-system"
IMAGE = "registry.rlark.local/rlinf/rlinf-sandbox@sha256:" + "ab" * 32


def task(name, hosts, *, head=False, replicas=1, gpu=0, image=IMAGE, prepare="", run=""):
    container = {"name": "main", "image": image, "env": [{"name": "RLARK_TASK_ROLE", "value": name}]}
    if gpu:
        container["resources"] = {"requests": {"nvidia.com/gpu": str(gpu)}, "limits": {"nvidia.com/gpu": str(gpu)}}
    entry = {"name": name, "role": "Actor" if head else "Rollout", "agentType": "Kubernetes",
             "nodeSelector": {"kubernetes.io/hostname": hosts},
             "kubernetes": {"workload": {"kind": "StatefulSet", "replicas": replicas,
                                         "template": {"spec": {"containers": [container]}}}}}
    if head:
        entry["head"] = True
        if run:
            entry["runScript"] = run
    if prepare:
        entry["prepareScript"] = prepare
    return entry


def job(name, tasks, **spec):
    return {"apiVersion": f"{GROUP}/{VERSION}", "kind": "Job", "metadata": {"name": name},
            "spec": {"tasks": tasks, **spec}}


class Api:
    """The real kubernetes client against the sandbox: control plane and one data plane per cluster."""

    def __init__(self, sandbox):
        self.sandbox = sandbox
        self.crd = client.CustomObjectsApi(sandbox.api_client())
        self._core = {}

    def core(self, cluster: str) -> client.CoreV1Api:
        if cluster not in self._core:
            self._core[cluster] = client.CoreV1Api(data_plane_api(self.sandbox, cluster))
        return self._core[cluster]

    def create_job(self, manifest):
        return self.crd.create_cluster_custom_object(GROUP, VERSION, "jobs", manifest)

    def get_job(self, name):
        return self.crd.get_cluster_custom_object(GROUP, VERSION, "jobs", name)

    def patch_job(self, name, body):
        return self.crd.patch_cluster_custom_object(GROUP, VERSION, "jobs", name, body)

    def delete_job(self, name):
        return self.crd.delete_cluster_custom_object(GROUP, VERSION, "jobs", name)

    def tasks(self, job_name):
        return self.crd.list_cluster_custom_object(GROUP, VERSION, "tasks",
                                                   label_selector=f"rlinf.io/job={job_name}")["items"]

    def pod_crs(self, task_names):
        selector = f"rlark.io/task-name in ({','.join(task_names)})"
        return self.crd.list_cluster_custom_object(GROUP, VERSION, "pods", label_selector=selector)["items"]

    def node(self, cluster, name):
        return self.crd.get_namespaced_custom_object(GROUP, VERSION, cluster, "nodes", name)

    def pods(self, cluster, task_name):
        return self.core(cluster).list_namespaced_pod(SYSTEM, label_selector=f"app={task_name}").items

    def pod(self, cluster, name):
        return self.core(cluster).read_namespaced_pod(name, SYSTEM)

    def log(self, cluster, pod, **kwargs):
        return self.core(cluster).read_namespaced_pod_log(pod, SYSTEM, container="main", **kwargs)

    def events(self, cluster, pod):
        items = self.core(cluster).list_namespaced_event(SYSTEM).items
        return [e for e in items if e.involved_object.name == pod]


def wait_for(predicate, timeout=60.0, interval=0.25, what="condition"):
    """Poll `predicate` until it returns a truthy value (returned); fail with `what` after `timeout`."""
    deadline = time.monotonic() + timeout
    last_error = None
    while time.monotonic() < deadline:
        try:
            value = predicate()
        except Exception as exc:  # an API answer that is not there yet
            last_error = exc
            value = None
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"timed out waiting for {what}" + (f" (last error: {last_error})" if last_error else ""))


def wait_log(api, cluster, pod, marker, timeout=60.0):
    """The pod's `main` log once it contains `marker`; on timeout the failure shows the log's last lines."""
    seen = [""]

    def probe():
        seen[0] = api.log(cluster, pod)
        return marker in seen[0] and seen[0]
    try:
        return wait_for(probe, timeout, interval=1.0, what=f"{marker!r} in the log of {pod}")
    except AssertionError as exc:
        tail = "\n".join(seen[0].splitlines()[-40:])
        raise AssertionError(f"{exc}; log so far:\n{tail}") from None


def pod_processes(uids) -> list[int]:
    """Live processes that belong to sandbox pods with these uids (found by the agent's env marker)."""
    markers = {f"RLARK_SANDBOX_POD_UID={uid}".encode() for uid in uids}
    found = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", "rb") as fh:
                stat = fh.read().decode(errors="replace")
            if stat[stat.rfind(")") + 2:].split()[0] == "Z":
                continue
            with open(f"/proc/{entry.name}/environ", "rb") as fh:
                env = set(fh.read().split(b"\0"))
        except OSError:
            continue
        if env & markers:
            found.append(int(entry.name))
    return found


def delete_and_wait(api, name, timeout=30.0):
    """Delete a Job and wait until its Tasks are gone."""
    api.delete_job(name)
    wait_for(lambda: not api.tasks(name), timeout, what=f"tasks of {name} deleted")
