"""FilterBar: the `/` input of a list or log pane, and the pure matcher it builds.

A filter is a case-insensitive regular expression (text/patterns.py: every match runs under a time budget and
raises PatternTooSlow past it); text that is not a valid regex is matched as a plain substring and the bar says
why, so a typo never crashes the screen.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from textual import on
from textual.binding import Binding
from textual.geometry import Size
from textual.reactive import Reactive
from textual.widgets import Input

from rlark_tui.text import patterns
from rlark_tui.text.sinks import FIELD_CHARS

REGEX_SYNTAX = frozenset(".^$*+?{}[]\\|()")
ROW_SECONDS = 0.05
"""What a list filter may spend on one row's fields (they are short; a slower pattern is too slow)."""
FILTER_CHARS = FIELD_CHARS
"""The most characters a filter bar holds: Textual's input measures its whole value at each key, so a pasted
100,000 characters (a log line, a Job's 100 KB field) cost the UI thread 0.3-0.7 s at every key after it."""


@dataclass(frozen=True)
class Matcher:
    """A compiled filter: `matches(text)`, the spans to highlight, and an error for the user. A regex that
    spends more than `budget` seconds on one text raises patterns.PatternTooSlow."""

    text: str
    pattern: patterns.Pattern | None
    error: str = ""
    literal: str | None = None
    """The lowercased text when it is matched as plain text (no regex syntax, or an invalid regex)."""
    budget: float | patterns.Deadline = ROW_SECONDS
    """Seconds per text, or a Deadline shared by every text of a pass."""
    invert: bool = False
    """Keep what does NOT match (`!pattern`, the log pane's inverse line filter)."""

    def matches(self, line: str) -> bool:
        if self.pattern is None:
            return True
        return (patterns.search(self.pattern, line, self.budget) is None) is self.invert

    def matches_row(self, lowered: str, fields: Iterable[str]) -> bool:
        """Does a row match? `lowered` is its fields joined by newlines and lowercased, computed once per row:
        plain text is a substring test on it; a regex searches field by field (so `^` and `$` anchor to a field)."""
        if self.pattern is None:
            return True
        if self.literal is not None:
            return self.literal in lowered
        return any(patterns.search(self.pattern, field, self.budget) for field in fields)

    def spans(self, line: str) -> list[tuple[int, int]]:
        if self.pattern is None or self.invert:
            return []
        return [m.span() for m in patterns.finditer(self.pattern, line, self.budget) if m.end() > m.start()]

    def as_text(self, reason: str) -> Matcher:
        """The same text matched as plain text, `reason` saying why."""
        return Matcher(self.text, patterns.literal_pattern(self.text, ignore_case=True),
                       f"{reason}; matching it as plain text", self.text.lower(), self.budget)


def make_line_filter(text: str) -> Matcher:
    """A log line filter: `make_matcher`, or with a leading `!` the inverse (lines that do not match the rest)."""
    if not text.startswith("!") or text == "!":
        return make_matcher(text)
    matcher = make_matcher(text[1:])
    return dataclasses.replace(matcher, text=text, literal=None, invert=True)


def make_matcher(text: str) -> Matcher:
    """Regex when it compiles, else a literal substring plus the reason in `error`."""
    if not text:
        return Matcher("", None)
    try:
        return Matcher(text, patterns.compile_pattern(text, ignore_case=True),
                       literal=None if REGEX_SYNTAX.intersection(text) else text.lower())
    except patterns.PatternError as exc:
        reason = str(exc).removeprefix("is not a valid regular expression: ")
    return Matcher(text, None).as_text(f"invalid regex ({reason})")


class FilterBar(Input):
    """Hidden until opened; while typing calls `on_change(matcher)` at once (so the list lands in the same
    frame as the echo); closes on enter/escape."""

    BINDINGS = [Binding("escape", "close(True)", "Clear", show=True)]
    virtual_size = Reactive(Size(0, 0))
    """Widget's reactive, declared here without its layout pass: Input sets it to the text's width at every key, and
    the layout that started arranged the whole screen again and drew a second frame (bench tui's filter phase over
    5,000 Jobs: 13% more of the UI thread's function calls, 1.6 frames a key instead of 1.1). The bar's size never
    depends on it; Input still scrolls by it."""

    def __init__(self, placeholder: str, **kwargs: Any) -> None:
        super().__init__(placeholder=placeholder, **kwargs)
        self.matcher = make_matcher("")
        self.on_close: Callable[[], None] | None = None
        self.on_change: Callable[[Matcher], None] | None = None
        self._cut = False

    def open(self) -> None:
        self.add_class("-open")
        self.focus()

    def restore(self, text: str) -> None:
        """Filter by `text` again (a view restored), the bar shown while it filters, the focus left where it is."""
        self.value = text
        self.set_class(bool(text), "-open")

    def action_close(self, clear: bool = False) -> None:
        if clear and self.value:
            self.value = ""
        self.remove_class("-open")
        if self.on_close is not None:
            self.on_close()

    def validate_value(self, value: str) -> str:
        """The first FILTER_CHARS characters of what is typed, pasted or restored; the matcher says so."""
        self._cut = len(value) > FILTER_CHARS
        return value[:FILTER_CHARS]

    def watch_value(self, value: str) -> None:
        self.matcher = make_matcher(value)
        if self._cut:
            kept = f"only its first {FILTER_CHARS:,} characters are kept"
            self.matcher = dataclasses.replace(self.matcher, error="; ".join(filter(None, (self.matcher.error, kept))))
        if self.on_change is not None:
            self.on_change(self.matcher)

    @on(Input.Submitted)
    def _submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.action_close()
