"""`rlark sandbox` in the foreground: the ready line, kubeconfig (mode 0600, contexts, console extension),
loopback only, SIGTERM (exit 0) and Ctrl-C (130), restart on the same state dir keeps every object; seeds."""

from __future__ import annotations

import os
import re
import signal
import socket
import stat
import subprocess
import sys

import pytest
import yaml
from kubernetes import client, config

from rlark_sandbox import Sandbox
from rlark_sandbox.agent import Agent, AgentSettings
from rlark_tui.cli import main
from rlark_tui.model.submission import submitted_record
from tests.sandbox.helpers import GROUP, VERSION, job, raw

READY = re.compile(r"^ready kubeconfig=(\S+) gateway=(https://127\.0\.0\.1:(\d+)) server=(https://127\.0\.0\.1:\d+)$")


def start(state_dir, *extra: str) -> tuple[subprocess.Popen, re.Match]:
    proc = subprocess.Popen([sys.executable, "-m", "rlark_tui", "sandbox", "--state-dir", str(state_dir), *extra],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = proc.stdout.readline().rstrip("\n")
    match = READY.match(line)
    if not match:
        proc.kill()
        raise AssertionError(f"no ready line: {line!r} {proc.stderr.read()}")
    return proc, match


def stop(proc: subprocess.Popen, how: signal.Signals = signal.SIGTERM) -> tuple[int, str]:
    proc.send_signal(how)
    try:
        proc.wait(30)
    finally:
        if proc.poll() is None:
            proc.kill()
    return proc.returncode, proc.stdout.read()


def test_foreground_restart_keeps_objects(tmp_path):
    proc, ready = start(tmp_path, "--seed", "none")
    kubeconfig, port, server = ready.group(1), ready.group(3), ready.group(4)
    try:
        assert stat.S_IMODE(os.stat(kubeconfig).st_mode) == 0o600
        api = client.CustomObjectsApi(config.new_client_from_config(config_file=kubeconfig))
        api.create_cluster_custom_object(GROUP, VERSION, "jobs", job("kept"))
        assert [j["metadata"]["name"] for j in api.list_cluster_custom_object(GROUP, VERSION, "jobs")["items"]] \
            == ["kept"]
    finally:
        code, rest = stop(proc)
    assert code == 0 and rest == ""

    proc, ready = start(tmp_path)
    try:
        assert (ready.group(3), ready.group(4)) == (port, server)   # clients keep both URLs across a restart
        api = client.CustomObjectsApi(config.new_client_from_config(config_file=kubeconfig))
        names = [j["metadata"]["name"] for j in api.list_cluster_custom_object(GROUP, VERSION, "jobs")["items"]]
        assert names == ["kept"]
    finally:
        stop(proc)


def test_server_port_flag(tmp_path):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        wanted = probe.getsockname()[1]
    proc, ready = start(tmp_path, "--seed", "none", "--no-agent", "--server-port", str(wanted))
    try:
        assert ready.group(4) == f"https://127.0.0.1:{wanted}"
    finally:
        code, _ = stop(proc, signal.SIGINT)
    assert code == 130  # Ctrl-C: as a shell says an interrupted command ended (SIGTERM, its way to stop, is 0)


def test_bad_seed_is_a_usage_error(tmp_path, capsys):
    code = main(["sandbox", "--state-dir", str(tmp_path), "--seed", "lots"])
    assert code == 2 and capsys.readouterr().err.strip() == \
        "error: unknown seed 'lots': use demo, none or scale:<jobs>:<pods>[:<age seconds>]"


def test_kubeconfig_has_one_context_and_the_extensions(bare_sandbox):
    sandbox = bare_sandbox
    assert stat.S_IMODE(os.stat(sandbox.kubeconfig).st_mode) == 0o600
    doc = yaml.safe_load(sandbox.kubeconfig.read_text())
    assert doc["current-context"] == "rlark-sandbox"
    assert [c["name"] for c in doc["contexts"]] == ["rlark-sandbox"] and len(doc["clusters"]) == 1
    (cluster,) = doc["clusters"]
    assert cluster["cluster"]["server"] == f"{sandbox.gateway}/clusters/root"
    server = next(e["extension"] for e in cluster["cluster"]["extensions"] if e["name"] == "rlark.io/server")
    assert server["server"] == sandbox.server_url
    assert server["certificate-authority-data"] == cluster["cluster"]["certificate-authority-data"]
    control = doc["contexts"][0]["context"]
    extension = next(e["extension"] for e in control["extensions"] if e["name"] == "rlark.io/console")
    assert extension == {"gateway": sandbox.gateway, "sandbox": True}


def test_member_clusters_have_no_route_of_their_own(bare_sandbox):
    before = len(bare_sandbox.unknown_routes)
    assert raw(bare_sandbox, "GET", "/clusters/rlark-gpu-a/api/v1/namespaces/rlark-system/pods").status == 404
    assert bare_sandbox.unknown_routes[before:] == ["GET /clusters/rlark-gpu-a/api/v1/namespaces/rlark-system/pods"]


def test_scale_seed(tmp_path):
    with Sandbox(tmp_path, seed="scale:4:10", agent=False) as sb:
        assert len(sb.store.list("jobs")[0]) == 4
        assert len(sb.store.list("tasks")[0]) == 4
        pods = sb.store.list("pods")[0]
        assert len(pods) == 10 and {p["status"]["phase"] for p in pods} == {"Running"}
        assert len(sb.store.list("nodes")[0]) == 5


def test_demo_seed_job(tmp_path):
    with Sandbox(tmp_path, seed="demo", agent=False) as sb:
        demo = sb.store.get("jobs", "demo-ppo")
    tasks = demo["spec"]["tasks"]
    assert [(t["name"], t["role"], t.get("head", False), t["nodeSelector"]["kubernetes.io/hostname"])
            for t in tasks] == [("actor", "Actor", True, "gpu-a1"), ("rollout", "Rollout", False, "gpu-a2"),
                                ("env", "Env", False, "edge-b1")]
    assert demo["spec"]["domain"] == "demo-net"
    for task in tasks:
        main = task["kubernetes"]["workload"]["template"]["spec"]["containers"][0]
        assert "@sha256:" in main["image"] and main["resources"]["limits"] == {"nvidia.com/gpu": "1"}
    assert "python -m rlark_sandbox.demo_workload --run-id demo-ppo-001" in tasks[0]["runScript"]
    assert str(tmp_path / "outputs") in tasks[0]["runScript"]
    assert "rlark.io/launch-record" in demo["metadata"]["annotations"]
    record = submitted_record(demo)
    assert record.intact and record.matches_live


def test_agent_runs_with_its_settings_unless_off(tmp_path):
    with Sandbox(tmp_path, seed="none", agent_settings=AgentSettings(resync_seconds=1.0)) as sb:
        started = sb.agent
        assert isinstance(started, Agent) and started.resync == 1.0
    assert sb.agent is None
    with Sandbox(tmp_path / "off", seed="none", agent=False) as sb:
        assert sb.agent is None


def test_one_sandbox_per_state_dir(tmp_path):
    from rlark_sandbox import running_pid
    from rlark_tui.errors import RlarkError
    assert running_pid(tmp_path) is None
    with Sandbox(tmp_path, seed="none", agent=False):
        assert running_pid(tmp_path) == os.getpid()
        with pytest.raises(RlarkError) as err:
            Sandbox(tmp_path, seed="none", agent=False).start()
        assert str(err.value) == f"a sandbox (pid {os.getpid()}) already serves {tmp_path}"
    assert running_pid(tmp_path) is None
    with Sandbox(tmp_path, seed="none", agent=False) as again:
        assert again.port


def test_config_says_on_stderr_why_a_context_cannot_be_used(sandbox, capsys, env):
    """The fuzz run of every command line (tests/reliability/test_fuzz.py, one of this session's runs): `rlark
    config --no-check --context jobs` exited 2, a usage error, with nothing on stderr, its reason among the report's
    lines on stdout."""
    code = main(["--kubeconfig", str(sandbox.kubeconfig), "config", "--no-check", "--context", "jobs"])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("kubeconfig:   context 'jobs' is not in the kubeconfig"), err
