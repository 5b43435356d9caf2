"""Unknown-route recording: every request, on the gateway port or the rlark-server port, whose path matched
no route of the real platform is kept as `"METHOD /path"` so tests can assert rlark invents none.

`RouteLog.record(request)` is called by the dispatchers where no platform route matches (a missing object
behind a real route is not an unknown route); `Sandbox.unknown_routes` lists them; `clear()` empties it.
`served(request)` counts every request rlark-server answers (`served_count`, for bench/).
The `/_sandbox/*` control routes are the sandbox's own and are never recorded.
"""

from __future__ import annotations

import threading

from aiohttp import web


class RouteLog:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._unknown: list[str] = []
        self._served = 0

    def record(self, request: web.Request) -> None:
        if request.path.startswith("/_sandbox/"):
            return
        with self._lock:
            self._unknown.append(f"{request.method} {request.path}")

    def served(self, request: web.Request) -> None:
        with self._lock:
            self._served += 1

    @property
    def served_count(self) -> int:
        with self._lock:
            return self._served

    @property
    def unknown(self) -> list[str]:
        with self._lock:
            return list(self._unknown)

    def clear(self) -> None:
        with self._lock:
            self._unknown.clear()
