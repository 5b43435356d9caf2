"""Local HTTP tunnels to a Job's web ports (the Ray dashboard, TensorBoard, any Pod port): where each goes
(`job_tunnel`) and a byte-relaying forwarder on 127.0.0.1 that adds rlark's credentials (and Ray's token), for
`rlark port-forward` and the TUI.

Only requests whose path starts with the tunnel's random token (`/<token>/...`) pass: other local users of a
shared machine cannot borrow rlark's certificate through it. One request per connection (`Connection: close`
upstream): plain requests and streaming answers are relayed as bytes, a WebSocket upgrade stays open both ways.
With `methods` set (read-only mode: GET and HEAD) other methods, a body and an upgrade get 405, and nothing
the client sends past its one checked head is relayed. asyncio streams and `ssl` only.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import secrets
import ssl
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from rlark_tui.cluster import tls as shared_tls
from rlark_tui.cluster.errors import Unreachable
from rlark_tui.cluster.http import Http, seg
from rlark_tui.errors import RlarkError, UsageError
from rlark_tui.model.objects import Job
from rlark_tui.text.parse import ascii_int
from rlark_tui.text.sinks import one_line, utf8

if TYPE_CHECKING:
    from rlark_tui.cluster.access import ClusterAccess
    from rlark_tui.raydash.client import RayDashboard

HEAD_LIMIT = 64 * 1024
HEAD_SECONDS = 10.0
"""A connection that has not sent its request head this long is closed: until its token is read it may be any
local user's."""
MAX_WAITING = 64
"""Connections waiting for their request head at once; past it a new one is closed at once, so another local
user's thousands of silent connections cannot take every file descriptor of the operator's rlark."""
CHUNK = 64 * 1024
ANSWER_HEAD_LIMIT = 256 * 1024
"""The bytes of an upstream's answer head (its status line and headers), read to scope its cookies."""
MAX_COOKIE_NAMES = 256
"""Cookie names a tunnel remembers its upstream set; past them a new name is kept by the browser, never sent up."""
READ_ONLY_METHODS = frozenset({"GET", "HEAD"})
LoopHandler = Callable[[asyncio.AbstractEventLoop, dict[str, Any]], object]
"""An event loop's exception handler (`loop.set_exception_handler`)."""
_DROPPED = frozenset({"host", "connection", "keep-alive", "proxy-connection", "authorization", "x-ray-authorization"})


@dataclass(frozen=True)
class Upstream:
    """Where a tunnel's requests go: scheme, host, port, path prefix, TLS and the headers that authenticate."""

    host: str
    port: int
    prefix: str
    tls: ssl.SSLContext | None
    headers: dict[str, str] = field(default_factory=dict)
    server_hostname: str | None = None

    @classmethod
    def of(cls, http: Http) -> Upstream:
        """The base URL of an Http with its client's TLS (CA, client certificate) and bearer token."""
        url = urlsplit(http.base)
        https = url.scheme == "https"
        tls, headers, name = None, {}, None
        client = http.api_client
        conf = client.configuration if client is not None else None
        shared = shared_tls.context_of(client) if client is not None else http.ssl_context
        if https and shared is not None:
            tls = shared
            name = (conf.tls_server_name if conf is not None else None) or url.hostname
        elif https:
            tls = ssl.create_default_context(cafile=conf.ssl_ca_cert if conf is not None else None)
            if conf is not None and conf.cert_file:
                tls.load_cert_chain(conf.cert_file, conf.key_file)
            if conf is not None and not conf.verify_ssl:
                tls.check_hostname = False
                tls.verify_mode = ssl.CERT_NONE
            name = (conf.tls_server_name if conf is not None else None) or url.hostname
        if conf is not None:
            bearer = conf.auth_settings().get("BearerToken")
            if bearer and bearer.get("value"):
                headers["Authorization"] = bearer["value"]
        headers.update(http.headers)
        return cls(url.hostname or "127.0.0.1", url.port or (443 if https else 80), url.path.rstrip("/"), tls,
                   headers, name)


def job_tunnel(access: ClusterAccess, job: Job, target: str, **options: Any) -> Tunnel:
    """A Tunnel (not yet listening; `options` are Tunnel's) to `target` of `job`: the Ray dashboard (`ray_tunnel`),
    the gateway's TensorBoard route of the Header Task, or a port of the Header Task's Pod through rlark-server's
    `/api/taskproxy/<task>:<port>`; one line when there is no route."""
    head = job.head_task
    if head is None:
        raise UsageError(f"job {job.name} has no Header role, so no Header Pod to forward to")
    if target == "ray" or target == "8265":
        dashboard = access.ray_dashboard(job)
        if dashboard is None:
            raise Unreachable(f"no route to the Ray dashboard of {job.name} — see `rlark config`", "config")
        return ray_tunnel(dashboard, **options)
    if target == "tensorboard":
        gateway = access.gateway_http()
        if gateway is None:
            raise Unreachable("TensorBoard goes through the gateway, and none is configured — see `rlark config`",
                              "config")
        return Tunnel(Upstream.of(gateway.sibling(
            f"{gateway.base}/api/v1/rlinf.io/v1alpha1/tasks/{seg(job.head_task_name)}/tensorboard",
            f"TensorBoard of {job.name} (gateway)")), **options)
    if (port := ascii_int(target)) is not None:
        if not 0 < port < 65536:
            raise UsageError(f"port {target} is not a TCP port")
        proxy = access.task_proxy(job.head_task_name, port, f"port {port} of {job.name}'s Header Pod (rlark-server)")
        if proxy is None:
            raise Unreachable(f"port {port} of a Pod is reached through rlark-server, which is not configured or "
                              "found — see `rlark config`", "config")
        return Tunnel(Upstream.of(proxy), **options)
    raise UsageError(f"unknown target {target!r}: use ray, tensorboard or a port number")


def ray_tunnel(dashboard: RayDashboard, **options: Any) -> Tunnel:
    """A Tunnel to a Ray dashboard carrying Ray's token in `X-Ray-Authorization` when Ray wants one, so the user's
    browser needs none. A dashboard that does not answer yet (Ray still starting in its Header Pod) cannot say
    whether it wants one: until it has, each new connection asks again (RayDashboard.token_settled), so a tunnel
    opened before Ray was up carries the token once Ray asks for it instead of relaying Ray's 401 for ever."""

    def settled() -> Upstream | None:
        http = dashboard.authenticated_http()
        return Upstream.of(http) if dashboard.token_settled else None

    upstream = Upstream.of(dashboard.authenticated_http())
    return Tunnel(upstream, refresh=None if dashboard.token_settled else settled, **options)


class Tunnel:
    """One listening forwarder; `start()` serves it on a thread of its own until `stop()`."""

    def __init__(self, upstream: Upstream, *, local_port: int = 0, methods: frozenset[str] | None = None,
                 name: str = "", refresh: Callable[[], Upstream | None] | None = None,
                 head_seconds: float = HEAD_SECONDS) -> None:
        self.upstream = upstream
        self.head_seconds = head_seconds
        self._waiting = 0
        """Connections whose request head is still awaited (counted on the tunnel's loop only)."""
        self._refresh = refresh
        """While set, asked again (on a worker thread) before each connection is relayed: the Upstream once the
        route is settled (it then replaces `upstream` and is no longer asked), None while it is not."""
        self.token = secrets.token_urlsafe(18)
        self.cookie_names: set[str] = set()
        """The cookies this tunnel's upstream set through it: the only ones of the browser's it sends up."""
        self.methods = methods
        self.name = name
        self.local_port = local_port
        self._server: asyncio.AbstractServer | None = None
        self._connections: set[asyncio.Task[object]] = set()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.local_port}/{self.token}/"

    async def listen(self) -> asyncio.Server:
        server = self._server = await asyncio.start_server(self._serve, "127.0.0.1", self.local_port,
                                                           limit=HEAD_LIMIT)
        self.local_port = server.sockets[0].getsockname()[1]
        return server

    async def serve_forever(self) -> None:
        server = self._server if self._server is not None else await self.listen()
        async with server:
            await server.serve_forever()

    async def aclose(self) -> None:
        """Stop listening and end every open connection (a relay, a browser's idle keep-alive) now."""
        if self._server is not None:
            self._server.close()
        connections = list(self._connections)
        for task in connections:
            task.cancel()
        await asyncio.gather(*connections, return_exceptions=True)

    def start(self, loop_handler: LoopHandler | None = None) -> Tunnel:
        """Listen now (errors raise here), then serve on a daemon thread, its event loop's own. `loop_handler`: that
        loop's exception handler (the TUI's crash.Teller: a bug in a connection's task, which asyncio logged with its
        traceback and message on stderr, is one line naming a masked report)."""
        listened = threading.Event()
        failure: list[BaseException] = []

        def main() -> None:
            loop = asyncio.new_event_loop()
            if loop_handler is not None:
                loop.set_exception_handler(loop_handler)
            self._loop = loop
            try:
                loop.run_until_complete(self.listen())
            except OSError as exc:
                failure.append(exc)
                listened.set()
                loop.close()
                return
            listened.set()
            with contextlib.suppress(asyncio.CancelledError):
                loop.run_until_complete(self.serve_forever())
            loop.close()

        self._thread = threading.Thread(target=main, name=f"tunnel {self.name}", daemon=True)
        self._thread.start()
        listened.wait()
        if failure:
            raise failure[0]
        return self

    def stop(self) -> None:
        if self._loop is not None and self._server is not None and not self._loop.is_closed():
            with contextlib.suppress(RuntimeError):
                self._loop.call_soon_threadsafe(self._server.close)
                for task in asyncio.all_tasks(self._loop):
                    self._loop.call_soon_threadsafe(task.cancel)
        if self._thread is not None:
            self._thread.join(5)

    # ----- one connection -----
    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._connections.add(task)
        try:
            if self._waiting >= MAX_WAITING:
                return
            self._waiting += 1
            try:
                head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), self.head_seconds)
            except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, TimeoutError):
                return
            finally:
                self._waiting -= 1
            request = _parse_head(head)
            if request is None:
                await _answer(writer, 400, "bad request")
                return
            method, target, headers = request
            token, rest = _split_token(target)
            if not hmac.compare_digest(token.encode(), self.token.encode()):
                await _answer(writer, 403, "this tunnel needs its token in the path: use the URL rlark printed")
                return
            if self.methods is not None and (method not in self.methods or _more_than_a_head(headers)):
                await _answer(writer, 405, "read-only mode: this tunnel passes only GET and HEAD, without a body or "
                                           "an upgrade")
                return
            if self._refresh is not None:
                settled = await asyncio.get_running_loop().run_in_executor(None, self._refresh)
                if settled is not None:
                    self.upstream, self._refresh = settled, None
            await self._relay(reader, writer, method, self.upstream.prefix + rest, headers)
        except (ConnectionError, ssl.SSLError, OSError, UnicodeError, RlarkError) as exc:
            # UnicodeError: a host name no socket takes (a lone surrogate, a byte undecodable) raised out of the
            # resolver, a traceback on the terminal and no answer at all; RlarkError: a route settled at this
            # request (_refresh) that cannot be (Ray wants a token rlark cannot read: TokenUnavailable)
            with contextlib.suppress(Exception):
                await _answer(writer, 502, f"upstream {self.upstream.host}:{self.upstream.port}: {exc}")
        except asyncio.CancelledError:
            pass  # the tunnel closes (aclose): the connection ends here, not as a traceback from asyncio's streams
        finally:
            self._connections.discard(task)
            with contextlib.suppress(Exception):
                writer.close()

    async def _relay(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, method: str, path: str, headers: list[tuple[str, str]]) -> None:
        up = self.upstream
        upgrade = any(k.lower() == "upgrade" for k, _ in headers)
        lines = [f"{method} {path} HTTP/1.1", f"Host: {up.host}:{up.port}"]
        lines += [f"{k}: {v}" for k, v in headers if k.lower() not in _DROPPED and k.lower() != "cookie"]
        if cookies := own_cookies(headers, self.cookie_names):
            lines.append(f"Cookie: {cookies}")
        lines += [f"{k}: {v}" for k, v in up.headers.items()]
        lines.append("Connection: Upgrade" if upgrade else "Connection: close")
        up_reader, up_writer = await asyncio.open_connection(up.host, up.port, ssl=up.tls,
                                                             server_hostname=up.server_hostname if up.tls else None,
                                                             limit=ANSWER_HEAD_LIMIT)
        try:
            up_writer.write(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1"))
            await up_writer.drain()
            # read-only: the checked head is all that goes up, so no second request rides behind it
            outbound = asyncio.ensure_future(_pipe(reader, up_writer, half_close=not up.tls)) \
                if self.methods is None else None
            if await self._answer_heads(up_reader, writer):
                await _pipe(up_reader, writer)
            if outbound is not None:
                outbound.cancel()
        finally:
            with contextlib.suppress(Exception):
                up_writer.close()


    async def _answer_heads(self, up_reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bool:
        """Relay the upstream's answer heads (a 1xx's, then the answer's), each cookie it sets scoped to this
        tunnel (`scoped_cookie`); False, with a 502 in its place, when the upstream sends no head within
        ANSWER_HEAD_LIMIT bytes: a head relayed unread would set cookies for every tunnel."""
        while True:
            try:
                head = await up_reader.readuntil(b"\r\n\r\n")
            except (asyncio.IncompleteReadError, asyncio.LimitOverrunError):
                await _answer(writer, 502, f"upstream {self.upstream.host}:{self.upstream.port}: no HTTP answer head "
                                           f"within {ANSWER_HEAD_LIMIT // 1024} KiB")
                return False
            # a browser ends a header line at a bare LF too: a Set-Cookie behind one is scoped like any other
            lines = [line.removesuffix(b"\r") for line in head[:-4].split(b"\n")]
            kept = [lines[0]]
            for line in lines[1:]:
                if b"\r" in line:
                    continue  # a bare CR: where a browser ends the line is its own to say
                name, colon, value = line.partition(b":")
                if colon and name.strip().lower() == b"set-cookie":
                    line = b"Set-Cookie: " + self.scoped_cookie(value.strip().decode("latin-1")).encode("latin-1")
                kept.append(line)
            writer.write(b"\r\n".join(kept) + b"\r\n\r\n")
            await writer.drain()
            status = lines[0].split(b" ", 2)
            if not (len(status) > 1 and status[1].startswith(b"1") and status[1] != b"101"):
                return True

    def scoped_cookie(self, cookie: str) -> str:
        """An upstream's Set-Cookie as this tunnel passes it to the browser: its Path under the tunnel's token
        (`/<token>` and the path below the upstream's prefix), its Domain dropped, so the browser sends it only to
        this tunnel (cookies ignore the port: every tunnel on 127.0.0.1 shares the browser's jar); its name is
        remembered, as one this tunnel's upstream set."""
        pair, *attributes = cookie.split(";")
        name = pair.partition("=")[0].strip()
        if name and (name in self.cookie_names or len(self.cookie_names) < MAX_COOKIE_NAMES):
            self.cookie_names.add(name)
        path = "/"
        kept = [pair.strip()]
        for attribute in attributes:
            key, _, value = attribute.strip().partition("=")
            if key.lower() == "path":
                path = value.strip() if value.strip().startswith("/") else "/"
            elif key.lower() != "domain" and attribute.strip():
                kept.append(attribute.strip())
        prefix = self.upstream.prefix
        if prefix and (path == prefix or path.startswith(prefix + "/")):
            path = path[len(prefix):] or "/"
        return "; ".join([*kept, f"Path=/{self.token}{path}"])


def own_cookies(headers: list[tuple[str, str]], names: set[str]) -> str:
    """The browser's cookies a tunnel sends up: those named as its upstream named cookies it set through it. Any
    other is another tunnel's (another Job's dashboard's session), or one a page served through another tunnel set
    for 127.0.0.1 by script to ride along to this upstream."""
    pairs = [pair.strip() for name, value in headers if name.lower() == "cookie" for pair in value.split(";")]
    return "; ".join(pair for pair in pairs if pair and pair.partition("=")[0].strip() in names)


def _more_than_a_head(headers: list[tuple[str, str]]) -> bool:
    """The request says a body or an upgrade follows its head: bytes a read-only tunnel would relay unchecked."""
    for name, value in headers:
        key = name.lower()
        if key in ("upgrade", "transfer-encoding") or key == "content-length" and value != "0":
            return True
    return False


def _split_token(target: str) -> tuple[str, str]:
    """(first path segment, the rest of the target starting with `/` or `?`) of `/<token>/rest`."""
    body = target[1:] if target.startswith("/") else ""
    cut = min((i for i in (body.find("/"), body.find("?")) if i >= 0), default=len(body))
    rest = body[cut:]
    return body[:cut], rest if rest.startswith("/") else "/" + rest


def _parse_head(head: bytes) -> tuple[str, str, list[tuple[str, str]]] | None:
    try:
        text = head.decode("latin-1")
    except UnicodeDecodeError:
        return None
    lines = text.split("\r\n")
    if any(ch < " " and ch != "\t" or ch == "\x7f" for line in lines for ch in line):
        return None  # a bare CR or LF (or NUL) that a server upstream may take as a line's end, behind the checks
    first, *rest = lines
    parts = first.split(" ")
    if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
        return None
    headers = []
    for line in rest:
        if not line:
            continue
        name, colon, value = line.partition(":")
        if not colon:
            return None
        headers.append((name.strip(), value.strip()))
    return parts[0], parts[1], headers


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, half_close: bool = True) -> None:
    with contextlib.suppress(ConnectionError, OSError, ssl.SSLError):
        while data := await reader.read(CHUNK):
            writer.write(data)
            await writer.drain()
        if half_close and writer.can_write_eof():
            writer.write_eof()


async def _answer(writer: asyncio.StreamWriter, status: int, message: str) -> None:
    reasons = {400: "Bad Request", 403: "Forbidden", 405: "Method Not Allowed", 502: "Bad Gateway"}
    body = utf8(one_line(message) + "\n")
    writer.write(f"HTTP/1.1 {status} {reasons.get(status, 'Error')}\r\nContent-Type: text/plain\r\n"
                 f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode() + body)
    await writer.drain()
