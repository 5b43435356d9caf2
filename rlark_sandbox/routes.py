"""Unknown-route recording: every request, on the gateway port or the rlark-server port, whose path matched
no route of the real platform is kept as `"METHOD /path"` so tests can assert rlark invents none.

`RouteLog.record(request)` is called by the dispatchers where no platform route matches (a missing object
behind a real route is not an unknown route); `Sandbox.unknown_routes` lists them; `clear()` empties it.
`served(request)` counts every request rlark-server answers (`served_count`, for bench/); after `keep_paths()`
it keeps each one's monotonic time and path too (`served_paths`: when bench/usage.py's Jobs' logs were read).
The `/_sandbox/*` control routes are the sandbox's own and are never recorded.
"""

from __future__ import annotations

import threading
import time

from aiohttp import web


class RouteLog:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._unknown: list[str] = []
        self._served = 0
        self._paths: list[tuple[float, str]] | None = None

    def record(self, request: web.Request) -> None:
        if request.path.startswith("/_sandbox/"):
            return
        with self._lock:
            self._unknown.append(f"{request.method} {request.path}")

    def served(self, request: web.Request) -> None:
        with self._lock:
            self._served += 1
            if self._paths is not None:
                self._paths.append((time.monotonic(), request.path))

    @property
    def served_count(self) -> int:
        with self._lock:
            return self._served

    def keep_paths(self) -> None:
        with self._lock:
            self._paths = []

    @property
    def served_paths(self) -> list[tuple[float, str]]:
        with self._lock:
            return list(self._paths or ())

    @property
    def unknown(self) -> list[str]:
        with self._lock:
            return list(self._unknown)

    def clear(self) -> None:
        with self._lock:
            self._unknown.clear()
