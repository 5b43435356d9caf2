"""A read-only tunnel (--readonly: GET and HEAD) relays nothing past its one checked request head (issue 33, a
twelfth round, the token's holder or a page served through the tunnel): the client's bytes after the head were
piped upstream as they came, so a GET whose 'body' was a second request, or a GET with an Upgrade header (sent on
as 'Connection: Upgrade', which keeps an aiohttp server such as Ray's dashboard reading), put a POST past the
method check; a WebSocket, a channel both ways (a Pod port's terminal), passed as a GET. Such a request is refused
in one line and the upstream (a real 127.0.0.1 server here) sees only the GET."""

from __future__ import annotations

import socket
import socketserver
import threading

import pytest

from rlark_tui.cluster.tunnel import READ_ONLY_METHODS, Tunnel, Upstream


class Recorder(socketserver.BaseRequestHandler):
    """Answers the first bytes with a 200 and its end, then records every byte the connection sends until it ends."""

    def handle(self) -> None:
        self.request.settimeout(5)
        got = b""
        try:
            while data := self.request.recv(65536):
                if not got:
                    self.request.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
                    self.request.shutdown(socket.SHUT_WR)
                got += data
        except OSError:
            pass
        self.server.seen.append(got)  # type: ignore[attr-defined]


@pytest.fixture
def upstream():
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Recorder)
    server.daemon_threads = True
    server.seen = []  # type: ignore[attr-defined]
    threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
    tunnel = Tunnel(Upstream("127.0.0.1", server.server_address[1], "", None), methods=READ_ONLY_METHODS).start()
    yield tunnel, server.seen
    tunnel.stop()
    server.shutdown()
    server.server_close()


def exchange(tunnel: Tunnel, data: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", tunnel.local_port), timeout=5) as sock:
        sock.sendall(data)
        sock.shutdown(socket.SHUT_WR)
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
        return answer


SMUGGLED = b"POST /api/jobs/ HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}"


@pytest.mark.parametrize("head", [
    b"GET /%s/ HTTP/1.1\r\nHost: x\r\nUpgrade: h2c\r\n\r\n",
    b"GET /%s/ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: "
    b"dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n",
    b"GET /%s/ HTTP/1.1\r\nHost: x\r\nContent-Length: " + str(len(SMUGGLED)).encode() + b"\r\n\r\n",
    b"GET /%s/ HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n",
], ids=["upgrade", "websocket", "content-length", "chunked"])
def test_a_read_only_tunnel_passes_no_second_request_or_upgrade(upstream, head):
    tunnel, seen = upstream
    answer = exchange(tunnel, head % tunnel.token.encode() + SMUGGLED)
    assert b"POST" not in b"".join(seen)
    assert answer.startswith(b"HTTP/1.1 405 "), answer
    assert answer.endswith(b"read-only mode: this tunnel passes only GET and HEAD, without a body or an upgrade\n")


def test_a_read_only_tunnel_relays_a_plain_get_and_nothing_after_it(upstream):
    tunnel, seen = upstream
    answer = exchange(tunnel, b"GET /%s/x HTTP/1.1\r\nHost: x\r\n\r\n" % tunnel.token.encode() + SMUGGLED)
    assert answer.startswith(b"HTTP/1.1 200 OK")
    assert b"POST" not in b"".join(seen)


@pytest.mark.parametrize("head", [
    b"GET /%s/ HTTP/1.1\r\nX-A: a\n\nPOST /api/jobs/ HTTP/1.1\nContent-Length: 2\r\n\r\n",
    b"GET /%s/ HTTP/1.1\r\nX-A: a\nUpgrade: h2c\r\n\r\n",
    b"GET /%s/ HTTP/1.1\r\nX-A: a\rContent-Length: 60\r\n\r\n",
    b"GET /%s/ HTTP/1.1\r\nX-A: a\x00\r\n\r\n",
], ids=["bare-lf-request", "bare-lf-upgrade", "bare-cr", "nul"])
def test_a_head_with_a_bare_line_break_is_refused_not_relayed(upstream, head):
    tunnel, seen = upstream
    answer = exchange(tunnel, head % tunnel.token.encode() + SMUGGLED)
    assert answer.startswith(b"HTTP/1.1 400 "), answer
    assert seen == []
