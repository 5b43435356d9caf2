"""What the run check looks at: one immutable bundle of objects, logs, Ray status, records and output probes.

Gathering it is I/O (checks/gather.py); everything that reads it is pure.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, is_dataclass
from datetime import datetime
from typing import Any, TypeVar

from rlark_tui.model.objects import dig
from rlark_tui.model.timefmt import parse_time

DEFAULT_MAX_WAIT_SECONDS = 900.0
"""The platform's own Ray cluster-check timeout, used when the launch record names no max wait."""


@dataclass(frozen=True)
class PodLog:
    """The lines read from one container instance of one Pod (`main` unless said otherwise)."""

    pod: str
    """Data-plane Pod name, e.g. `demo-ppo-actor-0`."""
    lines: tuple[str, ...] = ()
    container: str = "main"
    instance: int | None = None
    """Restart count of that instance (0 = first); None when the source cannot tell."""
    current: bool = True
    source: str = ""
    """Where the lines came from: `data-plane`, `gateway`, ..."""
    error: str | None = None
    """Why no lines could be read, if so."""
    tail_start: int | None = None
    """When only part of a long log was read: the index in `lines` where its last lines begin (after the first
    part, read from the start up to the byte budget); None when `lines` is the whole log."""
    read: str = ""
    """Which part of the log `lines` holds, for the report (empty when the source does not say)."""


@dataclass(frozen=True)
class PodEvent:
    type: str
    reason: str
    message: str = ""


@dataclass(frozen=True)
class MainContainer:
    """State of a Pod's `main` container from the data plane (the control plane has no container state)."""

    pod: str
    restart_count: int = 0
    state: str = ""
    """running | waiting | terminated | '' (unknown)."""
    reason: str = ""
    exit_code: int | None = None
    last_exit_code: int | None = None
    last_reason: str = ""
    last_started: str = ""
    """`lastState.terminated.startedAt` as the API wrote it: when the previous instance started."""
    last_finished: str = ""
    """`lastState.terminated.finishedAt` as the API wrote it: when the previous instance ended."""
    image_id: str = ""
    """`status.containerStatuses[].imageID`: the digest the kubelet pulled (`<repo>@sha256:<hex>`)."""


@dataclass(frozen=True)
class RayStatus:
    """What the Header's Ray dashboard said, or why it could not be read."""

    alive_nodes: int | None = None
    route: str = "Ray dashboard /api/v0/nodes (state = ALIVE)"
    status_text: str = ""
    error: str | None = None
    profiling: bool | None = None
    """Ray's `/api/profiling_enabled`: its dashboard takes stacks itself; None when not read."""


@dataclass(frozen=True)
class OutputFile:
    path: str
    size: int
    mtime: datetime
    sha256: str | None = None


@dataclass(frozen=True)
class OutputProbe:
    """A listing of the run's output location with sizes, modification times and checksums."""

    location: str
    files: tuple[OutputFile, ...] = ()
    """Paths as the run's Pods see them (object keys mapped back under their mount target)."""
    error: str | None = None
    """Why the location could not be read (no Pod to read in, exec refused, presigned URL unreachable, ...)."""
    source: str = ""
    """Where it was read, for the record: `in Pod demo-ppo-actor-0 (exec)`, `from object storage <class>/<cluster>`."""


@dataclass(frozen=True)
class RunEvidence:
    """Everything one evaluation of the run check sees. Missing sources are None or empty, never invented."""

    job_name: str
    now: datetime
    job: dict[str, Any] | None = None
    tasks: tuple[dict[str, Any], ...] = ()
    pods: tuple[dict[str, Any], ...] = ()
    """Pod CRs (`rlinf.io`) of the Job's Tasks."""
    nodes: tuple[dict[str, Any], ...] = ()
    logs: tuple[PodLog, ...] = ()
    containers: tuple[MainContainer, ...] | None = None
    """None when no data plane is reachable (restart counts and exit codes unknown)."""
    unread_containers: tuple[str, ...] = ()
    """Pods whose data-plane pod could not be read although a data plane is configured (an API error)."""
    events: dict[str, tuple[PodEvent, ...]] = field(default_factory=dict)
    """Per Pod name: data-plane events, plus the Task's events while Pending."""
    ray: RayStatus | None = None
    launch_record: dict[str, Any] | None = None
    plan: dict[str, Any] | None = None
    submitted_spec: dict[str, Any] | None = None
    submitted_sha256: str | None = None
    submitted_intact: bool = True
    """The stored submitted spec hashes to the stored sha256."""
    submitted_yaml_path: str | None = None
    outputs: OutputProbe | None = None
    sources: dict[str, str] = field(default_factory=dict)
    """Per source (`data-plane`, `gateway`, `ray`): why it is not available, for the record's notes."""

    def log_of(self, pod: str, current: bool = True) -> PodLog | None:
        for log in self.logs:
            if log.pod == pod and log.current == current:
                return log
        return None

    def container_of(self, pod: str) -> MainContainer | None:
        for container in self.containers or ():
            if container.pod == pod:
                return container
        return None


def max_wait_seconds(evidence: RunEvidence) -> float:
    record = evidence.launch_record or {}
    value = record.get("maxWaitSeconds")
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0:
        return float(value)
    return DEFAULT_MAX_WAIT_SECONDS


def latest_start(evidence: RunEvidence) -> datetime | None:
    """When the current run of the Job began: the latest of its start time, a restart, and its Pods' creation."""
    job = evidence.job or {}
    candidates = [
        parse_time(dig(job, "status", "startTime")),
        parse_time(dig(job, "metadata", "annotations", "rlark.io/restarted-at")),
    ]
    created = [t for pod in evidence.pods if (t := parse_time(dig(pod, "metadata", "creationTimestamp")))]
    if created:
        candidates.append(min(created))
    known = [t for t in candidates if t]
    if known:
        return max(known)
    return parse_time(dig(job, "metadata", "creationTimestamp"))


def deadline_passed(evidence: RunEvidence) -> bool:
    """True once the max wait has run out since the latest start: what is still missing then is a fail."""
    start = latest_start(evidence)
    if start is None:
        return False
    return (evidence.now - start).total_seconds() >= max_wait_seconds(evidence)


def evidence_to_dict(evidence: RunEvidence) -> dict[str, Any]:
    """A JSON-ready copy of the evidence (times as ISO strings), e.g. to record a run once and judge it offline."""
    def convert(value: object) -> object:
        if isinstance(value, datetime):
            return value.isoformat()
        if is_dataclass(value) and not isinstance(value, type):
            return {f.name: convert(getattr(value, f.name)) for f in fields(value)}
        if isinstance(value, (list, tuple)):
            return [convert(v) for v in value]
        if isinstance(value, dict):
            return {k: convert(v) for k, v in value.items()}
        return value
    return {f.name: convert(getattr(evidence, f.name)) for f in fields(evidence)}


_Record = TypeVar("_Record", PodEvent, MainContainer)


def evidence_from_dict(data: dict[str, Any]) -> RunEvidence:
    """The inverse of evidence_to_dict."""
    def many(cls: type[_Record], items: list[dict[str, Any]] | None) -> tuple[_Record, ...]:
        return tuple(cls(**item) for item in items or ())
    outputs = data.get("outputs")
    if outputs is not None:
        files = tuple(OutputFile(f["path"], f["size"], datetime.fromisoformat(f["mtime"]), f.get("sha256"))
                      for f in outputs.get("files") or ())
        outputs = OutputProbe(outputs["location"], files, outputs.get("error"), outputs.get("source") or "")
    values = dict(data)
    values.update(
        now=datetime.fromisoformat(data["now"]),
        tasks=tuple(data.get("tasks") or ()), pods=tuple(data.get("pods") or ()), nodes=tuple(data.get("nodes") or ()),
        logs=tuple(PodLog(**dict(log, lines=tuple(log.get("lines") or ()))) for log in data.get("logs") or ()),
        containers=None if data.get("containers") is None else many(MainContainer, data["containers"]),
        unread_containers=tuple(data.get("unread_containers") or ()),
        events={pod: many(PodEvent, items) for pod, items in (data.get("events") or {}).items()},
        ray=None if data.get("ray") is None else RayStatus(**data["ray"]),
        outputs=outputs,
    )
    return RunEvidence(**values)
