"""step_time_ms: the step-time breakdown (`rlark_tui.telemetry.steptime.breakdown`, issue 35) of a 10,000-step run's
series as the Metrics tab holds them: `time/step` and four phases per step, shares that drift. Only `breakdown`
is timed; median of 15 (5 quick) after one warm-up, wall clock and the CPU time of the timing thread."""

from __future__ import annotations

import statistics
import time
from pathlib import Path

from rlark_tui.telemetry.steptime import breakdown

STEPS = 10_000
PHASES = ("actor_training", "env_interact", "generate_rollouts", "sync_weights")


def series(steps: int) -> dict[str, list[tuple[float, int, float]]]:
    out: dict[str, list[tuple[float, int, float]]] = {"time/step": [], **{f"time/{p}": [] for p in PHASES}}
    for step in range(1, steps + 1):
        parts = (185.0 + step / 100, 119.0, 36.0, 2.0)
        for phase, seconds in zip(PHASES, parts, strict=True):
            out[f"time/{phase}"].append((step * 340.0, step, seconds))
        out["time/step"].append((step * 340.0, step, sum(parts)))
    return out


def run(workdir: Path, quick: bool) -> dict[str, float]:
    data = series(STEPS)
    breakdown(data)
    wall, cpu = [], []
    for _ in range(5 if quick else 15):
        started, started_cpu = time.perf_counter(), time.thread_time()
        result = breakdown(data)
        wall.append((time.perf_counter() - started) * 1000)
        cpu.append((time.thread_time() - started_cpu) * 1000)
    assert len(result.steps) == STEPS and result.bottleneck is not None
    return {"step_time_ms": round(statistics.median(wall), 2), "step_time_cpu_ms": round(statistics.median(cpu), 2)}
