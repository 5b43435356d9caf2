"""Resource use of one Pod at one instant: its GPUs (as `nvidia-smi --query-gpu=index,uuid,utilization.gpu,
memory.used,memory.total --format=csv,noheader,nounits` reports them), CPU and memory (PodMetrics or cgroup).

Pure: the reads that fill it live in cluster/; the `gpu-idle` alert rule (alerting/rules.py) and the resource
columns read it.
"""

from __future__ import annotations

from dataclasses import dataclass

from rlark_tui.text.parse import ascii_float, ascii_int

SOURCES = ("nvidia-smi", "podmetrics", "cgroup", "none")
"""Where a sample's numbers came from: GPUs always from nvidia-smi; CPU and memory from metrics.k8s.io PodMetrics,
else the Pod's cgroup; `none` when nothing answered."""


@dataclass(frozen=True)
class GpuSample:
    """One GPU as nvidia-smi lists it: memory in MiB (nvidia-smi's `nounits` unit), utilisation in percent."""

    index: int
    uuid: str
    util_percent: float
    mem_used_mib: float
    mem_total_mib: float


@dataclass(frozen=True)
class PodUsage:
    """One Pod's sample. `gpus` is None when the Pod has no readable nvidia-smi (shown `-`), () for no GPUs;
    `cpu_millicores` / `memory_bytes` None when unknown. `at` is epoch seconds of the round that
    read these numbers (a later round that read the same ones keeps the sample)."""

    pod: str
    """The Pod CR key `namespace/name`."""
    at: float
    gpus: tuple[GpuSample, ...] | None = None
    cpu_millicores: float | None = None
    memory_bytes: int | None = None
    source: str = "none"
    """`nvidia-smi+podmetrics`, `nvidia-smi+cgroup`, `podmetrics`, … (the SOURCES that answered, joined by `+`)."""
    error: str = ""

    @property
    def gpu_percent(self) -> float | None:
        """Mean utilisation over the Pod's GPUs; None without GPU numbers."""
        if not self.gpus:
            return None
        return sum(gpu.util_percent for gpu in self.gpus) / len(self.gpus)

    @property
    def gpu_mem_used_mib(self) -> float | None:
        return sum(gpu.mem_used_mib for gpu in self.gpus) if self.gpus else None

    @property
    def gpu_mem_total_mib(self) -> float | None:
        return sum(gpu.mem_total_mib for gpu in self.gpus) if self.gpus else None

    def all_gpus_below(self, percent: float) -> bool:
        """Every GPU of the sample under `percent` utilisation (False without GPU numbers)."""
        if not self.gpus:
            return False
        return all(gpu.util_percent < percent for gpu in self.gpus)


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
        found.append(GpuSample(index, cells[1], util or 0.0, used, total))
    return tuple(found)
