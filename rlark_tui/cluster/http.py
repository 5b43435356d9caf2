"""Raw JSON and streaming HTTP over a kubernetes ApiClient (its TLS, auth and host) or a plain URL.

Owns request building, the timeouts, line streaming, and turning every failure into a cluster.errors class.
"""

from __future__ import annotations

import http.client
import io
import json
import socket
import ssl
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from rlark_tui.cluster import tls, transport
from rlark_tui.cluster.errors import (
    ApiError,
    HeadTimeout,
    Request,
    TooLarge,
    TooSlow,
    Unreachable,
    status_error,
    transport_error,
)
from rlark_tui.cluster.transport import (
    BODY_TIMEOUTS,
    CONNECT_TIMEOUT,
    MAX_DEPTH,
    MAX_ERROR_BYTES,
    READ_CHUNK,
    READ_TIMEOUT,
    decode_answer,
    display_url,
    query_string,
    read_bounded,
    read_error_body,
    seg,
    sent_path,
)
from rlark_tui.model.quantity import size_text

if TYPE_CHECKING:
    import urllib3
    from kubernetes import client as k8s

# urllib3 (and the kubernetes client's exceptions) are imported by the first request of an Http, not with this
# module: the lean path (KeptConnection: rlark get, the TUI's first list) never loads it
__all__ = ["CONNECT_TIMEOUT", "READ_TIMEOUT", "MERGE_PATCH", "Http", "KeptConnection", "LineStream", "TailRead",
           "outside", "same_origin", "seg", "tail_bytes", "tail_left_out"]
MERGE_PATCH = "application/merge-patch+json"
MAX_LINE_BYTES = 16 << 20
"""A streamed log line longer than this (a Pod that never writes a newline) is shown cut there, marked, and the
rest of it dropped up to its newline: a follow holds at most this much of one line (a redrawn progress bar of
megabytes still fits)."""
KUBELET_LINE_BYTES = 16 << 10
"""The longest log entry a kubelet serves: the container runtime writes a longer line as entries of 16 KiB
(containerd's `max_container_log_line_size`), and `tailLines` counts entries, so a kubelet's answer to a tail read of
N lines is at most N such entries and their timestamps."""
STAMP_CHARS = len("2006-01-02T15:04:05.000000000Z ")
"""The time and space a kubelet puts before each line with `timestamps=true` (RFC3339Nano, all nine digits)."""
TAIL_LINE_HOLD = sys.getsizeof("\U0001f600" * (KUBELET_LINE_BYTES + STAMP_CHARS))
"""The most one of those entries takes as a str (each character at most 4 bytes, when one is outside the BMP)."""
TAIL_READS = 4
"""The most reads of one tail (TailRead): the first, then larger tailLines while lines longer than
KUBELET_LINE_BYTES made the answer fewer lines than asked."""


def tail_bytes(lines: int) -> int:
    """A tail read's `last_bytes` bound for `lines` lines: the most a real kubelet's answer to it may hold, to the MiB
    above, so only a data plane that answers otherwise (lines of up to MAX_LINE_BYTES) reaches it."""
    return -(-lines * TAIL_LINE_HOLD // 2**20) * 2**20


def tail_left_out(stream: object) -> str:
    """What a tail read's `last_bytes` left out, in one line with the bound, or why it has fewer lines than asked
    (TailRead.short) ('' when neither: an access that lists a bundle's captured lines never leaves one out)."""
    if isinstance(stream, TailRead) and stream.short:
        return stream.short
    if not isinstance(stream, LineStream | TailRead) or not stream.left_out or stream.last_bytes is None:
        return ""
    return (f"its last {stream.kept:,} lines read and {stream.left_out:,} before them left out, to hold at most "
            f"{size_text(stream.last_bytes)} (the read's bound)")


class Http:
    """Requests against one base URL, authenticated like the kubernetes client when it has one."""

    def __init__(self, base: str, api_client: k8s.ApiClient | None = None, source: str = "control plane",
                 headers: dict[str, str] | None = None, ca_certs: str | None = None,
                 ssl_context: ssl.SSLContext | None = None) -> None:
        self.base = base.rstrip("/")
        self.source = source
        self._client = api_client
        self._headers = dict(headers or {})
        self.ssl_context = ssl_context
        """The shared TLS context of a plain (not ApiClient) base, if it has one."""
        self._ca_certs = ca_certs
        self._pool_made: urllib3.PoolManager | None = None
        self._pool_lock = threading.Lock()

    @property
    def _pool(self) -> urllib3.PoolManager:
        """The urllib3 pool of a plain base, made by its first request (one, whichever thread asks first)."""
        with self._pool_lock:
            if self._pool_made is None:
                if self.ssl_context is not None:
                    self._pool_made = tls.pool_manager(self.ssl_context, retries=False)
                else:
                    import urllib3

                    from rlark_tui.cluster import pools
                    self._pool_made = pools.head_bound(urllib3.PoolManager(
                        retries=False, ca_certs=self._ca_certs,
                        cert_reqs="CERT_REQUIRED" if self.base.startswith("https") else None))
            return self._pool_made

    @classmethod
    def for_client(cls, api_client: k8s.ApiClient, source: str) -> Http:
        return cls(api_client.configuration.host, api_client, source)

    @property
    def api_client(self) -> k8s.ApiClient | None:
        return self._client

    @property
    def headers(self) -> dict[str, str]:
        """Headers every request of this base carries (e.g. a Ray dashboard token)."""
        return dict(self._headers)

    def sibling(self, base: str, source: str, headers: dict[str, str] | None = None) -> Http:
        """Another base URL; it shares this client's TLS and credentials only when it has the same origin, else
        only the CA that verifies it."""
        same = _origin(base) == _origin(self.base)
        if self._client is None:
            if same:
                return Http(base, None, source, {**self._headers, **(headers or {})}, ssl_context=self.ssl_context)
            context = tls.server_only(self.ssl_context) if self.ssl_context is not None else None
            return Http(base, None, source, headers, ssl_context=context)
        if same:
            return Http(base, self._client, source, headers)
        context = tls.context_of(self._client)
        if context is not None:
            return Http(base, None, source, headers, ssl_context=tls.server_only(context))
        return Http(base, None, source, headers, ca_certs=self._client.configuration.ssl_ca_cert)

    def json(self, method: str, path: str, req: Request, query: list[tuple[str, str]] | None = None,
             body: object = None, content_type: str | None = None,
             timeout: float = READ_TIMEOUT, headers: dict[str, str] | None = None,
             fields: list[tuple[str, tuple[str, bytes, str]]] | None = None,
             max_bytes: int | None = None, max_depth: int = MAX_DEPTH) -> object:
        """One request; returns the decoded JSON body (transport.decode_json: text when not JSON). `fields` sends a
        multipart form instead of a body: `[(name, (filename, data, mime type))]` (the gateway's storage upload).
        A body larger than `max_bytes` (transport.MAX_ANSWER_BYTES when not given) raises TooLarge, naming it; one
        nested deeper than `max_depth`, Unreachable (transport.decode_answer)."""
        import urllib3

        resp = self._send(method, path, req, query, body, content_type, (CONNECT_TIMEOUT, timeout), headers,
                          fields)
        if not 200 <= resp.status < 300:
            raise status_error(resp.status, _error_body(resp), self._req(req, path))
        try:
            data = read_bounded(resp, self._req(req, path), max_bytes, timeout)
        except (TooLarge, TooSlow):
            resp.close()  # the rest of the body stays unread: the connection is not used again
            raise
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            raise transport_error(exc, self._req(req, path), timeout) from None
        finally:
            resp.release_conn()
        return decode_answer(data, self._req(req, path), max_depth=max_depth)

    def stream(self, path: str, req: Request, query: list[tuple[str, str]] | None = None,
               read_timeout: float | None = None, whole_lines: bool = False, last: int | None = None,
               ends: bool = False, last_bytes: int | None = None, line_chars: int | None = None,
               stamped: bool = False) -> LineStream:
        """A streaming GET (watch, log follow); errors before the body arrive are raised here. `last`: only the
        last that many lines are kept (LineStream), within `last_bytes` when given (alone: the newest lines within
        it), each cut to `line_chars` when given. `ends`: an answer that ends by itself (a log read without follow, a TensorBoard answer), whose lines
        still arriving BODY_TIMEOUTS × `read_timeout` after the read began raise TooSlow, as read_bounded's body
        does."""

        resp = self._send("GET", path, req, query, None, None, (CONNECT_TIMEOUT, read_timeout), None)
        if not 200 <= resp.status < 300:
            raise status_error(resp.status, _error_body(resp), self._req(req, path))
        return LineStream(resp, self._req(req, path), read_timeout, whole_lines, last,
                          within=transport.BODY_TIMEOUTS if ends and read_timeout else None, last_bytes=last_bytes,
                          line_chars=line_chars, stamped=stamped)

    def chunks(self, path: str, req: Request, read_timeout: float = READ_TIMEOUT,
               max_bytes: int | None = None) -> Iterator[bytes]:
        """A GET's body piece by piece (a download read to checksum it), at most `max_bytes` in all
        (transport.MAX_ANSWER_BYTES when not given): past it TooLarge, naming the bound. Errors as `json`'s."""
        import urllib3

        bound = transport.MAX_ANSWER_BYTES if max_bytes is None else max_bytes
        resp = self._send("GET", path, req, None, None, None, (CONNECT_TIMEOUT, read_timeout), None)
        if not 200 <= resp.status < 300:
            raise status_error(resp.status, _error_body(resp), self._req(req, path))
        total, whole = 0, False
        try:
            while chunk := resp.read(READ_CHUNK):
                total += len(chunk)
                if total > bound:
                    raise TooLarge(self._req(req, path), bound)
                yield chunk
            whole = True
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            raise transport_error(exc, self._req(req, path), read_timeout) from None
        finally:
            if not whole:
                resp.close()  # not read to its end: the connection is not used again
            resp.release_conn()

    def _req(self, req: Request, path: str) -> Request:
        return Request(req.verb, req.resource, req.name, req.namespace, req.source or self.source,
                       display_url(self.base))

    def _send(self, method: str, path: str, req: Request, query: list[tuple[str, str]] | None, body: object,
              content_type: str | None, timeout: tuple[float, float | None], extra: dict[str, str] | None,
              fields: list[tuple[str, tuple[str, bytes, str]]] | None = None) -> urllib3.BaseHTTPResponse:
        import urllib3
        from kubernetes.client.exceptions import ApiException, OpenApiException

        path = sent_path(path, self._req(req, path))
        headers = {"Accept": "application/json", **self._headers, **(extra or {})}
        if fields is not None:
            headers["Content-Type"] = "multipart/form-data"  # urllib3 writes it with the boundary
        elif content_type:
            headers["Content-Type"] = content_type
        elif body is not None:
            headers["Content-Type"] = "application/json"
        try:
            if self._client is not None:
                method_, url, hdrs, body_, post = self._client.param_serialize(
                    method=method, resource_path=path, query_params=query or [], header_params=headers,
                    body=body, post_params=fields, auth_settings=["BearerToken"], _host=self.base)
                answer: urllib3.BaseHTTPResponse = self._client.call_api(method_, url, hdrs, body_, post,
                                                                         _request_timeout=timeout).response
                return answer
            url = self.base + path
            if query:
                url += "?" + query_string(query)
            if fields is not None:
                headers.pop("Content-Type")
                return self._pool.request(method, url, fields=fields, headers=headers, preload_content=False,
                                          timeout=urllib3.Timeout(connect=timeout[0], read=timeout[1]),
                                          retries=False)
            payload = json.dumps(body).encode() if body is not None else None
            return self._pool.request(method, url, body=payload, headers=headers, preload_content=False,
                                      timeout=urllib3.Timeout(connect=timeout[0], read=timeout[1]),
                                      retries=False)
        except ApiException as exc:
            raise transport_error(_ApiTransport(exc.reason or str(exc)), self._req(req, path), timeout[1]) from None
        except OpenApiException as exc:
            raise Unreachable(f"bad request to the {self.source}: {exc}", "other") from None
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            raise transport_error(exc, self._req(req, path), timeout[1]) from None


class KeptConnection:
    """One kept-alive connection to the host of a base URL, without a pool or the kubernetes client (the lean path
    of cluster/lean.py): `send` writes a GET at once and returns the call that waits for its answer, so the caller
    works while the server answers. Failures raise as cluster.errors classes; a connection whose answer was not
    read to its end is not used again.

    It is the standard library's http.client (which urllib3 builds on) with the TLS context of cluster/tls.py,
    not urllib3: importing urllib3 costs `rlark get` and the TUI's first list about 85 ms of CPU here, a sixth of
    `rlark get jobs -A` on 5,000 Jobs (get_jobs_ratio, startup_first_list_s; bench/cli_get.py, bench/startup.py).
    """

    def __init__(self, base: str, headers: dict[str, str], ssl_context: ssl.SSLContext | None = None,
                 server_name: str | None = None) -> None:
        parts = urlsplit(base)
        self._host = parts.hostname or ""
        self._port = parts.port or (443 if parts.scheme == "https" else 80)
        self._prefix = parts.path.rstrip("/")
        self._headers = dict(headers)
        self._tls = ssl_context if parts.scheme == "https" else None
        self._server_name = server_name or self._host
        self._conn: http.client.HTTPConnection | None = None

    def send(self, target: str, req: Request, timeout: float) -> Callable[[], tuple[int, bytes]]:
        """GET `target` (path and query below the base); the call returned reads the answer: (status, body), the
        body read to transport.MAX_ANSWER_BYTES (an error answer to its first MAX_ERROR_BYTES)."""
        sent_path(target.partition("?")[0], req)
        conn = self._connection(req)
        try:
            conn.sock.settimeout(timeout)
            conn.request("GET", self._prefix + target, headers=self._headers)
        except (http.client.HTTPException, OSError) as exc:
            self.close()
            raise transport_error(exc, req, timeout) from None

        def answer() -> tuple[int, bytes]:
            whole = False
            try:
                resp = conn.getresponse()
                if 200 <= resp.status < 300:
                    data = read_bounded(resp, req, timeout=timeout)
                else:
                    data = read_error_body(resp)
                whole = resp.isclosed() and not resp.will_close
                return resp.status, data
            except (http.client.HTTPException, OSError) as exc:
                raise transport_error(exc, req, timeout) from None
            finally:
                if not whole:
                    self.close()
        return answer

    def _connection(self, req: Request) -> http.client.HTTPConnection:
        """The kept connection, opened (TCP and TLS handshake within CONNECT_TIMEOUT) when there is none."""
        if self._conn is not None:
            return self._conn
        try:
            sock = socket.create_connection((self._host, self._port), CONNECT_TIMEOUT)
            if self._tls is not None:
                try:
                    sock = self._tls.wrap_socket(sock, server_hostname=self._server_name)
                except BaseException:
                    sock.close()
                    raise
        except (OSError, UnicodeError) as exc:  # UnicodeError: a host name IDNA cannot encode (`a..b`)
            raise transport_error(exc, req, CONNECT_TIMEOUT, connecting=True) from None
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        conn = http.client.HTTPConnection(self._host, self._port)
        conn.response_class = HeadBoundResponse
        conn.sock = sock
        self._conn = conn
        return conn

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None


_STR_MOST_PER_CHAR = 4
_STR_MOST_HEAD = sys.getsizeof("\U0001f600") - _STR_MOST_PER_CHAR
"""sys.getsizeof of a str of n characters is at most n × _STR_MOST_PER_CHAR + _STR_MOST_HEAD (one whose characters
take 4 bytes each); counting the lengths is some 6 times cheaper than asking each line's size."""


class LineStream:
    """Lines of a streaming response; a dropped connection or read timeout raises Unreachable.

    With `whole_lines` (live follows) an unterminated last line means the stream was cut: it is never yielded,
    unless it holds a `\r` (a progress bar redrawn in place, e.g. tqdm, never ends its line).
    With `last` (a read that asked for tailLines) only the last that many lines are kept and yielded at the end:
    a server that sends more than it was asked for (the whole log, or millions of empty lines) costs the bytes'
    time, never memory for more lines than asked. With `last_bytes` (with `last` or alone: a read of a whole log)
    only the newest of those lines whose strings take at most that many bytes of memory (sys.getsizeof), yielded
    at the end: a line may be MAX_LINE_BYTES, so 20,000 lines could be 320 GiB, and a whole log has no end but the
    server's; `left_out` then counts the lines it dropped for that bound, for the reader to say. With `line_chars`
    each line is held cut to its first that many characters (a reader that judges only a line's start: the bound
    then holds a real kubelet's tail whole, where its 16 KiB entries made lines the bound left out).
    """

    def __init__(self, resp: urllib3.BaseHTTPResponse, req: Request, timeout: float | None,
                 whole_lines: bool = False, last: int | None = None, within: int | None = None,
                 last_bytes: int | None = None, line_chars: int | None = None, stamped: bool = False) -> None:
        self._resp = resp
        self._req = req
        self._timeout = timeout
        self._whole_lines = whole_lines
        self._last = last
        self._within = within
        """An answer that ends by itself is read for at most this many times `timeout` (TooSlow past it)."""
        self.last_bytes = last_bytes
        self._line_chars = line_chars
        self.kept = 0
        """Lines a read with `last` yielded."""
        self.left_out = 0
        """Lines a read with `last_bytes` left out to hold no more than that (those the server sent past `last`
        aside)."""
        self._stamped = stamped
        self.sent = 0
        """Lines a read with `last` was sent."""
        self.entries = 0
        """With `last`: the most log entries those lines were where the kubelet counts tailLines (the runtime's
        entries of at most KUBELET_LINE_BYTES each; each line's content after its time when `stamped`)."""

    def __iter__(self) -> Iterator[str]:
        for lines in self.batches():
            yield from lines

    def batches(self) -> Iterator[list[str]]:
        """The lines a read brings, a list per read: a busy follow reads hundreds at once, and a reader that takes
        them together pays its per-line costs (masking, cleaning, handing over) once per read. With `last` or
        `last_bytes`, one list of the last lines at the end."""
        if self._last is None and self.last_bytes is None:
            yield from self._cut_batches()
            return
        kept: deque[str] = deque(maxlen=None if self._last is None else max(self._last, 0))
        if self.last_bytes is None:
            for lines in self._cut_batches():
                kept.extend(lines)
        else:
            sizes: deque[int] | None = None
            """Each kept line's size, counted once the lines may pass the bound or one is dropped for `last`: until
            then what the lines' lengths say of their sizes is enough (a kubelet's answer never gets further)."""
            held = sent = 0
            for lines in self._cut_batches():
                sent += len(lines)
                kept.extend(lines)
                if sizes is None:
                    held += _STR_MOST_PER_CHAR * sum(map(len, lines)) + _STR_MOST_HEAD * len(lines)
                    if held <= self.last_bytes and len(kept) == sent:
                        continue
                    sizes = deque(map(sys.getsizeof, kept))
                    held = sum(sizes)
                else:
                    batch = list(map(sys.getsizeof, lines))
                    sizes.extend(batch)
                    held += sum(batch)
                    while len(sizes) > len(kept):  # those the extend dropped from the front
                        held -= sizes.popleft()
                while held > self.last_bytes:
                    held -= sizes.popleft()
                    kept.popleft()
            self.left_out = (sent if self._last is None else min(sent, self._last)) - len(kept)
        self.kept = len(kept)
        if kept:
            yield list(kept)

    def _cut_batches(self) -> Iterator[list[str]]:
        most = self._line_chars
        for lines in self._batches():
            if self._last is not None:
                self._count(lines)
            yield lines if most is None else [line[:most] if len(line) > most else line for line in lines]

    def _count(self, lines: list[str]) -> None:
        """`sent` and `entries` of these lines: a line's content of b bytes was at most b // KUBELET_LINE_BYTES + 1
        entries (containerd ends a line of exactly that many in an empty one); a line of fewer characters than a
        quarter of that is one, with no need to encode it."""
        self.sent += len(lines)
        short = KUBELET_LINE_BYTES // _STR_MOST_PER_CHAR + (STAMP_CHARS if self._stamped else 0)
        skip = STAMP_CHARS if self._stamped else 0
        self.entries += sum(1 if len(line) < short else len(line[skip:].encode()) // KUBELET_LINE_BYTES + 1
                            for line in lines)

    def _batches(self) -> Iterator[list[str]]:
        # the pieces of a line still without its newline: a redrawn progress bar can be megabytes long, so its
        # pieces are joined once, when the line ends
        import urllib3

        pending: list[bytes] = []
        held = 0  # bytes in pending
        skipping = False  # the rest of a line cut at MAX_LINE_BYTES, dropped up to its newline
        within, timeout = self._within, self._timeout
        deadline = time.monotonic() + within * timeout if within and timeout else None
        try:
            while True:
                chunk = self._resp.read1(65536) if hasattr(self._resp, "read1") else self._resp.read(65536)
                if not chunk:
                    break
                if deadline is not None and within and timeout and time.monotonic() > deadline:
                    raise TooSlow(self._req, within, timeout)
                if skipping:
                    if b"\n" not in chunk:
                        continue
                    chunk, skipping = chunk.partition(b"\n")[2], False
                    if not chunk:
                        continue
                if b"\n" not in chunk:
                    pending.append(chunk)
                    held += len(chunk)
                    if held > MAX_LINE_BYTES:
                        kept = b"".join(pending)[:MAX_LINE_BYTES].decode("utf-8", "replace")
                        yield [f"{kept} [line cut at {size_text(MAX_LINE_BYTES)}]"]
                        pending, held, skipping = [], 0, True
                    continue
                whole, _, rest = chunk.rpartition(b"\n")
                pending.append(whole)
                text = b"".join(pending).decode("utf-8", "replace")  # a newline never ends inside a character
                pending, held = ([rest], len(rest)) if rest else ([], 0)
                lines = text.split("\n")
                yield [line.rstrip("\r") for line in lines] if "\r" in text else lines
        except (urllib3.exceptions.HTTPError, OSError, ValueError, AttributeError) as exc:
            raise transport_error(exc, self._req, self._timeout) from None
        finally:
            self.close()
        buffer = b"".join(pending)
        if skipping:
            return
        if buffer and self._whole_lines and b"\r" not in buffer:
            raise Unreachable(f"the {self._req.source} cut the stream in the middle of a line", "dropped")
        if buffer:
            yield [buffer.decode("utf-8", "replace").rstrip("\r")]

    def close(self) -> None:
        """Release the response; call it from the reading thread (safe more than once)."""
        import urllib3

        try:
            self._resp.close()
            self._resp.release_conn()
        except (urllib3.exceptions.HTTPError, OSError, AttributeError):
            pass

    def abort(self) -> None:
        """Stop a read blocked in another thread: shut the socket down (closing the response would deadlock
        on the reader's buffer lock); the reader then ends with Unreachable and closes the response itself."""
        sock = getattr(getattr(self._resp, "connection", None), "sock", None)
        if sock is None:
            return
        try:
            socket.socket.shutdown(sock, socket.SHUT_RDWR)
        except OSError:
            pass


class TailRead:
    """The last `lines` lines of a container's log, as a LineStream yields them, where a kubelet's `tailLines`
    counts the runtime's entries: containerd writes a line longer than KUBELET_LINE_BYTES as several, so
    tailLines=100 of 40 KB lines answered 34 lines, the first of them the end of a cut one. It asks `lines` + 1
    (the answer's first line may be such an end, and is yielded only when the answer began the log or the read's
    bound left it out); while fewer lines came, the answer was as many entries as asked (not the whole log, nor
    all that `sinceTime` let through) and the bound (`last_bytes`) left none out, the log is read again with a
    tailLines the answer's entries a line say is enough (at least twice the last), up to TAIL_READS reads; a read
    again that fails keeps the last answer. Fewer lines than asked that are not the whole log are said in `short`,
    one line (tail_left_out). `open_read(tail_lines, keep)` opens one read keeping its last `keep` lines."""

    def __init__(self, open_read: Callable[[int, int], LineStream], lines: int) -> None:
        self._open = open_read
        self.lines = lines
        self._stream = open_read(lines + 1, lines + 1)  # errors before the answer's body are raised here
        self._stopped = False
        self.last_bytes = self._stream.last_bytes
        self.kept = 0
        self.left_out = 0
        self.short = ""
        self.whole = False
        """Once read: the lines yielded began the log (or all that `sinceTime` let through)."""

    def __iter__(self) -> Iterator[str]:
        for lines in self.batches():
            yield from lines

    def batches(self) -> Iterator[list[str]]:
        """One list of the last lines at the end, as a LineStream with `last`."""
        asked, stream, reads = self.lines + 1, self._stream, 1
        got = [line for batch in stream.batches() for line in batch]
        why = ""
        while stream.sent <= self.lines and stream.entries >= asked and not stream.left_out and not self._stopped:
            if reads == TAIL_READS:
                why = f"{reads} read{'s' * (reads != 1)} (the last of tailLines={asked:,}) held no more"
                break
            asked = max(2 * asked, -(-(self.lines + 1) * stream.entries // max(stream.sent, 1)) + 1)
            kept, got = got, []  # held once: the answer read again holds at most its bound
            try:
                self._stream = self._open(asked, self.lines + 1)
                again = [line for batch in self._stream.batches() for line in batch]
            except (ApiError, Unreachable) as exc:
                why, got = f"reading it again with tailLines={asked:,} failed: {exc}", kept
                break
            stream, got, reads = self._stream, again, reads + 1
        whole = self.whole = stream.entries < asked
        if not whole and not stream.left_out and len(got) <= self.lines:
            got = got[1:]  # perhaps the end of a line cut before it
        got = got[-self.lines:] if self.lines else []
        if stream.left_out:
            self.left_out = min(stream.sent, self.lines) - len(got)
        self.kept = len(got)
        if not whole and not self.left_out and len(got) < self.lines:
            self.short = (f"its last {len(got):,} lines, fewer than the {self.lines:,} asked: the kubelet counts a "
                          f"line longer than {size_text(KUBELET_LINE_BYTES)} as several of its tailLines, and "
                          f"{why or 'the read was stopped'}")
        if got:
            yield got

    def close(self) -> None:
        self._stream.close()

    def abort(self) -> None:
        """Stop the read from another thread (LineStream.abort), and read no more."""
        self._stopped = True
        self._stream.abort()


class HeadBoundResponse(http.client.HTTPResponse):
    """http.client's answer (urllib3's too: cluster/pools.py) whose status line and headers must arrive
    within BODY_TIMEOUTS × the read timeout the socket has when it is read, as read_bounded holds a body: a
    server that sent a header a byte just inside each read's timeout (http.client takes 100 headers of 64 KiB)
    held `rlark get` for days. Past the bound HeadTimeout, which transport_error says as TooSlow. A read without
    a timeout (a watch, a follow) is not bounded here."""

    def __init__(self, sock: socket.socket, debuglevel: int = 0, method: str | None = None,
                 url: str | None = None) -> None:
        super().__init__(sock, debuglevel, method, url)
        timeout = sock.gettimeout()
        self._clock: _HeadClock | None = None
        if timeout:
            raw = sock.makefile("rb", buffering=0)  # before the buffered file is closed: the socket stays open
            self.fp.close()
            self._clock = _HeadClock(raw, sock, timeout)
            self.fp = io.BufferedReader(self._clock)

    def begin(self) -> None:
        super().begin()
        if self._clock is not None:
            self._clock.head_read()


class _HeadClock(io.RawIOBase):
    """The socket reads under a HeadBoundResponse: until its head is read, each waits only for what is left of
    the head's time (HeadTimeout past it); then as the socket's own read timeout says."""

    def __init__(self, raw: io.RawIOBase, sock: socket.socket, timeout: float) -> None:
        super().__init__()
        self._raw, self._sock, self._timeout = raw, sock, timeout
        self._deadline: float | None = time.monotonic() + BODY_TIMEOUTS * timeout

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview) -> int | None:  # type: ignore[override]
        if self._deadline is None:
            return self._raw.readinto(buffer)
        left = self._deadline - time.monotonic()
        if left <= 0:
            raise HeadTimeout(BODY_TIMEOUTS, self._timeout)
        self._sock.settimeout(min(self._timeout, left))
        try:
            return self._raw.readinto(buffer)
        except TimeoutError:
            if time.monotonic() >= self._deadline:
                raise HeadTimeout(BODY_TIMEOUTS, self._timeout) from None
            raise

    def head_read(self) -> None:
        self._deadline = None
        self._sock.settimeout(self._timeout)

    def close(self) -> None:
        self._raw.close()
        super().close()


def _error_body(resp: urllib3.BaseHTTPResponse) -> bytes:
    """The start of an error answer (its message); the connection goes back to the pool only when that was all
    of it."""
    import urllib3

    try:
        data = read_error_body(resp)
        if len(data) >= MAX_ERROR_BYTES:
            resp.close()
    except (urllib3.exceptions.HTTPError, OSError):
        data = b""
    resp.release_conn()
    return data


class _ApiTransport(Exception):
    """The kubernetes REST layer reports TLS failures as ApiException(status=0); carry its text."""


def outside(url: str, source: str, headers: dict[str, str] | None = None) -> tuple[Http, str]:
    """(Http, path) for a URL outside the cluster (a webhook receiver, a presigned object URL): an Http of its
    origin, verified with the system's CAs through the one shared context (tls.public_context), and the path and
    query to ask it. Its messages name only the origin: a URL's path and query are often a secret themselves."""
    parts = urlsplit(url)
    origin = f"{parts.scheme}://{parts.netloc.rpartition('@')[2]}"
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    context = tls.public_context() if parts.scheme == "https" else None
    return Http(origin, None, source, headers, ssl_context=context), target


def same_origin(one: str, other: str) -> bool:
    """Same scheme, host and port."""
    return _origin(one) == _origin(other)


def _origin(url: str) -> tuple[str, str]:
    """(scheme, host and port); a URL that does not parse (an unclosed IPv6 bracket) is an origin of its own."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return url, ""
    return parts.scheme, parts.netloc
