"""Where a role's workers land, as the platform computes it: selector matching, replicas, Ray ranks, clusters,
and the hardware choices of the console's placement picker (Nodes by GPU or device model, slots free/total).

Pure functions over Node/Task dicts (or model views); facts from rlark-platform.md §2.1–§2.3 and the Create
wizard's step 2 (§4).
"""

from __future__ import annotations

import bisect
import functools
import itertools
import operator
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import Any, ParamSpec, TypeVar, cast

from rlark_tui.model import keys
from rlark_tui.model.objects import Node, TaskSpec, cluster_of, dig
from rlark_tui.model.quantity import parse_quantity

N = TypeVar("N")
K = TypeVar("K")
V = TypeVar("V")
P = ParamSpec("P")
R = TypeVar("R")

_MAPPINGS = (dict, Mapping)
"""isinstance(x, _MAPPINGS): a plain dict is answered without the (much slower) ABC check."""
_UNKNOWN = object()
_is_not: Callable[[object, object], bool] = operator.is_not


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
    in the order given. Of a NodeSet, found through its labels' index (`_label_index`), not a pass over every
    Node."""
    if isinstance(nodes, NodeSet):
        return cast("list[N]", [nodes[place] for place in _indexed_matches(selector, nodes)])
    return [node for node in nodes if selector_matches(selector, _labels(node))]


def _indexed_matches(selector: Mapping[str, Any], nodes: NodeSet) -> list[int]:
    """The places in `nodes` of the Nodes `selector` matches, as selector_matches judges each: every single value
    held, and one comma key's value among its alternatives when there are comma keys."""
    if not isinstance(selector, Mapping):
        return []
    index = _label_index(nodes)
    held: list[frozenset[int]] = []
    any_of: set[int] | None = None
    for key, value in selector.items():
        if not isinstance(value, str):
            return []
        if "," in value:
            any_of = set() if any_of is None else any_of
            for alternative in selector_alternatives(value):
                any_of.update(index.get((key, alternative), ()))
        else:
            held.append(index.get((key, value), frozenset()))
    if any_of is not None:
        held.append(frozenset(any_of))
    if not held:
        return list(range(len(nodes)))
    held.sort(key=len)
    places = nodes.places()
    return sorted(places[view] for view in held[0].intersection(*held[1:]))


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


def rank_starts(tasks: Iterable[Any]) -> list[int]:
    """`RLARK_NODE_RANK_START` of each task: Σ replicas of the tasks listed before it (in one pass: a Job's author
    sets how many tasks there are, and a sum per task was 8 s of `rlark check` at 3,000 tasks)."""
    starts, total = [], 0
    for task in tasks:
        starts.append(total)
        total += replicas(task)
    return starts


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


def as_nodes(items: Iterable[Any]) -> Sequence[Node]:
    """Node views over dicts (views pass through); non-mapping items are skipped. A NodeSet is returned as it is."""
    if isinstance(items, NodeSet):
        return items
    result = []
    for item in items:
        if isinstance(item, Node):
            result.append(item)
        elif isinstance(item, Mapping):
            result.append(Node(item))
    return result


# ---- placement by hardware, as the console's ResourcePlacementPicker offers it ------------------------------

GPU, DEVICE, COMPUTE = "gpu", "device", "compute"
_KIND_ORDER = MappingProxyType({GPU: 0, DEVICE: 1, COMPUTE: 2})
_GPU_WORD = re.compile(r"(^|[./-])gpu($|[./-])", re.I)
_NOT_WHOLE_GPU = re.compile(r"(^|[./-])(share|spot|virtual|v)-?gpu($|[./-])|(^|[./-])gpu-?(core|mem|memory)($|[./-])",
                            re.I)
CPU_MODEL = "CPU"
UNNAMED_GPU = "GPU (model not set)"


def _section(node: Node, name: str) -> Mapping[str, Any]:
    value = dig(node.raw, "status", name)
    return value if isinstance(value, Mapping) else {}


def _amount(value: Any) -> float:
    amount = parse_quantity(value) if value is not None else None
    return amount if amount is not None and amount > 0 else 0.0


def _meta(node: Node, *names: str) -> str:
    """The first of `names` set as an annotation, else as a label (the console's order)."""
    for name in names:
        for source in (node.annotations, node.labels):
            if source.get(name):
                return source[name]
    return ""


def gpu_resource(node: Node) -> str:
    """The Node's GPU resource name: `nvidia.com/gpu` when reported, else a `*/gpu` key, else another whole-GPU
    key (not shared, virtual or GPU-memory ones); `nvidia.com/gpu` when it reports none."""
    names = [str(k) for section in ("capacity", "allocatable", "used") for k in _section(node, section)]
    if keys.GPU_RESOURCE in names:
        return keys.GPU_RESOURCE
    return (next((n for n in names if n.lower().endswith("/gpu")), None)
            or next((n for n in names if _GPU_WORD.search(n) and not _NOT_WHOLE_GPU.search(n)), None)
            or keys.GPU_RESOURCE)


@dataclass(frozen=True)
class NodeSlots:
    """One Node as the placement picker counts it: its kind of hardware, model, resource name and slots
    (GPUs, devices, or 1 for a CPU-only Node), total and free (allocatable − used)."""

    node: Node
    kind: str
    model: str
    resource: str
    total: float
    free: float

    @property
    def schedulable(self) -> bool:
        """Not Offline and not cordoned."""
        return self.node.phase != "Offline" and not self.node.unschedulable


def node_slots(node: Node) -> NodeSlots | None:
    """What the picker offers of `node`: its GPUs, else its `rlinf.io/device*` devices, else one compute slot;
    None for a Node that reports a device key with no capacity."""
    capacity = _section(node, "capacity") or _section(node, "allocatable")
    allocatable = _section(node, "allocatable") or capacity
    used = _section(node, "used")
    gpu = gpu_resource(node)
    total = _amount(capacity.get(gpu, allocatable.get(gpu)))
    if total > 0:
        return NodeSlots(node, GPU, _meta(node, keys.GPU_MODEL_ANNOTATION, keys.MODEL_ANNOTATION) or UNNAMED_GPU,
                         gpu, total, max(0.0, _amount(allocatable.get(gpu)) - _amount(used.get(gpu))))
    device = next((str(k) for k in (*capacity, *allocatable) if str(k) == keys.DEVICE_RESOURCE
                   or str(k).startswith(keys.DEVICE_RESOURCE + "-")), "")
    if not device:
        slots = NodeSlots(node, COMPUTE, CPU_MODEL, "", 1.0, 1.0)
        return slots if slots.schedulable else replace(slots, free=0.0)
    total = _amount(capacity.get(device, allocatable.get(device)))
    if total <= 0:
        return None
    return NodeSlots(node, DEVICE, _meta(node, keys.DEVICE_MODEL_ANNOTATION, keys.MODEL_ANNOTATION) or device,
                     device, total, max(0.0, _amount(allocatable.get(device)) - _amount(used.get(device))))


@dataclass(frozen=True)
class Hardware:
    """One choice of the picker: every Node of a kind and model, with the slots free (on schedulable Nodes) and
    total, and the Nodes available (schedulable with a free slot) and total."""

    kind: str
    model: str
    members: tuple[NodeSlots, ...]

    @property
    def resource(self) -> str:
        return self.members[0].resource if self.members else ""

    @property
    def total(self) -> float:
        return sum(m.total for m in self.members)

    @property
    def free(self) -> float:
        return sum(m.free for m in self.members if m.schedulable)

    @property
    def nodes_available(self) -> int:
        return sum(1 for m in self.members if m.schedulable and m.free > 0)

    def eligible(self, per_worker: float) -> list[NodeSlots]:
        """The schedulable Nodes with at least `per_worker` slots free: where automatic placement may put one
        worker each."""
        return [m for m in self.members if m.schedulable and m.free >= per_worker]


class NodeSet(tuple[Node, ...]):
    """The Nodes of one Snapshot (SnapshotIndex.nodes, and what build_job checks a draft against), and what is
    derived of them (`derived`, through `once_per_node_set`), each once: the wizard's checks, hints and choices
    derived each cluster's hardware choices, labels, devices and clusters, and matched each selector, again at
    every change, each a pass over every Node, so over 10,000 Nodes a keystroke held the UI thread for seconds.

    Each Node view is in it once (a view given twice is viewed again), so a view's identity names its place. One
    made after another (`node_set_after`) knows which Nodes came and went (`changes`): a derivation with an
    updater follows those alone (the platform refreshes each Node CR every 30 s, so over 10,000 Nodes nearly every
    Snapshot has new Nodes, and deriving everything again held the UI thread half a second a Snapshot)."""

    def __new__(cls, items: Iterable[Any] = (), changes: NodeChanges | None = None) -> NodeSet:
        made = super().__new__(cls, items if changes is not None else _distinct(as_nodes(items)))
        made._derived = {}
        made._places = None
        made.changes = changes
        return made

    _derived: dict[tuple[Callable[..., Any], tuple[Any, ...]], Any]
    _places: dict[int, int] | None
    changes: NodeChanges | None
    """The Nodes that came and went since the NodeSet this one was made after (None: made from scratch; given,
    `items` are distinct Node views)."""

    def derived(self, derive: Callable[..., R], args: tuple[Any, ...],
                update: Callable[..., R] | None = None) -> R:
        """`derive(self, *args)`, derived at its first use and kept with these Nodes (which never change); with
        `update`, `update(self, earlier, self.changes, *args)` where the NodeSet this one was made after had
        derived it (`earlier`)."""
        key = (derive, args)
        if key not in self._derived:
            changes = self.changes
            if update is not None and changes is not None and key in changes.earlier:
                self._derived[key] = update(self, changes.earlier[key], changes, *args)
            else:
                self._derived[key] = derive(self, *args)
        found: R = self._derived[key]
        return found

    def places(self) -> Mapping[int, int]:
        """Each Node's place in this NodeSet, by its view's identity."""
        if self._places is None:
            self._places = {id(each): place for place, each in enumerate(self)}
        return self._places

    def place(self, node: Node) -> int:
        """Where `node` (one of these very views) is in this NodeSet."""
        return self.places()[id(node)]


@dataclass(frozen=True)
class NodeChanges:
    """How a NodeSet differs from the one it was made after: what that one had derived (`earlier`, by derivation
    and arguments), its Nodes this one does not hold (`gone`) and the Nodes it did not hold (`new`, a changed Node
    is gone and new). The Nodes both hold are the very same views, in the same order."""

    earlier: Mapping[tuple[Callable[..., Any], tuple[Any, ...]], Any]
    gone: tuple[Node, ...]
    new: tuple[Node, ...]


def _distinct(nodes: Iterable[Node]) -> list[Node]:
    seen: set[int] = set()
    distinct = []
    for node in nodes:
        if id(node) in seen:
            node = Node(node.raw)
        seen.add(id(node))
        distinct.append(node)
    return distinct


def node_set_after(earlier: NodeSet, raws: Iterable[Any]) -> NodeSet:
    """The Node dicts `raws` as a NodeSet made after `earlier`: a dict that is the very dict of one of its Nodes
    keeps that Node's view, and what was derived of `earlier` is updated by the Nodes that came and went. From
    scratch where the kept Nodes changed their order or more than an eighth of the Nodes changed (a change of
    every Node costs what deriving them anew does)."""
    places = {id(node.raw): place for place, node in enumerate(earlier)}
    nodes: list[Node] = []
    new: list[Node] = []
    gone: list[Node] = []
    last, in_order = -1, True
    for raw in raws:
        place = places.get(id(raw))
        if place is None:
            if not isinstance(raw, _MAPPINGS):
                continue
            node = Node(raw)
            new.append(node)
        else:
            node = earlier[place]
            if place != last + 1:
                in_order = in_order and place > last
                gone.extend(earlier[last + 1:place])
            last = place
        nodes.append(node)
    gone.extend(earlier[last + 1:])
    if not in_order or len(gone) + len(new) > max(16, len(nodes) // 8):
        return NodeSet(nodes)
    return NodeSet(nodes, NodeChanges(earlier._derived, tuple(gone), tuple(new)))


def once_per_node_set(derive: Callable[P, R]) -> Callable[P, R]:
    """`derive(nodes, *args)`, a pure derivation of Nodes, derived once per NodeSet and arguments (the arguments
    name a cluster or a model: few per Snapshot); over other Nodes, each call derives it. What it returns is shared
    by every caller: a tuple or another value no one changes."""
    return _once(derive, None)


def updated_per_node_set(update: Callable[..., R]) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """once_per_node_set, and over a NodeSet made after another that had derived it, `update(nodes, earlier,
    changes, *args)`: the same value, from the earlier one and the Nodes that came and went alone."""
    return lambda derive: _once(derive, update)


def _once(derive: Callable[P, R], update: Callable[..., R] | None) -> Callable[P, R]:
    @functools.wraps(derive)
    def derived(*args: P.args, **kwargs: P.kwargs) -> R:
        if kwargs or not args or not isinstance(args[0], NodeSet):
            return derive(*args, **kwargs)
        return args[0].derived(derive, args[1:], update)

    return derived


def each_item(source: Callable[..., tuple[Any, ...]]) -> Callable[[Callable[[Any], R]], Callable[..., tuple[R, ...]]]:
    """A derivation of `part(item)` for each item of `source(nodes, *args)`, a derivation's tuple whose unchanged
    items are the very objects they were: over a NodeSet made after another, `part` of the items that are new."""

    def decorate(part: Callable[[Any], R]) -> Callable[..., tuple[R, ...]]:
        def update(nodes: NodeSet, earlier: tuple[tuple[Any, ...], tuple[R, ...]], changes: NodeChanges,
                   *args: Any) -> tuple[tuple[Any, ...], tuple[R, ...]]:
            items, (before, parts) = source(nodes, *args), earlier
            fresh: list[Any]
            changed: Iterable[int]
            if len(items) == len(before):
                fresh = list(parts)
                changed = itertools.compress(range(len(items)), map(_is_not, items, before))
            else:
                known = dict(zip(map(id, before), parts))
                fresh = list(map(known.get, map(id, items), itertools.repeat(_UNKNOWN)))
                changed = [place for place, each in enumerate(fresh) if each is _UNKNOWN]
            for place in changed:
                fresh[place] = part(items[place])
            return items, tuple(fresh)

        @updated_per_node_set(update)
        def pairs(nodes: Iterable[Node], *args: Any) -> tuple[tuple[Any, ...], tuple[R, ...]]:
            items = source(nodes, *args)
            return items, tuple(part(item) for item in items)

        @functools.wraps(part)
        def parts(nodes: Iterable[Node], *args: Any) -> tuple[R, ...]:
            return pairs(nodes, *args)[1]

        return parts

    return decorate


def dict_of(mapping: Mapping[K, V]) -> dict[K, V]:
    """A new dict of `mapping`; of a MappingProxyType (what a derivation returns), a copy of its dict (dict() of
    one reads it key by key: 0.9 ms over 10,000 keys, a copy 0.08 ms)."""
    return mapping.copy() if isinstance(mapping, MappingProxyType) else dict(mapping)


def node_set(items: Iterable[Any]) -> NodeSet:
    """`items` as a NodeSet (one already is passes through, what was derived of it kept)."""
    return items if isinstance(items, NodeSet) else NodeSet(items)


def _string_labels(node: Node) -> Iterable[tuple[Any, str]]:
    return ((key, value) for key, value in _labels(node).items() if isinstance(value, str))


def _update_label_index(nodes: NodeSet, earlier: Mapping[tuple[Any, str], frozenset[int]], changes: NodeChanges
                        ) -> Mapping[tuple[Any, str], frozenset[int]]:
    edits: dict[tuple[Any, str], tuple[set[int], set[int]]] = {}
    for which, changed in enumerate((changes.gone, changes.new)):
        for node in changed:
            for label in _string_labels(node):
                edits.setdefault(label, (set(), set()))[which].add(id(node))
    index = dict_of(earlier)
    for label, (gone, new) in edits.items():
        views = (index.get(label, frozenset()) - gone) | new
        if views:
            index[label] = frozenset(views)
        else:
            index.pop(label, None)
    return MappingProxyType(index)


@updated_per_node_set(_update_label_index)
def _label_index(nodes: NodeSet) -> Mapping[tuple[Any, str], frozenset[int]]:
    """(label key, value) → the Nodes of `nodes` with it, by their views' identity (values that are strings only,
    as selector_matches matches them)."""
    index: dict[tuple[Any, str], set[int]] = {}
    for node in nodes:
        for label in _string_labels(node):
            index.setdefault(label, set()).add(id(node))
    return MappingProxyType({label: frozenset(views) for label, views in index.items()})


def _update_cluster_counts(nodes: NodeSet, earlier: Mapping[str, int], changes: NodeChanges) -> Mapping[str, int]:
    counts = dict_of(earlier)
    for step, changed in ((-1, changes.gone), (1, changes.new)):
        for node in changed:
            counts[node.cluster] = counts.get(node.cluster, 0) + step
    return MappingProxyType({cluster: count for cluster, count in counts.items() if count})


@updated_per_node_set(_update_cluster_counts)
def _cluster_counts(nodes: Iterable[Node]) -> Mapping[str, int]:
    counts: dict[str, int] = {}
    for node in nodes:
        counts[node.cluster] = counts.get(node.cluster, 0) + 1
    return MappingProxyType(counts)


@once_per_node_set
def node_clusters(nodes: Iterable[Node]) -> tuple[str, ...]:
    """The clusters the Nodes are in, sorted (none is "")."""
    return tuple(sorted(cluster for cluster in _cluster_counts(nodes) if cluster))


@dataclass(frozen=True)
class _HardwareOf:
    """The hardware choices of a cluster's Nodes, in the picker's order, and by (kind, model) and by model."""

    choices: tuple[Hardware, ...]
    by_key: Mapping[tuple[str, str], Hardware]
    by_model: Mapping[str, Hardware]


def _choice_order(choice: Hardware) -> tuple[int, str]:
    return _KIND_ORDER[choice.kind], choice.model


def _first_by_model(by_key: Mapping[tuple[str, str], Hardware], model: str) -> Hardware | None:
    return next((by_key[(kind, model)] for kind in _KIND_ORDER if (kind, model) in by_key), None)


def _update_hardware(nodes: NodeSet, earlier: _HardwareOf, changes: NodeChanges, cluster: str) -> _HardwareOf:
    gone: dict[tuple[str, str], set[int]] = {}
    new: dict[tuple[str, str], list[NodeSlots]] = {}
    for node in changes.gone:
        slots = node_slots(node) if not cluster or node.cluster == cluster else None
        if slots is not None:
            gone.setdefault((slots.kind, slots.model), set()).add(id(node))
    for node in changes.new:
        slots = node_slots(node) if not cluster or node.cluster == cluster else None
        if slots is not None:
            new.setdefault((slots.kind, slots.model), []).append(slots)

    def member_order(slots: NodeSlots) -> tuple[str, str, int]:
        return slots.node.cluster, slots.node.name, nodes.place(slots.node)

    choices, by_key, by_model = list(earlier.choices), dict_of(earlier.by_key), dict_of(earlier.by_model)
    for key in gone.keys() | new.keys():
        old = by_key.get(key)
        leaving = gone.get(key, set())
        members = [member for member in old.members if id(member.node) not in leaving] if old is not None else []
        for slots in new.get(key, ()):
            bisect.insort(members, slots, key=member_order)
        where = bisect.bisect_left(choices, (_KIND_ORDER[key[0]], key[1]), key=_choice_order)
        if old is not None:
            del choices[where]
            del by_key[key]
        if members:
            by_key[key] = Hardware(key[0], key[1], tuple(members))
            choices.insert(where, by_key[key])
        first = _first_by_model(by_key, key[1])
        if first is None:
            by_model.pop(key[1], None)
        else:
            by_model[key[1]] = first
    return _HardwareOf(tuple(choices), MappingProxyType(by_key), MappingProxyType(by_model))


@updated_per_node_set(_update_hardware)
def _hardware_of(nodes: Iterable[Node], cluster: str) -> _HardwareOf:
    groups: dict[tuple[str, str], list[NodeSlots]] = {}
    for node in sorted(nodes, key=lambda n: (n.cluster, n.name)):
        if cluster and node.cluster != cluster:
            continue
        slots = node_slots(node)
        if slots is not None:
            groups.setdefault((slots.kind, slots.model), []).append(slots)
    choices = tuple(sorted((Hardware(kind, model, tuple(members)) for (kind, model), members in groups.items()),
                           key=_choice_order))
    by_model: dict[str, Hardware] = {}
    for choice in choices:
        by_model.setdefault(choice.model, choice)
    return _HardwareOf(choices, MappingProxyType({(c.kind, c.model): c for c in choices}),
                       MappingProxyType(by_model))


def hardware_choices(nodes: Iterable[Node], cluster: str = "") -> tuple[Hardware, ...]:
    """The picker's choices over the Nodes of `cluster` (every cluster when empty): GPUs first, then devices,
    then general compute, each by model; members in (cluster, name) order."""
    return _hardware_of(nodes, cluster).choices


def hardware_named(nodes: Iterable[Node], cluster: str, model: str) -> Hardware | None:
    """The choice of `cluster` (every cluster when empty) named `model` (a GPU model before devices of the same
    name)."""
    return _hardware_of(nodes, cluster).by_model.get(model)


def hostname_selector(names: Iterable[str]) -> dict[str, str]:
    """The nodeSelector the console writes for a placement: `kubernetes.io/hostname: "<n1>,<n2>,…"` (no key when
    there are no names)."""
    joined = ",".join(names)
    return {keys.HOSTNAME_LABEL: joined} if joined else {}
