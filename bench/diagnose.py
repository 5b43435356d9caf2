"""diagnose_ms: `rlark diagnose`'s pure part (`rlark_tui.telemetry.diagnosis.diagnose`, issue 34 item 3) over a
20,000-line Header log (quick: 5,000): RLinf's training tables and NCCL warnings for most of it, then the raylet's
"A worker died" line, the driver's ActorDiedError traceback and RLinf's crash line, with four ranks' Ray actors
and workers, one of them dead of a SIGSEGV with its stderr tail. Only `diagnose` is timed; median of 7 (3 quick)
after one warm-up, wall clock and the CPU time of the timing thread (target 3 s)."""

from __future__ import annotations

import statistics
import time
from pathlib import Path

from rlark_tui.telemetry.diagnosis import Inputs, diagnose

LINES = 20_000
START = 1_796_170_000.0
DEAD_PID = 812
STDERR = """*** SIGSEGV received at time=1796172000 on cpu 1 ***
PC: @ 0x7f00 (unknown) (unknown)
Fatal Python error: Segmentation fault

Current thread 0x00007f00 (most recent call first):
  File "/app/demo_workload.py", line 211 in step
  File "/usr/lib/python3/site-packages/ray/_private/function_manager.py", line 689 in actor_method_executor
"""


def header_log(lines: int) -> list[tuple[float, str]]:
    body = []
    for number in range(lines - 12):
        at = START + number * 0.05
        if number % 50 == 0:
            body.append((at, f"[WARNING {number} RLinf] NCCL WARN Call to connect returned Connection refused, retrying"))
        else:
            body.append((at, f"│actor/grad_norm={number % 7}.538   │actor/lr=1.00e-04   │actor/policy_loss=0.{number % 97:03d} │"))
    at = START + lines * 0.05
    crash = ["(raylet) A worker died or was killed while executing a task by an unexpected system error. To "
             f"troubleshoot the problem, check the logs for the dead worker. Worker PID: {DEAD_PID} Worker exit "
             "type: SYSTEM_ERROR Worker exit detail: Worker unexpectedly exits with a connection error code 2.",
             "Traceback (most recent call last):",
             '  File "/app/demo_workload.py", line 330, in main',
             "    results = ray.get(futures)",
             "ray.exceptions.ActorDiedError: The actor died unexpectedly before finishing this task.",
             "\tname: ActorGroup:1", f"\tpid: {DEAD_PID}", "\tnamespace: RLinf",
             "[ERROR RLinf] A worker died during training; see the dead worker's log above."]
    return body + [(at + i * 0.001, line) for i, line in enumerate(crash)]


def inputs(lines: int) -> Inputs:
    node = "a" * 56
    actors = [{"name": f"ActorGroup:{rank}", "class_name": "Worker", "state": "DEAD" if rank == 1 else "ALIVE",
               "pid": DEAD_PID if rank == 1 else 900 + rank, "node_id": node,
               "death_cause": {"actor_died_error_context": {"error_message": "The actor is dead because its worker "
                                                            "process has died."}} if rank == 1 else None,
               "end_time": (START + lines * 0.05) * 1000 if rank == 1 else 0} for rank in range(4)]
    workers = [{"worker_id": "w1", "pid": DEAD_PID, "exit_type": "SYSTEM_ERROR", "node_id": node,
                "exit_detail": "Worker unexpectedly exits with a connection error code 2.",
                "end_time_ms": (START + lines * 0.05) * 1000}]
    return Inputs("bench-segv", actors=actors, workers=workers, node_ips={node: "10.0.0.5"},
                  stderr={DEAD_PID: STDERR}, header_log=header_log(lines), known=("s3cr3t-token-value",))


def run(workdir: Path, quick: bool) -> dict[str, float]:
    data = inputs(5_000 if quick else LINES)
    result = diagnose(data)
    assert result.first_failure is not None and result.first_failure.worker == "ActorGroup:1", result.first_failure
    wall, cpu = [], []
    for _ in range(3 if quick else 7):
        started, started_cpu = time.perf_counter(), time.thread_time()
        diagnose(data)
        wall.append((time.perf_counter() - started) * 1000)
        cpu.append((time.thread_time() - started_cpu) * 1000)
    print(f"diagnose: {len(data.header_log):,} Header-log lines, first failure {result.first_failure.worker} "
          f"({result.first_failure.cause})")
    return {"diagnose_ms": round(statistics.median(wall), 1), "diagnose_cpu_ms": round(statistics.median(cpu), 1)}
