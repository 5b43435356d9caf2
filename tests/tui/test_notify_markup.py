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


async def test_a_toast_is_one_line_whatever_the_name_it_quotes():
    # issue 33, a twelfth round: a toast quotes a Job's name as the control plane gave it ('job X stopped', a bulk
    # action's result per Job), and a line break in it forged a line of its own under the real one
    app = RlarkApp(None)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        app.screen.notify("job x\nall 3 done\u2028ok\u202e stopped", title="t\nforged")
        app.notify(["2 done", "x\ny: stopped", "z: stopped"])
        await pilot.pause()
        shown = [(n.message, n.title) for n in app._notifications]
        assert shown == [("job x\\nall 3 done\\u2028ok\\u202e stopped", "t\\nforged"),
                         ("2 done\nx\\ny: stopped\nz: stopped", "")]
