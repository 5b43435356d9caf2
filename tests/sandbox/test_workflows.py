"""Workflows end to end in the sandbox (its agent plays the platform's Workflow controller): a submitted Workflow
gets its first template's Job, labelled and owned, and the dependent template waits for Succeeded."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest
import yaml

from tests.agent.helpers import wait_for
from tests.clirun import cli_runner

SPEC = {"tasks": [{"name": "actor", "head": True, "role": "Actor", "agentType": "Kubernetes",
                   "nodeSelector": {"kubernetes.io/hostname": "gpu-a3"}, "runScript": "true",
                   "kubernetes": {"workload": {"kind": "StatefulSet", "replicas": 1, "template": {"spec": {
                       "containers": [{"name": "main", "image": "example.com/rlinf:no-ray"}]}}}}}]}


@pytest.fixture
def submitted(sandbox, env, capsys):
    rl = cli_runner(sandbox.kubeconfig, capsys)
    manifest = {"apiVersion": "rlinf.io/v1alpha1", "kind": "Workflow", "metadata": {"name": "wf-e2e"},
                "spec": {"jobTemplates": [{"name": "prep", "spec": SPEC},
                                          {"name": "train", "dependencies": ["prep"], "spec": SPEC}]}}
    path = env / "wf.yaml"
    path.write_text(yaml.safe_dump(manifest))
    result = rl("submit", "-f", str(path))
    assert result.code == 0, result.err
    yield rl
    sandbox.store.delete("workflows", "wf-e2e")
    wait_for(lambda: sandbox.store.get("jobs", "wf-e2e-prep") is None, what="the Workflow's Job to be collected")


def test_first_job_is_created_labelled_and_the_dependent_waits(sandbox, submitted):
    store = sandbox.store
    job = wait_for(lambda: store.get("jobs", "wf-e2e-prep"), what="Job wf-e2e-prep")
    assert job["metadata"]["labels"]["rlinf.io/workflow"] == "wf-e2e"
    assert job["metadata"]["ownerReferences"][0]["kind"] == "Workflow"
    wf = wait_for(lambda: (w := store.get("workflows", "wf-e2e")) and (w.get("status") or {}).get("phase") == "Running"
                  and w, what="the Workflow Running")
    assert [e["name"] for e in wf["status"]["jobs"]] == ["prep", "train"]
    wait_for(lambda: (store.get("jobs", "wf-e2e-prep").get("status") or {}).get("phase"), what="prep's phase")
    assert store.get("jobs", "wf-e2e-train") is None
    listed = submitted("get", "workflows", "wf-e2e")
    assert listed.code == 0 and listed.out.splitlines()[1].split()[:3] == ["wf-e2e", "Running", "1/2"]


@pytest.mark.kubectl
@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed")
def test_kubectl_lists_workflows_by_short_name(sandbox, submitted, tmp_path):
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path), "KUBECONFIG": str(sandbox.kubeconfig)}
    out = subprocess.run(["kubectl", "--cache-dir", str(tmp_path / "cache"), "get", "rlwf"], env=env,
                         capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines()[0].split() == ["NAME", "PHASE", "AGE"]
    assert any(line.split()[0] == "wf-e2e" for line in out.stdout.splitlines()[1:])
