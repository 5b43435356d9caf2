"""What a tunnel answers the browser itself (issue 33, left open by the fifteenth round, a tunnel's upstream): the
502 that says why the upstream failed was encoded strictly, and an upstream name no socket takes raised out of the
resolver, so a lone surrogate or an undecodable byte there ended the connection with no answer and printed a
traceback on the terminal. The answer is one line, its text as UTF-8 (sinks.utf8)."""

from __future__ import annotations

import socket

import pytest

from rlark_tui.cluster.tunnel import Tunnel, Upstream


def exchange(tunnel: Tunnel, request: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", tunnel.local_port), timeout=5) as sock:
        sock.sendall(request)
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
        return answer


@pytest.mark.parametrize("host", ["x\ud800y", "\udcff.invalid"])
def test_an_upstream_no_socket_takes_is_answered_502_in_one_line(host, capfd):
    tunnel = Tunnel(Upstream(host, 9, "", None)).start()
    try:
        answer = exchange(tunnel, f"GET /{tunnel.token}/ HTTP/1.1\r\nHost: x\r\n\r\n".encode())
    finally:
        tunnel.stop()
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 502 Bad Gateway\r\n")
    text = body.decode("utf-8")
    assert text.startswith(f"upstream {host.encode('unicode_escape').decode()}:9: ") and text.count("\n") == 1
    assert "Traceback" not in capfd.readouterr().err
