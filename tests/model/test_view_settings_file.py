"""model/views.py: the view settings file round-trips, and a file not in the shape rlark writes is one ValueError
line (the app then shows the default view)."""

from __future__ import annotations

import pytest

from rlark_tui.model.views import TableView, ViewSettings, parse_views, views_text


def test_round_trip():
    settings = ViewSettings().with_theme("textual-light").with_table("jobs", TableView("age", True, True, "^demo"))
    assert parse_views(views_text(settings)) == settings
    assert parse_views(views_text(settings)).table("nodes") == TableView()


@pytest.mark.parametrize("text", [
    "", "{", "[]", '{"version": 2}', '{"version": 1, "theme": "../../x"}',
    '{"version": 1, "tables": {"jobs": {"filter": "a\\nb"}}}',
    '{"version": 1, "tables": {"jobs": {"wide": "yes"}}}',
    '{"version": 1, "tables": {"jobs": {"sort": "$(x)"}}}',
    '{"version": 1, "tables": {"jobs": {"filter": "' + "x" * 501 + '"}}}',
    '{"version": 1, "tables": {"Jobs;": {}}}',
])
def test_a_file_not_in_shape_is_one_line(text):
    with pytest.raises(ValueError) as caught:
        parse_views(text)
    assert "\n" not in str(caught.value)
