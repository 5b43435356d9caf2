"""Where a role's workers land, as the platform computes it: selector matching, replicas, Ray ranks, clusters.

Pure functions over Node/Task dicts (or model views); facts from rlark-platform.md §2.1–§2.3.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, TypeVar

from rlark_tui.model.objects import Node, TaskSpec, cluster_of, dig

N = TypeVar("N")


def _raw(obj: Any) -> Mapping[str, Any]:
    raw = getattr(obj, "raw", obj)
    return raw if isinstance(raw, Mapping) else {}


def _labels(node: Any) -> Mapping[str, Any]:
    labels = dig(_raw(node), "metadata", "labels")
    return labels if isinstance(labels, Mapping) else {}


def selector_alternatives(value: object) -> list[str]:
    """The alternatives of one selector value: `"a,b"` → `["a", "b"]` (empty parts dropped)."""
    if not isinstance(value, str):
        return []
    return [part.strip() for part in value.split(",") if part.strip()]


def selector_matches(selector: Mapping[str, Any], labels: Mapping[str, Any]) -> bool:
    """Whether a pod with this nodeSelector may run on a node with these labels, as the agent schedules it.

    Single values become `nodeSelector` (all must hold); comma values become one required node-affinity
    term per key, and Kubernetes ORs those terms, so at least one comma key must match. An empty selector
    matches every node.
    """
    if not isinstance(selector, Mapping) or not isinstance(labels, Mapping):
        return False
    comma_terms = []
    for key, value in selector.items():
        if not isinstance(value, str):
            return False
        if "," in value:
            comma_terms.append((key, selector_alternatives(value)))
        elif labels.get(key) != value:
            return False
    if not comma_terms:
        return True
    return any(labels.get(key) in alternatives for key, alternatives in comma_terms)


def matching_nodes(selector: Mapping[str, Any], nodes: Iterable[N]) -> list[N]:
    """The items of `nodes` (dicts or Node views) whose labels the selector matches, across all clusters,
    in the order given."""
    return [node for node in nodes if selector_matches(selector, _labels(node))]


def node_cluster(node: Any) -> str:
    """Cluster namespace `rlark-<id>` of a Node: its namespace, else its `rlark.io/cluster-id` label."""
    return cluster_of(_raw(node))


def task_namespace(selector: Mapping[str, Any], nodes: Iterable[Any]) -> str:
    """Namespace the Job controller gives a role's Task: each selector value cut at its first comma,
    the first matching Node CR in (namespace, name) order; `default` when the selector is empty or
    nothing matches (no agent watches `default`, so the Task never runs)."""
    if not isinstance(selector, Mapping) or not selector:
        return "default"
    cut = {k: (v.split(",", 1)[0] if isinstance(v, str) else v) for k, v in selector.items()}
    ordered = sorted(nodes, key=lambda n: (node_cluster(n), str(dig(_raw(n), "metadata", "name") or "")))
    for node in ordered:
        labels = _labels(node)
        if all(labels.get(k) == v for k, v in cut.items()):
            return node_cluster(node) or "default"
    return "default"


def replicas(task_spec: Any) -> int:
    """Workload replicas of a task spec (dict or TaskSpec); nil counts as 1."""
    return TaskSpec(_raw(task_spec)).replicas


def rank_start(tasks: Sequence[Any], index: int) -> int:
    """`RLARK_NODE_RANK_START` of `tasks[index]`: Σ replicas of the tasks listed before it."""
    return sum(replicas(task) for task in list(tasks)[:max(index, 0)])


def total_nodes(tasks: Iterable[Any]) -> int:
    """`RLARK_TOTAL_NODES`: Σ replicas of all tasks (the Ray node count the head waits for)."""
    return sum(replicas(task) for task in tasks)


def expected_node_rank(task_rank_start: int, ordinal: int) -> int:
    """`RLINF_NODE_RANK` of the StatefulSet pod with this ordinal: rank start + ordinal."""
    return task_rank_start + ordinal


def header_task_index(tasks: Sequence[Any]) -> int | None:
    """Index of the first task with `head: true`, or None."""
    for index, task in enumerate(tasks):
        if TaskSpec(_raw(task)).head:
            return index
    return None


def as_nodes(items: Iterable[Any]) -> list[Node]:
    """Node views over dicts (views pass through); non-mapping items are skipped."""
    result = []
    for item in items:
        if isinstance(item, Node):
            result.append(item)
        elif isinstance(item, Mapping):
            result.append(Node(item))
    return result
