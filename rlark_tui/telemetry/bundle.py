"""A post-mortem bundle's layout, its per-container log budget and its manifest (issue 34 item 5), pure.

`raydash/bundle.py` reads the facts and writes the archive; `cluster/bundle_source.py` reads one back for
`rlark --bundle`. Every member's path is made here, from cluster names through sinks.file_name, so a Pod named
`../x` is one path component, and a Pod's members are in a folder named by a digest of its cluster, namespace and
exact name (pod_folder), so two Pods never share a member, whatever their names (`w/0` and `w_0`, `W-0` and `w-0`
on a case-insensitive file system); the manifest says which Pod and container each log is. The manifest names each member with its size and sha256, and the log budget: a
container's log is whole up to `budget` bytes; past it, its first and last halves are kept, with one line in
between saying how much was left out, and the manifest gives the bytes read and left out.
"""

from __future__ import annotations

import hashlib
import re
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from rlark_tui.model.quantity import size_text
from rlark_tui.text.sinks import FILE_CHARS, file_name, one_line, windows_device

FORMAT = "rlark-bundle/2"
LEGACY_FORMAT = "rlark-bundle/1"
"""A bundle an earlier rlark wrote: its Pods' members are named by file_name(pod) alone (legacy_*_member)."""
MANIFEST = "manifest.json"
JOB = "job.yaml"
TASKS = "tasks.yaml"
POD_CRS = "pods.yaml"
DIAGNOSIS = "diagnosis.json"
METRICS = "metrics.json"
CHECK = "check.json"
ACTORS = "ray/actors.json"
WORKERS = "ray/workers.json"
NODES = "ray/nodes.json"
LOG_BUDGET = 64 * 1024 * 1024
"""Bytes of one container's log (each of current and previous) kept whole."""
TOTAL_BUDGET = 1024 * 1024 * 1024
"""Bytes of all the container logs of a bundle: a Job of many Pods shares it, each log at most its equal part."""


def log_budget(budget: int, total: int, logs: int) -> int:
    """The bytes each of `logs` container logs keeps whole: `budget`, or its equal part of `total` when that is
    smaller (a Job's author sets how many Pods it has: 1,024 Pods at 64 MiB each were 64 GiB of bundle)."""
    return max(1, min(budget, total // max(logs, 1)))


DIGEST_CHARS = 16
"""Hex digits of the digest that names a Pod's folder, or a container's file when its name is no DNS label."""
_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")


def _digest(*parts: str) -> str:
    return hashlib.sha256("\0".join(parts).encode("utf-8", "surrogatepass")).hexdigest()[:DIGEST_CHARS]


def pod_folder(cluster: str, namespace: str, pod: str) -> str:
    """The one path component of a Pod's members: its name through file_name, then a digest of the cluster, the
    namespace and the exact name, so no two Pods share it (the data plane names Pods: `w/0` and `w_0` are one
    file_name, a second Pod CR may name another cluster's Pod of the same name)."""
    return f"{file_name(pod, FILE_CHARS - DIGEST_CHARS - 1)}-{_digest(cluster, namespace, pod)}"


def _container_file(container: str) -> str:
    """A container's name as it is (a DNS label: lower case, digits, `-`) unless Windows takes it for a device
    (`aux`, `nul`: a bundle is attached to an issue and extracted anywhere), else file_name of it, `_` and a digest
    (never a DNS label, so never another container's name)."""
    if _LABEL.fullmatch(container) and not windows_device(container):
        return container
    return f"{file_name(container, FILE_CHARS - DIGEST_CHARS - 1)}_{_digest(container)}"


def pod_member(cluster: str, namespace: str, pod: str) -> str:
    return f"pods/{pod_folder(cluster, namespace, pod)}/pod.yaml"


def events_member(cluster: str, namespace: str, pod: str) -> str:
    return f"pods/{pod_folder(cluster, namespace, pod)}/events.yaml"


def log_member(cluster: str, namespace: str, pod: str, container: str, previous: bool = False) -> str:
    return f"logs/{pod_folder(cluster, namespace, pod)}/{_container_file(container)}" \
           f"{'.previous' if previous else ''}.log"


def log_members(cluster: str, namespace: str, pod: str, container: str, previous: bool = False) -> tuple[str, ...]:
    """The names a container log's member may have in a bundle of FORMAT: log_member's, and for a container Windows
    takes for a device the name an rlark before that rule gave it (`aux.log`)."""
    member = log_member(cluster, namespace, pod, container, previous)
    if not windows_device(container) or not _LABEL.fullmatch(container):
        return (member,)
    return member, f"logs/{pod_folder(cluster, namespace, pod)}/{container}{'.previous' if previous else ''}.log"


def legacy_pod_member(pod: str) -> str:
    """A Pod's member in a bundle of LEGACY_FORMAT."""
    return f"pods/{file_name(pod)}/pod.yaml"


def legacy_log_member(pod: str, container: str, previous: bool = False) -> str:
    """A container log's member in a bundle of LEGACY_FORMAT."""
    return f"logs/{file_name(pod)}/{file_name(container)}{'.previous' if previous else ''}.log"


def stderr_member(pid: int) -> str:
    return f"ray/stderr/{int(pid)}.err"


def left_out_line(left_out: int, budget: int) -> bytes:
    return (f"... rlark bundle: {size_text(left_out)} of this log left out here (the budget is "
            f"{size_text(budget)} per container log: its first and last halves are kept) ...\n").encode()


class LogBudget:
    """Which lines of one log stream are kept: `take(line)` says whether a line goes on at once (the first half of
    the budget, in order); once that half is full, the rest is held in `tail`, dropped from its front to stay
    within the other half. `left_out` counts the bytes dropped."""

    def __init__(self, budget: int) -> None:
        self.budget = budget
        self.head_room = budget - budget // 2
        self.tail_room = budget // 2
        self.read = 0
        self.head = 0
        self.tail: deque[bytes] = deque()
        self.tail_bytes = 0
        self.left_out = 0

    def take(self, line: bytes) -> bool:
        """True: write `line` now. False: it is held in `tail` (or already dropped)."""
        self.read += len(line)
        if not self.tail and self.head + len(line) <= self.head_room:
            self.head += len(line)
            return True
        self.tail.append(line)
        self.tail_bytes += len(line)
        while self.tail_bytes > self.tail_room and self.tail:
            dropped = self.tail.popleft()
            self.tail_bytes -= len(dropped)
            self.left_out += len(dropped)
        return False


@dataclass(frozen=True)
class Member:
    """One member of the archive as the manifest lists it."""

    path: str
    size: int
    sha256: str
    read: int | None = None
    """For a log: the bytes read of it (size differs by what was left out and the line saying so)."""
    left_out: int = 0
    kept: str = ""
    """For a member rlark wrote from what it kept (a dead worker's stderr Ray no longer serves): when it was kept."""
    of: tuple[tuple[str, str], ...] = ()
    """For a Pod's member: the cluster, namespace, Pod (and container) it is of, as the cluster named them."""

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"path": self.path, "size": self.size, "sha256": self.sha256}
        if self.read is not None:
            out |= {"read": self.read, "left_out": self.left_out}
        if self.kept:
            out["kept_by_rlark_at"] = self.kept
        if self.of:
            out["of"] = dict(self.of)
        return out


@dataclass
class Manifest:
    """What the bundle holds: the Job, when it was captured, the log budget, each member, what could not be read."""

    job: str
    captured: str
    budget: int = LOG_BUDGET
    """The bytes each container log kept whole (log_budget: its equal part of `total` when that is smaller)."""
    members: list[Member] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    total: int = TOTAL_BUDGET
    """The bytes of all the container logs."""
    logs: int = 0
    """How many container logs shared `total`."""
    format: str = FORMAT
    """The layout its members are named by: FORMAT, or LEGACY_FORMAT for a bundle an earlier rlark wrote."""

    def to_json(self) -> dict[str, Any]:
        return {"format": self.format, "job": self.job, "captured": self.captured, "log_budget": self.budget,
                "total_log_budget": self.total, "container_logs": self.logs,
                "members": [member.to_json() for member in self.members], "notes": list(self.notes)}

    @property
    def cut_logs(self) -> list[Member]:
        return [member for member in self.members if member.left_out]


CAPTURED_CHARS = 64
"""A manifest's capture time read back is cut here (rlark writes an RFC 3339 time, 20 characters)."""


def parse_manifest(data: object) -> Manifest | None:
    """A manifest read back (None when it is not one rlark wrote)."""
    if not isinstance(data, dict) or data.get("format") not in (FORMAT, LEGACY_FORMAT) \
            or not isinstance(data.get("job"), str):
        return None
    members = []
    listed = data.get("members")
    for item in listed if isinstance(listed, list) else []:
        if isinstance(item, dict) and isinstance(item.get("path"), str) and isinstance(item.get("size"), int):
            read, left_out = item.get("read"), item.get("left_out")
            kept = item.get("kept_by_rlark_at")
            members.append(Member(item["path"], item["size"], str(item.get("sha256") or ""),
                                  read if isinstance(read, int) else None,
                                  left_out if isinstance(left_out, int) and left_out > 0 else 0,
                                  kept if isinstance(kept, str) else ""))
    budget, total, logs = data.get("log_budget"), data.get("total_log_budget"), data.get("container_logs")
    notes = data.get("notes")
    # the capture time, shown in the header and the Metrics tab's status: one line of at most CAPTURED_CHARS
    captured = one_line(data.get("captured") or "")[:CAPTURED_CHARS]
    return Manifest(data["job"], captured, budget if isinstance(budget, int) else LOG_BUDGET,
                    members, [str(note) for note in notes] if isinstance(notes, list) else [],
                    total if isinstance(total, int) else TOTAL_BUDGET, logs if isinstance(logs, int) else 0,
                    data["format"])


def summary(manifest: Manifest, path: str, size: int | None) -> str:
    """What `rlark bundle` prints once the archive is written (`size` None: not known, written to a stream)."""
    logs = [m for m in manifest.members if m.read is not None]
    sized = "" if size is None else f", {size_text(size)}"
    lines = [f"bundle {path}: {len(manifest.members)} members{sized}; {len(logs)} container logs, "
             f"each whole up to {size_text(manifest.budget)}, {size_text(manifest.total)} in all"]
    lines += [f"  {member.path}: {size_text(member.left_out)} of {size_text(member.read or 0)} left out (over the "
              "budget)" for member in manifest.cut_logs]
    lines += [f"note: {one_line(note)}" for note in manifest.notes]
    return "\n".join(lines)
