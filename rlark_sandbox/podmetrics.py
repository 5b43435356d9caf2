"""metrics-server's API on the member clusters (`metrics.k8s.io/v1beta1`, served by kubernetes-sigs/metrics-server
`pkg/api/pod.go`): PodMetrics list (all namespaces or one, `labelSelector`) and get, in its real shape

    {"kind": "PodMetricsList", "apiVersion": "metrics.k8s.io/v1beta1", "metadata": {},
     "items": [{"metadata": {"name", "namespace", "creationTimestamp", "labels"}, "timestamp": RFC3339,
                "window": "1.003s", "containers": [{"name": "main", "usage": {"cpu": "123456n", "memory": "1234Ki"}}]}]}

from each Running Pod's real process group (rlark_sandbox/gpus.py). A Pod with no reading yet is left out of a list and
is NotFound on get, as metrics-server answers before its first two scrapes.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import UTC, datetime

from rlark_sandbox import selectors
from rlark_sandbox.gpus import CpuMeter, cpu_quantity, memory_quantity

GROUP = "metrics.k8s.io"
VERSION = "v1beta1"
GROUP_VERSION = f"{GROUP}/{VERSION}"
RESOURCES = {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": GROUP_VERSION, "resources": [
    {"name": "pods", "singularName": "", "namespaced": True, "kind": "PodMetrics", "verbs": ["get", "list"]}]}


class NotFound(Exception):
    """A path metrics-server does not serve, or a Pod it has no metrics of (the API server's 404)."""


class PodMetricsApi:
    def __init__(self, store, pod_groups: Callable[[str], dict[str, int]]) -> None:
        self.store = store
        self.pod_groups = pod_groups
        """cluster -> {Pod name: its container's process group} (the agent's running containers)."""
        self._meters: dict[str, CpuMeter] = {}

    async def answer(self, plane: str, parts: list[str], query) -> dict:
        """The body for `/apis/metrics.k8s.io/v1beta1/<parts>`; NotFound for what metrics-server does not serve."""
        if not parts:
            return RESOURCES
        namespace = None
        if parts[0] == "namespaces" and len(parts) >= 3:
            namespace, parts = parts[1], parts[2:]
        if parts[0] != "pods" or len(parts) > 2:
            raise NotFound("the server could not find the requested resource")
        labels = query.get("labelSelector")
        try:
            selectors.object_matcher(labels, None, None)
        except ValueError as exc:
            raise NotFound(str(exc)) from None
        name = parts[1] if len(parts) == 2 else None
        pods, _ = self.store.list("pods", namespace, plane, labels, None)
        pods = [pod for pod in pods if name is None or pod["metadata"]["name"] == name]
        items = await self._items(plane, pods)
        if name is not None:
            if not items:
                raise NotFound(f'podmetrics.metrics.k8s.io "{name}" not found')
            return {"kind": "PodMetrics", "apiVersion": GROUP_VERSION, **items[0]}
        return {"kind": "PodMetricsList", "apiVersion": GROUP_VERSION, "metadata": {}, "items": items}

    async def _items(self, plane: str, pods: list[dict]) -> list[dict]:
        groups = self.pod_groups(plane)
        running = [(pod, groups[pod["metadata"]["name"]]) for pod in pods
                   if (pod.get("status") or {}).get("phase") == "Running" and pod["metadata"]["name"] in groups]
        meter = self._meters.setdefault(plane, CpuMeter())
        pgids = [pgid for _, pgid in running]
        if meter.unknown(pgids):
            meter.read(pgids)
            await asyncio.sleep(CpuMeter.MIN_WINDOW)
        rates = meter.read(pgids)
        stamp = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        items = []
        for pod, pgid in running:
            rate = rates.get(pgid)
            if rate is None:
                continue
            meta = pod["metadata"]
            items.append({
                "metadata": {"name": meta["name"], "namespace": meta.get("namespace", ""),
                             "creationTimestamp": stamp, "labels": dict(meta.get("labels") or {})},
                "timestamp": stamp, "window": f"{rate.window:.3f}s",
                "containers": [{"name": "main", "usage": {"cpu": cpu_quantity(rate.cores),
                                                          "memory": memory_quantity(rate.memory)}}]})
        return items
