"""What every HTTP path to a cluster shares and needs no third-party import for: the timeouts, URL path
segments, the URL a message shows, and the --request-timeout check.

`cluster/http.py` (urllib3, the kubernetes client) and `cluster/lean.py` (the standard library) both build on it.
"""

from __future__ import annotations

from urllib.parse import quote, urlsplit

from rlark_tui.errors import UsageError

CONNECT_TIMEOUT = 5.0
READ_TIMEOUT = 30.0
MAX_REQUEST_TIMEOUT = 30 * 86400.0  # a month outlasts any request or watch; past ~292 years a socket timeout overflows


def seg(value: str) -> str:
    """One URL path segment, percent-encoded."""
    return quote(str(value), safe="")


def query_string(query: list[tuple[str, str]]) -> str:
    """`k=v&...` with both sides percent-encoded (a selector's `=` and `,` included)."""
    return "&".join(f"{quote(k, safe='')}={quote(str(v), safe='')}" for k, v in query)


def display_url(base: str) -> str:
    """The base URL as messages show it: scheme, host, port and path (never user info or a query)."""
    parts = urlsplit(base)
    host = parts.hostname or ""
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme}://{host}{port}{parts.path}"


def request_timeout(args) -> float | None:
    """The global --request-timeout of parsed CLI arguments (None when not given); out of range is a usage error."""
    timeout = getattr(args, "request_timeout", None)
    if timeout is not None and not 0 < timeout <= MAX_REQUEST_TIMEOUT:
        raise UsageError(f"--request-timeout must be more than 0 and at most {MAX_REQUEST_TIMEOUT:.0f} seconds "
                         "(30 days)")
    return timeout
