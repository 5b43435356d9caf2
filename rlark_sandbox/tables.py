"""`meta.k8s.io/v1` Table rendering for `kubectl get`: printer columns per kind, Age as kubectl shows it.
Pure functions over API objects.
"""

from __future__ import annotations

from datetime import UTC, datetime

from rlark_sandbox.resources import ResourceType
from rlark_tui.model.objects import dig


def human_age(timestamp: str | None, now: datetime | None = None) -> str:
    """kubectl's HumanDuration of the time since `timestamp` ("<unknown>" if missing)."""
    if not timestamp:
        return "<unknown>"
    try:
        then = datetime.strptime(timestamp, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    except ValueError:
        return "<invalid>"
    seconds = int(((now or datetime.now(UTC)) - then).total_seconds())
    if seconds < 0:
        seconds = 0
    minutes, hours, days = seconds // 60, seconds // 3600, seconds // 86400
    if seconds < 120:
        return f"{seconds}s"
    if minutes < 10:
        rest = seconds % 60
        return f"{minutes}m{rest}s" if rest else f"{minutes}m"
    if minutes < 180:
        return f"{minutes}m"
    if hours < 8:
        rest = minutes % 60
        return f"{hours}h{rest}m" if rest else f"{hours}h"
    if hours < 48:
        return f"{hours}h"
    if hours < 192:
        rest = hours % 24
        return f"{days}d{rest}h" if rest else f"{days}d"
    if days < 365 * 2:
        return f"{days}d"
    years = days // 365
    if years < 8:
        rest = days % 365
        return f"{years}y{rest}d" if rest else f"{years}y"
    return f"{years}y"


def _core_pod(obj: dict) -> list:
    statuses = (obj.get("status") or {}).get("containerStatuses") or []
    containers = (obj.get("spec") or {}).get("containers") or []
    ready = sum(1 for s in statuses if s.get("ready"))
    restarts = sum(int(s.get("restartCount") or 0) for s in statuses)
    reason = (obj.get("status") or {}).get("phase") or "Pending"
    for status in statuses:
        waiting = (status.get("state") or {}).get("waiting")
        if waiting and waiting.get("reason"):
            reason = waiting["reason"]
    if (obj.get("metadata") or {}).get("deletionTimestamp"):
        reason = "Terminating"
    return [f"{ready}/{len(containers)}", reason, restarts]


def _core_event(obj: dict, now: datetime) -> list:
    involved = obj.get("involvedObject") or {}
    seen = obj.get("lastTimestamp") or obj.get("eventTime") or (obj.get("metadata") or {}).get("creationTimestamp")
    return [human_age(seen[:19] + "Z" if seen else None, now), obj.get("type", ""), obj.get("reason", ""),
            f"{(involved.get('kind') or '').lower()}/{involved.get('name', '')}", obj.get("message", "")]


def _core_service(obj: dict, now: datetime) -> list:
    spec = obj.get("spec") or {}
    ports = ",".join(f"{p.get('port')}/{p.get('protocol', 'TCP')}" for p in spec.get("ports") or [])
    return [spec.get("type", "ClusterIP"), spec.get("clusterIP", "None"), "<none>", ports or "<none>",
            human_age((obj.get("metadata") or {}).get("creationTimestamp"), now)]


CORE_COLUMNS = {
    "pods": [("Ready", "string"), ("Status", "string"), ("Restarts", "integer"), ("Age", "string")],
    "events": [("Last Seen", "string"), ("Type", "string"), ("Reason", "string"), ("Object", "string"),
               ("Message", "string")],
    "services": [("Type", "string"), ("Cluster-IP", "string"), ("External-IP", "string"), ("Port(s)", "string"),
                 ("Age", "string")],
    "secrets": [("Type", "string"), ("Data", "string"), ("Age", "string")],
}
"""The core kinds' columns as the API server's printers give them (kubernetes pkg/printers/internalversion;
a Secret's Data is its number of keys, in a column typed string)."""


def _columns(rtype: ResourceType) -> list[tuple[str, str]]:
    """(title, type) of the columns after Name."""
    if rtype.group == "" and rtype.plural in CORE_COLUMNS:
        return CORE_COLUMNS[rtype.plural]
    return [(title, "string" if kind == "date" else kind) for title, _, kind in rtype.columns] or [
        ("Age", "string")]


def _cells(rtype: ResourceType, obj: dict, now: datetime) -> list:
    name = (obj.get("metadata") or {}).get("name", "")
    if rtype.group == "" and rtype.plural == "pods":
        return [name, *_core_pod(obj), human_age((obj.get("metadata") or {}).get("creationTimestamp"), now)]
    if rtype.group == "" and rtype.plural == "events":
        return [name, *_core_event(obj, now)]
    if rtype.group == "" and rtype.plural == "services":
        return [name, *_core_service(obj, now)]
    if rtype.group == "" and rtype.plural == "secrets":
        return [name, obj.get("type", ""), len(obj.get("data") or {}),
                human_age((obj.get("metadata") or {}).get("creationTimestamp"), now)]
    columns = rtype.columns or (("Age", "metadata.creationTimestamp", "date"),)
    cells: list = [name]
    for _, path, kind in columns:
        value = dig(obj, *path.split("."))
        cells.append(human_age(value, now) if kind == "date" else ("" if value is None else value))
    return cells


def _row_object(obj: dict, include: str):
    if include == "None":
        return None
    if include == "Object":
        return obj
    return {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": obj.get("metadata", {})}


def table(rtype: ResourceType, items: list[dict], resource_version: str | None = None,
          include: str = "Metadata") -> dict:
    now = datetime.now(UTC)
    name_priority = 1 if rtype.group == "" and rtype.plural == "events" else 0
    definitions = [{"name": "Name", "type": "string", "format": "name", "description": "Name",
                    "priority": name_priority}]
    definitions += [{"name": title, "type": kind, "format": "", "description": title, "priority": 0}
                    for title, kind in _columns(rtype)]
    rows = []
    for obj in items:
        row = {"cells": _cells(rtype, obj, now)}
        embedded = _row_object(obj, include)
        if embedded is not None:
            row["object"] = embedded
        rows.append(row)
    meta = {"resourceVersion": resource_version} if resource_version else {}
    return {"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": meta,
            "columnDefinitions": definitions, "rows": rows}
