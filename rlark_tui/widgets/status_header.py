"""StatusHeader: the top line of every screen — context, namespace, read-only flag, firing alerts by severity,
source states.

Each source shows connected / stale / disconnected / unconfigured and, when not connected, why.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from rich.text import Text
from textual.widget import Widget

from rlark_tui.alerting.rules import MARKS
from rlark_tui.flow.snapshot import SourceState
from rlark_tui.text.sinks import FIELD_CHARS, cut, one_line
from rlark_tui.view.contexts import ContextState

_STATUS_MARK = MappingProxyType({"connected": "●", "stale": "◐", "disconnected": "○", "unconfigured": "·"})
_CONTEXT_STATUS = MappingProxyType({"connected": "connected", "connecting": "stale", "unreachable": "disconnected"})
"""A context's state -> the source status whose mark and colour it shows in."""
_URL = re.compile(r" at https?://\S*?(?=[:;,)]?(?:\s|$))")


class StatusHeader(Widget):
    """One line; colours come from the component classes in styles/app.tcss."""

    COMPONENT_CLASSES = {
        "status-header--title",
        "status-header--context",
        "status-header--connected",
        "status-header--stale",
        "status-header--disconnected",
        "status-header--unconfigured",
        "status-header--readonly",
        "status-header--alert-critical",
        "status-header--alert-warning",
        "status-header--alert-info",
    }

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.context = ""
        self.namespace = ""
        self.crumb = ""
        self.readonly = False
        self.sources: Mapping[str, SourceState] = {}
        self.waiting = True
        self.alerts: Mapping[str, int] | None = None
        self.contexts: tuple[ContextState, ...] = ()

    def update_state(self, *, context: str, namespace: str, sources: Mapping[str, SourceState],
                     readonly: bool, waiting: bool, crumb: str | None = None,
                     alerts: Mapping[str, int] | None = None, contexts: tuple[ContextState, ...] = ()) -> None:
        """`alerts`: firing alerts per severity (critical, warning, info); None before the first evaluation.
        `contexts`: with several contexts, each one's connection state (`context` is the focused one).
        The line is drawn again only when one of them changed (every Snapshot, up to 30 a second, updates it)."""
        crumb = self.crumb if crumb is None else crumb
        state = (context, namespace, sources, readonly, waiting, crumb, alerts, contexts)
        if state == (self.context, self.namespace, self.sources, self.readonly, self.waiting, self.crumb,
                     self.alerts, self.contexts):
            return
        (self.context, self.namespace, self.sources, self.readonly, self.waiting, self.crumb,
         self.alerts, self.contexts) = state
        self.refresh()

    def summary(self) -> str:
        """The header as plain text (what a user reads)."""
        return self.render().plain

    def render(self) -> Text:
        style = self.get_component_rich_style
        text = Text(no_wrap=True, overflow="ellipsis", end="")

        def add(part: str, part_style: Any = None) -> None:
            # the context and namespace (a kubeconfig's), source names and reasons (a cluster's): one line, no
            # escape sequence (a context named with an OSC 52 reached the terminal and set its clipboard); a crumb
            # naming a Job of a 100 KB name is cut (the header is one row)
            text.append(one_line(cut(part, FIELD_CHARS)), part_style)
        add(" rlark ", style("status-header--title"))
        if self.crumb:
            add(f" {self.crumb} ")
        add(" ctx ", style("status-header--context"))
        add(self.context or "(default)")
        if self.contexts:
            add("  │ contexts")
        for shown in self.contexts:
            status = _CONTEXT_STATUS.get(shown.status, "disconnected")
            add(f" {_STATUS_MARK[status]} {shown.context} {shown.status}", style(f"status-header--{status}"))
            if shown.reason:
                add(f" ({short_reason(shown.reason)})")
        if self.namespace:
            add(f"  ns {self.namespace}")
        if self.readonly:
            add("  ")
            add(" READ-ONLY ", style("status-header--readonly"))
        firing = [(severity, count) for severity, count in (self.alerts or {}).items() if count]
        if firing:
            add("  │ alerts")
            for severity, count in firing:
                add(f" {MARKS.get(severity, '')}{count} {severity}",
                            style(f"status-header--alert-{severity}"))
        if self.waiting and not self.sources:
            add("  │ connecting…", style("status-header--stale"))
        for name, state in shown_sources(self.sources):
            status = state.status if state.status in _STATUS_MARK else "disconnected"
            add("  │ ")
            add(f"{_STATUS_MARK[status]} {name} {status}", style(f"status-header--{status}"))
            if state.reason:  # a connected source has one only to warn (an unverified rlark-server)
                add(f" ({short_reason(state.reason)})")
        return text


def short_reason(reason: str) -> str:
    """A source's reason for the one-line header: without the server URL (the kubeconfig has it)."""
    return _URL.sub("", reason)


def shown_sources(sources: Mapping[str, SourceState]) -> list[tuple[str, SourceState]]:
    """Sources for the header: the control plane first, then the stale or disconnected ones (their reasons
    matter most when the line is cut), then the connected ones, then the unconfigured; data planes folded into
    one entry while all are connected; Ray dashboards are left to the Ray tab of the Job they belong to."""
    planes = [state for name, state in sources.items() if name.startswith("data plane ")]
    folded = bool(planes) and all(state.status == "connected" for state in planes)
    shown = []
    for name, state in sources.items():
        if name.startswith("ray "):
            continue
        if name.startswith("data plane ") and folded:
            if state is planes[0]:
                shown.append((f"{len(planes)} data plane{'s' if len(planes) > 1 else ''}", state))
            continue
        shown.append((name, state))
    order = {"stale": 0, "disconnected": 0, "connected": 1, "unconfigured": 2}
    return sorted(shown, key=lambda item: (item[0] != "control plane", order.get(item[1].status, 0)))
