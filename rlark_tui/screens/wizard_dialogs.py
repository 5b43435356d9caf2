"""The wizard's small dialogs: ask for a draft file path (import with ctrl+o, export with ctrl+s).

Answers the path typed (or None on esc); never touches files itself.
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Static


class PathScreen(ModalScreen[str | None]):
    """Modal prompt for a file path; Enter answers it, esc cancels."""

    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, title: str, hint: str, value: str = "", placeholder: str = "path/to/draft.yaml") -> None:
        super().__init__()
        self.title_text = title
        self.hint = hint
        self.value = value
        self.placeholder = placeholder

    def compose(self) -> ComposeResult:
        with Vertical(id="wizard-path-dialog"):
            yield Static(self.title_text, id="wizard-path-title", markup=False)
            yield Static(self.hint, id="wizard-path-hint", markup=False)
            yield Input(self.value, placeholder=self.placeholder, id="wizard-path-input")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.dismiss(event.value.strip() or None)

    def action_cancel(self) -> None:
        self.dismiss(None)
