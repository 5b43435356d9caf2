"""The rlinf.io kinds rlark reads and writes, with their REST paths and the names users type for them.

Owns kind lookup (`jobs`, `job`, `rljob`, ...), path building for cluster-scoped and namespaced kinds, and what a
list answer means (its items and resourceVersion), whichever client read it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rlark_tui.cluster.errors import ApiError
from rlark_tui.cluster.transport import seg
from rlark_tui.errors import UsageError

GROUP = "rlinf.io"
VERSION = "v1alpha1"
API_VERSION = f"{GROUP}/{VERSION}"


@dataclass(frozen=True)
class Kind:
    kind: str
    plural: str
    namespaced: bool
    aliases: tuple[str, ...] = ()

    def path(self, namespace: str | None = None, name: str | None = None) -> str:
        """`/apis/rlinf.io/v1alpha1[/namespaces/NS]/PLURAL[/NAME]`; no namespace on a namespaced kind = all."""
        base = f"/apis/{GROUP}/{VERSION}"
        if self.namespaced and namespace:
            base += f"/namespaces/{seg(namespace)}"
        base += f"/{self.plural}"
        return base + (f"/{seg(name)}" if name else "")


JOBS = Kind("Job", "jobs", False, ("job", "rljob", "rljobs"))
TASKS = Kind("Task", "tasks", True, ("task",))
PODS = Kind("Pod", "pods", True, ("pod", "rlpod", "rlpods"))
NODES = Kind("Node", "nodes", True, ("node", "rlnode", "rlnodes"))
DOMAINS = Kind("Domain", "domains", False, ("domain", "rldomain", "rldomains"))
WORKFLOWS = Kind("Workflow", "workflows", False, ("workflow", "rlwf", "rlwfs"))

ALL = (JOBS, TASKS, PODS, NODES, DOMAINS, WORKFLOWS)


def kind_named(name: str) -> Kind:
    """The kind a user typed (`jobs`, `job`, `rljob`, `pods.rlinf.io`)."""
    key = name.lower().removesuffix(f".{GROUP}")
    for kind in ALL:
        if key == kind.plural or key in kind.aliases or key == kind.kind.lower():
            return kind
    raise UsageError(f"unknown resource type {name!r} (use jobs, tasks, pods, nodes, domains or workflows)")


def selector_query(label_selector: str | None, field_selector: str | None) -> list[tuple[str, str]]:
    """The query parameters of a list or watch narrowed by a label and/or field selector."""
    query = []
    if label_selector:
        query.append(("labelSelector", label_selector))
    if field_selector:
        query.append(("fieldSelector", field_selector))
    return query


@dataclass(frozen=True)
class ListResult:
    items: list[dict[str, Any]]
    resource_version: str


def addressable(item: object) -> bool:
    """An object as the API lists it: a map whose `metadata` is a map with a non-empty string `name` (and a
    string `namespace`, if any), by which every reader keys, links and names it. An item of another shape
    (`metadata: 5`, a list, a number) is no object a reader could name: answers leave it out."""
    meta = item.get("metadata") if isinstance(item, dict) else None
    return isinstance(meta, dict) and isinstance(meta.get("name"), str) and bool(meta["name"]) \
        and isinstance(meta.get("namespace", ""), str)


def list_result(body: object, kind: Kind) -> ListResult:
    """A decoded list answer: its addressable items, each with the kind and apiVersion a list's items inherit."""
    if not isinstance(body, dict):
        raise ApiError(f"control plane returned a non-JSON answer to list {kind.plural}")
    listed = body.get("items")
    items = [i for i in listed if addressable(i)] if isinstance(listed, list) else []
    for item in items:
        item.setdefault("kind", kind.kind)
        item.setdefault("apiVersion", API_VERSION)
    metadata = body.get("metadata")
    return ListResult(items, str((metadata if isinstance(metadata, dict) else {}).get("resourceVersion") or ""))
