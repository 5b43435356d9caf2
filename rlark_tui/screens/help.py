"""The `?` help screen: the keys of the screen it was opened from, global keys, `:` commands and what that screen
explains besides its keys (its `help_notes`, e.g. the wizard's debuggable option).

Built from the live bindings, so it never lists a key that does nothing (read-only hides mutations).
"""

from __future__ import annotations

import textwrap

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from rlark_tui.text.sinks import one_line

COMMANDS_HELP = (
    (":jobs", "the job list"),
    (":nodes", "the Node list (of the current namespace); enter opens a Node's detail"),
    (":clusters", "member clusters: nodes online, GPUs free/total by model, running Jobs; enter: their Nodes"),
    (":storage", "storage classes, their folders and objects; enter opens / downloads, w downloads a folder"),
    (":sshkeys", "registered SSH keys; a adds a .pub file, ctrl+d deletes"),
    (":overview", "what needs attention: Nodes down or cordoned, Jobs waiting and why, alerts, checks; enter opens"),
    (":alerts", "every alert: enter opens the evidence, a acknowledges"),
    (":ns [NAME|all]", "choose a namespace (cluster) for the Node list"),
    (":ctx [NAME]", "list kubeconfig contexts / switch to one"),
    (":q", "quit"),
)


class HelpScreen(ModalScreen[None]):
    """A modal table of keys; esc, q or ? closes it."""

    BINDINGS = [Binding("escape,q,question_mark", "app.pop_screen", "Close")]

    def __init__(self, title: str, keys: list[tuple[str, str]], notes: tuple[str, ...] = ()) -> None:
        super().__init__()
        self.title_text = title
        self.keys = keys
        self.notes = notes

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help-dialog"):
            yield Static(help_text(self.title_text, self.keys, self.notes), id="help-text", markup=False)


def help_text(title: str, keys: list[tuple[str, str]], notes: tuple[str, ...] = ()) -> str:
    """The help's text. The title is the screen's crumb, which names a Job (`Jobs › NAME`) as the control plane gave
    it: one line, so a line break in the name forges no key line under it."""
    lines = [f"Keys — {one_line(title)}", ""]
    width = max((len(k) for k, _ in keys), default=4) + 2
    lines += [f"  {key:<{width}}{description}" for key, description in keys]
    for note in notes:
        lines += ["", *textwrap.wrap(note, 100, initial_indent="  ", subsequent_indent="  ")]
    lines += ["", "Command mode (press :)", ""]
    lines += [f"  {command:<18}{description}" for command, description in COMMANDS_HELP]
    lines += ["", "ctrl+p opens the command palette; esc goes back; ctrl+q quits."]
    return "\n".join(lines)
