"""DiffScreen: what changed between two Jobs (the job list's marks), per role, as `rlark diff` prints it,
kept current while either Job changes; `v` switches unified / side by side.

The comparison is jobspec/jobdiff.py (pure, secrets masked); the Jobs come from the Snapshot.
"""

from __future__ import annotations

from types import MappingProxyType

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.widgets import Static

from rlark_tui.jobspec.jobdiff import diff_jobs, render_side_by_side, render_unified
from rlark_tui.screens.base import RlarkScreen
from rlark_tui.text.sinks import one_line
from rlark_tui.view.index import SnapshotIndex

STYLES = MappingProxyType({"-": "red", "+": "green", "@": "bold", "[": "bold"})


def styled(text: str) -> Text:
    """Diff text with removed lines red, added lines green and section lines bold."""
    out = Text()
    for line in text.splitlines(keepends=True):
        out.append(line, style=STYLES.get(line.lstrip()[:1], ""))
    return out


class DiffScreen(RlarkScreen):
    """esc goes back."""

    BINDINGS = [Binding("escape", "back", "Back"), Binding("v", "toggle_layout", "Side by side / unified")]

    def __init__(self, first: str, second: str) -> None:
        super().__init__()
        self.first, self.second = first, second
        self.crumb = f"Jobs › diff {first} {second}"
        self.side_by_side = False
        self._shown: tuple | None = None

    def compose_body(self) -> ComposeResult:
        with VerticalScroll(id="diff-scroll"):
            yield Static("", id="diff-text", markup=False)

    def focus_body(self) -> None:
        self.query_one("#diff-scroll").focus()

    def on_mount(self) -> None:
        super().on_mount()
        self.focus_body()

    def show_snapshot(self, index: SnapshotIndex) -> None:
        self.update_header()
        first, second = index.snapshot.jobs.get(self.first), index.snapshot.jobs.get(self.second)
        key = (id(first), id(second), self.side_by_side, self.size.width)
        if key == self._shown:
            return
        self._shown = key
        widget = self.query_one("#diff-text", Static)
        if first is None or second is None:
            missing = self.first if first is None else self.second
            widget.update(f"Job {one_line(missing)} is not in the snapshot (deleted, or not listed yet).")
            return
        changes = diff_jobs(first, second)
        if not changes:
            widget.update(f"{one_line(self.first)} and {one_line(self.second)} are the same in everything compared: roles, images, "
                          "selectors, env, scripts, resources, mounts and the launch record.")
        elif self.side_by_side:
            widget.update(styled(render_side_by_side(changes, self.first, self.second, max(60, self.size.width))))
        else:
            widget.update(styled(render_unified(changes, self.first, self.second)))

    def action_toggle_layout(self) -> None:
        self.side_by_side = not self.side_by_side
        if self.state.index is not None:
            self.show_snapshot(self.state.index)

    def action_back(self) -> None:
        self.dismiss()
