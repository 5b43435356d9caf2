"""The log pane widget on its own, hosted in a tiny App.

Covers the bounded buffer as the view sees it, follow, wrap, timestamps, tabs, filter, search, errors.
"""

from __future__ import annotations

import gc

from textual.app import App, ComposeResult

from rlark_tui.widgets.filter_bar import make_matcher
from rlark_tui.widgets.log_pane import NOTICE, SEQ, STRIPS_KEPT, TEXT, LogBuffer, LogView, PendingLines


class LogApp(App):
    CSS = "LogView { height: 1fr; }"

    def __init__(self, capacity: int = 1000) -> None:
        super().__init__()
        self.buffer = LogBuffer(capacity)

    def compose(self) -> ComposeResult:
        yield LogView(self.buffer, PendingLines(1000), 0.1)

    def write(self, *texts: str, source: str = "actor/job-actor-0", stamp: str = "") -> None:
        view = self.query_one(LogView)
        view.add_lines([self.buffer.append(source, stamp, text) for text in texts])


def visible(app) -> list[str]:
    view = app.query_one(LogView)
    return [view.render_line(y).text.rstrip() for y in range(view.size.height)]


async def test_follow_shows_the_tail_and_scrolling_up_stops_following():
    app = LogApp()
    async with app.run_test(size=(80, 12)) as pilot:
        app.write(*[f"line {n}" for n in range(100)])
        await pilot.pause()
        view = app.query_one(LogView)
        assert visible(app)[-1] == "[actor/job-actor-0] line 99"
        await pilot.press("pageup")
        assert view.follow is False
        app.write("line 100")
        await pilot.pause()
        assert "[actor/job-actor-0] line 100" not in visible(app)
        assert view.new_below == 1
        await pilot.press("G")
        assert view.follow is True and view.new_below == 0
        assert visible(app)[-1] == "[actor/job-actor-0] line 100"


async def test_view_drops_what_the_ring_buffer_evicts():
    app = LogApp(capacity=50)
    async with app.run_test(size=(80, 12)) as pilot:
        app.write(*[f"line {n}" for n in range(120)])
        await pilot.pause()
        view = app.query_one(LogView)
        shown = [line[TEXT] for line in view.shown_lines]
        assert len(shown) == 50 and shown[0] == "line 70" and app.buffer.dropped == 70


async def test_wrap_splits_long_lines_and_timestamps_toggle():
    app = LogApp()
    async with app.run_test(size=(40, 10)) as pilot:
        app.write("x" * 100, stamp="2026-11-29T10:00:00.000000000Z")
        view = app.query_one(LogView)
        view.set_option(prefix=False)
        await pilot.pause()
        assert view.virtual_size.height == 1
        view.set_option(wrap=True)
        await pilot.pause()
        assert view.virtual_size.height == 3
        assert visible(app)[:3] == ["x" * 40, "x" * 40, "x" * 20]
        view.set_option(wrap=False, timestamps=True)
        await pilot.pause()
        assert visible(app)[0].startswith("2026-11-29T10:00:00.000000000Z xxx")
        app.write("2026-11-29 10:00:01,000\tINFO ray started")
        view.set_option(timestamps=False)
        await pilot.pause()
        assert "2026-11-29 10:00:01,000 INFO ray started" in visible(app)


async def test_filter_search_and_first_error():
    app = LogApp()
    async with app.run_test(size=(80, 10)) as pilot:
        app.write("start", "loading shard 1", "Traceback (most recent call last):", "loading shard 2",
                  *[f"step {n}" for n in range(40)])
        view = app.query_one(LogView)
        await pilot.pause()
        assert view.first_error()[TEXT] == "Traceback (most recent call last):"
        view.set_search(make_matcher("shard"))
        assert view.find(True)[TEXT] == "loading shard 2"
        assert view.find(True)[TEXT] == "loading shard 1"
        assert view.find(False)[TEXT] == "loading shard 2"
        view.set_option(line_filter=make_matcher("^step 1\\d$"))
        await pilot.pause()
        assert [line[TEXT] for line in view.shown_lines] == [f"step {n}" for n in range(10, 20)]


def test_buffer_extend_keeps_the_newest_lines_and_counts_the_rest():
    buffer = LogBuffer(5)
    buffer.append("a/p", "", "first")
    kept = buffer.extend([("a/p", "", f"x{n}", False) for n in range(7)])
    assert [line[TEXT] for line in kept] == ["x2", "x3", "x4", "x5", "x6"]
    assert [line[SEQ] for line in buffer] == [3, 4, 5, 6, 7] and buffer.dropped == 3
    kept = buffer.extend([("", "", "-- note", True)])
    assert kept[0][SEQ] == 8 and kept[0][NOTICE] and buffer.first_seq == 4 and buffer.dropped == 4


def test_pending_lines_skip_the_oldest_when_the_pane_falls_a_buffer_behind():
    pending = PendingLines(3)
    for n in range(5):
        pending.push("a/p", "", f"line {n}")
    assert pending.skipped == 2
    assert [text for _, _, text, _ in pending.take()] == ["line 2", "line 3", "line 4"]
    assert pending.take() == [] and len(pending) == 0
    pending.clear()
    assert pending.skipped == 0


async def test_rows_are_as_wide_as_the_widest_line_shown():
    app = LogApp()
    async with app.run_test(size=(40, 8)) as pilot:
        app.write("short", "a\tb", "x" * 70)
        await pilot.pause()
        view = app.query_one(LogView)
        assert view.virtual_size.width == len("[actor/job-actor-0] ") + 70
        view.scroll_to(x=view.max_scroll_x, animate=False, immediate=True)
        await pilot.pause()
        assert visible(app)[2] == "x" * view.size.width


async def test_the_pane_keeps_the_strips_of_a_few_screenfuls_drawn_and_draws_a_screenful_once():
    # Each strip kept holds the strips Textual derived from it (crop, offsets): 4,000 of them were 25 MB of the
    # pane's RSS following 10 Pods (bench/logs.py log_rss_mb), and 1,000 were 40,000 objects each full pass of the
    # cycle collector walked while a log flowed (a key's frame waited behind passes of up to 190 ms).
    app = LogApp(capacity=6000)
    async with app.run_test(size=(100, 50)) as pilot:
        app.write(*[f"line {n} " + "x" * 80 for n in range(5000)])
        await pilot.pause()
        view = app.query_one(LogView)
        for top in range(0, 5000, 50):
            view.scroll_to(y=top, animate=False, immediate=True)
            assert visible(app)[0].startswith(f"[actor/job-actor-0] line {top} ")
        assert len(view._cache) == STRIPS_KEPT
        gc.collect()
        tracked = len(gc.get_objects())
        view._cache.clear()
        gc.collect()
        assert tracked - len(gc.get_objects()) < 15_000
        for top in range(4900 - STRIPS_KEPT + 50, 4950, 50):
            view.scroll_to(y=top, animate=False, immediate=True)
            visible(app)
        drawn = []
        render_row = view._render_row
        view._render_row = lambda *args: drawn.append(args) or render_row(*args)
        view.scroll_to(y=4900, animate=False, immediate=True)
        assert visible(app)[0].startswith("[actor/job-actor-0] line 4900 ") and drawn == []


async def test_the_lines_and_rows_a_pane_holds_leave_the_cycle_collectors_view():
    # A log followed at 20,000 lines/s: were each line and its row tracked by the cycle collector (a named tuple is,
    # for ever), they reached its oldest generation at that rate, and a full pass of 70-400 ms held a key's frame
    # every second or so (bench tui's `/` on a log pane).
    app = LogApp(capacity=5000)
    async with app.run_test(size=(100, 20)) as pilot:
        view = app.query_one(LogView)
        view.add_lines(app.buffer.extend([("actor/p-0", "2026-12-07T10:00:00Z", f"line {n}", False)
                                          for n in range(5000)]))
        await pilot.pause()
        assert visible(app)[-1] == "[actor/p-0] line 4999"
        gc.collect()
        assert [gc.is_tracked(line) for line in app.buffer].count(True) == 0
        assert [gc.is_tracked(row) for row in view._rows].count(True) == 0
