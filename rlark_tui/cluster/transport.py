"""What every HTTP path to a cluster shares: the timeouts, URL path segments, the URL a message shows, the
--request-timeout check, the bounded read of an answer's body and the one JSON decoder of cluster answers.

`cluster/http.py` (urllib3, the kubernetes client) and `cluster/lean.py` both build on it. Nothing here imports
urllib3 or the kubernetes client: `rlark get` and the TUI's first list load it early.
"""

from __future__ import annotations

import functools
import io
import re
import time
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import quote, urlsplit

from rlark_tui.cluster.errors import Request, TooLarge, TooSlow, Unreachable
from rlark_tui.errors import UsageError
from rlark_tui.model.quantity import size_text
from rlark_tui.text.parse import JsonBound, load_json
from rlark_tui.text.sinks import one_line

if TYPE_CHECKING:
    import argparse

    import msgspec

CONNECT_TIMEOUT = 5.0
READ_TIMEOUT = 30.0
MAX_REQUEST_TIMEOUT = 30 * 86400.0  # a month outlasts any request or watch; past ~292 years a socket timeout overflows
MAX_ANSWER_BYTES = 512 * 2**20
"""The largest answer body read (a list of 50,000 Pods is a few hundred MB); past it the read stops (TooLarge)."""
MAX_ERROR_BYTES = 64 * 1024
"""What is read of an error answer: its message is one line of it."""
MAX_DEPTH = 1024
"""The deepest nesting decode_json takes (orjson's own limit; the standard library's decoder and msgspec would
raise RecursionError a little before it)."""
MAX_VALUES = 16_000_000
"""The most values (and keys) decode_json builds of one answer, counted as the `,` `:` `[` `{` before them (a
string's own count too, so never fewer): each takes up to ~90 bytes decoded, so the bound holds an answer to about
1.5 GB in memory whatever its shape (64 MiB of `{},` took 2 GB, so the byte bound alone allowed ~16 GB). A list of
10,000 of the platform's Nodes counts 0.9 million (a mark per 11 bytes: the bound takes such answers to ~170 MB)."""
READ_CHUNK = 1 << 20
ARRIVED_CHUNK = 64 << 10
"""The most read_bounded asks of each read of what has arrived (read1): rarely is more there (a TLS record holds
16 KiB), and a buffer below glibc's mmap threshold (128 KiB) comes from the heap. Asking READ_CHUNK mapped, shrank
and unmapped a 1 MiB buffer at each read: 223 reads of a 5,000-Job list, about 630 system calls and 1,170 page faults
more."""


def seg(value: object, safe: str = "") -> str:
    """One URL path segment (or, with `safe="/"`, an object key's path), percent-encoded."""
    return _quoted(value, safe)


def _quoted(value: object, safe: str = "") -> str:
    """`value` percent-encoded, `/` too, from its UTF-8: a byte read undecodable (an argument's surrogateescape) as
    that byte, and a lone surrogate (JSON's `\\ud800`: a hostile control plane's Job name, asked for its Tasks and
    Pods) as its own bytes, never UnicodeEncodeError (rlark describe and logs of such a Job ended in a crash
    report)."""
    text = str(value)
    try:
        data = text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        data = text.encode("utf-8", "surrogatepass")
    return quote(data, safe=safe)


def sent_path(path: str, req: Request) -> str:
    """`path` (below the base URL, without its query) as a request may send it: one with a `.` or `..` segment is
    refused (Unreachable, one line), whatever built it. A segment is cluster text (an object key, a Pod's name), and
    the HTTP client resolves dot segments before sending (as servers' routers do), so deleting the object key
    `../../../../../rlinf.io/v1alpha1/jobs/<job>` sent DELETE /api/v1/rlinf.io/v1alpha1/jobs/<job> and deleted
    that Job."""
    if any(part in (".", "..") for part in path.split("/")):
        raise Unreachable(f"not sent: {req.verb} {req.target()}: its path has a '.' or '..' segment, which would "
                          "reach another route", "other")
    return path


def query_string(query: list[tuple[str, str]]) -> str:
    """`k=v&...` with both sides percent-encoded (a selector's `=` and `,` included)."""
    return "&".join(f"{_quoted(k)}={_quoted(v)}" for k, v in query)


def display_url(base: str) -> str:
    """The base URL as messages show it: scheme, host, port and path (never user info or a query); one that does
    not parse (a port past 65535, an open IPv6 bracket) as its text without them, on one line."""
    try:
        parts = urlsplit(base)
        host = parts.hostname or ""
        port = f":{parts.port}" if parts.port else ""
    except ValueError:
        return one_line(re.sub(r"(?<=//)[^/@]*@", "", re.split(r"[?#]", base, maxsplit=1)[0]))
    return f"{parts.scheme}://{host}{port}{parts.path}"


def request_timeout(args: argparse.Namespace) -> float | None:
    """The global --request-timeout of parsed CLI arguments (None when not given); out of range is a usage error."""
    timeout = getattr(args, "request_timeout", None)
    if timeout is not None and not 0 < timeout <= MAX_REQUEST_TIMEOUT:
        raise UsageError(f"--request-timeout must be more than 0 and at most {MAX_REQUEST_TIMEOUT:.0f} seconds "
                         "(30 days)")
    return timeout


class Response(Protocol):
    """What the bounded reads use of an answer: an http.client or urllib3 response, not preloaded."""

    def read(self, amt: int | None = None, /) -> bytes: ...


BODY_TIMEOUTS = 10
"""An answer's body must arrive within this many request timeouts (5 min by default): a server that sends a byte
just inside each read's timeout would otherwise hold a command for ever (a 512 MiB list at 2 MB/s still fits)."""


def read_bounded(resp: Response, req: Request, max_bytes: int | None = None, timeout: float | None = None) -> bytes:
    """The whole body of `resp` (an http.client or urllib3 response, not preloaded), at most `max_bytes`
    (MAX_ANSWER_BYTES when not given): a Content-Length over it, or a body that goes past it, raises TooLarge
    naming the bound (nothing past it is read). With `timeout` (the request's read timeout), a body still arriving
    BODY_TIMEOUTS × `timeout` after its read began raises TooSlow naming the bound. Transport errors of the reads
    propagate as they come."""
    max_bytes = MAX_ANSWER_BYTES if max_bytes is None else max_bytes
    length = _content_length(resp)
    if length is not None and length > max_bytes:
        raise TooLarge(req, max_bytes, length)
    read = getattr(resp, "read1", None) or resp.read  # read1: what has arrived, so the time bound is looked at
    deadline = time.monotonic() + BODY_TIMEOUTS * timeout if timeout else None
    body = io.BytesIO()  # one block grown in place and handed over whole, not copied (a list of the chunks left
    # the heap holding their memory; a bytearray's copy to bytes touched the answer's size in pages again)
    total = 0
    while True:
        chunk = read(min(ARRIVED_CHUNK, max_bytes + 1 - total))
        if not chunk:
            return body.getvalue()
        total += len(chunk)
        if total > max_bytes:
            raise TooLarge(req, max_bytes)
        body.write(chunk)
        if deadline is not None and timeout and time.monotonic() > deadline and total != length:
            raise TooSlow(req, BODY_TIMEOUTS, timeout)


def read_error_body(resp: Response) -> bytes:
    """The start of an error answer (MAX_ERROR_BYTES): enough for its message, never a hostile body whole."""
    return resp.read(MAX_ERROR_BYTES)


def _content_length(resp: object) -> int | None:
    headers = getattr(resp, "headers", None)
    value = headers.get("Content-Length") if headers is not None else None
    try:
        length = int(value) if value is not None else None
    except ValueError:
        return None
    return length if length is not None and length >= 0 else None


class TooMany(ValueError):
    """A JSON document of more than MAX_VALUES values."""

    def __init__(self) -> None:
        super().__init__(f"more than {MAX_VALUES:,} values")


def _values(data: bytes | str) -> int:
    """At least the values and keys `data` decodes to: each but the first follows one of `,` `:` `[` `{`."""
    if isinstance(data, bytes):
        return 1 + sum(data.count(mark) for mark in (b",", b":", b"[", b"{"))
    return 1 + sum(data.count(mark) for mark in (",", ":", "[", "{"))


class TooDeep(ValueError):
    """A JSON document nested deeper than its bound (MAX_DEPTH, or the one its reader gave)."""

    def __init__(self, depth: int = MAX_DEPTH) -> None:
        super().__init__(f"nested deeper than {depth} levels")
        self.depth = depth


def decode_json(data: bytes | str, *, max_bytes: int = MAX_ANSWER_BYTES, shape: type | None = None,
                text: bool = True, max_depth: int = MAX_DEPTH) -> object:
    """A JSON answer of a cluster, Ray or the gateway, decoded the one way every client decodes it: orjson, else
    (invalid UTF-8, NaN and numbers past a double, kept as their text, huge integers) the standard library on
    the text with bad bytes replaced.

    An empty answer is {}; one that is not JSON stays text (`text=False`: raises ValueError instead). Larger than
    `max_bytes` raises ValueError naming the bound (bodies read over HTTP are bounded before, by read_bounded);
    nested deeper than MAX_DEPTH (or `max_depth`, less: a reader whose answers are shallow, such as Ray's) raises
    TooDeep, and more than MAX_VALUES values TooMany (ValueErrors both), never RecursionError or MemoryError.
    With `shape` (a TypedDict of the only fields a table reads, cluster/output.py) just those are decoded, by
    msgspec (faster on a large list: bench/cli_get.py); an answer the shape does not fit (another type where it has
    a list or an object, or anything the decoders above would repair) is decoded whole instead."""
    if len(data) > max_bytes:
        raise ValueError(f"larger than {size_text(max_bytes)}")
    if len(data) >= MAX_VALUES and _values(data) > MAX_VALUES:  # each counted mark is a byte of its own
        raise TooMany()
    if shape is not None:
        shaped = _shaped(data, shape)
        if shaped is not None:
            return shaped
    try:
        return load_json(data, max_bytes=max_bytes, max_depth=max_depth if max_depth < MAX_DEPTH else None)
    except JsonBound:
        raise TooDeep(min(max_depth, MAX_DEPTH)) from None
    except ValueError:
        decoded = data.decode("utf-8", "replace") if isinstance(data, bytes) else data
        if not decoded.strip():
            return {}
        if not text:
            raise
        return decoded


def decode_answer(data: bytes, req: Request, shape: type | None = None, max_depth: int = MAX_DEPTH) -> object:
    """decode_json of an answer read by read_bounded; one nested deeper than `max_depth` or of more than MAX_VALUES
    values raises Unreachable (kind `too-deep`, `too-large`) naming the request and the bound, as every transport
    failure does."""
    try:
        return decode_json(data, max_bytes=len(data), shape=shape, max_depth=max_depth)
    except (TooDeep, TooMany) as exc:
        where = f"the {req.source}" + (f" at {req.url}" if req.url else "")
        said = str(exc) if isinstance(exc, TooDeep) else f"of {exc}"
        raise Unreachable(f"the answer of {where} to {req.verb} {req.target()} is {said}: not decoded",
                          "too-deep" if isinstance(exc, TooDeep) else "too-large") from None


@functools.cache
def shape_decoder(shape: type) -> msgspec.json.Decoder[Any]:
    """msgspec's decoder of `shape`; only `rlark get` tables decode to a shape (the TUI's first list never loads
    msgspec), and it makes it before the answer comes."""
    import msgspec
    return msgspec.json.Decoder(shape)


def _shaped(data: bytes | str, shape: type) -> object | None:
    import msgspec
    try:
        decoded: object = shape_decoder(shape).decode(data)
    except (msgspec.MsgspecError, RecursionError):
        return None
    return decoded
