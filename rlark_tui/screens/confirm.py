"""Confirm dialogs for Stop, Start, Restart and Delete (their texts: model/lifecycle.py).

The dialog answers True (confirm) or False; it never calls the API itself.
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Static


class ConfirmScreen(ModalScreen[bool]):
    """Modal yes/no dialog; `y` or Enter on the confirm button confirms, `n` / esc cancels."""

    BINDINGS = [
        Binding("y", "answer(True)", "Confirm"),
        Binding("n,escape", "answer(False)", "Cancel"),
    ]
    AUTO_FOCUS = "#confirm-no"
    """Cancel has the focus (Enter cancels); set by Textual when the dialog shows, so a dialog answered before
    it mounted has nothing left to look up."""

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

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "confirm-yes")

    def action_answer(self, answer: bool) -> None:
        self.dismiss(answer)
