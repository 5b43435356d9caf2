"""Cluster text in a toast is never Textual markup (issue 33 item 4): a screen's `notify` (Textual's
Widget.notify asks for markup by default) reaches the app's toasts as plain text, so `[@click=app.quit]` in a
Job name or a log line is shown, not made an action."""

from __future__ import annotations

from rlark_tui.flow.messages import SnapshotChanged
from rlark_tui.screens.job_list import JobListScreen
from rlark_tui.text.sinks import one_line
from rlark_tui.tui.app import RlarkApp
from tests.pilot import drawn, press, wait_for

HOSTILE = "job [@click=app.quit]evil[/] [b]bold[/b] failed"


async def test_a_screens_notify_is_never_markup():
    app = RlarkApp(None)
    async with app.run_test(size=(100, 30)) as pilot:
        await drawn(pilot)
        assert isinstance(app.screen, JobListScreen)
        app.screen.notify(HOSTILE, title="[@click=app.quit]t[/]")
        app.notify(HOSTILE, markup=True)
        await drawn(pilot)
        shown = list(app._notifications)
        assert [(n.message, n.markup) for n in shown] == [(HOSTILE, False), (HOSTILE, False)]
        assert shown[0].title == "[@click=app.quit]t[/]" and app.is_running


async def test_a_toast_is_one_line_whatever_the_name_it_quotes():
    # issue 33, a twelfth round: a toast quotes a Job's name as the control plane gave it ('job X stopped', a bulk
    # action's result per Job), and a line break in it forged a line of its own under the real one
    app = RlarkApp(None)
    async with app.run_test(size=(100, 30)) as pilot:
        await drawn(pilot)
        app.screen.notify("job x\nall 3 done\u2028ok\u202e stopped", title="t\nforged")
        app.notify(["2 done", "x\ny: stopped", "z: stopped"])
        await drawn(pilot)
        shown = [(n.message, n.title) for n in app._notifications]
        assert shown == [("job x\\nall 3 done\\u2028ok\\u202e stopped", "t\\nforged"),
                         ("2 done\nx\\ny: stopped\nz: stopped", "")]


async def test_a_bulk_actions_toast_of_5000_jobs_is_a_few_lines_its_failures_first():
    # issue 33: a bulk stop of 5,000 marked Jobs of long names said one line per Job, a toast of 5,000 lines laid
    # out over the whole screen; it shows the first lines, its failures before the rest, and counts the others
    from rlark_tui.tui.app import TOAST_LINES

    app = RlarkApp(None)
    names = [f"job-{n:04}-{'x' * 240}" for n in range(5000)]
    async with app.run_test(size=(100, 30)) as pilot:
        await drawn(pilot)
        app._bulk_done([(name, f"FAILED stop {name}: forbidden" if n == 4321 else f"job {name} stopped")
                        for n, name in enumerate(names)], [names[4321]])
        await drawn(pilot)
        (toast,) = [n.message.split("\n") for n in app._notifications]
    assert len(toast) == TOAST_LINES
    assert toast[0] == "4999 done, 1 failed" and toast[1].startswith("FAILED stop job-4321-")
    assert toast[-1] == f"… and {5001 - TOAST_LINES + 1:,} more lines"


async def test_a_palette_hit_is_the_job_name_as_text_whatever_markup_it_holds():
    """Issue 33, a twenty-third round (Textual markup, by generated Job names from a hostile control plane): a hit
    of the command palette was laid out by Textual's Matcher.highlight, which reads the entry as markup, and
    textual.markup.escape (Rich's rule) leaves Textual's own tags: `[ @click=app.quit]` was a click action on the
    hit, `[B]` and `[$accent]` styled it, and `["@click=app.quit"]` raised MarkupError out of the palette's search
    (a crash report). Each hit is the entry as plain text, the letters typed highlighted."""
    from tui_factories import build_snapshot, job_dict

    names = ["m[ @click=app.quit]q[/]", 'm["@click=app.quit"]x', "m[B]b[/B]", "m[$accent]a", "m[\t@click=app.bell]t"]
    app = RlarkApp(None)
    async with app.run_test(size=(120, 40)) as pilot:
        app.post_message(SnapshotChanged(build_snapshot([job_dict(name) for name in names])))
        await drawn(pilot)
        await press(pilot, "ctrl+p")
        options = app.screen.query_one("CommandList")
        await press(pilot, *"open m")
        palette = app.screen
        await wait_for(pilot, lambda: options.option_count >= len(names) and not [
            worker for worker in app.workers if worker.node is palette and not worker.is_finished],
            "the palette's hits of 'open m'", timeout=20)
        prompts = [options.get_option_at_index(i).prompt for i in range(options.option_count)]
        assert app.is_running
    assert sorted(prompt.plain.split("\n")[0] for prompt in prompts) == sorted(f"Open {one_line(name)}" for name in names)
    assert not [span.style for prompt in prompts for span in prompt.spans if "@" in str(span.style)], prompts
