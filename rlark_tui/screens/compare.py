"""CompareScreen: the same tags of every marked Job overlaid (one colour per Job, a legend), live while open.

The marks are the job list's (`state.marked`, `space` there); the numbers are the reconciler's METRICS reads.
"""

from __future__ import annotations

import time

from textual.app import ComposeResult
from textual.binding import Binding

from rlark_tui.flow.polls import METRICS
from rlark_tui.screens.base import RlarkScreen
from rlark_tui.view.index import SnapshotIndex
from rlark_tui.widgets.metrics_view import MetricsView, Run


class CompareScreen(RlarkScreen):
    """esc goes back to the list."""

    BINDINGS = [Binding("escape", "back", "Back")]

    def __init__(self, jobs: list[str]) -> None:
        super().__init__()
        self.jobs = list(jobs)
        self.crumb = "Jobs › compare " + ", ".join(self.jobs)

    def compose_body(self) -> ComposeResult:
        yield MetricsView(id="compare-view", compare=True)

    def on_mount(self) -> None:
        for job in self.jobs:
            self.intents.subscribe(METRICS, job)
        super().on_mount()
        self.query_one("#metrics-tags").focus()

    def on_unmount(self) -> None:
        for job in self.jobs:
            self.intents.unsubscribe(METRICS, job)
        super().on_unmount()

    def focus_body(self) -> None:
        self.query_one("#metrics-tags").focus()

    def show_snapshot(self, index: SnapshotIndex) -> None:
        self.query_one(MetricsView).show([Run(job, index.metrics_of(job)) for job in self.jobs], time.time())

    def action_back(self) -> None:
        self.dismiss()
