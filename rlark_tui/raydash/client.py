"""Ray dashboard HTTP client: the routes ray-dashboard.md recommends, token header, short timeouts.

Owns alive-node counting (num_filtered of the ALIVE filter), the `ray status` text and the Ray jobs list, and Ray's
token authentication: a configured token is sent from the start; without one, a 401 whose dashboard says
`authentication_mode: token` makes it read the Header Pod's token (raydash/token.py) and ask again with it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from rlark_tui.cluster.errors import ApiError, Forbidden, NotFound, Request, Unauthorized, Unreachable
from rlark_tui.cluster.http import Http
from rlark_tui.model.objects import Job
from rlark_tui.raydash.token import HEADER, TokenUnavailable
from rlark_tui.text.parse import MAX_JSON_DEPTH, ascii_int
from rlark_tui.text.redact import KnownSecrets
from rlark_tui.text.sinks import one_line

TIMEOUT = 5.0
MAX_ANSWER_BYTES = 32 * 2**20
"""The largest JSON answer read from Ray (a State API list of 10,000 nodes is a few MB); past it, one line."""
MAX_TEXT_BYTES = 4 * 2**20
"""The largest text answer read from Ray (a worker's traceback, a log file's tail); past it, one line."""
MAX_STATUS_LINES = 2000
"""The lines of `ray status` a poll keeps (a line per node and a few per resource: a 1,000-node cluster fits):
the 4 MiB a head may answer were 100,000 lines masked and laid out in the TUI's Ray tab after every poll."""
MAX_STATUS_JOBS = 100
"""The Ray jobs a poll keeps, the last ones (a Job's driver submits one or a few; each is a line of the Ray tab)."""
MAX_ROWS = 10_000
"""The most rows of a State API list taken without a `limit` in the query (Ray's own default is 100)."""
MAX_DEPTH = MAX_JSON_DEPTH
"""The deepest nesting of a Ray answer decoded (a State API row's death cause is 7 levels under its envelope). Ray's
dashboard runs in the Header Pod, the Job author's, and the cluster answers' own bound (transport.MAX_DEPTH, 1,024)
let a name, class, node ID, error message or Ray job status nest 1,000 levels, where str() and f-strings raise
RecursionError: rlark stacks, diagnose, bundle and describe ended in a crash report, and the TUI at the Ray tab."""
ALIVE_QUERY = (("filter_keys", "state"), ("filter_predicates", "="), ("filter_values", "ALIVE"),
               ("limit", "10000"))


class RayDashboard:
    """One Ray dashboard (port 8265), reached directly or through a Kubernetes service proxy."""

    def __init__(self, http: Http, token: str | None = None, via_proxy: bool = False,
                 timeout: float = TIMEOUT, pod_token: Callable[[bool], str] | None = None) -> None:
        """`pod_token(fresh)` reads the Header Pod's token (RayTokens.get bound to the Job); None: none to read."""
        self.http = http
        self.timeout = timeout
        self._header = HEADER if via_proxy else "Authorization"
        self._token = token
        self._pod_token = pod_token
        self._unreadable = ""
        self.token_required: bool | None = None
        """Whether Ray's `/api/authentication_mode` says `token` (None: not asked yet)."""

    @property
    def source(self) -> str:
        return self.http.source

    def _headers(self) -> dict[str, str]:
        return {self._header: f"Bearer {self._token}"} if self._token else {}

    def _get(self, path: str, what: str, query: list[tuple[str, str]] | None = None,
             max_bytes: int | None = None, timeout: float | None = None) -> object:
        """One answer of Ray, read to `max_bytes` (MAX_ANSWER_BYTES when not given: cluster/errors.TooLarge past
        it, naming the bound), within `timeout` (the dashboard's when not given)."""
        req = Request("get", what, source=self.source)
        bound = MAX_ANSWER_BYTES if max_bytes is None else max_bytes
        refused = 0                      # no token -> the Pod's; a token Ray refuses -> the Pod's read again, once
        while True:
            try:
                return self.http.json("GET", path, req, query, timeout=timeout or self.timeout, headers=self._headers(),
                                      max_bytes=bound, max_depth=MAX_DEPTH)
            except (Unauthorized, Forbidden) as exc:
                refused += 1
                if refused > 2 or not self._take_pod_token(fresh=isinstance(exc, Forbidden)):
                    raise self._refused(exc) from None

    def _take_pod_token(self, fresh: bool) -> bool:
        """After a 401 (or a 403 with a token read before): the Header Pod's token, when Ray says it wants one."""
        if self._pod_token is None or (fresh and self._token is None) or not self.wants_token():
            return False
        try:
            self._token = self._pod_token(fresh)
        except TokenUnavailable as exc:
            self._unreadable = str(exc)
            return False
        self._header = HEADER
        return True

    def _refused(self, exc: ApiError) -> ApiError:
        """One line that says it was Ray's token authentication (never the token), else the answer as it was."""
        if not self.token_required:
            return exc
        if self._unreadable:
            return Unauthorized(f"{self.source}: {self._unreadable}", exc.status, exc.reason)
        return type(exc)(f"{self.source}: Ray's token authentication refused the request ({exc.status})",
                         exc.status, exc.reason)

    def authentication_mode(self) -> str:
        """Ray's public `/api/authentication_mode` (no token needed): `token`, `disabled`, or "" from a Ray that
        predates it (a 404); ApiError / Unreachable when the dashboard cannot be asked."""
        try:
            body = self.http.json("GET", "/api/authentication_mode",
                                  Request("get", "Ray authentication mode", source=self.source), timeout=self.timeout,
                                  max_depth=MAX_DEPTH)
        except NotFound:
            return ""
        mode = body.get("authentication_mode") if isinstance(body, dict) else None
        return mode if isinstance(mode, str) else ""

    def wants_token(self) -> bool:
        if self.token_required is None:
            try:
                self.token_required = self.authentication_mode() == "token"
            except (ApiError, Unreachable):
                return False
        return self.token_required

    @property
    def token_settled(self) -> bool:
        """Whether `authenticated_http` is final: a token is held, there is none to read, or Ray has answered
        whether it wants one (a dashboard not up yet has not)."""
        return self._token is not None or self._pod_token is None or self.token_required is not None

    def authenticated_http(self) -> Http:
        """The dashboard's Http carrying Ray's token when Ray wants one (for a tunnel, whose browser has none);
        TokenUnavailable when it wants one that cannot be read."""
        if self._token is None and self._pod_token is not None and self.wants_token():
            self._token = self._pod_token(False)
            self._header = HEADER
        if self._token is None:
            return self.http
        return self.http.sibling(self.http.base, self.http.source, {**self.http.headers, **self._headers()})

    def _envelope(self, path: str, what: str, query: list[tuple[str, str]] | None = None,
                  max_bytes: int | None = None) -> dict[str, Any]:
        body = self._get(path, what, query, max_bytes)
        if not isinstance(body, dict):
            raise ApiError(f"{self.source}: {path} did not answer with JSON")
        if body.get("result") is False:
            raise ApiError(f"{self.source}: {path} failed: {one_line(str(body.get('msg') or 'no message'))[:500]}")
        data = body.get("data")
        return data if isinstance(data, dict) else {}

    def alive_nodes(self) -> int:
        """ALIVE nodes: `num_filtered` of the state filter (dead nodes stay listed, so never total/len), else the
        ALIVE rows it lists; an answer with neither (a count that is no number of nodes: `true`, -3, 4,000 digits;
        rows that are no list) is an ApiError, one line."""
        result = self._envelope("/api/v0/nodes", "Ray nodes", list(ALIVE_QUERY)).get("result")
        filtered = result.get("num_filtered") if isinstance(result, dict) else None
        if type(filtered) is int and 0 <= filtered <= MAX_ROWS:
            return filtered
        rows = result.get("result") if isinstance(result, dict) and filtered is None else None
        if isinstance(rows, list):
            return sum(1 for row in rows if isinstance(row, dict) and row.get("state") == "ALIVE")
        raise ApiError(f"{self.source}: /api/v0/nodes answered without a count of alive nodes")

    def cluster_status_text(self) -> str:
        """`ray status` as the dashboard renders it (`/api/cluster_status?format=1`), verbatim."""
        text = self._envelope("/api/cluster_status", "Ray cluster status", [("format", "1")],
                              MAX_TEXT_BYTES).get("clusterStatus")
        return text if isinstance(text, str) else ""

    def jobs(self) -> list[dict[str, Any]]:
        """Ray jobs (`/api/jobs/`, a bare list)."""
        body = self._get("/api/jobs/", "Ray jobs")
        return [j for j in body if isinstance(j, dict)] if isinstance(body, list) else []

    def state_list(self, resource: str, what: str, query: list[tuple[str, str]] | None = None) -> list[dict[str, Any]]:
        """A State API list (`/api/v0/<resource>`, e.g. `actors?detail=true`): the entries of `data.result.result`,
        at most the query's `limit` (MAX_ROWS without one), as Ray answers: a head that sends more is not believed,
        since each row may be a request of its own (a stack dump, a stderr tail)."""
        result = self._envelope(f"/api/v0/{resource}", what, query).get("result")
        rows = result.get("result") if isinstance(result, dict) else None
        limit = next((ascii_int(value) for key, value in query or [] if key == "limit"), None) or MAX_ROWS
        return [row for row in rows if isinstance(row, dict)][:limit] if isinstance(rows, list) else []

    def node_ips(self) -> dict[str, str]:
        """Node ID -> node IP (`/nodes?view=summary`: `summary[].raylet.nodeId` and `ip`)."""
        summary = self._envelope("/nodes", "Ray nodes", [("view", "summary")]).get("summary")
        ips = {}
        for node in summary if isinstance(summary, list) else []:
            raylet = node.get("raylet") if isinstance(node, dict) else None
            if isinstance(raylet, dict) and isinstance(raylet.get("nodeId"), str) and isinstance(node.get("ip"), str):
                ips[raylet["nodeId"]] = node["ip"]
        return ips

    def profiling_enabled(self) -> bool:
        """Whether the head runs with RAY_DASHBOARD_ENABLE_PROFILING (`/api/profiling_enabled`); a Ray without
        the route: False. Ray answers it as its other REST routes, camel-cased under `data`:
        `{"result": true, "msg": "", "data": {"profilingEnabled": true, "profilingDefaults": {...}}}`
        (ray/dashboard/routes.py rest_response)."""
        try:
            body = self._get("/api/profiling_enabled", "Ray profiling")
        except NotFound:
            return False
        data = body.get("data") if isinstance(body, dict) else None
        return isinstance(data, dict) and data.get("profilingEnabled") is True

    def text(self, path: str, what: str, query: list[tuple[str, str]] | None = None,
             timeout: float | None = None) -> str:
        """A route that answers plain text (`/worker/traceback`, `/api/v0/logs/file`), read to MAX_TEXT_BYTES
        within `timeout` (the dashboard's when not given: a py-spy dump behind a route takes longer)."""
        body = self._get(path, what, query, MAX_TEXT_BYTES, timeout)
        return body if isinstance(body, str) else ""

    def status(self, expected: int | None = None) -> dict[str, Any]:
        """One poll: alive nodes vs expected, status text (its first MAX_STATUS_LINES lines), the last
        MAX_STATUS_JOBS Ray jobs; a failure becomes `error` (one line). The TUI's Ray tab shows them after each poll.

        The Ray jobs list is secondary: when only it fails, the counts stand and `jobs_error` says why.
        """
        polled = time.time()
        try:
            alive = self.alive_nodes()
            text = self.cluster_status_text()
        except (ApiError, Unreachable) as exc:
            return {"alive_nodes": None, "expected": expected, "status_text": "", "jobs": [], "jobs_error": None,
                    "error": str(exc), "source": self.source, "polled_at": polled}
        try:
            jobs, jobs_error = [_job_row(j) for j in self.jobs()[-MAX_STATUS_JOBS:]], None
        except (ApiError, Unreachable) as exc:
            jobs, jobs_error = [], str(exc)
        lines = text.splitlines()
        if len(lines) > MAX_STATUS_LINES:
            text = "\n".join([*lines[:MAX_STATUS_LINES], f"… {len(lines) - MAX_STATUS_LINES:,} more lines"])
        return {"alive_nodes": alive, "expected": expected, "status_text": text, "jobs": jobs,
                "jobs_error": jobs_error, "error": None, "source": self.source, "polled_at": polled}


def masked(status: dict[str, Any], known: KnownSecrets) -> dict[str, Any]:
    """A `status` entry with `known` masked in every text the head gave (`ray status`, each Ray job's fields, why it
    could not be read): the values of the Secrets the Job references, which the Ray tab's masking of the Job's own
    env values does not know."""
    if not known:
        return status

    def text(value: object) -> object:
        return known.mask_lines(value) if isinstance(value, str) else value

    jobs = [{key: text(value) for key, value in row.items()} for row in status.get("jobs") or []]
    return {**status, "status_text": text(status.get("status_text")), "error": text(status.get("error")),
            "jobs_error": text(status.get("jobs_error")), "jobs": jobs}


def unavailable(job: Job, reason: str) -> dict[str, Any]:
    """A status entry for a Job whose dashboard cannot be reached at all."""
    return {"alive_nodes": None, "expected": job.total_nodes, "status_text": "", "jobs": [], "jobs_error": None,
            "error": reason, "source": "", "polled_at": time.time()}


def _job_row(job: dict[str, Any]) -> dict[str, Any]:
    keys = ("submission_id", "job_id", "type", "status", "entrypoint", "message", "start_time", "end_time")
    return {key: job.get(key) for key in keys}
