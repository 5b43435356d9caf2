"""The values of the Secrets a Job's Pods take env from, read from their member clusters only to mask them (C8).

A run script that echoes `$WANDB_API_KEY`, set from `valueFrom.secretKeyRef`, prints a value nothing in the Job
says is secret. So rlark reads the Secrets the Job references (`valueFrom.secretKeyRef` and `envFrom.secretRef`
of its containers: in the Job's spec, and in each data-plane Pod, which also holds what the platform adds, such
as a Ray token Secret) in the member cluster and namespace each Pod runs in:
`GET /api/proxy/<agent>/api/kubernetes/api/v1/namespaces/<ns>/secrets/<name>` (rlark-server passes the member
cluster's API through as it is: server/handle_proxy.go, agent/local_http.go). No other Secret is read. What is read
only builds the set of values to mask: it is never printed, logged or written, and is held in memory only, by the
log view that read it (for its life) or, for the run check's repeated gathering, by its ClusterAccess (read again,
and older reads dropped, after SECRET_TTL). The Ray token rlark read from the Header Pod (raydash/token.py), and the
one configured (`ray.token`), join the set. A Secret that cannot be read (403, 404, no route) is no error: what can be read is masked, and
`unreadable` names the others for one quiet notice.
"""

from __future__ import annotations

import base64
import binascii
import threading
import time
import weakref
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rlark_tui.cluster.access import parallel_map
from rlark_tui.cluster.errors import ApiError, NotFound, Request
from rlark_tui.cluster.http import seg
from rlark_tui.errors import RlarkError
from rlark_tui.model import keys
from rlark_tui.model.logtarget import LogTarget
from rlark_tui.model.objects import Job, Pod
from rlark_tui.text.redact import secret_refs, secret_values

if TYPE_CHECKING:
    from rlark_tui.cluster.access import ClusterAccess

SECRET_TTL = 300.0
"""Seconds a Secret read stays in memory before the next use reads it again (a rotated value is picked up)."""
READ_SECONDS = 10


@dataclass(frozen=True)
class JobSecrets:
    """What the masking of one Job's output knows: `values` to mask, and the referenced Secrets it could not read
    (`Secret wandb in cluster rlark-edge-b (403 ...)`), never their contents."""

    values: frozenset[str] = frozenset()
    unreadable: tuple[str, ...] = ()

    def notice(self) -> str:
        """One line for a notice (empty when every referenced Secret was read)."""
        if not self.unreadable:
            return ""
        return (f"masking: could not read {'; '.join(self.unreadable)}: their values are masked only where they "
                "look like secrets")


@dataclass(frozen=True)
class _Read:
    data: Mapping[str, str] | None
    problem: str
    at: float


class SecretReads:
    """Secrets read, by (cluster, namespace, name), each used for SECRET_TTL (dropped at the next read after it):
    one per log view, and one per ClusterAccess (`access.secret_reads`) for the run check's repeated gathering."""

    def __init__(self, access: ClusterAccess) -> None:
        self._access = weakref.ref(access)
        self._reads: dict[tuple[str, str, str], _Read] = {}
        self._lock = threading.Lock()

    def read(self, cluster: str, namespace: str, name: str) -> _Read:
        key = (cluster, namespace, name)
        now = time.monotonic()
        with self._lock:
            self._reads = {k: read for k, read in self._reads.items() if now - read.at < SECRET_TTL}
            kept = self._reads.get(key)
        if kept is not None:
            return kept
        read = _read_secret(self._access(), cluster, namespace, name)
        with self._lock:
            self._reads[key] = read
        return read


def _read_secret(access: ClusterAccess | None, cluster: str, namespace: str, name: str) -> _Read:
    where = f"Secret {name} in cluster {cluster}"
    try:
        plane = access.data_plane(cluster) if access is not None else None
    except RlarkError:
        plane = None
    if plane is None:
        return _Read(None, f"{where} (no route to its data plane)", time.monotonic())
    try:
        secret = plane.json("GET", f"/api/v1/namespaces/{seg(namespace)}/secrets/{seg(name)}",
                            Request("get", "secrets", name, namespace, plane.source), timeout=READ_SECONDS)
    except NotFound:
        return _Read(None, f"{where} (not found)", time.monotonic())
    except ApiError as exc:  # 403 and any other answer: its status, never a value
        return _Read(None, f"{where} ({f'{exc.status} {exc.reason}'.strip()})", time.monotonic())
    except RlarkError:
        return _Read(None, f"{where} (not answered)", time.monotonic())
    return _Read(_decoded(secret), "", time.monotonic())


def _decoded(secret: object) -> dict[str, str]:
    """A Secret's `data` as the kubelet hands it to a container (base64 decoded); a value that is not UTF-8 (a
    Latin-1 password) is read with surrogateescape, so masking knows its bytes and how a log shows them
    (redact._shapes: each undecodable byte U+FFFD)."""
    data = secret.get("data") if isinstance(secret, dict) else None
    found = {}
    for key, value in (data or {}).items() if isinstance(data, dict) else ():
        if isinstance(key, str) and isinstance(value, str):
            try:
                found[key] = base64.b64decode(value, validate=True).decode("utf-8", "surrogateescape")
            except (binascii.Error, ValueError):
                continue
    return found


def job_secrets(access: ClusterAccess, job: Mapping[str, Any],
                places: Iterable[tuple[str, str, Mapping[str, Any] | None]], tasks: Iterable[Mapping[str, Any]],
                reader: SecretReads | None = None) -> JobSecrets:
    """The values to mask in the output of `job` (its raw object) whose Pods run in `places`: (cluster, namespace,
    the data-plane Pod there or None). Per cluster and namespace: the secret-looking env values of the Job and its
    `tasks` and the values of the Secrets the Job's spec, those Tasks and those Pods reference (a control plane
    that renamed the Job's WANDB_API_KEY entry `0` is masked where the Task the Pods run from names it, by value or
    by a Secret it references); plus the Ray token read before, if any, and the configured one. Every caller
    names the Job's Tasks (those it read or its Snapshot holds): masking without them printed such a value.
    Secrets are read through `reader` (a log view's own), else the one `access` keeps for the run check."""
    grouped: dict[tuple[str, str], list[Mapping[str, Any]]] = {}
    for cluster, namespace, pod in places:
        grouped.setdefault((cluster, namespace or keys.WORKLOAD_NAMESPACE), []).extend([pod] if pod else [])
    reader = reader or getattr(access, "secret_reads", None)  # a bundle's has none: it was masked when written
    related = list(tasks)
    scopes = {place: {"job": job, "tasks": related, "pods": pods} for place, pods in grouped.items()}
    wanted = [(cluster, namespace, name) for (cluster, namespace), scope in scopes.items()
              for name in sorted(secret_refs(scope))] if reader is not None else []
    reads = dict(zip(wanted, parallel_map(lambda key: reader.read(*key), wanted))) if reader is not None else {}  # read together
    values: set[str] = set(secret_values([job, related]))
    unreadable = [read.problem for read in reads.values() if read.data is None]
    for (cluster, namespace), scope in scopes.items():
        found = {name: read.data for (c, n, name), read in reads.items()
                 if (c, n) == (cluster, namespace) and read.data is not None}
        values |= secret_values(scope, found)
    token = access.ray_tokens.cached(Job(job)) if getattr(access, "ray_tokens", None) is not None else None
    values.update(t for t in (token, getattr(getattr(access, "config", None), "ray_token", None)) if t)
    return JobSecrets(frozenset(values), tuple(unreadable))


def pods_secrets(access: ClusterAccess, job: Mapping[str, Any], crs: Iterable[Pod], tasks: Iterable[Mapping[str, Any]],
                 plane_pods: Mapping[str, Mapping[str, Any]] | None = None) -> JobSecrets:
    """`job_secrets` over the places the Job's Pod CRs `crs` name: what is masked in all that is shown of a Job's
    Pods and Ray workers besides its logs (`rlark diagnose`, `rlark stacks`, `rlark bundle`; the Diagnosis card, the
    Stacks screen, an alert quoting them), as `rlark logs` masks the logs. Each place's data-plane Pod is taken from
    `plane_pods` (by name) when given (read already), else one is read per cluster, namespace and role: the replicas
    of a role share their template, so their references."""
    places: dict[tuple[str, str, str], Pod] = {}
    for cr in crs:
        places.setdefault((cr.cluster, cr.pod_namespace or keys.WORKLOAD_NAMESPACE, cr.task_name), cr)
    chosen = list(places.values())

    def plane_pod(cr: Pod) -> Mapping[str, Any] | None:
        if plane_pods is not None:
            return plane_pods.get(cr.pod_name)
        try:
            return access.data_plane_pod(cr.cluster, cr.pod_name, cr.pod_namespace or keys.WORKLOAD_NAMESPACE) \
                if cr.pod_name else None
        except RlarkError:
            return None

    pods = parallel_map(plane_pod, chosen) if chosen else []
    return job_secrets(access, job, [(cr.cluster, cr.pod_namespace or keys.WORKLOAD_NAMESPACE, pod)
                                     for cr, pod in zip(chosen, pods)], tasks)


class LogSecrets:
    """The masking of one log read or view, grown as it follows Pods in new places: for each cluster, namespace and
    role (the replicas of a role share their template) one data-plane Pod and the Secrets it and the Job reference
    are read, and new values handed to `add_known` (LineRedactor.add_known). `prepare(targets)` reads the places
    of a backlog together; `before_read(target)` (the log follower's hook, on a reading thread before a Pod's first
    read) a new one, while other Pods' first reads wait, and before a Pod's read again (the follow reconnecting:
    the container may run anew with other references, as after an Edit & Restart that names another Secret) that
    Pod's own. A Ray token read for the Job later (raydash/token.py) is added as it is read. Unreadable Secrets are
    told once through `on_notice`."""

    def __init__(self, access: ClusterAccess, job: Mapping[str, Any], add_known: Callable[[Iterable[str]], None],
                 on_notice: Callable[[str], None] | None = None) -> None:
        self._access = access
        self._job = job
        self._add_known = add_known
        self._on_notice = on_notice
        self._reader = SecretReads(access)
        """This view's own: what it read goes with it."""
        self._done: set[tuple[str, str, str]] = set()
        self._followed: set[tuple[str, str, str]] = set()
        """The Pods (LogTarget.key) before_read was called for: one called again is read again."""
        self._told: set[str] = set()
        self._lock = threading.Lock()
        if getattr(access, "ray_tokens", None) is not None:
            access.ray_tokens.listen(self._ray_token_read)

    def _ray_token_read(self, job_name: str, token: str) -> None:
        """The Ray token read after this view started (the Ray tab, the run check): masked from then on."""
        if job_name == Job(self._job).name:
            self._add_known([token])

    def before_read(self, target: LogTarget) -> None:
        with self._lock:
            again = target.key in self._followed
            self._followed.add(target.key)
            told = self._learn([target]) if again else self._prepare([target])
        self._tell(told)

    def prepare(self, targets: Iterable[LogTarget]) -> None:
        with self._lock:
            told = self._prepare(targets)
        self._tell(told)

    def _prepare(self, targets: Iterable[LogTarget]) -> list[str]:
        new_places: dict[tuple[str, str, str], LogTarget] = {}
        for target in targets:
            place = (target.cluster, target.namespace, target.role)
            if place not in self._done:
                new_places.setdefault(place, target)
        if not new_places:
            return []
        self._done.update(new_places)
        return self._learn(list(new_places.values()))

    def _learn(self, chosen: list[LogTarget]) -> list[str]:
        """Read (the lock held: other Pods' reads wait) the data-plane Pods of `chosen`, the Job's Tasks and the
        Secrets they and the Job reference, and mask their values; the unreadable ones not told yet."""
        pods = parallel_map(lambda target: _data_plane_pod(self._access, target), chosen)
        try:
            tasks = self._access.job_tasks(Job(self._job).name)
        except RlarkError:
            tasks = []
        found = job_secrets(self._access, self._job,
                            [(t.cluster, t.namespace, pod) for t, pod in zip(chosen, pods)], tasks, self._reader)
        self._add_known(found.values)
        new = [problem for problem in found.unreadable if problem not in self._told]
        self._told.update(new)
        return new

    def _tell(self, unreadable: list[str]) -> None:
        if unreadable and self._on_notice is not None:
            self._on_notice(JobSecrets(unreadable=tuple(unreadable)).notice())


def _data_plane_pod(access: ClusterAccess, target: LogTarget) -> Mapping[str, Any] | None:
    try:
        return access.data_plane_pod(target.cluster, target.pod, target.namespace)
    except RlarkError:
        return None
