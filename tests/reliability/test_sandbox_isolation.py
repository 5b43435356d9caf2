"""Issue 26 item 1 on the shared sandbox with demo-ppo's real Ray: nothing of the sandbox or its Pods listens off
loopback (`ss -ltnp`), another local user (`setpriv` to uid 65534) gets nothing from any Pod port (no job
submission, no dashboard data, gRPC refused without Ray's token), each Pod has its own loopback Pod IP, and Ray
reads and `rlark port-forward demo-ppo ray` still work (real curl through the tunnel) without the token leaking.
"""

from __future__ import annotations

import ipaddress
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.agent.helpers import pod_processes
from tests.sandbox.helpers import ray_token_header

pytestmark = pytest.mark.ray

JOB = "demo-ppo"
PROBE = Path(__file__).with_name("ray_probe.py")
NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
PWNED = Path("/tmp/rlark-ray-probe-pwned")


@pytest.fixture(scope="module")
def ray_up(ray_sandbox):
    """demo-ppo's three Ray nodes alive (read through rlark-server with the Header Pod's token)."""
    from rlark_tui.cluster import ClusterAccess
    if os.geteuid() != 0 or shutil.which("setpriv") is None or not ray_sandbox.network.isolated:
        pytest.skip(f"needs root, setpriv and the Pod network namespace ({ray_sandbox.network.problem})")
    access = ClusterAccess.open(str(ray_sandbox.kubeconfig))
    try:
        deadline, status = time.monotonic() + 300, {}
        while time.monotonic() < deadline:
            status = access.ray_status(access.job(JOB))
            if status.get("alive_nodes") == 3:
                break
            time.sleep(2)
    finally:
        access.close()
    assert status.get("alive_nodes") == 3, status
    return ray_sandbox


def _listeners(prefix: list[str]) -> list[tuple[str, int, set[int]]]:
    """(address, port, pids) of every TCP listener `ss -ltnpH` shows (in the namespace `prefix` enters)."""
    out = subprocess.run([*prefix, "ss", "-ltnpH"], capture_output=True, text=True, timeout=30, check=True).stdout
    found = []
    for line in out.splitlines():
        fields = line.split()
        host, _, port = fields[3].rpartition(":")
        pids = {int(p.split(",")[0]) for p in line.split("pid=")[1:]}
        found.append((host.strip("[]").removeprefix("::ffff:"), int(port), pids))
    return found


def _is_tensorboard(pid: int) -> bool:
    try:
        return b"tensorboard" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False


def _pod_uids(sandbox) -> list[str]:
    return [p["metadata"]["uid"] for c in ("rlark-gpu-a", "rlark-edge-b")
            for p in sandbox.store.list("pods", "rlark-system", plane=c)[0]]


def _probe(prefix: list[str], *args: str) -> dict:
    done = subprocess.run([*prefix, *NOBODY, sys.executable, "-I", str(PROBE), *args], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_no_listener_off_loopback_and_another_user_gets_nothing_from_any_port(ray_up):
    sandbox = ray_up
    ours = {os.getpid(), *pod_processes(_pod_uids(sandbox))}
    host = [(a, p) for a, p, pids in _listeners([]) if pids & ours]
    assert host, "the sandbox's own servers listen in this namespace"
    assert all(ipaddress.ip_address(a).is_loopback for a, _ in host), host
    pods_in_host = [(a, p) for a, p, pids in _listeners([]) if pids & (ours - {os.getpid()})]
    assert pods_in_host == [], "a Pod process listens in the host's network namespace"

    enter = list(sandbox.network.enter())
    # TensorBoard (started by the gateway's route once asked) is no Ray port: it lives in the Pod network like Ray,
    # which the host-side checks above and below prove unreachable from outside; only Ray's ports must want the token.
    inside = [entry for entry in _listeners(enter) if not any(_is_tensorboard(pid) for pid in entry[2])]
    assert len(inside) >= 15                  # GCS, 3 raylets, workers, agents, dashboard, client server ...
    pod_ips = {sandbox.store.get("pods", n, "rlark-system", c)["status"]["podIP"]
               for c, n in (("rlark-gpu-a", "demo-ppo-actor-0"), ("rlark-gpu-a", "demo-ppo-rollout-0"),
                            ("rlark-edge-b", "demo-ppo-env-0"))}
    addresses = sorted({f"{'127.0.0.1' if a in ('*', '0.0.0.0', '') else a}:{p}" for a, p, _ in inside})
    PWNED.unlink(missing_ok=True)
    answers = _probe(enter, *addresses)       # another user, even inside the Pod network
    # A listener that answered neither is a hole only while it still listens: the shared sandbox's other Jobs (the
    # Ray group's earlier tests) close worker ports between the `ss` above and the probe.
    still = {f"{'127.0.0.1' if a in ('*', '0.0.0.0', '') else a}:{p}" for a, p, _ in _listeners(enter)}
    unprobed = [a for a, v in answers.items() if v["http"] is None and v["grpc"] is None and a in still]
    assert unprobed == [], f"listeners that answered neither HTTP nor Ray's gRPC: {unprobed}"
    for address, answer in answers.items():
        if answer["http"] is None and answer["grpc"] is None:
            continue  # closed since the `ss`: `unprobed` above holds those that still listen
        if answer["http"] is not None:
            get, post = answer["http"]
            assert get in (401, "metrics") and post in (401, 405), (address, answer)
        else:
            assert answer["grpc"] == "UNAUTHENTICATED", (address, answer)
    assert sum(1 for v in answers.values() if v["http"] and v["http"][0] == 401) >= 4   # dashboard + 3 agents
    assert not PWNED.exists()

    from_host = _probe([], "--connect", *sorted(f"{ip}:{p}" for ip in pod_ips for _, p, _ in inside))
    assert not any(from_host.values()), [a for a, ok in from_host.items() if ok]

    gateway, server = sandbox.gateway, sandbox.server_url
    curl = ["curl", "-sk", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "10"]
    api = subprocess.run([*NOBODY, *curl, f"{gateway}/api/v1/namespaces/rlark-system/pods"], capture_output=True,
                         text=True, timeout=30)
    assert api.stdout == "401"
    mtls = subprocess.run([*NOBODY, *curl, f"{server}/api/taskproxy/{JOB}-actor:8265/api/jobs/"],
                          capture_output=True, text=True, timeout=30)
    assert mtls.stdout == "000"               # no client certificate: the TLS handshake fails


def test_pod_ips_differ_and_the_tunnel_passes_rays_token_for_the_browser(ray_up, tmp_path):
    sandbox = ray_up
    env = {**os.environ, "RLARK_CONFIG": str(tmp_path / "none.yaml"), "RLARK_STATE_DIR": str(tmp_path / "state")}
    base = [sys.executable, "-m", "rlark_tui", "--kubeconfig", str(sandbox.kubeconfig)]
    wide = subprocess.run([*base, "get", "pods", "-A", "-o", "wide"], capture_output=True, text=True, env=env,
                          timeout=60)
    assert wide.returncode == 0, wide.stderr
    header, *rows = wide.stdout.splitlines()
    column = header.split().index("IP")
    ips = {row.split()[1]: row.split()[column] for row in rows if row.split()[1].startswith(f"{JOB}-")}
    assert len(ips) == 3 and len(set(ips.values())) == 3, wide.stdout
    assert all(ip.startswith(f"127.{sandbox.network.octet}.") for ip in ips.values()), ips

    token = ray_token_header(sandbox, JOB)["X-Ray-Authorization"].split()[1]
    config = subprocess.run([*base, "config"], capture_output=True, text=True, env=env, timeout=60)
    assert f"ok    ray {JOB} " in config.stdout and "Ray wants a token (read from the Header Pod" in config.stdout
    assert token not in config.stdout + config.stderr
    proc = subprocess.Popen([*base, "port-forward", JOB, "ray"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=env)
    try:
        first = proc.stdout.readline().decode()
        url = first.split(" at ")[1].strip()
        nodes = subprocess.run(["curl", "-s", "--max-time", "20", f"{url}api/v0/nodes"], capture_output=True,
                               timeout=30)
        rows = json.loads(nodes.stdout)["data"]["result"]["result"]
        assert sum(1 for row in rows if row["state"] == "ALIVE") == 3
        bare = url.rsplit("/", 2)[0] + "/api/v0/nodes"
        refused = subprocess.run(["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", bare], capture_output=True,
                                 text=True, timeout=30)
        assert refused.stdout == "403"        # the tunnel's own token is still needed
        assert token not in first and token not in url
    finally:
        proc.terminate()
        out, err = proc.communicate(timeout=10)
    assert token.encode() not in out + err
    state = tmp_path / "state"
    assert not state.exists() or not any(token.encode() in f.read_bytes() for f in state.rglob("*") if f.is_file())
