"""LiveTable: a DataTable that is updated in place by row key, never rebuilt.

Owns the diff (remove gone rows, update changed cells, add new ones), the sort order and the
selection, which stays on the same row key across updates, filters and re-sorts.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from rich.text import Text
from textual.binding import Binding
from textual.widgets import DataTable


@dataclass(frozen=True)
class Column:
    """One column: its key, header label and whether it may be used as a sort key."""

    key: str
    label: str
    width: int | None = None


@dataclass(frozen=True)
class Row:
    """One row: a unique key, its cells (same order as the columns) and per-column sort values."""

    key: str
    cells: tuple[str | Text, ...]
    sort_values: tuple[Any, ...]


class LiveTable(DataTable):
    """DataTable with `sync(rows)`: in-place diff, stable selection, optional sort column."""

    BINDINGS = [
        Binding("g", "scroll_top", "First row", show=False),
        Binding("G", "scroll_bottom", "Last row", show=False),
        Binding("j", "cursor_down", "Down", show=False),
        Binding("k", "cursor_up", "Up", show=False),
    ]

    def __init__(self, columns: Sequence[Column], **kwargs: Any) -> None:
        super().__init__(cursor_type="row", zebra_stripes=False, **kwargs)
        self._columns = tuple(columns)
        self._cells: dict[str, tuple[str | Text, ...]] = {}
        self._sort_values: dict[str, tuple[Any, ...]] = {}
        self.sort_column: str | None = None
        self.sort_reverse = False

    def on_mount(self) -> None:
        for column in self._columns:
            self.add_column(column.label, key=column.key, width=column.width)

    @property
    def selected_key(self) -> str | None:
        """Row key under the cursor, or None when the table is empty."""
        if not self.row_count:
            return None
        row_key, _ = self.coordinate_to_cell_key(self.cursor_coordinate)
        return row_key.value

    def sync(self, rows: Iterable[Row]) -> bool:
        """Make the table show exactly `rows`; returns True when anything changed."""
        selected = self.selected_key
        wanted = {row.key: row for row in rows}
        changed = False
        resort = False
        for key in [key for key in self._cells if key not in wanted]:
            self.remove_row(key)
            del self._cells[key]
            del self._sort_values[key]
            changed = True
        sort_index = self._sort_index()
        for key, row in wanted.items():
            old = self._cells.get(key)
            if old is row.cells:
                continue
            if old is None:
                self.add_row(*row.cells, key=key)
                resort = True
            elif old != row.cells:
                for column, before, after in zip(self._columns, old, row.cells):
                    if before != after:
                        self.update_cell(key, column.key, after)
                if sort_index is not None and (
                    self._sort_values[key][sort_index] != row.sort_values[sort_index]
                ):
                    resort = True
            else:
                continue
            self._cells[key] = row.cells
            self._sort_values[key] = row.sort_values
            changed = True
        if resort:
            self._apply_sort()
        if changed:
            self._restore_selection(selected)
        return changed

    def sort_by(self, column_key: str) -> None:
        """Sort by `column_key`; asking again for the same column flips the direction."""
        if self.sort_column == column_key:
            self.sort_reverse = not self.sort_reverse
        else:
            self.sort_column = column_key
            self.sort_reverse = False
        selected = self.selected_key
        self._apply_sort()
        self._restore_selection(selected)

    def select_key(self, key: str) -> bool:
        """Move the cursor to the row `key`; False when no such row is shown."""
        if key not in self._cells:
            return False
        self.move_cursor(row=self.get_row_index(key))
        return True

    def _sort_index(self) -> int | None:
        if self.sort_column is None:
            return None
        return [column.key for column in self._columns].index(self.sort_column)

    def _apply_sort(self) -> None:
        index = self._sort_index()
        key_column = self._columns[0].key
        if index is None:
            self.sort(key_column, key=lambda key: key.plain if isinstance(key, Text) else key)
            return
        values = self._sort_values
        self.sort(
            key_column,
            key=lambda key: _sortable(values[key.plain if isinstance(key, Text) else key][index]),
            reverse=self.sort_reverse,
        )

    def _restore_selection(self, key: str | None) -> None:
        if key is not None and key in self._cells:
            self.move_cursor(row=self.get_row_index(key), scroll=False)


def _sortable(value: Any) -> tuple:
    """Numbers before text, None last in ascending order; mixed types never raise."""
    if value is None:
        return (2,)
    if isinstance(value, (int, float)):
        return (0, value)
    return (1, str(value).lower())
