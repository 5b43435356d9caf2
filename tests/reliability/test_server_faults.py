"""rlark-server faults (platform §0b), CLI and TUI: a revoked certificate (401), one without the agent (403), an
agent offline (502), an expired certificate (the error names the date), rlark-server down while the control plane
is up (the header says why, the job list stays live, everything recovers by itself), and `rlark logs -f` with only
KUBECONFIG following across a sandbox restart.

Certificates are signed by the sandbox CA itself (`Sandbox.issue_client_cert`) and passed with --client-cert and
--client-key; the address and CA come from the kubeconfig's rlark.io/server extension.
"""

from __future__ import annotations

import functools
import threading
import time
from datetime import UTC, datetime, timedelta

import pytest

from rlark_tui.cli import main
from rlark_tui.cluster.access import ClusterAccess
from rlark_tui.flow.reconciler import Reconciler
from rlark_tui.tui.app import RlarkApp
from tests.cluster.seeding import ROLES, at, remove_pod, seed_running_job, write_log
from tests.pilot import wait_for

SIZE = (160, 40)


@pytest.fixture
def job(rel):
    counter = getattr(job, "n", 0) + 1
    job.n = counter
    name = f"rel-srv-{counter}"
    pods = seed_running_job(rel, name, ROLES)
    write_log(rel, *pods["actor"], ["actor line"], when=at(1))
    write_log(rel, *pods["env"], ["env line"], when=at(2))
    yield name, pods
    for cluster, pod in pods.values():
        remove_pod(rel, name, cluster, pod)


def certificate(rel, tmp_path, metadata: dict[str, str], **options) -> list[str]:
    crt, key = rel.issue_client_cert(metadata, **options)
    (tmp_path / "c.crt").write_bytes(crt)
    (tmp_path / "c.key").write_bytes(key)
    (tmp_path / "c.key").chmod(0o600)
    return ["--client-cert", str(tmp_path / "c.crt"), "--client-key", str(tmp_path / "c.key")]


def test_a_revoked_certificate_is_a_401_line(rel, env, capsys, job):
    name, pods = job
    flags = certificate(rel, env, {"permission:agent-proxy": "*"})
    rel.revoke((env / "c.crt").read_bytes())
    assert main(["--kubeconfig", str(rel.kubeconfig), *flags, "logs", name, "--role", "actor"]) == 1
    err = capsys.readouterr().err
    assert err == (f"-- [actor/{pods['actor'][1]}] unauthorized (401): rlark-server refused the client certificate "
                   f"(client certificate revoked) while trying to logs pods \"{pods['actor'][1]}\" in namespace "
                   "rlark-system on the data plane rlark-gpu-a (rlark-server)\n")


def test_a_certificate_without_the_agent_is_a_403_line_and_other_agents_still_answer(rel, env, capsys, job):
    name, pods = job
    flags = certificate(rel, env, {"permission:agent-proxy": "edge-b"})
    assert main(["--kubeconfig", str(rel.kubeconfig), *flags, "logs", name]) == 0
    captured = capsys.readouterr()
    assert captured.out == f"[env/{pods['env'][1]}] env line\n"
    assert captured.err.startswith(f"-- [actor/{pods['actor'][1]}] forbidden (403): not allowed to logs pods ")
    assert captured.err.rstrip().endswith("client certificate does not have proxy permission for the target")


def test_an_agent_offline_is_a_502_line(rel, env, capsys, job):
    name, pods = job
    rel.faults.agent_offline("gpu-a")
    assert main(["--kubeconfig", str(rel.kubeconfig), "logs", name]) == 0
    captured = capsys.readouterr()
    assert captured.out == f"[env/{pods['env'][1]}] env line\n"
    assert captured.err.startswith(f"-- [actor/{pods['actor'][1]}] data plane rlark-gpu-a (rlark-server) Bad Gateway "
                                   "(502) on logs pods")
    rel.faults.agent_offline("gpu-a", on=False)
    assert main(["--kubeconfig", str(rel.kubeconfig), "logs", name, "--role", "actor"]) == 0
    assert capsys.readouterr().out == f"[actor/{pods['actor'][1]}] actor line\n"


def test_an_expired_certificate_names_its_date(rel, env, capsys, job):
    name, _ = job
    start = datetime.now(UTC) - timedelta(days=20)
    flags = certificate(rel, env, {"permission:agent-proxy": "*"}, days=10, not_before=start)
    ended = start + timedelta(days=10)
    assert main(["--kubeconfig", str(rel.kubeconfig), *flags, "logs", name, "--role", "actor"]) == 0
    captured = capsys.readouterr()
    assert captured.out == f"[actor/{name}-actor-0] actor line\n"
    assert captured.err == (f"-- [actor/{name}-actor-0] from the gateway: its last 1000 lines (the client certificate "
                            f"for rlark-server (from --client-cert) expired on {ended:%Y-%m-%d %H:%M} UTC; get a new "
                            "one)\n")


def header(app) -> str:
    return app.screen.query_one("#status-header").summary()


async def test_server_down_while_the_control_plane_is_up_the_header_says_why_and_all_recovers(rel, env, job,
                                                                                          monkeypatch):
    name, _ = job
    # the sources are probed every 30 s when healthy; 1 s here so the test need not wait for it
    monkeypatch.setattr("rlark_tui.tui.app.Reconciler", functools.partial(Reconciler, probe_interval=1.0))
    access = ClusterAccess.open(str(rel.kubeconfig), rel.context)
    app = RlarkApp(access)
    try:
        async with app.run_test(size=SIZE) as pilot:
            await wait_for(pilot, lambda: "2 data planes connected" in header(app), "the data planes", timeout=30)
            rel.faults.server_down()
            await wait_for(pilot, lambda: "data plane rlark-gpu-a disconnected (" in header(app),
                           "the data planes down", timeout=30, show=header)
            assert "control plane connected" in header(app)
            meanwhile = seed_running_job(rel, f"{name}-meanwhile", ROLES[:1])
            await wait_for(pilot, lambda: app.index.job(f"{name}-meanwhile") is not None, "a Job made meanwhile")
            remove_pod(rel, f"{name}-meanwhile", *meanwhile["actor"])
            rel.store.delete("jobs", f"{name}-meanwhile")
            rel.faults.server_down(on=False)
            await wait_for(pilot, lambda: "2 data planes connected" in header(app), "the data planes back",
                           timeout=30, show=header)
    finally:
        access.close()


def read_lines(capsys, count: int, timeout: float = 30) -> list[str]:
    """The next `count` lines `rlark logs -f` prints (fewer after `timeout` seconds)."""
    lines: list[str] = []
    deadline = time.monotonic() + timeout
    while len(lines) < count and time.monotonic() < deadline:
        time.sleep(0.2)
        lines += capsys.readouterr().out.splitlines()
    return lines


def test_logs_follow_with_kubeconfig_alone_across_a_sandbox_restart(tmp_path, env, monkeypatch, capsys):
    from rlark_sandbox import Sandbox
    from tests.sandbox.helpers import raw

    state = tmp_path / "restart-sandbox"
    first = Sandbox(state, seed="scale:1:0", agent=False).__enter__()
    try:
        assert raw(first, "POST", "/_sandbox/loadgen", {"pods": 1, "lines_per_s": 50, "seconds": 1,
                                                        "job": "restart"}).status == 200
        monkeypatch.setenv("KUBECONFIG", str(first.kubeconfig))
        follow = threading.Thread(target=lambda: main(["logs", "restart", "-f"]), daemon=True)
        follow.start()
        lines = read_lines(capsys, 50)
    finally:
        first.__exit__(None, None, None)
    second = Sandbox(state, seed="scale:1:0", agent=False).__enter__()
    try:
        assert second.server_url == first.server_url and second.gateway == first.gateway
        raw(second, "POST", "/_sandbox/loadgen", {"pods": 1, "lines_per_s": 50, "seconds": 1, "job": "restart"})
        lines += read_lines(capsys, 50)
        second.store.delete("jobs", "restart")
        assert len(lines) == 100 and len(set(lines)) == 100, [line[:70] for line in lines]
        assert [line.split()[2] for line in lines] == [f"seq={n}" for n in range(50)] * 2
    finally:
        second.__exit__(None, None, None)
    follow.join(15)
    assert not follow.is_alive(), "rlark logs -f ends once its Job is gone"


async def test_the_header_marks_an_unverified_rlark_server(rel, env, monkeypatch):
    import yaml
    config = yaml.safe_load(rel.kubeconfig.read_text())
    for entry in config["clusters"]:
        for extension in entry["cluster"].get("extensions", []):
            extension["extension"].pop("certificate-authority-data", None)
    path = env / "no-ca.kubeconfig"
    path.write_text(yaml.safe_dump(config))
    (env / "config.yaml").write_text("server-insecure-skip-tls-verify: true\n")
    access = ClusterAccess.open(str(path), rel.context)
    app = RlarkApp(access)
    try:
        async with app.run_test(size=SIZE) as pilot:
            await wait_for(pilot, lambda: "2 data planes connected (rlark-server unverified)" in header(app),
                           "the unverified mark", timeout=30, show=header)
    finally:
        access.close()
