"""What a tunnel answers the browser (issue 33, left open by the fifteenth round, a tunnel's upstream): the 502 that
says why the upstream failed was encoded strictly, and an upstream name no socket takes raised out of the resolver,
so a lone surrogate or an undecodable byte there ended the connection with no answer and printed a traceback on the
terminal; and every tunnel on 127.0.0.1 shares the browser's cookies (they ignore the port), which each passed
up and down as they came."""

from __future__ import annotations

import socket
from urllib.parse import urlsplit

import pytest

from rlark_tui.cluster.tunnel import Tunnel, Upstream
from tests import loopback


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


def _upstream(seen: list[str], cookies: list[str]) -> type:
    """A dashboard that records the Cookie header it is sent and answers with `cookies` (raw header lines)."""
    class Dashboard(loopback.QuietHandler):
        def do_GET(self) -> None:
            seen.append(self.headers.get("Cookie") or "")
            body = b"ok"
            self.wfile.write(b"HTTP/1.1 200 OK\r\n" + b"".join(c.encode() + b"\r\n" for c in cookies) +
                             b"Content-Length: 2\r\nConnection: close\r\n\r\n" + body)
    return Dashboard


def _get(tunnel: Tunnel, cookie: str) -> list[bytes]:
    answer = exchange(tunnel, f"GET /{tunnel.token}/ HTTP/1.1\r\nHost: x\r\nCookie: {cookie}\r\n\r\n".encode())
    head, _, body = answer.partition(b"\r\n\r\n")
    assert body == b"ok", answer
    return [line.rstrip(b"\r") for line in head.split(b"\n") if b"cookie" in line.lower()]


def test_a_tunnel_keeps_its_upstreams_cookies_to_itself_and_sends_up_no_other():
    """Two tunnels, to a hostile Job's dashboard and to another Job's: the hostile one set cookies for the whole of
    127.0.0.1 (Path=/, a Domain, one behind a bare LF a browser ends a line at), which the browser then sent to
    the other tunnel and that tunnel to its upstream; and the other Job's session cookie went, by the same jar, up
    the hostile tunnel. Each Set-Cookie is scoped to its tunnel's token path, and only the names its own upstream
    set go up."""
    other_seen: list[str] = []
    hostile = _upstream([], ["Set-Cookie: session=forged; Path=/; Domain=127.0.0.1",
                                       "X-A: a\nSet-Cookie: tossed=1; Path=/"])
    other = _upstream(other_seen, ["Set-Cookie: session=real; Path=/api; HttpOnly"])
    with loopback.serving(hostile) as hostile_url, loopback.serving(other) as other_url:
        tunnels = [Tunnel(Upstream("127.0.0.1", urlsplit(url).port or 0, "", None)).start()
                   for url in (hostile_url, other_url)]
        try:
            first, second = tunnels
            assert _get(first, "") == [
                f"Set-Cookie: session=forged; Path=/{first.token}/".encode(),
                f"Set-Cookie: tossed=1; Path=/{first.token}/".encode()]
            assert _get(second, "tossed=1; session=forged") == [
                f"Set-Cookie: session=real; HttpOnly; Path=/{second.token}/api".encode()]
            _get(second, "session=real; tossed=1")
        finally:
            for tunnel in tunnels:
                tunnel.stop()
    assert other_seen == ["", "session=real"]  # the cookies the hostile one set never go up the other tunnel


def test_a_route_that_cannot_be_settled_is_answered_502_in_one_line(capfd):
    """Issue 33, a twenty-second round (tunnels' threads): a tunnel opened before its Ray dashboard said whether it
    wants a token settles its route at a browser's next request (`Tunnel._refresh`, on a worker thread); a Ray that
    then wants a token rlark cannot read (TokenUnavailable: the Header Pod refuses the exec, or holds none) raised out
    of the connection's task: the browser's connection ended with no answer, and asyncio's 'Unhandled exception in
    client_connected_cb' with the traceback and the message went to the tunnel loop's stderr. It is a 502, one line."""
    from rlark_tui.raydash.token import TokenUnavailable

    def settled():
        raise TokenUnavailable("Ray wants a token and the Header Pod holds none \x1b]52;c;cHduZWQ=\x07")

    tunnel = Tunnel(Upstream("127.0.0.1", 9, "", None), refresh=settled).start()
    try:
        answer = exchange(tunnel, f"GET /{tunnel.token}/ HTTP/1.1\r\nHost: x\r\n\r\n".encode())
    finally:
        tunnel.stop()
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 502 Bad Gateway\r\n"), answer
    assert body.decode("utf-8") == "upstream 127.0.0.1:9: Ray wants a token and the Header Pod holds none \n"
    assert "Traceback" not in capfd.readouterr().err
