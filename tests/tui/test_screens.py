"""Pilot tests of every screen fed with Snapshots (the reconciler's messages), no cluster needed.

What is asserted is what a user sees: table cells, tree lines, header text, dialogs, notifications.
"""

from __future__ import annotations

from datetime import UTC

import pytest
from textual import events
from tui_factories import ROLES, build_snapshot, job_dict, pod_dict

from rlark_tui.screens.confirm import ConfirmScreen
from rlark_tui.screens.help import HelpScreen
from rlark_tui.screens.job_detail import JobDetailScreen
from rlark_tui.screens.job_list import JobListScreen
from rlark_tui.screens.logs import LogScreen
from rlark_tui.screens.nodes import NodeListScreen
from rlark_tui.tui.app import RlarkApp
from rlark_tui.widgets.filter_bar import FilterBar
from rlark_tui.widgets.log_pane import TEXT
from rlark_tui.widgets.status_header import StatusHeader
from rlark_tui.widgets.workers import MESSAGE_CHARS, WorkersTree
from tests.pilot import drained, key_event, press, wait_for

SIZE = (120, 40)


def table_rows(app) -> list[list[str]]:
    table = app.screen.table
    return [[getattr(c, "plain", c) for c in table.get_row_at(i)] for i in range(table.row_count)]


def footer_keys(app) -> set[str]:
    return {active.binding.action for active in app.screen.active_bindings.values()
            if active.binding.show and app.screen.check_action(active.binding.action, ())}


def notifications(app) -> list[str]:
    return [n.message for n in app._notifications]


async def test_list_shows_job_columns_and_header_state(post_snapshot):
    app = RlarkApp(None)
    async with app.run_test(size=SIZE) as pilot:
        message = app.screen.query_one("#job-list-message").render()
        assert "Connecting" in str(message)
        await post_snapshot(pilot, build_snapshot([job_dict("demo-ppo", display="PPO demo")]))
        (row,) = table_rows(app)
        assert row[:8] == ["demo-ppo", "PPO demo", "RL", "Running", "Actor, Rollout, Environment", "3/3", "-",
                           "gpu-a1"]  # no GPU% sampled yet
        assert row[8:10] == ["", ""] and row[10].endswith(("s", "m", "h", "d"))  # no REASON or PROGRESS polled yet
        header = app.screen.query_one(StatusHeader).summary()
        assert "control plane connected" in header


async def test_ages_in_view_move_with_the_clock_and_rows_coming_into_view_show_theirs(post_snapshot, monkeypatch):
    from datetime import datetime, timedelta

    from rlark_tui.screens import job_list

    clock = {"now": datetime(2026, 11, 29, 10, 0, 30, tzinfo=UTC)}

    class Clock(datetime):
        @classmethod
        def now(cls, tz=None):
            return clock["now"]

    monkeypatch.setattr(job_list, "datetime", Clock)
    app = RlarkApp(None)
    async with app.run_test(size=SIZE) as pilot:
        await post_snapshot(pilot, build_snapshot([job_dict(f"job-{n:03d}") for n in range(200)]))
        table = app.screen.table
        assert table_rows(app)[0][-1] == "30s" and table_rows(app)[-1][-1] == "30s"
        clock["now"] += timedelta(minutes=10)
        await wait_for(pilot, lambda: table_rows(app)[0][-1] == "10m", "the age of the first row moved on")
        await press(pilot, "G")
        await wait_for(pilot, lambda: "job-199" in table.visible_keys, "the last row in view")
        await wait_for(pilot, lambda: all(table_rows(app)[table.get_row_index(name)][-1] == "10m"
                                          for name in table.visible_keys), "the ages of the rows now in view")


async def test_selection_stays_on_the_same_job_across_updates_and_sorting(post_snapshot):
    app = RlarkApp(None)
    async with app.run_test(size=SIZE) as pilot:
        jobs = [job_dict(f"job-{n:02d}") for n in range(30)]
        await post_snapshot(pilot, build_snapshot(jobs))
        table = app.screen.table
        table.move_cursor(row=20)
        await pilot.pause()
        assert table.selected_key == "job-20"
        scroll_before = table.scroll_y
        # a new job sorting before it, a removed one, and a phase change: cells update in place
        changed = [job_dict("job-00a")] + jobs[1:20] + [job_dict("job-20", phase="Pending")] + jobs[21:]
        await post_snapshot(pilot, build_snapshot(changed))
        assert table.selected_key == "job-20"
        assert table_rows(app)[table.cursor_row][3] == "Pending"
        assert table.scroll_y == scroll_before
        await press(pilot, "S")
        assert table.selected_key == "job-20"
        await press(pilot, "N")
        await press(pilot, "N")
        assert table_rows(app)[0][0] == "job-29"
        assert table.selected_key == "job-20"


async def test_filter_substring_regex_and_invalid_regex(post_snapshot):
    app = RlarkApp(None)
    async with app.run_test(size=SIZE) as pilot:
        await post_snapshot(pilot, build_snapshot([job_dict("demo-ppo"), job_dict("demo-sac"),
                                                   job_dict("eval-x", phase="Pending")]))
        await press(pilot, "slash", *"pending")
        assert [r[0] for r in table_rows(app)] == ["eval-x"]
        await press(pilot, "ctrl+u", *"^demo-(ppo|sac)$")
        assert [r[0] for r in table_rows(app)] == ["demo-ppo", "demo-sac"]
        await press(pilot, "ctrl+u", *"demo-[")
        await pilot.pause()
        assert table_rows(app) == []
        message = str(app.screen.query_one("#job-list-message").render())
        assert "invalid regex" in message
        await press(pilot, "escape")
        assert len(table_rows(app)) == 3


async def test_a_filter_keystroke_lays_out_nothing(post_snapshot):
    # Input sets its virtual size to its text's width at every key; as Widget declares it, that laid out the whole
    # screen again: over 5,000 Jobs a filter key cost the UI thread twice its CPU (bench tui's filter phase).
    app = RlarkApp(None)
    async with app.run_test(size=SIZE) as pilot:
        await post_snapshot(pilot, build_snapshot([job_dict("demo-ppo"), job_dict("demo-sac"), job_dict("loadgen")]))
        await press(pilot, "slash")
        layouts: list[object] = []
        app.screen.screen_layout_refresh_signal.subscribe(app.screen, layouts.append)
        await press(pilot, *"demo-p")
        assert [r[0] for r in table_rows(app)] == ["demo-ppo"]
        await press(pilot, "backspace")
        assert [r[0] for r in table_rows(app)] == ["demo-ppo", "demo-sac"]
        assert app.screen.query_one(FilterBar).virtual_size.width == len("demo-") + 1  # the bar still scrolls by it
        assert layouts == []


async def test_keys_read_in_one_burst_go_where_the_keys_before_them_left_the_focus(post_snapshot):
    # A paste, a slow tmux link or a loaded machine hands the app every key of a read at once; Textual sent each to
    # the widget focused as it took it, before `/` had opened the filter bar, so the list's bindings ran the
    # pattern: `s` asked to stop a Job, `n` opened the create wizard.
    app = RlarkApp(None)
    async with app.run_test(size=SIZE) as pilot:
        await post_snapshot(pilot, build_snapshot([job_dict("demo-ppo"), job_dict("demo-sac"), job_dict("loadgen")]))

        async def burst(*keys: str) -> None:
            for key in keys:
                app.post_message(key_event(key))
            if keys[-1] != "slash":
                await drained(app)

        await burst("slash", *"^(loadgen|demo-sac)$")
        assert isinstance(app.screen, JobListScreen) and isinstance(app.focused, FilterBar)
        assert app.focused.value == "^(loadgen|demo-sac)$"
        assert [r[0] for r in table_rows(app)] == ["demo-sac", "loadgen"]
        await burst("escape", "colon", *"nodes", "enter")
        assert isinstance(app.screen, NodeListScreen)
        await burst("escape", "slash", *"ppo", "enter", "question_mark")  # the key after enter is the list's again
        assert isinstance(app.screen, HelpScreen)
        assert app.screen_stack[-2].query_one(FilterBar).value == "ppo"
        await burst("escape", "slash")  # `/` and a paste (the terminal's bracketed paste) read together
        app.post_message(events.Paste("|loadgen"))
        await drained(app)
        assert isinstance(app.focused, FilterBar) and app.focused.value == "|loadgen"  # it took the focus: all selected


async def test_a_key_read_alone_goes_where_the_key_before_it_left_the_focus_though_that_is_not_done(post_snapshot):
    # Keys read one at a time settle only when they need to: a key read once the one before it reached its binding,
    # while what that binding set off is still queued (enter submits the filter bar, whose Submitted gives the focus
    # back to the list), settles first as a waiting key would. `?` goes to the list (help), not into the bar.
    import asyncio

    app = RlarkApp(None)
    async with app.run_test(size=SIZE) as pilot:
        await post_snapshot(pilot, build_snapshot([job_dict("demo-ppo"), job_dict("demo-sac"), job_dict("loadgen")]))
        await press(pilot, "slash", *"ppo")
        assert isinstance(app.focused, FilterBar)
        app.post_message(key_event("enter"))
        while app.message_queue_size or not app._key_unsettled:
            await asyncio.sleep(0)
        assert isinstance(app.focused, FilterBar)  # the key was handled; the focus change it asked for is not made
        app.post_message(key_event("question_mark"))
        await drained(app)
        assert isinstance(app.screen, HelpScreen)
        assert app.screen_stack[-2].query_one(FilterBar).value == "ppo"


async def test_a_key_read_long_after_a_lost_one_still_goes_on_a_slow_machine(post_snapshot, monkeypatch):
    # The key ahead of `j` is lost on its way (escape closes the help screen it went to, so the note behind it is
    # never read), and `j` was read after that key's KEY_WAIT had run out (a loaded machine: each look at the clock
    # here is a second later). The key order asked Textual for a timer of 0 s, whose first late tick divides by its
    # interval: the timer died, `j` and every key after it waited for good, and quitting printed a traceback.
    from types import SimpleNamespace

    from rlark_tui.tui import keyorder

    clock = SimpleNamespace(now=1000.0)

    def monotonic() -> float:
        clock.now += 1.0
        return clock.now

    app = RlarkApp(None)
    async with app.run_test(size=SIZE) as pilot:
        await post_snapshot(pilot, build_snapshot([job_dict("demo-ppo"), job_dict("demo-sac"), job_dict("loadgen")]))
        await press(pilot, "question_mark")
        assert isinstance(app.screen, HelpScreen)
        monkeypatch.setattr(keyorder, "time", SimpleNamespace(monotonic=monotonic))
        for key in ("escape", "j"):
            app.post_message(key_event(key))
        await wait_for(pilot, lambda: isinstance(app.screen, JobListScreen)
                       and app.screen.table.cursor_row == 1, "j on the list", timeout=5)


async def test_a_pasted_100_kb_filter_is_cut_said_in_the_bar_and_keys_after_it_cost_little(post_snapshot):
    """Issue 33 (the TUI with huge cluster text): a 100,000-character paste into the filter bar (a log line, a
    Job's 100 KB field copied) held it whole, and Textual's input measures its whole value at each key, so each
    key after it cost the UI thread 0.3-0.7 s. The bar keeps its first sinks.FIELD_CHARS characters and the list
    says the rest was left out."""
    import time

    from rlark_tui.text.sinks import FIELD_CHARS

    long = ("中\u0301a b" * 25_000)[:100_000]
    app = RlarkApp(None)
    async with app.run_test(size=SIZE) as pilot:
        await post_snapshot(pilot, build_snapshot([job_dict("demo-ppo"), job_dict("loadgen")]))
        await press(pilot, "slash")
        app.post_message(events.Paste(long))
        await drained(app)
        bar = app.screen.query_one(FilterBar)
        started = time.thread_time()
        await press(pilot, "x", "y", "z")
        typed = time.thread_time() - started
        value = bar.value
        message = str(app.screen.query_one("#job-list-message").render())
    assert value == long[:FIELD_CHARS], len(value)
    assert f"filter: only its first {FIELD_CHARS:,} characters are kept" in message, message[-300:]
    assert typed < 0.3, typed


async def test_empty_and_control_plane_error_states(post_snapshot):
    app = RlarkApp(None)
    async with app.run_test(size=SIZE) as pilot:
        await post_snapshot(pilot, build_snapshot([]))
        assert "No Jobs in context" in str(app.screen.query_one("#job-list-message").render())
        await post_snapshot(pilot, build_snapshot([], control="disconnected", reason="connection refused"))
        assert "Cannot list Jobs from the control plane: connection refused" in str(
            app.screen.query_one("#job-list-message").render())
        assert "control plane disconnected (connection refused)" in app.screen.query_one(StatusHeader).summary()


async def test_enter_opens_workers_with_pods_and_esc_goes_back(post_snapshot):
    app = RlarkApp(None)
    async with app.run_test(size=SIZE) as pilot:
        await post_snapshot(pilot, build_snapshot([job_dict("demo-ppo")]))
        await press(pilot, "enter")
        assert isinstance(app.screen, JobDetailScreen)
        text = app.screen.query_one(WorkersTree).shown_text()
        for pod, node, ip in (("demo-ppo-actor-0", "gpu-a1", "10.0.0.1"), ("demo-ppo-rollout-0", "gpu-a2", "10.0.0.2"),
                              ("demo-ppo-env-0", "edge-b1", "10.0.0.3")):
            assert any(pod in line and node in line and ip in line for line in text.splitlines())
        assert "demo-ppo-actor (Actor)  [Header]  Pods 1/1" in text
        tree = app.screen.query_one(WorkersTree)
        tree.cursor_line = 2
        await press(pilot, "enter")
        assert isinstance(app.screen, LogScreen)
        assert app.screen.scope == ("pod", "rlark-gpu-a/uid-demo-ppo-actor-0")
        await press(pilot, "escape", "escape")
        assert isinstance(app.screen, JobListScreen)


async def test_workers_without_pods_say_waiting_for_task_sync_then_fill_in_place(post_snapshot):
    app = RlarkApp(None)
    async with app.run_test(size=SIZE) as pilot:
        await post_snapshot(pilot, build_snapshot([job_dict("demo-ppo", phase="Pending")], with_pods=False))
        await press(pilot, "enter")
        tree = app.screen.query_one(WorkersTree)
        assert tree.shown_text().count("No Pod details yet — waiting for task sync") == 3
        await post_snapshot(pilot, build_snapshot([job_dict("demo-ppo")]))
        assert "waiting for task sync" not in tree.shown_text()
        assert "gpu-a2" in tree.shown_text()


async def test_the_workers_of_many_roles_show_the_first_and_keep_the_selected_one(post_snapshot, monkeypatch):
    """Issue 33 (a tenth round, a Job author's many tasks): the Workers tree held every role and Pod, and the Job
    detail derived all of them at each change of the Job while it was open: 3,000 tasks were 0.3 s of the UI
    thread's CPU each time, 2.3 s to open, many times that in wall time on a loaded machine. The tree shows the first
    MAX_ROLES_SHOWN roles (3 here) with their first MAX_PODS_SHOWN Pods (2 here), counts the rest in one line each,
    and keeps the selected role when others come before it; the Events tab shows the first MAX_ROLES_SHOWN Tasks',
    EVENT_LINES (4 here) events in all, and the Overview a role's first MAX_ITEMS (1 here) env entries; a role's
    message is cut at MESSAGE_CHARS."""
    import dataclasses

    from rlark_tui.screens import job_detail

    monkeypatch.setattr(job_detail, "MAX_ROLES_SHOWN", 3)
    monkeypatch.setattr(job_detail, "MAX_PODS_SHOWN", 2)
    monkeypatch.setattr(job_detail, "EVENT_LINES", 4)
    monkeypatch.setattr(job_detail, "MAX_ITEMS", 1)

    def snapshot(names: list[str], version: str):
        roles = tuple((name, name.upper(), name.upper(), "gpu-a1", "") for name in names)
        job = job_dict("big", roles=roles, env_extra=({"name": "A", "value": "1"}, {"name": "B", "value": "2"}))
        job["metadata"]["resourceVersion"] = version
        built = build_snapshot([job])
        for task in built.tasks.values():
            if task["spec"]["name"] in ("t3", "t4", "t5", "t6", "t7"):
                task["status"]["events"] = [{"type": "Warning", "reason": "FailedScheduling", "message": "0/2 nodes"}]
            if task["spec"]["name"] == "t4":
                task["status"]["events"] *= 4
            if task["spec"]["name"] == "t0":
                task["status"]["message"] = "x" * 5_000
        more = {f"rlark-gpu-a/uid-big-t1-{n}": pod_dict("big", "t1", "rlark-gpu-a", "gpu-a1", f"10.0.1.{n}",
                                                         ordinal=n) for n in (1, 2, 3)}
        return dataclasses.replace(built, pods={**built.pods, **more})

    first = [f"t{i}" for i in range(10)]
    app = RlarkApp(None)
    async with app.run_test(size=SIZE) as pilot:
        await post_snapshot(pilot, snapshot(first, "1"))
        await press(pilot, "enter")
        tree = app.screen.query_one(WorkersTree)
        lines = tree.shown_text().splitlines()
        assert [line.split()[0] for line in lines if "  Pods " in line] == ["big-t0", "big-t1", "big-t2"]
        assert lines[0].endswith("Running  in rlark-gpu-a — " + "x" * MESSAGE_CHARS + "…")
        assert "big-t1 (T1)  Pods 4/1  running 4" in tree.shown_text()
        assert "… 2 more Pods (the first 2 shown)" in lines and "big-t1-2" not in tree.shown_text()
        assert lines[-1] == "… 7 more roles (the first 3 shown; rlark describe job big shows every one)"
        overview = str(app.screen.query_one("#overview-text").render())
        assert "  Env: RLARK_TASK_ROLE=T0, … 2 more (Y copies the YAML)" in overview and "B=2" not in overview
        await press(pilot, "e")
        events = str(app.screen.query_one("#events-text").render())
        assert [line.split()[1] for line in events.splitlines() if line.startswith("Task ")] == ["big-t3", "big-t4"]
        assert "  … 1 more events (the first 3 shown)" in events
        assert events.rstrip().endswith("… 3 more Tasks with events or image pulls (the first 2 shown; rlark "
                                        "describe job big shows every one)")
        await press(pilot, "w")
        tree.cursor_line = next(n for n, line in enumerate(lines) if line.startswith("big-t2-0 "))
        await post_snapshot(pilot, snapshot([f"n{i}" for i in range(6)] + first, "2"))
        shown = tree.shown_text()
        assert "big-n2 (N2)" in shown and "big-t0 (T0)" not in shown and "big-t2 (T2)" in shown
        assert shown.splitlines()[-1] == "… 12 more roles (the first 3 shown; rlark describe job big shows every one)"
        await press(pilot, "l")
        assert isinstance(app.screen, LogScreen)
        assert app.screen.scope == ("pod", "rlark-edge-b/uid-big-t2-0")


async def test_overview_and_yaml_mask_secrets_and_a_long_yaml_keeps_the_tab_responsive(post_snapshot, monkeypatch):
    """And a Job author's 21,000 small annotation keys (within the 256 KiB limit) were dumped, highlighted and laid
    out on the UI thread at every change of the Job while its YAML tab was open: 2.5 s in which no key was handled.
    The app makes the YAML on a worker (held here until a key has been handled), the tab lays out its first
    YAML_LINES lines and counts the rest, and `Y` still copies the whole YAML. So does the Overview: a Job of 3,000
    tasks was 100,000 lines of it, 4.6-5.9 s at each change; it details MAX_ROLES_SHOWN roles and a script's first
    MAX_SCRIPT_LINES lines.

    Issue 33, an eighteenth round (secrets in another shape, in the Job detail): an env entry of a secret-looking
    name (API_KEY) was masked in its Env field, but the run script that echoes the same value showed it in the
    Overview, in the YAML tab and in what `Y` copied as 'YAML (secrets redacted)'. The Job's secret env values
    (redact.secret_values) are masked in every text the detail shows, each line on its own.

    Issue 33, a secret renamed by a hostile control plane: the Job detail masked what the Job's own env names a
    secret, so a Job whose WANDB_API_KEY entry the control plane renamed `0` (its value as it was) showed the value
    in the Overview's Env field, the YAML tab and what `Y` copied, where the Task the Pods run from names it. Both
    are tried in this Job's detail (its API_KEY echoed by the run script, its entry `0` named by the actor's Task):
    each value is masked by its own mechanism."""
    import threading

    import yaml

    from rlark_tui.screens import job_detail
    from rlark_tui.view import yamltab

    held, made = threading.Event(), yamltab.job_yaml

    def job_yaml(raw, related=frozenset()):
        if raw["metadata"]["resourceVersion"] == "2":
            assert held.wait(30), "the second version's YAML was made before the key was handled"
        return made(raw, related)

    monkeypatch.setattr(yamltab, "job_yaml", job_yaml)
    monkeypatch.setattr(job_detail, "MAX_ROLES_SHOWN", 2)  # a Job of thousands of tasks, in small
    monkeypatch.setattr(job_detail, "MAX_SCRIPT_LINES", 20)  # and of long scripts and YAML: a tenth of the app's
    monkeypatch.setattr(yamltab, "YAML_LINES", yamltab.YAML_LINES // 10)
    secret, renamed = "s3cr3tvalue123456", "zqRenamedKey8842x"
    job = job_dict("demo-ppo", env_extra=({"name": "WANDB_API_KEY", "value": "abc123supersecret"},
                                          {"name": "API_KEY", "value": secret + "\n"}, {"name": "0", "value": renamed}))
    job["metadata"]["annotations"] = {f"k{i}": "v" for i in range(200)}
    job["spec"]["tasks"][0]["runScript"] = f"curl -d {secret} http://x\npython train.py"
    job["spec"]["tasks"][1]["prepareScript"] = "\n".join(f"echo {i}" for i in range(100))

    def snapshot_of(job: dict):
        snapshot = build_snapshot([job])
        task = next(raw for raw in snapshot.tasks.values() if raw["metadata"]["name"] == "demo-ppo-actor")
        task["spec"]["kubernetes"]["workload"]["template"] = {"spec": {"containers": [
            {"name": "main", "env": [{"name": "WANDB_API_KEY", "value": renamed}]}]}}
        return snapshot

    def leaked(*texts: str) -> list[str]:
        return [text[text.find(value) - 40:][:80] for text in texts for value in (secret, renamed) if value in text]

    app = RlarkApp(None)
    async with app.run_test(size=SIZE) as pilot:
        await post_snapshot(pilot, snapshot_of(job))
        await press(pilot, "d")
        assert isinstance(app.screen, JobDetailScreen)
        overview = str(app.screen.query_one("#overview-text").render())
        assert "WANDB_API_KEY=***" in overview and "abc123supersecret" not in overview
        assert not leaked(overview), leaked(overview)
        assert "curl -d *** http://x" in overview and "0=***" in overview, overview
        assert "HF_TOKEN=***" in overview
        assert "Node selector: kubernetes.io/hostname=gpu-a1" in overview
        assert "… 80 more lines (the first 20 shown; Y copies the YAML)" in overview and "echo 20" not in overview
        assert overview.rstrip().endswith("… 1 more roles (the first 2 shown; rlark describe job shows every one)")
        await press(pilot, "y")
        assert app.screen.query_one("#job-tabs").active == "yaml"
        await wait_for(pilot, lambda: "k199: v" in app.screen.yaml_text, "the first version's YAML")
        assert "abc123supersecret" not in app.screen.yaml_text
        assert "value: '***'" in app.screen.yaml_text
        shown = str(app.screen.query_one("#yaml-text").render())
        assert f"more lines (the first {yamltab.YAML_LINES:,} shown; Y copies the whole YAML)" in shown
        assert len(shown.splitlines()) == yamltab.YAML_LINES + 1 and "k199" not in shown
        assert not leaked(shown, app.screen.yaml_text), leaked(shown, app.screen.yaml_text)
        assert "curl -d *** http://x" in app.screen.yaml_text
        job = {**job, "metadata": {**job["metadata"], "resourceVersion": "2", "annotations": {
            **job["metadata"]["annotations"], "k199": "changed"}}}
        await post_snapshot(pilot, snapshot_of(job))
        await press(pilot, "w")
        assert app.screen.query_one("#job-tabs").active == "workers"
        held.set()
        await wait_for(pilot, lambda: "k199: changed" in app.screen.yaml_text, "the second version's YAML")
        await press(pilot, "Y")
        assert app.clipboard == app.screen.yaml_text and "kind: Job" in app.clipboard
        assert "k199: changed" in app.clipboard and not leaked(app.clipboard), leaked(app.clipboard)
        assert yaml.safe_load(app.clipboard)["spec"]["tasks"][0]["runScript"] == "curl -d *** http://x\npython train.py"


async def test_events_and_ray_tabs_show_only_reported_values(post_snapshot):
    """And a Task of many events shows the first EVENT_LINES: 100,000 small events fit a Task's 1.5 MB, and each
    refresh of the Events tab laid all of them out on the UI thread (1.6 s to build 10 MB of text per refresh)."""
    from rlark_tui.screens.job_detail import EVENT_LINES

    ray = {"demo-ppo": {"alive_nodes": 2, "expected": 3, "status_text": "Active:\n 2 node_x", "jobs": [],
                        "error": None, "source": "Ray dashboard of demo-ppo"}}
    snapshot = build_snapshot([job_dict("demo-ppo"), job_dict("demo-zz-events")], ray=ray)
    task = next(t for t in snapshot.tasks.values() if t["metadata"]["name"].startswith("demo-zz-events-"))
    task["status"]["events"] = [{"type": "Warning", "reason": f"R{i}"} for i in range(5_000)]
    app = RlarkApp(None)
    async with app.run_test(size=SIZE) as pilot:
        await post_snapshot(pilot, snapshot)
        await press(pilot, "enter", "r")
        ray_text = str(app.screen.query_one("#ray-text").render())
        assert "Alive nodes: 2 of 3 expected" in ray_text
        assert "2 node_x" in ray_text
        await press(pilot, "e")
        assert "only while a Task is Pending" in str(app.screen.query_one("#events-text").render())
        await press(pilot, "escape", "down", "enter", "e")
        text = str(app.screen.query_one("#events-text").render())
        assert f"Warning R{EVENT_LINES - 1}: " in text and f"R{EVENT_LINES}:" not in text
        assert f"… {5_000 - EVENT_LINES:,} more events (the first {EVENT_LINES} shown)" in text


async def test_the_ray_and_events_tabs_keep_each_line_their_own_mask_ray_status_and_cost_little_at_each_poll(
        post_snapshot, monkeypatch):
    """Issue 33, a hostile Ray head's answer, three holes of the Ray tab tried in one answer (a tab opened once),
    and a hostile control plane's Task events in the same Job's Events tab:

    A twenty-first round, a secret planted in every string: the Ray tab masked the Job's secret env values in each
    field, but laid out `ray status` (the head's text) with only what looks like a secret masked, so the value of
    the Job's API_KEY in it was shown whole.

    A fourteenth round (Ray's jobs list is the Job's code's: a submission id is the submitter's text): a Ray job's
    id was the label of its field as it came, so 'raysubmit_1<LF>Alive nodes: 9 of 9 expected' forged the tab's
    first field under the real one, and each of 100 Ray jobs' 4 MB entrypoints was redacted and laid out at every
    change of the Job while the detail was open.

    A fourteenth round (`ray status`): the Ray tab laid out the whole text, 2,000 lines of any length (4 MB),
    redacted at each Ray poll while the detail was open, whichever tab was shown: 2.4 s of the UI thread each time.
    It shows RAY_STATUS_LINES lines of at most RAY_JOB_CHARS and counts the rest; a tenth of the app's lines here
    (20), as the cut, not the lines it keeps, is what the 4 MB cross.

    Issue 33, a seventeenth round (a hostile control plane's Task events): each event's type and reason, and
    each image pull's image, were the label of its field as they came, so a reason 'BackOff<LF>Phase: Succeeded'
    put a line of its own in the tab. A field's label is one line (sinks.one_line), as its value is."""
    import time

    from rlark_tui.screens import job_detail
    from rlark_tui.screens.job_detail import RAY_JOB_CHARS

    monkeypatch.setattr(job_detail, "RAY_STATUS_LINES", job_detail.RAY_STATUS_LINES // 10)
    RAY_STATUS_LINES = job_detail.RAY_STATUS_LINES
    secret = "hunter2-ray-status-value"
    job = job_dict("demo-ppo", env_extra=({"name": "API_KEY", "value": secret},))
    jobs = [{"submission_id": "raysubmit_1\nAlive nodes: 9 of 9 expected", "status": "RUNNING",
             "entrypoint": "python main.py " + "x" * (4 << 20)}]
    text = f"Active:\n 1 node_{secret}\n" + ("x" * 2000 + "\n") * 1998
    ray = {"demo-ppo": {"alive_nodes": 2, "expected": 3, "status_text": text, "jobs": jobs, "error": None,
                        "source": "Ray dashboard of demo-ppo", "polled_at": 0.0}}

    def snapshot():
        built = build_snapshot([job], ray=ray)
        task = next(iter(built.tasks.values()))
        task["status"]["events"] = [{"type": "Warning\u202e", "reason": "BackOff\nPhase: Succeeded", "message": "m"}]
        task["status"]["pullProgress"] = [{"image": "img\nPhase: Failed", "status": "Pulling"}]
        return built

    app = RlarkApp(None)
    async with app.run_test(size=SIZE) as pilot:
        await post_snapshot(pilot, snapshot())
        await press(pilot, "enter", "r")
        opened = str(app.screen.query_one("#ray-text").render())
        started = time.thread_time()
        ray["demo-ppo"]["polled_at"] = 1.0  # a poll's answer, the same text: 2.4 s against the bound's 0.6
        await post_snapshot(pilot, snapshot())
        await pilot.pause()
        spent = time.thread_time() - started
        shown = str(app.screen.query_one("#ray-text").render())
        await press(pilot, "e")
        events = str(app.screen.query_one("#events-text").render()).splitlines()
    assert not [line for line in events if line.lstrip().startswith("Phase") or "\u202e" in line], events
    assert "  Warning\\u202e BackOff\\nPhase: Succeeded: m  ( , )" in events, events
    assert "  Pulling img\\nPhase: Failed: Pulling" in events, events
    lines = opened.splitlines()
    assert secret not in opened and " 1 node_***" in lines, [line for line in lines if "node_" in line]
    assert [line for line in lines if line.startswith("Alive nodes")] == ["Alive nodes: 2 of 3 expected"], lines
    ray_job = next(line for line in lines if "raysubmit_1" in line)
    assert ray_job.startswith("  Ray job raysubmit_1\\nAlive nodes: 9 of 9 expected: RUNNING python main.py x")
    assert len(ray_job) < 2 * RAY_JOB_CHARS
    assert f"… {2000 - RAY_STATUS_LINES:,} more lines (the first {RAY_STATUS_LINES} shown)" in shown
    assert spent < 0.6, spent


def _job_of_100_kb_fields(name: str, long: str, roles=ROLES[:1]) -> dict:
    """A Job of one role (or `roles`) whose display name, annotations, env values (its role name too) and scripts
    are `long`."""
    job = job_dict(name, display=long, env_extra=({"name": "NOTE", "value": long},), roles=roles)
    job["metadata"]["annotations"].update({f"note-{i}": long for i in range(3)})
    for task in job["spec"]["tasks"]:
        task["kubernetes"]["workload"]["template"]["spec"]["containers"][0]["env"][0]["value"] = long
        task["prepareScript"] = long
        task["runScript"] = long
    return job


def _laid_out(screen) -> list[str]:
    """The lines of text every Static, Label and option of `screen` lays out (what Textual wraps and measures)."""
    from textual.widgets import OptionList, Static

    lines = [line for widget in screen.query(Static) for line in str(widget.render()).splitlines()]
    for options in screen.query(OptionList):
        lines += [str(options.get_option_at_index(i).prompt) for i in range(options.option_count)]
    return lines


async def test_jobs_of_100_kb_fields_cost_the_ui_thread_little_in_the_list_the_detail_and_its_yaml_tab(post_snapshot):
    """Issue 33, an eighteenth round (a Job author's long fields): 20 Jobs whose display name and role name (an
    annotation and an env value: any text) were 100 KB of wide and combining characters held the UI thread 17 s at
    the first list (each cell measured and cut whole), and opening one's detail 7 s (each field wrapped over hundreds
    of rows), again at each change of the Job. Table cells and the detail's fields are cut at sinks.FIELD_CHARS
    characters, the rest counted.

    Issue 33 (a Job author's 100 KB fields): the YAML tab laid out its first 500 lines whole, and a value of 100 KB
    without a space is one YAML line, so a Job whose annotations, env values and scripts were such values laid out
    1.6 MB: 4 s of the UI thread to open the tab. Each line shown is cut at sinks.FIELD_CHARS, the rest counted;
    what Y copies is the whole YAML.

    What is laid out is asserted, not a time: the values here are twice FIELD_CHARS, without a space, and a cell,
    field or YAML line laid out whole is past the bound all the same. The detail and YAML tab are the first Job's."""
    from rlark_tui.text.sinks import FIELD_CHARS

    long = ("中\u0301ab" * FIELD_CHARS)[:2 * FIELD_CHARS]

    def hostile(job: dict) -> dict:
        for task in job["spec"]["tasks"]:
            task["kubernetes"]["workload"]["template"]["spec"]["containers"][0]["env"][0]["value"] = long
            task["kubernetes"]["workload"]["template"]["spec"]["containers"][0]["image"] = long
        return job

    jobs = [hostile(_job_of_100_kb_fields("long-0", long))]
    jobs += [hostile(job_dict(f"long-{i}", display=long, env_extra=({"name": "NOTE", "value": long},)))
             for i in range(1, 20)]
    app = RlarkApp(None)
    async with app.run_test(size=SIZE) as pilot:
        await post_snapshot(pilot, build_snapshot(jobs))
        await wait_for(pilot, lambda: len(app.screen.table.visible_keys) == 20, "the Jobs in the list")
        listed = [cell for row in table_rows(app) for cell in row]
        app.open_job("long-0", "overview")

        def overview() -> str:
            return "".join(str(widget.render()) for widget in app.screen.query("#overview-text"))

        await wait_for(pilot, lambda: isinstance(app.screen, JobDetailScreen) and "Role " in overview(), "the roles")
        shown = overview().splitlines()
        await press(pilot, "y")
        await wait_for(pilot, lambda: app.screen.yaml_text, "the YAML")
        await drained(app)
        yaml_shown = str(app.screen.query_one("#yaml-text").render()).splitlines()
        copied = app.screen.yaml_text
    display = next(line for line in shown if line.startswith("Display name: "))
    assert display.endswith(f"… ({FIELD_CHARS:,} more characters)"), display
    assert max(map(len, listed)) < FIELD_CHARS + 40, max(map(len, listed))
    assert max(map(len, shown)) < FIELD_CHARS + 100, max(map(len, shown))
    assert max(map(len, yaml_shown)) < FIELD_CHARS + 40, max(map(len, yaml_shown))
    assert any(line.endswith(" more characters)") for line in yaml_shown)
    assert copied.count(long) == 4 + 5  # the annotations; the role's NOTE and role env values, scripts and image


async def test_the_clone_of_a_job_of_long_fields_keeps_each_field_it_holds_cut_where_laid_out_and_leaves_out_the_rest(
        post_snapshot):
    """Issue 33 (a Job author's 100 KB fields, the clone and edit prefill): the wizard showed each role's derived
    task name, the messages beside the fields (which quote the values), the Header role's choices and the step
    title whole, 80-100 KB each, and derived each 100 KB role name's task name hundreds of times at each check:
    the clone of such a Job took seconds to open and half a second at each step. What the wizard lays out is cut
    at sinks.FIELD_CHARS, the rest counted, a role name's task name is derived once, and the fields keep the whole
    value, which is what is submitted, up to what a field holds (wizard_fields.MAX_LINE_CHARS: the display name,
    role name, run script and annotations here).

    Issue 33 (a Job author's 1 MB fields; H33d): C on a Job whose display name, role names, images, env values,
    node selectors, SSH key and scripts were 1 MB held the UI thread 28 s (Textual's input measuring each whole
    value at each change and frame, 12 s of it the selector parsed in quadratic time), `:q` and escape waiting
    behind it. A field longer than its widget holds is left out before any widget shows it, said in one line, and
    the rest of the Job is cloned as it was. The image, SSH key, env value, node selector and prepare script here
    are 70,000 characters, past both of the wizard's bounds (a line's and a text box's) as 1 MB is. Both are tried
    in one clone: a wizard and its four steps are most of the test's CPU."""
    import time

    from textual.widgets import Input, TextArea

    from rlark_tui.jobspec.wizard_fields import MAX_LINE_CHARS
    from rlark_tui.screens.wizard import WizardScreen
    from rlark_tui.text.sinks import FIELD_CHARS

    long = ("中\u0301a b" * MAX_LINE_CHARS)[:MAX_LINE_CHARS]
    huge = ("中\u0301a b" * 17_500)[:70_000]
    job = _job_of_100_kb_fields("long-0", long, roles=ROLES[:2])
    job["spec"]["sshPublicKey"] = huge
    task = job["spec"]["tasks"][0]
    task["prepareScript"] = huge
    task["nodeSelector"] = {"gpu": huge}
    container = task["kubernetes"]["workload"]["template"]["spec"]["containers"][0]
    container["image"] = huge
    container["env"][1]["value"] = huge  # NOTE, of both roles (one entry)
    container["env"].append({"name": "SHORT", "value": "kept"})
    job["spec"]["tasks"][1]["kubernetes"]["workload"]["template"]["spec"]["containers"][0]["env"][0]["value"] = huge
    app = RlarkApp(None)
    async with app.run_test(size=SIZE) as pilot:
        await post_snapshot(pilot, build_snapshot([job]))
        app.open_clone("long-0")
        await wait_for(pilot, lambda: isinstance(app.screen, WizardScreen), "the wizard")
        screen = app.screen
        await drained(app)
        laid_out = _laid_out(screen)
        started = time.thread_time()
        for field in ("roles[0].image", "runScript", "preview", "name"):  # each step, mounted when first shown
            await screen.jump_to(field)
            await drained(app)
            laid_out += _laid_out(screen)
        stepped = time.thread_time() - started
        started = time.thread_time()
        await press(pilot, "end", "x", "y", "z")  # into the Job's name: each a check of the whole draft
        typed = time.thread_time() - started
        held = {widget.id: widget.value for widget in screen.query(Input)}
        held.update((box.id, box.text) for box in screen.query(TextArea))
        said = [n.message for n in app._notifications if "left out" in n.message]
        draft = screen.draft
        await press(pilot, "escape")
        left = type(app.screen).__name__
    assert max(map(len, laid_out)) < FIELD_CHARS + 100, max(map(len, laid_out))
    assert any(line.endswith(" more characters)") for line in laid_out)
    sizes = {key: len(text) for key, text in held.items()}
    assert max(sizes.values()) <= MAX_LINE_CHARS, sizes
    assert [held["w-displayName"], held["w-role-name-0"], held["w-runScript"]] == [long, long, long]
    assert draft.display_name == long and draft.roles[0].name == long
    assert held["w-role-name-1"] == draft.roles[1].name == ""
    assert held["w-image"] == held["w-sshPublicKey"] == held["w-prepareScript"] == ""
    assert held["w-env"] == "SHORT=kept" and draft.roles[0].env == {"SHORT": "kept"}
    assert held["w-name"] == draft.name == "long-0-copyxyz"
    assert said == ["the draft: role 1's env NOTE (70,005 characters), role 1's node selector gpu (70,004 "
                    "characters), role 2's env NOTE (70,005 characters), role 2's name (70,000 characters) and 3 "
                    "more left out, longer than the wizard's fields hold (16,384 characters a line, 65,536 a text "
                    "box): set them again"], said
    assert left == "JobListScreen"
    assert stepped < 5 and typed < 0.4, (stepped, typed)  # 30 s and 0.8 s before


async def test_pods_of_100_kb_names_cost_the_workers_tab_little(post_snapshot):
    """Issue 33, an eighteenth round (a hostile data plane's Pod CRs): a Pod's name, node and reason are the data
    plane's text, and 60 Pods whose three were 100 KB held the UI thread past 30 s to open the Workers tab (30:
    11 s). Each cell of a Pod's row is cut at workers.CELL_CHARS characters, the rest counted. 15 Pods here, five a
    role: each cell crosses the cut as one of 60 Pods does."""
    import time
    from dataclasses import replace

    from rlark_tui.widgets.workers import CELL_CHARS

    long = ("中\u0301a b" * 25_000)[:100_000]
    snapshot = build_snapshot([job_dict("long-pods")])
    pods = {}
    for key, pod in snapshot.pods.items():
        for i in range(5):
            pods[f"{key}-{i}"] = {**pod, "metadata": {**pod["metadata"], "name": f"{pod['metadata']['name']}-{i}"},
                                  "spec": {**pod["spec"], "podName": f"{long}{i}"},
                                  "status": {**pod["status"], "node": long, "reason": long}}
    app = RlarkApp(None)
    async with app.run_test(size=SIZE) as pilot:
        await post_snapshot(pilot, replace(snapshot, pods=pods))
        started = time.thread_time()
        app.open_job("long-pods", "workers")
        await wait_for(pilot, lambda: isinstance(app.screen, JobDetailScreen) and app.screen.query(WorkersTree),
                       "the Workers tab")
        tree = app.screen.query_one(WorkersTree)
        await wait_for(pilot, lambda: any("more characters" in str(node.label) for node in tree.root.children[0].children),
                       "the Pods")
        opened = time.thread_time() - started
        label = str(tree.root.children[0].children[1].label)
    assert label.startswith(long[:CELL_CHARS] + f"… ({100_001 - CELL_CHARS:,} more characters)"), label[:400]
    assert len(label) < 4 * (CELL_CHARS + 30), len(label)  # the node and the reason cut too
    assert opened < 2, opened


async def test_a_node_of_100_kb_labels_costs_its_detail_little(post_snapshot):
    """Issue 33, an eighteenth round (a member cluster's Node CR): ten labels, a GPU model and a condition of 100 KB
    held the UI thread 4.7 s to open the node detail and 2.3 s at every snapshot while it was open. Each line of
    the detail is cut at sinks.FIELD_CHARS, the rest counted, and laid out again only when it changed."""
    import time
    from dataclasses import replace

    from rlark_tui.flow.messages import OpenNode
    from rlark_tui.screens.node_detail import NodeDetailScreen

    long = ("中\u0301a b" * 25_000)[:100_000]
    node = {"apiVersion": "rlinf.io/v1alpha1", "kind": "Node",
            "metadata": {"name": "n1", "namespace": "rlark-x",
                         "labels": {"rlark.io/cluster-id": "rlark-x", **{f"l{i}": long for i in range(10)}},
                         "annotations": {"rlark.io/gpu-model": long}},
            "status": {"phase": "Online", "capacity": {"nvidia.com/gpu": "2"}, "allocatable": {"nvidia.com/gpu": "2"},
                       "conditions": [{"type": "Ready", "status": "True", "reason": long, "message": long}]}}
    snapshot = replace(build_snapshot([job_dict("a")]), nodes={"rlark-x/n1": node})
    app = RlarkApp(None)
    async with app.run_test(size=SIZE) as pilot:
        await post_snapshot(pilot, snapshot)
        started = time.thread_time()
        app.post_message(OpenNode("rlark-x/n1"))

        def summary() -> str:
            return "".join(str(widget.render()) for widget in app.screen.query("#node-detail-text"))

        await wait_for(pilot, lambda: isinstance(app.screen, NodeDetailScreen) and "more characters" in summary(),
                       "the node's detail")
        opened = time.thread_time() - started
        started = time.thread_time()
        await post_snapshot(pilot, replace(snapshot, version=2))
        again = time.thread_time() - started
        lines = summary().splitlines()
    assert max(map(len, lines)) < 1100 and any(line.endswith(" more characters)") for line in lines), lines[:5]
    assert opened < 1.5 and again < 0.8, (opened, again)


async def test_stop_asks_with_consequences_and_cancel_changes_nothing(post_snapshot):
    app = RlarkApp(None)
    async with app.run_test(size=SIZE) as pilot:
        await post_snapshot(pilot, build_snapshot([job_dict("demo-ppo")]))
        await press(pilot, "s")
        assert isinstance(app.screen, ConfirmScreen)
        body = str(app.screen.query_one("#confirm-body").render())
        assert "3 Pod(s)" in body and "does NOT resume from a checkpoint" in body
        await press(pilot, "n")
        assert isinstance(app.screen, JobListScreen)
        assert "stop of demo-ppo cancelled" in notifications(app)
        await press(pilot, "ctrl+d")
        assert isinstance(app.screen, ConfirmScreen)
        assert "cannot be undone" in str(app.screen.query_one("#confirm-body").render())
        await press(pilot, "escape")


async def test_stopped_job_offers_start_and_finished_job_refuses(post_snapshot):
    app = RlarkApp(None)
    async with app.run_test(size=SIZE) as pilot:
        await post_snapshot(pilot, build_snapshot([job_dict("a-stopped", phase="Stopped", stopped=True),
                                                   job_dict("b-done", phase="Succeeded")]))
        await press(pilot, "s")
        assert isinstance(app.screen, ConfirmScreen)
        assert app.screen.title_text == "Start Job a-stopped?"
        await press(pilot, "escape", "down", "s")
        assert not isinstance(app.screen, ConfirmScreen)
        assert any("treats it as finished, so stop or start would do nothing" in n for n in notifications(app))


async def test_readonly_hides_and_refuses_mutations(post_snapshot):
    app = RlarkApp(None, readonly=True)
    async with app.run_test(size=SIZE) as pilot:
        await post_snapshot(pilot, build_snapshot([job_dict("demo-ppo")]))
        keys = footer_keys(app)
        assert "logs" in keys and "stop_start" not in keys and "delete" not in keys
        assert "READ-ONLY" in app.screen.query_one(StatusHeader).summary()
        await press(pilot, "s", "ctrl+d")
        assert isinstance(app.screen, JobListScreen)
        assert not isinstance(app.screen, ConfirmScreen)
        # reached without a key (the keys are hidden), the mutation is refused by rlark_tui.flow.actions, before
        # any dialog
        app.request_delete("demo-ppo")
        await wait_for(pilot, lambda: any("read-only mode: refusing to delete job demo-ppo" in n
                                          for n in notifications(app)), "the refusal from actions")
        assert isinstance(app.screen, JobListScreen)


async def test_help_lists_the_live_keys(post_snapshot):
    app = RlarkApp(None)
    async with app.run_test(size=SIZE) as pilot:
        await post_snapshot(pilot, build_snapshot([job_dict("demo-ppo")]))
        await press(pilot, "question_mark")
        assert isinstance(app.screen, HelpScreen)
        text = str(app.screen.query_one("#help-text").render())
        for key, what in (("l", "Logs"), ("s", "Stop/Start"), ("^d", "Delete"), ("c", "Run check"), ("/", "Filter")):
            assert any(line.split()[:1] == [key] and what in line for line in text.splitlines()), (key, text)
        assert ":nodes" in text
        await press(pilot, "escape")
        assert isinstance(app.screen, JobListScreen)


def test_the_help_names_a_job_on_its_title_line():
    # issue 33, a twelfth round: the help's title is the screen's crumb ('Jobs › NAME', the control plane's name),
    # and a line break in the name forged a key line under it
    from rlark_tui.screens.help import help_text

    lines = help_text("Jobs › x\n  ^d    Delete every job\u202e", [("l", "Logs")]).splitlines()
    assert lines[0] == "Keys — Jobs › x\\n  ^d    Delete every job\\u202e"
    assert not any(line.split()[:1] == ["^d"] for line in lines), lines


async def test_help_in_readonly_mode_omits_mutations(post_snapshot):
    app = RlarkApp(None, readonly=True)
    async with app.run_test(size=SIZE) as pilot:
        await post_snapshot(pilot, build_snapshot([job_dict("demo-ppo")]))
        await press(pilot, "question_mark")
        text = str(app.screen.query_one("#help-text").render())
        assert "Stop/Start" not in text and "Delete" not in text and "Logs" in text


async def test_command_mode_switches_views_and_rejects_unknown(post_snapshot):
    snapshot = build_snapshot([job_dict("demo-ppo")])
    nodes = {f"rlark-gpu-a/{n}": {"metadata": {"name": n, "namespace": "rlark-gpu-a",
                                               "labels": {"rlark.io/cluster-id": "rlark-gpu-a"}},
                                  "status": {"phase": "Online", "allocatable": {"nvidia.com/gpu": "8"}}}
             for n in ("gpu-a1", "gpu-a2")}
    snapshot = type(snapshot)(jobs=snapshot.jobs, tasks=snapshot.tasks, pods=snapshot.pods, nodes=nodes,
                              sources=snapshot.sources)
    app = RlarkApp(None)
    async with app.run_test(size=SIZE) as pilot:
        await post_snapshot(pilot, snapshot)
        await press(pilot, "colon", *"nodes", "enter")
        assert isinstance(app.screen, NodeListScreen)
        table = app.screen.query_one("#node-table")
        assert [table.get_row_at(i)[0] for i in range(table.row_count)] == ["rlark-gpu-a/gpu-a1",
                                                                          "rlark-gpu-a/gpu-a2"]
        assert table.get_row_at(0)[4] == "8/8"
        await press(pilot, "colon", *"ns rlark-edge-b", "enter")
        assert table.row_count == 0
        assert "ns rlark-edge-b" in app.screen.query_one(StatusHeader).summary()
        await press(pilot, "colon", *"jobs", "enter")
        assert isinstance(app.screen, JobListScreen)
        await press(pilot, "colon", *"secrets", "enter")
        assert any("unknown command :secrets" in n for n in notifications(app))


async def test_run_check_key_opens_the_run_check_screen(post_snapshot):
    from rlark_tui.screens.check import CheckScreen

    app = RlarkApp(None)
    async with app.run_test(size=SIZE) as pilot:
        await post_snapshot(pilot, build_snapshot([job_dict("demo-ppo")]))
        await press(pilot, "c")
        assert isinstance(app.screen, CheckScreen) and app.screen.job_name == "demo-ppo"


async def test_command_palette_offers_job_commands(post_snapshot):
    app = RlarkApp(None)
    async with app.run_test(size=SIZE) as pilot:
        await post_snapshot(pilot, build_snapshot([job_dict("demo-ppo")]))
        await press(pilot, "ctrl+p")
        await press(pilot, *"open demo")
        await pilot.pause(0.3)
        await press(pilot, "enter")
        await pilot.pause()
        assert isinstance(app.screen, JobDetailScreen) and app.screen.job_name == "demo-ppo"


async def test_logs_without_cluster_explain_why_in_the_pane(post_snapshot):
    app = RlarkApp(None)
    async with app.run_test(size=SIZE) as pilot:
        await post_snapshot(pilot, build_snapshot([job_dict("demo-ppo")]))
        await press(pilot, "l")
        assert isinstance(app.screen, LogScreen)
        await wait_for(pilot, lambda: any("not connected to a cluster" in line[TEXT]
                                          for line in app.screen.view.shown_lines), "the pane's reason",
                       timeout=5, show=lambda app: "\n".join(line[TEXT] for line in app.screen.view.shown_lines))


async def test_small_terminal_80x24_keeps_list_and_detail_usable(post_snapshot):
    app = RlarkApp(None)
    async with app.run_test(size=(80, 24)) as pilot:
        await post_snapshot(pilot, build_snapshot([job_dict(f"job-{n}") for n in range(40)]))
        assert app.screen.table.row_count == 40
        await press(pilot, "G", "enter")
        assert isinstance(app.screen, JobDetailScreen) and app.screen.job_name == "job-9"
        assert "job-9-env-0" in app.screen.query_one(WorkersTree).shown_text()


@pytest.mark.writes_crash_report
async def test_a_failing_background_job_is_one_line_on_screen():
    app = RlarkApp(None)
    async with app.run_test(size=SIZE) as pilot:
        def fails() -> None:
            raise ValueError("connection reset by peer")

        app.run_worker(fails, thread=True, name="log stream", exit_on_error=False)
        await wait_for(pilot, lambda: any(line.startswith("rlark: a background task failed (ValueError); report: ")
                                          for line in notifications(app)), "the failure's line", timeout=5,
                       show=notifications)
        assert isinstance(app.screen, JobListScreen) and "connection reset" not in str(notifications(app))


async def test_n_opens_the_create_job_wizard(post_snapshot, env):
    from rlark_tui.screens.wizard import WizardScreen

    app = RlarkApp(None)
    async with app.run_test(size=SIZE) as pilot:
        await post_snapshot(pilot, build_snapshot([job_dict("demo-ppo")]))
        await press(pilot, "n")
        await pilot.pause()
        assert isinstance(app.screen, WizardScreen)


async def test_the_list_catches_up_with_changes_made_while_a_detail_screen_covered_it(post_snapshot):
    app = RlarkApp(None)
    async with app.run_test(size=SIZE) as pilot:
        await post_snapshot(pilot, build_snapshot([job_dict("demo-ppo"), job_dict("demo-sac")]))
        await press(pilot, "enter")
        assert isinstance(app.screen, JobDetailScreen)
        await post_snapshot(pilot, build_snapshot([job_dict("demo-ppo", phase="Pending"), job_dict("new-run")]))
        await press(pilot, "escape")
        assert [(row[0], row[3]) for row in table_rows(app)] == [("demo-ppo", "Pending"), ("new-run", "Running")]


async def test_phase_colours_follow_a_theme_change(post_snapshot):
    app = RlarkApp(None)
    async with app.run_test(size=SIZE) as pilot:
        await post_snapshot(pilot, build_snapshot([job_dict("demo-ppo")]))
        table = app.screen.table

        def phase_colour():
            return table.get_row_at(0)[3].style.color

        def running_colour():
            return table.get_component_rich_style("job-table--phase-running", partial=True).color

        before = phase_colour()
        assert before == running_colour()
        app.theme = "solarized-light" if app.theme != "solarized-light" else "nord"
        await wait_for(pilot, lambda: running_colour() != before and phase_colour() == running_colour(),
                       "the phase cells in the new theme's colour", timeout=5)


async def test_a_confirmed_stop_without_a_cluster_says_it_is_not_connected(post_snapshot):
    app = RlarkApp(None)
    async with app.run_test(size=SIZE) as pilot:
        await post_snapshot(pilot, build_snapshot([job_dict("demo-ppo")]))
        await press(pilot, "s")
        assert isinstance(app.screen, ConfirmScreen)
        await press(pilot, "y")
        await wait_for(pilot, lambda: any("demo-ppo" in n and "not connected" in n for n in notifications(app)),
                       "the refusal")
        assert not any("NoneType" in n for n in notifications(app))


async def test_a_long_confirm_detail_scrolls_with_the_keys_at_80x24():
    """The resume dialog's diff at 80x24: its added line comes last, below the dialog; the arrows, page keys and end
    scroll it while Cancel keeps the focus (Enter still cancels)."""
    diff = "\n".join(["--- demo-ppo", "+++ demo-ppo (resumed)", "@@ role actor"]
                     + [f"-runScript line {i}" for i in range(12)] + ["+runScript ... runner.resume_dir=/x/global_step_20"])
    app = RlarkApp(None)
    async with app.run_test(size=(80, 24)) as pilot:
        app.push_screen(ConfirmScreen("Resume demo-ppo from global_step_20 (step 20)?", "Resume is an Edit & Restart.",
                                      "Resume", detail=diff))
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen) and app.screen.focused is not None,
                       "the dialog")
        scroll = app.screen.query_one("#confirm-scroll")
        await wait_for(pilot, lambda: scroll.max_scroll_y > 0, "a diff longer than the dialog")
        assert scroll.scroll_y == 0 and app.screen.focused.id == "confirm-no"
        await press(pilot, "down")
        assert scroll.scroll_y == 1
        await press(pilot, "end")
        assert scroll.scroll_y == scroll.max_scroll_y, "the added line is in view"
        await press(pilot, "home")
        assert scroll.scroll_y == 0 and app.screen.focused.id == "confirm-no"
        await press(pilot, "enter")
        assert not isinstance(app.screen, ConfirmScreen)


async def test_80_columns_a_long_reason_narrows_so_progress_and_age_stay_on_screen(post_snapshot):
    """A Pod's long failure reason (REASON is as wide as 48) narrows before PROGRESS or AGE would scroll off an
    80-column list; the narrowed reason ends in an ellipsis."""
    import dataclasses

    from rlark_tui.model.podstate import PodHealth
    from rlark_tui.screens.job_list import COLUMNS
    from rlark_tui.telemetry.progress import Progress, ProgressState

    reason = "CreateContainerConfigError: secret ray-token not found"
    snapshot = dataclasses.replace(
        build_snapshot([job_dict("demo-ppo"), job_dict("eval-sweep", phase="Pending")]),
        progress={"demo-ppo": ProgressState(Progress(21, 40, 52.0, 28.0, 1.0))},
        health={"eval-sweep": {"rlark-gpu-a/p": PodHealth(0, reason)}})
    app = RlarkApp(None)
    async with app.run_test(size=(80, 24)) as pilot:
        await post_snapshot(pilot, snapshot)
        table = app.screen.table
        assert table.virtual_size.width <= table.size.width
        assert {"name", "phase", "pods", "reason", "progress", "age"} <= set(table.shown_columns)
        rows = {row[0]: row for row in table_rows(app)}
        assert rows["demo-ppo"][[column.key for column in COLUMNS].index("progress")].startswith("21/40")
        lines = [table.render_line(y).text for y in range(3)]
        assert "PROGRESS" in lines[0] and "AGE" in lines[0]
        assert any("21/40" in line for line in lines)
        assert any("CreateContainer…" in line for line in lines), lines


async def test_a_progress_not_read_says_why_under_the_list_for_the_highlighted_job_and_in_its_detail(post_snapshot):
    """Issue 33: the job list's PROGRESS said only `?` when the Header log's read failed; why was in the Job's
    detail alone. The line under the list says it for the highlighted row, as k9s's status line would: one line,
    without control characters, the Job's own secret env values masked, cut at sinks.FIELD_CHARS; none for a row
    whose progress was read.

    Issue 33: PROGRESS showed only `?` when the Header log's read failed, and nothing said why. The Job's detail
    says it, as k9s's describe would: its summary 'progress not read', and the Overview 'Progress: not read:
    <reason>', one line, without control characters, masked and cut at sinks.FIELD_CHARS like every field (the
    same Job's detail, opened from the list)."""
    import dataclasses

    from rlark_tui.screens.job_list import COLUMNS
    from rlark_tui.telemetry.progress import Progress, ProgressState
    from rlark_tui.text.sinks import FIELD_CHARS

    secret = "zqProgressTok42"
    error = f"the log store said 503 for token {secret}\n\x1b[2J[@click=app.quit]x[/] " + "y" * 100_000
    broken = job_dict("demo-ppo", env_extra=[{"name": "HF_TOKEN", "value": secret}])
    snapshot = dataclasses.replace(build_snapshot([broken, job_dict("eval-sweep")]),
                                   progress={"demo-ppo": ProgressState(error=error),
                                             "eval-sweep": ProgressState(Progress(21, 40, 52.0, 28.0, 1.0))})
    app = RlarkApp(None)
    async with app.run_test(size=SIZE) as pilot:
        await post_snapshot(pilot, snapshot)
        screen = app.screen
        note = screen.query_one("#job-list-note")
        said = {}
        layouts = 0
        lay_out = screen._refresh_layout

        def counted(*args, **kwargs):
            nonlocal layouts
            layouts += 1
            return lay_out(*args, **kwargs)

        screen._refresh_layout = counted
        heights = set()
        for name in ("demo-ppo", "eval-sweep", "demo-ppo", "eval-sweep", "demo-ppo"):
            assert screen.table.select_key(name)
            await pilot.pause()
            said[name] = str(note.render()) if note.display else ""
            heights.add(screen.table.size.height)
        moves_laid_out = layouts
        row = next(row for row in table_rows(app) if row[0] == "demo-ppo")
        app.open_job("demo-ppo", "overview")

        def overview() -> str:
            return "".join(str(widget.render()) for widget in app.screen.query("#overview-text"))

        await wait_for(pilot, lambda: isinstance(app.screen, JobDetailScreen) and "Role " in overview(), "the roles")
        summary = str(app.screen.query_one("#job-summary").render())
        shown = overview().splitlines()
    assert said["eval-sweep"] == ""
    assert len(heights) == 1, f"the list jumped as the cursor moved: {sorted(heights)} rows high"
    # the line stays once shown, so a move lays out nothing: shown and hidden at each move, the whole screen was
    # laid out again at each j or k (seven times the UI thread's work a key over 5,000 Jobs)
    assert moves_laid_out == 0, moves_laid_out
    line = said["demo-ppo"]
    assert line.startswith("demo-ppo: PROGRESS ? · not read: the log store said 503 for token ***\\n[@click=app.quit]"
                           "x[/] yyy"), line[:120]
    assert "\n" not in line and "\x1b" not in line and secret not in line and len(line) < FIELD_CHARS + 100
    assert row[[column.key for column in COLUMNS].index("progress")] == "?"
    assert summary.endswith(" · progress not read (the Overview says why)"), summary
    (detail,) = [line for line in shown if line.startswith("Progress: ")]
    assert detail.startswith("Progress: not read: the log store said 503 for token ***\\n[@click=app.quit]x[/] yyy"), \
        detail[:80]
    masked = "not read: " + error.replace(secret, "***")
    assert detail.endswith(f"… ({len(masked) - FIELD_CHARS:,} more characters)"), detail[-80:]
    assert "\x1b" not in detail and "2J" not in detail


async def test_the_command_palette_shows_hostile_job_names_as_plain_text_cut_and_matched_in_linear_time(post_snapshot):
    """The palette over a control plane's hostile Job names, three holes tried in one palette (one app, one open
    and one query):

    A Job name is text from outside: '[@click=app.quit]' in one was Textual markup in the palette's entries
    (Content.from_markup), an action on a click; a line break or a bidi control in one forged an entry of its own
    under the real one ('Delete prod'; issue 33, a twelfth round).

    Textual's fuzzy search listed every way a query's letters fall in an entry: 'open' typed against 'Logs of '
    and a Job name of 40 o's, p's, e's and n's each (a DNS name any Job author may give) was 2.5 million ways,
    seconds of the UI thread and hundreds of MB per entry, nine entries per Job; 60 of each were minutes and GBs.
    A name whose lower case is longer ('İ' is two characters) put the highlight's offsets past the entry's end
    (issue 33, a fifteenth round, the palette over hostile Job names).

    Issue 33, an eighteenth round (the palette and the header over a hostile control plane's Job name): each of
    a Job's 13 entries held its whole name, and a name of 100 KB took the palette 4.7 s of the UI thread to open
    and 1.6 s a key typed. An entry names the Job to sinks.NAME_CHARS (253, a Kubernetes name's bound), the rest
    counted; so does the header's crumb of its screen, to FIELD_CHARS."""
    import time

    from rlark_tui.text.sinks import NAME_CHARS

    repeated = "o" * 40 + "p" * 40 + "e" * 40 + "n" * 40
    name = ("中\u0301a-b" * 25_000)[:100_000]
    app = RlarkApp(None)
    async with app.run_test(size=SIZE) as pilot:
        await post_snapshot(pilot, build_snapshot([job_dict("[@click=app.quit]x[/]"), job_dict("y\nDelete prod\u202eab"),
                                                   job_dict(repeated), job_dict("İİİİopen"), job_dict(name)]))
        opening = time.thread_time()
        await press(pilot, "ctrl+p")
        options = await wait_for(pilot, lambda: (lambda found: found and found[0].option_count and found[0])(
            app.screen.query("CommandList")), "the palette's entries")
        typing = time.process_time()
        await press(pilot, "o")
        await wait_for(pilot, lambda: options.option_count >= 2, "the palette's hits of 'o'")
        opened = time.thread_time() - opening
        await press(pilot, *"pen")
        await wait_for(pilot, lambda: options.option_count >= 18 and not [
            worker for worker in app.workers if worker.node is app.screen and not worker.is_finished],
            "the palette's hits of 'open'", timeout=20)
        typed = time.process_time() - typing

        def lines() -> list[str]:
            return [options.render_line(y).text for y in range(options.size.height)]

        opens = ("Open [@click=app.quit]x[/]", "Open y\\nDelete prod\\u202eab", "Open İİİİopen")
        await wait_for(pilot, lambda: all(any(open_ in line for line in lines()) for open_ in opens),
                       "the hits laid out", timeout=5, show=lambda app: "\n".join(lines()))
        rendered = [options.render_line(y) for y in range(options.size.height)]
        hits = [str(options.get_option_at_index(i).prompt) for i in range(options.option_count)]
        await press(pilot, "escape")
    shown = [line.text for line in rendered]
    assert not [s.style.meta for line in rendered for s in line if s.style and "@click" in s.style.meta]
    assert not any(line.strip().startswith("Delete prod") for line in shown), shown
    assert any(hit.startswith(f"Logs of {repeated}") for hit in hits), hits
    assert any(hit.startswith(f"Open {name[:NAME_CHARS]}… ({100_000 - NAME_CHARS:,} more characters)\n")
               for hit in hits), [hit[:80] for hit in hits]
    assert opened < 1.5 and typed < 5, f"{opened:.1f} s of the UI thread to open and match 'o', {typed:.1f} s of " \
        "CPU to type 'open'"


async def test_the_command_palette_offers_its_first_entries_over_thousands_of_jobs(post_snapshot, monkeypatch):
    # Textual's palette sorts and lays out every hit gathered so far at each refresh: 'open' over 20,000 Jobs (13
    # entries each) showed nothing in 400 s; it offers PALETTE_HITS entries (issue 33, a fifteenth round): twice as
    # many Jobs as that are twice as many hits of 'open'. The bound is a tenth of the app's here (20 of 40 Jobs'
    # hits, not 200 of 400: the list and the palette laid out 400 Jobs and 5,200 entries to show the same cut)
    import time

    from rlark_tui.tui import app as app_module

    monkeypatch.setattr(app_module, "PALETTE_HITS", app_module.PALETTE_HITS // 10)
    PALETTE_HITS = app_module.PALETTE_HITS
    app = RlarkApp(None)
    async with app.run_test(size=SIZE) as pilot:
        await post_snapshot(pilot, build_snapshot([job_dict(f"job-{n:05d}") for n in range(2 * PALETTE_HITS)]))
        await press(pilot, "ctrl+p")
        palette = app.screen
        options = palette.query_one("CommandList")
        spent = time.process_time()
        await press(pilot, *"open")
        await wait_for(pilot, lambda: options.option_count >= PALETTE_HITS and not [
            worker for worker in app.workers if worker.node is palette and not worker.is_finished],
            "the palette's hits of 'open'", timeout=30)
        spent = time.process_time() - spent
        assert options.option_count == PALETTE_HITS and spent < 10, (options.option_count, spent)
        await press(pilot, "escape")


async def test_the_tunnels_screen_shows_no_url_line_a_job_name_or_a_reason_forged():
    # the Job's name is the control plane's text and a reason quotes a server's: 'x\nray:\n  http://127.0.0.1:9/t/'
    # in one made a line that read as a tunnel's URL (another local user's listener) under the real one
    # (issue 33, a fifteenth round, the TUI's tunnels)
    from rlark_tui.model.tunnel import OpenTunnel
    from rlark_tui.screens.tunnels import TunnelsScreen

    forged = "\nRay dashboard:\n  http://127.0.0.1:9/forged/\u202e"
    app = RlarkApp(None)
    async with app.run_test(size=SIZE) as pilot:
        app.push_screen(TunnelsScreen(f"x{forged}", [OpenTunnel("TensorBoard", "http://127.0.0.1:8/real/"),
                                                     f"Ray dashboard: no route{forged}"], False))
        shown = await wait_for(pilot, lambda: isinstance(app.screen, TunnelsScreen)
                               and app.screen.query("#tunnels-text"), "the tunnels")
        text = str(shown.first().render())
        urls = [line.strip() for line in text.splitlines() if line.strip().startswith("http")]
        assert urls == ["http://127.0.0.1:8/real/"], text
        assert "\u202e" not in text and "Tunnels of x\\nRay dashboard:" in text, text


async def test_the_namespace_picker_shows_a_namespace_as_plain_text():
    # namespaces come from the control plane's objects: '[@click=app.quit]' in one was markup in the picker
    from rlark_tui.screens.nodes import PickerScreen

    app = RlarkApp(None)
    async with app.run_test(size=SIZE) as pilot:
        app.push_screen(PickerScreen("Namespace (cluster)", ["all", "[@click=app.quit]ns[/]\nx"], "all"))
        await wait_for(pilot, lambda: isinstance(app.screen, PickerScreen), "the picker")
        await pilot.pause()
        options = app.screen.query_one("OptionList")
        rendered = [options.render_line(y) for y in range(options.size.height)]
        assert any("  [@click=app.quit]ns[/]\\nx" in line.text for line in rendered), [line.text for line in rendered]
        assert not [s.style.meta for line in rendered for s in line if s.style and "@click" in s.style.meta]


async def test_tunnels_asked_for_without_a_cluster_say_so_in_one_line(post_snapshot):
    # with no cluster the worker raised AttributeError and Textual's toast read "open_tunnels failed: 'NoneType'
    # object has no attribute 'get'" (issue 33, an eighteenth round, the TUI's screens)
    app = RlarkApp(None)
    async with app.run_test(size=SIZE) as pilot:
        await post_snapshot(pilot, build_snapshot([job_dict("tunnel-me")]))
        await press(pilot, "F")
        said = await wait_for(pilot, lambda: [n.message for n in app._notifications], "a notice")
        assert said == ["not connected to a cluster: no tunnel to open"], said
