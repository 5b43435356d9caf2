"""Simulated hardware, real shapes: each sandbox Pod's CPU and memory as metrics-server reports them, and the
`nvidia-smi` a GPU Pod finds on its PATH.

- `group_usage()`: ONE pass over /proc giving every session's CPU seconds (user + system, with its reaped
  children's) and resident bytes; a Pod's container is one session whose id is its process group (runner.py).
- `CpuMeter`: CPU rates from two readings of a group, as metrics-server turns two cumulative kubelet readings
  into a rate over a window.
- `install_nvidia_smi(...)`: a per-Pod bin dir holding an `nvidia-smi` that answers exactly
  `--query-gpu=index,uuid,utilization.gpu,memory.used,memory.total --format=csv,noheader,nounits` for the GPUs
  the Pod requested: the model's memory from its Node (`rlark.io/gpu-model` like `NVIDIA H100 80GB HBM3`), the
  utilisation from the container's real CPU use over half a second (one busy core = 100 % on every GPU), the
  memory used from its resident memory spread over its GPUs. Pods without GPUs get no nvidia-smi at all.
"""

from __future__ import annotations

import os
import re
import sys
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from rlark_sandbox.procs import live_stats

QUERY = ("--query-gpu=index,uuid,utilization.gpu,memory.used,memory.total", "--format=csv,noheader,nounits")
DEFAULT_MEMORY_MIB = 81559
"""An H100 80GB's `memory.total` as nvidia-smi reports it, for a Node whose model names no size."""
SAMPLE_SECONDS = 0.5
TICKS = os.sysconf("SC_CLK_TCK")
PAGE = os.sysconf("SC_PAGE_SIZE")


def group_usage() -> dict[int, tuple[float, int]]:
    """session id -> (CPU seconds of its live members and their reaped children, resident bytes), from one /proc
    pass. A container is the session its first process started (runner.py: `start_new_session`): its whole process
    tree, also what moved to a process group of its own (`timeout`, a shell's job control)."""
    found: dict[int, tuple[float, int]] = {}
    for _pid, fields in live_stats():
        if len(fields) < 22:
            continue
        session = int(fields[3])
        cpu = sum(int(value) for value in fields[11:15]) / TICKS
        rss = int(fields[21]) * PAGE
        old = found.get(session, (0.0, 0))
        found[session] = (old[0] + cpu, old[1] + rss)
    return found


@dataclass
class Rate:
    cores: float
    window: float
    memory: int


class CpuMeter:
    """CPU rates of process groups: each reading is compared with the one before it (at least MIN_WINDOW
    seconds older); a group met for the first time is read again after MIN_WINDOW (`first_wait`)."""

    MIN_WINDOW = 1.0

    def __init__(self) -> None:
        self._last: dict[int, tuple[float, float]] = {}
        self._rates: dict[int, Rate] = {}

    def unknown(self, pgids: list[int]) -> bool:
        """True when one of `pgids` has no reading yet (the caller reads once, waits MIN_WINDOW, reads again)."""
        return any(pgid not in self._last for pgid in pgids)

    def read(self, pgids: list[int]) -> dict[int, Rate]:
        now = time.monotonic()
        usage = group_usage()
        for pgid in pgids:
            cpu, rss = usage.get(pgid, (0.0, 0))
            last = self._last.get(pgid)
            if last is None:
                self._last[pgid] = (now, cpu)
                continue
            window = now - last[0]
            if window >= self.MIN_WINDOW:
                self._rates[pgid] = Rate(max(0.0, cpu - last[1]) / window, window, rss)
                self._last[pgid] = (now, cpu)
            elif pgid in self._rates:
                self._rates[pgid].memory = rss
        for pgid in [p for p in self._last if p not in pgids and p not in usage]:
            self._last.pop(pgid, None)
            self._rates.pop(pgid, None)
        return {pgid: self._rates[pgid] for pgid in pgids if pgid in self._rates}


def gpu_memory_mib(model: str) -> int:
    """`NVIDIA H100 80GB HBM3` -> 81920; DEFAULT_MEMORY_MIB when the model names no size."""
    match = re.search(r"(\d{1,4})\s*GB", model or "")
    return int(match.group(1)) * 1024 if match else DEFAULT_MEMORY_MIB


def gpu_uuids(node: str, count: int, pod_uid: str) -> list[str]:
    """Stable `GPU-<uuid>` names per Pod and Node (a Pod sees its own GPUs, numbered from 0)."""
    return [f"GPU-{uuid.uuid5(uuid.NAMESPACE_DNS, f'{node}/{pod_uid}/{index}')}" for index in range(count)]


_SCRIPT = '''#!{python}
import os, sys, time
QUERY = {query!r}
UUIDS = {uuids!r}
TOTAL = {total}
PGID_FILE = {pgid_file!r}
TICKS = os.sysconf("SC_CLK_TCK")
PAGE = os.sysconf("SC_PAGE_SIZE")

def group(pgid):
    cpu = rss = 0
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open("/proc/" + name + "/stat", "rb") as fh:
                stat = fh.read().decode(errors="replace")
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2:].split()
        if len(fields) >= 22 and fields[0] != "Z" and int(fields[3]) == pgid:
            cpu += sum(int(v) for v in fields[11:15])
            rss += int(fields[21])
    return cpu / TICKS, rss * PAGE

if tuple(sys.argv[1:]) != QUERY:
    sys.stderr.write("sandbox nvidia-smi answers only: nvidia-smi " + " ".join(QUERY) + "\\n")
    sys.exit(2)
try:
    pgid = int(open(PGID_FILE).read())
except (OSError, ValueError):
    sys.stderr.write("Failed to initialize NVML: Unknown Error\\n")
    sys.exit(255)
before, _ = group(pgid)
time.sleep({sample})
after, rss = group(pgid)
util = max(0, min(100, round((after - before) / {sample} * 100)))
used = min(TOTAL, round(rss / 1048576 / len(UUIDS)))
for index, name in enumerate(UUIDS):
    print(f"{{index}}, {{name}}, {{util}}, {{used}}, {{TOTAL}}")
'''


def install_nvidia_smi(directory: Path, uuids: list[str], memory_mib: int, pgid_file: Path) -> str:
    """Write `<directory>/nvidia-smi` for these GPUs; the bin dir to put first on the container's PATH."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "nvidia-smi"
    path.write_text(_SCRIPT.format(python=sys.executable, query=QUERY, uuids=uuids, total=int(memory_mib),
                                   pgid_file=str(pgid_file), sample=SAMPLE_SECONDS))
    path.chmod(0o755)
    return str(directory)


def cpu_quantity(cores: float) -> str:
    """metrics-server's CPU form: nanocores (`123456789n`)."""
    return f"{max(0, round(cores * 1e9))}n"


def memory_quantity(rss: int) -> str:
    """metrics-server's memory form: KiB (`1234Ki`)."""
    return f"{max(0, rss) // 1024}Ki"
