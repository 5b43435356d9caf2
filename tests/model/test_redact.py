"""Secrets never reach the screen, a saved file or a record: names, values, scripts and nested JSON."""

import json

import pytest

from rlark_tui.model.redact import is_secret_name, redact_env, redact_object, redact_text


@pytest.mark.parametrize("name, secret", [
    ("HF_TOKEN", True), ("WANDB_API_KEY", True), ("AWS_SECRET_ACCESS_KEY", True), ("dbPassword", True),
    ("GITHUB_PAT", True), ("MY_PASSWD", True), ("apiKey", True), ("PRIVATE_KEY_PATH", True),
    ("TOKENIZERS_PARALLELISM", False), ("KEYBOARD", False), ("HOME", False), ("PATH", False),
    ("NCCL_IB_HCA", False), ("MASTER_PORT", False), ("HF_HOME", False), ("", False), (None, False),
])
def test_is_secret_name(name, secret):
    assert is_secret_name(name) is secret


@pytest.mark.parametrize("text, hidden, kept", [
    ("export HF_TOKEN=hf_abcdefghijklmnopqrstuvwx", "hf_abc", "export HF_TOKEN="),
    ("WANDB_API_KEY: abc123 TOKENIZERS_PARALLELISM=false", "abc123", "TOKENIZERS_PARALLELISM=false"),
    ("python train.py --api-key sekret --lr 3e-4", "sekret", "--lr 3e-4"),
    ("git clone https://bob:pa55w0rd@github.com/x/y", "pa55w0rd", "https://bob:"),
    ("-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXk\n-----END OPENSSH PRIVATE KEY-----\nnext",
     "b3BlbnNzaC1rZXk", "next"),
    ("-----BEGIN RSA PRIVATE KEY-----\nMIIEtruncated", "MIIEtruncated", "BEGIN RSA PRIVATE KEY"),
    ('curl -H "Authorization: Bearer abcdefghijklmn" x', "abcdefghijklmn", "curl -H"),
    ("- name: DB_PASSWORD\n  value: hunter2\n- name: HOME\n  value: /root", "hunter2", "value: /root"),
    ('password = "hunter2"', "hunter2", "password"),
    ("token ghp_0123456789abcdefghijABCDEFGHIJ ok", "ghp_0123", " ok"),
    ("AKIAABCDEFGHIJKLMNOP", "AKIAABCDEFGHIJKLMNOP", ""),
    ("githubPat: abc123xyz", "abc123xyz", "githubPat"),
    ("dbPassword=s3cr3t", "s3cr3t", "dbPassword="),
])
def test_redact_text_masks_secrets_and_keeps_the_rest(text, hidden, kept):
    redacted = redact_text(text)
    assert hidden not in redacted and "***" in redacted and kept in redacted


@pytest.mark.parametrize("text", [
    "cd /workspace/RLinf && bash examples/run.sh", "RLINF_NODE_RANK: 3", "Global Step: 5/100",
    "Cluster is ready: 5 nodes available (required: 5).", "", "PATH=/usr/bin:/bin", "pattern=Global Step",
    "see https://github.com/RLinf/RLinf for details",
])
def test_redact_text_leaves_ordinary_lines_alone(text):
    assert redact_text(text) == text


def test_redact_env_list_and_mapping():
    env = [{"name": "HF_TOKEN", "value": "abc"}, {"name": "HF_HOME", "value": "/data/hf"},
           {"name": "DB_URL", "value": "postgres://u:secretpw@h/db"},
           {"name": "API_TOKEN", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}]
    out = redact_env(env)
    assert out[0]["value"] == "***" and out[1]["value"] == "/data/hf"
    assert "secretpw" not in out[2]["value"] and out[3] == env[3]
    assert env[0]["value"] == "abc"   # input untouched
    assert redact_env({"WANDB_API_KEY": "k1", "SEED": "1"}) == {"WANDB_API_KEY": "***", "SEED": "1"}


def test_redact_object_walks_scripts_env_and_json_annotations():
    job = {"metadata": {"annotations": {"record": json.dumps({"env": [{"name": "HF_TOKEN", "value": "t0k"}]})}},
           "spec": {"tasks": [{"prepareScript": "export HF_TOKEN=t0k\npip install x",
                               "kubernetes": {"workload": {"template": {"spec": {"containers": [
                                   {"name": "main", "env": [{"name": "OPENAI_API_KEY", "value": "sk-1"}]}]}}}}}]}}
    out = redact_object(job)
    assert "t0k" not in json.dumps(out) and "sk-1" not in json.dumps(out)
    assert "pip install x" in out["spec"]["tasks"][0]["prepareScript"]
    assert job["spec"]["tasks"][0]["prepareScript"].startswith("export HF_TOKEN=t0k")
    secret = redact_object({"kind": "Secret", "data": {"u": "YWRtaW4=", "p": "cGFzcw=="}})
    assert secret["data"] == {"u": "***", "p": "***"}
