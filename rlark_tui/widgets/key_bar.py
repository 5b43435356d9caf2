"""KeyBar: the screen's keys on one line at the bottom.

Textual's Footer recomposes one widget per key whenever the bindings may have changed, which is every focus
move; on a log pane following 20,000 lines/s that made `/` slow (bench/tui.py's key_latency_ms_p95). KeyBar listens to the same signal
but only redraws its one line, and only when the keys it would show differ.
"""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.screen import Screen
from textual.widgets import Static


def shown_keys(screen: Screen) -> tuple[tuple[str, str], ...]:
    """(key as displayed, description) of the bindings a Footer would show now, one per action."""
    seen: set[str] = set()
    keys = []
    for _node, binding, _enabled, _tooltip in screen.active_bindings.values():
        if not binding.show or binding.action in seen:
            continue
        seen.add(binding.action)
        keys.append((screen.app.get_key_display(binding), binding.description))
    return tuple(keys)


class KeyBar(Static):
    """One line of `key description` pairs for the focused widget, its screen and the app."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__("", markup=False, **kwargs)
        self._keys: tuple[tuple[str, str], ...] | None = None

    def on_mount(self) -> None:
        self.screen.bindings_updated_signal.subscribe(self, self._bindings_changed)

    def on_unmount(self) -> None:
        self.screen.bindings_updated_signal.unsubscribe(self)

    def _bindings_changed(self, screen: Screen) -> None:
        keys = shown_keys(screen)
        if keys == self._keys:
            return
        self._keys = keys
        line = Text(no_wrap=True, overflow="ellipsis")
        for key, description in keys:
            line.append(f" {key} ", style="bold")
            line.append(f"{description} ")
        self.update(line, layout=False)
