"""The lifecycle rules of a Job in words, each once: which Jobs the platform treats as finished (stop, start,
restart and edit would do nothing on them) and what stop, start, restart and delete do. actions.py refuses with
these words; the TUI's confirm dialogs (one Job, or every marked Job) and `rlark stop|start|restart|delete` state the same
consequences.
"""

from __future__ import annotations

from collections.abc import Sequence
from types import MappingProxyType

from rlark_tui.text.sinks import cut, one_line, shell_line

TERMINAL_PHASES = ("Succeeded", "Failed")
START_NOTE = "Start re-creates the processes from the beginning; it does not resume from a checkpoint."


def finished_refusal(name: str, phase: str, verb: str = "stop or start") -> str:
    """Why `verb` does not apply to a Job in `phase` ("" when it does: the Job is not finished)."""
    if phase not in TERMINAL_PHASES:
        return ""
    return (f"job {name} is {phase}: the platform treats it as finished, so {verb} would do nothing — delete and "
            f"re-create it, or start a copy with `{shell_line(['rlark', 'clone'], [name])}`")


def consequences(action: str, job_name: str, pods: int | None = None) -> tuple[str, str]:
    """(title, body) stating what `stop`, `start`, `restart` or `delete` of one Job does: the TUI's confirm dialog
    and `rlark stop|start|restart|delete` (before asking, and in `--help`). `pods`: how many Pods go (None: unknown)."""
    counted = f"{pods} Pod(s)" if pods is not None else "Pods"
    job_name = one_line(job_name)  # the control plane's name: a line break forged a line of the dialog
    if action == "stop":
        return (f"Stop Job {job_name}?", (
            f"Sets spec.stopped: true. Every Task is scaled to 0 replicas and its {counted} are "
            "deleted; running processes end now. Tasks, task PVCs and the Ray head Service are kept.\n"
            "Persist outputs and checkpoints first. A later Start re-creates the processes from the "
            "beginning: it does NOT resume from a checkpoint."))
    if action == "start":
        return (f"Start Job {job_name}?", (
            "Sets spec.stopped: false. The Tasks get their replicas back and new Pods are created: "
            "prepare script, Ray start-up and the run script all run again from the beginning.\n"
            "Start does NOT resume from a checkpoint; the workload must load one itself."))
    if action == "restart":
        return (f"Restart Job {job_name}?", (
            "What the console's Restart does: records the restart time (annotation rlark.io/restarted-at) and "
            "sets spec.stopped: false. It only un-stops a stopped Job: new Pods are created and the prepare "
            "script, Ray start-up and the run script run again from the beginning. It does NOT resume from a "
            "checkpoint. On a Job that is not stopped it does nothing: no controller reads the annotation."))
    if action == "delete":
        return (f"Delete Job {job_name}?", (
            f"Deletes the Job. Its Tasks, workloads, {counted}, the Ray head Service and the task "
            "PVCs (object-storage mounts) are deleted with it. Host-directory data stays on the Nodes.\n"
            "This cannot be undone: to run again, submit the Job again."))
    raise ValueError(f"unknown action {action!r}")


BULK_VERBS = MappingProxyType({"stop_start": "Stop/Start", "restart": "Restart", "delete": "Delete"})
"""The keys that act on every marked Job (`s`, `R`, `ctrl+d`) and their dialog's confirm label."""
BULK_EFFECTS = MappingProxyType({
    "stop": "stop: its {pods} Pod(s) are deleted, Tasks and PVCs kept; a later Start begins from scratch",
    "start": "start: new Pods run the prepare and run scripts from the beginning (no checkpoint resume)",
    "restart": "restart: sets rlark.io/restarted-at and un-stops it (new Pods, from the beginning)",
    "restart-running": "restart: only records the restart time; it is not stopped, so nothing restarts",
    "delete": "delete: the Job, its Tasks, {pods} Pod(s), head Service and task PVCs (cannot be undone)",
})


def bulk_plan(verb: str, jobs: Sequence[tuple[str, bool, str | None, int]]) -> list[tuple[str, str | None, str]]:
    """Per marked Job (name, stopped, phase, pods): (name, the action to run or None to skip it, what happens).
    `verb` is a BULK_VERBS key; `s` stops a running Job and starts a stopped one, as on one Job."""
    plan: list[tuple[str, str | None, str]] = []
    for name, stopped, phase, pods in jobs:
        if phase is None:
            plan.append((name, None, "skipped: no longer listed"))
        elif verb == "delete":
            plan.append((name, "delete", BULK_EFFECTS["delete"].format(pods=pods)))
        elif phase in TERMINAL_PHASES:
            plan.append((name, None, f"skipped: {phase}, a finished Job can only be deleted or cloned"))
        elif verb == "restart":
            plan.append((name, "restart", BULK_EFFECTS["restart" if stopped else "restart-running"]))
        else:
            action = "start" if stopped else "stop"
            plan.append((name, action, BULK_EFFECTS[action].format(pods=pods)))
    return plan


BULK_SHOWN = 20
"""The most marked Jobs the dialog before a bulk action names, one line each; the rest are counted (5,000 marked
Jobs were a dialog of 5,000 lines, which does not scroll)."""


def bulk_consequences(verb: str, plan: list[tuple[str, str | None, str]]) -> tuple[str, str]:
    """(title, body) of the one dialog before a bulk action: one line per Job and what happens to it, for the
    first BULK_SHOWN Jobs, then how many more are acted on or skipped."""
    acting = sum(1 for _, action, _ in plan if action)
    title = f"{BULK_VERBS[verb]} {acting} marked Job(s)?"
    lines = [f"- {one_line(cut(name))}: {effect}" for name, _, effect in plan[:BULK_SHOWN]]
    if len(plan) > BULK_SHOWN:
        rest = sum(1 for _, action, _ in plan[BULK_SHOWN:] if action)
        lines.append(f"… and {len(plan) - BULK_SHOWN:,} more marked Jobs: {rest:,} to act on, "
                     f"{len(plan) - BULK_SHOWN - rest:,} skipped")
    return title, "\n".join(lines + ["Each Job is acted on separately; the result of each is reported."])
