"""Cluster text in a toast is never Textual markup (issue 33 item 4): a screen's `notify` (Textual's
Widget.notify asks for markup by default) reaches the app's toasts as plain text, so `[@click=app.quit]` in a
Job name or a log line is shown, not made an action."""

from __future__ import annotations

from rlark_tui.screens.job_list import JobListScreen
from rlark_tui.tui.app import RlarkApp

HOSTILE = "job [@click=app.quit]evil[/] [b]bold[/b] failed"


async def test_a_screens_notify_is_never_markup():
    app = RlarkApp(None)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        assert isinstance(app.screen, JobListScreen)
        app.screen.notify(HOSTILE, title="[@click=app.quit]t[/]")
        app.notify(HOSTILE, markup=True)
        await pilot.pause()
        shown = list(app._notifications)
        assert [(n.message, n.markup) for n in shown] == [(HOSTILE, False), (HOSTILE, False)]
        assert shown[0].title == "[@click=app.quit]t[/]" and app.is_running
