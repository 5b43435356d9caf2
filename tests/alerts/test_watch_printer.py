"""rlark watch's lines of phase changes (the Printer driven with Snapshots: no cluster)."""

from __future__ import annotations

import io
import json
import time

from rlark_tui.commands.watch import Printer
from rlark_tui.flow.alertpoll import ALL_KEY
from tests.tui.tui_factories import build_snapshot, job_dict


def test_thousands_of_phase_changes_at_once_are_printed_in_linear_time():
    """Issue 33, a seventeenth round (floods over time): each phase change looked for its Job's Header Task among
    every Task of the Snapshot, building the Job's view again for each Task, so a relist in which 4,000 Jobs had
    changed phase (after an outage, or a control plane flipping them) took 93 s of CPU on the reconciler's loop,
    every alert line of every Job waiting behind it (1,000: 5 s). The Tasks are looked through once."""
    count = 1000
    out = io.StringIO()
    printer = Printer(ALL_KEY, True, [], out=out)
    printer.snapshot(build_snapshot([job_dict(f"j{n}", phase="Pending") for n in range(count)]))
    changed = build_snapshot([job_dict(f"j{n}", phase="Running") for n in range(count)])
    started = time.process_time()
    printer.snapshot(changed)
    took = time.process_time() - started
    records = [json.loads(line) for line in out.getvalue().splitlines()]
    assert len(records) == count and took < 1.5, took
    assert records[0] | {"time": ""} == {"time": "", "severity": "info", "rule": "phase", "job": "j0",
                                         "namespace": "rlark-gpu-a", "object": "j0",
                                         "message": "phase Pending -> Running", "state": "Running"}


def test_a_control_plane_that_cannot_be_read_is_said_once_and_so_is_its_return():
    """Issue 33, a twentieth round (generated answers through a mutating proxy), a hostile control plane: a Job list
    answer rlark refuses (nested deeper than its bound, as one Job of it may be, or a 500) left rlark watch with no
    Jobs, so it judged no alert and said nothing at all, for good: a watch over a healthy and a failed Job printed
    neither. It says so on stderr, once per change, and when the control plane is read again."""
    said: list[str] = []
    printer = Printer(ALL_KEY, False, [], out=io.StringIO(), report=said.append)
    jobs = [job_dict("demo", phase="Running")]
    why = "the answer of the control plane at https://x to list jobs is nested deeper than 1024 levels\nforged"
    for control, reason in [("stale", "connecting"), ("disconnected", why), ("disconnected", why),
                            ("connected", ""), ("stale", f"{why}; reconnecting"), ("connected", "")]:
        printer.snapshot(build_snapshot(jobs, control=control, reason=reason))
    flat = why.replace("\n", "\\n")
    assert said == [f"cannot read the control plane, so no alert is judged: {flat}", "the control plane is read again",
                    f"cannot read the control plane, so no alert is judged: {flat}; reconnecting",
                    "the control plane is read again"]
