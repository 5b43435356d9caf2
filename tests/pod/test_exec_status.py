"""The exec status channel: what a command's end says when the runtime's answer is not a Status object."""

import socket

import pytest
from websocket import ABNF

from rlark_tui.cluster.podexec import STATUS, ExecFailed, ExecSession


class _Frame:
    def __init__(self, data: bytes) -> None:
        self.data = data


class _WebSocket:
    """The websocket-client side ExecSession reads: the given frames in order, always readable."""

    def __init__(self, frames: list[tuple[int, bytes]]) -> None:
        self.sock, self._peer = socket.socketpair()
        self._peer.send(b"x")
        self.connected = True
        self._frames = frames

    def recv_data_frame(self, control_frame: bool) -> tuple[int, _Frame]:
        opcode, data = self._frames.pop(0)
        return opcode, _Frame(data)


class _Channels:
    subprotocol = "v5.channel.k8s.io"

    def __init__(self, frames: list[tuple[int, bytes]]) -> None:
        self.sock = _WebSocket(frames)

    def write_channel(self, channel: int, data: bytes) -> None:
        pass

    def close_channel(self, channel: int) -> None:
        pass

    def close(self) -> None:
        self.sock.sock.close()
        self.sock._peer.close()


def test_a_status_that_is_not_an_object_fails_the_exec_with_its_text():
    ws = _Channels([(ABNF.OPCODE_BINARY, bytes([STATUS]) + b'["odd"]'), (ABNF.OPCODE_CLOSE, b"")])
    session = ExecSession(ws, "demo-ppo-actor-0")
    try:
        assert session.read(timeout=1) == []
        with pytest.raises(ExecFailed, match=r'exec in pod demo-ppo-actor-0 failed: \["odd"\]'):
            session.exit_code()
    finally:
        session.close()


@pytest.mark.parametrize("status", [
    b'{"status": "Failure", "reason": "NonZeroExitCode", "details": {"causes": [{"reason": "ExitCode", "message": 1e400}]}}',
    b'{"status": "Failure", "reason": "NonZeroExitCode", "details": ["causes"], "message": "odd"}',
], ids=["exit-code-inf", "details-list"])
def test_a_status_of_the_wrong_shape_fails_the_exec_in_one_line(status):
    """The status channel is the data plane's: an exit code of 1e400 (inf once decoded) raised OverflowError past
    the int() the code is read with, and details that are a list AttributeError: `rlark exec` crashed."""
    ws = _Channels([(ABNF.OPCODE_BINARY, bytes([STATUS]) + status), (ABNF.OPCODE_CLOSE, b"")])
    session = ExecSession(ws, "demo-ppo-actor-0")
    try:
        assert session.read(timeout=1) == []
        with pytest.raises(ExecFailed, match=r"^exec in pod demo-ppo-actor-0 failed: "):
            session.exit_code()
    finally:
        session.close()
