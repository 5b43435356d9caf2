"""LiveTable: a virtual list (ScrollView + render_line) updated in place by row key, never rebuilt.

Only the visible rows are rendered, each from one cached Strip; a changed row repaints its own line.
The table owns the sort order, the `/` filter (over precomputed lowercase keys) and the selection, which
stays on the same row key across updates, filters and re-sorts. Columns fit the table's width (`fit_widths`): below
the full width, columns with a priority narrow, then hide, the highest priority number first, as k9s drops
low-value columns; priority 0 columns always show.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from rich.cells import cell_len, set_cell_size
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual import events
from textual.binding import Binding
from textual.geometry import Region, Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip
from textual.widget import Widget

from rlark_tui.text.patterns import Deadline, PatternTooSlow
from rlark_tui.text.sinks import FIELD_CHARS, cut, one_line
from rlark_tui.widgets.filter_bar import ROW_SECONDS, Matcher, make_matcher

GAP = 2
PASS_SECONDS = 1.0
"""What a filter regex may spend on one pass over the table (the rows an update changed, or every row when the
filter is typed or the order moves), all rows together, and on one row at most filter_bar.ROW_SECONDS: with only
the bound per row, a regex a little under it on each of 10,000 rows held the keys for minutes. Past either the
filter is matched as plain text, and the table says so and where it stopped."""
MAX_WIDTH = 48
NARROW_WIDTH = 10
"""How narrow a column with a priority gets before it is hidden (unless its `min_width` says otherwise)."""


@dataclass(frozen=True)
class Column:
    """One column: its key and header label; `width` fixes the width (else it fits the content). `priority` 0
    always shows; a higher one narrows (to `min_width`, else NARROW_WIDTH) and then hides first when the table is
    narrower than its columns."""

    key: str
    label: str
    width: int | None = None
    priority: int = 0
    min_width: int | None = None


def fit_widths(columns: Sequence[Column], widths: Sequence[int], available: int) -> list[int | None]:
    """The width each column is drawn at (None: hidden) in `available` cells: the full widths when they fit,
    else the columns of the highest priority number narrow, then those of the next...; if that is not enough
    they hide in the same order. What still does not fit scrolls sideways."""
    shown: list[int | None] = list(widths)

    def total() -> int:
        return 1 + sum(width + GAP for width in shown if width is not None)

    levels = sorted({column.priority for column in columns if column.priority > 0}, reverse=True)
    for level in levels:
        if total() <= available:
            return shown
        for position, column in enumerate(columns):
            if column.priority == level:
                shown[position] = min(widths[position], column.min_width or NARROW_WIDTH)
    for level in levels:
        for position, column in enumerate(columns):
            if total() <= available:
                return shown
            if column.priority == level:
                shown[position] = None
    return shown


@dataclass(frozen=True)
class Row:
    """One row: a unique key, its cells (same order as the columns), per-column sort values and the fields
    the filter matches (default: the cells' text)."""

    key: str
    cells: tuple[str | Text, ...]
    sort_values: tuple[Any, ...]
    search: tuple[str, ...] | None = None


def _plain(cell: str | Text) -> str:
    return cell.plain if isinstance(cell, Text) else cell


def _cleaned(row: Row) -> Row:
    """The row as the table keeps and draws it: no cell holds an escape sequence, control character, line break or
    bidi control (`sinks.one_line`; a cell's style stays), nor more than `sinks.FIELD_CHARS` characters (`sinks.cut`:
    a column is never that wide, and 20 Jobs whose display and role names were 100 KB of wide and combining
    characters held the UI thread 17 s at the first list, measuring and cutting each cell whole). Cells come from
    the cluster: this is where the table takes them in."""
    plain = [cell.plain if isinstance(cell, Text) else cell for cell in row.cells]
    if max(map(len, plain), default=0) <= FIELD_CHARS and "".join(plain).isprintable():
        return row
    cells = tuple(Text(one_line(cut(cell.plain)), style=cell.style) if isinstance(cell, Text) else one_line(cut(cell))
                  for cell in row.cells)
    return replace(row, cells=cells)


def _fit(text: str, width: int) -> str:
    """`text` padded or cut (with an ellipsis) to exactly `width` terminal cells."""
    return set_cell_size(text, width) if cell_len(text) <= width else set_cell_size(text, width - 1) + "…"


class LiveTable(ScrollView, can_focus=True):
    """Rows by key: `sync(rows)` replaces them all, `update(rows, removed)` touches only those given."""

    COMPONENT_CLASSES = {"live-table--header", "live-table--cursor"}
    DEFAULT_CSS = """
    LiveTable {
        background: $surface;
        color: $foreground;
        & > .live-table--header { background: $panel; color: $foreground; text-style: bold; }
        & > .live-table--cursor { background: $block-cursor-blurred-background; }
        &:focus > .live-table--cursor {
            background: $block-cursor-background;
            color: $block-cursor-foreground;
            text-style: $block-cursor-text-style;
        }
    }
    """
    BINDINGS = [
        Binding("enter", "select_cursor", "Select", show=False),
        Binding("up,k", "cursor_up", "Up", show=False),
        Binding("down,j", "cursor_down", "Down", show=False),
        Binding("home,g", "cursor_first", "First row", show=False),
        Binding("end,G", "cursor_last", "Last row", show=False),
        Binding("pageup", "page_up", "Page up", show=False),
        Binding("pagedown", "page_down", "Page down", show=False),
    ]

    class RowSelected(Message):
        """Enter (or a click on the cursor row) on a row."""

        def __init__(self, table: LiveTable, row_key: str, cursor_row: int) -> None:
            super().__init__()
            self.table = table
            self.row_key = row_key
            self.cursor_row = cursor_row

        @property
        def control(self) -> LiveTable:
            return self.table

    class WindowChanged(Message):
        """The rows in view may be others now (rows, filter, sort, scroll or size changed): a screen that reads
        per visible row (the job list's subscriptions) looks at `visible_keys` again. A newer one supersedes."""

        def __init__(self, table: LiveTable) -> None:
            super().__init__()
            self.table = table

        @property
        def control(self) -> LiveTable:
            return self.table

        def can_replace(self, message: Message) -> bool:
            return isinstance(message, LiveTable.WindowChanged) and message.table is self.table

    def __init__(self, columns: Sequence[Column], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._columns = tuple(columns)
        self._widths = [column.width or len(column.label) for column in self._columns]
        self._drawn: list[int | None] = list(self._widths)
        """The width each column is drawn at in the table's width now (None: hidden), from fit_widths."""
        self._rows: dict[str, Row] = {}
        self._keys: dict[str, tuple[str, tuple[str, ...]]] = {}
        self._strips: dict[str, Strip] = {}
        self._order: list[str] | None = []
        """Every row key in sort order (None: to be sorted again)."""
        self._shown: list[str] = []
        self._positions: dict[str, int] | None = {}
        self._base: Style | None = None
        self._matcher: Matcher = make_matcher("")
        self._cursor = 0
        self._wanted: str | None = None
        self.sort_column: str | None = None
        self.sort_reverse = False
        self.wide = False
        """Every column at its full width (none narrows or hides; what does not fit scrolls sideways)."""
        self.on_highlighted: Callable[[], None] | None = None
        """Called at once when the cursor is on another row (a key or a click moved it; a filter, sort or new rows
        say WindowChanged): what the screen shows of the row lands in the key's own frame, where a message handled
        after it drew a second one."""

    # ---- what the screens and tests read ---------------------------------------------------------
    @property
    def row_count(self) -> int:
        """Rows shown (after the filter)."""
        return len(self._shown)

    @property
    def shown_columns(self) -> list[str]:
        """Keys of the columns drawn at the table's width now (the others are hidden for lack of room)."""
        return [column.key for column, width in zip(self._columns, self._drawn) if width is not None]

    @property
    def total_count(self) -> int:
        """Rows held, shown or filtered out."""
        return len(self._rows)

    @property
    def cursor_row(self) -> int:
        return self._cursor

    @property
    def selected_key(self) -> str | None:
        """Row key under the cursor, or None when no row is shown."""
        return self._shown[self._cursor] if self._shown else None

    @property
    def visible_keys(self) -> list[str]:
        """Keys of the shown rows scrolled into view, top to bottom."""
        start = int(self.scroll_offset.y)
        return self._shown[start:start + max(0, self.size.height - 1)]

    def get_row_at(self, index: int) -> tuple[str | Text, ...]:
        return self._rows[self._shown[index]].cells

    def get_row_index(self, key: str) -> int:
        """Position of `key` among the shown rows; KeyError when it is not shown."""
        return self._position[key]

    @property
    def _position(self) -> dict[str, int]:
        if self._positions is None:
            self._positions = {key: position for position, key in enumerate(self._shown)}
        return self._positions

    # ---- changing rows ---------------------------------------------------------------------------
    def sync(self, rows: Iterable[Row]) -> bool:
        """Make the table hold exactly `rows`; returns True when anything changed."""
        wanted = {row.key: row for row in rows}
        return self.update(wanted.values(), [key for key in self._rows if key not in wanted])

    def update(self, rows: Iterable[Row], removed: Iterable[str] = ()) -> bool:
        """Add or replace `rows` and drop `removed`; costs O(rows given) unless the order or filter result moves."""
        reorder = resort = False
        repaint: list[tuple[str, Row]] = []
        """Rows in place whose cells changed, with the row they replace."""
        for key in removed:
            if self._rows.pop(key, None) is not None:
                del self._keys[key]
                self._strips.pop(key, None)
                reorder = resort = True
        widened = False
        sort_index = self._sort_index()
        unsure: list[tuple[str, Row]] = []
        """Rows in place whose cells changed and whose order did not: the filter may take them in or out."""
        for row in rows:
            old = self._rows.get(row.key)
            if old is row or (old is not None and _same(old, row)):
                continue
            row = _cleaned(row)
            self._rows[row.key] = row
            if old is None or row.search is None or old.search != row.search:
                fields = row.search if row.search is not None else tuple(_plain(cell) for cell in row.cells)
                self._keys[row.key] = ("\n".join(fields).lower(), fields)
            self._strips.pop(row.key, None)
            widened |= self._widen(row, old)
            if old is None or (sort_index is not None and old.sort_values[sort_index] != row.sort_values[sort_index]):
                reorder = resort = True
            else:
                unsure.append((row.key, old))
        if not reorder:  # else every row is filtered again
            matcher = self._one_pass()
            for number, (key, old) in enumerate(unsure, 1):
                if (key in self._position) != self._matches(matcher, key, number):
                    reorder = True
                    break
                if key in self._position:
                    repaint.append((key, old))
            reorder = reorder or self._matcher.literal != matcher.literal  # fell back to plain text: all again
        if widened:
            self._strips.clear()
            self._fit_columns()
        if resort:
            self._order = None
        if reorder:
            self._reshow()
        elif widened:
            self._resize()
            self.refresh()
        else:
            top, height = int(self.scroll_y), self.size.height
            for key, old in repaint:
                position = self._position[key]
                if top <= position < top + height:
                    self._refresh_cells(position, self._rows[key], old)
        return reorder or widened or bool(repaint)

    def set_filter(self, matcher: Matcher) -> None:
        """Show only rows whose search fields match (an empty matcher shows all). Typing on narrows: a
        plain text that extends the previous one only looks at the rows shown now."""
        narrower = (self._matcher.literal is not None and matcher.literal is not None
                    and self._matcher.literal in matcher.literal and self._order is not None)
        self._matcher = matcher
        self._reshow(self._shown if narrower else None)

    def sort_by(self, column_key: str) -> None:
        """Sort by `column_key`; asking again for the same column flips the direction."""
        if self.sort_column == column_key:
            self.sort_reverse = not self.sort_reverse
        else:
            self.sort_column = column_key
            self.sort_reverse = False
        self._order = None
        self._reshow()

    def sort_as(self, column_key: str | None, reverse: bool) -> None:
        """Sort by `column_key` (None: by key) in the given direction (a view restored)."""
        self.sort_column = column_key
        self.sort_reverse = reverse
        self._order = None
        self._reshow()

    def set_wide(self, wide: bool) -> None:
        self.wide = wide
        if self._fit_columns():
            self._resize()
            self.refresh()
        self.post_message(self.WindowChanged(self))

    # ---- cursor ------------------------------------------------------------------------------------
    def move_cursor(self, *, row: int | None = None, scroll: bool = True, **_: Any) -> None:
        """Put the cursor on shown row `row` (clamped) and remember its key as the selection."""
        if row is None or not self._shown:
            return
        before = self._shown[self._cursor] if self._cursor < len(self._shown) else None
        self._set_cursor(max(0, min(row, len(self._shown) - 1)), scroll)
        self._wanted = self._shown[self._cursor]
        if self._wanted != before and self.on_highlighted is not None:
            self.on_highlighted()

    def select_key(self, key: str) -> bool:
        """Move the cursor to the row `key`; False when no such row is shown."""
        if key not in self._position:
            return False
        self.move_cursor(row=self._position[key])
        return True

    def action_cursor_up(self) -> None:
        self.move_cursor(row=self._cursor - 1)

    def action_cursor_down(self) -> None:
        self.move_cursor(row=self._cursor + 1)

    def action_cursor_first(self) -> None:
        self.move_cursor(row=0)

    def action_cursor_last(self) -> None:
        self.move_cursor(row=len(self._shown) - 1)

    def action_page_up(self) -> None:
        self.move_cursor(row=self._cursor - self._page())

    def action_page_down(self) -> None:
        self.move_cursor(row=self._cursor + self._page())

    def action_select_cursor(self) -> None:
        if self._shown:
            self.post_message(self.RowSelected(self, self._shown[self._cursor], self._cursor))

    async def _on_click(self, event: events.Click) -> None:
        offset = event.get_content_offset(self)
        if offset is None:
            return
        if offset.y == 0:
            column = self._column_at(offset.x + int(self.scroll_x))
            if column is not None:
                self.sort_by(column.key)
            return
        row = int(self.scroll_y) + offset.y - 1
        if row >= len(self._shown):
            return
        if row == self._cursor:
            self.action_select_cursor()
        else:
            self.move_cursor(row=row)

    def _on_focus(self, event: events.Focus) -> None:
        self._refresh_row(self._cursor)

    def _on_blur(self, event: events.Blur) -> None:
        self._refresh_row(self._cursor)

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._strips.clear()
        self._base = None

    # ---- rendering ---------------------------------------------------------------------------------
    def render_line(self, y: int) -> Strip:
        width = self.size.width
        scroll_x, scroll_y = self.scroll_offset
        base = self._base
        if base is None:
            base = self._base = self.rich_style
        if y == 0:
            style = base + self.get_component_rich_style("live-table--header")
            strip = self._line([(column.label, None) for column in self._columns], style)
            return strip.crop_extend(scroll_x, scroll_x + width, style)
        index = scroll_y + y - 1
        if index >= len(self._shown):
            return Strip.blank(width, base)
        key = self._shown[index]
        if index == self._cursor:
            style = base + self.get_component_rich_style("live-table--cursor")
            return self._line(self._cells(key), style).crop_extend(scroll_x, scroll_x + width, style)
        cached = self._strips.get(key)
        if cached is None:
            cached = self._strips[key] = self._line(self._cells(key), base)
        return cached.crop_extend(scroll_x, scroll_x + width, base)

    def _cells(self, key: str) -> list[tuple[str, Style | None]]:
        cells: list[tuple[str, Style | None]] = []
        for cell in self._rows[key].cells:
            if isinstance(cell, Text):
                style = cell.style
                cells.append((cell.plain, Style.parse(style) if isinstance(style, str) else style))
            else:
                cells.append((cell, None))
        return cells

    def _line(self, cells: list[tuple[str, Style | None]], style: Style) -> Strip:
        """One segment per run of cells drawn in the same style (most cells are in the row's): each segment costs
        every step after this one, Textual's styling and line filters and the terminal's output, the same."""
        segments: list[Segment] = []
        run = [" "]
        for (text, cell_style), width in zip(cells, self._drawn):
            if width is None:
                continue
            if cell_style:
                segments.append(Segment("".join(run), style))
                segments.append(Segment(_fit(text, width), style + cell_style))
                run = [" " * GAP]
            else:
                run += (_fit(text, width), " " * GAP)
        segments.append(Segment("".join(run), style))
        return Strip(segments)

    # ---- internals ---------------------------------------------------------------------------------
    def _one_pass(self) -> Matcher:
        """The filter for one pass over the table: a regex shares PASS_SECONDS over all the rows it looks at, at
        most ROW_SECONDS on one."""
        matcher = self._matcher
        if matcher.pattern is None or matcher.literal is not None:
            return matcher
        return replace(matcher, budget=Deadline(PASS_SECONDS, each=ROW_SECONDS))

    def _matches(self, matcher: Matcher, key: str, number: int) -> bool:
        """Does the row match `matcher`, this pass's filter, the row the pass's `number`th?"""
        if self._matcher.literal is not None:  # plain text, or a regex that fell back to it earlier in this pass
            matcher = self._matcher
        lowered, fields = self._keys[key]
        try:
            return matcher.matches_row(lowered, fields)
        except PatternTooSlow as exc:
            return self._too_slow(exc, number) in lowered

    def _too_slow(self, exc: PatternTooSlow, number: int) -> str:
        """A filter regex over its budget for a pass, at the pass's `number`th row: match its text as plain text
        from now on, and say so. Returns that text, lowercased (what a row's lowered fields are searched for)."""
        self._matcher = self._matcher.as_text(str(exc))
        self.notify(f"{exc}: the filter stopped at row {number:,} of {len(self._rows):,}; matching it as plain text",
                    severity="warning")
        return self._matcher.text.lower()

    def _sort_index(self) -> int | None:
        if self.sort_column is None:
            return None
        return [column.key for column in self._columns].index(self.sort_column)

    def _reshow(self, candidates: list[str] | None = None) -> None:
        """Filter (among `candidates`, already in order, when given) and sort again; keep the cursor on the
        selected key; repaint."""
        if candidates is None:
            candidates = self._sorted()
        matcher = self._one_pass()
        if matcher.pattern is None:
            shown = list(candidates)
        elif matcher.literal is not None:
            literal, keys = matcher.literal, self._keys
            shown = [key for key in candidates if literal in keys[key][0]]
        else:
            keys, shown = self._keys, []
            checked = 0
            try:
                for key in candidates:
                    checked += 1
                    if matcher.matches_row(*keys[key]):
                        shown.append(key)
            except PatternTooSlow as exc:
                literal = self._too_slow(exc, checked)
                shown = [key for key in candidates if literal in keys[key][0]]
        self._shown = shown
        self._positions = None
        wanted = self._position.get(self._wanted) if self._wanted is not None else None
        self._cursor = wanted if wanted is not None else max(0, min(self._cursor, len(shown) - 1))
        if shown and (self._wanted is None or self._wanted not in self._rows):
            self._wanted = shown[self._cursor]
        self._resize()
        self.refresh()
        self.post_message(self.WindowChanged(self))

    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        super().watch_scroll_y(old_value, new_value)
        if int(old_value) != int(new_value):
            self.post_message(self.WindowChanged(self))

    def on_resize(self) -> None:
        if self._fit_columns():
            self._resize()
            self.refresh()
        self.post_message(self.WindowChanged(self))

    def _fit_columns(self) -> bool:
        """Draw the columns at the widths that fit the table's width now; True when that changed."""
        available = 1 << 16 if self.wide or not self.size.width else self.size.width
        drawn = fit_widths(self._columns, self._widths, available)
        if drawn == self._drawn:
            return False
        self._drawn = drawn
        self._strips.clear()
        return True

    def _sorted(self) -> list[str]:
        if self._order is None:
            order = list(self._rows)
            index = self._sort_index()
            if index is None:
                order.sort(reverse=self.sort_reverse)
            else:
                rows = self._rows
                order.sort(key=lambda key: (_sortable(rows[key].sort_values[index]), key), reverse=self.sort_reverse)
            self._order = order
        return self._order

    def _resize(self) -> None:
        """A new virtual size updates the scrollbars only: the table's own size does not depend on it, and
        the layout pass that assigning `virtual_size` starts repaints the whole screen (at 5,000 rows it
        doubled the time from a filter key to its frame)."""
        size = Size(1 + sum(width + GAP for width in self._drawn if width is not None), len(self._shown) + 1)
        if size != self.virtual_size:
            self.set_reactive(Widget.virtual_size, size)
            self._scroll_update(size)

    def _widen(self, row: Row, old: Row | None) -> bool:
        grew = False
        before = old.cells if old is not None else (None,) * len(row.cells)
        for position, (column, cell, was) in enumerate(zip(self._columns, row.cells, before)):
            if column.width is None and cell is not was:
                needed = min(cell_len(_plain(cell)), MAX_WIDTH)
                if needed > self._widths[position]:
                    self._widths[position] = needed
                    grew = True
        return grew

    def _column_at(self, x: int) -> Column | None:
        edge = 1
        for column, width in zip(self._columns, self._drawn):
            if width is None:
                continue
            edge += width + GAP
            if x < edge:
                return column
        return None

    def _page(self) -> int:
        return max(1, self.size.height - 2)

    def _set_cursor(self, row: int, scroll: bool) -> None:
        old, self._cursor = self._cursor, row
        self._refresh_row(old)
        self._refresh_row(row)
        if scroll:
            visible = max(1, self.size.height - 1)
            top = int(self.scroll_y)
            if row < top:
                self.scroll_to(y=row, animate=False)
            elif row >= top + visible:
                self.scroll_to(y=row - visible + 1, animate=False)

    def _refresh_cells(self, position: int, row: Row, old: Row) -> None:
        """Repaint the cells of the row at `position` that differ from `old`'s, not the whole line: an AGE or
        PROGRESS cell that moves costs its own width on a slow link, not the terminal's."""
        y = position + 1 - int(self.scroll_y)
        edge = 1 - int(self.scroll_x)
        for cell, was, width in zip(row.cells, old.cells, self._drawn):
            if width is None:
                continue
            if cell != was or getattr(cell, "style", None) != getattr(was, "style", None):
                self.refresh(Region(edge, y, width, 1))
            edge += width + GAP

    def _refresh_row(self, row: int) -> None:
        if 0 <= row < len(self._shown):
            self.refresh_line(row + 1)


def _same(old: Row, new: Row) -> bool:
    """Equal rows, each cell's own style included (rich's Text equality ignores it: a phase recoloured for a
    new theme would otherwise never be repainted)."""
    return old == new and all(getattr(a, "style", None) == getattr(b, "style", None)
                              for a, b in zip(old.cells, new.cells))


def _sortable(value: Any) -> tuple:
    """Numbers before text, None last in ascending order; mixed types never raise."""
    if value is None:
        return (2,)
    if isinstance(value, (int, float)):
        return (0, value)
    return (1, str(value).lower())
