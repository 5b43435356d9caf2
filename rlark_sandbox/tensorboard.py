"""The TensorBoard sidecar of head Pods whose Task has `tensorBoardDir` (port 6006, mapped per Pod like Ray's
ports) and the gateway's `ANY /api/v1/rlinf.io/v1alpha1/tasks/<task>/tensorboard/*path` proxy to it.

Facts (rlark-platform.md §5, the platform's tensorboard_handler.go and tensorboard_rewrite.go): the proxy goes
to port 6006 of the Task's first Running Pod (else the first Pod with a local name; none: 503 `{"error"}`),
drops Accept-Encoding, and rewrites absolute paths in HTML and CSS answers and in `Location` headers under
the proxy prefix (JavaScript is left alone). An upstream that does not answer gives 502, as Go's reverse proxy.
The sandbox starts a real `tensorboard` process lazily, on the first request for that Pod (tests and demos
that never ask pay nothing), and stops it with the Pod. `Faults.stop_tensorboard(pod)` stops one (the fault).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import aiohttp
from aiohttp import web

from rlark_sandbox.faults import Faults
from rlark_sandbox.podnet import PodNetwork
from rlark_sandbox.procs import POD_UID_ENV, end_group
from rlark_sandbox.store import Store
from rlark_tui.model import keys

PORT = 6006
START_SECONDS = 60.0
PREFIX = "/api/v1/rlinf.io/v1alpha1/tasks/{task}/tensorboard"
_DROP = {"connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te", "trailers",
         "transfer-encoding", "upgrade", "host", "authorization", "content-length", "accept-encoding"}
_HTML_ATTR = re.compile(r"""(?i)\b(href|src|action|poster|data-src|data-href|cite|longdesc|usemap|profile|"""
                        r"""manifest|background|icon)\s*=\s*(?:"(/[^"]*)"|'(/[^']*)')""")
_META_REFRESH = re.compile(r"""(?i)(url=)(/[^"'\s>]*)""")
_CSS_URL = re.compile(r"""(?i)url\(\s*["']?(/[^"')\s]*)["']?\s*\)""")
_CSS_IMPORT = re.compile(r"""(?i)@import\s+(?:url\(\s*)?["'](/[^"']*)["']""")


def _absolute(value: str, prefix: str) -> str | None:
    value = value.strip()
    if not value.startswith("/") or value.startswith("//"):
        return None
    return prefix + value


def rewrite_html(body: str, prefix: str) -> str:
    def attr(m: re.Match) -> str:
        quote, path = ('"', m.group(2)) if m.group(2) is not None else ("'", m.group(3))
        new = _absolute(path, prefix)
        return m.group(0) if new is None else f"{m.group(1)}={quote}{new}{quote}"
    body = _HTML_ATTR.sub(attr, body)
    body = _META_REFRESH.sub(lambda m: m.group(1) + (_absolute(m.group(2), prefix) or m.group(2)), body)
    return rewrite_css_urls(body, prefix)


def rewrite_css_urls(body: str, prefix: str) -> str:
    return _CSS_URL.sub(lambda m: f"url({_absolute(m.group(1), prefix) or m.group(1)})", body)


def rewrite_css(body: str, prefix: str) -> str:
    body = rewrite_css_urls(body, prefix)
    return _CSS_IMPORT.sub(lambda m: f'@import "{_absolute(m.group(1), prefix) or m.group(1)}"', body)


@dataclass
class _Board:
    cluster: str
    pod: str
    marker: str
    logdir: str
    host: str
    port: int
    pods_dir: Path
    proc: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"


class TensorBoards:
    """The sidecars: the agent declares one per head Pod with a `tensorBoardDir` and forgets it with the Pod;
    `url()` starts it on first use. Runs on the sandbox loop."""

    def __init__(self, faults: Faults | None = None, network: PodNetwork | None = None) -> None:
        self.faults = faults
        self.network = network if network is not None else PodNetwork("")
        self._boards: dict[tuple[str, str], _Board] = {}
        self._starting: dict[tuple[str, str], asyncio.Task] = {}
        self._session: aiohttp.ClientSession | None = None

    def declare(self, cluster: str, pod: str, uid: str, logdir: str, host: str, port: int, pods_dir: Path) -> None:
        """The Pod's TensorBoard, to listen on `host:port` (the Pod IP) in the Pod network once asked for."""
        if (cluster, pod) not in self._boards:
            self._boards[(cluster, pod)] = _Board(cluster, pod, f"{uid}-tensorboard", logdir, host, port, pods_dir)

    def running(self) -> list[str]:
        """`cluster/pod` of each live TensorBoard process."""
        return [f"{c}/{p}" for (c, p), b in self._boards.items() if b.proc and b.proc.poll() is None]

    async def forget(self, cluster: str, pod: str) -> None:
        board = self._boards.pop((cluster, pod), None)
        if board is not None:
            await self._stop(board)

    async def close(self) -> None:
        for key in list(self._boards):
            await self.forget(*key)
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def url(self, cluster: str, pod: str) -> str | None:
        """The local URL of the Pod's TensorBoard, started if needed; None when it has none or it is stopped."""
        board = self._boards.get((cluster, pod))
        if board is None:
            return None
        if self.faults is not None and self.faults.tensorboard_stopped(pod):
            await self._stop(board)
            return None
        if board.proc is not None and board.proc.poll() is None:
            return board.url
        task = self._starting.get((cluster, pod))
        if task is None:
            task = self._starting[(cluster, pod)] = asyncio.ensure_future(self._start(board))
        try:
            return await asyncio.shield(task)
        finally:
            if task.done():
                self._starting.pop((cluster, pod), None)

    def session(self) -> aiohttp.ClientSession:
        if self._session is None:
            self._session = self.network.client_session(auto_decompress=False)
        return self._session

    async def _start(self, board: _Board) -> str | None:
        Path(board.logdir).mkdir(parents=True, exist_ok=True)
        group_dir = board.pods_dir / board.marker
        group_dir.mkdir(parents=True, exist_ok=True)
        env = dict(os.environ, **{POD_UID_ENV: board.marker})
        board.proc = subprocess.Popen(
            [*self.network.enter(), sys.executable, "-P", "-m", "tensorboard.main", "--logdir", board.logdir,
             "--host", board.host,
             "--port", str(board.port), "--load_fast", "false", "--reload_interval", "2"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            start_new_session=True, close_fds=True, env=env)
        (group_dir / "pgid").write_text(str(board.proc.pid))
        loop = asyncio.get_running_loop()
        deadline = loop.time() + START_SECONDS
        while loop.time() < deadline and board.proc.poll() is None:
            try:
                async with self.session().get(board.url + "/data/runs",
                                               timeout=aiohttp.ClientTimeout(total=2)) as answer:
                    if answer.status == 200:
                        return board.url
            except (aiohttp.ClientError, TimeoutError):
                pass
            await asyncio.sleep(0.2)
        await self._stop(board)
        return None

    async def _stop(self, board: _Board) -> None:
        proc, board.proc = board.proc, None
        if proc is not None:
            await end_group(proc.pid, 2.0)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(1)
        shutil.rmtree(board.pods_dir / board.marker, ignore_errors=True)


def _json(status: int, message: str) -> web.Response:
    return web.json_response({"error": message}, status=status)


def _pod_for_task(store: Store, task: str) -> tuple[str, str] | None:
    """(cluster, local Pod name) of the Task's first Running Pod CR, else its first Pod with a local name."""
    pods, _ = store.list("pods", labels=f"{keys.TASK_NAME_LABEL}={task}")
    named = [p for p in pods if (p.get("spec") or {}).get("podName")]
    running = [p for p in named if (p.get("status") or {}).get("phase") == "Running"]
    for pod in running or named:
        return pod["metadata"]["namespace"], pod["spec"]["podName"]
    return None


async def proxy(request: web.Request, store: Store, boards: TensorBoards, task: str, rest: str) -> web.StreamResponse:
    """The gateway's Task TensorBoard route."""
    found = _pod_for_task(store, task)
    if found is None:
        return _json(503, f"no pod found for task {task}")
    target = await boards.url(*found)
    if target is None:
        return web.Response(status=502)
    prefix = PREFIX.format(task=task)
    url = target + "/" + rest.lstrip("/")
    if request.query_string:
        url += "?" + request.query_string
    headers = {k: v for k, v in request.headers.items() if k.lower() not in _DROP}
    headers["Accept-Encoding"] = "identity"
    body = await request.read()
    try:
        async with boards.session().request(request.method, url, headers=headers, data=body or None,
                                            allow_redirects=False,
                                            timeout=aiohttp.ClientTimeout(total=60)) as upstream:
            out_headers = {k: v for k, v in upstream.headers.items() if k.lower() not in _DROP}
            if "Location" in upstream.headers:
                out_headers["Location"] = _absolute(upstream.headers["Location"], prefix) or \
                    upstream.headers["Location"]
            media = upstream.headers.get("Content-Type", "").split(";")[0].strip().lower()
            if 200 <= upstream.status < 300 and media in ("text/html", "text/css"):
                text = (await upstream.read()).decode("utf-8", "replace")
                text = rewrite_html(text, prefix) if media == "text/html" else rewrite_css(text, prefix)
                out_headers.pop("Content-Encoding", None)
                return web.Response(body=text.encode(), status=upstream.status, headers=out_headers)
            response = web.StreamResponse(status=upstream.status, headers=out_headers)
            await response.prepare(request)
            async for chunk in upstream.content.iter_chunked(65536):
                await response.write(chunk)
            await response.write_eof()
            return response
    except (aiohttp.ClientError, TimeoutError):
        return web.Response(status=502)
