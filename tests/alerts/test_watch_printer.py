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
