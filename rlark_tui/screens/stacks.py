"""StacksScreen (`S` on the job detail and on a progress-stalled alert): where every live Ray worker of a Job is,
as `rlark stacks` prints it: the odd ranks named with the frame where they differ, then the groups of ranks whose
main-thread frames match, largest first, and why a Pod gave no stack. The screen does no I/O: it posts TakeStacks
and shows the StacksTaken the app's worker (tui/work.py) posts back, already cleaned and masked; `r` takes them
again, esc goes back."""

from __future__ import annotations

from datetime import datetime
from types import MappingProxyType

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.widgets import Static

from rlark_tui.flow.messages import StacksTaken, TakeStacks
from rlark_tui.screens.base import RlarkScreen
from rlark_tui.telemetry import stacks as pure
from rlark_tui.text.sinks import one_line
from rlark_tui.view.index import SnapshotIndex

STYLED = MappingProxyType({pure.TITLE: "stacks--title", pure.OUTLIER: "stacks--outlier", pure.GROUP: "stacks--group",
                           pure.ERROR: "stacks--error", pure.NOTE: "stacks--note", pure.THREAD: "stacks--note"})
"""The component class each kind of line of telemetry.stacks.render_lines is styled with (frames are plain)."""


class StacksView(Static):
    """The stacks as text, each kind of line styled from tcss component classes; never parsed as markup."""

    COMPONENT_CLASSES = set(STYLED.values())

    def show(self, stacks: pure.Stacks) -> None:
        text = Text()
        for kind, line in pure.render_lines(stacks):
            style = STYLED.get(kind)
            text.append(line + "\n", self.get_component_rich_style(style) if style else "")
        self.update(text)


class StacksScreen(RlarkScreen):
    """One Job's stacks; esc goes back to the screen it was opened from."""

    BINDINGS = [Binding("escape", "app.pop_screen", "Back"), Binding("r", "take", "Take again")]

    def __init__(self, job_name: str) -> None:
        super().__init__()
        self.job_name = job_name
        self.crumb = f"Jobs › {job_name} › Stacks"

    def compose_body(self) -> ComposeResult:
        yield Static("", id="stacks-status", markup=False)
        with VerticalScroll(id="stacks-scroll"):
            yield StacksView("", id="stacks-text", markup=False)

    def on_mount(self) -> None:
        super().on_mount()
        self.action_take()
        self.focus_body()

    def focus_body(self) -> None:
        self.query_one("#stacks-scroll").focus()

    def show_snapshot(self, index: SnapshotIndex) -> None:
        self.update_header()

    def action_take(self) -> None:
        self.query_one("#stacks-status", Static).update(
            f"Taking the stacks of {one_line(self.job_name)}'s live Ray workers (py-spy or Ray's dashboard)…")
        self.post_message(TakeStacks(self, self.job_name))

    def on_stacks_taken(self, message: StacksTaken) -> None:
        if message.job != self.job_name:
            return
        at = datetime.now().strftime("%H:%M:%S")
        view = self.query_one(StacksView)
        status = self.query_one("#stacks-status", Static)
        if message.stacks is None:
            status.update(f"no stacks at {at} · r tries again")
            view.update(Text(message.error, view.get_component_rich_style("stacks--error")))
            return
        found = message.stacks
        ranks = sum(g.count for g in found.groups)
        counts = f"{ranks} rank{'s' * (ranks != 1)} in {len(found.groups)} group{'s' * (len(found.groups) != 1)}" + \
            (f", {len(found.errors)} Pod{'s' * (len(found.errors) != 1)} without stacks" if found.errors else "")
        status.update(f"taken at {at} · {counts} · r takes them again")
        view.show(found)
