"""The first failure of a run, not the last: one timeline from what Kubernetes and Ray keep (issue 34 item 3).

Pure: the caller reads the facts (raydash/diagnose.py): the Job's data-plane Pods (current and previous container:
exit code, signal, OOMKilled; waiting and scheduling reasons), Ray's actors (`death_cause`) and workers
(`exit_type`, `exit_detail`), each dead worker's stderr tail from Ray's log API, and the Header log (with what Ray
forwarded of each worker's output: a dead worker's stderr after Ray's log API stopped serving it). This module
orders them in time, names the first failure's worker (`ActorGroup:1`), its Pod, node, time and cause class, and
quotes up to MAX_EVIDENCE masked lines of its own stderr (ray-debug.md has Ray's texts).

A knock-on is never the first failure while a root fact exists: the driver's `ActorDiedError` about a dead actor,
actors that died because their owner or their references went, intended exits. Ray's generic death text (which
lists SIGSEGV and the OOM killer as *possible* causes) classifies nothing; only the worker's own lines do.

Total: any shape of input (wrong types, huge text, absurd times) gives a Diagnosis, never an exception.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from types import MappingProxyType
from typing import Any

from rlark_tui.text.parse import ascii_int
from rlark_tui.text.redact import KnownSecrets, redact_lines, redact_text
from rlark_tui.text.sanitize import clean
from rlark_tui.text.sinks import one_line

CAUSES = ("signal", "host-oom", "cuda-oom", "nccl", "checkpoint", "image", "schedule", "python", "unknown")
"""Cause classes, the most telling first (a worker's signal line beats the exception its driver printed)."""
MAX_EVIDENCE = 20
MAX_TIMELINE = 200
MAX_LOG_EVENTS = 100
"""Failure lines taken from the Header log (the first ones; a flood of NCCL warnings adds nothing after them)."""
MAX_TEXT = 300
MAX_LINE_SCAN = 4000
"""Characters of a line looked at (a 1 MB line is cut, not scanned whole)."""
SIGNAL_EXITS = MappingProxyType({139: "SIGSEGV", 134: "SIGABRT", 137: "SIGKILL", 135: "SIGBUS", 136: "SIGFPE"})
FAILED_EXITS = ("SYSTEM_ERROR", "USER_ERROR", "NODE_OUT_OF_MEMORY")
IMAGE_REASONS = ("ErrImagePull", "ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull")
SOURCE_ORDER = MappingProxyType({"stderr": 0, "ray-worker": 1, "ray-actor": 2, "pod": 3, "header-log": 4})
"""At the same time, the worker's own words come first."""

_CLASSES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("cuda-oom", re.compile(r"CUDA out of memory|OutOfMemoryError|CUDA error: out of memory")),
    ("host-oom", re.compile(r"OOMKilled|NODE_OUT_OF_MEMORY|killed due to the node running low on memory"
                            r"|Memory cgroup out of memory")),
    ("signal", re.compile(r"\*\*\* SIG[A-Z]+ received|Fatal Python error: (?:Segmentation fault|Aborted|Bus error"
                          r"|Floating point exception)|terminated by signal SIG[A-Z]+")),
    ("nccl", re.compile(r"NCCL error|nccl(?:Internal|System|UnhandledCuda|InvalidUsage|Remote)Error"
                        r"|Watchdog caught collective operation timeout|collective operation timeout"
                        r"|NCCL communicator was aborted|NCCL timeout|DistBackendError")),
    ("checkpoint", re.compile(r"Failed to (?:load|save) checkpoint", re.IGNORECASE)),
)
_ANCHORS = re.compile("emory|MEMORY|OOMKilled|SIG|Fatal Python|NCCL|nccl|collective|DistBackendError|heckpoint"
                      "|HECKPOINT")
"""A literal of each class's patterns: a line without any is no cause (one literal search, no pattern)."""
_EXCEPTION = re.compile(r"^([A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt|Failure))(?::\s?(.*))?$")
_TRACEBACK = "Traceback (most recent call last):"
_RAY_PREFIX = re.compile(r"^\[[^\]]{0,80}\] [\w.]{1,60}:\d{1,6}: ")
_WORKER_PREFIX = re.compile(r"^\(([^()\s]{1,80}(?:\([^()]{0,40}\))?) pid=(\d{1,10})(?:, ip=([\d.:a-fA-F]{1,45}))?\) ")
"""What Ray puts before each line a worker printed when it forwards it to the driver (log_to_driver, on by default
and in RLinf's ray.init): `(<actor repr or class> pid=<pid>[, ip=<node ip>]) `, `ip=` only for a worker on another
node than the driver's. RLinf's actors print as `(ActorGroup(rank=1) pid=812)`."""
_RAYLET_DIED = "A worker died or was killed while executing a task"
_WORKER_PID = re.compile(r"Worker PID: (\d{1,10})")
_NAMED = re.compile(r"^\s*name: (\S{1,120})\s*$")
_PID_LINE = re.compile(r"^\s*pid: (\d{1,10})\s*$")
_SIGNAL_TIME = re.compile(r"\*\*\* SIG[A-Z]+ received at time=(\d{1,12})")
_KNOCK_ON = ("The actor died unexpectedly before finishing this task", "ActorDiedError", "RayActorError",
             "ActorUnavailableError", "A worker died during training")
GONE_MARKS = ("all references to the actor were removed", "its owner has died", "killed by `ray.kill`",
         "killed by ray.kill", "The actor is dead because it was killed", "detached actor")
_RAY_TASK = re.compile(r"ray::([A-Za-z_][\w]{0,80})[\w.]{0,80}\(\) \(pid=(\d{1,10})(?:, ip=([\d.:a-fA-F]{1,45}))?")
"""RLinf's crash line names the actor's class, PID and node IP: `exception is ray::EmbodiedFSDPActor.run_training()
(pid=4121, ip=…, actor_id=…, repr=ActorGroup(rank=1))`; the lines after it, up to the next crash line, are that
worker's."""
_RLINF_REPR = re.compile(r", repr=([A-Za-z_]\w{0,80})\(rank=(\d{1,6})\)\)")
"""RLinf's Worker.__repr__ (`<group>(rank=<r>)`) in Ray's task error: the actor's name is `<group>:<r>`, known even
once Ray's actor list is gone."""
_RLINF_NAME = re.compile(r"^([A-Za-z_]\w{0,80})\(rank=(\d{1,6})\)$")
"""The same repr as the name in Ray's forwarded lines' prefix."""
_RLINF_CRASH = ("Exception occurred while running ", "Exiting main process due to a failure upon worker execution.")
_LOG_GATE = re.compile(_ANCHORS.pattern + "|" + "|".join(re.escape(mark) for mark in (
    _TRACEBACK, *_RLINF_CRASH, _RAYLET_DIED, "A worker died during training")))
"""What a Header log line must hold to be looked at (outside a traceback)."""
_RAY_MARKERS = (":job_id:", ":actor_name:", ":task_name:")
AHEAD = 12
"""Lines after an exception line searched for the actor it names (`name: ActorGroup:1` in Ray's error)."""


@dataclass(frozen=True)
class Inputs:
    """What the caller read; any field may be empty or hold junk."""

    job: str
    pods: Sequence[Any] = ()
    """Data-plane pods (core/v1 JSON, as the API answers them)."""
    actors: Sequence[Any] = ()
    """Ray's `/api/v0/actors?detail=true` entries."""
    workers: Sequence[Any] = ()
    """Ray's `/api/v0/workers?detail=true` entries."""
    node_ips: Mapping[str, str] = field(default_factory=dict)
    """Ray node ID -> node IP (`/nodes?view=summary`)."""
    stderr: Mapping[int, str] = field(default_factory=dict)
    """Worker PID -> the tail of its stderr (`/api/v0/logs/file?...&suffix=err`)."""
    header_log: Sequence[tuple[float | None, str]] = ()
    """The Header's `main` log as (epoch seconds or None, line)."""
    header: str = ""
    """The Header's Pod (where the driver runs): a worker's forwarded line without `ip=` is from a worker there."""
    known: Iterable[str] = ()
    """Secret values to mask wherever they appear (the Job's env and Secrets)."""


@dataclass(frozen=True)
class Event:
    at: float | None
    source: str
    """`pod`, `ray-actor`, `ray-worker`, `stderr` or `header-log`."""
    worker: str
    what: str
    cause: str = ""
    """One of CAUSES for a failure, '' for a fact that is not one."""
    root: bool = True
    """False for a knock-on (the driver's error about an actor that died before)."""
    pod: str = ""
    node: str = ""
    evidence: tuple[str, ...] = ()
    pid: int = 0
    """For a `stderr` event: the worker whose stderr it is (read from Ray's log API, or forwarded by Ray into the
    Header log)."""

    def __post_init__(self) -> None:
        # Names are cluster text (Ray names an actor whatever the Job's code passes): each on its one line, so a
        # line break cannot forge `rlark diagnose`'s first-failure line or a timeline row, nor an escape reach them.
        for name in ("worker", "pod", "node"):
            object.__setattr__(self, name, one_line(getattr(self, name)))

    @property
    def failure(self) -> bool:
        return bool(self.cause)


@dataclass(frozen=True)
class Failure:
    worker: str
    pod: str
    node: str
    at: float | None
    cause: str
    summary: str
    evidence: tuple[str, ...] = ()
    pid: int = 0
    """The worker whose stderr the evidence is from, 0 when it is not a worker's stderr (not in to_json: the kept
    copy holds it beside, raydash/diagnose.py)."""


@dataclass(frozen=True)
class Diagnosis:
    job: str
    first_failure: Failure | None
    timeline: tuple[Event, ...] = ()


# -- small total readers ----------------------------------------------------------------------------------------

def _get(obj: Any, *path: str) -> Any:
    for key in path:
        if not isinstance(obj, Mapping):
            return None
        obj = obj.get(key)
    return obj


def _str(value: Any, limit: int = MAX_LINE_SCAN) -> str:
    return value[:limit] if isinstance(value, str) else ""


def _int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        return ascii_int(value)
    return None


def _epoch(value: float) -> float | None:
    """Epoch seconds when plausible (1970 to 5138, finite), else None."""
    return value if isinstance(value, float) and math.isfinite(value) and 0 < value < 1e11 else None


def _ms(value: Any) -> float | None:
    number = _int(value) if not isinstance(value, float) else value
    if number is None or isinstance(number, bool):
        return None
    try:
        return _epoch(float(number) / 1000.0)
    except (OverflowError, ValueError):
        return None


def rfc3339(value: Any) -> float | None:
    text = _str(value, 64).strip()
    if not text:
        return None
    try:
        stamp = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    if stamp.tzinfo is None:
        stamp = stamp.replace(tzinfo=UTC)
    try:
        return _epoch(stamp.timestamp())
    except (OverflowError, OSError, ValueError):
        return None


def iso(at: float | None) -> str | None:
    """`2026-12-02T00:36:41.524Z`, or None for an unknown time."""
    if at is None:
        return None
    stamp = datetime.fromtimestamp(at, tz=UTC)
    return stamp.strftime("%Y-%m-%dT%H:%M:%S") + (f".{stamp.microsecond // 1000:03d}Z" if stamp.microsecond else "Z")


class _Masker:
    def __init__(self, known: Iterable[str]) -> None:
        try:
            values = [value for value in known if isinstance(value, str) and value]
        except TypeError:
            values = []
        self.known = KnownSecrets(values)  # once: making it builds every shape of every value
        self._names: dict[str, str] = {}

    def line(self, text: str) -> str:
        """One line for the timeline: secrets masked, no control characters, bounded."""
        text = _str(text, 8 * MAX_TEXT)
        if self.known:
            text = self.known.mask(text)
        flat = " ".join(clean(redact_text(text)).split())
        return flat if len(flat) <= MAX_TEXT else flat[:MAX_TEXT - 1] + "…"

    def names(self, event: Event) -> Event:
        """`event` with the worker, Pod and node it names masked (each on its line as it came: one_line shows a break
        where it is printed); an actor's name is whatever the Job's code passed Ray."""
        if not self.known:
            return event
        return replace(event, worker=self._name(event.worker), pod=self._name(event.pod), node=self._name(event.node))

    def _name(self, text: str) -> str:
        masked = self._names.get(text)
        if masked is None:
            masked = self._names[text] = self.known.mask_lines(text) if text else text
        return masked

    def lines(self, texts: list[str]) -> tuple[str, ...]:
        """Evidence lines: masked as one read (a key across lines too), cleaned, each bounded, at most
        MAX_EVIDENCE."""
        masked = redact_lines([_str(t, 8 * MAX_TEXT) for t in texts[:MAX_EVIDENCE]], self.known)
        out = []
        for text in masked:
            line = clean(text).replace("\n", " ").rstrip()
            out.append(line if len(line) <= MAX_TEXT else line[:MAX_TEXT - 1] + "…")
        return tuple(out)


def classify(text: str) -> str:
    """The cause class a line names, '' when none (Ray's generic death text names none)."""
    text = _str(text)
    if _ANCHORS.search(text) is None:
        return ""
    for cause, pattern in _CLASSES:
        if pattern.search(text):
            return cause
    return ""


def _exception(text: str) -> re.Match[str] | None:
    return _EXCEPTION.match(text) if text[:1].isalpha() or text[:1] == "_" else None


# -- the sources -----------------------------------------------------------------------------------------------

@dataclass
class _Places:
    """Where a Ray process is: node ID -> IP -> (Pod, node); PID -> actor name; PID -> since when Ray's worker of
    that PID runs, for each worker Ray lists alive."""

    node_ips: dict[str, str]
    pods: dict[str, tuple[str, str]]
    names: dict[int, str]
    running: dict[int, float]

    def of(self, node_id: Any) -> tuple[str, str]:
        ip = self.node_ips.get(_str(node_id, 200), "")
        return self.pods.get(ip, ("", ip))

    def outlived(self, pid: int, at: float | None) -> bool:
        """Whether the worker of `pid` was already running when a line said it died, and still runs: the line is
        not its end. The Header log is the Job's own output, and its code can print any line there, Ray's
        forwarding prefix and the raylet's report of a dead worker too, to blame a rank that runs on; Ray's list
        of live workers is not the Job's to write. A PID Ray started after the line (a later container's worker
        with a PID the earlier one had) is not judged."""
        since = self.running.get(pid)
        return since is not None and at is not None and at >= since


def _places(inputs: Inputs) -> _Places:
    node_ips = {}
    if isinstance(inputs.node_ips, Mapping):
        node_ips = {k: v for k, v in inputs.node_ips.items() if isinstance(k, str) and isinstance(v, str)}
    pods: dict[str, tuple[str, str]] = {}
    for pod in _seq(inputs.pods):
        ip = _str(_get(pod, "status", "podIP"), 64) or _str(_get(pod, "status", "ip"), 64)
        name = _pod_name(pod)
        if ip and name:
            pods.setdefault(ip, (name, _str(_get(pod, "spec", "nodeName"), 200)
                                 or _str(_get(pod, "status", "node"), 200)))
    names: dict[int, str] = {}
    running: dict[int, float] = {}
    for actor in _seq(inputs.actors):
        pid = _int(_get(actor, "pid"))
        if pid:
            names.setdefault(pid, _actor_name(actor))
            started = _ms(_get(actor, "start_time"))
            if _get(actor, "state") == "ALIVE" and started is not None:
                running.setdefault(pid, started)
    for worker in _seq(inputs.workers):
        pid, started = _int(_get(worker, "pid")), _ms(_get(worker, "start_time_ms"))
        if pid and started is not None and _get(worker, "is_alive") is True:
            running[pid] = min(started, running.get(pid, started))
    return _Places(node_ips, pods, names, running)


def _seq(value: Any) -> list[Any]:
    return list(value) if isinstance(value, (list, tuple)) else []


def _pod_name(pod: Any) -> str:
    return _str(_get(pod, "spec", "podName"), 253) or _str(_get(pod, "metadata", "name"), 253)


def _actor_name(actor: Any) -> str:
    return (_str(_get(actor, "name"), 200) or _str(_get(actor, "class_name"), 200)
            or _str(_get(actor, "actor_id"), 200) or f"pid {_int(_get(actor, 'pid'))}")


def _pod_events(inputs: Inputs, mask: _Masker) -> list[Event]:
    events = []
    for pod in _seq(inputs.pods):
        name = _pod_name(pod) or "?"
        node = _str(_get(pod, "spec", "nodeName"), 200) or _str(_get(pod, "status", "node"), 200)
        statuses = _seq(_get(pod, "status", "initContainerStatuses")) + _seq(_get(pod, "status", "containerStatuses"))
        for status in statuses:
            container = _str(_get(status, "name"), 63) or "?"
            for where in ("lastState", "state"):
                done = _get(status, where, "terminated")
                if isinstance(done, Mapping):
                    event = _terminated(name, node, container, done, mask)
                    if event is not None:
                        events.append(event)
            waiting = _str(_get(status, "state", "waiting", "reason"), 100)
            if waiting in IMAGE_REASONS:
                message = _str(_get(status, "state", "waiting", "message"))
                events.append(Event(None, "pod", name, mask.line(f"container {container}: {waiting} {message}"),
                                    "image", pod=name, node=node))
        for condition in _seq(_get(pod, "status", "conditions")):
            if (_get(condition, "type") == "PodScheduled" and _get(condition, "status") == "False"
                    and _get(condition, "reason") == "Unschedulable"):
                events.append(Event(rfc3339(_get(condition, "lastTransitionTime")), "pod", name,
                                    mask.line(f"Unschedulable: {_str(_get(condition, 'message'))}"), "schedule",
                                    pod=name, node=node))
        if _get(pod, "status", "reason") == "Evicted":
            message = _str(_get(pod, "status", "message"))
            events.append(Event(None, "pod", name, mask.line(f"Evicted: {message}"),
                                "host-oom" if "memory" in message else "unknown", pod=name, node=node))
    return events


def _terminated(pod: str, node: str, container: str, done: Mapping, mask: _Masker) -> Event | None:
    code, signal, reason = _int(done.get("exitCode")), _int(done.get("signal")), _str(done.get("reason"), 100)
    if code == 0 and reason != "OOMKilled":
        return None
    if reason == "OOMKilled":
        cause = "host-oom"
    elif code in SIGNAL_EXITS or signal:
        cause = "signal"
    else:
        cause = "unknown"
    named = SIGNAL_EXITS.get(code or 0, f"signal {signal}" if signal else "")
    what = f"container {container} exited {code if code is not None else '?'}" + (f" ({reason})" if reason else "") \
        + (f", {named}" if named else "")
    message = _str(done.get("message"))
    return Event(rfc3339(done.get("finishedAt")), "pod", pod, mask.line(what + (f": {message}" if message else "")),
                 cause, pod=pod, node=node)


def _actor_events(inputs: Inputs, places: _Places, ends: dict[int, float], mask: _Masker) -> list[Event]:
    events = []
    for actor in _seq(inputs.actors):
        if _get(actor, "state") != "DEAD":
            continue
        name, pid = _actor_name(actor), _int(_get(actor, "pid")) or 0
        pod, node = places.of(_get(actor, "node_id"))
        died = _get(actor, "death_cause", "actor_died_error_context")
        created = _get(actor, "death_cause", "creation_task_failure_context")
        at = _ms(_get(actor, "end_time")) or ends.get(pid)
        if isinstance(created, Mapping):
            text = _str(created.get("formatted_exception_string"), 20000)
            lines = text.splitlines()
            line = next((ln for ln in reversed(lines) if _exception(ln)), lines[-1] if lines else "")
            events.append(Event(at, "ray-actor", name, mask.line(f"creation failed: {line}"),
                                classify(text) or "python", pod=pod, node=node,
                                evidence=mask.lines(lines[-MAX_EVIDENCE:])))
            continue
        message = _str(_get(died, "error_message"))
        gone = any(mark in message for mark in GONE_MARKS) or _get(died, "reason") in ("REF_DELETED", "OUT_OF_SCOPE",
                                                                                     "RAY_KILL", "OWNER_DIED")
        cause = "" if gone else (classify(message) or "unknown")
        events.append(Event(at, "ray-actor", name, mask.line(f"DEAD: {message}" if message else "DEAD"), cause,
                            pod=pod, node=node))
    return events


def _worker_events(inputs: Inputs, places: _Places, mask: _Masker) -> list[Event]:
    events = []
    for worker in _seq(inputs.workers):
        exit_type = _str(_get(worker, "exit_type"), 60)
        if exit_type not in FAILED_EXITS:
            continue
        pid = _int(_get(worker, "pid")) or 0
        pod, node = places.of(_get(worker, "node_id"))
        name = places.names.get(pid) or (("driver" if _get(worker, "worker_type") == "DRIVER" else "worker")
                                         + f" pid {pid}")
        detail = _str(_get(worker, "exit_detail"))
        cause = "host-oom" if exit_type == "NODE_OUT_OF_MEMORY" else classify(detail) or (
            "python" if exit_type == "USER_ERROR" else "unknown")
        events.append(Event(_ms(_get(worker, "end_time_ms")), "ray-worker", name,
                            mask.line(f"{exit_type}: {detail}"), cause, pod=pod, node=node))
    return events


def _stderr_events(inputs: Inputs, places: _Places, ends: dict[int, float], mask: _Masker) -> list[Event]:
    if not isinstance(inputs.stderr, Mapping):
        return []
    where: dict[int, tuple[str, str]] = {}
    for actor in _seq(inputs.actors):
        pid = _int(_get(actor, "pid"))
        if pid:
            where.setdefault(pid, places.of(_get(actor, "node_id")))
    events = []
    for pid, text in inputs.stderr.items():
        if not isinstance(pid, int) or not isinstance(text, str):
            continue
        found = _stderr_failure(text)
        if found is None:
            continue
        at, what, cause, lines = found
        pod, node = where.get(pid, ("", ""))
        events.append(Event(at or ends.get(pid), "stderr", places.names.get(pid) or f"worker pid {pid}",
                            mask.line(what), cause, pod=pod, node=node, evidence=mask.lines(lines), pid=pid))
    return events


def _stderr_failure(text: str) -> tuple[float | None, str, str, list[str]] | None:
    """(time, the telling line, cause, the evidence window) of a worker's stderr, None when it shows no failure."""
    found = _stderr_window([line[:MAX_LINE_SCAN] for line in text[-2_000_000:].splitlines()
                            if not line.startswith(_RAY_MARKERS)])
    return found[1:] if found is not None else None


def _stderr_window(lines: list[str]) -> tuple[int, float | None, str, str, list[str]] | None:
    """(index of the window's first line, time, the telling line, cause, the evidence window) of a worker's stderr
    lines, None when they show no failure: from the first line that names a cause class, else the last traceback."""
    first = None
    for index, line in enumerate(lines):
        cause = classify(line)
        if cause:
            first = (index, cause)
            break
    if first is not None:
        index, cause = first
        window = lines[index:index + MAX_EVIDENCE]
        telling = next((ln for ln in window if ln.startswith("Fatal Python error:")), None) \
            or _RAY_PREFIX.sub("", lines[index])
        stamp = next((m for m in map(_SIGNAL_TIME.search, window) if m), None)
        return index, (_epoch(float(stamp.group(1))) if stamp else None), telling, cause, window
    for index in range(len(lines) - 1, -1, -1):
        if _exception(lines[index]) and any(ln.startswith(_TRACEBACK) for ln in lines[max(0, index - 400):index]):
            start = max(max(i for i in range(max(0, index - 400), index) if lines[i].startswith(_TRACEBACK)),
                        index - MAX_EVIDENCE + 1)
            return start, None, lines[index], "python", lines[start:index + 1]
    return None


def _forwarded_events(inputs: Inputs, lines: list[tuple[float | None, str]], places: _Places,
                      mask: _Masker) -> list[Event]:
    """Each worker's failure in what Ray forwarded of its output into the Header log (`(ActorGroup(rank=1)
    pid=812) Fatal Python error: Segmentation fault`): that worker's own stderr, kept by the kubelet in the Header
    container's log (and the previous container's) after Ray and its log API are gone. A worker whose stderr Ray's
    log API served is read from there instead."""
    served = set(inputs.stderr) if isinstance(inputs.stderr, Mapping) else set()
    by_pid: dict[int, tuple[str, str, list[tuple[float | None, str]]]] = {}
    for at, text in lines:
        prefixed = _WORKER_PREFIX.match(text) if text[:1] == "(" else None
        if prefixed is None or int(prefixed.group(2)) in served:
            continue
        pid = int(prefixed.group(2))
        own = by_pid.setdefault(pid, (prefixed.group(1), prefixed.group(3) or "", []))[2]
        own.append((at, text[prefixed.end():]))
    where: dict[int, tuple[str, str]] = {}
    for actor in _seq(inputs.actors):
        number = _int(_get(actor, "pid"))
        if number and _get(actor, "node_id"):
            where.setdefault(number, places.of(_get(actor, "node_id")))
    header = _str(inputs.header, 253)
    here = next(((header, _str(_get(pod, "spec", "nodeName"), 200) or _str(_get(pod, "status", "node"), 200))
                 for pod in _seq(inputs.pods) if header and _pod_name(pod) == header), (header, ""))
    events = []
    for pid, (shown, ip, own) in by_pid.items():
        found = _stderr_window([text for _, text in own if not text.startswith(_RAY_MARKERS)])
        if found is None:
            continue
        index, stamp, telling, cause, window = found
        kept = [entry for entry in own if not entry[1].startswith(_RAY_MARKERS)]
        if places.outlived(pid, stamp or kept[index][0]):
            continue
        repr_name = _RLINF_NAME.match(shown)
        worker = places.names.get(pid) or (f"{repr_name.group(1)}:{repr_name.group(2)}" if repr_name else "") \
            or f"{shown} pid {pid}"
        pod, node = where.get(pid) or (places.pods.get(ip, ("", ip)) if ip else here)
        events.append(Event(stamp or kept[index][0], "stderr", worker, mask.line(telling), cause, pod=pod,
                            node=node, evidence=mask.lines(window), pid=pid))
    return events


def _log_lines(inputs: Inputs) -> list[tuple[float | None, str]]:
    lines = []
    for entry in _seq(inputs.header_log):
        if isinstance(entry, (tuple, list)) and len(entry) == 2 and isinstance(entry[1], str):
            at = entry[0] if isinstance(entry[0], float) else None
            lines.append((_epoch(at) if at is not None else None, clean(entry[1][:MAX_LINE_SCAN])))
    return lines


def _log_events(inputs: Inputs, lines: list[tuple[float | None, str]], places: _Places,
                mask: _Masker) -> list[Event]:
    """The Header log's crash chain: the raylet's report of a dead worker, exception lines (knock-ons when they
    are about a dead actor), RLinf's crash lines and every line that names a cause class."""
    events: list[Event] = []
    seen: set[tuple[str, str]] = set()
    in_traceback = False
    chain, chain_place = "", ("", "")
    by_name = set(places.names.values())
    for index, (at, text) in enumerate(lines):
        if len(events) >= MAX_LOG_EVENTS:
            break
        if not in_traceback and _LOG_GATE.search(text) is None:
            continue  # nearly every line of a run's log: one literal search
        if _RLINF_CRASH[0] in text:
            chain, chain_place = _crash_worker(text, places)
        elif _RLINF_CRASH[1] in text:
            chain, chain_place = "", ("", "")
        worker = chain or "driver"
        if text[:1] == "(" and _WORKER_PREFIX.match(text):
            continue  # a worker's own line, forwarded by Ray: _forwarded_events reads it with its other lines
        if text.startswith(_TRACEBACK):
            in_traceback = True
            continue
        cause, root = classify(text), True
        if _RAYLET_DIED in text:
            pid_match = _WORKER_PID.search(text)
            pid = int(pid_match.group(1)) if pid_match else 0
            if places.outlived(pid, at):
                continue
            worker = places.names.get(pid) or (f"worker pid {pid}" if pid else "worker")
            cause = cause or "unknown"
        elif in_traceback and _exception(text):
            in_traceback = False
            named = _named_after(lines, index, by_name)
            if any(mark in text for mark in _KNOCK_ON):
                cause, root, worker = cause or "unknown", False, named or worker
            else:
                cause = cause or "python"
        elif any(mark in text for mark in _RLINF_CRASH) or any(mark in text for mark in _KNOCK_ON[-1:]):
            cause = cause or "unknown"
            root = not any(mark in text for mark in _KNOCK_ON)
        if not cause:
            continue
        what = mask.line(text)
        if (worker, what) in seen:
            continue
        seen.add((worker, what))
        pod, node = _place_of_name(inputs, places, worker)
        if not pod and chain and worker == chain:
            pod, node = chain_place
        events.append(Event(at, "header-log", worker, what, cause, root=root, pod=pod, node=node,
                            evidence=mask.lines([t for _, t in lines[max(0, index - 2):index + MAX_EVIDENCE - 2]])))
    return events


def _crash_worker(text: str, places: _Places) -> tuple[str, tuple[str, str]]:
    """The worker an RLinf crash line names (Ray's actor name by PID, else RLinf's repr, else class and PID) and its
    (Pod, node) by the IP in Ray's error (the Pod keeps its IP when its container restarts)."""
    task = _RAY_TASK.search(text)
    if task is None:
        return "", ("", "")
    pid, ip = int(task.group(2)), task.group(3) or ""
    named = _RLINF_REPR.search(text, task.end())
    worker = places.names.get(pid) or (f"{named.group(1)}:{named.group(2)}" if named else "") \
        or f"{task.group(1)} pid {pid}"
    return worker, places.pods.get(ip, ("", ip)) if ip else ("", "")


def _learn_names(lines: list[tuple[float | None, str]], places: _Places) -> None:
    """PID -> actor name from Ray's errors in the log (`pid: 812` then `name: ActorGroup:1`): the raylet's line
    names only the PID, and once the Pod restarted Ray's actor list is gone."""
    for index, (_, text) in enumerate(lines):
        pid = _PID_LINE.match(text) if text[:1] in " \t" else None
        if pid is None:
            continue
        for _, after in lines[index + 1:index + 4]:
            named = _NAMED.match(after)
            if named:
                places.names.setdefault(int(pid.group(1)), named.group(1))
                break


def _named_after(lines: list[tuple[float | None, str]], index: int, names: set[str]) -> str:
    for _, text in lines[index + 1:index + 1 + AHEAD]:
        named = _NAMED.match(text)
        if named and (named.group(1) in names or ":" in named.group(1)):
            return named.group(1)
    return ""


def _place_of_name(inputs: Inputs, places: _Places, worker: str) -> tuple[str, str]:
    for actor in _seq(inputs.actors):
        if _actor_name(actor) == worker:
            return places.of(_get(actor, "node_id"))
    return "", ""


# -- the whole -------------------------------------------------------------------------------------------------

def diagnose(inputs: Inputs) -> Diagnosis:
    """The timeline, ordered by time (unknown times last), and the first failure, or None when nothing failed."""
    job = _str(inputs.job, 253) if isinstance(inputs, Inputs) else ""
    if not isinstance(inputs, Inputs):
        return Diagnosis(job, None)
    mask = _Masker(inputs.known)
    places = _places(inputs)
    lines = _log_lines(inputs)
    _learn_names(lines, places)
    ends: dict[int, float] = {}
    for worker in _seq(inputs.workers):
        pid, end = _int(_get(worker, "pid")), _ms(_get(worker, "end_time_ms"))
        if pid and end is not None:
            ends.setdefault(pid, end)
    events = (_pod_events(inputs, mask) + _actor_events(inputs, places, ends, mask)
              + _worker_events(inputs, places, mask) + _stderr_events(inputs, places, ends, mask)
              + _forwarded_events(inputs, lines, places, mask) + _log_events(inputs, lines, places, mask))
    events = [mask.names(event) for event in events]
    timeline = tuple(sorted(events, key=_order)[:MAX_TIMELINE])
    return Diagnosis(job, first_failure(events), timeline)


def _order(event: Event) -> tuple[bool, float, int]:
    return event.at is None, event.at or 0.0, SOURCE_ORDER.get(event.source, 9)


def first_failure(events: Sequence[Event]) -> Failure | None:
    """The earliest root failure's worker, with the most telling cause among that worker's failures and the
    evidence of its own stderr when there is some."""
    failures = [event for event in events if event.failure]
    roots = [event for event in failures if event.root] or failures
    if not roots:
        return None
    first = min(roots, key=_order)
    own = sorted((event for event in failures if event.worker == first.worker), key=_order)
    best = min(own, key=lambda event: (CAUSES.index(event.cause) if event.cause in CAUSES else len(CAUSES),
                                       SOURCE_ORDER.get(event.source, 9)))
    timed = [event.at for event in own if event.at is not None]
    at = min(timed) if timed else None
    pod = next((event.pod for event in own if event.pod), "")
    node = next((event.node for event in own if event.node), "")
    stderr = next((event for event in own if event.source == "stderr" and event.evidence), None)
    evidence = (stderr.evidence if stderr else ()) or best.evidence or tuple(event.what for event in own[:MAX_EVIDENCE])
    where = ", ".join(part for part in (f"Pod {pod}" if pod else "", f"node {node}" if node else "",
                                        iso(at) or "") if part)
    summary = f"{first.worker} failed first ({best.cause}): {best.what}" + (f" [{where}]" if where else "")
    return Failure(first.worker, pod, node, at, best.cause, summary[:2 * MAX_TEXT], evidence,
                   stderr.pid if stderr else 0)


# -- output and the kept copy ----------------------------------------------------------------------------------

def to_json(diagnosis: Diagnosis) -> dict[str, Any]:
    failure = diagnosis.first_failure
    return {
        "job": diagnosis.job,
        "first_failure": None if failure is None else {
            "worker": failure.worker, "pod": failure.pod, "node": failure.node, "at": iso(failure.at),
            "cause": failure.cause, "summary": failure.summary, "evidence": list(failure.evidence)},
        "timeline": [{"at": iso(event.at), "source": event.source, "worker": event.worker, "what": event.what}
                     for event in diagnosis.timeline],
    }


def from_json(data: Any) -> Diagnosis | None:
    """A kept diagnosis (to_json's shape) read back; None when it is not one. The text was masked when kept and
    is cleaned again here (the file may have been edited)."""
    if not isinstance(data, Mapping) or not isinstance(data.get("job"), str):
        return None
    mask = _Masker(())
    failure = None
    raw = data.get("first_failure")
    if isinstance(raw, Mapping) and isinstance(raw.get("worker"), str):
        cause = raw["cause"] if raw.get("cause") in CAUSES else "unknown"
        failure = Failure(mask.line(raw["worker"]), mask.line(_str(raw.get("pod"))), mask.line(_str(raw.get("node"))),
                          rfc3339(raw.get("at")), cause, mask.line(_str(raw.get("summary"))),
                          mask.lines([e for e in _seq(raw.get("evidence")) if isinstance(e, str)]))
    timeline = []
    for entry in _seq(data.get("timeline"))[:MAX_TIMELINE]:
        if isinstance(entry, Mapping) and isinstance(entry.get("what"), str):
            timeline.append(Event(rfc3339(entry.get("at")), mask.line(_str(entry.get("source"))),
                                  mask.line(_str(entry.get("worker"))), mask.line(entry["what"])))
    return Diagnosis(mask.line(data["job"]), failure, tuple(timeline))


def merge(kept: Diagnosis | None, now: Diagnosis) -> Diagnosis:
    """What is known now joined with what was kept: the kept first failure stands unless the new one is earlier
    (Pods restart and Ray starts afresh, so the first failure's facts may be gone from the cluster). For the same
    worker the more telling cause stands (a crash loop: the Header log said a rank died, and a later round of the
    loop caught that rank's own stderr)."""
    if kept is None or kept.job != now.job:
        return now
    failure, old = now.first_failure, kept.first_failure
    if old is not None and failure is None:
        failure = old
    elif old is not None and failure is not None:
        if failure.worker == old.worker:
            chosen = failure if _telling(failure) < _telling(old) else old
            if chosen is old and not old.pid and failure.evidence == old.evidence:
                chosen = replace(old, pid=failure.pid)
            failure = chosen
        elif old.at is None or failure.at is None or old.at <= failure.at:
            failure = old
    seen = set()
    events = []
    for event in (*kept.timeline, *now.timeline):
        key = (event.at, event.source, event.worker, event.what)
        if key not in seen:
            seen.add(key)
            events.append(event)
    return Diagnosis(now.job, failure, tuple(sorted(events, key=_order)[:MAX_TIMELINE]))


def _telling(failure: Failure) -> int:
    return CAUSES.index(failure.cause) if failure.cause in CAUSES else len(CAUSES)


def render(diagnosis: Diagnosis) -> str:
    """The text `rlark diagnose` prints: the first failure, its evidence, then the timeline."""
    failure = diagnosis.first_failure
    out = []
    if failure is None:
        out.append(f"{diagnosis.job}: no failure found (Pods, Ray's actors and workers, the Header log)")
    else:
        out.append(f"first failure: {failure.summary}")
        out += ["evidence:", *(f"  {line}" for line in failure.evidence)] if failure.evidence else []
    if diagnosis.timeline:
        out.append("timeline:")
        for event in diagnosis.timeline:
            out.append(f"  {iso(event.at) or '?':<24} {event.source:<10} {event.worker}: {event.what}")
    return "\n".join(out)
