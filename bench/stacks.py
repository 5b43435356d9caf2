"""stacks_group_ms: `rlark stacks`' pure part for 16 ranks (issue 34 item 1; quick: the same): each rank's
`py-spy dump` parsed, the ranks grouped by main-thread frames, the odd ones named, every text cleaned and the
Job's secret values masked (telemetry.stacks.masked), and the text rendered. The dumps are synthesised from the
hung demo run's recorded ones (tests/raydebug/data/hang): rank r is the recording of rank r % 4 with its own PID,
on one of four Pods, so 4 of the 16 sit in next_batch. Median of 15 (5 quick) after one warm-up, wall clock and
the CPU time of the timing thread. The target is the issue's whole budget for 16 ranks on 4 Pods, 10 s; taking
the dumps (py-spy in the Pods, 8 at once, ~0.45 s each in the sandbox) is not timed here."""

from __future__ import annotations

import json
import statistics
import time
from pathlib import Path

from rlark_tui.telemetry import stacks

RANKS = 16
RECORDED = Path(__file__).resolve().parent.parent / "tests" / "raydebug" / "data" / "hang"
KNOWN = ("s3cr3t-token-value", "hf_Zq7RkV2pW9xT4mN8bL3cY6dF1gH5jK0s")


def dumps(ranks: int) -> list[tuple[str, str, int, str, str]]:
    """(name, class, pid, pod, dump text) of `ranks` ranks made from the recorded four."""
    recorded = json.loads((RECORDED / "workers.json").read_text())
    made = []
    for rank in range(ranks):
        source = recorded[rank % len(recorded)]
        pid = 20_000 + rank
        text = (RECORDED / f"dump-{source['pid']}.txt").read_text().replace(str(source["pid"]), str(pid))
        made.append((f"ActorGroup:{rank}", source["class"], pid, f"bench-actor-{rank // 4}", text))
    return made


def take(made: list[tuple[str, str, int, str, str]]) -> tuple[stacks.Stacks, str]:
    workers = [stacks.Worker(name, cls, pid, pod, f"node-{pod[-1]}", stacks.parse_dump(text))
               for name, cls, pid, pod, text in made]
    found = stacks.masked(stacks.group("bench-hang", "py-spy", workers), KNOWN)
    return found, stacks.render(found)


def run(workdir: Path, quick: bool) -> dict[str, float]:
    made = dumps(RANKS)
    found, _ = take(made)
    assert [g.count for g in found.groups] == [12, 4] and len(found.outliers) == 4, found.groups
    wall, cpu = [], []
    for _ in range(5 if quick else 15):
        started, started_cpu = time.perf_counter(), time.thread_time()
        take(made)
        wall.append((time.perf_counter() - started) * 1000)
        cpu.append((time.thread_time() - started_cpu) * 1000)
    print(f"stacks: {RANKS} ranks on 4 Pods, {len(found.groups)} groups; {stacks.summary(found)}")
    return {"stacks_group_ms": round(statistics.median(wall), 2), "stacks_group_cpu_ms": round(statistics.median(cpu), 2)}
