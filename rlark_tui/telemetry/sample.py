"""Resource use of one Pod at one instant: its GPUs (as `nvidia-smi --query-gpu=index,uuid,utilization.gpu,
memory.used,memory.total --format=csv,noheader,nounits` reports them), CPU and memory (PodMetrics or cgroup).

Pure: the reads that fill it live in cluster/; the `gpu-idle` alert rule (alerting/rules.py) and the resource
columns read it.
"""

from __future__ import annotations

from typing import Final, TypeAlias

from rlark_tui.text.parse import ascii_float, ascii_int

SOURCES = ("nvidia-smi", "podmetrics", "cgroup", "none")
"""Where a sample's numbers came from: GPUs always from nvidia-smi; CPU and memory from metrics.k8s.io PodMetrics,
else the Pod's cgroup; `none` when nothing answered."""


GpuSample: TypeAlias = tuple[int, str, float, float, float]
"""One GPU as nvidia-smi lists it, `(index, uuid, util_percent, mem_used_mib, mem_total_mib)` (GPU_INDEX … GPU_MEM_TOTAL
name the places): memory in MiB (nvidia-smi's `nounits` unit), utilisation in percent. A plain tuple, as PodUsage."""
GPU_INDEX: Final = 0
GPU_UUID: Final = 1
GPU_UTIL: Final = 2
GPU_MEM_USED: Final = 3
GPU_MEM_TOTAL: Final = 4

PodUsage: TypeAlias = tuple[str, float, tuple[GpuSample, ...] | None, float | None, int | None, str, str]
"""One Pod's sample, `(pod, at, gpus, cpu_millicores, memory_bytes, source, error)` (POD … ERROR name the places;
`usage_sample` makes one): `pod` is the Pod CR key `namespace/name`; `at` epoch seconds of the round that read these
numbers (a later round that read the same ones keeps the sample); `gpus` None when the Pod has no readable nvidia-smi
(shown `-`), () for no GPUs; `cpu_millicores` / `memory_bytes` None when unknown; `source` the SOURCES that answered,
joined by `+` (`nvidia-smi+podmetrics`, `podmetrics`, …). A plain tuple, not a dataclass: CPython's cycle collector
stops tracking a tuple of strings, numbers and such tuples, and the TUI keeps one sample a Running Pod from round to
round: as dataclasses, bench/tui.py's 50,000 were half of what each full pass of the collector walked while a log
flowed (a pass every 1-1.5 s, each a pause of the UI thread)."""
POD: Final = 0
AT: Final = 1
GPUS: Final = 2
CPU_MILLICORES: Final = 3
MEMORY_BYTES: Final = 4
SOURCE: Final = 5
ERROR: Final = 6


def usage_sample(pod: str, at: float, gpus: tuple[GpuSample, ...] | None = None, cpu_millicores: float | None = None,
                 memory_bytes: int | None = None, source: str = "none", error: str = "") -> PodUsage:
    return (pod, at, gpus, cpu_millicores, memory_bytes, source, error)


def gpu_percent(sample: PodUsage) -> float | None:
    """Mean utilisation over the Pod's GPUs; None without GPU numbers."""
    gpus = sample[GPUS]
    if not gpus:
        return None
    return sum(gpu[GPU_UTIL] for gpu in gpus) / len(gpus)


def gpu_mem_used_mib(sample: PodUsage) -> float | None:
    gpus = sample[GPUS]
    return sum(gpu[GPU_MEM_USED] for gpu in gpus) if gpus else None


def gpu_mem_total_mib(sample: PodUsage) -> float | None:
    gpus = sample[GPUS]
    return sum(gpu[GPU_MEM_TOTAL] for gpu in gpus) if gpus else None


def all_gpus_below(sample: PodUsage, percent: float) -> bool:
    """Every GPU of the sample under `percent` utilisation (False without GPU numbers)."""
    gpus = sample[GPUS]
    if not gpus:
        return False
    return all(gpu[GPU_UTIL] < percent for gpu in gpus)


MAX_GPU_MIB = float(2**30)
"""A GPU's memory in MiB is under this (a PiB): more, as 100 for a utilisation, is no number nvidia-smi gives (a Pod's
own nvidia-smi said 1e308, a 309-digit cell in `rlark top job` and 'inf%' in the job list)."""


def parse_nvidia_smi(text: str) -> tuple[GpuSample, ...]:
    """The CSV rows of the query above; a row that does not parse, or says a utilisation outside 0-100 or memory
    outside 0 to MAX_GPU_MIB, is left out (`[N/A]` utilisation reads 0)."""
    found = []
    for line in text.splitlines():
        cells = [cell.strip() for cell in line.split(",")]
        index = ascii_int(cells[0]) if len(cells) == 5 else None
        if index is None:
            continue
        util, used, total = (ascii_float(cell) for cell in cells[2:])
        if used is None or total is None or not (0 <= used < MAX_GPU_MIB and 0 <= total < MAX_GPU_MIB) \
                or (util is not None and not 0 <= util <= 100):
            continue
        found.append((index, cells[1], util or 0.0, used, total))
    return tuple(found)
