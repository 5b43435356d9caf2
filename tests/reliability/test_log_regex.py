"""A catastrophic regex typed into the log pane's `&` line filter or `/` search must not freeze the UI.

`(a+)+$` on a long line of `a`s backtracks for minutes; the pane gives a pattern PATTERN_SECONDS per line, then
drops it and says "pattern too slow", and the keys keep working. No cluster needed.
"""

from __future__ import annotations

import time

import pytest

from rlark_tui.screens.logs import LogScreen
from rlark_tui.tui.app import RlarkApp
from rlark_tui.widgets import log_pane
from tests.pilot import wait_for

SLOW = "(a+)+$"
LINE = "a" * 20_000 + "!"


def status(app) -> str:
    found = app.screen.query("#log-status")
    return str(found.first().render()) if found else ""


@pytest.mark.parametrize("key", ["ampersand", "slash"])
async def test_a_catastrophic_pattern_is_dropped_as_too_slow_and_keys_keep_working(key, monkeypatch):
    """The pass over the pane's three lines stops the pattern at its shared bound, a quarter of
    log_pane.PASS_SECONDS here (each pass spent half a second of this test's CPU): a pattern that ran unbounded
    backtracks for minutes all the same."""
    monkeypatch.setattr(log_pane, "PASS_SECONDS", log_pane.PASS_SECONDS / 4)
    app = RlarkApp(None)
    async with app.run_test(size=(120, 30)) as pilot:
        screen = LogScreen("slow-job")
        app.push_screen(screen)
        await wait_for(pilot, lambda: "follow on" in status(app), "the pane")
        screen._push("actor/slow-job-actor-0", "", "step 1 ok")
        screen._push("actor/slow-job-actor-0", "", LINE)
        await wait_for(pilot, lambda: len(screen.buffer) >= 3, "the lines in the pane")
        started = time.process_time()  # CPU, not wall time: a loaded machine stretches the second, not the work
        await pilot.press(key, *SLOW)
        await wait_for(pilot, lambda: "pattern too slow" in status(app), "the too-slow notice", timeout=10)
        await pilot.press("enter", "w")
        await wait_for(pilot, lambda: "wrap on" in status(app), "the wrap key answered")
        assert time.process_time() - started < 5, "the pane spent its time in the pattern"
        assert f"pattern too slow: {SLOW!r}" in status(app)
        assert any(line[log_pane.TEXT] == LINE for line in screen.view.shown_lines), "the filter is off: every line shows"


LINES = 400
SLOWISH = "error.*timeout"
"""A search a user types: on a line of 8,000 characters of `error ` it spends ~20 ms, under the per-line bound."""


@pytest.mark.parametrize("bar", ["#log-search", "#log-filter"])
async def test_a_pattern_just_under_the_line_bound_on_every_line_holds_the_keys_at_most_a_second(bar, monkeypatch):
    """A Job's log of many long lines each a little slow for an ordinary search: the pass over all of them (the
    search's find, the filter's rebuild) shares one bound, so the keys do not wait out the per-line bound times
    the lines (400 x 20 ms here; 20,000 lines held). The pass's bound is an eighth of log_pane.PASS_SECONDS here
    (62 ms, three lines' searches): 8 s of lines' own bounds or 2 s of a pass's are told apart all the same."""
    monkeypatch.setattr(log_pane, "PASS_SECONDS", log_pane.PASS_SECONDS / 8)
    app = RlarkApp(None)
    async with app.run_test(size=(120, 30)) as pilot:
        screen = LogScreen("slowish-job")
        app.push_screen(screen)
        await wait_for(pilot, lambda: "follow on" in status(app), "the pane")
        for _ in range(LINES):
            screen._push("actor/slowish-job-actor-0", "", "error " * 1_333)
        await wait_for(pilot, lambda: len(screen.buffer) >= LINES, "the lines in the pane")
        started = time.process_time()
        app.screen.query_one(bar).value = SLOWISH  # as a paste types it: one change
        await wait_for(pilot, lambda: "pattern too slow" in status(app), "the too-slow notice", timeout=30)
        assert time.process_time() - started < 2, "the keys waited out every line's bound"
