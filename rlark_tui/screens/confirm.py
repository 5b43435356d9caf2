"""Confirm dialogs for Stop, Start, Restart, Delete (their texts: model/lifecycle.py) and Resume (its diff as the
dialog's scrollable detail).

The dialog answers True (confirm) or False; it never calls the API itself.
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Button, Static


class ConfirmScreen(ModalScreen[bool]):
    """Modal yes/no dialog; `y` or Enter on the confirm button confirms, `n` / esc cancels."""

    BINDINGS = [
        Binding("y", "answer(True)", "Confirm"),
        Binding("n,escape", "answer(False)", "Cancel"),
        Binding("down,j", "scroll_detail('down')", "Scroll", show=False),
        Binding("up,k", "scroll_detail('up')", "Scroll", show=False),
        Binding("pagedown", "scroll_detail('page_down')", "Scroll", show=False),
        Binding("pageup", "scroll_detail('page_up')", "Scroll", show=False),
        Binding("home", "scroll_detail('home')", "Scroll", show=False),
        Binding("end", "scroll_detail('end')", "Scroll", show=False),
    ]
    """The arrows, page keys, home and end scroll the detail whichever button has the focus: at 80x24 the
    resume's diff is longer than the dialog, and its added line comes last."""
    AUTO_FOCUS = "#confirm-no"
    """Cancel has the focus (Enter cancels); set by Textual when the dialog shows, so a dialog answered before
    it mounted has nothing left to look up."""

    def __init__(self, title: str, body: str, confirm_label: str, dangerous: bool = False, detail: str = "") -> None:
        super().__init__()
        self.title_text = title
        self.body_text = body
        self.confirm_label = confirm_label
        self.dangerous = dangerous
        self.detail = detail
        """Shown under the body (a diff), when given; the two then scroll together in what the terminal leaves."""

    def compose(self) -> ComposeResult:
        with Vertical(id="confirm-dialog", classes="-dangerous" if self.dangerous else ""):
            yield Static(self.title_text, id="confirm-title", markup=False)
            if self.detail:
                with VerticalScroll(id="confirm-scroll"):
                    yield Static(self.body_text, id="confirm-body", markup=False)
                    yield Static(self.detail, id="confirm-detail", markup=False)
            else:
                yield Static(self.body_text, id="confirm-body", markup=False)
            with Horizontal(id="confirm-buttons"):
                yield Button(Content(f"{self.confirm_label} (y)"), id="confirm-yes",
                             variant="error" if self.dangerous else "warning")
                yield Button("Cancel (n)", id="confirm-no", variant="default")

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "confirm-yes")

    def action_scroll_detail(self, where: str) -> None:
        for scroll in self.query("#confirm-scroll").results(VerticalScroll):
            {"down": scroll.scroll_down, "up": scroll.scroll_up, "page_down": scroll.scroll_page_down,
             "page_up": scroll.scroll_page_up, "home": scroll.scroll_home, "end": scroll.scroll_end}[where](
                animate=False)

    def action_answer(self, answer: bool) -> None:
        self.dismiss(answer)
