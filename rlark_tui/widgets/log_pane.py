"""The log pane: a bounded ring buffer of Pod log lines and a line-API view over it.

LogBuffer is pure (capacity, drop count, sequence numbers); PendingLines is the bounded hand-off from stream
threads to the pane (drained in batches, never per line); LogView renders only visible rows and
owns follow, wrap, timestamps, prefixes, line filter, search with highlight and jump-to-error.
"""

from __future__ import annotations

import dataclasses
import re
import threading
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from itertools import islice, repeat
from operator import itemgetter
from typing import Any, Final, TypeAlias, TypeVar

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.binding import Binding
from textual.cache import LRUCache
from textual.geometry import Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip

from rlark_tui.text.patterns import Deadline, PatternTooSlow
from rlark_tui.text.sanitize import clean, clean_lines, has_control
from rlark_tui.widgets.filter_bar import Matcher, make_matcher

ERROR_PATTERN = re.compile(
    r"\b(error|exception|traceback|fatal|failed|errimagepull|imagepullbackoff|crashloopbackoff)\b"
    r"|command not found",
    re.IGNORECASE,
)
PATTERN_SECONDS = 0.1
"""A search or line-filter regex may spend this long on one line; a slower one (catastrophic backtracking, such as
`(a+)+$` on a long line) is dropped and the pane says it is too slow, instead of freezing the keys."""
PASS_SECONDS = 0.5
"""A pass of the search or line filter over many lines (find, rebuild, a drained batch) spends this long in all:
a pattern a little under PATTERN_SECONDS on each of 20,000 long lines would otherwise hold the keys for minutes."""
STRIPS_KEPT = 250
"""Rows whose rendered strip is kept (the least recently drawn go first): a screenful scrolled back and forth is
drawn once (five screenfuls of a 50-row terminal). Each kept strip holds what Textual derived from it as it was
drawn (its crops and offsets, several each: some 40 objects the cycle collector tracks), so this bounds the pane's
RSS (bench/logs.py's log_rss_mb) and what each full pass of the collector walks: a log followed at 20,000 lines/s
draws every row new, and the 1,000 strips kept before held ~40,000 more objects, full passes of 40-190 ms instead
of 15-40 that held a key's frame (bench tui's `/` on a log pane)."""
MAX_CHARS = 64 << 20
"""The pane, and its queue of arriving lines, hold at most this much text each (the oldest lines are dropped and
counted): a Pod's line is read up to 16 MiB, and 20,000 such lines would be 320 GiB."""
_ITEM_TEXT = itemgetter(2)
_Item = TypeVar("_Item", bound=tuple[Any, ...])
SHOWN_CHARS = 16 * 1024
"""A longer line is cut there on screen (search and save still see all of it): wrapping a 1 MB line would
render thousands of rows and freeze the keys."""
CUT_NOTE = " … ["
"""What begins the note after a line cut at SHOWN_CHARS (`… [N more characters; …]`)."""


LogLine: TypeAlias = tuple[int, str, str, str, bool]
"""One line in the pane, `(seq, source, timestamp, text, notice)` (SEQ … NOTICE name the places): from a Pod
(`source` = `role/pod`) or a notice from rlark itself (`notice` True).

A plain tuple, not a named tuple or a dataclass: the pane builds one per line (20,000/s and more), and CPython's
cycle collector stops tracking a plain tuple of strings and numbers at its first pass, where it tracks a tuple
subclass for ever. So the 20,000 lines a pane holds, and its rows `(line, start)`, are not among what each full pass
of the collector walks: as named tuples they were 40,000 of the ~200,000 objects it walked every 1-1.5 s while a log
flowed (Textual's frames promote enough objects for that pace), passes that held a key's frame (bench tui's `/` on a
log pane following 20,000 lines/s)."""
SEQ: Final = 0
SOURCE: Final = 1
TIMESTAMP: Final = 2
TEXT: Final = 3
NOTICE: Final = 4
_TEXT = itemgetter(TEXT)


def is_error(line: LogLine) -> bool:
    """A Pod's line that reads as an error (ERROR_PATTERN); never a notice."""
    return not line[NOTICE] and ERROR_PATTERN.search(line[TEXT]) is not None


def _one_line(text: str) -> str:
    """Cluster text as one row of the pane: no escape sequence, no control character (a newline is a space)."""
    return clean(text).replace("\n", " ") if has_control(text) else text


def timed(matcher: Matcher) -> Matcher:
    """The matcher with its regex stopped after PATTERN_SECONDS per line."""
    return dataclasses.replace(matcher, budget=PATTERN_SECONDS)


def one_pass(matcher: Matcher) -> Matcher:
    """The matcher for one pass over many lines: PASS_SECONDS shared by all of them."""
    return dataclasses.replace(matcher, budget=Deadline(PASS_SECONDS))


def _append_bounded(held: deque[_Item], capacity: int, items: list[_Item], chars: int, added: int,
                    text: Callable[[_Item], str]) -> tuple[int, int]:
    """Append `items` (`added` characters of `text`) to `held` (a deque of `chars` characters, its maxlen `capacity`):
    the deque drops the oldest past `capacity`, and the oldest past MAX_CHARS go too (the newest stays). Returns the
    characters now held and how many items went: the one bound of the pane and of its queue of arriving lines."""
    over = min(len(held), len(held) + len(items) - capacity)
    gone = 0
    if over > 0:
        chars -= sum(map(len, map(text, islice(held, over))))
        gone = over
    held.extend(items)
    chars += added
    while chars > MAX_CHARS and len(held) > 1:
        chars -= len(text(held.popleft()))
        gone += 1
    return chars, gone


class LogBuffer:
    """Keeps the newest `capacity` lines, at most MAX_CHARS of text in all; counts what it had to drop."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self._lines: deque[LogLine] = deque(maxlen=capacity)
        self._chars = 0
        self._next_seq = 0
        self.dropped = 0

    def __len__(self) -> int:
        return len(self._lines)

    def __iter__(self) -> Iterator[LogLine]:
        return iter(self._lines)

    @property
    def first_seq(self) -> int:
        return self._lines[0][SEQ] if self._lines else self._next_seq

    def append(self, source: str, timestamp: str, text: str, notice: bool = False) -> LogLine:
        """One line, cleaned as PendingLines.push cleans."""
        source, timestamp, text = clean(source), clean(timestamp), _one_line(text)
        line = (self._next_seq, source, timestamp, text, notice)
        self._next_seq += 1
        self._add([line])
        return line

    def extend(self, items: list[tuple[str, str, str, bool]]) -> list[LogLine]:
        """Append many `(source, timestamp, text, notice)` as PendingLines.take gives them (cleaned when pushed) at
        once; returns the lines still held. Of a batch larger than the capacity only the newest `capacity` are
        built (the rest would be dropped at once)."""
        skip = max(0, len(items) - self.capacity)
        seq = self._next_seq + skip
        lines: list[LogLine] = [(seq + i, *item) for i, item in enumerate(items[skip:] if skip else items)]
        self.dropped += skip
        self._next_seq += len(items)
        self._add(lines)
        return lines

    def _add(self, lines: list[LogLine]) -> None:
        """Append the lines within the pane's bounds (_append_bounded); each line dropped is counted."""
        added = sum(map(len, map(_TEXT, lines)))
        self._chars, dropped = _append_bounded(self._lines, self.capacity, lines, self._chars, added, _TEXT)
        self.dropped += dropped

    def clear(self) -> None:
        self._lines.clear()
        self._chars = 0
        self.dropped = 0


class PendingLines:
    """Lines read by stream threads, waiting for the pane's next drain; thread-safe, bounded.

    Holds at most `capacity` lines and MAX_CHARS of text (the pane's bounds: an older waiting line would be evicted
    by the newer ones anyway); when the pane falls that far behind, the oldest waiting lines are skipped and
    counted."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.skipped = 0
        self._lock = threading.Lock()
        self._items: deque[tuple[str, str, str, bool]] = deque(maxlen=capacity)
        """Full, it drops its oldest items for new ones (counted in `skipped`)."""
        self._chars = 0

    def __len__(self) -> int:
        return len(self._items)

    def push(self, source: str, timestamp: str, text: str, notice: bool = False) -> None:
        """One line; its source, time and text lose any escape sequence or control character (text.sanitize)."""
        source, timestamp, text = clean(source), clean(timestamp), _one_line(text)
        with self._lock:
            self._add([(source, timestamp, text, notice)], len(text))

    def push_lines(self, source: str, timestamps: list[str], texts: list[str],
                   mask: Callable[[list[str], str], list[str]] | None = None) -> None:
        """Many lines of one source (`timestamps[i]` goes with `texts[i]`), under one lock, cleaned as `push` cleans
        (on the reading thread: one test of the whole batch, which mostly has no control character), then given to
        `mask(texts, source)` (the Job's secrets, LineRedactor.lines): it sees the texts as the pane shows them, so
        a secret a Pod split with an escape sequence (`hunter2-ESC[0msecret`) is one text it finds."""
        if has_control("\n".join(texts)):
            texts = [_one_line(text) for text in texts]
        if mask is not None:
            texts = mask(texts, source)
        source = clean(source)
        timestamps = clean_lines(timestamps, keep_sgr=False)
        cut = max(0, len(texts) - self.capacity)  # a batch alone past the capacity: its oldest are skipped at once
        if cut:
            timestamps, texts = timestamps[cut:], texts[cut:]
        with self._lock:
            self.skipped += cut
            self._add(list(zip(repeat(source), timestamps, texts, repeat(False))), sum(map(len, texts)))

    def _add(self, items: list[tuple[str, str, str, bool]], chars: int) -> None:
        """Append the items (of `chars` characters of text) within the queue's bounds (_append_bounded); each item
        skipped is counted; under the lock."""
        self._chars, skipped = _append_bounded(self._items, self.capacity, items, self._chars, chars,
                                               _ITEM_TEXT)
        self.skipped += skipped

    def take(self) -> list[tuple[str, str, str, bool]]:
        """Everything waiting, oldest first; the queue is empty afterwards."""
        with self._lock:
            items, self._items, self._chars = self._items, deque(maxlen=self.capacity), 0
        return list(items)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self._chars = 0
            self.skipped = 0


class LogView(ScrollView, can_focus=True):
    """Virtual view of a LogBuffer: one cached Strip per visible row, nothing else rendered."""

    COMPONENT_CLASSES = {
        "log-view--prefix",
        "log-view--timestamp",
        "log-view--error",
        "log-view--notice",
        "log-view--match",
        "log-view--current",
    }

    BINDINGS = [
        Binding("up,k", "scroll_by(-1)", "Up", show=False),
        Binding("down,j", "scroll_by(1)", "Down", show=False),
        Binding("pageup", "scroll_by(-20)", "Page up", show=False),
        Binding("pagedown", "scroll_by(20)", "Page down", show=False),
        Binding("home,g", "scroll_home_line", "Top", show=False),
        Binding("end,G", "scroll_end_line", "Bottom", show=False),
    ]

    class Drained(Message):
        """The pane took `lines` waiting lines (0: the flow has just stopped)."""

        def __init__(self, lines: int) -> None:
            super().__init__()
            self.lines = lines

    class SlowPattern(Message):
        """A search or line-filter regex took too long on a line and was dropped (`kind`: search or filter)."""

        def __init__(self, kind: str, text: str) -> None:
            super().__init__()
            self.kind = kind
            self.text = text

    class FollowChanged(Message):
        """Follow mode was switched (by a key or by scrolling away from the end)."""

        def __init__(self, follow: bool) -> None:
            super().__init__()
            self.follow = follow

    def __init__(self, buffer: LogBuffer, pending: PendingLines, drain_seconds: float, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.buffer = buffer
        self.pending = pending
        """Filled by reader threads (cluster.logs.LogFollower), taken in one batch every `drain_seconds`."""
        self._drain_seconds = drain_seconds
        self._flowing = False
        self.follow = True
        self.wrap = False
        self.show_timestamps = False
        self.show_prefix = True
        self.line_filter: Matcher = make_matcher("")
        self.search: Matcher = make_matcher("")
        self.current_seq: int | None = None
        self.new_below = 0
        """Lines that arrived while not following (shown as a badge by the screen)."""
        self._rows: list[tuple[LogLine, int]] = []
        self._content_width = 0
        self._wrap_at = 0
        self._cache: LRUCache[tuple[int, int], Strip] = LRUCache(STRIPS_KEPT)
        self._base: tuple[str, Style] | None = None

    def on_mount(self) -> None:
        self.set_interval(self._drain_seconds, self.drain)

    def drain(self) -> None:
        """Show every waiting line at once (one repaint however many arrived)."""
        batch = self.pending.take()
        if batch:
            self.add_lines(self.buffer.extend(batch))
        if batch or self._flowing:
            self._flowing = bool(batch)
            self.post_message(self.Drained(len(batch)))

    def notify_style_update(self) -> None:
        self._base = None
        self._cache.clear()
        super().notify_style_update()

    @property
    def base_style(self) -> Style:
        """`rich_style`, kept until this widget's styles or the theme change: it walks every ancestor's styles
        and was a sixth of each frame's cost while a log flowed (every row is new on every frame)."""
        theme = self.app.theme
        if self._base is None or self._base[0] != theme:
            self._base = (theme, self.rich_style)
        return self._base[1]

    # ---- content -------------------------------------------------------------------------
    def line_text(self, line: LogLine) -> str:
        """The text of one line as shown: optional timestamp, optional prefix, message (tabs expanded)."""
        return self._head(line) + line[TEXT].expandtabs(8)

    def _shown_text(self, line: LogLine) -> str:
        """`line_text` cut at SHOWN_CHARS, saying how much more there is."""
        text = self.line_text(line)
        if len(text) <= SHOWN_CHARS:
            return text
        return f"{text[:SHOWN_CHARS]}{CUT_NOTE}{len(text) - SHOWN_CHARS:,} more characters; ctrl+s saves the whole line]"

    def _head(self, line: LogLine) -> str:
        _, source, timestamp, _, notice = line
        parts = []
        if self.show_timestamps and timestamp:
            parts.append(timestamp)
        if self.show_prefix and source and not notice:
            parts.append(f"[{source}]")
        return "".join(part + " " for part in parts)

    @property
    def shown_lines(self) -> list[LogLine]:
        """Lines that pass the line filter, oldest first (one entry per line, not per row)."""
        seen: list[LogLine] = []
        for line, start in self._rows:
            if start == 0:
                seen.append(line)
        return seen

    def add_lines(self, lines: Iterable[LogLine]) -> None:
        """Append lines already stored in the buffer; evicted lines leave the view too."""
        at_end = self.follow
        first = self.buffer.first_seq
        new_rows: list[tuple[LogLine, int]] = []
        matches = one_pass(self.line_filter).matches if self.line_filter.pattern is not None else None
        try:
            for line in lines:
                if line[SEQ] >= first and (line[NOTICE] or matches is None or matches(line[TEXT])):
                    if self.wrap:
                        new_rows.extend(self._rows_for(line))
                    else:
                        new_rows.append((line, 0))
        except PatternTooSlow:
            self._drop_slow("filter")
            return
        if not self.wrap and new_rows:
            self._content_width = max(self._content_width, max(self._shown_length(line) for line, _ in new_rows))
        first_new = len(self._rows)
        self._rows.extend(new_rows)
        if not at_end:
            self.new_below += sum(1 for _, start in new_rows if start == 0)
        evicted = self._evict()
        if not new_rows and not evicted:
            return
        self._update_virtual_size()
        if at_end:
            self.scroll_end(animate=False, immediate=True, x_axis=False, force=True)
            self.refresh()
        elif evicted:
            self.scroll_to(y=max(0, self.scroll_y - evicted), animate=False, immediate=True, force=True)
            self.refresh()
        elif first_new - evicted < self.scroll_offset.y + self.size.height:
            self.refresh()

    def rebuild(self) -> None:
        """Recompute every row from the buffer (after a filter, wrap, width or timestamp change)."""
        anchor = self._top_line_seq()
        self._wrap_at = self._wrap_width()
        self._cache.clear()
        self._rows = []
        matches = one_pass(self.line_filter).matches
        try:
            for line in self.buffer:
                if line[NOTICE] or matches(line[TEXT]):
                    self._rows.extend(self._rows_for(line))
        except PatternTooSlow:
            self._drop_slow("filter")
            return
        self._update_virtual_size()
        if self.follow:
            self.scroll_end(animate=False, immediate=True, x_axis=False, force=True)
        elif anchor is not None:
            self._scroll_to_seq(anchor, center=False)
        self.refresh()

    def clear(self) -> None:
        self.buffer.clear()
        self._rows = []
        self._cache.clear()
        self.current_seq = None
        self._update_virtual_size()
        self.refresh()

    def set_option(self, *, wrap: bool | None = None, timestamps: bool | None = None,
                   prefix: bool | None = None, line_filter: Matcher | None = None) -> None:
        if wrap is not None:
            self.wrap = wrap
        if timestamps is not None:
            self.show_timestamps = timestamps
        if prefix is not None:
            self.show_prefix = prefix
        if line_filter is not None:
            self.line_filter = timed(line_filter)
        self.rebuild()

    def set_follow(self, follow: bool) -> None:
        if follow == self.follow:
            return
        self.follow = follow
        if follow:
            self.new_below = 0
            self.scroll_end(animate=False, immediate=True, x_axis=False, force=True)
        self.post_message(self.FollowChanged(follow))

    def set_search(self, matcher: Matcher) -> None:
        """New search text; the next `find` continues from the current match or error line."""
        self.search = timed(matcher)
        self._cache.clear()
        self.refresh()

    # ---- navigation ----------------------------------------------------------------------
    def find(self, forward: bool, include_current: bool = False) -> LogLine | None:
        """Move to the next (or previous) line matching the search, wrapping around; None if none matches.

        `include_current` lets the current line match again (incremental search while typing)."""
        if self.search.pattern is None:
            return None
        lines = self.shown_lines
        if not lines:
            return None
        if self.current_seq is None:
            top = self._top_line_seq()
            pivot = (top - 1 if forward else top) if top is not None else -1
        else:
            pivot = self.current_seq
            if include_current:
                pivot += -1 if forward else 1
        ordered = lines if forward else lines[::-1]
        start = next(
            (i for i, line in enumerate(ordered) if (line[SEQ] > pivot if forward else line[SEQ] < pivot)),
            len(ordered),
        )
        matches = one_pass(self.search).matches
        try:
            for line in ordered[start:] + ordered[:start]:
                if not line[NOTICE] and matches(self.line_text(line)):
                    self._goto(line)
                    return line
        except PatternTooSlow:
            self._drop_slow("search")
        return None

    def first_error(self) -> LogLine | None:
        for line in self.shown_lines:
            if is_error(line):
                self._goto(line)
                return line
        return None

    def _goto(self, line: LogLine) -> None:
        self.set_follow(False)
        self.current_seq = line[SEQ]
        self._cache.clear()
        self._scroll_to_seq(line[SEQ], center=True)
        self.refresh()

    def action_scroll_by(self, rows: int) -> None:
        if rows < 0:
            self.set_follow(False)
        self.scroll_to(y=self.scroll_y + rows, animate=False, immediate=True)
        if rows > 0 and self.scroll_offset.y >= self.max_scroll_y and not self.follow:
            self.refresh()

    def action_scroll_home_line(self) -> None:
        self.set_follow(False)
        self.scroll_home(animate=False, immediate=True)

    def action_scroll_end_line(self) -> None:
        """End / G: back to the tail, following again."""
        self.set_follow(True)
        self.scroll_end(animate=False, immediate=True, x_axis=False, force=True)

    def on_mouse_scroll_up(self) -> None:
        self.set_follow(False)

    # ---- rendering -----------------------------------------------------------------------
    def on_resize(self) -> None:
        if self.wrap and self._wrap_width() != self._wrap_at:
            self.rebuild()
        elif self.follow:
            self.scroll_end(animate=False, immediate=True, x_axis=False, force=True)

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        index = scroll_y + y
        width = self.size.width
        base = self.base_style
        if index >= len(self._rows):
            return Strip.blank(width, base)
        line, start = self._rows[index]
        key = (line[SEQ], start)
        strip = self._cache.get(key)
        if strip is None:
            strip = self._render_row(line, start, base)
            self._cache[key] = strip
        return strip.crop_extend(scroll_x, scroll_x + width, base).apply_offsets(scroll_x, index)

    def _render_row(self, line: LogLine, start: int, base: Style) -> Strip:
        if not self.wrap and not line[NOTICE] and self.search.pattern is None:
            plain = self._shown_text(line)
            head = self._head(line)
            if not ERROR_PATTERN.search(plain, len(head)):
                return Strip(self._plain_segments(line, plain[len(head):], base))
        text = self._styled(line)
        if self.wrap:
            text = text[start:start + max(1, self._wrap_width())]
        return Strip(list(text.render(self.app.console, end=""))).apply_style(base)

    def _plain_segments(self, line: LogLine, message: str, base: Style) -> list[Segment]:
        """The segments `_styled` would give a row with no search match and no error, built directly: rich's
        Text.render costs most of a frame when every visible row is new (a log flowing at thousands of lines/s)."""
        _, source, timestamp, _, _ = line
        segments = []
        if self.show_timestamps and timestamp:
            segments += [Segment(timestamp, base + self.get_component_rich_style("log-view--timestamp")),
                         Segment(" ", base)]
        if self.show_prefix and source:
            segments += [Segment(f"[{source}]", base + self.get_component_rich_style("log-view--prefix")),
                         Segment(" ", base)]
        cut = message.rfind(CUT_NOTE)
        # rich measures a segment a character at a time in Python once one character is outside its single-cell
        # set, as the cut note's `…` is: the note is a segment of its own, so a cut line's 16 KiB is measured at once
        segments += [Segment(message[:cut], base), Segment(message[cut:], base)] if cut > 0 else [Segment(message, base)]
        return segments

    def _styled(self, line: LogLine) -> Text:
        seq, source, timestamp, _, notice = line
        plain = self._shown_text(line)
        text = Text(plain, no_wrap=True, end="")
        if notice:
            text.stylize(self.get_component_rich_style("log-view--notice"))
            return text
        offset = 0
        if self.show_timestamps and timestamp:
            text.stylize(self.get_component_rich_style("log-view--timestamp"), 0, len(timestamp))
            offset = len(timestamp) + 1
        if self.show_prefix and source:
            end = offset + len(source) + 2
            text.stylize(self.get_component_rich_style("log-view--prefix"), offset, end)
        if ERROR_PATTERN.search(plain, len(self._head(line))):
            text.stylize(self.get_component_rich_style("log-view--error"), len(self._head(line)))
        style_name = "log-view--current" if seq == self.current_seq else "log-view--match"
        try:
            spans = self.search.spans(plain)
        except PatternTooSlow:
            self._drop_slow("search")
            spans = []
        for begin, end in spans:
            text.stylize(self.get_component_rich_style(style_name), begin, end)
        return text

    def _drop_slow(self, kind: str) -> None:
        """Stop using a regex that took too long (the whole view is redrawn without it) and say so."""
        if kind == "filter":
            text, self.line_filter = self.line_filter.text, make_matcher("")
            self.rebuild()
        else:
            text, self.search = self.search.text, make_matcher("")
            self._cache.clear()
            self.refresh()
        self.post_message(self.SlowPattern(kind, text))

    # ---- rows ----------------------------------------------------------------------------
    def _wrap_width(self) -> int:
        return max(10, self.size.width or 80)

    def _shown_length(self, line: LogLine) -> int:
        """len(self._shown_text(line)) without building it when the line is short and has no tabs."""
        _, source, timestamp, text, notice = line
        if "\t" in text or len(text) > SHOWN_CHARS:
            return len(self._shown_text(line))
        length = len(text)
        if self.show_timestamps and timestamp:
            length += len(timestamp) + 1
        if self.show_prefix and source and not notice:
            length += len(source) + 3
        return length if length <= SHOWN_CHARS else len(self._shown_text(line))

    def _rows_for(self, line: LogLine) -> list[tuple[LogLine, int]]:
        length = len(self._shown_text(line))
        if not self.wrap:
            self._content_width = max(self._content_width, length)
            return [(line, 0)]
        width = self._wrap_width()
        return [(line, start) for start in range(0, max(length, 1), width)]

    def _evict(self) -> int:
        first = self.buffer.first_seq
        count = 0
        while count < len(self._rows) and self._rows[count][0][SEQ] < first:
            count += 1
        if count:
            del self._rows[:count]
        return count

    def _update_virtual_size(self) -> None:
        width = self._wrap_width() if self.wrap else self._content_width
        self.virtual_size = Size(width, len(self._rows))

    def _top_line_seq(self) -> int | None:
        index = self.scroll_offset.y
        if 0 <= index < len(self._rows):
            return self._rows[index][0][SEQ]
        return None

    def _scroll_to_seq(self, seq: int, center: bool) -> None:
        for index, (line, _) in enumerate(self._rows):
            if line[SEQ] >= seq:
                target = index - (self.size.height // 2 if center else 0)
                self.scroll_to(y=max(0, target), animate=False, immediate=True, force=True)
                return
