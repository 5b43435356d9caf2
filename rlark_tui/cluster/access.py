"""ClusterAccess: every read and write rlark makes against an RLark installation (kubeconfig, flags, config file).

Owns the control plane (rlinf.io kinds: list, watch, get, create, patch, delete), the member clusters' data planes
(pods, events, `pods/log`) and Pods reached through rlark-server (`/api/proxy/<agent>/api/kubernetes`,
`/api/podproxy`, `/api/taskproxy`) or a context the config file names, the gateway (job logs fallback,
clusters) and the Ray dashboard of a Job.
"""

from __future__ import annotations

import builtins
import contextlib
import json
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any, TypeVar

from rlark_tui.cluster import kubeconfig as kc
from rlark_tui.cluster import lean, tls
from rlark_tui.cluster import server as srv
from rlark_tui.cluster.errors import ApiError, Gone, Request, Unreachable, status_error
from rlark_tui.cluster.http import MERGE_PATCH, READ_TIMEOUT, Http, LineStream, TailRead, same_origin, seg
from rlark_tui.cluster.kinds import (
    DOMAINS,
    JOBS,
    NODES,
    PODS,
    TASKS,
    Kind,
    ListResult,
    addressable,
    list_result,
    selector_query,
)
from rlark_tui.cluster.recent import RecentReads
from rlark_tui.cluster.transport import decode_json, request_timeout
from rlark_tui.errors import UsageError
from rlark_tui.local.config import RlarkConfig, load_config
from rlark_tui.model import keys
from rlark_tui.model.objects import Job, dig
from rlark_tui.text.patterns import SlowPatterns

if TYPE_CHECKING:
    import argparse

    from kubernetes import client as k8s

    from rlark_tui.checks.gather import LogHeads
    from rlark_tui.cluster.logreads import LogReads
    from rlark_tui.cluster.secrets import SecretReads
    from rlark_tui.raydash.client import RayDashboard

WATCH_SECONDS = 240
BACKOFF_START = 0.5
BACKOFF_MAX = 15.0
SHORT_WATCH_SECONDS = 0.5
"""A watch that ends (or answers 410 Gone) sooner than this was no watch (client-go's "very short watch"): a
second in a row waits the backoff and is said, and only a watch that lasted resets the backoff, so a server that
ends each watch as it opens (after an event or none) is asked at the backoff's pace, not thousands of times a
second."""
PARALLEL_REQUESTS = 8
Objects = list[dict[str, Any]]
"""API objects as decoded (inside ClusterAccess, `list` is its method)."""
T = TypeVar("T")
R = TypeVar("R")


@dataclass(frozen=True)
class WatchEvent:
    """One step of list+watch: RELIST (items = the full list), CONNECTED (a watch is open again),
    ADDED/MODIFIED/DELETED (obj), ERROR (error)."""

    type: str
    obj: dict[str, Any] | None = None
    items: list[dict[str, Any]] = field(default_factory=list)
    error: Exception | None = None


class Backoff:
    """Exponential reconnect delay: 0.5 s doubling to 15 s, reset after a success."""

    def __init__(self, start: float = BACKOFF_START, ceiling: float = BACKOFF_MAX) -> None:
        self.start = start
        self.ceiling = ceiling
        self.delay = start

    def next(self) -> float:
        delay = self.delay
        self.delay = min(self.ceiling, self.delay * 2)
        return delay

    def reset(self) -> None:
        self.delay = self.start


def _plain_control_plane(kubeconfig: kc.Kubeconfig, context: str) -> Http | None:
    """The control plane of a plain context (token, basic auth or client certificate; no proxy or TLS server
    name) over a urllib3 pool with its one TLS context: no kubernetes ApiClient, whose import is most of the
    TUI's start-up after Textual's. None when the context needs the client (exec plugin, auth provider, ...)."""
    plain = kc.plain_context(kubeconfig, context)
    if plain is None or not lean.plainly_reachable(plain) or plain.tls_server_name is not None:
        return None
    host = plain.host
    try:
        ssl_context = lean.tls_context(plain) if host.startswith("https://") else None
    except (OSError, ValueError, tls.TLSError):
        return None  # material the client may still load, or refuse with its own line
    return Http(host, None, "control plane", lean.auth_headers(plain), ssl_context=ssl_context)


def parallel_map(fn: Callable[[T], R], items: Iterable[T], workers: int = PARALLEL_REQUESTS) -> list[R]:
    """`[fn(item) for item in items]` with up to `workers` calls in flight (blocking I/O); the first error raises."""
    items = list(items)
    if len(items) < 2:
        return [fn(item) for item in items]
    with ThreadPoolExecutor(max_workers=min(workers, len(items)), thread_name_prefix="rlark-io") as pool:
        return list(pool.map(fn, items))


class ClusterAccess:
    """All I/O against one control plane, plus the data planes (through rlark-server) and gateway it can find.

    With a kubeconfig the control plane is its context; in server-only mode (`kubeconfig` None: a server address
    and a client certificate from flags or config) it is rlark-server's `/api/kubernetes`.
    """

    def __init__(self, kubeconfig: kc.Kubeconfig | None, context: str, config: RlarkConfig,
                 request_timeout: float | None = None, server_options: srv.ServerOptions | None = None) -> None:
        self.kubeconfig = kubeconfig
        self.request_timeout = request_timeout or READ_TIMEOUT
        self.context = context
        self.config = config
        self.read_only_reason = (f"context {context} is read-only in its kubeconfig"
                                 if kubeconfig is not None and kubeconfig.read_only(context) else "")
        """Why every mutation of this context is refused (flow/actions.py), '' when its kubeconfig allows them."""
        self.server_options = server_options or srv.ServerOptions.from_sources(None, config)
        self._endpoint: srv.ServerEndpoint | None = None
        self.recent_reads = RecentReads()
        """Answers several topics share (cluster/recent.py), for this context only."""
        self._log_reads: LogReads | None = None
        self._check_logs: LogHeads | None = None
        self._secret_reads: SecretReads | None = None
        self.slow_patterns = SlowPatterns()
        """Launch-record patterns that overran their budget in this context's run checks (refused at once after)."""
        self.first_list: lean.FirstList | None = None
        """The TUI's first Jobs list when it was read while the TUI started (lean.FirstList)."""
        self._log_reads_lock = threading.Lock()
        self.server_problem = ""
        """Why rlark-server cannot be used (empty when it can, or before it was first needed)."""
        from rlark_tui.raydash.token import RayTokens
        self.ray_tokens = RayTokens(self)
        """Ray tokens read from Header Pods (in memory only)."""
        self._client: k8s.ApiClient | None
        self.http: Http
        if kubeconfig is None:
            self._endpoint = srv.resolve(self.server_options, None, None, keys.DEFAULT_NAMESPACE)
            self._client = srv.api_client(self._endpoint, f"{self._endpoint.url}/api/kubernetes")
            self.http = Http.for_client(self._client, "control plane")
            self.namespace = None
            self.gateway = config.gateway
        else:
            plain = _plain_control_plane(kubeconfig, context)
            if plain is None:
                self._client = kc.api_client(kubeconfig, context)
                self.http = Http.for_client(self._client, "control plane")
            else:
                self._client, self.http = None, plain
            self.namespace = kc.namespace_of(kubeconfig, context)
            self.gateway = config.gateway or kubeconfig.gateway_of(context)
        self.server = self.http.base
        self._planes: dict[str, Http] = {}
        self._server_clients: dict[str, k8s.ApiClient] = {}
        self._lock = threading.Lock()

    @classmethod
    def open(cls, kubeconfig: str | None = None, context: str | None = None,
             config: RlarkConfig | None = None, request_timeout: float | None = None,
             server_options: srv.ServerOptions | None = None, read: kc.Kubeconfig | None = None) -> ClusterAccess:
        """Connect like kubectl: --kubeconfig / $KUBECONFIG / ~/.kube/config / in-cluster; --context or current.
        Without any kubeconfig, a complete set of rlark-server options (address and certificate) is enough.
        `read`: the kubeconfig as already read (contexts.chosen's, for each of several contexts)."""
        config = config if config is not None else load_config()
        options = server_options or srv.ServerOptions.from_sources(None, config)
        try:
            loaded = read or kc.load(kubeconfig)
        except UsageError:
            if kubeconfig is None and options.complete:
                return cls(None, "rlark-server", config, request_timeout, options)
            raise
        name = kc.resolve_context(loaded, context)
        return cls(loaded, name, config, request_timeout, options)

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> ClusterAccess:
        """From the global CLI flags (`--kubeconfig`, `--context`, `--request-timeout`, rlark-server's flags)."""
        timeout = request_timeout(args)
        config = load_config()
        return cls.open(getattr(args, "kubeconfig", None), getattr(args, "context", None), config,
                        request_timeout=timeout, server_options=srv.ServerOptions.from_sources(args, config),
                        read=getattr(args, "kubeconfig_read", None))

    # -- sources -------------------------------------------------------------------------------------------

    def server_endpoint(self) -> srv.ServerEndpoint | None:
        """rlark-server as resolved from flags, config, the kubeconfig extension or discovery (found once, then
        kept); None, with `server_problem` saying why, when it cannot be used."""
        with self._lock:
            if self._endpoint is not None:
                return self._endpoint
            extension = self.kubeconfig.server_extension(self.context) if self.kubeconfig is not None else None
            try:
                self._endpoint = srv.resolve(self.server_options, extension, self.http,
                                             self.namespace or keys.DEFAULT_NAMESPACE)
            except Unreachable as exc:
                self.server_problem = str(exc)
                return None
            self.server_problem = ""
            return self._endpoint

    def _server_http(self, path: str, source: str) -> Http | None:
        """A URL under rlark-server with the client certificate (one ApiClient per base, kept)."""
        endpoint = self.server_endpoint()
        if endpoint is None:
            return None
        base = f"{endpoint.url}{path}"
        with self._lock:
            client = self._server_clients.get(base)
            if client is None:
                client = self._server_clients[base] = srv.api_client(endpoint, base)
        if endpoint.lease_ip:
            source += f", address from a Lease: if {endpoint.lease_ip} cannot be reached, pass --server-address"
        return Http.for_client(client, source)

    def data_plane(self, cluster: str) -> Http | None:
        """The Kubernetes API of one member cluster (by cluster namespace): a context the config file's `clusters`
        maps it to, else rlark-server's `/api/proxy/<agent>/api/kubernetes`; None (`server_problem` says why)."""
        with self._lock:
            if cluster in self._planes:
                return self._planes[cluster]
        context = self.config.clusters.get(cluster)
        if context is not None:
            if self.kubeconfig is None or context not in self.kubeconfig.contexts:
                raise Unreachable(f"data plane {cluster}: context {context!r} is not in the kubeconfig", "config")
            plane = Http.for_client(kc.api_client(self.kubeconfig, context), f"data plane {cluster}")
        else:
            proxied = self._server_http(f"/api/proxy/{seg(srv.agent_id(cluster))}/api/kubernetes",
                                        f"data plane {cluster} (rlark-server)")
            if proxied is None:
                return None
            plane = proxied
        with self._lock:
            return self._planes.setdefault(cluster, plane)

    def data_plane_api_client(self, cluster: str) -> k8s.ApiClient | None:
        """The `kubernetes` ApiClient of one cluster's data plane (for its own calls, e.g. exec), or None."""
        plane = self.data_plane(cluster)
        return plane.api_client if plane is not None else None

    def pod_proxy(self, pod: str, port: int, source: str = "") -> Http | None:
        """A port of a data-plane pod (by its pod name) through rlark-server's `/api/podproxy/<pod>:<port>`."""
        return self._server_http(f"/api/podproxy/{seg(pod)}:{int(port)}", source or f"pod {pod}:{port} (rlark-server)")

    def task_proxy(self, task: str, port: int, source: str = "") -> Http | None:
        """A port of the newest Pod of a Task (`<job>-<role>`) through rlark-server's `/api/taskproxy`."""
        return self._server_http(f"/api/taskproxy/{seg(task)}:{int(port)}",
                                 source or f"task {task}:{port} (rlark-server)")

    def member_clusters(self) -> list[str]:
        """Cluster namespaces of the member clusters: the config file's `clusters` plus those Node CRs live in."""
        found = set(self.config.clusters)
        try:
            found.update(str((node.get("metadata") or {}).get("namespace") or "") for node in self.nodes())
        except (ApiError, Unreachable):
            pass
        return sorted(cluster for cluster in found if cluster)

    def gateway_http(self) -> Http | None:
        """The gateway, verified against the system CAs (or `gateway_ca`) and sent `gateway_headers` when it is the
        config file's own (a gateway a kubeconfig's extension names is anyone's who wrote that kubeconfig: the
        operator's proxy token went to it); it shares the control plane's TLS and credentials only at the same
        origin (the sandbox)."""
        if not self.gateway:
            return None
        headers = self.config.gateway_headers if self.config.gateway else {}
        if self.config.gateway_ca is None and same_origin(self.gateway, self.http.base):
            return self.http.sibling(self.gateway, "gateway", headers)
        return Http(self.gateway, source="gateway", headers=headers, ca_certs=self.config.gateway_ca)

    def version(self, timeout: float = 5.0) -> dict[str, Any]:
        result = self.http.json("GET", "/version", Request("get", "version"), timeout=timeout)
        return result if isinstance(result, dict) else {}

    def answers(self, timeout: float) -> None:
        """Ask the control plane for one Job within `timeout`: Unreachable when no answer comes (an error answer is
        an answer). The reconciler's probe of a control plane whose watches went silent."""
        with contextlib.suppress(ApiError):
            self.http.json("GET", JOBS.path(), Request("list", JOBS.plural),
                           [("limit", "1")], timeout=timeout)

    # -- rlinf.io kinds ------------------------------------------------------------------------------------

    def list(self, kind: Kind, namespace: str | None = None, label_selector: str | None = None,
             field_selector: str | None = None, timeout: float | None = None) -> ListResult:
        body = self.http.json("GET", kind.path(namespace), Request("list", kind.plural, namespace=namespace),
                              selector_query(label_selector, field_selector), timeout=timeout or self.request_timeout)
        return list_result(body, kind)

    def get(self, kind: Kind, name: str, namespace: str | None = None) -> dict[str, Any]:
        return self._object("GET", kind, name, namespace, "get")

    def create(self, kind: Kind, body: dict[str, Any], namespace: str | None = None, dry_run: bool = False) -> dict[str, Any]:
        name = (body.get("metadata") or {}).get("name")
        query = [("dryRun", "All")] if dry_run else []
        query.append(("fieldManager", "rlark"))
        result = self.http.json("POST", kind.path(namespace), Request("create", kind.plural, name, namespace),
                                query, body=body, timeout=self.request_timeout)
        return result if isinstance(result, dict) else {}

    def patch(self, kind: Kind, name: str, patch: dict[str, Any], namespace: str | None = None) -> dict[str, Any]:
        """JSON merge patch (the only patch the platform's gateway knows)."""
        result = self.http.json("PATCH", kind.path(namespace, name), Request("patch", kind.plural, name, namespace),
                                [("fieldManager", "rlark")], body=patch, content_type=MERGE_PATCH,
                                timeout=self.request_timeout)
        return result if isinstance(result, dict) else {}

    def replace(self, kind: Kind, body: dict[str, Any], namespace: str | None = None, dry_run: bool = False) -> dict[str, Any]:
        """PUT of a whole object (its `metadata.resourceVersion` guards against a concurrent change: 409)."""
        name = (body.get("metadata") or {}).get("name")
        query = [("dryRun", "All")] if dry_run else []
        query.append(("fieldManager", "rlark"))
        result = self.http.json("PUT", kind.path(namespace, name), Request("update", kind.plural, name, namespace),
                                query, body=body, timeout=self.request_timeout)
        return result if isinstance(result, dict) else {}

    def delete(self, kind: Kind, name: str, namespace: str | None = None) -> dict[str, Any]:
        result = self.http.json("DELETE", kind.path(namespace, name),
                                Request("delete", kind.plural, name, namespace),
                                body={"kind": "DeleteOptions", "apiVersion": "v1",
                                      "propagationPolicy": "Background"}, timeout=self.request_timeout)
        return result if isinstance(result, dict) else {}

    def _object(self, method: str, kind: Kind, name: str, namespace: str | None, verb: str) -> dict[str, Any]:
        result = self.http.json(method, kind.path(namespace, name), Request(verb, kind.plural, name, namespace),
                                timeout=self.request_timeout)
        return result if isinstance(result, dict) else {}

    def watch_stream(self, kind: Kind, resource_version: str, namespace: str | None = None,
                     label_selector: str | None = None, timeout_seconds: int = WATCH_SECONDS,
                     field_selector: str | None = None) -> LineStream:
        query = [("watch", "true"), ("allowWatchBookmarks", "true"), ("timeoutSeconds", str(timeout_seconds))]
        if resource_version:
            query.append(("resourceVersion", resource_version))
        query += selector_query(label_selector, field_selector)
        return self.http.stream(kind.path(namespace), Request("watch", kind.plural, namespace=namespace), query,
                                read_timeout=timeout_seconds + 15)

    def list_watch(self, kind: Kind, stop: threading.Event, namespace: str | None = None,
                   label_selector: str | None = None, timeout_seconds: int = WATCH_SECONDS,
                   on_stream: Callable[[LineStream], object] | None = None, backoff: Backoff | None = None,
                   field_selector: str | None = None) -> Iterator[WatchEvent]:
        """List, then watch from the list's resourceVersion; relist on 410; reconnect with backoff on errors.

        A dropped connection resumes the watch from the last resourceVersion; an error answer (403 on watch,
        5xx) lists again first, so a watch the server refuses still refreshes, at the backoff's pace (the
        backoff resets only once a watch has lasted SHORT_WATCH_SECONDS; a second watch in a row that did not is
        an error at the backoff's pace, as is a second 410 Gone in a row).
        `on_stream(stream)` receives each open watch so another thread can close it to stop at once.
        """
        backoff = backoff or Backoff()
        version: str | None = None
        short = 0  # watches in a row that were no watch (SHORT_WATCH_SECONDS)
        while not stop.is_set():
            opened: float | None = None  # when this round's watch opened
            try:
                if version is None:
                    first = self.first_list.take(kind, namespace, label_selector, field_selector,
                                                 self.request_timeout) if self.first_list is not None else None
                    result = first or self.list(kind, namespace, label_selector, field_selector)
                    version = result.resource_version
                    yield WatchEvent("RELIST", items=result.items)
                stream = self.watch_stream(kind, version, namespace, label_selector, timeout_seconds,
                                           field_selector)
                if on_stream:
                    on_stream(stream)
                opened = time.monotonic()
                yield WatchEvent("CONNECTED")
                for line in stream:
                    if stop.is_set():
                        break
                    if not line.strip():
                        continue
                    event = decode_json(line, text=False)
                    obj = event.get("object") if isinstance(event, dict) else None
                    if not isinstance(event, dict) or not isinstance(obj, dict):
                        raise ValueError("a watch event without an object")
                    kind_of_event = event.get("type")
                    if kind_of_event == "ERROR":
                        code = obj.get("code")  # a hostile server's: `1e400` (inf), '²', a list
                        code = code if isinstance(code, int) and not isinstance(code, bool) else 0
                        raise status_error(code, json.dumps(obj), Request("watch", kind.plural)) if code != 410 \
                            else Gone("gone (410)", 410, "Expired")
                    new_version = dig(obj, "metadata", "resourceVersion")
                    if new_version:
                        version = str(new_version)
                    if kind_of_event in ("ADDED", "MODIFIED", "DELETED") and addressable(obj):
                        obj.setdefault("kind", kind.kind)
                        yield WatchEvent(kind_of_event, obj=obj)
                if stop.is_set() or time.monotonic() - opened >= SHORT_WATCH_SECONDS:
                    short = 0
                    backoff.reset()
                    continue
                short += 1
                if short > 1:
                    raise Unreachable(f"the control plane ends each watch of {kind.plural} as it opens", "dropped")
            except Gone:
                version = None
                short = 0 if opened is not None and time.monotonic() - opened >= SHORT_WATCH_SECONDS else short + 1
                if short > 1 and not stop.is_set():
                    yield WatchEvent("ERROR", error=Unreachable(
                        f"the control plane answers each watch of {kind.plural} with 410 Gone", "dropped"))
                    stop.wait(backoff.next())
            except (ApiError, Unreachable, ValueError) as exc:
                if stop.is_set():
                    return
                if isinstance(exc, ValueError):
                    exc = Unreachable(f"control plane sent a broken watch event for {kind.plural}", "dropped")
                if isinstance(exc, ApiError):
                    version = None
                if opened is not None and time.monotonic() - opened >= SHORT_WATCH_SECONDS:
                    backoff.reset()  # a watch that was one, then dropped
                yield WatchEvent("ERROR", error=exc)
                stop.wait(backoff.next())

    # -- Job helpers --------------------------------------------------------------------------------------

    def job_tasks(self, job: str) -> Objects:
        """The Tasks of a Job (label `rlinf.io/job`), in all namespaces."""
        return self.list(TASKS, label_selector=f"{keys.JOB_LABEL}={job}").items

    def job_pods(self, job: str, tasks: Sequence[Mapping[str, Any]] | None = None) -> Objects:
        """The Pod CRs of a Job's Tasks (label `rlark.io/task-name`), in the Tasks' namespaces; one list per
        Task, sent together (a slow API server costs one round trip, not one per Task)."""
        tasks = self.job_tasks(job) if tasks is None else tasks

        def of(task: Mapping[str, Any]) -> Objects:
            meta = task.get("metadata") or {}
            return self.list(PODS, meta.get("namespace"),
                             label_selector=f"{keys.TASK_NAME_LABEL}={meta.get('name', '')}").items

        pods: Objects = []
        seen: set[str] = set()
        for found in parallel_map(of, tasks):
            for pod in found:
                uid = (pod.get("metadata") or {}).get("name", "")
                if uid not in seen:
                    seen.add(uid)
                    pods.append(pod)
        return pods

    def job(self, name: str) -> Job:
        return Job(self.get(JOBS, name))

    def nodes(self) -> Objects:
        return self.list(NODES).items

    def domains(self) -> Objects:
        return self.list(DOMAINS).items

    # -- data plane -----------------------------------------------------------------------------------------

    def data_plane_pod(self, cluster: str, pod: str, namespace: str = keys.WORKLOAD_NAMESPACE) -> dict[str, Any] | None:
        """The real pod (core/v1) behind a Pod CR, for restart counts; None without a data-plane context, or when
        the answer names no object (kinds.addressable, as a list answer's items are held)."""
        plane = self.data_plane(cluster)
        if plane is None:
            return None
        result = plane.json("GET", f"/api/v1/namespaces/{seg(namespace)}/pods/{seg(pod)}",
                            Request("get", "pods", pod, namespace, plane.source), timeout=10)
        return result if isinstance(result, dict) and addressable(result) else None

    def data_plane_pods(self, cluster: str, label_selector: str,
                        namespace: str = keys.WORKLOAD_NAMESPACE) -> Objects | None:
        """The real pods (core/v1) of one data plane that `label_selector` matches; None without a route to it."""
        plane = self.data_plane(cluster)
        if plane is None:
            return None
        result = plane.json("GET", f"/api/v1/namespaces/{seg(namespace)}/pods",
                            Request("list", "pods", None, namespace, plane.source),
                            [("labelSelector", label_selector)], timeout=10)
        items = result.get("items") if isinstance(result, dict) else None
        return [item for item in items if addressable(item)] if isinstance(items, list) else []

    def data_plane_events(self, cluster: str, pod: str, namespace: str = keys.WORKLOAD_NAMESPACE) -> Objects:
        plane = self.data_plane(cluster)
        if plane is None:
            return []
        result = plane.json("GET", f"/api/v1/namespaces/{seg(namespace)}/events",
                            Request("list", "events", namespace=namespace, source=plane.source),
                            [("fieldSelector", f"involvedObject.name={pod}")], timeout=10)
        items = result.get("items") if isinstance(result, dict) else None
        return [event for event in items if addressable(event)] if isinstance(items, list) else []

    @property
    def log_reads(self) -> LogReads:
        """The Pods' logs the topics of this context read on incrementally and share (cluster/logreads.py: the
        Header logs for the alert rules and PROGRESS); made when first asked for (the list's start-up needs none)."""
        with self._log_reads_lock:
            if self._log_reads is None:
                from rlark_tui.cluster.logreads import LogReads
                self._log_reads = LogReads()
            return self._log_reads

    @property
    def check_logs(self) -> LogHeads:
        """What the run check read of each container's log from its start (checks/gather.py: each gathering reads
        on from there), for this context; made when first asked for."""
        with self._log_reads_lock:
            if self._check_logs is None:
                from rlark_tui.checks.gather import LogHeads
                self._check_logs = LogHeads()
            return self._check_logs

    @property
    def secret_reads(self) -> SecretReads:
        """The Secrets the run check and the alert rounds read to mask their values (cluster/secrets.py), each kept
        SECRET_TTL, in memory only, for this context; made when first asked for."""
        with self._log_reads_lock:
            if self._secret_reads is None:
                from rlark_tui.cluster.secrets import SecretReads
                self._secret_reads = SecretReads(self)
            return self._secret_reads

    def pod_log(self, cluster: str, pod: str, *, namespace: str = keys.WORKLOAD_NAMESPACE,
                container: str = keys.MAIN_CONTAINER, follow: bool = False, previous: bool = False,
                timestamps: bool = True, tail: int | None = None, since_seconds: int | None = None,
                since_time: str | None = None, read_timeout: float | None = None,
                tail_bytes: int | None = None, line_chars: int | None = None) -> LineStream | TailRead:
        """`pods/log` of a data-plane pod (container `main` by default) as a line stream. A read that ends cleanly
        may end inside a line (the container's output still unterminated, served as the runtime's partial
        entry): that last piece is a line too; a follow refuses it, as only a cut stream ends there. A read
        without follow (of its `tail` or of the whole log) holds at most `tail_bytes` of its lines when given (the
        newest; LineStream.left_out), each cut to `line_chars` when given; a follow's lines are never held by the
        read. A read of a `tail` without follow is a TailRead: the last `tail` lines, where the kubelet's tailLines
        counts a line longer than 16 KiB as several, or a line saying why fewer."""
        plane = self.data_plane(cluster)
        if plane is None:
            raise Unreachable(f"logs: no data plane for cluster {cluster}: {self.server_problem or 'no rlark-server'}"
                              " — see `rlark config`", "config")
        query = [("container", container)]
        if follow:
            query.append(("follow", "true"))
        if previous:
            query.append(("previous", "true"))
        if timestamps:
            query.append(("timestamps", "true"))
        if since_time:
            query.append(("sinceTime", since_time))
        elif since_seconds:
            query.append(("sinceSeconds", str(since_seconds)))
        path = f"/api/v1/namespaces/{seg(namespace)}/pods/{seg(pod)}/log"
        req = Request("logs", "pods", pod, namespace, plane.source)
        if tail is not None and tail > 0 and not follow:
            return TailRead(lambda lines, keep: plane.stream(
                path, req, [*query, ("tailLines", str(lines))], read_timeout=read_timeout, last=keep, ends=True,
                last_bytes=tail_bytes, line_chars=line_chars, stamped=timestamps), tail)
        if tail is not None and tail >= 0:
            query.append(("tailLines", str(tail)))
        return plane.stream(path, req, query, read_timeout=read_timeout, whole_lines=follow,
                            last=tail if tail is not None and tail >= 0 and not follow else None, ends=not follow,
                            last_bytes=None if follow else tail_bytes, line_chars=None if follow else line_chars)

    # -- gateway ------------------------------------------------------------------------------------------

    def gateway_job_logs(self, job: str) -> Objects:
        """The gateway's `jobs/<job>/logs`: [{taskName, podName, phase, node, logs}] (last 1000 lines per pod)."""
        gateway = self.gateway_http()
        if gateway is None:
            raise Unreachable("logs: no gateway configured — see `rlark config`", "config")
        result = gateway.json("GET", f"/api/v1/rlinf.io/v1alpha1/jobs/{seg(job)}/logs",
                              Request("logs", "jobs", job, source="gateway"))
        pods = result.get("pods") if isinstance(result, dict) else None
        return [p for p in pods or [] if isinstance(p, dict)]

    def storage_classes(self) -> dict[str, builtins.list[str]] | None:
        """Cluster namespace -> storage class names from the gateway; None when unknown (no gateway or error). Read
        by storage_class_clusters, the one reader of the gateway's storage classes."""
        if self.gateway_http() is None:
            return None
        try:
            by_class = self.storage_class_clusters()
        except (ApiError, Unreachable):
            return None
        result: dict[str, builtins.list[str]] = {}
        for name, agents in by_class.items():
            for agent in agents:  # the gateway lists agent IDs (gpu-a); Jobs name rlark-gpu-a
                for key in {agent, keys.CLUSTER_NAMESPACE_PREFIX + agent}:
                    result.setdefault(key, []).append(name)
        return result

    def gateway_clusters(self) -> object:
        gateway = self.gateway_http()
        if gateway is None:
            raise Unreachable("no gateway configured — see `rlark config`", "config")
        return gateway.json("GET", "/api/v1/clusters", Request("list", "clusters", source="gateway"), timeout=10)

    def _gateway(self, what: str) -> Http:
        gateway = self.gateway_http()
        if gateway is None:
            raise Unreachable(f"{what}: no gateway configured — see `rlark config`", "config")
        return gateway

    def storage_class_clusters(self) -> dict[str, builtins.list[str]]:
        """Storage class name -> the agent IDs (`gpu-a`) of the clusters that have it, as the gateway lists them."""
        body = self._gateway("storage").json("GET", "/api/v1/storage/storageclass",
                                             Request("list", "storageclasses", source="gateway"), timeout=10)
        data = body.get("data") if isinstance(body, dict) else None
        return {str(name): [srv.agent_id(c) for c in entry["clusters"] if isinstance(c, str)]
                for name, entry in (data if isinstance(data, dict) else {}).items()
                if isinstance(entry, dict) and isinstance(entry.get("clusters"), list)}

    @staticmethod
    def _storage_path(storage_class: str, cluster: str) -> str:
        return f"/api/v1/storage/storageclass/{seg(storage_class)}/{seg(cluster)}"

    def storage_list(self, storage_class: str, cluster: str, prefix: str = "", *, delimiter: str = "/",
                     marker: str = "", max_keys: int = 100) -> object:
        """One page of the gateway's `.../list` (`{objects, common_prefixes, is_truncated, next_marker, ...}`);
        `marker` is the previous page's `next_marker`."""
        query = [("prefix", prefix), ("delimiter", delimiter), ("maxKeys", str(max_keys))]
        if marker:
            query.append(("marker", marker))
        return self._gateway("storage").json(
            "GET", f"{self._storage_path(storage_class, cluster)}/list",
            Request("list", "objects", f"{storage_class}/{cluster}", source="gateway"), query, timeout=30)

    def storage_object_url(self, storage_class: str, cluster: str, key: str, expire: int = 900) -> str:
        """The presigned download URL the gateway answers for `GET .../object/<key>`."""
        answer = self._gateway("storage").json(
            "GET", f"{self._storage_path(storage_class, cluster)}/object/{seg(key, '/')}",
            Request("get", "objects", key, source="gateway"), [("expire", str(expire))], timeout=30)
        url = answer.get("url") if isinstance(answer, dict) else None
        if not isinstance(url, str) or not url.startswith(("https://", "http://")):
            raise Unreachable(f"the gateway gave no download URL for {key}", "other")
        return url

    def storage_upload(self, storage_class: str, cluster: str, key: str, data: bytes) -> object:
        """`POST .../upload`, multipart field `file` whose file name is the whole key (as the console sends it)."""
        return self._gateway("storage").json(
            "POST", f"{self._storage_path(storage_class, cluster)}/upload",
            Request("upload", "objects", key, source="gateway"), timeout=300,
            fields=[("file", (key, data, "application/octet-stream"))])

    def storage_delete(self, storage_class: str, cluster: str, key: str) -> object:
        return self._gateway("storage").json(
            "DELETE", f"{self._storage_path(storage_class, cluster)}/object/{seg(key, '/')}",
            Request("delete", "objects", key, source="gateway"), timeout=30)

    def ssh_keys(self) -> Objects:
        """The gateway's `ssh-user-keys`: [{index, user, public_key, added_at}] of every user."""
        body = self._gateway("ssh keys").json("GET", "/api/v1/ssh-user-keys",
                                              Request("list", "ssh-user-keys", source="gateway"), timeout=10)
        return [k for k in body or [] if isinstance(k, dict)] if isinstance(body, list) else []

    def add_ssh_key(self, user: str, public_key: str, notes: str = "") -> object:
        body = {"user": user, "public_key": public_key, **({"notes": notes} if notes else {})}
        return self._gateway("ssh keys").json("POST", "/api/v1/ssh-user-keys",
                                              Request("add", "ssh-user-keys", user, source="gateway"), body=body,
                                              timeout=10)

    def delete_ssh_key(self, index: int, user: str) -> object:
        return self._gateway("ssh keys").json("DELETE", f"/api/v1/ssh-user-keys/{index}",
                                              Request("delete", "ssh-user-keys", f"{user}/{index}",
                                                      source="gateway"), [("user", user)], timeout=10)

    # -- Ray ----------------------------------------------------------------------------------------------

    def ray_dashboard(self, job: Job, head_cluster: str | None = None) -> RayDashboard | None:
        """The Ray dashboard of a Job: a configured URL, else port 8265 of the Header Task through rlark-server's
        `/api/taskproxy/<job>-<head>:8265`, else the head Service proxy of an explicitly configured context. Without a
        configured `ray.token`, a Ray that wants one gets the Header Pod's (`ray_tokens`, read once, kept in memory).

        `head_cluster` (the Header Task's namespace) saves a Task lookup when the caller already knows it.
        """
        from rlark_tui.raydash.client import RayDashboard
        token = self.config.ray_token
        url = self.config.ray_urls.get(job.name)
        if url:
            return RayDashboard(Http(url, source=f"Ray dashboard of {job.name}"), token)
        head = job.head_task
        if head is None:
            return None
        pod_token = None if token else partial(self.ray_tokens.get, job)
        token = token or self.ray_tokens.cached(job)
        proxy = self.task_proxy(job.head_task_name, 8265, f"Ray dashboard of {job.name} (rlark-server)")
        if proxy is not None:
            return RayDashboard(proxy, token, via_proxy=True, pod_token=pod_token)
        cluster = head_cluster or self._head_cluster(job)
        plane = self.data_plane(cluster) if cluster else None
        if plane is None:
            return None
        service = f"{job.name}-{head.name}-ray-head"
        base = (f"{plane.base}/api/v1/namespaces/{keys.WORKLOAD_NAMESPACE}/services/"
                f"{seg(service)}:8265/proxy")
        return RayDashboard(plane.sibling(base, f"Ray dashboard of {job.name} (via {cluster})"), token,
                            via_proxy=True, pod_token=pod_token)

    def ray_status(self, job: Job | dict[str, Any] | str, head_cluster: str | None = None) -> dict[str, Any]:
        """Alive Ray nodes vs expected, `ray status` text and jobs, or `error` saying which source failed.

        `job` is a Job view, a Job dict or a Job name (then it is read first).
        """
        from rlark_tui.raydash.client import unavailable
        job = self.job(job) if isinstance(job, str) else (Job(job) if isinstance(job, dict) else job)
        try:
            dashboard = self.ray_dashboard(job, head_cluster)
        except Unreachable as exc:
            return unavailable(job, str(exc))
        if dashboard is None:
            if job.head_task is None:
                return unavailable(job, "ray: the Job has no Header role, so no Ray head")
            cluster = head_cluster or self._head_cluster(job)
            if cluster is None:
                return unavailable(job, f"ray: Task {job.head_task_name} does not exist yet")
            return unavailable(job, f"ray: no way to the dashboard in cluster {cluster} "
                                    f"({self.server_problem or 'no rlark-server'}) — see `rlark config`")
        return dashboard.status(expected=job.total_nodes)

    def _head_cluster(self, job: Job) -> str | None:
        """Cluster namespace of the Header role's Task (where its head Service lives), or None."""
        if job.head_task is None:
            return None
        try:
            tasks = self.job_tasks(job.name)
        except (ApiError, Unreachable):
            return None
        for task in tasks:
            meta = task.get("metadata") or {}
            if meta.get("name") == job.head_task_name:
                return meta.get("namespace")
        return None

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
        for client in list(self._server_clients.values()):
            client.close()
