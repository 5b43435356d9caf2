"""Pilot tests of the TUI against the shared sandbox over real HTTPS: the reconciler feeds the screens,
mutations go through the dialogs and rlark_tui.flow.actions, logs stream from the sandbox's data planes.

Jobs made here use images the sandbox does not run with Ray (`invalid` fails the pull, `no-ray` exits
before Ray starts), so only the one test marked `ray` depends on demo-ppo's real Ray processes.
"""

from __future__ import annotations

import pytest

from rlark_tui.cluster.access import ClusterAccess
from rlark_tui.cluster.errors import NotFound
from rlark_tui.cluster.kinds import JOBS
from rlark_tui.model.objects import dig
from rlark_tui.screens.confirm import ConfirmScreen
from rlark_tui.screens.help import HelpScreen
from rlark_tui.screens.job_detail import JobDetailScreen
from rlark_tui.screens.job_list import JobListScreen
from rlark_tui.screens.logs import LogScreen
from rlark_tui.screens.nodes import PickerScreen
from rlark_tui.tui.app import RlarkApp
from rlark_tui.widgets.log_pane import NOTICE, SEQ, TEXT
from rlark_tui.widgets.workers import WorkersTree
from tests.pilot import wait_for

SIZE = (120, 40)
SECRET = "wandb-0123456789-secret"


def manifest(name: str, image: str, node: str, prepare: str = "") -> dict:
    return {"apiVersion": "rlinf.io/v1alpha1", "kind": "Job", "metadata": {"name": name},
            "spec": {"tasks": [{
                "name": "actor", "head": True, "role": "Actor", "agentType": "Kubernetes",
                "nodeSelector": {"kubernetes.io/hostname": node}, "prepareScript": prepare,
                "runScript": "echo run",
                "kubernetes": {"workload": {"kind": "StatefulSet", "replicas": 1, "template": {"spec": {
                    "containers": [{"name": "main", "image": image, "env": [
                        {"name": "RLARK_TASK_ROLE", "value": "Actor"},
                        {"name": "WANDB_API_KEY", "value": SECRET}]}]}}}}}]}}


@pytest.fixture
def make_job(access):
    made = []

    def make(body: dict) -> str:
        access.create(JOBS, body)
        made.append(body["metadata"]["name"])
        return body["metadata"]["name"]

    yield make
    for name in made:
        try:
            access.delete(JOBS, name)
        except NotFound:
            pass


def row_of(app, name: str) -> list[str] | None:
    screen = app.screen
    if not isinstance(screen, JobListScreen) or name not in screen.rows:
        return None
    table = screen.table
    try:
        index = table.get_row_index(name)
    except Exception:
        return None
    return [getattr(cell, "plain", cell) for cell in table.get_row_at(index)]


def cell(app, name: str, column: int) -> str | None:
    row = row_of(app, name)
    return row[column] if row else None


def notes(app) -> list[str]:
    return [n.message for n in app._notifications]


async def select(pilot, app, name: str) -> None:
    await wait_for(pilot, lambda: row_of(app, name), what=f"{name} in the list")
    assert app.screen.table.select_key(name)
    await pilot.pause()


async def test_stop_start_delete_through_dialogs_update_the_list_live(access, make_job):
    name = make_job(manifest("h5-life", "registry.example.com/rlinf:invalid", "edge-b1"))
    app = RlarkApp(access)
    async with app.run_test(size=SIZE) as pilot:
        await select(pilot, app, name)
        await wait_for(pilot, lambda: cell(app, name, 5) == "0/1", what="1 expected Pod")
        await wait_for(pilot, lambda: app.index.job_pods(app.index.job(name)), what="the Pod CR")
        await pilot.press("enter", "e")
        assert isinstance(app.screen, JobDetailScreen)
        events = app.screen.query_one("#events-text")
        await wait_for(pilot, lambda: "h5-life-actor-0" in str(events.render()), what="Pending events")
        assert "Task h5-life-actor (Pending)" in str(events.render())
        await pilot.press("escape")
        await pilot.press("s")
        assert isinstance(app.screen, ConfirmScreen)
        assert "does NOT resume from a checkpoint" in str(app.screen.query_one("#confirm-body").render())
        await pilot.press("y")
        await wait_for(pilot, lambda: cell(app, name, 3) == "Stopped", what="Stopped")
        await wait_for(pilot, lambda: not app.index.job_pods(app.index.job(name)), what="Pods drained")
        assert row_of(app, name)[5] == "0/0"
        assert any("stopped" in n for n in notes(app))
        await pilot.press("s")
        assert app.screen.title_text == f"Start Job {name}?"
        await pilot.press("y")
        await wait_for(pilot, lambda: cell(app, name, 3) not in (None, "Stopped") and cell(app, name, 5) == "0/1",
                       what="started again")
        await pilot.press("ctrl+d")
        assert isinstance(app.screen, ConfirmScreen)
        await pilot.press("y")
        await wait_for(pilot, lambda: name not in app.screen.rows, what="row removed after delete")
        with pytest.raises(NotFound):
            access.get(JOBS, name)


async def test_readonly_refuses_and_filter_and_help_work_on_the_sandbox(access, make_job):
    name = make_job(manifest("h5-ro", "registry.example.com/rlinf:invalid", "gpu-a2"))
    app = RlarkApp(access, readonly=True)
    async with app.run_test(size=SIZE) as pilot:
        await select(pilot, app, name)
        await pilot.press("s", "ctrl+d")
        assert isinstance(app.screen, JobListScreen)
        assert any("read-only mode" in n for n in notes(app))
        app.request_stop_start(name)  # without a key (they are hidden): refused by actions.py before any dialog
        await wait_for(pilot, lambda: any(n.startswith(f"read-only mode: refusing to stop job {name}")
                                          for n in notes(app)), what="the refusal from actions")
        assert isinstance(app.screen, JobListScreen)
        assert access.get(JOBS, name)["spec"].get("stopped") is not True
        await pilot.press("slash", *"^h5-r")
        table = app.screen.table
        await wait_for(pilot, lambda: [table.get_row_at(i)[0] for i in range(table.row_count)] == [name],
                       what="filtered list")
        await pilot.press("escape", "question_mark")
        assert isinstance(app.screen, HelpScreen)
        help_text = str(app.screen.query_one("#help-text").render())
        assert "Logs" in help_text and "Delete" not in help_text
        await pilot.press("escape", "colon", *"ctx", "enter")
        assert isinstance(app.screen, PickerScreen)
        assert "rlark-sandbox" in app.screen.choices
        await pilot.press("escape")
        first = app.reconciler
        await pilot.press("ctrl+r")
        assert app.reconciler is not first
        await wait_for(pilot, lambda: app.reconciler.snapshot.jobs.get(name), what="relisted Job")


async def test_detail_events_restarts_and_log_pane_on_a_failing_job(access, make_job, tmp_path, monkeypatch):
    """A `no-ray` image runs the prepare script, then exits 1 and restarts: real log lines, no Ray."""
    prepare = (f"echo step one; echo WANDB_API_KEY={SECRET}; echo step two; "
               "echo 'ERROR: dataset shard missing'; echo step three")
    name = make_job(manifest("h5-logs", "registry.example.com/rlinf:no-ray", "gpu-a2", prepare))
    monkeypatch.chdir(tmp_path)
    app = RlarkApp(access)
    async with app.run_test(size=SIZE) as pilot:
        await select(pilot, app, name)
        await pilot.press("d")
        assert isinstance(app.screen, JobDetailScreen)
        overview = str(app.screen.query_one("#overview-text").render())
        assert "WANDB_API_KEY=***" in overview and SECRET not in overview
        await pilot.press("w")
        tree = app.screen.query_one(WorkersTree)
        await wait_for(pilot, lambda: "h5-logs-actor-0" in tree.shown_text(), what="the Pod row")
        assert "gpu-a2" in tree.shown_text()
        await pilot.press("l")
        assert isinstance(app.screen, LogScreen)
        view = app.screen.view
        await wait_for(pilot, lambda: any("Ray CLI is not found" in l[TEXT] for l in view.shown_lines),
                       what="the start script's error line")
        texts = [line[TEXT] for line in view.shown_lines]
        assert "RLINF_NODE_RANK: 0" in texts and "step two" in texts
        await pilot.press("e")
        assert view.current_seq is not None
        first_error = next(l for l in view.shown_lines if l[SEQ] == view.current_seq)
        assert first_error[TEXT] == "ERROR: dataset shard missing"
        assert view.follow is False
        await pilot.press("slash", *"step", "enter", "n")
        current = next(l for l in view.shown_lines if l[SEQ] == view.current_seq)
        assert current[TEXT].startswith("step")
        await pilot.press("ampersand", *"^step", "enter")
        assert {l[TEXT] for l in view.shown_lines if not l[NOTICE]} == {"step one", "step two", "step three"}
        await pilot.press("ampersand", "ctrl+u", "escape")
        await pilot.press("t")
        first = next(line for line in view.shown_lines if not line[NOTICE])
        assert view.line_text(first).startswith("20") and "[actor/h5-logs-actor-0]" in view.line_text(first)
        await pilot.press("ctrl+s")
        # the file is written on a worker (never on the UI thread): the pane names it once it is written
        await wait_for(pilot, lambda: app.screen.saved_path is not None, what="the saved log")
        saved = app.screen.saved_path.read_text()
        assert "WANDB_API_KEY=***" in saved and SECRET not in saved and "RLINF_NODE_RANK: 0" in saved
        await pilot.press("escape")
        def restarts() -> str:
            line = next(l for l in tree.shown_text().splitlines() if l.startswith("h5-logs-actor-0"))
            return line.split()[-5]  # RESTARTS, before GPU%, GPU MEM, CPU, MEM

        await wait_for(pilot, lambda: restarts() not in ("-", "0"), timeout=40,
                       what="a restart count from the data plane")
        await pilot.press("l", "p")
        view = app.screen.view
        await wait_for(pilot, lambda: any("end of the previous instance" in l[TEXT] for l in view.shown_lines),
                       what="the previous instance")
        assert any(l[TEXT] == "step one" for l in view.shown_lines)


@pytest.mark.ray
async def test_demo_ppo_workers_and_header_log(access):
    app = RlarkApp(access)
    async with app.run_test(size=SIZE) as pilot:
        await select(pilot, app, "demo-ppo")
        await pilot.press("enter")
        tree = app.screen.query_one(WorkersTree)
        expected = {"demo-ppo-actor-0": "gpu-a1", "demo-ppo-rollout-0": "gpu-a2", "demo-ppo-env-0": "edge-b1"}

        def pods_shown():
            lines = tree.shown_text().splitlines()
            return all(any(pod in line and node in line for line in lines) for pod, node in expected.items())

        await wait_for(pilot, pods_shown, timeout=60, what="three Pods on gpu-a1, gpu-a2, edge-b1")
        ips = set()
        for pod in expected:
            line = next(line for line in tree.shown_text().splitlines() if line.startswith(pod))
            assert line.split()[2].count(".") == 3, line
            ips.add(line.split()[2])
        assert len(ips) == 3 and all(ip.startswith("127.") for ip in ips), ips   # each Pod's own loopback IP
        tree.select_node(next(n for n in tree.root.children if "[Header]" in str(n.label)))
        await pilot.press("l")
        assert isinstance(app.screen, LogScreen)
        # Only the Header prints rank 0's start-up line and the driver's metric tables; once the demo has run its 40
        # steps (about 26 lines a table), the start-up line is older than the pane's last 1000 lines (L4).
        await wait_for(pilot, lambda: any(l[TEXT] == "RLINF_NODE_RANK: 0" or "Metric Table" in l[TEXT]
                                          for l in app.screen.view.shown_lines),
                       timeout=60, what="rank 0's start-up line or a metric table in the Header log")


def control_plane_only(sandbox, tmp_path, gateway: bool):
    """A kubeconfig with the sandbox's control-plane context alone: no rlark-server extension (so no data planes:
    discovery finds the server but no CA), gateway optional."""
    import yaml

    config = yaml.safe_load(sandbox.kubeconfig.read_text())
    config["clusters"] = [c for c in config["clusters"] if c["name"] == sandbox.context]
    config["clusters"][0]["cluster"].pop("extensions", None)  # no rlark.io/server: discovery finds no CA
    config["contexts"] = [c for c in config["contexts"] if c["name"] == sandbox.context]
    extension = config["contexts"][0]["context"]["extensions"][0]["extension"]
    extension.pop("dataPlaneContexts", None)
    if not gateway:
        extension.pop("gateway", None)
    path = tmp_path / f"kubeconfig-{'gateway' if gateway else 'bare'}"
    path.write_text(yaml.safe_dump(config))
    path.chmod(0o600)
    return ClusterAccess.open(str(path), sandbox.context)


@pytest.mark.parametrize("gateway", [True, False])
async def test_log_pane_says_why_logs_are_unavailable_without_a_data_plane(sandbox, tmp_path, gateway):
    access = control_plane_only(sandbox, tmp_path, gateway)
    app = RlarkApp(access)
    try:
        async with app.run_test(size=SIZE) as pilot:
            await select(pilot, app, "demo-ppo")
            await wait_for(pilot, lambda: any(p.phase == "Running" for p in
                                              app.index.job_pods(app.index.job("demo-ppo"))), what="a Running Pod")
            await pilot.press("l")
            view = app.screen.view
            if gateway:
                await wait_for(pilot, lambda: any("from the gateway" in l[TEXT] for l in view.shown_lines),
                               what="the gateway notice")
                assert any(not l[NOTICE] for l in view.shown_lines)
            else:
                await wait_for(pilot, lambda: any("no data plane for cluster rlark-gpu-a (" in l[TEXT]
                                                  and "and no gateway" in l[TEXT]
                                                  for l in view.shown_lines), what="the missing-source notice")
            await wait_for(pilot, lambda: "data plane rlark-gpu-a disconnected (no CA to verify rlark-server" in
                           app.screen.query_one("#status-header").summary(), what="the header saying why")
    finally:
        access.close()


async def test_dropped_log_stream_reconnects_without_duplicates_or_gaps(access, make_job, faults):
    ticks = "for i in $(seq 1 150); do echo tick $i; sleep 0.2; done"
    name = make_job(manifest("h5-cut", "registry.example.com/rlinf:no-ray", "edge-b1", ticks))
    app = RlarkApp(access)
    async with app.run_test(size=SIZE) as pilot:
        await select(pilot, app, name)
        await wait_for(pilot, lambda: any(p.phase == "Running" for p in app.index.job_pods(app.index.job(name))),
                       what="a Running Pod")
        faults.cut_logs(after_lines=3, times=1, follow_only=True)  # the pane's follow, not the alert rounds' reads
        await pilot.press("l")
        view = app.screen.view
        await wait_for(pilot, lambda: any("dropped" in l[TEXT] and "reconnecting" in l[TEXT]
                                          for l in view.shown_lines), what="the dropped-stream notice")

        def ticks_seen() -> list[int]:
            return [int(l[TEXT].split()[1]) for l in view.shown_lines if l[TEXT].startswith("tick ")]

        await wait_for(pilot, lambda: len(ticks_seen()) >= 20, what="ticks after the reconnect")
        seen = ticks_seen()
        assert seen == list(range(1, len(seen) + 1)), seen


async def test_unreachable_control_plane_is_an_error_state_not_a_crash(sandbox, tmp_path):
    import socket

    import yaml

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        dead_port = probe.getsockname()[1]
    config = yaml.safe_load(sandbox.kubeconfig.read_text())
    for cluster in config["clusters"]:
        server = cluster["cluster"]["server"]
        cluster["cluster"]["server"] = server.replace(server.split("/")[2], f"127.0.0.1:{dead_port}")
    path = tmp_path / "kubeconfig-dead"
    path.write_text(yaml.safe_dump(config))
    path.chmod(0o600)
    access = ClusterAccess.open(str(path), sandbox.context)
    app = RlarkApp(access)
    try:
        async with app.run_test(size=SIZE) as pilot:
            message = app.screen.query_one("#job-list-message")
            await wait_for(pilot, lambda: "Cannot list Jobs from the control plane" in str(message.render()),
                           what="the control-plane error state")
            assert "control plane disconnected" in app.screen.query_one("#status-header").summary()
            await pilot.press("question_mark")
            assert isinstance(app.screen, HelpScreen)
    finally:
        access.close()


@pytest.mark.writes_crash_report
async def test_a_watch_a_bug_ended_is_said_and_restarted_and_the_list_keeps_updating(access, make_job, monkeypatch):
    """Issue 33 item 5 (a bug off the main path; one hostile Job never stops another's alert): an exception that
    none of list_watch's guards expects, raised by one Job's watch event, ended the reconciler's Jobs watch thread;
    the thread's hook told it in one toast, and the list went stale with no other sign: the next Job never arrived.
    The reconciler says the Jobs watch failed in the header (the control plane stale, as for a dropped connection),
    starts it again after its back-off (here of 0.1 s, not Backoff's 0.5 s), and the list follows the cluster
    again."""
    import functools

    from rlark_tui.cluster import access as access_module
    from rlark_tui.flow import reconciler as reconciler_module
    from rlark_tui.widgets.status_header import StatusHeader

    monkeypatch.setattr(reconciler_module, "Backoff", functools.partial(access_module.Backoff, 0.1))

    hostile, after = "h5-hostile-event", "h5-after-the-bug"
    addressable, raised = access_module.addressable, []

    def reaches_a_bug(item):  # the one injection: a derivation the watch makes raises for one hostile event, once
        if isinstance(item, dict) and dig(item, "metadata", "name") == hostile and not raised:
            raised.append(item)
            raise TypeError("a derivation of a watch event no guard expects to raise")
        return addressable(item)

    app = RlarkApp(access)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.reconciler and app.reconciler.snapshot.sources["control plane"].status
                       == "connected", what="every kind watched")
        monkeypatch.setattr(access_module, "addressable", reaches_a_bug)
        make_job(manifest(hostile, "registry.example.com/rlinf:invalid", "edge-b1"))
        header = app.screen.query_one(StatusHeader)
        await wait_for(pilot, lambda: "control plane stale (the watch of jobs failed (TypeError)" in header.summary(),
                       what="the Jobs watch said failing", timeout=10, show=lambda _app: header.summary())
        await wait_for(pilot, lambda: row_of(app, hostile), what="the hostile Job, by the watch started again",
                       timeout=10)
        make_job(manifest(after, "registry.example.com/rlinf:invalid", "edge-b1"))
        await wait_for(pilot, lambda: row_of(app, after), what="the next Job", timeout=10)
        await wait_for(pilot, lambda: "control plane connected" in header.summary(), what="connected again",
                       timeout=10, show=lambda _app: header.summary())
        told = [n for n in notes(app) if n.startswith("rlark: a background task failed (TypeError); report: ")]
        assert raised and len(told) == 1, notes(app)


async def test_small_terminal_80x24_on_the_sandbox(access, make_job):
    name = make_job(manifest("h5-small", "registry.example.com/rlinf:invalid", "gpu-a1"))
    app = RlarkApp(access)
    async with app.run_test(size=(80, 24)) as pilot:
        await select(pilot, app, name)
        await pilot.press("enter")
        tree = app.screen.query_one(WorkersTree)
        await wait_for(pilot, lambda: any(line.startswith("h5-small-actor-0") and "gpu-a1" in line
                                          for line in tree.shown_text().splitlines()), what="the Pod row")
        await pilot.press("l")
        assert isinstance(app.screen, LogScreen)
        await wait_for(pilot, lambda: any("has not started" in l[TEXT] for l in app.screen.view.shown_lines),
                       what="the Pod-not-started message")
        await pilot.press("escape", "escape", "question_mark")
        assert isinstance(app.screen, HelpScreen)


async def test_losing_focus_slows_the_periodic_reads_and_focus_brings_them_back(access):
    """The terminal's focus reports (Textual's AppBlur/AppFocus) set the reconciler's pace, also for the one that
    ctrl+r starts; a key means focus, as Textual takes it."""
    from textual import events

    from rlark_tui.flow.reconciler import BLURRED_PACE
    app = RlarkApp(access)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.reconciler is not None, what="the reconciler")
        assert app.reconciler.pace == 1.0
        app.post_message(events.AppBlur())
        await wait_for(pilot, lambda: app.reconciler.pace == BLURRED_PACE, what="the unfocused pace")
        app.post_message(events.AppFocus())
        await wait_for(pilot, lambda: app.reconciler.pace == 1.0, what="the focused pace")
        app.post_message(events.AppBlur())
        await wait_for(pilot, lambda: app.reconciler.pace == BLURRED_PACE, what="the unfocused pace again")
        first = app.reconciler
        await pilot.press("ctrl+r")
        await wait_for(pilot, lambda: app.reconciler is not first and app.reconciler.pace == 1.0,
                       what="ctrl+r's reconciler at the focused pace (the key says the terminal has focus)")
