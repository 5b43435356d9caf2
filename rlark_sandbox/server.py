"""The sandbox's aiohttp application: control plane (`/clusters/root` and un-prefixed), gateway (`/api/v1/...`,
see gateway.py) and the fault admin route. The member clusters' data planes have no route here: rlark_server.py
reaches them in-process through `api(request, plane, path)` and `answer(request, call)`.

Wire behaviour follows ../shared/spec/kubectl-compat.md: plain discovery, /version v1.32, OpenAPI v3 + v2,
Tables for `kubectl get`, Status bodies for errors, newline-delimited watch streams. Every request needs the
bearer token (401 otherwise).
"""

from __future__ import annotations

import asyncio
import hmac
import json
import logging
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import aiohttp
from aiohttp import web

from rlark_sandbox import gateway, jsonbody, podexec, podmetrics, schema, selectors, tables
from rlark_sandbox.faults import Faults
from rlark_sandbox.loadgen import LoadGen
from rlark_sandbox.loadgen import parse_args as parse_loadgen
from rlark_sandbox.logs import LogsNotFound, LogStore, parse_ts
from rlark_sandbox.patch import PatchError, json_patch, merge_patch
from rlark_sandbox.proxy import ProxyError, ProxyRegistry, forward
from rlark_sandbox.resources import (
    CONTROL_KUBE,
    CONTROL_PLANE,
    COORDINATION,
    DATA_PLANE,
    GROUP,
    GROUP_VERSION,
    ROOT,
    VERSION,
    ResourceType,
    resource_type,
)
from rlark_sandbox.routes import RouteLog
from rlark_sandbox.store import Gone, Store, StoreError, qualified
from rlark_sandbox.tensorboard import TensorBoards

KUBE_VERSION = {
    "major": "1", "minor": "32", "gitVersion": "v1.32.3+kcp-rlark-sandbox",
    "gitCommit": "0000000000000000000000000000000000000000", "gitTreeState": "clean",
    "buildDate": "2026-01-01T00:00:00Z", "goVersion": "go1.23.6", "compiler": "gc", "platform": "linux/amd64",
}
CONTROL_FIELDS = {"metadata.name", "metadata.namespace"}
BOOKMARK_SECONDS = 10.0
log = logging.getLogger(__name__)
DATA_NAMESPACES = ("default", "kube-system", "rlark-system")


class ApiError(Exception):
    def __init__(self, code: int, reason: str, message: str, details: dict | None = None):
        super().__init__(message)
        self.code, self.reason, self.message, self.details = code, reason, message, details


def status_body(code: int, reason: str, message: str, details: dict | None = None) -> dict:
    body = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": message,
            "reason": reason, "code": code}
    if details:
        body["details"] = details
    return body


def respond(data, status: int = 200, headers: dict | None = None) -> web.Response:
    out = {"Content-Type": "application/json"}
    out.update(headers or {})
    return web.Response(body=json.dumps(data).encode(), status=status, headers=out)


def error_response(exc: ApiError) -> web.Response:
    return respond(status_body(exc.code, exc.reason, exc.message, exc.details), exc.code)


class UnknownRoute(ApiError):
    """No route of the platform matches the request's path (recorded in `RouteLog`)."""


def not_found_path() -> ApiError:
    return UnknownRoute(404, "NotFound", "the server could not find the requested resource")


def _flag(request: web.Request, name: str) -> bool:
    return request.query.get(name, "").lower() in ("true", "1")


def _int(request: web.Request, name: str) -> int | None:
    raw = request.query.get(name)
    if raw in (None, ""):
        return None
    try:
        return int(raw)
    except ValueError:
        raise ApiError(400, "BadRequest", f"invalid {name}: {raw!r}") from None


class SandboxServer:
    def __init__(self, store: Store, logs: LogStore, faults: Faults, proxies: ProxyRegistry, token: str,
                 tensorboards: TensorBoards | None = None, routes: RouteLog | None = None):
        self.store, self.logs, self.faults, self.proxies = store, logs, faults, proxies
        self._token = token
        self._session: aiohttp.ClientSession | None = None
        self.routes = routes or RouteLog()
        self.gateway = gateway.Gateway(store, logs, self.routes, tensorboards)
        self.loadgen = LoadGen(store, logs)
        self.exec_target: Callable[[str, str], podexec.ExecTarget | None] = lambda _cluster, _pod: None
        """Where a running pod's processes run (set by `Sandbox` to its agent's answer)."""
        self.metrics = podmetrics.PodMetricsApi(store, lambda _cluster: {})
        """metrics-server's PodMetrics (its `pod_groups` set by `Sandbox` to its agent's running containers)."""

    def app(self) -> web.Application:
        app = web.Application(middlewares=[self._guard], client_max_size=64 * 1024 * 1024)
        app.router.add_route("*", r"/{tail:[\s\S]*}", self.dispatch)
        app.on_cleanup.append(self._cleanup)
        return app

    async def _cleanup(self, _app: web.Application) -> None:
        self.loadgen.stop()
        if self._session:
            await self._session.close()

    @web.middleware
    async def _guard(self, request: web.Request, handler):
        auth = request.headers.get("Authorization", "")
        if not (auth.startswith("Bearer ") and hmac.compare_digest(auth[7:].strip().encode(),
                                                                   self._token.encode())):
            return respond(status_body(401, "Unauthorized", "Unauthorized"), 401)
        return await self.answer(request, lambda: handler(request), outage=not request.path.startswith("/_sandbox/"))

    async def answer(self, request: web.Request, call, outage: bool = True) -> web.StreamResponse:
        """`await call()` with the outage fault applied first and errors turned into Status answers."""
        if outage:
            mode = self.faults.outage_mode()
            if mode == "drop":
                _drop(request)
                raise asyncio.CancelledError
            if mode == "503":
                return respond(status_body(503, "ServiceUnavailable", "the server is currently unable to "
                                           "handle the request"), 503)
        try:
            return await call()
        except UnknownRoute as exc:
            self.routes.record(request)
            return error_response(exc)
        except ApiError as exc:
            return error_response(exc)
        except StoreError as exc:
            return respond(status_body(exc.code, exc.reason, exc.message, exc.details), exc.code)
        except (web.HTTPException, ConnectionError):
            raise
        except Exception as exc:
            log.exception("sandbox request %s %s failed", request.method, request.path)
            return respond(status_body(500, "InternalError", f"sandbox internal error: {exc}"), 500)

    # ----- routing -----
    async def dispatch(self, request: web.Request) -> web.StreamResponse:
        path = request.path
        if path == "/_sandbox/faults":
            return await self._faults(request)
        if path == "/_sandbox/loadgen":
            return await self._loadgen(request)
        if path.startswith("/clusters/"):
            workspace, _, rest = path[len("/clusters/"):].partition("/")
            if workspace == ROOT:
                return await self.api(request, ROOT, "/" + rest)
            raise not_found_path()  # member clusters only through rlark-server's /api/proxy/<agent>/api/kubernetes
        if path.startswith("/api/v1/") or path == "/api/v1":
            await self._apply_faults(request, "gateway", gateway.resource_of(path))
            crd = gateway.crd_route(path)
            if crd is not None:
                return await self._gateway_crd(request, *crd)
            terminal = gateway.terminal_route(path)
            if terminal is not None:
                return await self._gateway_terminal(request, terminal)
            return await self.gateway.handle(request, path)
        return await self.api(request, ROOT, path)

    async def _gateway_crd(self, request: web.Request, plural: str, name: str | None) -> web.StreamResponse:
        """Gateway CRD routes (`/api/v1/rlinf.io/v1alpha1/<plural>[/<name>]`, `?namespace=`): the control plane's
        objects; PATCH is always a merge patch; Pod CRs only GET and PATCH; Tasks get `status.tensorBoardProxy`.
        Failures are `{"error": message}` with kube_handler.go's codes (get 404, a body that is not JSON 400,
        others 500); a delete answers `{"message": "deleted"}`."""
        rtype = CONTROL_PLANE.get(plural)
        if rtype is None or (plural == "pods" and request.method not in ("GET", "PATCH")):
            return self.gateway.unknown(request)
        namespace = request.query.get("namespace") if rtype.namespaced else None
        if rtype.namespaced and name and not namespace:
            found = self.store.list(plural, fields=f"metadata.name={name}")[0]
            namespace = found[0]["metadata"]["namespace"] if found else "default"
        if rtype.namespaced and request.method == "POST" and not namespace:
            namespace = "default"
        parts = (["namespaces", namespace] if namespace else []) + [plural] + ([name] if name else [])
        if request.method == "PATCH":
            request = request.clone(headers={**request.headers, "Content-Type": "application/merge-patch+json"})
        try:
            response = await self._resource(request, ROOT, parts)
        except UnknownRoute:
            raise
        except (ApiError, StoreError) as exc:
            code = 404 if request.method == "GET" and name else 400 if "not valid JSON" in exc.message else 500
            return respond({"error": exc.message}, code)
        if request.method == "DELETE":
            return respond({"message": "deleted"})
        if plural == "tasks" and request.method == "GET" and isinstance(response, web.Response) \
                and response.status == 200 and isinstance(response.body, (bytes, bytearray)):
            data = json.loads(response.body)
            for item in data.get("items", [data]):
                if (item.get("spec") or {}).get("tensorBoardDir"):
                    item.setdefault("status", {})["tensorBoardProxy"] = \
                        f"/api/v1/rlinf.io/v1alpha1/tasks/{item['metadata']['name']}/tensorboard/"
            return respond(data)
        return response

    async def _faults(self, request: web.Request) -> web.Response:
        if request.method == "GET":
            return respond(self.faults.describe())
        if request.method == "DELETE":
            self.faults.clear()
            return respond(self.faults.describe())
        if request.method != "POST":
            raise ApiError(405, "MethodNotAllowed", "use GET, POST or DELETE")
        try:
            body = await request.json()
            self.faults.apply(body.get("op", ""), body.get("args"))
        except (ValueError, AttributeError) as exc:
            raise ApiError(400, "BadRequest", str(exc)) from None
        return respond(self.faults.describe())

    async def _loadgen(self, request: web.Request) -> web.Response:
        if request.method == "GET":
            return respond(self.loadgen.status())
        if request.method == "DELETE":
            self.loadgen.stop()
            return respond(self.loadgen.status())
        if request.method != "POST":
            raise ApiError(405, "MethodNotAllowed", "use GET, POST or DELETE")
        try:
            return respond(self.loadgen.start(**parse_loadgen(await request.json())))
        except ValueError as exc:
            raise ApiError(400, "BadRequest", str(exc)) from None

    async def _apply_faults(self, request: web.Request, plane: str, resource: str, verb: str | None = None) -> None:
        verb = verb or {"GET": "get", "POST": "create", "PUT": "update", "PATCH": "patch",
                        "DELETE": "delete"}.get(request.method, request.method.lower())
        delay = self.faults.delay_for(verb, resource, plane)
        if delay:
            await asyncio.sleep(delay)
        rule = self.faults.forced(verb, resource, plane)
        if rule:
            reasons = {400: "BadRequest", 401: "Unauthorized", 403: "Forbidden", 404: "NotFound",
                       409: "Conflict", 410: "Expired", 422: "Invalid", 429: "TooManyRequests",
                       500: "InternalError", 503: "ServiceUnavailable", 504: "Timeout"}
            reason = reasons.get(rule.code, "Unknown")
            message = rule.message or {
                403: f'{resource} is forbidden: User "rlark-sandbox" cannot {verb} resource "{resource}" '
                     "(sandbox fault)",
                409: f'Operation cannot be fulfilled on {resource}: conflict (sandbox fault)',
                422: f"{resource} is invalid: spec: Invalid value: sandbox fault",
            }.get(rule.code, f"sandbox fault: {rule.code} for {verb} {resource}")
            details: dict[str, object] = {"kind": resource}
            if rule.code == 422:
                details["causes"] = rule.causes or [{"reason": "FieldValueInvalid",
                                                     "message": "Invalid value: sandbox fault", "field": "spec"}]
            raise ApiError(rule.code, reason, message, details)

    async def api(self, request: web.Request, plane: str, path: str) -> web.StreamResponse:
        control = plane == ROOT
        if path == "/version" or path == "/version/":
            return respond(KUBE_VERSION)
        if path == "/api":
            return respond({"kind": "APIVersions", "versions": ["v1"],
                            "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0",
                                                            "serverAddress": request.host}]})
        if path in ("/healthz", "/livez", "/readyz"):
            return web.Response(body=b"ok", headers={"Content-Type": "text/plain"})
        if path == "/apis":
            return respond(self._group_list(control))
        groups = {g["name"]: g for g in self._group_list(control)["groups"]}
        if path.startswith("/apis/") and path[len("/apis/"):] in groups:
            return respond({"kind": "APIGroup", "apiVersion": "v1", **groups[path[len("/apis/"):]]})
        if path.startswith("/openapi/"):
            return self._openapi(path, control)
        parts = [p for p in path.split("/") if p]
        if control and parts[:3] == ["apis", GROUP, VERSION]:
            return await self._resource(request, plane, parts[3:])
        if control and parts[:3] == ["apis", COORDINATION, "v1"]:
            return await self._resource(request, plane, parts[3:], group=COORDINATION)
        if parts[:2] == ["api", "v1"]:
            return await self._resource(request, plane, parts[2:], core=True)
        if not control and parts[:3] == ["apis", podmetrics.GROUP, podmetrics.VERSION]:
            try:
                return respond(await self.metrics.answer(plane, parts[3:], request.query))
            except podmetrics.NotFound as exc:
                raise ApiError(404, "NotFound", str(exc)) from None
        if not control and parts[:3] == ["apis", "storage.k8s.io", "v1"]:
            return await self._resource(request, plane, parts[3:], group="storage.k8s.io")
        raise not_found_path()

    # ----- discovery -----
    @staticmethod
    def _group_list(control: bool) -> dict:
        served = [(GROUP, VERSION), (COORDINATION, "v1")] if control else [
            ("storage.k8s.io", "v1"), (podmetrics.GROUP, podmetrics.VERSION)]
        groups = []
        for group, version in served:
            gv = {"groupVersion": f"{group}/{version}", "version": version}
            groups.append({"name": group, "versions": [gv], "preferredVersion": gv})
        return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}

    @staticmethod
    def _resource_list(group_version: str, types: list[ResourceType]) -> dict:
        resources = []
        for rtype in types:
            resources.append({"name": rtype.plural, "singularName": rtype.singular, "namespaced": rtype.namespaced,
                              "kind": rtype.kind, "verbs": list(rtype.verbs), "shortNames": list(rtype.short_names)})
            if group_version == GROUP_VERSION:
                resources.append({"name": f"{rtype.plural}/status", "singularName": "", "namespaced": rtype.namespaced,
                                  "kind": rtype.kind, "verbs": ["get", "patch", "update"]})
            elif rtype.plural == "pods":
                resources.append({"name": "pods/log", "singularName": "", "namespaced": True, "kind": "Pod",
                                  "verbs": ["get"]})
                resources.append({"name": "pods/exec", "singularName": "", "namespaced": True,
                                  "kind": "PodExecOptions", "verbs": ["create", "get"]})
            elif rtype.plural == "services":
                resources.append({"name": "services/proxy", "singularName": "", "namespaced": True,
                                  "kind": "ServiceProxyOptions",
                                  "verbs": ["create", "delete", "get", "patch", "update"]})
        return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": group_version, "resources": resources}

    def _openapi(self, path: str, control: bool) -> web.Response:
        if path == "/openapi/v2":
            return web.Response(body=b"", status=200, headers={"Content-Type": "application/json"})
        if path == "/openapi/v3":
            paths = {f"apis/{GROUP_VERSION}": {"serverRelativeURL": f"/openapi/v3/apis/{GROUP_VERSION}"}} \
                if control else {}
            return respond({"paths": paths})
        if path == f"/openapi/v3/apis/{GROUP_VERSION}" and control:
            return respond(openapi_group_doc())
        raise not_found_path()

    # ----- resources -----
    async def _resource(self, request: web.Request, plane: str, parts: list[str], core: bool = False,
                        group: str = GROUP) -> web.StreamResponse:
        control = plane == ROOT
        if not parts:
            wanted = "" if core else group
            types = [*CONTROL_PLANE.values(), *CONTROL_KUBE.values()] if control else list(DATA_PLANE.values())
            served = [t for t in types if t.group == wanted]
            return respond(self._resource_list(served[0].api_version, served))
        namespace = None
        if parts[0] == "namespaces" and len(parts) >= 3:
            namespace, parts = parts[1], parts[2:]
        elif core and parts[0] == "namespaces" and not control:
            return self._namespaces(request, parts[1] if len(parts) == 2 else None)
        plural, name, sub, rest = parts[0], (parts[1] if len(parts) > 1 else None), \
            (parts[2] if len(parts) > 2 else None), "/".join(parts[3:])
        rtype = resource_type(plane, plural)
        if rtype is None or rtype.group != ("" if core else group) or (namespace and not rtype.namespaced):
            raise not_found_path()
        if sub and (not name or (control and sub != "status") or
                    (not control and sub not in ("log", "proxy", "exec")) or (control and rtype.group != GROUP)):
            raise not_found_path()
        method = request.method
        watching = method == "GET" and name is None and _flag(request, "watch")
        verb = ("watch" if watching else "list" if name is None else "get") if method == "GET" else {
            "POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}.get(method, method.lower())
        if verb not in rtype.verbs and not (sub in ("log", "proxy", "exec")):
            raise ApiError(405, "MethodNotAllowed", f"the server does not allow this method on the requested "
                                                    f"resource ({verb} {qualified(plural, plane)})")
        if watching:
            self.logs.streams.watch_asked(plane, plural)
        await self._apply_faults(request, plane, f"{plural}/{sub}" if sub else plural, verb)
        if sub == "log" and name is not None:
            return await self._pod_log(request, plane, namespace or "default", name)
        if sub == "exec" and plural == "pods" and name is not None:
            return await self._exec(request, plane, namespace or "default", name)
        if sub == "proxy" and name is not None:
            if request.path.endswith("/"):
                rest += "/"
            return await self._proxy(request, plane, namespace or "default", name, rest)
        if method == "GET":
            if name is None:
                if watching:
                    return await self._watch(request, plane, rtype, namespace)
                return self._list(request, plane, rtype, namespace)
            obj = self._get(plane, rtype, namespace, name)
            if _wants_table(request):
                return respond(tables.table(rtype, [obj], include=request.query.get("includeObject", "Metadata")))
            return respond(obj)
        if method == "POST" and name is None:
            return await self._create(request, plane, rtype, namespace)
        if method == "PUT" and name:
            return await self._update(request, plane, rtype, namespace, name, sub)
        if method == "PATCH" and name:
            return await self._patch(request, plane, rtype, namespace, name, sub)
        if method == "DELETE" and name:
            return await self._delete(request, plane, rtype, namespace, name)
        raise ApiError(405, "MethodNotAllowed", "the server does not allow this method on the requested resource")

    def _namespaces(self, request: web.Request, name: str | None) -> web.Response:
        def ns(n: str) -> dict:
            return {"kind": "Namespace", "apiVersion": "v1",
                    "metadata": {"name": n, "uid": f"namespace-{n}", "resourceVersion": "1",
                                 "creationTimestamp": "2026-01-01T00:00:00Z"}, "status": {"phase": "Active"}}
        if name is None:
            return respond({"kind": "NamespaceList", "apiVersion": "v1", "metadata": {"resourceVersion": "1"},
                            "items": [ns(n) for n in DATA_NAMESPACES]})
        if name not in DATA_NAMESPACES:
            raise ApiError(404, "NotFound", f'namespaces "{name}" not found',
                           {"name": name, "kind": "namespaces"})
        return respond(ns(name))

    def _get(self, plane: str, rtype: ResourceType, namespace: str | None, name: str) -> dict:
        obj = self.store.get(rtype.plural, name, namespace or "", plane)
        if obj is None:
            raise ApiError(404, "NotFound", f'{qualified(rtype.plural, plane)} "{name}" not found',
                           {"name": name, "group": rtype.group, "kind": rtype.plural})
        return obj

    def _selectors(self, request: web.Request, plane: str) -> tuple[str | None, str | None]:
        labels, fields = request.query.get("labelSelector"), request.query.get("fieldSelector")
        try:
            selectors.object_matcher(labels, fields, CONTROL_FIELDS if plane == ROOT else None)
        except ValueError as exc:
            raise ApiError(400, "BadRequest", str(exc)) from None
        return labels, fields

    def _list(self, request: web.Request, plane: str, rtype: ResourceType, namespace: str | None) -> web.Response:
        labels, fields = self._selectors(request, plane)
        items, rv = self.store.list(rtype.plural, namespace, plane, labels, fields, copy=False)
        if _wants_table(request):
            return respond(tables.table(rtype, items, str(rv), request.query.get("includeObject", "Metadata")))
        return respond({"apiVersion": rtype.api_version, "kind": f"{rtype.kind}List",
                        "metadata": {"resourceVersion": str(rv)},
                        "items": items + self.faults.extra_for(rtype.plural, plane)})

    async def _watch(self, request: web.Request, plane: str, rtype: ResourceType,
                     namespace: str | None) -> web.StreamResponse:
        labels, fields = self._selectors(request, plane)
        since = request.query.get("resourceVersion")
        timeout = _int(request, "timeoutSeconds")
        response = web.StreamResponse(status=200, headers={"Content-Type": "application/json",
                                                           "Cache-Control": "no-cache"})
        gone = None
        gone_code = self.faults.take_gone(rtype.plural)
        if gone_code is not None:
            self.store.expire_history()
            gone = f"too old resource version: {since or 0} ({self.store.resource_version})"
        sub = None
        if gone is None:
            try:
                sub = self.store.watch(rtype.plural, plane, namespace, since, labels, fields)
                self.logs.streams.watch_opened(plane, rtype.plural)
            except Gone as exc:
                gone = exc.message
        await response.prepare(request)
        if sub is None:
            expired = {"type": "ERROR", "object": status_body(410 if gone_code is None else gone_code, "Expired",
                                                              gone or "")}
            await response.write(json.dumps(expired).encode() + b"\n")
            return response
        table = _wants_table(request)
        include = request.query.get("includeObject", "Metadata")
        bookmarks = _flag(request, "allowWatchBookmarks") and not table
        started = last_sent = time.monotonic()
        try:
            while True:
                elapsed = time.monotonic() - started
                if timeout is not None and elapsed >= timeout:
                    break
                every = self.faults.watch_close_seconds
                if every and elapsed >= every:
                    break
                mode = self.faults.outage_mode()
                if mode:
                    if mode == "drop":
                        _drop(request)
                    break
                caught_up = self.store.resource_version
                event = await sub.next(timeout=0.25)
                if event is None:
                    if sub.closed or request.transport is None or request.transport.is_closing():
                        break
                    if not (bookmarks and time.monotonic() - last_sent >= BOOKMARK_SECONDS):
                        continue
                    obj = {"kind": rtype.kind, "apiVersion": rtype.api_version,
                           "metadata": {"resourceVersion": str(caught_up)}}
                    line = json.dumps({"type": "BOOKMARK", "object": obj}).encode() + b"\n"
                else:
                    obj = tables.table(rtype, [event.object], include=include) if table else event.object
                    line = json.dumps({"type": event.type, "object": obj}).encode() + b"\n"
                last_sent = time.monotonic()
                try:
                    await response.write(line)
                except (ConnectionError, RuntimeError):
                    break
        finally:
            sub.close()
        return response

    async def _body(self, request: web.Request):
        try:
            return jsonbody.loads(await request.read())
        except ValueError as exc:
            raise ApiError(400, "BadRequest", f"the request body is not valid JSON: {exc}") from None

    def _validate(self, request: web.Request, plane: str, rtype: ResourceType, obj: dict) -> tuple[dict, dict]:
        """Schema check for rlinf.io kinds; returns (pruned object, extra response headers)."""
        if plane != ROOT or rtype.group != GROUP:
            return obj, {}
        checked = schema.check(rtype.plural, obj)
        mode = request.query.get("fieldValidation", "Warn")
        headers = {}
        if checked.unknown and mode == "Strict":
            listed = ", ".join(f'unknown field "{f}"' for f in checked.unknown)
            raise ApiError(400, "BadRequest", f"strict decoding error: {listed}")
        if checked.unknown and mode == "Warn":
            headers["Warning"] = ", ".join(f'299 - "unknown field \\"{f}\\""' for f in checked.unknown)
        if checked.causes:
            name = (obj.get("metadata") or {}).get("name", "")
            items = [f"{c.field}: {c.message}" for c in checked.causes]
            listed = items[0] if len(items) == 1 else "[" + ", ".join(items) + "]"
            raise ApiError(422, "Invalid", f'{rtype.kind}.{rtype.group} "{name}" is invalid: {listed}',
                           {"name": name, "group": rtype.group, "kind": rtype.kind,
                            "causes": [c.as_dict() for c in checked.causes]})
        return checked.obj, headers

    def _check_identity(self, rtype: ResourceType, obj, namespace: str | None, name: str | None) -> dict:
        if not isinstance(obj, dict):
            raise ApiError(400, "BadRequest", "the request body must be a JSON object")
        kind, api_version = obj.get("kind"), obj.get("apiVersion")
        if (kind and kind != rtype.kind) or (api_version and api_version != rtype.api_version):
            raise ApiError(400, "BadRequest", f"the API version in the data ({api_version}) and kind ({kind}) "
                                              f"do not match {rtype.api_version}, Kind={rtype.kind}")
        meta = obj.setdefault("metadata", {})
        if not isinstance(meta, dict):
            raise ApiError(400, "BadRequest", "metadata must be an object")
        if rtype.namespaced:
            if meta.get("namespace") and meta["namespace"] != namespace:
                raise ApiError(400, "BadRequest", "the namespace of the provided object does not match the "
                                                  "namespace sent on the request")
            meta["namespace"] = namespace
        else:
            meta.pop("namespace", None)
        if name is not None:
            if meta.get("name") and meta["name"] != name:
                raise ApiError(400, "BadRequest", f'the name of the object ({meta["name"]}) does not match the '
                                                  f"name on the URL ({name})")
            meta["name"] = name
        return obj

    async def _create(self, request: web.Request, plane: str, rtype: ResourceType,
                      namespace: str | None) -> web.Response:
        if rtype.namespaced and not namespace:
            raise ApiError(405, "MethodNotAllowed", f"create a {rtype.kind} in a namespace")
        obj = self._check_identity(rtype, await self._body(request), namespace, None)
        meta = obj["metadata"]
        if not meta.get("name") and not meta.get("generateName"):
            raise ApiError(422, "Invalid", f"{rtype.kind}.{rtype.group} \"\" is invalid: metadata.name: Required "
                                           "value: name or generateName is required",
                           {"group": rtype.group, "kind": rtype.kind, "causes": [
                               {"reason": "FieldValueRequired", "field": "metadata.name",
                                "message": "Required value: name or generateName is required"}]})
        obj, headers = self._validate(request, plane, rtype, obj)
        created = self.store.create(rtype.plural, obj, plane, dry_run=_dry_run(request))
        return respond(created, 201, headers)

    async def _update(self, request: web.Request, plane: str, rtype: ResourceType, namespace: str | None,
                      name: str, sub: str | None) -> web.Response:
        obj = self._check_identity(rtype, await self._body(request), namespace, name)
        self._get(plane, rtype, namespace, name)
        if not obj["metadata"].get("resourceVersion"):
            cause = {"reason": "FieldValueInvalid", "field": "metadata.resourceVersion",
                     "message": "Invalid value: 0x0: must be specified for an update"}
            raise ApiError(422, "Invalid", f'{rtype.kind}.{rtype.group} "{name}" is invalid: '
                                           f'metadata.resourceVersion: {cause["message"]}',
                           {"name": name, "group": rtype.group, "kind": rtype.kind, "causes": [cause]})
        obj, headers = self._validate(request, plane, rtype, obj)
        updated = self.store.update(rtype.plural, obj, plane, subresource=sub, dry_run=_dry_run(request))
        return respond(updated, 200, headers)

    async def _patch(self, request: web.Request, plane: str, rtype: ResourceType, namespace: str | None,
                     name: str, sub: str | None) -> web.Response:
        ctype = request.headers.get("Content-Type", "").split(";")[0].strip()
        if ctype not in ("application/merge-patch+json", "application/json-patch+json"):
            raise ApiError(415, "UnsupportedMediaType",
                           f"the body of the request was in an unknown format - accepted media types include: "
                           f"application/json-patch+json, application/merge-patch+json ({ctype} is not supported "
                           f"by {rtype.api_version}, Kind={rtype.kind})")
        body = await self._body(request)
        for _attempt in range(5):
            current = self._get(plane, rtype, namespace, name)
            try:
                patched = merge_patch(current, body) if ctype == "application/merge-patch+json" \
                    else json_patch(current, body)
            except PatchError as exc:
                raise ApiError(422 if ctype.startswith("application/json-patch") else 400,
                               "Invalid" if ctype.startswith("application/json-patch") else "BadRequest",
                               f"the patch could not be applied: {exc}") from None
            patched = self._check_identity(rtype, patched, namespace, name)
            pinned = isinstance(body, dict) and "resourceVersion" in (body.get("metadata") or {})
            if not pinned:
                patched["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
            patched, headers = self._validate(request, plane, rtype, patched)
            try:
                updated = self.store.update(rtype.plural, patched, plane, subresource=sub,
                                            dry_run=_dry_run(request))
            except StoreError as exc:
                if exc.code == 409 and not pinned:
                    continue
                raise
            return respond(updated, 200, headers)
        raise ApiError(409, "Conflict", f'{qualified(rtype.plural, plane)} "{name}": too many concurrent changes')

    async def _delete(self, request: web.Request, plane: str, rtype: ResourceType, namespace: str | None,
                      name: str) -> web.Response:
        self._get(plane, rtype, namespace, name)
        options = await self._body(request) if request.can_read_body else None
        policy = (options or {}).get("propagationPolicy") if isinstance(options, dict) else None
        orphan = request.query.get("propagationPolicy", policy) == "Orphan"
        deleted = self.store.delete(rtype.plural, name, namespace or "", plane, dry_run=_dry_run(request),
                                    orphan=orphan)
        return respond(deleted)

    # ----- data plane: logs and service proxy -----
    async def _pod_log(self, request: web.Request, plane: str, namespace: str, name: str) -> web.StreamResponse:
        if plane == ROOT:
            raise not_found_path()
        pod = self._get(plane, DATA_PLANE["pods"], namespace, name)
        try:
            container = podexec.pod_container(pod, request.query.get("container"))
        except podexec.Refused as exc:
            raise ApiError(exc.code, exc.reason, exc.message) from None
        tail = _int(request, "tailLines")
        limit = _int(request, "limitBytes")
        since = _since(request)
        timestamps = _flag(request, "timestamps")
        previous = _flag(request, "previous")
        args = (plane, namespace, name, container)
        try:
            if _flag(request, "follow") and not previous:
                def stop() -> bool:
                    transport = request.transport
                    return transport is None or transport.is_closing() or self.faults.outage_mode() is not None
                pieces = self.logs.follow(*args, tail=tail, since=since, timestamps=timestamps, limit_bytes=limit,
                                          stop=stop)
                first = None
            else:
                first = self.logs.read_bytes(*args, previous=previous, tail=tail, since=since, timestamps=timestamps,
                                             limit_bytes=limit)
                pieces = None
        except LogsNotFound as exc:
            waiting = _waiting_reason(pod, container)
            message = (f'container "{container}" in pod "{name}" is waiting to start: {waiting}'
                       if waiting and not previous else str(exc))
            raise ApiError(400, "BadRequest", message) from None
        response = web.StreamResponse(status=200, headers={"Content-Type": "text/plain"})
        await response.prepare(request)
        cut = self.faults.take_cut(follow=pieces is not None)
        sent = 0
        try:
            async for piece in _aiter([first] if first is not None else pieces):
                lines = piece.count(b"\n")
                if cut is not None and sent + lines > cut:
                    # the stream drops in the middle of the line after the first `cut` lines
                    start = 0
                    for _ in range(cut - sent):
                        start = piece.index(b"\n", start) + 1
                    line_end = piece.index(b"\n", start)
                    await response.write(piece[:start + max(1, (line_end - start) // 2)])
                    _drop(request)
                    return response
                if piece:
                    await response.write(piece)
                sent += lines
            if self.faults.outage_mode():
                _drop(request)
                return response
            await response.write_eof()
        except (ConnectionError, RuntimeError):
            pass
        finally:
            if pieces is not None:
                await pieces.aclose()
        return response

    # ----- data plane: exec, and the console's terminal over it -----
    def _exec_target(self, plane: str, namespace: str, name: str, container: str | None):
        """(target, pod still there?) of a pod that can take an exec, else the API server's error."""
        pod = self._get(plane, DATA_PLANE["pods"], namespace, name)
        container = podexec.check_pod(pod, container)
        target = self.exec_target(plane, name)
        if target is None:
            raise podexec.Refused(500, "InternalError", f'container not found ("{container}")')
        uid = pod["metadata"]["uid"]

        def alive() -> bool:
            current = self.store.get("pods", name, namespace, plane)
            return (current is not None and current["metadata"].get("uid") == uid
                    and not current["metadata"].get("deletionTimestamp"))
        return target, alive

    async def _exec(self, request: web.Request, plane: str, namespace: str, name: str) -> web.StreamResponse:
        if plane == ROOT:
            raise not_found_path()
        try:
            target, alive = self._exec_target(plane, namespace, name, request.query.get("container"))
            options = podexec.exec_options(request.query)
        except podexec.Refused as exc:
            raise ApiError(exc.code, exc.reason, exc.message) from None
        if request.headers.get("Upgrade", "").lower() != "websocket":
            raise ApiError(400, "BadRequest", "Upgrade request required")

        def alive_and_connected() -> bool:
            if self.faults.outage_mode() == "drop":
                _drop(request)
                return False
            return alive()
        return await podexec.serve_exec(request, options, target, alive_and_connected,
                                        lambda rows, cols: self.logs.streams.resized(name, rows, cols))

    async def _gateway_terminal(self, request: web.Request, pod_cr: str) -> web.StreamResponse:
        """The gateway's `pods/<pod CR>/terminal` (terminal.go): find the data-plane pod, then the terminal."""
        found = self.store.list("pods", fields=f"metadata.name={pod_cr}")[0]
        if not found:
            return respond({"error": f"pod {pod_cr} not found"}, 404)
        cr = found[0]
        cluster = cr["metadata"].get("namespace", "")
        spec = cr.get("spec") or {}
        if not cluster.startswith("rlark-"):
            return respond({"error": "pod is not in an agent namespace"}, 400)
        if not spec.get("podNamespace") or not spec.get("podName"):
            return respond({"error": "pod namespace or name is empty"}, 400)
        return await self.terminal(request, cluster, spec["podNamespace"], spec["podName"],
                                   request.query.get("container") or "main", request.query.get("command") or "/bin/sh")

    async def terminal(self, request: web.Request, cluster: str, namespace: str, name: str, container: str,
                       command: str) -> web.StreamResponse:
        """The agent's terminal (agent/terminal.go): a tty exec; a pod that cannot take one gets an error frame."""
        try:
            target, alive = self._exec_target(cluster, namespace, name, container)
        except (podexec.Refused, ApiError, StoreError) as exc:
            return await podexec.refuse_terminal(request, str(getattr(exc, "message", exc)))
        return await podexec.serve_terminal(request, command, target, alive,
                                            lambda rows, cols: self.logs.streams.resized(name, rows, cols))

    async def _proxy(self, request: web.Request, plane: str, namespace: str, name: str,
                     rest: str) -> web.StreamResponse:
        if plane == ROOT:
            raise not_found_path()
        parts = name.split(":")
        if len(parts) == 3:
            parts = parts[1:]
        service, port = parts[0], (int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else None)
        self._get(plane, DATA_PLANE["services"], namespace, service)
        target = self.proxies.lookup(plane, namespace, service, port)
        if target is None:
            raise ApiError(503, "ServiceUnavailable", f'no endpoints available for service "{name}"')
        if self._session is None:
            self._session = self.proxies.network.client_session(auto_decompress=True)
        try:
            return await forward(request, self._session, target, rest)
        except ProxyError as exc:
            raise ApiError(503, "ServiceUnavailable", str(exc)) from None


async def _aiter(source):
    if hasattr(source, "__aiter__"):
        async for item in source:
            yield item
    else:
        for item in source:
            yield item


def _drop(request: web.Request) -> None:
    """End the connection without a proper end of the response (a dropped connection, for fault tests)."""
    if request.transport is not None:
        request.transport.close()


def _since(request: web.Request) -> datetime | None:
    """The later of `sinceSeconds` and `sinceTime`, as the kubelet's NewLogOptions takes them."""
    since = None
    since_seconds = _int(request, "sinceSeconds")
    if since_seconds is not None:
        since = datetime.now(UTC) - timedelta(seconds=since_seconds)
    if request.query.get("sinceTime"):
        try:
            since_time = parse_ts(request.query["sinceTime"])
        except ValueError:
            raise ApiError(400, "BadRequest", "invalid sinceTime") from None
        if since is None or since_time > since:
            since = since_time
    return since


def _waiting_reason(pod: dict, container: str) -> str | None:
    for status in (pod.get("status") or {}).get("containerStatuses") or []:
        waiting = (status.get("state") or {}).get("waiting")
        if status.get("name") == container and waiting is not None:
            return waiting.get("reason") or "ContainerCreating"
    return "ContainerCreating" if (pod.get("status") or {}).get("phase", "Pending") == "Pending" else None


def _wants_table(request: web.Request) -> bool:
    return "as=Table" in request.headers.get("Accept", "")


def _dry_run(request: web.Request) -> bool:
    values = request.query.getall("dryRun", [])
    if any(v != "All" for v in values):
        raise ApiError(400, "BadRequest", f"unsupported dryRun value: {values}")
    return bool(values)


def openapi_group_doc() -> dict:
    """The OpenAPI v3 document of rlinf.io/v1alpha1 kubectl needs: one PATCH per kind with fieldValidation."""
    paths = {}
    for rtype in CONTROL_PLANE.values():
        scope = "namespaces/{namespace}/" if rtype.namespaced else ""
        gvk = {"group": GROUP, "version": VERSION, "kind": rtype.kind}
        ref = {"$ref": f"#/components/schemas/io.rlinf.{VERSION}.{rtype.kind}"}
        content = {"application/json": {"schema": ref}}
        params = [{"name": "name", "in": "path", "required": True, "schema": {"type": "string"}}]
        if rtype.namespaced:
            params.append({"name": "namespace", "in": "path", "required": True, "schema": {"type": "string"}})
        paths[f"/apis/{GROUP_VERSION}/{scope}{rtype.plural}/{{name}}"] = {
            "parameters": params,
            "get": {"x-kubernetes-group-version-kind": gvk, "x-kubernetes-action": "get",
                    "responses": {"200": {"description": "OK", "content": content}}},
            "patch": {
                "x-kubernetes-group-version-kind": gvk, "x-kubernetes-action": "patch",
                "parameters": [
                    {"name": "dryRun", "in": "query", "schema": {"type": "string"}},
                    {"name": "fieldManager", "in": "query", "schema": {"type": "string"}},
                    {"name": "fieldValidation", "in": "query", "schema": {"type": "string"}},
                ],
                "requestBody": {"content": {
                    "application/json-patch+json": {"schema": {"type": "object"}},
                    "application/merge-patch+json": {"schema": {"type": "object"}},
                }},
                "responses": {"200": {"description": "OK", "content": content}},
            },
        }
    schemas = {}
    for rtype in CONTROL_PLANE.values():
        doc = _strip_internal(schema.SCHEMAS[rtype.plural])
        doc["x-kubernetes-group-version-kind"] = [{"group": GROUP, "version": VERSION, "kind": rtype.kind}]
        schemas[f"io.rlinf.{VERSION}.{rtype.kind}"] = doc
    return {"openapi": "3.0.0", "info": {"title": "Kubernetes CRD Swagger", "version": "v0.1.0"},
            "paths": paths, "components": {"schemas": schemas}}


def _strip_internal(node):
    if isinstance(node, dict):
        out = {k: _strip_internal(v) for k, v in node.items() if k != "open"}
        if node.get("open"):
            out["x-kubernetes-preserve-unknown-fields"] = True
        return out
    if isinstance(node, list):
        return [_strip_internal(v) for v in node]
    return node
