"""The TUI's last line of defence against control codes from the cluster (issue 26 item 6).

Widgets clean the cluster text they show (text.sanitize) and never parse it as markup. This module makes sure a
widget that forgets still cannot write an escape sequence to the terminal: every strip Textual paints has the
control characters of its text segments removed, just before the segments become terminal output (Textual's own
sequences, added around the text for styles and links, are not touched). The text keeps its width in cells, so
what follows it on the row stays in place.
"""

from __future__ import annotations

from rich.cells import cell_len
from rich.segment import Segment
from textual.strip import Strip

from rlark_tui.text.sanitize import clean, has_control

_render = Strip.render


def _clean_segment(segment: Segment) -> Segment:
    text = segment.text
    if not has_control(text):
        return segment
    shown = clean(text).replace("\n", " ").replace("\t", " ")
    return Segment(shown + " " * max(0, cell_len(text) - cell_len(shown)), segment.style, segment.control)


def _safe_render(self: Strip, console) -> str:
    if self._render_cache is None and has_control("".join([segment.text for segment in self._segments])):
        self._segments = [_clean_segment(segment) for segment in self._segments]
    return _render(self, console)


def install() -> None:
    """Clean every strip's text before Textual writes it (idempotent)."""
    Strip.render = _safe_render
