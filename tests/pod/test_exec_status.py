"""The exec status channel: what a command's end says when the runtime's answer is not a Status object (a
hostile data plane on 127.0.0.1, tests/pod/hostile_exec.py)."""

import os
import socket
import threading

import pytest

from rlark_tui.cluster.podexec import STATUS, ExecFailed, ExecSession, relay
from tests.pod.hostile_exec import frame, hostile_data_plane


def _ends_with(status: bytes):
    def send(conn: socket.socket, _stop: threading.Event) -> None:
        conn.sendall(frame(bytes([STATUS]) + status) + frame(b"", opcode=8))
    return send


def _read_to_its_end(status: bytes) -> ExecSession:
    with hostile_data_plane(_ends_with(status)) as access:
        session = ExecSession.open(access.data_plane_api_client("c"), "demo-ppo-actor-0", ["true"])
        try:
            while session.is_open:
                assert session.read(timeout=1) == []
        finally:
            session.close()
    return session


def test_a_status_that_is_not_an_object_fails_the_exec_with_its_text():
    session = _read_to_its_end(b'["odd"]')
    with pytest.raises(ExecFailed, match=r'exec in pod demo-ppo-actor-0 failed: \["odd"\]'):
        session.exit_code()


@pytest.mark.parametrize("status", [
    b'{"status": "Failure", "reason": "NonZeroExitCode", "details": {"causes": [{"reason": "ExitCode", "message": 1e400}]}}',
    b'{"status": "Failure", "reason": "NonZeroExitCode", "details": ["causes"], "message": "odd"}',
], ids=["exit-code-inf", "details-list"])
def test_a_status_of_the_wrong_shape_fails_the_exec_in_one_line(status):
    """The status channel is the data plane's: an exit code of 1e400 (inf once decoded) raised OverflowError past
    the int() the code is read with, and details that are a list AttributeError: `rlark exec` crashed."""
    session = _read_to_its_end(status)
    with pytest.raises(ExecFailed, match=r"^exec in pod demo-ppo-actor-0 failed: "):
        session.exit_code()


@pytest.mark.parametrize("code, returned", [(256, 1), (257, 1), (255, 255)])
def test_an_exit_code_past_255_is_a_failure_and_said_in_one_line(code, returned):
    """The exit code is the data plane's number: 256, passed on as rlark exec's own, was exit status 0 (the kernel
    keeps 8 bits), so `rlark exec JOB -- check && deploy` went on after a failure."""
    status = b'{"status": "Failure", "reason": "NonZeroExitCode", "details": {"causes": [{"reason": "ExitCode", ' \
             b'"message": "%d"}]}}' % code
    with hostile_data_plane(_ends_with(status)) as access:
        session = ExecSession.open(access.data_plane_api_client("c"), "demo-ppo-actor-0", ["true"])
        out_read, out_write = os.pipe()
        err_read, err_write = os.pipe()
        try:
            assert relay(session, stdin_fd=None, stdout_fd=out_write, stderr_fd=err_write, tty=False) == returned
        finally:
            os.close(out_write)
            os.close(err_write)
            with os.fdopen(out_read, "rb") as out, os.fdopen(err_read, "rb") as err:
                said = (out.read(), err.read())
    assert said == (b"", b"" if code == returned else (
        b"rlark: the command in demo-ppo-actor-0 ended with exit code %d, which no exit status holds (0..255): "
        b"exit code 1\n" % code))


def test_a_status_message_of_many_long_lines_fails_the_exec_in_one_bounded_line():
    """Issue 33, errors in one line bounded: the status channel's message was quoted as it came (up to the 64 KiB
    kept of the channel), its line breaks too, so one failed exec was many lines of `rlark exec`'s error or the
    stacks' notes. It is one line of at most errors.MESSAGE_CHARS of the message (each break as its escape, `\\n`),
    the rest counted."""
    from rlark_tui.cluster.errors import MESSAGE_CHARS

    session = _read_to_its_end(b'{"status": "Failure", "message": "' + b"oops\\n" * 10_000 + b'"}')
    with pytest.raises(ExecFailed) as raised:
        session.exit_code()
    said = str(raised.value)
    assert said.startswith("exec in pod demo-ppo-actor-0 failed: oops\\noops")
    assert "\n" not in said and len(said) < 2 * MESSAGE_CHARS + 100 and said.endswith(" more characters)"), said[-300:]
