"""A hostile data plane's exec WebSocket on 127.0.0.1: it upgrades `pods/<pod>/exec` as a data plane does and
then sends what a test says, read by the real `kubernetes` client's WebSocket (tests/pod/test_exec_frames.py,
tests/pod/test_exec_status.py)."""

from __future__ import annotations

import base64
import hashlib
import socket
import struct
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import SimpleNamespace

from kubernetes import client as k8s

_GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"


def frame(payload: bytes, *, opcode: int = 2, fin: bool = True, claimed: int | None = None) -> bytes:
    length = len(payload) if claimed is None else claimed
    head = bytes([(0x80 if fin else 0) | opcode])
    if length < 126:
        head += bytes([length])
    elif length < 1 << 16:
        head += bytes([126]) + struct.pack("!H", length)
    else:
        head += bytes([127]) + struct.pack("!Q", length)
    return head + payload


def _upgrade(conn: socket.socket) -> None:
    request = b""
    while b"\r\n\r\n" not in request:
        request += conn.recv(4096)
    key = next(line.split(b":", 1)[1].strip() for line in request.split(b"\r\n")
               if line.lower().startswith(b"sec-websocket-key:"))
    accept = base64.b64encode(hashlib.sha1(key + _GUID).digest())
    conn.sendall(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                 b"Sec-WebSocket-Accept: " + accept + b"\r\nSec-WebSocket-Protocol: v4.channel.k8s.io\r\n\r\n")


@contextmanager
def hostile_data_plane(send: Callable[[socket.socket, threading.Event], None]) -> Iterator[SimpleNamespace]:
    """A data plane on 127.0.0.1 whose exec answers with `send(conn, stop)` once upgraded; what rlark's
    run_command is given to reach it (`.data_plane_api_client(cluster)`, a real ApiClient)."""
    listener = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def serve() -> None:
        conn, _ = listener.accept()
        with conn:
            _upgrade(conn)
            try:
                send(conn, stop)
            except OSError:
                pass  # rlark hung up: what a bounded reader does
            stop.wait(30)

    server = threading.Thread(target=serve, daemon=True)
    server.start()
    client = k8s.ApiClient(k8s.Configuration(host=f"http://127.0.0.1:{listener.getsockname()[1]}"))
    try:
        yield SimpleNamespace(data_plane_api_client=lambda _cluster: client, server_problem=None)
    finally:
        stop.set()
        server.join(5)
        listener.close()
        client.close()


