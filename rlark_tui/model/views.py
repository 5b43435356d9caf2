"""View settings kept per kubeconfig context (issue 36 item 6): each table's sort, wide columns and last filter, and
the theme. Pure: the shape, how it is written (JSON) and how a file is read back; a file not in this shape is a
ValueError (local/config.py turns it into one line and the defaults). local/config.py reads and writes the file."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType

from rlark_tui.text.parse import load_json

VERSION = 1
MAX_FILTER_CHARS = 500
MAX_TABLES = 64
_NAME = re.compile(r"[a-z0-9][a-z0-9_-]{0,63}")
"""A table's, column's or theme's name as rlark writes them."""


@dataclass(frozen=True)
class TableView:
    """How one table is shown: sorted by `sort` ('' : its own order), wide (no column narrows or hides; the rest
    scrolls sideways) and filtered by `filter`."""

    sort: str = ""
    reverse: bool = False
    wide: bool = False
    filter: str = ""


@dataclass(frozen=True)
class ViewSettings:
    """A context's view settings: per table name (`jobs`, `nodes`, …) its TableView, and the theme ('': the
    config file's or the default)."""

    theme: str = ""
    tables: Mapping[str, TableView] = field(default_factory=lambda: MappingProxyType({}))

    def table(self, name: str) -> TableView:
        return self.tables.get(name, TableView())

    def with_table(self, name: str, view: TableView) -> ViewSettings:
        return replace(self, tables=MappingProxyType({**self.tables, name: view}))

    def with_theme(self, theme: str) -> ViewSettings:
        return replace(self, theme=theme)


def views_text(settings: ViewSettings) -> str:
    return json.dumps({"version": VERSION, "theme": settings.theme, "tables": {
        name: {"sort": view.sort, "reverse": view.reverse, "wide": view.wide, "filter": view.filter}
        for name, view in sorted(settings.tables.items())}}, indent=1, ensure_ascii=False) + "\n"


def _name(value: object, what: str) -> str:
    if value == "":
        return ""
    if not isinstance(value, str) or not _NAME.fullmatch(value):
        raise ValueError(f"{what} is not a name")
    return value


def _table(name: str, data: object) -> TableView:
    if not isinstance(data, dict):
        raise ValueError(f"table {name} is not a mapping")
    reverse, wide, text = data.get("reverse", False), data.get("wide", False), data.get("filter", "")
    if not isinstance(reverse, bool) or not isinstance(wide, bool):
        raise ValueError(f"table {name}: reverse and wide must be true or false")
    if not isinstance(text, str) or len(text) > MAX_FILTER_CHARS or not text.isprintable():
        raise ValueError(f"table {name}: the filter is not one line of at most {MAX_FILTER_CHARS} characters")
    return TableView(_name(data.get("sort", ""), f"table {name}'s sort column"), reverse, wide, text)


def parse_views(text: str) -> ViewSettings:
    """The settings a file holds; ValueError (one line) when it is not JSON in the shape `views_text` writes."""
    try:
        data = load_json(text)
    except ValueError as exc:
        raise ValueError(f"not JSON ({str(exc).splitlines()[0][:80]})") from None
    if not isinstance(data, dict) or data.get("version") != VERSION:
        raise ValueError(f"not a version {VERSION} view settings file")
    tables = data.get("tables", {})
    if not isinstance(tables, dict) or len(tables) > MAX_TABLES:
        raise ValueError(f"tables is not a mapping of at most {MAX_TABLES}")
    return ViewSettings(_name(data.get("theme", ""), "the theme"),
                        MappingProxyType({_name(name, "a table's name"): _table(name, view)
                                          for name, view in tables.items()}))
