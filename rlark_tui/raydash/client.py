"""Ray dashboard HTTP client: the routes ray-dashboard.md recommends, token header, short timeouts.

Owns alive-node counting (num_filtered of the ALIVE filter), the `ray status` text and the Ray jobs list.
"""

from __future__ import annotations

import time

from rlark_tui.cluster.errors import ApiError, Request, Unreachable
from rlark_tui.cluster.http import Http

TIMEOUT = 5.0
ALIVE_QUERY = [("filter_keys", "state"), ("filter_predicates", "="), ("filter_values", "ALIVE"),
               ("limit", "10000")]


class RayDashboard:
    """One Ray dashboard (port 8265), reached directly or through a Kubernetes service proxy."""

    def __init__(self, http: Http, token: str | None = None, via_proxy: bool = False,
                 timeout: float = TIMEOUT) -> None:
        self.http = http
        self.timeout = timeout
        header = "X-Ray-Authorization" if via_proxy else "Authorization"
        self._headers = {header: f"Bearer {token}"} if token else {}

    @property
    def source(self) -> str:
        return self.http.source

    def _get(self, path: str, what: str, query: list[tuple[str, str]] | None = None) -> object:
        return self.http.json("GET", path, Request("get", what, source=self.source), query,
                              timeout=self.timeout, headers=self._headers)

    def _envelope(self, path: str, what: str, query=None) -> dict:
        body = self._get(path, what, query)
        if not isinstance(body, dict):
            raise ApiError(f"{self.source}: {path} did not answer with JSON")
        if body.get("result") is False:
            raise ApiError(f"{self.source}: {path} failed: {body.get('msg') or 'no message'}")
        data = body.get("data")
        return data if isinstance(data, dict) else {}

    def alive_nodes(self) -> int:
        """ALIVE nodes: `num_filtered` of the state filter (dead nodes stay listed, so never total/len)."""
        result = self._envelope("/api/v0/nodes", "Ray nodes", ALIVE_QUERY).get("result")
        if isinstance(result, dict):
            if isinstance(result.get("num_filtered"), int):
                return result["num_filtered"]
            rows = result.get("result") or []
            return sum(1 for row in rows if isinstance(row, dict) and row.get("state") == "ALIVE")
        raise ApiError(f"{self.source}: /api/v0/nodes answered without a result")

    def cluster_status_text(self) -> str:
        """`ray status` as the dashboard renders it (`/api/cluster_status?format=1`), verbatim."""
        text = self._envelope("/api/cluster_status", "Ray cluster status", [("format", "1")]).get("clusterStatus")
        return text if isinstance(text, str) else ""

    def jobs(self) -> list[dict]:
        """Ray jobs (`/api/jobs/`, a bare list)."""
        body = self._get("/api/jobs/", "Ray jobs")
        return [j for j in body if isinstance(j, dict)] if isinstance(body, list) else []

    def status(self, expected: int | None = None) -> dict:
        """One poll: alive nodes vs expected, status text, jobs; a failure becomes `error` (one line).

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
            jobs, jobs_error = [_job_row(j) for j in self.jobs()], None
        except (ApiError, Unreachable) as exc:
            jobs, jobs_error = [], str(exc)
        return {"alive_nodes": alive, "expected": expected, "status_text": text, "jobs": jobs,
                "jobs_error": jobs_error, "error": None, "source": self.source, "polled_at": polled}


def unavailable(job, reason: str) -> dict:
    """A status entry for a Job whose dashboard cannot be reached at all."""
    return {"alive_nodes": None, "expected": job.total_nodes, "status_text": "", "jobs": [], "jobs_error": None,
            "error": reason, "source": "", "polled_at": time.time()}


def _job_row(job: dict) -> dict:
    keys = ("submission_id", "job_id", "type", "status", "entrypoint", "message", "start_time", "end_time")
    return {key: job.get(key) for key in keys}
