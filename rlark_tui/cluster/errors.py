"""API and transport failures turned into one clear line each (never a traceback, never a credential).

Owns the error classes every cluster / raydash call raises and the mapping from HTTP status and socket errors.
"""

from __future__ import annotations

import re
import socket
import ssl
import sys
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any

from rlark_tui.errors import RlarkError

_BEARER = re.compile(r"(?i)(bearer\s+|token[\"']?\s*[:=]\s*[\"']?)[A-Za-z0-9._~+/=-]{6,}")


MESSAGE_CHARS = 500
"""The most characters of an answer's own words (its message, reason, causes) an error quotes, the rest counted
(`quoted`): a refused exec upgrade's body or an error answer's, read to 64 KiB, was one line of that length."""


def quoted(text: object) -> str:
    """An answer's own words as an error quotes them: at most MESSAGE_CHARS characters, the rest counted
    (`sinks.cut`), on one line (`sinks.one_line`: a break or bidi control shown as its escape)."""
    from rlark_tui.text.sinks import cut, one_line

    return one_line(cut(text if isinstance(text, str) else str(text), MESSAGE_CHARS))


def scrub(text: str) -> str:
    """Remove bearer tokens and any other secret (text.redact) an error text might echo."""
    from rlark_tui.text.redact import redact_text  # with the first error: `rlark get` loads it after its request

    return redact_text(_BEARER.sub(lambda m: m.group(1) + "***", text))


@dataclass(frozen=True)
class Request:
    """What was attempted, for the message: verb (list, get, create, patch, delete, watch, logs) and resource."""

    verb: str
    resource: str
    name: str | None = None
    namespace: str | None = None
    source: str = "control plane"
    url: str = ""

    def target(self) -> str:
        """What was asked for, on one line: a name is cluster text too (an object key may hold a line break)."""
        from rlark_tui.text.sinks import one_line

        where = f" in namespace {one_line(self.namespace)}" if self.namespace else ""
        return f'{self.resource} "{one_line(self.name)}"{where}' if self.name else f"{self.resource}{where}"


class ApiError(RlarkError):
    """The server answered with an error status."""

    def __init__(self, message: str, status: int = 0, reason: str = "") -> None:
        super().__init__(scrub(message))
        self.status = status
        self.reason = reason


class Unauthorized(ApiError):
    """401: the credentials were rejected."""


class Forbidden(ApiError):
    """403: the credentials may not do this."""


class NotFound(ApiError):
    """404."""


class Conflict(ApiError):
    """409: already exists, or changed underneath."""


class Gone(ApiError):
    """410: the resourceVersion is too old; relist."""


class Invalid(ApiError):
    """422: the object breaks the schema; `causes` lists (field, message)."""

    def __init__(self, message: str, causes: list[tuple[str, str]]) -> None:
        super().__init__(message, 422, "Invalid")
        self.causes = causes


class Unreachable(RlarkError):
    """No HTTP answer: refused, reset, DNS, TLS failure or timeout."""

    def __init__(self, message: str, kind: str) -> None:
        super().__init__(scrub(message))
        self.kind = kind


class TooLarge(Unreachable):
    """An answer whose body is larger than the bound its reader takes: not read past the bound."""

    def __init__(self, req: Request, bound: int, length: int | None = None) -> None:
        from rlark_tui.model.quantity import size_text

        where = f"the {req.source}" + (f" at {req.url}" if req.url else "")
        said = f" (it says {length:,} bytes)" if length is not None else ""
        super().__init__(f"the answer of {where} to {req.verb} {req.target()} is larger than the "
                         f"{size_text(bound)} bound{said}: not read past it", "too-large")
        self.bound = bound


class TooSlow(Unreachable):
    """An answer whose body kept arriving past the time its reader takes (transport.BODY_TIMEOUTS): not read
    further."""

    def __init__(self, req: Request, times: int, timeout: float) -> None:
        where = f"the {req.source}" + (f" at {req.url}" if req.url else "")
        super().__init__(f"the answer of {where} to {req.verb} {req.target()} was still arriving after "
                         f"{times * timeout:g} s ({times} × the {timeout:g} s request timeout): not read past it",
                         "timeout")
        self.seconds = times * timeout


class HeadTimeout(TimeoutError):
    """An answer's status line and headers still arriving past the time its reader takes (the transport's
    HeadBoundResponse): a socket timeout to the HTTP clients, TooSlow to the user (transport_error)."""

    def __init__(self, times: int, timeout: float) -> None:
        super().__init__(f"the answer's head was still arriving after {times} × {timeout:g} s")
        self.times, self.timeout = times, timeout


def status_error(status: int, body: bytes | str | None, req: Request) -> ApiError:
    """Map an HTTP error answer (Kubernetes Status body or plain text) to one line."""
    text = body.decode("utf-8", "replace") if isinstance(body, bytes) else (body or "")
    payload = _json(text)
    message = str(payload.get("message") or payload.get("error") or "").strip() if payload else text.strip()
    message = quoted(message.splitlines()[0]) if message else ""
    reason = quoted(payload.get("reason") or "") if payload else ""
    target = req.target()
    if status == 401 and "rlark-server" in req.source:
        return Unauthorized(f"unauthorized (401): rlark-server refused the client certificate "
                            f"({message or 'no reason given'}) while trying to {req.verb} {target} on the {req.source}",
                            status, reason)
    if status == 401:
        return Unauthorized(
            f"unauthorized (401): the {req.source} rejected the credentials while trying to {req.verb} "
            f"{target}; check the kubeconfig user / token", status, reason)
    if status == 403:
        detail = f": {message}" if message else ""
        return Forbidden(f"forbidden (403): not allowed to {req.verb} {target} on the {req.source}{detail}",
                         status, reason)
    if status == 404:
        where = f" on the {req.source}" if req.source != "control plane" else ""
        return NotFound(f"not found (404): {target}{where}" + (f" ({message})" if message and req.name is None
                                                              else ""), status, reason)
    if status == 409:
        return Conflict(f"conflict (409) on {req.verb} {target}: {message or 'the server reported a conflict'}",
                        status, reason)
    if status == 410:
        return Gone(f"gone (410): {message or 'resourceVersion too old'}", status, reason)
    if status == 422:
        causes = _causes(payload)
        listed = quoted("; ".join(f"{field}: {msg}" if field else msg for field, msg in causes))
        return Invalid(f"invalid (422): {target} rejected: {listed or message or 'no details given'}", causes)
    if not reason and status in (502, 503, 504):  # a proxy's answer (rlark-server, an agent offline) has no reason
        reason = HTTPStatus(status).phrase
    what = f"{reason or 'error'} ({status})" if status else "error"
    return ApiError(f"{req.source} {what} on {req.verb} {target}: {message or 'no message'}", status, reason)


def transport_error(exc: BaseException, req: Request, timeout: float | None = None,
                    connecting: bool = False) -> Unreachable:
    """Map a socket / TLS / timeout failure to one line naming the source and URL. `connecting`: `exc` came
    from opening the connection (a plain socket's timeout does not say so; urllib3's ConnectTimeoutError does)."""
    where = f"the {req.source}" + (f" at {req.url}" if req.url else "")
    root = _root(exc)
    if isinstance(root, HeadTimeout):
        return TooSlow(req, root.times, root.timeout)
    if any(_is_urllib3(e, "ConnectTimeoutError", exactly=True) for e in _chain(exc)) or (
            isinstance(root, (socket.timeout, TimeoutError)) and (connecting or "handshake" in str(root).lower())):
        return Unreachable(f"timed out connecting to {where} ({req.verb} {req.target()})", "timeout")
    if isinstance(root, (socket.timeout, TimeoutError)) or _is_urllib3(root, "TimeoutError"):
        after = f" after {timeout:g}s" if timeout else ""
        return Unreachable(f"timed out{after} waiting for {where} ({req.verb} {req.target()})", "timeout")
    if isinstance(root, ssl.SSLError) or _is_urllib3(root, "SSLError") or "SSL" in type(root).__name__ \
            or "ssl" in str(root).lower() or "certificate" in str(root).lower():
        return Unreachable(f"TLS error talking to {where}: {_short(root)}", "tls")
    if isinstance(root, ConnectionRefusedError) or "refused" in str(root).lower():
        return Unreachable(f"cannot reach {where}: connection refused", "refused")
    if _is_loaded(root, "http.client", "IncompleteRead") or "IncompleteRead" in str(root):
        return Unreachable(f"connection to {where} was dropped in the middle of a response", "dropped")
    if _is_loaded(root, "http.client", "RemoteDisconnected"):
        return Unreachable(f"connection to {where} was dropped: the server closed it without answering", "dropped")
    if isinstance(root, ConnectionResetError) or _is_urllib3(root, "ProtocolError") or "reset" in str(root).lower() \
            or "aborted" in str(root).lower():
        return Unreachable(f"connection to {where} was dropped: {_short(root)}", "dropped")
    if isinstance(root, UnicodeError) or (_is_urllib3(root, "LocationParseError") and "label" in str(root)):
        return Unreachable(f"cannot resolve the host of {where}: not a host name (a label is empty or longer than 63 "
                           "characters)", "dns")
    if isinstance(root, socket.gaierror) or "resolve" in str(root).lower():
        return Unreachable(f"cannot resolve the host of {where}: {_short(root)}", "dns")
    return Unreachable(f"cannot reach {where}: {_short(root)}", "other")


def _is_urllib3(exc: BaseException, name: str, exactly: bool = False) -> bool:
    """Whether `exc` is urllib3's exception `name` (or, unless `exactly`, a subclass)."""
    return _is_loaded(exc, "urllib3.exceptions", name, exactly)


def _is_loaded(exc: BaseException, module_name: str, name: str, exactly: bool = False) -> bool:
    """Whether `exc` is the exception `name` of `module_name` (or, unless `exactly`, a subclass). The module is
    not imported for this (the transport, cluster/http.py, owns the HTTP clients): when nothing loaded it, none
    of its exceptions can exist."""
    module = sys.modules.get(module_name)
    cls = getattr(module, name, None) if module is not None else None
    if cls is None:
        return False
    return type(exc) is cls if exactly else isinstance(exc, cls)


def _root(exc: BaseException) -> BaseException:
    return _chain(exc)[-1]


def _chain(exc: BaseException) -> list[BaseException]:
    """The exception and what it wraps (urllib3 reasons, causes, protocol errors), outermost first."""
    chain = [exc]
    for _ in range(6):
        seen = chain[-1]
        nxt = getattr(seen, "reason", None)
        if not isinstance(nxt, BaseException):
            nxt = seen.__cause__
        if nxt is None and _is_urllib3(seen, "HTTPError"):
            nxt = seen.__context__
        if nxt is None and _is_urllib3(seen, "ProtocolError"):
            nxt = next((arg for arg in seen.args[1:] if isinstance(arg, BaseException)), None)
        if nxt is None:
            break
        chain.append(nxt)
    return chain


def _short(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    line = text[-1] if text else type(exc).__name__
    return scrub(line[:200])


def _json(text: str) -> dict[str, Any]:
    from rlark_tui.cluster.transport import decode_json

    try:
        value = decode_json(text, text=False)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _causes(payload: dict[str, Any]) -> list[tuple[str, str]]:
    details = payload.get("details") if payload else None
    causes = details.get("causes") if isinstance(details, dict) else None
    result = []
    for cause in causes or []:
        if isinstance(cause, dict):
            result.append((str(cause.get("field") or ""), str(cause.get("message") or cause.get("reason") or "")))
    return result
