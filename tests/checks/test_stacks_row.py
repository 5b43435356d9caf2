"""The run check's Ray row says whether stacks can be taken (issue 34 item 6): from Ray's dashboard when its
`/api/profiling_enabled` says so, else with py-spy where every container has SYS_PTRACE, else how to enable it.
Judged on the no-progress run recorded on the live sandbox, its Ray answer and its containers varied."""

from __future__ import annotations

import copy
from dataclasses import replace

from rlark_tui.checks import evaluate
from rlark_tui.checks.evidence import RayStatus

from .test_recorded import recorded

ENABLE = "make the Job debuggable (`debuggable: true` in its draft, or Debuggable in the wizard's step 3"


def stacks_note(evidence) -> tuple[str, str]:
    row = evaluate(evidence).row(3)
    return row.result, next(note for note in row.all_notes() if note.startswith("stacks: "))


def debuggable(job: dict) -> dict:
    job = copy.deepcopy(job)
    for task in job["spec"]["tasks"]:
        for container in task["kubernetes"]["workload"]["template"]["spec"]["containers"]:
            container["securityContext"] = {"capabilities": {"add": ["SYS_PTRACE"]}}
    return job


def test_the_recorded_run_cannot_say_and_tells_how_to_enable_stacks():
    result, note = stacks_note(recorded("no-progress"))
    assert result == "pass"  # a note: whether stacks can be taken never fails the row
    assert note.startswith("stacks: only if Ray's dashboard has profiling on (not read): the containers lack "
                           "SYS_PTRACE, which py-spy in the Pods needs; " + ENABLE)


def test_profiling_on_takes_them_from_rays_dashboard():
    evidence = recorded("no-progress")
    on = replace(evidence, ray=RayStatus(alive_nodes=2, profiling=True))
    assert stacks_note(on) == ("pass", "stacks: can be taken, from Ray's dashboard (/api/profiling_enabled: true)")


def test_profiling_off_needs_sys_ptrace_on_every_container():
    evidence = replace(recorded("no-progress"), ray=RayStatus(alive_nodes=2, profiling=False))
    result, note = stacks_note(evidence)
    assert note.startswith("stacks: cannot be taken: Ray's profiling is off and the containers lack SYS_PTRACE")
    assert ENABLE in note and "RAY_DASHBOARD_ENABLE_PROFILING=1 on the Header" in note

    ptrace = replace(evidence, job=debuggable(evidence.job))
    assert stacks_note(ptrace)[1] == ("stacks: can be taken, with py-spy in the Pods (SYS_PTRACE on every "
                                      "container; Ray's profiling is off)")
    half = debuggable(evidence.job)
    del half["spec"]["tasks"][1]["kubernetes"]["workload"]["template"]["spec"]["containers"][0]["securityContext"]
    assert stacks_note(replace(evidence, job=half))[1].startswith("stacks: cannot be taken")
