"""Real kubectl v1.32 against the sandbox: get, apply (create, change, unchanged), patch, delete, get -w, errors.
Each runner has its own discovery cache and HOME; only KUBECONFIG points it at the sandbox.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import threading

import pytest
import yaml

from tests.sandbox.helpers import data_plane_kubeconfig, job
from tests.streams import watch_opens

pytestmark = [pytest.mark.kubectl,
              pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed")]


def kubectl_for(sandbox, tmp_path_factory):
    """A kubectl runner with its own cache dir and HOME, pointed at `sandbox` by KUBECONFIG only."""
    cache = tmp_path_factory.mktemp("kube-cache")
    home = tmp_path_factory.mktemp("kube-home")
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(home), "KUBECONFIG": str(sandbox.kubeconfig)}

    def run(*args: str, stdin: str | None = None, timeout: float = 30) -> subprocess.CompletedProcess:
        return subprocess.run(["kubectl", "--cache-dir", str(cache), *args], input=stdin, env=env,
                              capture_output=True, text=True, timeout=timeout)
    run.env = env
    run.cache = cache
    return run


@pytest.fixture(scope="module")
def sandbox(bare_sandbox):
    """The agent-less sandbox: these tests watch exact rows, which the agent's status updates would add to."""
    return bare_sandbox


@pytest.fixture(scope="module")
def kubectl(sandbox, tmp_path_factory):
    return kubectl_for(sandbox, tmp_path_factory)


def test_get_jobs_table(kubectl):
    out = kubectl("get", "rljob")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0].split() == ["NAME", "PHASE", "AGE"]
    assert any(line.split()[0] == "demo-ppo" for line in lines[1:])


def test_get_nodes_all_namespaces(kubectl):
    out = kubectl("get", "nodes.rlinf.io", "-A", "-l", "rlark.io/node-category=cloud")
    assert out.returncode == 0, out.stderr
    rows = [line.split() for line in out.stdout.splitlines()]
    assert rows[0][:2] == ["NAMESPACE", "NAME"]
    assert sorted((r[0], r[1]) for r in rows[1:]) == [("rlark-gpu-a", f"gpu-a{i}") for i in (1, 2, 3)]


def test_get_yaml_and_jsonpath(kubectl):
    out = kubectl("get", "rljob", "demo-ppo", "-o", "yaml")
    assert out.returncode == 0, out.stderr
    obj = yaml.safe_load(out.stdout)
    assert [t["name"] for t in obj["spec"]["tasks"]] == ["actor", "rollout", "env"]
    names = kubectl("get", "rlnode", "-A", "-o", "jsonpath={.items[*].metadata.name}")
    assert sorted(names.stdout.split()) == ["edge-b1", "edge-b2", "gpu-a1", "gpu-a2", "gpu-a3"]


def test_apply_create_change_unchanged_patch_delete(kubectl, tmp_path):
    manifest = job("kc-apply")
    path = tmp_path / "job.yaml"
    path.write_text(yaml.safe_dump(manifest))
    created = kubectl("apply", "-f", str(path))
    assert created.returncode == 0, created.stderr
    assert created.stdout.strip() == "job.rlinf.io/kc-apply created"

    manifest["spec"]["domain"] = "demo-net"
    path.write_text(yaml.safe_dump(manifest))
    changed = kubectl("apply", "-f", str(path))
    assert changed.returncode == 0, changed.stderr
    assert changed.stdout.strip() == "job.rlinf.io/kc-apply configured"
    assert kubectl("get", "rljob", "kc-apply", "-o", "jsonpath={.spec.domain}").stdout == "demo-net"

    same = kubectl("apply", "-f", str(path))
    assert same.stdout.strip() == "job.rlinf.io/kc-apply unchanged"

    patched = kubectl("patch", "rljob", "kc-apply", "--type", "merge", "-p", '{"spec":{"stopped":false}}')
    assert patched.returncode == 0, patched.stderr
    assert patched.stdout.strip() == "job.rlinf.io/kc-apply patched"
    again = kubectl("patch", "rljob", "kc-apply", "--type", "merge", "-p", '{"spec":{"stopped":false}}')
    assert again.stdout.strip() == "job.rlinf.io/kc-apply patched (no change)"
    json_patched = kubectl("patch", "rljob", "kc-apply", "--type", "json",
                           "-p", '[{"op":"replace","path":"/spec/domain","value":"other"}]')
    assert json_patched.returncode == 0, json_patched.stderr
    smp = kubectl("patch", "rljob", "kc-apply", "-p", '{"spec":{"stopped":true}}')
    assert smp.returncode == 1 and "application/strategic-merge-patch+json is not supported" in smp.stderr

    deleted = kubectl("delete", "rljob", "kc-apply")
    assert deleted.returncode == 0, deleted.stderr
    assert deleted.stdout.strip() == 'job.rlinf.io "kc-apply" deleted'
    gone = kubectl("get", "rljob", "kc-apply")
    assert gone.returncode == 1
    assert 'Error from server (NotFound): jobs.rlinf.io "kc-apply" not found' in gone.stderr


def test_apply_namespaced_task(kubectl, tmp_path):
    path = tmp_path / "task.yaml"
    path.write_text(yaml.safe_dump({"apiVersion": "rlinf.io/v1alpha1", "kind": "Task",
                                    "metadata": {"name": "kc-task", "namespace": "rlark-edge-b"},
                                    "spec": {"role": "Env", "agentType": "Docker"}}))
    out = kubectl("apply", "-f", str(path))
    assert out.returncode == 0, out.stderr
    listed = kubectl("get", "tasks.rlinf.io", "-n", "rlark-edge-b", "-o", "name")
    assert "task.rlinf.io/kc-task" in listed.stdout.split()


def test_duplicate_and_invalid_errors(kubectl, tmp_path):
    path = tmp_path / "job.yaml"
    path.write_text(yaml.safe_dump(job("kc-dup")))
    assert kubectl("create", "-f", str(path)).returncode == 0
    dup = kubectl("create", "-f", str(path))
    assert dup.returncode == 1
    assert dup.stderr.strip() == (f'Error from server (AlreadyExists): error when creating "{path}": '
                                  'jobs.rlinf.io "kc-dup" already exists')

    bad = job("Bad_Name")
    bad["spec"]["stopped"] = "yes"
    path.write_text(yaml.safe_dump(bad))
    invalid = kubectl("create", "-f", str(path))
    assert invalid.returncode == 1
    assert invalid.stderr.startswith('The Job "Bad_Name" is invalid: ')
    assert '* metadata.name: Invalid value: "Bad_Name"' in invalid.stderr
    assert '* spec.stopped: Invalid value: "string": spec.stopped in body must be of type boolean' in invalid.stderr

    unknown = job("kc-unknown")
    unknown["spec"]["colour"] = "blue"
    path.write_text(yaml.safe_dump(unknown))
    strict = kubectl("apply", "-f", str(path))
    assert strict.returncode == 1 and 'unknown field "spec.colour"' in strict.stderr


def test_get_watch_prints_changes(kubectl, sandbox):
    with watch_opens(sandbox, "jobs"):
        proc = subprocess.Popen(["kubectl", "--cache-dir", str(kubectl.cache), "get", "rljob", "-w",
                                 "--request-timeout", "0"], env=kubectl.env, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
    hung = threading.Timer(30, proc.kill)
    hung.start()
    seen = []
    try:
        sandbox.store.create("jobs", job("kc-watch"))
        sandbox.store.mutate("jobs", "kc-watch", lambda o: {**o, "status": {"phase": "Running"}})
        for line in proc.stdout:
            seen.append(line)
            if line.split()[:2] == ["kc-watch", "Running"]:
                break
    finally:
        proc.terminate()
        hung.cancel()
    out, err = proc.communicate(timeout=10)
    out = "".join(seen) + out
    rows = [line.split() for line in out.splitlines()]
    assert rows[0] == ["NAME", "PHASE", "AGE"]
    watched = [r for r in rows[1:] if r[0] == "kc-watch"]
    assert watched == [["kc-watch", "0s"], ["kc-watch", "Running", "0s"]], out + err
    assert sum(1 for r in rows[1:] if r[0] == "demo-ppo") == 1


def test_one_context_and_a_data_plane_through_rlark_server(kubectl, sandbox, tmp_path):
    assert kubectl("config", "get-contexts", "-o", "name").stdout.split() == ["rlark-sandbox"]
    path = data_plane_kubeconfig(sandbox, "rlark-gpu-a", tmp_path)
    out = kubectl("--kubeconfig", path, "get", "pods", "-n", "rlark-system", "-o", "json")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["kind"] in ("List", "PodList")


def test_logs_and_pods_on_a_data_plane(kubectl, sandbox, tmp_path):
    cluster, ns = "rlark-gpu-a", "rlark-system"
    sandbox.store.create("pods", {
        "metadata": {"name": "kc-logs-0", "namespace": ns},
        "spec": {"containers": [{"name": "main", "image": "img"}, {"name": "tensorboard", "image": "tb"}]},
        "status": {"phase": "Running", "containerStatuses": [
            {"name": "main", "ready": True, "restartCount": 2, "state": {"running": {}}},
            {"name": "tensorboard", "ready": True, "restartCount": 0, "state": {"running": {}}}]}},
        plane=cluster)
    sandbox.logs.append(cluster, ns, "kc-logs-0", "main", "RLINF_NODE_RANK: 0\nRay cluster check passed.")
    context = data_plane_kubeconfig(sandbox, cluster, tmp_path)
    logs = kubectl("logs", "-n", ns, "kc-logs-0", "-c", "main", "--kubeconfig", context)
    assert logs.returncode == 0, logs.stderr
    assert logs.stdout == "RLINF_NODE_RANK: 0\nRay cluster check passed.\n"
    tail = kubectl("logs", "kc-logs-0", "-c", "main", "--tail", "1", "--kubeconfig", context)
    assert tail.stdout == "Ray cluster check passed.\n"
    ambiguous = kubectl("logs", "kc-logs-0", "--kubeconfig", context, "--default-container=false")
    assert ambiguous.returncode == 1
    sandbox.store.create("events", {
        "metadata": {"name": "kc-logs-0.1", "namespace": ns}, "type": "Warning", "reason": "BackOff",
        "message": "Back-off restarting failed container main",
        "involvedObject": {"kind": "Pod", "name": "kc-logs-0", "namespace": ns}}, plane=cluster)
    events = kubectl("get", "events", "--kubeconfig", context)
    assert events.returncode == 0, events.stderr
    assert events.stdout.splitlines()[0].split() == ["LAST", "SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"]
    assert "pod/kc-logs-0" in events.stdout and "Back-off restarting failed container main" in events.stdout
    pods = kubectl("get", "pods", "kc-logs-0", "--kubeconfig", context)
    assert pods.returncode == 0, pods.stderr
    assert pods.stdout.splitlines()[1].split()[:4] == ["kc-logs-0", "2/2", "Running", "2"]
