"""`pods/<pod>/exec` over WebSocket through the sandbox's data-plane route, with the real `kubernetes` client:
exit codes on the status channel, the pod's environment and directory, stdin close (v5) and EOF (v4), a tty
that follows resize frames, hang-up ending the process group, refusals as Kubernetes gives them, run_command.
"""

from __future__ import annotations

import json
import os
import time

import pytest
from kubernetes import client as k8s
from kubernetes.stream import stream

from rlark_tui.cluster.errors import ApiError, NotFound
from rlark_tui.cluster.podexec import ExecSession, run_command
from tests.pod.conftest import HEAD, WORKER
from tests.sandbox.helpers import data_plane_api


def _collect(session: ExecSession, timeout: float = 10) -> tuple[bytes, bytes]:
    out, err = bytearray(), bytearray()
    deadline = time.monotonic() + timeout
    while session.is_open and time.monotonic() < deadline:
        for channel, data in session.read(timeout=0.5):
            (out if channel == 1 else err).extend(data)
    return bytes(out), bytes(err)


def test_exit_code_env_and_directory(access):
    result = run_command(access, *HEAD, ["sh", "-c", 'echo "$RLARK_TASK_ROLE $POD_NAME"; pwd; echo oops >&2; exit 7'])
    assert result.exit_code == 7
    role, directory = result.stdout.decode().splitlines()
    assert role == "actor shell-actor-0"
    assert directory.endswith("/home") and os.path.isdir(directory)
    assert result.stderr == b"oops\n" and not result.truncated
    assert run_command(access, *WORKER, ["sh", "-c", "echo $RLARK_TASK_ROLE"]).stdout == b"env\n"


def test_stdin_close_ends_input(access):
    data = os.urandom(200_000)
    result = run_command(access, *HEAD, ["sha256sum"], stdin=data)
    import hashlib
    assert result.exit_code == 0 and result.stdout.split()[0].decode() == hashlib.sha256(data).hexdigest()


def test_output_cap_and_timeout(access):
    whole = run_command(access, *HEAD, ["head", "-c", str(16 << 20), "/dev/zero"], max_output=32 << 20)
    assert (whole.exit_code, len(whole.stdout), whole.truncated) == (0, 16 << 20, False)
    capped = run_command(access, *HEAD, ["sh", "-c", "yes | head -c 3000000"], max_output=1000)
    assert capped.truncated and len(capped.stdout) == 1000 and capped.exit_code is None
    started = time.monotonic()
    slow = run_command(access, *HEAD, ["sleep", "30"], timeout=1)
    assert slow.exit_code is None and time.monotonic() - started < 5


def test_v4_protocol_stdin_eof(shell_job):
    """A client offering only v4 gets v4; an empty stdin frame is its end of input. The `kubernetes` client's
    own WebSocket (certificate files, as a kubeconfig context gives them), not rlark's shared TLS context."""
    client = data_plane_api(shell_job, HEAD[0])
    api = k8s.CoreV1Api(client)
    ws = stream(api.connect_get_namespaced_pod_exec, HEAD[1], "rlark-system", command=["cat"], container="main",
                stdin=True, stdout=True, stderr=True, tty=False, _preload_content=False, binary=True,
                _request_timeout=10)
    assert ws.subprotocol == "v5.channel.k8s.io"
    ws.close()
    from kubernetes.stream import ws_client
    config = client.configuration
    url = ws_client.get_websocket_url(f"{config.host}/api/v1/namespaces/rlark-system/pods/{HEAD[1]}/exec?"
                                      "command=cat&container=main&stdin=true&stdout=true")
    headers = {"sec-websocket-protocol": "v4.channel.k8s.io"}
    bearer = config.auth_settings().get("BearerToken")
    if bearer:
        headers["authorization"] = bearer["value"]
    session = ExecSession(ws_client.WSClient(config, url, headers, capture_all=False, binary=True), HEAD[1])
    assert not session.v5
    session.write(b"over v4\n")
    session.close_stdin()
    out, _ = _collect(session)
    assert out == b"over v4\n" and session.exit_code() == 0


def test_tty_size_follows_resize(access):
    session = ExecSession.open(access.data_plane_api_client(HEAD[0]), HEAD[1], ["sh"], stdin=True, tty=True)
    session.resize(100, 31)
    session.write(b"stty size; exit 3\n")
    out, _ = _collect(session)
    assert b"31 100" in out and session.exit_code() == 3
    session = ExecSession.open(access.data_plane_api_client(HEAD[0]), HEAD[1], ["sh"], stdin=True, tty=True)
    session.resize(80, 24)
    session.write(b"stty size\n")
    first = bytearray()
    deadline = time.monotonic() + 10
    while b"24 80" not in first and time.monotonic() < deadline:  # the first size is printed before the resize
        first += b"".join(data for channel, data in session.read(timeout=0.5) if channel == 1)
    session.resize(132, 40)
    session.write(b"stty size; exit\n")
    out, _ = _collect(session)
    assert b"24 80" in first and b"40 132" in out and session.exit_code() == 0


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_hang_up_ends_process_group(access):
    session = ExecSession.open(access.data_plane_api_client(HEAD[0]), HEAD[1],
                               ["sh", "-c", "sleep 300 & echo $! $$; wait"])
    line = b""
    while b"\n" not in line:
        line += b"".join(data for _, data in session.read(timeout=5))
    pids = [int(p) for p in line.split()]
    assert all(_alive(p) for p in pids)
    session.close()
    deadline = time.monotonic() + 5
    while any(_alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(_alive(p) for p in pids)


def test_refusals_as_kubernetes_gives_them(access, shell_job):
    with pytest.raises(NotFound):
        run_command(access, HEAD[0], "no-such-pod-0", ["true"])
    pod = shell_job.store.get("pods", HEAD[1], "rlark-system", HEAD[0])
    # in a namespace of its own: the sandbox's agent removes a Pod in rlark-system that no Task of it manages
    shell_job.store.create("pods", {"apiVersion": "v1", "kind": "Pod",
                                    "metadata": {"name": "finished-0", "namespace": "done"},
                                    "spec": pod["spec"], "status": {"phase": "Succeeded"}}, plane=HEAD[0])
    try:
        with pytest.raises(ApiError, match="cannot exec into a container in a completed pod; current phase is "
                                           "Succeeded") as info:
            run_command(access, HEAD[0], "finished-0", ["true"], namespace="done")
        assert info.value.status == 400
    finally:
        shell_job.store.delete("pods", "finished-0", "done", HEAD[0])


def test_status_frame_shape(access):
    """The status channel carries Kubernetes' metav1.Status, which the client reads as is."""
    session = ExecSession.open(access.data_plane_api_client(HEAD[0]), HEAD[1], ["sh", "-c", "exit 7"])
    _collect(session)
    assert session.status["status"] == "Failure" and session.status["reason"] == "NonZeroExitCode"
    assert session.status["details"]["causes"] == [{"reason": "ExitCode", "message": "7"}]
    assert json.loads(json.dumps(session.status)) == session.status


def test_exec_recorded_for_the_watchdog(access, shell_job):
    """A running exec leaves `exec-<pgid>.pgid` in its Pod's state dir (gone when it ends), so the watchdog that
    outlives a killed sandbox (procs.reap_all) ends it too."""
    from rlark_sandbox.procs import reap_all
    session = ExecSession.open(access.data_plane_api_client(HEAD[0]), HEAD[1], ["sh", "-c", "echo $$; sleep 300"])
    line = b""
    while b"\n" not in line:
        line += b"".join(data for _, data in session.read(timeout=5))
    pid = int(line)
    pods_dir = shell_job.state_dir / "agent" / "pods"
    record = next(pods_dir.glob(f"*/exec-{pid}.pgid"))
    reap_all(pods_dir)
    deadline = time.monotonic() + 5
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(pid) and not record.exists()
    session.close()
    session = ExecSession.open(access.data_plane_api_client(HEAD[0]), HEAD[1], ["true"])
    _collect(session)
    assert session.exit_code() == 0
    deadline = time.monotonic() + 5
    while list(pods_dir.glob("*/exec-*.pgid")) and time.monotonic() < deadline:  # removed once the group ended
        time.sleep(0.05)
    assert not list(pods_dir.glob("*/exec-*.pgid"))
