"""The immutable picture of the cluster that the reconciler builds and every screen reads.

Objects are kept as the API returned them (plain dicts); model/ wraps them in typed views. The results of
subscriptions (rlark_tui.flow.polls) sit in the field named after their topic, per key.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from types import MappingProxyType
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from rlark_tui.model.podstate import PodHealth

SourceStatus = Literal["connected", "stale", "disconnected", "unconfigured"]


@dataclass(frozen=True)
class SourceState:
    """Health of one data source (control plane, a data plane, the gateway, a Ray dashboard)."""

    name: str
    status: SourceStatus
    reason: str = ""


def _frozen(mapping: Mapping | None = None) -> Mapping:
    return MappingProxyType(dict(mapping or {}))


@dataclass(frozen=True)
class Snapshot:
    """Everything known at one instant. Keys: Job name; `namespace/name` for namespaced kinds."""

    jobs: Mapping[str, dict] = field(default_factory=_frozen)
    tasks: Mapping[str, dict] = field(default_factory=_frozen)
    pods: Mapping[str, dict] = field(default_factory=_frozen)
    nodes: Mapping[str, dict] = field(default_factory=_frozen)
    domains: Mapping[str, dict] = field(default_factory=_frozen)
    sources: Mapping[str, SourceState] = field(default_factory=_frozen)
    ray: Mapping[str, dict] = field(default_factory=_frozen)
    """Per Job name: the last Ray dashboard status polled for it (alive nodes, status text, error)."""
    evidence: Mapping[str, object] = field(default_factory=_frozen)
    """Per Job name: its last run-check evidence (`polls.Gathered`)."""
    diagnosis: Mapping[str, object] = field(default_factory=_frozen)
    """Per Job name: its run's first failure and timeline (`telemetry.diagnosis.Diagnosis`), joined with the kept
    evidence."""
    health: Mapping[str, Mapping[str, PodHealth]] = field(default_factory=_frozen)
    """Per Job name: Pod CR key -> `model.podstate.PodHealth` of `main` (restart count, failure reason), as the
    data planes last reported it (in brief for the job list's REASON, in detail for the job detail)."""
    progress: Mapping[str, object] = field(default_factory=_frozen)
    """Per Job name: the newest progress row of its Header log (`telemetry.progress.ProgressState`)."""
    metrics: Mapping[str, object] = field(default_factory=_frozen)
    """Per Job name: its scalar series for the Metrics tab and compare (`telemetry.curves.MetricsState`)."""
    workflows: Mapping[str, object] = field(default_factory=_frozen)
    """`polls.ALL_KEY` -> every Workflow as last listed (`polls.Listed`), while the Workflows view is open."""
    alerts: Mapping[str, object] = field(default_factory=_frozen)
    """Scope key (`alertpoll.ALL_KEY` or Job names) -> the alert book and what its next round needs
    (`alerting.rules.AlertsState`)."""
    usage: Mapping[str, object] = field(default_factory=_frozen)
    """Scope key -> resource use of the Running Pods in scope (`telemetry.usage.UsageState`)."""
    storage: Mapping[str, object] = field(default_factory=_frozen)
    """`polls.ALL_KEY` -> the storage classes and their clusters (`polls.Listed`); `polls.storage_key(...)` -> one
    folder (`polls.Folder`), while the Storage view shows it."""
    sshkeys: Mapping[str, object] = field(default_factory=_frozen)
    """`polls.ALL_KEY` -> the gateway's registered SSH keys (`polls.Listed`), while the SSH keys view is open."""
    lookups: Mapping[str, object] = field(default_factory=_frozen)
    """`polls.GATEWAY_KEY` -> what the gateway offers a new Job (`polls.GatewayLookups`)."""
    version: int = 0
    """Counts the reconciler's snapshots (0: not from a reconciler)."""
    changes: Mapping[str, frozenset[str]] = field(default_factory=_frozen)
    """Per kind (jobs, tasks, pods, nodes, domains): the keys added, modified or deleted since snapshot
    `version - 1`; a kind missing here is unknown (e.g. after a relist) and is compared object by object."""


def source_key(obj: dict) -> str:
    """A listed object's Snapshot key: `namespace/name`, or the name of a cluster-scoped one (a name or namespace
    that is not a string counts as none)."""
    meta = obj.get("metadata") if isinstance(obj, dict) else None
    meta = meta if isinstance(meta, dict) else {}
    namespace, name = meta.get("namespace"), meta.get("name")
    name = name if isinstance(name, str) else ""
    return f"{namespace}/{name}" if isinstance(namespace, str) and namespace else name


KINDS = ("jobs", "tasks", "pods", "nodes", "domains")
"""The watched kinds' fields of a Snapshot."""
RESULTS = tuple(f.name for f in fields(Snapshot) if f.name not in (*KINDS, "sources", "version", "changes"))
"""The subscription results' fields of a Snapshot, one per topic (rlark_tui.flow.polls.TOPICS): ray, health, …"""
