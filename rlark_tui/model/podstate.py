"""Why a data-plane Pod is unwell, in one short phrase: the `main` container's lastState / state and live events.

Pure: shared by the run check (check 2), the job detail's Workers rows, `describe` and the Pod lists.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from rlark_tui.model.objects import dig, main_container_status
from rlark_tui.model.timefmt import parse_time

FAILURE_EVENTS = ("BackOff", "FailedMount", "Unhealthy", "OOMKilling", "Failed")
"""Data-plane event reasons a kubelet writes when a Pod cannot start or keep running."""


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def container_reason(status: Any) -> str:
    """`OOMKilled (exit 137)`, `CrashLoopBackOff`, `Error (exit 1)`… from a container status; '' when healthy."""
    if not isinstance(status, dict):
        return ""
    parts = []
    waiting = _text(dig(status, "state", "waiting", "reason"))
    if waiting and waiting not in ("ContainerCreating", "PodInitializing"):
        parts.append(waiting)
    for where in (("state", "terminated"), ("lastState", "terminated")):
        reason = _text(dig(status, *where, "reason"))
        code = _int(dig(status, *where, "exitCode"))
        if where[0] == "state" and code == 0:
            continue
        if reason or code is not None:
            text = reason or "exited"
            parts.append(text + (f" (exit {code})" if code is not None else ""))
            break
    return ", ".join(dict.fromkeys(parts))


def event_reasons(events: Iterable[Any]) -> list[str]:
    """The failure event reasons among a Pod's events (Warning events of FAILURE_EVENTS), newest last, unique."""
    found = []
    for event in events:
        if isinstance(event, dict) and event.get("type") == "Warning" and event.get("reason") in FAILURE_EVENTS:
            found.append(event["reason"])
    return list(dict.fromkeys(found))


@dataclass(frozen=True)
class PodHealth:
    """A Pod's `main` restart count and failure reason ('' when none), as the job detail's Workers rows show them."""

    restarts: int
    reason: str = ""


def unschedulable(pod: Any) -> str:
    """`Unschedulable: 0/2 nodes are available: 1 Insufficient nvidia.com/gpu…` for a Pod the scheduler cannot
    place (its PodScheduled condition), else ''."""
    conditions = dig(pod, "status", "conditions")
    for condition in conditions if isinstance(conditions, list) else []:
        if (isinstance(condition, dict) and condition.get("type") == "PodScheduled"
                and condition.get("status") == "False" and condition.get("reason") == "Unschedulable"):
            message = _text(condition.get("message")).removesuffix(".")
            return "Unschedulable" + (f": {message}" if message else "")
    return ""


def failure_reason(pod: Any, events: Iterable[Any] = ()) -> str:
    """One phrase for a data-plane pod: why it cannot be scheduled, its `main` container's reason and the failure
    events; '' when nothing is wrong (the restart count is shown on its own)."""
    status = main_container_status(pod)
    parts = [unschedulable(pod)] + ([container_reason(status)] if status else [])
    parts += [r for r in event_reasons(events) if not any(r in p for p in parts)]
    return ", ".join(p for p in parts if p)


def ended_with_job_restart(status: Any, restarted_at: Any) -> bool:
    """A container status whose last instance was started before the Job's `rlark.io/restarted-at` and ended after
    it with exit 0: a worker whose Ray node ended with the Header Pod an Edit & Restart (`rlark resume`) replaced, the
    platform's worker sequence exiting 0 and running again (rlark-platform.md §2.4). An instance started after the
    Job's restart that ended so is the worker failing on its own."""
    last = dig(status, "lastState", "terminated", default={})
    restarted = parse_time(restarted_at if isinstance(restarted_at, str) else None)
    started, ended = parse_time(_text(dig(last, "startedAt"))), parse_time(_text(dig(last, "finishedAt")))
    return (restarted is not None and started is not None and ended is not None and started < restarted <= ended
            and _int(dig(last, "exitCode")) == 0)
