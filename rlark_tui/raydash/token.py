"""Ray's token for a Job's dashboard, as Ray ≥ 2.61 wants it on every route: read from the Header Pod through the
fixed read-only command `ray-token` (model/fixed_commands.py) only after Ray answered 401, kept in memory for the
life of one ClusterAccess and never printed, logged or written anywhere.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING

from rlark_tui.cluster.errors import ApiError, Unreachable
from rlark_tui.errors import RlarkError
from rlark_tui.model import keys
from rlark_tui.model.objects import Job, Pod

if TYPE_CHECKING:
    from rlark_tui.cluster.access import ClusterAccess

HEADER = "X-Ray-Authorization"
"""The header a proxy passes to Ray (rlark-server drops `Authorization`, as KubeRay's proxies expect)."""


class TokenUnavailable(RlarkError):
    """Ray wants a token and none could be read from the Header Pod (the reason, never the token)."""


class RayTokens:
    """Tokens per Job name, read on demand; thread-safe (the reconciler polls several Jobs at once)."""

    def __init__(self, access: ClusterAccess) -> None:
        self._access = access
        self._tokens: dict[str, str] = {}
        self._lock = threading.Lock()
        self._listeners: list[weakref.WeakMethod[Callable[[str, str], None]]] = []

    def listen(self, method: Callable[[str, str], None]) -> None:
        """Call `method(job name, token)` (a bound method, held weakly: it goes with its object) with each token
        read from now on: a log view already showing the Job's lines masks it from then on (cluster/secrets.py)."""
        with self._lock:
            self._listeners = [ref for ref in self._listeners if ref() is not None] + [weakref.WeakMethod(method)]

    def get(self, job: Job, fresh: bool = False) -> str:
        """The Job's Ray token (`fresh`: read again, e.g. after a 403 with the one kept); TokenUnavailable if the
        Header Pod cannot be read."""
        with self._lock:
            if not fresh and job.name in self._tokens:
                return self._tokens[job.name]
        token = self._read(job)
        with self._lock:
            self._tokens[job.name] = token
            listeners = [method for ref in self._listeners if (method := ref()) is not None]
        for method in listeners:
            method(job.name, token)
        return token

    def cached(self, job: Job) -> str | None:
        """The token read before for this Job, if any (so a poll starts with it instead of a 401)."""
        with self._lock:
            return self._tokens.get(job.name)

    def _read(self, job: Job) -> str:
        from rlark_tui.cluster.podexec import run_fixed
        pod = self._header_pod(job)
        try:
            result = run_fixed(self._access, pod.namespace, pod.pod_name, "ray-token",
                               namespace=pod.pod_namespace or keys.WORKLOAD_NAMESPACE)
        except RlarkError as exc:
            raise TokenUnavailable(f"Ray wants a token, and reading it in Pod {pod.pod_name} failed: {exc}") from None
        token = result.stdout.decode("utf-8", "replace").strip()
        if result.exit_code != 0 or not token or result.truncated or any(c.isspace() for c in token):
            raise TokenUnavailable(f"Ray wants a token, and Pod {pod.pod_name} has none in $RAY_AUTH_TOKEN, "
                                   "$RAY_AUTH_TOKEN_PATH or ~/.ray/auth_token")
        if not (token.isascii() and token.isprintable()):  # a header value: Latin-1 had no form for `€`
            raise TokenUnavailable(f"Ray wants a token, and Pod {pod.pod_name} has one that is not printable ASCII: "
                                   "not sent")
        return token

    def _header_pod(self, job: Job) -> Pod:
        try:
            pods = [Pod(raw) for raw in self._access.job_pods(job.name)]
        except (ApiError, Unreachable) as exc:
            raise TokenUnavailable(f"Ray wants a token, and the Header Pod cannot be listed: {exc}") from None
        running = [p for p in pods if p.task_name == job.head_task_name and p.phase == "Running" and p.pod_name]
        if not running:
            raise TokenUnavailable(f"Ray wants a token, and the Header role {job.head_task_name} has no Running Pod "
                                   "to read it in")
        return running[0]
