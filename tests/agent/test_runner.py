"""The container runner on its own (no sandbox, no Ray): the worker's head wait, restart back-off and counts,
logs per container instance, and that stopping ends the whole process group."""

import asyncio
import os
import subprocess
import time

import pytest

from rlark_sandbox import procs
from rlark_sandbox.logs import LogStore
from rlark_sandbox.runner import ContainerRunner, Launch, PortBlocks, RunnerSettings, backoff_delay, temp_dir_for


@pytest.mark.parametrize("failures, delay", [(1, 10), (2, 20), (3, 40), (5, 160), (6, 300), (9, 300)])
def test_kubelet_back_off_doubles_from_10s_to_5min(failures, delay):
    assert backoff_delay(RunnerSettings(), failures) == delay


def test_port_blocks_are_distinct_and_stable():
    blocks = PortBlocks("seed")
    a, b = blocks.claim("c/a-0"), blocks.claim("c/b-0")
    assert blocks.claim("c/a-0") == a
    assert len({a.gcs, a.client, a.dashboard, a.agent, b.gcs, b.client, b.dashboard, b.agent}) == 8
    assert a.max_worker < b.min_worker or b.max_worker < a.min_worker
    assert 20000 <= min(a.gcs, b.gcs) and max(a.max_worker, b.max_worker) < 32768


def test_a_pod_that_comes_back_gets_its_ports_again_even_after_its_server_had_connections():
    """A head Pod replaced by an Edit & Restart keeps its GCS port, which its workers' env names (a real Pod's
    6379): another Pod made meanwhile does not take the block, and the old server's accepted connections left in
    TIME_WAIT do not keep it taken."""
    import socket

    blocks = PortBlocks("comes-back")
    head = blocks.claim("c/job-actor-0")
    server = blocks.network.socket()
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as Ray's gRPC server binds
    server.bind(("0.0.0.0", head.gcs))
    server.listen()
    client = socket.create_connection(("127.0.0.1", head.gcs))
    accepted, _ = server.accept()
    accepted.close()  # the server side closes first: its end of the connection waits in TIME_WAIT
    client.close()
    server.close()
    blocks.release("c/job-actor-0")
    other = blocks.claim("c/other-0")
    assert other != head
    assert blocks.claim("c/job-actor-0") == head


def test_ray_temp_dir_is_short_enough_for_unix_sockets(tmp_path):
    path = temp_dir_for("0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0", str(tmp_path / ("x" * 200)))
    session = path / "session_2026-11-29_19-44-21_276231_5381" / "sockets" / "plasma_store"
    assert len(str(session)) < 107


class Recorder:
    def __init__(self):
        self.states, self.events = [], []

    def status(self, view):
        self.states.append((time.monotonic(), view.status))

    def event(self, kind, reason, message):
        self.events.append((kind, reason, message))


def make_runner(tmp_path, env, *, head=False, image="img@sha256:1", settings=None):
    blocks = PortBlocks(str(tmp_path))
    ports = blocks.claim("c/p-0")
    hosts = tmp_path / "hosts"
    hosts.write_text("")
    launch = Launch(cluster="rlark-test", pod="t-worker-0", uid=f"uid-{tmp_path.name}", head=head, image=image,
                    env={"POD_NAME": "t-worker-0", "RLARK_NODE_RANK_START": "2", **env},
                    workdir=tmp_path / "pod", temp_dir=tmp_path / "ray", ports=ports, head_ports=ports,
                    hosts_file=hosts)
    logs = LogStore(tmp_path / "logs")
    recorder = Recorder()
    runner = ContainerRunner(launch, logs, settings or RunnerSettings(backoff_base=0.3, head_wait_attempts=2),
                             tmp_path, recorder.status, recorder.event)
    return runner, logs, recorder


def read(logs, instance=None):
    if instance is None:
        return logs.read("rlark-test", "rlark-system", "t-worker-0", "main")
    path = logs.path("rlark-test", "rlark-system", "t-worker-0", "main", instance)
    return [line.split(" ", 3)[3] for line in path.read_text().splitlines()]  # <time> <stream> <tag> <content>


async def wait_until(predicate, timeout=20.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        await asyncio.sleep(0.05)
    raise AssertionError("condition not reached")


async def test_unreachable_head_fails_the_worker_which_restarts_with_growing_back_off(tmp_path):
    runner, logs, recorder = make_runner(tmp_path, {"RLARK_HEAD_ADDRESS": "t-head-ray-head"})
    runner.start()
    try:
        await wait_until(lambda: runner.restart_count >= 3)
    finally:
        await runner.stop()
    first = read(logs, 0)
    port = runner.launch.head_ports.gcs
    assert first == [
        "RLINF_NODE_RANK: 2",
        f"Connecting to Ray head at t-head-ray-head:{port}...",
        f"Waiting for head to be reachable at t-head-ray-head:{port}... (attempt 1)",
        f"Waiting for head to be reachable at t-head-ray-head:{port}... (attempt 2)",
        f"Error: Ray head at t-head-ray-head:{port} is not reachable.",
        f"Sandbox: waited 2 attempts, 1 s apart, for t-head-ray-head to resolve in the hosts file {tmp_path}/hosts, "
        f"its GCS port to accept connections and its dashboard (port {runner.launch.head_ports.dashboard}) to list "
        "the head node ALIVE",
    ]
    assert read(logs, 1) == first                              # each instance keeps its own log
    terminated = [s for _, s in recorder.states if "terminated" in s["state"]]
    assert [s["state"]["terminated"]["exitCode"] for s in terminated[:3]] == [1, 1, 1]
    assert [s["restartCount"] for s in terminated[:3]] == [0, 1, 2]
    waiting = [(t, s) for t, s in recorder.states if "waiting" in s["state"]]
    assert [s["state"]["waiting"]["reason"] for _, s in waiting[:2]] == ["CrashLoopBackOff"] * 2
    assert "back-off 0.3s" in waiting[0][1]["state"]["waiting"]["message"]
    assert "back-off 0.6s" in waiting[1][1]["state"]["waiting"]["message"]
    starts = [t for t, s in recorder.states if "running" in s["state"]]
    assert starts[2] - starts[1] > starts[1] - starts[0]        # the wait doubles
    assert ("Warning", "BackOff") in {(k, r) for k, r, _ in recorder.events}


async def test_prepare_script_failure_aborts_before_ray(tmp_path):
    runner, logs, recorder = make_runner(tmp_path, {"RLARK_PREPARE_SCRIPT": "echo preparing; exit 7"}, head=True)
    runner.start()
    try:
        await wait_until(lambda: any("terminated" in s["state"] for _, s in recorder.states))
    finally:
        await runner.stop()
    assert read(logs, 0) == ["RLINF_NODE_RANK: 2", "Executing prepare script...", "preparing"]
    terminated = next(s for _, s in recorder.states if "terminated" in s["state"])
    assert terminated["state"]["terminated"]["exitCode"] == 7


async def test_stop_ends_the_whole_process_group_within_5s(tmp_path):
    script = "(sleep 600 &); sleep 600 & echo started; trap '' TERM; sleep 600"
    runner, logs, recorder = make_runner(tmp_path, {"RLARK_PREPARE_SCRIPT": script}, head=True)
    runner.start()
    try:
        await wait_until(lambda: runner.pgid_file.exists() and "started" in read(logs))
        pgid = runner.pgid
        assert len(procs.group_members(pgid)) >= 4
        began = time.monotonic()
    finally:
        await runner.stop()
    assert time.monotonic() - began < 5
    assert procs.group_members(pgid) == []
    assert not runner.pgid_file.exists()


def test_watchdog_kills_pod_groups_when_the_sandbox_process_dies(tmp_path):
    uid = "watchdog-test-uid"
    pods = tmp_path / "pods"
    (pods / uid).mkdir(parents=True)
    child = subprocess.Popen(["bash", "-c", "sleep 600 & sleep 600"], start_new_session=True,
                             env={**os.environ, procs.POD_UID_ENV: uid})
    stranger = subprocess.Popen(["sleep", "600"], start_new_session=True)   # no marker: never touched
    (pods / uid / "pgid").write_text(str(child.pid))
    (pods / "other-uid").mkdir()
    (pods / "other-uid" / "pgid").write_text(str(stranger.pid))
    try:
        deadline = time.monotonic() + 5
        while len(procs.group_members(child.pid)) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        watchdog = procs.start_watchdog(pods)
        watchdog.stdin.close()                     # what happens when the sandbox process dies
        watchdog.wait(10)
        child.wait(5)
        assert procs.group_members(child.pid) == []
        assert stranger.poll() is None
    finally:
        stranger.kill()
        child.kill()
