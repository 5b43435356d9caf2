"""The sandbox's rlark-server: the mutual-TLS port through which clients reach the control plane, the member
clusters' Kubernetes APIs, addresses inside them and Pod / Task ports (rlark-platform.md §0b).

Follows the platform's server/https_server.go (TLS 1.2+, RequireAndVerifyClientCert against the CA),
sign.go `handleCertCheck` (401 `{"error":"client certificate revoked"}`), handle_proxy.go (routes, 403 bodies,
podproxy/taskproxy 404 and 503 bodies, 400 on a target without a port), auth/permissions.go (admin,
`permission:agent-proxy` = "a,b" or "*"), kube_proxy.go and agent/local_http.go (the agent's local server:
`/api/kubernetes/*`, `/api/proxy/<url>`). Routes:
- `ANY /api/kubernetes/<path>`: the control plane (kcp root), in-process through `SandboxServer.api`;
  admin or `kubernetes-impersonation` needed (403 otherwise).
- `ANY /api/proxy/<agentID>/api/kubernetes/<path>`: member cluster `rlark-<agentID>`'s API, the same
  data-plane handler as `/clusters/rlark-<agentID>` (in-process; upgrades pass through as the handler takes
  the request itself). `ANY /api/proxy/<agentID>/api/proxy/http://<ip>:<port>/<path>`: an address there.
  An unknown or offline agent (fault `agent_offline`) gets 502 with no body, as Go's reverse proxy answers.
- `ANY /api/podproxy/<pod>:<port>/<path>`, `ANY /api/taskproxy/<task>:<port>/<path>`: the Pod CR with that
  `spec.podName` (or the most recently updated one with that `spec.taskName`), then its agent's proxy to
  `http://<status.ip>:<port>`; sandbox Pods share one Pod network, each with its own port block, so a port the
  agent registered for that Pod (`ProxyRegistry.register_pod`, e.g. a Ray head's 8265) is used instead.
- `GET /api/terminal/<agentID>/<namespace>/<pod>` (WebSocket): the console's terminal on that pod (a tty exec,
  rlark_sandbox/podexec.py), agent-proxy permission needed; the agent's own route
  `/api/proxy/<agentID>/api/terminal/<namespace>/<pod>` (agent/local_http.go) reaches the same terminal.
- `POST /api/sign {role: admin|agent, client_id}` -> `{cert_type, serial_number, subject_key_id, cert_pem,
  key_pem}` and `POST /api/revoke {cert_type, serial_number, subject_key_id}` (admin only, 403 otherwise;
  server/sign.go). The SSH roles (domain, ssh-guest) are not served.
Anything else is recorded as an unknown route and gets gin's `404 page not found`.

`publish(store, tls_dir)` writes Secret `default/rlark-admin-cert` (a fresh admin certificate, no CA);
`renew_lease` keeps Lease `default/rlark-server-peer-<host>` fresh (`<ip>/<peerID>/<peerToken>`, 30 s), as
server/cert.go `signAdminCert` and server/peer_manager.go `runBroadcaster` do.
"""

from __future__ import annotations

import asyncio
import base64
import logging
import re
import secrets
import socket
import uuid
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path

import aiohttp
from aiohttp import web
from cryptography import x509

from rlark_sandbox import certs
from rlark_sandbox.proxy import ProxyError, forward
from rlark_sandbox.resources import ROOT
from rlark_sandbox.server import SandboxServer, respond
from rlark_sandbox.store import Store, StoreError
from rlark_tui.model.objects import dig

SECRET_NAMESPACE = "default"
ADMIN_SECRET = "rlark-admin-cert"
LEASE_PREFIX = "rlark-server-peer-"
LEASE_SECONDS = 30
RENEW_SECONDS = 10.0
AGENT_PREFIX = "rlark-"
FORBIDDEN = "client certificate does not have proxy permission for the target"
_AGENT_URL = re.compile(r"^/api/proxy/(https?):/+([^/]+)(/.*)?$")
log = logging.getLogger(__name__)


def _error(status: int, message: str) -> web.Response:
    return respond({"error": message}, status)


def is_admin(meta: dict[str, str]) -> bool:
    return meta.get("permission:admin") == "true"


def may_proxy(meta: dict[str, str], agent: str) -> bool:
    """auth/permissions.go HasAgentProxyPermission."""
    if is_admin(meta):
        return True
    allowed = meta.get("permission:agent-proxy", "").split(",")
    return "*" in allowed or agent in allowed


async def _admin_body(request: web.Request, meta: dict[str, str]) -> dict | web.Response:
    """The JSON body of an admin-only request (sign.go), or the 403 / 400 answer."""
    if not is_admin(meta):
        return _error(403, "admin permission required")
    try:
        body = await request.json()
    except ValueError:
        body = None
    return body if isinstance(body, dict) else _error(400, "invalid request body")


def _micro_time(when: datetime | None = None) -> str:
    return (when or datetime.now(UTC)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class RlarkServer:
    def __init__(self, api: SandboxServer, revocations: certs.Revocations, tls_dir: Path,
                 on_down: Callable[[bool], Awaitable[None]] | None = None) -> None:
        self.api, self.tls_dir, self.on_down = api, tls_dir, on_down
        self.store, self.faults, self.proxies = api.store, api.faults, api.proxies
        self.revocations = revocations
        self._open: set[asyncio.BaseTransport] = set()
        self._session: aiohttp.ClientSession | None = None
        self._tasks: list[asyncio.Task] = []

    def app(self) -> web.Application:
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_route("*", "/{tail:.*}", self.handle)
        app.on_startup.append(self._startup)
        app.on_cleanup.append(self._cleanup)
        return app

    async def _startup(self, _app: web.Application) -> None:
        self._tasks.append(asyncio.get_running_loop().create_task(self._drop_while_down()))

    async def _cleanup(self, _app: web.Application) -> None:
        for task in self._tasks:
            task.cancel()
        if self._session:
            await self._session.close()

    async def _drop_while_down(self) -> None:
        """Fault `server_down`: end the connections of requests in flight (log follows, watches) and tell
        `on_down` (the Sandbox stops and restarts listening) when it is set or cleared."""
        was_down = False
        while True:
            await asyncio.sleep(0.2)
            down = self.faults.is_server_down()
            if down:
                for transport in list(self._open):
                    transport.close()
            if down != was_down and self.on_down is not None:
                try:
                    await self.on_down(down)
                except OSError as exc:
                    log.warning("rlark-server could not %s: %s; trying again", "stop" if down else "listen", exc)
                    continue
            was_down = down

    async def handle(self, request: web.Request) -> web.StreamResponse:
        """sign.go handleCertCheck (the handshake already required a certificate signed by the CA), then route."""
        transport = request.transport
        if self.faults.is_server_down() or transport is None:
            if transport is not None:
                transport.close()
            raise asyncio.CancelledError
        ssl_object = transport.get_extra_info("ssl_object")
        der = ssl_object.getpeercert(binary_form=True) if ssl_object is not None else None
        if not der:
            return _error(401, "client certificate required")
        cert = x509.load_der_x509_certificate(der)
        if self.revocations.revoked(cert):
            return _error(401, "client certificate revoked")
        meta = certs.metadata(cert)
        self.api.routes.served(request)
        self._open.add(transport)
        try:
            return await self.api.answer(request, lambda: self.dispatch(request, meta))
        finally:
            self._open.discard(transport)

    def _unknown(self, request: web.Request) -> web.Response:
        self.api.routes.record(request)
        return web.Response(status=404, text="404 page not found")

    # ----- routing (https_server.go registerHTTPSHandlers) -----
    async def dispatch(self, request: web.Request, meta: dict[str, str]) -> web.StreamResponse:
        path = request.path
        if path == "/api/kubernetes" or path.startswith("/api/kubernetes/"):
            return await self._kubernetes(request, meta, path[len("/api/kubernetes"):] or "/")
        if path.startswith("/api/terminal/") and request.method == "GET":
            parts = path[len("/api/terminal/"):].split("/")
            if len(parts) == 3 and all(parts):
                return await self._terminal(request, meta, *parts)
        if path in ("/api/sign", "/api/revoke") and request.method == "POST":
            body = await _admin_body(request, meta)
            if isinstance(body, web.Response):
                return body
            return self._sign(body) if path == "/api/sign" else self._revoke(body)
        routes = {"/api/proxy/": self._proxy, "/api/podproxy/": self._podproxy, "/api/taskproxy/": self._taskproxy}
        for prefix, route in routes.items():
            if path.startswith(prefix):
                target, slash, rest = path[len(prefix):].partition("/")
                if target and slash:
                    return await route(request, meta, target, "/" + rest)
        return self._unknown(request)

    async def _kubernetes(self, request: web.Request, meta: dict[str, str], rest: str) -> web.StreamResponse:
        if not meta.get("kubernetes-impersonation") and not is_admin(meta):
            return _error(403, "client certificate does not allow Kubernetes proxying")
        return await self.api.api(request, ROOT, rest)

    async def _proxy(self, request: web.Request, meta: dict[str, str], agent: str, rest: str) -> web.StreamResponse:
        """`/api/proxy/<agentID>/<rest>`: the agent's local server (agent/local_http.go)."""
        if not may_proxy(meta, agent):
            return _error(403, FORBIDDEN)
        cluster = AGENT_PREFIX + agent
        if self.faults.is_offline(agent) or cluster not in self.store.clusters():
            return web.Response(status=502)
        if rest == "/api/kubernetes" or rest.startswith("/api/kubernetes/"):
            return await self.api.api(request, cluster, rest[len("/api/kubernetes"):] or "/")
        terminal = rest.split("/")[3:]
        if rest.startswith("/api/terminal/") and len(terminal) == 2 and all(terminal) and request.method == "GET":
            return await self._terminal(request, meta, agent, terminal[0], terminal[1])
        address = _AGENT_URL.match(rest)
        if address:
            scheme, host, tail = address.groups()
            return await self._forward(request, f"{scheme}://{host}", tail or "/")
        return self._unknown(request)

    async def _terminal(self, request: web.Request, meta: dict[str, str], agent: str, namespace: str,
                        pod: str) -> web.StreamResponse:
        """`/api/terminal/<agentID>/<namespace>/<pod>` (handle_terminal.go): the agent's terminal on that pod."""
        if not may_proxy(meta, agent):
            return _error(403, FORBIDDEN)
        return await self.api.terminal(request, AGENT_PREFIX + agent, namespace, pod,
                                       request.query.get("container") or "main",
                                       request.query.get("command") or "/bin/bash")

    def _sign(self, body: dict) -> web.Response:
        role, client_id = body.get("role"), str(body.get("client_id") or "")
        if role == "admin":
            wanted = certs.ADMIN_METADATA
        elif role == "agent" and client_id:
            namespace = AGENT_PREFIX + client_id
            wanted = {"cert-role": "agent", "agent-id": client_id, "namespace": namespace,
                      "remote-dialer-client-id": client_id,
                      "kubernetes-impersonation": f"system:serviceaccount:{namespace}:rlark-agent"}
        elif role == "agent":
            return _error(400, "client_id is required for agent role")
        else:
            return _error(400, f"unsupported role: {role}")
        crt, key = certs.issue(self.tls_dir, wanted)
        serial, ski = certs.identity(x509.load_pem_x509_certificate(crt))
        return respond({"cert_type": "x509", "serial_number": serial, "subject_key_id": ski,
                        "cert_pem": crt.decode(), "key_pem": key.decode()})

    def _revoke(self, body: dict) -> web.Response:
        if body.get("cert_type") == "x509":
            self.revocations.revoke_identity(str(body.get("serial_number") or ""),
                                             str(body.get("subject_key_id") or ""))
        return web.Response(status=200)

    async def _podproxy(self, request: web.Request, meta: dict[str, str], target: str,
                        rest: str) -> web.StreamResponse:
        return await self._to_pod(request, meta, target, rest, "podName", "pod")

    async def _taskproxy(self, request: web.Request, meta: dict[str, str], target: str,
                         rest: str) -> web.StreamResponse:
        return await self._to_pod(request, meta, target, rest, "taskName", "task")

    async def _to_pod(self, request: web.Request, meta: dict[str, str], target: str, rest: str,
                      field: str, noun: str) -> web.StreamResponse:
        name, colon, port = target.rpartition(":")
        if not colon or not name:
            return _error(400, f"invalid target format: address {target}: missing port in address")
        pod = self._newest_pod(field, name)
        if pod is None:
            return _error(404, f"{noun} {name} not found")
        pod_name, ip = dig(pod, "spec", "podName", default=""), dig(pod, "status", "ip", default="")
        if not ip:
            return _error(503, f"pod {pod_name} not ready")
        cluster = pod["metadata"]["namespace"]
        agent = cluster.removeprefix(AGENT_PREFIX)
        if not may_proxy(meta, agent):
            return _error(403, FORBIDDEN)
        if self.faults.is_offline(agent):
            return web.Response(status=502)
        local = self.proxies.pod_target(cluster, pod_name, int(port)) if port.isdigit() else None
        return await self._forward(request, local or f"http://{ip}:{port}", rest)

    def _newest_pod(self, field: str, name: str) -> dict | None:
        """The Pod CR with `spec.<field>` = name and the highest resourceVersion (server/caches/pod_cache.go)."""
        found = self.store.scan("pods", ROOT, lambda p: dig(p, "spec", field) == name)
        newest = max(found, key=lambda p: int(p["metadata"].get("resourceVersion") or 0), default=None)
        return None if newest is None else self.store.get("pods", newest["metadata"]["name"],
                                                          newest["metadata"]["namespace"])

    async def _forward(self, request: web.Request, target: str, rest: str) -> web.StreamResponse:
        if self._session is None:
            self._session = self.proxies.network.client_session(auto_decompress=True)
        try:
            return await forward(request, self._session, target, rest)
        except ProxyError:
            return web.Response(status=502)


# ----- Secret and Lease on the control plane -----

def publish(store: Store, tls_dir: Path) -> None:
    """Secret `default/rlark-admin-cert` with a freshly signed admin certificate (client.crt, client.key)."""
    crt, key = certs.issue(tls_dir, certs.ADMIN_METADATA)
    data = {"client.crt": base64.b64encode(crt).decode(), "client.key": base64.b64encode(key).decode()}
    current = store.get("secrets", ADMIN_SECRET, SECRET_NAMESPACE)
    if current is not None:
        current["data"] = data
        store.update("secrets", current)
        return
    store.create("secrets", {
        "apiVersion": "v1", "kind": "Secret", "type": "Opaque", "data": data,
        "metadata": {"name": ADMIN_SECRET, "namespace": SECRET_NAMESPACE,
                     "labels": {"app": "rlark", "type": "admin-cert"},
                     "annotations": {"description": "Admin client certificate and key for RLark server"},
                     "finalizers": ["rlark.io/admin-cert-secret-protection"]}})


def lease_name() -> str:
    return LEASE_PREFIX + (socket.gethostname() or "node")


async def renew_lease(store: Store, ip: str) -> None:
    """Hold Lease `default/rlark-server-peer-<host>` with `<ip>/<peerID>/<peerToken>`; renew it every 10 s."""
    name = lease_name()
    holder = f"{ip}/{uuid.uuid4()}/{secrets.token_hex(16)}"
    now = _micro_time()
    spec = {"holderIdentity": holder, "leaseDurationSeconds": LEASE_SECONDS, "acquireTime": now,
            "renewTime": now, "leaseTransitions": 0}
    current = store.get("leases", name, SECRET_NAMESPACE)
    if current is None:
        store.create("leases", {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                                "metadata": {"name": name, "namespace": SECRET_NAMESPACE}, "spec": spec})
    else:
        spec["leaseTransitions"] = int(dig(current, "spec", "leaseTransitions", default=0)) + 1
        current["spec"] = spec
        store.update("leases", current)

    def renewed(lease: dict) -> dict:
        lease["spec"]["renewTime"] = _micro_time()
        return lease

    while True:
        await asyncio.sleep(RENEW_SECONDS)
        try:
            store.mutate("leases", name, renewed, SECRET_NAMESPACE)
        except StoreError:
            return
