"""A hostile data plane's exec WebSocket frames (issue 33, a fourteenth round): a real 127.0.0.1 server that
upgrades `pods/<pod>/exec` and then sends frames rlark never asked for, read by the real `kubernetes` client's
WebSocket through `run_command`, as `rlark check`, `rlark stacks`, Ray's token read and `rlark top` run theirs."""

from __future__ import annotations

import socket
import threading
import time
import tracemalloc

import pytest
from kubernetes import client as k8s

from rlark_tui.cluster import podexec
from rlark_tui.cluster.errors import Unreachable
from rlark_tui.cluster.podexec import STATUS, STDOUT, ExecFailed, ExecSession, run_command
from tests.pod.hostile_exec import frame as _frame
from tests.pod.hostile_exec import hostile_data_plane as _hostile_data_plane


def _holds_half_a_frame(conn: socket.socket, stop: threading.Event) -> None:
    conn.sendall(_frame(bytes([STDOUT]) + b"partial", claimed=1 << 20))


def _endless_fragments(conn: socket.socket, stop: threading.Event) -> None:
    piece = b"y" * (64 << 10)
    conn.sendall(_frame(bytes([STDOUT]) + piece, fin=False))
    for _ in range(1024):  # 64 MiB of one message that never ends
        if stop.is_set():
            return
        conn.sendall(_frame(piece, opcode=0, fin=False))


def _endless_status(conn: socket.socket, stop: threading.Event) -> None:
    piece = bytes([STATUS]) + b"{" * (64 << 10)
    for _ in range(384):
        if stop.is_set():
            return
        conn.sendall(_frame(piece))


def _a_frame_of_a_terabyte(conn: socket.socket, stop: threading.Event) -> None:
    conn.sendall(_frame(bytes([STDOUT]) + b"x" * (1 << 16), claimed=1 << 40))
    piece = b"x" * (1 << 16)
    for _ in range(512):  # 32 MiB of it
        if stop.is_set():
            return
        conn.sendall(piece)


@pytest.fixture(scope="module", autouse=True)
def _imported() -> None:
    """The `kubernetes` client's WebSocket imports its modules at the first exec (~1 s): done before tracemalloc,
    which slows them past the connect timeout."""
    with _hostile_data_plane(_holds_half_a_frame) as access:
        ExecSession.open(access.data_plane_api_client("c"), "demo-ppo-actor-0", ["true"]).close()


def test_a_frame_that_never_completes_ends_at_the_commands_time_bound():
    """A data plane that sends the start of a frame and holds the rest held the read for ever: the socket had
    no timeout once upgraded, so `rlark check`, `rlark stacks` and the Ray token's read never ended."""
    with _hostile_data_plane(_holds_half_a_frame) as access:
        started = time.monotonic()
        result = run_command(access, "c", "demo-ppo-actor-0", ["true"], timeout=0.3)  # type: ignore[arg-type]
        assert time.monotonic() - started < 4
        assert result.exit_code is None


@pytest.mark.parametrize("send", [_endless_fragments, _endless_status, _a_frame_of_a_terabyte],
                         ids=["fragments-without-end", "status-without-end", "frame-of-a-terabyte"])
def test_frames_of_any_size_are_read_within_a_memory_bound(send):
    """One message of endless continuation frames was joined whole before a byte was taken (64 MiB held, and
    joined by repeated concatenation), the status channel kept all it was sent, and a frame claiming a
    terabyte was read until it ended, whatever max_output said."""
    tracemalloc.start()
    try:
        with _hostile_data_plane(send) as access:
            started = time.monotonic()
            try:
                result = run_command(access, "c", "demo-ppo-actor-0", ["true"], timeout=0.5,  # type: ignore[arg-type]
                                     max_output=1 << 20)
            except ExecFailed as exc:
                assert "\n" not in str(exc)
            else:
                assert result.exit_code is None and len(result.stdout) <= 1 << 20
            assert time.monotonic() - started < 4
            peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 16 << 20, f"{peak >> 20} MiB held"


@pytest.mark.parametrize("status", [302, 307])
def test_an_exec_redirected_elsewhere_is_not_followed_and_sends_no_token_there(status):
    """websocket-client followed up to three redirects of the upgrade, each with the same headers: a data plane
    that answered `302 Location: ws://127.0.0.1:<other port>/` had the bearer token sent to that port (any local
    user's listener, or any host) in clear. rlark follows none and says so on one line."""
    elsewhere = socket.create_server(("127.0.0.1", 0))
    elsewhere.setblocking(False)  # a redirect followed connects there before ExecSession.open returns or raises
    redirecting = socket.create_server(("127.0.0.1", 0))
    location = f"ws://127.0.0.1:{elsewhere.getsockname()[1]}/api/v1/namespaces/x/pods/p/exec"

    def answer() -> None:
        conn, _ = redirecting.accept()
        with conn:
            request = b""
            while b"\r\n\r\n" not in request:
                request += conn.recv(4096)
            conn.sendall(f"HTTP/1.1 {status} Moved\r\nLocation: {location}\r\nContent-Length: 0\r\n\r\n".encode())

    server = threading.Thread(target=answer, daemon=True)
    server.start()
    configuration = k8s.Configuration(host=f"http://127.0.0.1:{redirecting.getsockname()[1]}")
    configuration.api_key = {"BearerToken": "the-operators-token"}
    configuration.api_key_prefix = {"BearerToken": "Bearer"}
    client = k8s.ApiClient(configuration)
    try:
        with pytest.raises(Unreachable) as raised:
            ExecSession.open(client, "demo-ppo-actor-0", ["true"])
        with pytest.raises(BlockingIOError):
            elsewhere.accept()[0].close()  # nothing connected there
    finally:
        server.join(5)
        redirecting.close()
        elsewhere.close()
        client.close()
    assert str(raised.value) == (f"the data plane at {configuration.host} answered exec in pod demo-ppo-actor-0 "
                                 f"with a redirect ({status}): not followed")


def _answers_the_upgrade_with(head: bytes, pace: float = 0.0):
    """A data plane whose answer to the upgrade is a 101 and then `head` again and again (every `pace` s), until the
    connection is shut; what it saw: `sent` (bytes) and `cut` (set once rlark shut the connection)."""
    listener = socket.create_server(("127.0.0.1", 0))
    seen = {"sent": 0, "cut": threading.Event(), "stop": threading.Event()}

    def serve() -> None:
        conn, _ = listener.accept()
        with conn:
            conn.recv(65536)
            try:
                conn.sendall(b"HTTP/1.1 101 Switching Protocols\r\n")
                while not seen["stop"].wait(pace):
                    conn.sendall(head)
                    seen["sent"] += len(head)
            except OSError:
                seen["cut"].set()

    threading.Thread(target=serve, daemon=True).start()
    return listener, seen


@pytest.mark.parametrize("head", [b"x" * 65536, b"X-Header: v\r\n" * 4096], ids=["one-line", "many-lines"])
def test_an_upgrade_answer_without_end_is_read_to_a_bound(head, monkeypatch):
    """issue 33, a sixteenth round: websocket-client read the answer to the exec's upgrade a byte at a time into a
    list, with no bound on its header lines or their length, for the whole connect timeout and on after rlark gave
    up on it: a data plane that sent header bytes without end took rlark to 381 MB in 10 s and 856 MB 15 s later,
    growing for ever (rlark watch's stacks and usage reads, the TUI). The bound is 4 KiB here, not UPGRADE_BYTES'
    64 KiB: websocket-client's byte-at-a-time read of 64 KiB is ~0.25 s of CPU a case."""
    monkeypatch.setattr(podexec, "UPGRADE_BYTES", 4 << 10)
    listener, seen = _answers_the_upgrade_with(head)
    client = k8s.ApiClient(k8s.Configuration(host=f"http://127.0.0.1:{listener.getsockname()[1]}"))
    try:
        started = time.monotonic()
        with pytest.raises(Unreachable) as raised:
            ExecSession.open(client, "demo-ppo-actor-0", ["true"])
        assert time.monotonic() - started < 4
    finally:
        seen["stop"].set()
        listener.close()
        client.close()
    assert str(raised.value) == (f"cannot reach the data plane at {client.configuration.host}: its answer to the "
                                 "upgrade is longer than 4 KiB")


def test_an_upgrade_given_up_on_is_hung_up_on(monkeypatch):
    """Past its connect timeout ExecSession.open raised, but the upgrade read on in its thread, for as long as the
    data plane sent (a byte inside each read's timeout): the connection is now shut when it gives up."""
    monkeypatch.setattr(podexec, "CONNECT_TIMEOUT", 0.3)
    listener, seen = _answers_the_upgrade_with(b"x", pace=0.02)
    client = k8s.ApiClient(k8s.Configuration(host=f"http://127.0.0.1:{listener.getsockname()[1]}"))
    try:
        with pytest.raises(Unreachable, match="timed out after 0.3s connecting to the data plane"):
            ExecSession.open(client, "demo-ppo-actor-0", ["true"])
        assert seen["cut"].wait(5)
    finally:
        seen["stop"].set()
        listener.close()
        client.close()


@pytest.mark.parametrize("body", [
    b'{"kind": "Status", "status": "Failure", "reason": "' + b"R" * 30_000 + b'", "message": "' + b"m" * 30_000
    + b'"}', b"t" * 60_000], ids=["status", "text"])
def test_a_refused_upgrade_is_said_in_one_bounded_line(body):
    """Issue 33, errors in one line bounded: a data plane that refused the exec's upgrade (403) with a body of one
    line had it quoted whole as the error's message and reason, up to the 64 KiB the upgrade's answer is read to:
    `rlark exec`, the stacks and Ray token reads, the TUI's notes. An error quotes at most
    errors.MESSAGE_CHARS of an answer's words, the rest counted."""
    from rlark_tui.cluster.errors import MESSAGE_CHARS, Forbidden

    listener = socket.create_server(("127.0.0.1", 0))

    def refuse() -> None:
        conn, _ = listener.accept()
        with conn:
            request = b""
            while b"\r\n\r\n" not in request:
                request += conn.recv(4096)
            conn.sendall(b"HTTP/1.1 403 Forbidden\r\nContent-Length: %d\r\n\r\n" % len(body) + body)

    threading.Thread(target=refuse, daemon=True).start()
    client = k8s.ApiClient(k8s.Configuration(host=f"http://127.0.0.1:{listener.getsockname()[1]}"))
    try:
        with pytest.raises(Forbidden) as raised:
            ExecSession.open(client, "demo-ppo-actor-0", ["true"])
    finally:
        listener.close()
        client.close()
    said = str(raised.value)
    assert said.startswith('forbidden (403): not allowed to exec in pod "demo-ppo-actor-0" in namespace rlark-system '
                           'on the data plane: ')
    assert "\n" not in said and len(said) < MESSAGE_CHARS + 200 and said.endswith(" more characters)"), said[-300:]
    assert len(raised.value.reason) < MESSAGE_CHARS + 50
