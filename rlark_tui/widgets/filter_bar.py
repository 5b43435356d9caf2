"""FilterBar: the `/` input of a list or log pane, and the pure matcher it builds.

A filter is a case-insensitive regular expression; text that is not a valid regex is matched
as a plain substring and the bar says why, so a typo never crashes the screen.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from textual import on
from textual.binding import Binding
from textual.geometry import Size
from textual.reactive import Reactive
from textual.widgets import Input


REGEX_SYNTAX = frozenset(".^$*+?{}[]\\|()")


@dataclass(frozen=True)
class Matcher:
    """A compiled filter: `matches(text)`, the spans to highlight, and an error for the user."""

    text: str
    pattern: re.Pattern[str] | None
    error: str = ""
    literal: str | None = None
    """The lowercased text when it is matched as plain text (no regex syntax, or an invalid regex)."""

    def matches(self, line: str) -> bool:
        if self.pattern is None:
            return True
        return self.pattern.search(line) is not None

    def matches_row(self, lowered: str, fields) -> bool:
        """Does a row match? `lowered` is its fields joined by newlines and lowercased, computed once per row:
        plain text is a substring test on it; a regex searches field by field (so `^` and `$` anchor to a field)."""
        if self.pattern is None:
            return True
        if self.literal is not None:
            return self.literal in lowered
        return any(self.pattern.search(field) for field in fields)

    def spans(self, line: str) -> list[tuple[int, int]]:
        if self.pattern is None:
            return []
        return [m.span() for m in self.pattern.finditer(line) if m.end() > m.start()]


def make_matcher(text: str) -> Matcher:
    """Regex when it compiles, else a literal substring plus the reason in `error`."""
    if not text:
        return Matcher("", None)
    try:
        return Matcher(text, re.compile(text, re.IGNORECASE),
                       literal=None if REGEX_SYNTAX.intersection(text) else text.lower())
    except re.error as exc:
        reason = exc.msg
    except (OverflowError, RecursionError):
        reason = "too large or nested too deeply"
    literal = re.compile(re.escape(text), re.IGNORECASE)
    return Matcher(text, literal, f"invalid regex ({reason}); matching it as plain text", text.lower())


class FilterBar(Input):
    """Hidden until opened; while typing calls `on_change(matcher)` at once (so the list lands in the same
    frame as the echo); closes on enter/escape."""

    BINDINGS = [Binding("escape", "close(True)", "Clear", show=True)]
    virtual_size = Reactive(Size(0, 0))
    """As Input's, but without a layout pass: Input sets it to the text's width on every key, which made
    each keystroke lay out (and repaint) the whole screen; the bar's own size never depends on it."""

    def __init__(self, placeholder: str, **kwargs) -> None:
        super().__init__(placeholder=placeholder, **kwargs)
        self.matcher = make_matcher("")
        self.on_close: Callable[[], None] | None = None
        self.on_change: Callable[[Matcher], None] | None = None

    def open(self) -> None:
        self.add_class("-open")
        self.focus()

    def action_close(self, clear: bool = False) -> None:
        if clear and self.value:
            self.value = ""
        self.remove_class("-open")
        if self.on_close is not None:
            self.on_close()

    def watch_value(self, value: str) -> None:
        self.matcher = make_matcher(value)
        if self.on_change is not None:
            self.on_change(self.matcher)

    @on(Input.Submitted)
    def _submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.action_close()
