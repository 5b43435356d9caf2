"""TunnelsScreen: the local URLs of a Job's tunnels (`F`), shown as selectable text, with a copy key.

The URLs stay on screen because tmux ignores the clipboard escape (OSC 52) applications send unless told to.
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Static

from rlark_tui.model.tunnel import OpenTunnel
from rlark_tui.text.sinks import one_line


class TunnelsScreen(ModalScreen[None]):
    """A modal list of tunnel URLs; `c` copies the first one (OSC 52), esc closes (the tunnels stay open)."""

    BINDINGS = [Binding("escape,q", "app.pop_screen", "Close"), Binding("c", "copy", "Copy URL")]

    def __init__(self, job_name: str, shown: list[OpenTunnel | str], readonly: bool) -> None:
        super().__init__()
        self.job_name = job_name
        self.shown = shown
        self.readonly = readonly

    @property
    def urls(self) -> list[str]:
        return [item.url for item in self.shown if isinstance(item, OpenTunnel)]

    def compose(self) -> ComposeResult:
        # the Job's name and a reason (a server's text) one line each: a line break forged a URL line under them
        lines = [f"Tunnels of {one_line(self.job_name)} (open on 127.0.0.1 until rlark exits)", ""]
        for item in self.shown:
            lines += [f"{item.label}:", f"  {item.url}"] if isinstance(item, OpenTunnel) else [one_line(item)]
        lines += ["", "Only these URLs (with their token) are served." +
                  (" Read-only: GET and HEAD only." if self.readonly else ""),
                  "c copies the first URL (OSC 52; tmux needs set-clipboard on); esc closes."]
        with Vertical(id="tunnels-dialog"):
            yield Static("\n".join(lines), id="tunnels-text", markup=False)

    def action_copy(self) -> None:
        if self.urls:
            self.app.copy_to_clipboard(self.urls[0])
            self.notify(f"copied {self.urls[0]}", timeout=3)
