"""The issue's acceptance lines on the shared sandbox with real Ray: `rlark exec demo-ppo` (role, exit code,
stdin) and `rlark port-forward demo-ppo ray` serving the dashboard's `/api/v0/nodes` with three alive nodes."""

from __future__ import annotations

import http.client
import json
import os
import subprocess
import sys
import time

import pytest

from tests.pod.conftest import ctrl_c_default
from tests.pod.test_exec_cli import rlark

pytestmark = pytest.mark.ray


def _alive_nodes(port: int, token: str) -> int:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=15)
    try:
        conn.request("GET", f"/{token}/api/v0/nodes")
        resp = conn.getresponse()
        if resp.status != 200:
            return -1
        rows = json.loads(resp.read())["data"]["result"]["result"]
        return sum(1 for row in rows if row["state"] == "ALIVE")
    finally:
        conn.close()


def test_exec_and_port_forward_on_demo_ppo(sandbox):
    done = rlark(sandbox, "exec", "demo-ppo", "--", "sh", "-c", "echo $RLARK_TASK_ROLE; exit 7")
    deadline = time.monotonic() + 120
    while done.returncode == 1 and time.monotonic() < deadline:  # demo-ppo's Pods may still be starting
        time.sleep(2)
        done = rlark(sandbox, "exec", "demo-ppo", "--", "sh", "-c", "echo $RLARK_TASK_ROLE; exit 7")
    assert (done.returncode, done.stdout) == (7, b"actor\n"), done.stderr
    assert rlark(sandbox, "exec", "demo-ppo", "--", "cat", stdin=b"hi\n").stdout == b"hi\n"

    proc = subprocess.Popen([sys.executable, "-m", "rlark_tui", "--kubeconfig", str(sandbox.kubeconfig),
                             "port-forward", "demo-ppo", "ray"], stdout=subprocess.PIPE,
                            env={**os.environ, "RLARK_CONFIG": "/nonexistent/config.yaml"},
                            preexec_fn=ctrl_c_default)
    try:
        url = proc.stdout.readline().decode().split(" at ")[1].strip()
        port, token = int(url.split(":")[2].split("/")[0]), url.split("/")[3]
        deadline = time.monotonic() + 300
        alive = _alive_nodes(port, token)
        while alive != 3 and time.monotonic() < deadline:
            time.sleep(2)
            alive = _alive_nodes(port, token)
        assert alive == 3
        deadline = time.monotonic() + 120
        status = rlark(sandbox, "exec", "demo-ppo", "--role", "env", "--", "ray", "status", timeout=60)
        while b"Active:" not in status.stdout and time.monotonic() < deadline:  # the autoscaler reports late
            time.sleep(3)
            status = rlark(sandbox, "exec", "demo-ppo", "--role", "env", "--", "ray", "status", timeout=60)
        assert status.returncode == 0 and b"Active:" in status.stdout, status.stdout + status.stderr
    finally:
        proc.send_signal(2)
        assert proc.wait(60) == 130   # as a shell says Ctrl-C ended it; generous for a loaded machine
