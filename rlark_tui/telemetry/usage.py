"""Resource use, pure: what the reads answer (metrics.k8s.io PodMetrics, cgroup v2 files), the `usage` topic's
state, and the cells every view shows (Workers table, job list, `get jobs -o wide`, `rlark top`).

Samples are `telemetry.sample.PodUsage`, keyed by Pod CR key `namespace/name` (the gpu-idle alert reads them).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from rlark_tui.model.quantity import parse_quantity
from rlark_tui.telemetry.sample import (
    CPU_MILLICORES,
    GPU_UTIL,
    GPUS,
    MEMORY_BYTES,
    PodUsage,
    gpu_mem_total_mib,
    gpu_mem_used_mib,
    gpu_percent,
)
from rlark_tui.text.parse import ascii_int

NONE = "-"


def parse_pod_metrics(body: object) -> dict[str, tuple[float, int]]:
    """A PodMetricsList (or one PodMetrics) -> {pod name: (CPU millicores, memory bytes)}, summed over containers;
    an item whose usage does not parse, or sums past any number (two containers of 1e308 bytes), is left out."""
    items = body.get("items") if isinstance(body, dict) and "items" in body else [body]
    found = {}
    for item in items if isinstance(items, list) else []:
        if not isinstance(item, dict):
            continue
        name = (item.get("metadata") or {}).get("name") if isinstance(item.get("metadata"), dict) else None
        containers = item.get("containers")
        if not isinstance(name, str) or not isinstance(containers, list):
            continue
        cpu = memory = 0.0
        for container in containers:
            usage = container.get("usage") if isinstance(container, dict) else None
            if not isinstance(usage, dict):
                continue
            cores, amount = parse_quantity(usage.get("cpu")), parse_quantity(usage.get("memory"))
            if cores is None or amount is None:
                break
            cpu, memory = cpu + cores * 1000, memory + amount
        else:
            if math.isfinite(cpu) and math.isfinite(memory):
                found[name] = (cpu, int(memory))
    return found


@dataclass(frozen=True)
class CgroupReading:
    """`cat cpu.stat memory.current` of a container: CPU time in microseconds, memory bytes, when read."""

    cpu_usec: int
    memory_bytes: int
    at: float


def parse_cgroup(text: str, at: float) -> CgroupReading | None:
    """cpu.stat's `usage_usec N` line and memory.current's one number; None when either is missing."""
    usage = memory = None
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0] == "usage_usec" and ascii_int(parts[1]) is not None:
            usage = ascii_int(parts[1])
        elif len(parts) == 1 and ascii_int(parts[0]) is not None:
            memory = ascii_int(parts[0])
    return CgroupReading(usage, memory, at) if usage is not None and memory is not None else None


def cgroup_millicores(before: CgroupReading | None, after: CgroupReading) -> float | None:
    """The CPU rate between two readings of the same container (None without an earlier one)."""
    if before is None or after.at <= before.at or after.cpu_usec < before.cpu_usec:
        return None
    return (after.cpu_usec - before.cpu_usec) / 1000 / (after.at - before.at)


@dataclass(frozen=True)
class UsageState:
    """The `usage` topic's result for one scope: the newest sample of each Pod, and what the next round needs
    (when each Pod was last exec'd into, its last cgroup reading, when each cluster's PodMetrics were read and
    whether they answered)."""

    samples: Mapping[str, PodUsage] = field(default_factory=lambda: MappingProxyType({}))
    exec_at: Mapping[str, tuple[float, str]] = field(default_factory=lambda: MappingProxyType({}))
    cgroups: Mapping[str, CgroupReading] = field(default_factory=lambda: MappingProxyType({}))
    metrics_at: Mapping[str, float] = field(default_factory=lambda: MappingProxyType({}))
    metrics_served: Mapping[str, bool] = field(default_factory=lambda: MappingProxyType({}))
    errors: tuple[str, ...] = ()


def gpu_cell(sample: PodUsage | None) -> str:
    percent = gpu_percent(sample) if sample is not None else None
    return NONE if percent is None else f"{percent:.0f}%"


def gpu_mem_cell(sample: PodUsage | None) -> str:
    """`12.3/80.0Gi` (nvidia-smi's MiB as GiB), `-` without GPU numbers."""
    used = gpu_mem_used_mib(sample) if sample is not None else None
    total = gpu_mem_total_mib(sample) if sample is not None else None
    if used is None or total is None:
        return NONE
    return f"{used / 1024:.1f}/{total / 1024:.0f}Gi"


def cpu_cell(sample: PodUsage | None) -> str:
    """kubectl top's form: millicores (`250m`)."""
    if sample is None or sample[CPU_MILLICORES] is None:
        return NONE
    return f"{sample[CPU_MILLICORES]:.0f}m"


def mem_cell(sample: PodUsage | None) -> str:
    """kubectl top's form: MiB (`123Mi`)."""
    memory = sample[MEMORY_BYTES] if sample is not None else None
    if memory is None:
        return NONE
    return f"{memory / (1 << 20):.0f}Mi"


def mean_gpu_percent(samples: Iterable[PodUsage | None]) -> float | None:
    """The mean utilisation over every GPU of these Pods (a Job's GPU%); None without any GPU number."""
    utils = [gpu[GPU_UTIL] for sample in samples if sample is not None and sample[GPUS] for gpu in sample[GPUS] or ()]
    return sum(utils) / len(utils) if utils else None


def percent_cell(percent: float | None) -> str:
    return NONE if percent is None else f"{percent:.0f}%"


def pod_usage(state: object, keys: Iterable[str]) -> dict[str, PodUsage]:
    """The samples of these Pod CR keys in a `usage` topic result (a UsageState; anything else: none)."""
    samples = state.samples if isinstance(state, UsageState) else {}
    return {key: samples[key] for key in keys if key in samples}
