"""Confirm dialogs for Stop, Start, Restart and Delete, and the pure text stating each one's consequences.

The dialog answers True (confirm) or False; it never calls the API itself.
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Static


def consequences(action: str, job_name: str, pods: int) -> tuple[str, str]:
    """(title, body) of the confirm dialog for `stop`, `start`, `restart` or `delete` of one Job."""
    if action == "stop":
        return (f"Stop Job {job_name}?", (
            f"Sets spec.stopped: true. Every Task is scaled to 0 replicas and its {pods} Pod(s) are "
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
            f"Deletes the Job. Its Tasks, workloads, {pods} Pod(s), the Ray head Service and the task "
            "PVCs (object-storage mounts) are deleted with it. Host-directory data stays on the Nodes.\n"
            "This cannot be undone: to run again, submit the Job again."))
    raise ValueError(f"unknown action {action!r}")


BULK_VERBS = {"stop_start": "Stop/Start", "restart": "Restart", "delete": "Delete"}
"""The keys that act on every marked Job (`s`, `R`, `ctrl+d`) and their dialog's confirm label."""
BULK_EFFECTS = {
    "stop": "stop: its {pods} Pod(s) are deleted, Tasks and PVCs kept; a later Start begins from scratch",
    "start": "start: new Pods run the prepare and run scripts from the beginning (no checkpoint resume)",
    "restart": "restart: sets rlark.io/restarted-at and un-stops it (new Pods, from the beginning)",
    "restart-running": "restart: only records the restart time; it is not stopped, so nothing restarts",
    "delete": "delete: the Job, its Tasks, {pods} Pod(s), head Service and task PVCs (cannot be undone)",
}


def bulk_plan(verb: str, jobs: list) -> list[tuple[str, str | None, str]]:
    """Per marked Job (name, stopped, phase, pods): (name, the action to run or None to skip it, what happens).
    `verb` is a BULK_VERBS key; `s` stops a running Job and starts a stopped one, as on one Job."""
    plan = []
    for name, stopped, phase, pods in jobs:
        if phase is None:
            plan.append((name, None, "skipped: no longer listed"))
        elif verb == "delete":
            plan.append((name, "delete", BULK_EFFECTS["delete"].format(pods=pods)))
        elif phase in ("Succeeded", "Failed"):
            plan.append((name, None, f"skipped: {phase}, a finished Job can only be deleted or cloned"))
        elif verb == "restart":
            plan.append((name, "restart", BULK_EFFECTS["restart" if stopped else "restart-running"]))
        else:
            action = "start" if stopped else "stop"
            plan.append((name, action, BULK_EFFECTS[action].format(pods=pods)))
    return plan


def bulk_consequences(verb: str, plan: list[tuple[str, str | None, str]]) -> tuple[str, str]:
    """(title, body) of the one dialog before a bulk action: one line per Job and what happens to it."""
    acting = sum(1 for _, action, _ in plan if action)
    title = f"{BULK_VERBS[verb]} {acting} marked Job(s)?"
    lines = [f"- {name}: {effect}" for name, _, effect in plan]
    return title, "\n".join(lines + ["Each Job is acted on separately; the result of each is reported."])


class ConfirmScreen(ModalScreen[bool]):
    """Modal yes/no dialog; `y` or Enter on the confirm button confirms, `n` / esc cancels."""

    BINDINGS = [
        Binding("y", "answer(True)", "Confirm"),
        Binding("n,escape", "answer(False)", "Cancel"),
    ]

    def __init__(self, title: str, body: str, confirm_label: str, dangerous: bool = False) -> None:
        super().__init__()
        self.title_text = title
        self.body_text = body
        self.confirm_label = confirm_label
        self.dangerous = dangerous

    def compose(self) -> ComposeResult:
        with Vertical(id="confirm-dialog", classes="-dangerous" if self.dangerous else ""):
            yield Static(self.title_text, id="confirm-title", markup=False)
            yield Static(self.body_text, id="confirm-body", markup=False)
            with Horizontal(id="confirm-buttons"):
                yield Button(f"{self.confirm_label} (y)", id="confirm-yes",
                             variant="error" if self.dangerous else "warning")
                yield Button("Cancel (n)", id="confirm-no", variant="default")

    def on_mount(self) -> None:
        self.query_one("#confirm-no", Button).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "confirm-yes")

    def action_answer(self, answer: bool) -> None:
        self.dismiss(answer)
