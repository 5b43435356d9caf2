"""A stand-in Ray dashboard speaking the measured 2.60 wire shapes of ray-dashboard.md (envelopes, the ALIVE
filter with a DEAD node still listed, `format=1` text, the bare jobs list, token mode 401/403 and the public
`/api/authentication_mode`), for tests that
must not start Ray. The client under test is ours; this only plays the server's documented part."""

from __future__ import annotations

import asyncio
import threading

from aiohttp import web

STATUS_TEXT = ("======== Autoscaler status: 2026-11-29 18:30:47 ========\nNode status\nActive:\n 1 node_6fbe\n"
               " 1 node_6936\nPending:\n (no pending nodes)\n")


class FakeRayDashboard:
    def __init__(self, alive: int = 2, dead: int = 1, token: str | None = None) -> None:
        self.alive = alive
        self.dead = dead
        self.token = token
        self.up = True
        """False: Ray not started yet in its Pod; the platform's proxy answers 502 for every path."""
        self.requests: list[tuple[str, dict]] = []
        self.actors: list[dict] = []
        """What /api/v0/actors lists, whatever limit is asked (a hostile head's part)."""
        self.stderr = ""
        """What /api/v0/logs/file answers, whatever lines are asked."""
        self.status_text = STATUS_TEXT
        self.ray_jobs: list[dict] | None = None
        """What /api/jobs/ lists (None: one RUNNING job)."""
        self.url = ""
        self._loop = asyncio.new_event_loop()
        self._runner = None
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)

    def _authorized(self, request: web.Request) -> web.Response | None:
        self.requests.append((request.path_qs, dict(request.headers)))
        if not self.up:
            return web.Response(status=502, text="")
        if not self.token:
            return None
        header = request.headers.get("Authorization") or request.headers.get("X-Ray-Authorization")
        if not header:
            return web.Response(status=401, text="Unauthorized: Missing authentication token")
        if header != f"Bearer {self.token}":
            return web.Response(status=403, text="Forbidden: Invalid authentication token")
        return None

    async def nodes(self, request: web.Request) -> web.Response:
        if (denied := self._authorized(request)) is not None:
            return denied
        rows = [{"node_id": f"n{i}", "state": "ALIVE", "is_head_node": i == 0} for i in range(self.alive)]
        rows += [{"node_id": f"d{i}", "state": "DEAD"} for i in range(self.dead)]
        filtered = [r for r in rows if request.query.get("filter_values") in (None, r["state"])]
        return web.json_response({"result": True, "msg": "", "data": {"result": {
            "total": len(rows), "num_after_truncation": len(filtered), "num_filtered": len(filtered),
            "result": filtered, "partial_failure_warning": "", "warnings": None}}})

    async def cluster_status(self, request: web.Request) -> web.Response:
        if (denied := self._authorized(request)) is not None:
            return denied
        return web.json_response({"result": True, "msg": "", "data": {"clusterStatus": self.status_text}})

    async def jobs(self, request: web.Request) -> web.Response:
        if (denied := self._authorized(request)) is not None:
            return denied
        if self.ray_jobs is not None:
            return web.json_response(self.ray_jobs)
        return web.json_response([{"type": "SUBMISSION", "job_id": "02000000", "submission_id": "probe-job-1",
                                   "status": "RUNNING", "entrypoint": "python job.py", "message": "",
                                   "start_time": 1795977022059, "end_time": None}])

    async def state(self, request: web.Request) -> web.Response:
        if (denied := self._authorized(request)) is not None:
            return denied
        rows = self.actors if request.path.endswith("/actors") else []
        return web.json_response({"result": True, "msg": "", "data": {"result": {
            "total": len(rows), "num_after_truncation": len(rows), "num_filtered": len(rows), "result": rows}}})

    async def node_summary(self, request: web.Request) -> web.Response:
        if (denied := self._authorized(request)) is not None:
            return denied
        return web.json_response({"result": True, "msg": "", "data": {"summary": [
            {"raylet": {"nodeId": f"n{i}"}, "ip": f"10.0.0.{i + 1}"} for i in range(self.alive)]}})

    async def log_file(self, request: web.Request) -> web.Response:
        if (denied := self._authorized(request)) is not None:
            return denied
        return web.Response(text=self.stderr)

    async def authentication_mode(self, request: web.Request) -> web.Response:
        """Public, as in Ray: whether the dashboard wants a token."""
        if not self.up:
            return web.Response(status=502, text="")
        return web.json_response({"authentication_mode": "token" if self.token else "disabled"})

    def start(self) -> FakeRayDashboard:
        app = web.Application()
        app.router.add_get("/api/authentication_mode", self.authentication_mode)
        app.router.add_get("/api/v0/nodes", self.nodes)
        app.router.add_get("/api/cluster_status", self.cluster_status)
        app.router.add_get("/api/jobs/", self.jobs)
        app.router.add_get("/api/v0/actors", self.state)
        app.router.add_get("/api/v0/workers", self.state)
        app.router.add_get("/nodes", self.node_summary)
        app.router.add_get("/api/v0/logs/file", self.log_file)
        self._thread.start()

        async def boot():
            self._runner = web.AppRunner(app)
            await self._runner.setup()
            site = web.TCPSite(self._runner, "127.0.0.1", 0)
            await site.start()
            return site._server.sockets[0].getsockname()[1]

        port = asyncio.run_coroutine_threadsafe(boot(), self._loop).result(10)
        self.url = f"http://127.0.0.1:{port}"
        return self

    def stop(self) -> None:
        asyncio.run_coroutine_threadsafe(self._runner.cleanup(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)
