"""Service proxy targets of the data planes: which local URL answers for `<service>:<port>` in a cluster,
and the forwarding the `services/<name>:<port>/proxy/...` route does. Pods' own ports too: a Pod's port (8265 of
a Ray head) is a port of its Pod IP in the sandbox's Pod network, reached through `network.client_session()`.

The agent registers a target once a service has a backend, e.g. a Ray head's dashboard:
    proxies.register("rlark-gpu-a", "demo-ppo-actor-ray-head", 8265, "http://127.0.0.1:52713")
and removes it with `proxies.unregister(cluster, service, port)` (or `unregister(cluster, service)` for
every port). `namespace` defaults to "rlark-system". Pod ports: `register_pod(cluster, pod, port, url)`,
`pod_target(cluster, pod, port)` (rlark-server's podproxy and taskproxy), `unregister_pod(cluster, pod)`.
Thread-safe. Not persisted: targets are processes.
"""

from __future__ import annotations

import threading

import aiohttp
from aiohttp import web

from rlark_sandbox.podnet import PodNetwork
from rlark_sandbox.resources import DATA_NAMESPACE

_HOP_HEADERS = {"connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te", "trailers",
                "transfer-encoding", "upgrade", "host", "authorization", "content-length"}


class ProxyRegistry:
    def __init__(self, network: PodNetwork | None = None) -> None:
        self.network = network if network is not None else PodNetwork("")
        """How the targets are reached: Pod addresses inside the sandbox's Pod network (podnet.py)."""
        self._lock = threading.Lock()
        self._targets: dict[tuple[str, str, str, int], str] = {}
        self._pods: dict[tuple[str, str, int], str] = {}

    def register(self, cluster: str, service: str, port: int, url: str, namespace: str = DATA_NAMESPACE) -> None:
        with self._lock:
            self._targets[(cluster, namespace, service, int(port))] = url.rstrip("/")

    def unregister(self, cluster: str, service: str, port: int | None = None,
                   namespace: str = DATA_NAMESPACE) -> None:
        with self._lock:
            for key in list(self._targets):
                if key[:3] == (cluster, namespace, service) and (port is None or key[3] == int(port)):
                    del self._targets[key]

    def lookup(self, cluster: str, namespace: str, service: str, port: int | None) -> str | None:
        """The target URL; with no port given, the only port registered for that service."""
        with self._lock:
            if port is not None:
                return self._targets.get((cluster, namespace, service, port))
            found = [url for key, url in self._targets.items() if key[:3] == (cluster, namespace, service)]
            return found[0] if len(found) == 1 else None

    def register_pod(self, cluster: str, pod: str, port: int, url: str) -> None:
        with self._lock:
            self._pods[(cluster, pod, int(port))] = url.rstrip("/")

    def unregister_pod(self, cluster: str, pod: str) -> None:
        with self._lock:
            for key in [k for k in self._pods if k[:2] == (cluster, pod)]:
                del self._pods[key]

    def pod_target(self, cluster: str, pod: str, port: int) -> str | None:
        with self._lock:
            return self._pods.get((cluster, pod, int(port)))

    def targets(self) -> dict[str, str]:
        with self._lock:
            return {f"{c}/{ns}/{s}:{p}": url for (c, ns, s, p), url in self._targets.items()}


async def forward(request: web.Request, session: aiohttp.ClientSession, target: str, rest: str) -> web.StreamResponse:
    """Forward `request` to `target` + `rest` (query kept); stream the answer back. 503 if it is unreachable."""
    url = f"{target}/{rest.lstrip('/')}"
    if request.query_string:
        url += "?" + request.query_string
    headers = {k: v for k, v in request.headers.items() if k.lower() not in _HOP_HEADERS}
    body = await request.read()
    try:
        async with session.request(request.method, url, headers=headers, data=body or None,
                                   allow_redirects=False, timeout=aiohttp.ClientTimeout(total=60)) as upstream:
            response = web.StreamResponse(status=upstream.status)
            for key, value in upstream.headers.items():
                if key.lower() not in _HOP_HEADERS and key.lower() != "content-encoding":
                    response.headers[key] = value
            await response.prepare(request)
            async for chunk in upstream.content.iter_chunked(65536):
                await response.write(chunk)
            await response.write_eof()
            return response
    except (aiohttp.ClientError, TimeoutError) as exc:
        raise ProxyError(f"error trying to reach service: {exc}") from None


class ProxyError(Exception):
    """The proxied backend did not answer."""
