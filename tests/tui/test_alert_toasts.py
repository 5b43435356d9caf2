"""Alert toasts (Pilot, Snapshots as the reconciler posts them): one toast for the new alerts of a round, at most
one alert toast on screen, info alerts never toast, and the user's own messages stay visible among them."""

from __future__ import annotations

import dataclasses
from types import MappingProxyType

from tui_factories import build_snapshot, job_dict

from rlark_tui.alerting import rules as A
from rlark_tui.flow.messages import SnapshotChanged
from rlark_tui.tui import app as app_module
from rlark_tui.tui.app import RlarkApp
from tests.pilot import drained, wait_for

SIZE = (120, 40)


def toasts(app) -> list[tuple[str, str]]:
    return [(n.title, n.message) for n in app._notifications]


def with_book(snapshot, book: A.Book):
    return dataclasses.replace(snapshot, alerts=MappingProxyType({A.ALL_KEY: A.AlertsState(book)}))


def restarted(pod: str) -> A.Finding:
    return A.Finding("pod-restarted", "demo-ppo", pod, f"Pod {pod} restarted (2 restarts, was 1)", "restartCount 1 -> 2")


async def test_one_toast_per_round_and_the_users_message_stays(post_snapshot, tmp_path, monkeypatch):
    monkeypatch.setenv("RLARK_STATE_DIR", str(tmp_path))
    monkeypatch.setattr(app_module, "ALERT_TOAST_SECONDS", 1.0)
    snapshot = build_snapshot([job_dict("demo-ppo")])
    app = RlarkApp(None)
    async with app.run_test(size=SIZE) as pilot:
        await post_snapshot(pilot, snapshot)
        app.notify("exited with code 5")
        finished = A.Finding("run-finished", "demo-ppo", "demo-ppo", "the run finished", "Global Step 40/40")
        round_one = A.step(A.Book(), A.merge([A.Evaluation(
            (finished, *(restarted(f"demo-ppo-actor-{i}") for i in range(5))))]), 1000.0)
        await post_snapshot(pilot, with_book(snapshot, round_one))
        shown = toasts(app)
        assert ("", "exited with code 5") in shown
        alert_toasts = [t for t in shown if "alert" in t[0] or "pod-restarted" in t[0]]
        assert alert_toasts == [("5 new alerts (5 warning)",
                                 "pod-restarted demo-ppo: Pod demo-ppo-actor-0 restarted (2 restarts, was 1) "
                                 "… see :alerts")]
        assert not any("finished" in message for _, message in shown)  # info alerts never toast

        crashed = A.Finding("run-crashed", "demo-ppo", "demo-ppo", "the run crashed: boom", "boom")
        round_two = A.step(round_one, A.merge([A.Evaluation((*round_one_findings(round_one), crashed))]), 1002.0)
        await post_snapshot(pilot, with_book(snapshot, round_two))
        assert len([t for t in toasts(app) if "alert" in t[0] or "run-crashed" in t[0]]) <= 1  # waits its turn
        assert ("", "exited with code 5") in toasts(app)
        await wait_for(pilot, lambda: ("critical run-crashed", "demo-ppo: the run crashed: boom") in toasts(app),
                       "the next round's alert in a toast of its own once the last one is gone", timeout=10)


def round_one_findings(book: A.Book) -> list[A.Finding]:
    """The findings that keep the first round's alerts firing."""
    return [A.Finding(a.rule, a.job, a.object, a.message, a.evidence) for a in book.alerts.values()]


async def test_the_alerts_view_says_what_the_rounds_could_not_read(post_snapshot, tmp_path, monkeypatch):
    """Issue 33: what an alert round could not read (a Header log, a data plane's pods) was kept in the published
    state and shown nowhere, and the reads between costly rounds dropped theirs: a Job whose log could not be read
    looked healthy. `:alerts` says the first, one line, and how many more."""
    from rlark_tui.screens.alerts import AlertsScreen
    from rlark_tui.view.alerts import not_read

    monkeypatch.setenv("RLARK_STATE_DIR", str(tmp_path))
    errors = ("demo-ppo: the log store said 503\nall green", "data plane rlark-gpu-a: pods not listed" + "x" * 2**20)
    snapshot = dataclasses.replace(build_snapshot([job_dict("demo-ppo")]),
                                   alerts=MappingProxyType({A.ALL_KEY: A.AlertsState(A.Book(), errors=errors)}))
    app = RlarkApp(None)
    async with app.run_test(size=SIZE) as pilot:
        await post_snapshot(pilot, snapshot)
        app.run_command("alerts")
        await wait_for(pilot, lambda: isinstance(app.screen, AlertsScreen) and app.screen.query("#alert-message")
                       and "not read" in str(app.screen.query_one("#alert-message").render()), "what was not read")
        said = str(app.screen.query_one("#alert-message").render())
    assert said == ("No alerts: every Job in scope looks healthy.\n"
                    "not read: demo-ppo: the log store said 503\\nall green (and 1 more)"), said
    assert not_read(A.AlertsState(A.Book(), errors=errors[::-1])).endswith(" more characters) (and 1 more)")


async def test_a_toast_of_a_100_kb_job_name_is_cut_plain_and_small(tmp_path, monkeypatch):
    """Issue 33 (the TUI with huge cluster text): a toast quotes a Job's name as the control plane gave it, and an
    alert of a Job named with 100 KB laid out a toast of 100,012 characters, over 1,800 rows high, over the whole
    screen for its 10 s (0.3 s of the UI thread). An alert's toast names the Job to sinks.NAME_CHARS and says what
    happened; every toast's lines are cut at sinks.FIELD_CHARS (App.notify, the one way to a toast), the rest
    counted, with no markup and no control character, as before."""
    from textual.widgets._toast import Toast

    from rlark_tui.text.sinks import FIELD_CHARS, NAME_CHARS

    monkeypatch.setenv("RLARK_STATE_DIR", str(tmp_path))
    name = ("[@click=app.quit]x[/]\x1b]52;c;aGk=\x07\n" + "中\u0301a b" * 25_000)[:100_000]
    snapshot = build_snapshot([job_dict("demo-ppo")])
    crashed = A.Finding("run-crashed", name, name, "the run crashed: boom", "boom")
    app = RlarkApp(None)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        app.post_message(SnapshotChanged(snapshot))
        book = A.step(A.Book(), A.merge([A.Evaluation((crashed,))]), 1000.0)
        app.post_message(SnapshotChanged(with_book(snapshot, book)))
        toast = await wait_for(pilot, lambda: next(iter(app.screen.query(Toast)), None), "the alert's toast")
        rows = toast.size.height
        app.notify([f"Job {name} is not in the current snapshot", "2 done"])
        await drained(app)
        shown = [n.message for n in app._notifications]
    assert shown[0].startswith("[@click=app.quit]x[/]\\n中") and len(shown[0]) < NAME_CHARS + 60, len(shown[0])
    assert shown[0].endswith(" more characters): the run crashed: boom"), shown[0][-60:]
    first, second = shown[1].split("\n")
    assert len(first) < FIELD_CHARS + 40 and first.endswith(" more characters)") and second == "2 done", shown[1][-60:]
    assert rows < SIZE[1] // 4, rows
