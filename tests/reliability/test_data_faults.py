"""Issue 10's fault matrix, data half: malformed objects, 10,000 Nodes, a log stream cut mid-line, non-UTF-8 and
1 MB log lines, the Ray dashboard down, and a 40x10 terminal — each seen through the CLI and the TUI.

What a user must get: a clear state (in the output, the header or the pane), recovery by itself once the fault
goes, and never a traceback, a crash or keys that stop answering.
"""

from __future__ import annotations

import contextlib
import copy
import socket
import threading
from datetime import UTC, datetime

import pytest

from rlark_sandbox.seed import demo_nodes
from rlark_sandbox.store import ROOT, NotFound
from rlark_tui.checks.evaluate import evaluate
from rlark_tui.checks.evidence import RunEvidence
from rlark_tui.checks.gather import main_container
from rlark_tui.cli import main
from rlark_tui.cluster.access import ClusterAccess
from rlark_tui.cluster.kinds import JOBS, NODES, PODS, TASKS
from rlark_tui.cluster.output import render_objects, render_table
from rlark_tui.commands.describe import describe_text
from rlark_tui.flow.snapshot import Snapshot
from rlark_tui.model.logtarget import Scope
from rlark_tui.model.objects import Job, dig
from rlark_tui.model.submission import with_submission_record
from rlark_tui.screens.job_detail import JobDetailScreen
from rlark_tui.screens.job_list import JobListScreen
from rlark_tui.screens.logs import LogScreen
from rlark_tui.tui.app import RlarkApp
from rlark_tui.view.index import SnapshotIndex, job_rows, role_rows
from rlark_tui.view.nodes import node_rows
from rlark_tui.widgets.log_pane import NOTICE, TEXT
from tests.cluster.ray_fake import FakeRayDashboard
from tests.cluster.seeding import at, remove_pod, seed_running_job, write_log
from tests.pilot import wait_for as pilot_wait_for
from tests.reliability.malformed import sandbox_jobs, sandbox_nodes, sandbox_pod, variants
from tests.streams import follow_opens, sent_all
from tests.tui.tui_factories import job_dict, pod_dict, task_dict

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
SIZE = (120, 40)


# ---------------------------------------------------------------- helpers


def screen_text(app) -> str:
    """Every character on the screen, row by row: what the user reads."""
    return "\n".join(strip.text for strip in app.screen._compositor.render_strips())


def wait_for(pilot, predicate, what: str = "condition", timeout: float = 20.0):
    return pilot_wait_for(pilot, predicate, what, timeout, show=screen_text)


def no_traceback(result) -> None:
    assert "Traceback" not in result.err and "Traceback" not in result.out, result.err


@pytest.fixture
def access(rel, env):
    access = ClusterAccess.open(str(rel.kubeconfig), rel.context)
    yield access
    access.close()


# ---------------------------------------------------------------- malformed objects: every reader, every field


def _well_formed() -> dict:
    job = with_submission_record(job_dict("j"))
    job["metadata"]["annotations"]["rlark.io/launch-record"] = '{"runId": "r", "expectedNumNodes": 3}'
    real = {"metadata": {"name": "j-actor-0"}, "status": {"containerStatuses": [{
        "name": "main", "restartCount": 2, "state": {"running": {"startedAt": "2026-11-29T10:00:00Z"}},
        "lastState": {"terminated": {"exitCode": 1, "reason": "Error"}}}]}}
    return {"job": job, "task": task_dict("j", "actor", "rlark-gpu-a"),
            "pod": pod_dict("j", "actor", "rlark-gpu-a", "gpu-a1", "10.0.0.1"), "node": demo_nodes()[0],
            "real": real}


def _read_everything(objects: dict, which: str) -> None:
    """Everything the CLI and the TUI derive from API objects, without I/O. A `get` table or YAML reads only the
    objects of its kind: only the kind `which` names is printed ("": every kind; the well-formed ones once)."""
    job, tasks, pods, nodes = objects["job"], [objects["task"]], [objects["pod"]], [objects["node"]]
    describe_text(job, tasks, pods, {}, None, NOW)
    for kind, items in ((JOBS, [job]), (TASKS, tasks), (PODS, pods), (NODES, nodes)):
        if which in (kind.kind.lower(), ""):
            render_table(kind, items, wide=True, all_namespaces=True)
            render_objects(kind, items, "yaml")
    main_container("j-actor-0", objects["real"])
    evaluate(RunEvidence("j", NOW, job=job, tasks=tuple(tasks), pods=tuple(pods), nodes=tuple(nodes)))
    index = SnapshotIndex(Snapshot(jobs={"j": job}, tasks={"rlark-gpu-a/j-actor": tasks[0]},
                                   pods={"rlark-gpu-a/p": pods[0]}, nodes={"rlark-gpu-a/n": nodes[0]}))
    job_rows(index)
    role_rows(index, Job(job))
    node_rows(index, NOW)


@pytest.mark.parametrize("which", ["job", "task", "pod", "node", "real"])
def test_every_reader_survives_any_field_of_the_wrong_type(which):
    objects = _well_formed()
    _read_everything(objects, "")
    failures = []
    for description, spoiled in variants(objects[which]):
        try:
            _read_everything({**objects, which: spoiled}, which)
        except Exception as exc:  # noqa: BLE001 - the test lists every crash, not just the first
            failures.append(f"{which} {description}: {type(exc).__name__}: {exc}")
    assert not failures, "\n".join(failures[:20])


# ---------------------------------------------------------------- malformed objects in the sandbox


@pytest.fixture
def malformed(rel):
    """Malformed Jobs, Nodes and a Pod CR stored directly (the API's validation would refuse them)."""
    store = rel.store
    jobs = sandbox_jobs()
    nodes = sandbox_nodes("rlark-gpu-a")
    pod = sandbox_pod("rlark-gpu-a", "bad-no-status-actor")
    for job in jobs:
        store.create("jobs", job)
    for node in nodes:
        store.create("nodes", node)
    store.create("pods", pod)
    try:
        yield [j["metadata"]["name"] for j in jobs]
    finally:
        for job in jobs:
            store.delete("jobs", job["metadata"]["name"])
        for node in nodes:
            store.delete("nodes", node["metadata"]["name"], "rlark-gpu-a")
        store.delete("pods", pod["metadata"]["name"], "rlark-gpu-a")


def test_cli_lists_describes_and_checks_malformed_objects(rl, malformed):
    for argv in (("get", "jobs"), ("get", "jobs", "-o", "wide"), ("get", "jobs", "-o", "yaml"),
                 ("get", "nodes", "-A", "-o", "wide"), ("get", "pods", "-A")):
        result = rl(*argv)
        no_traceback(result)
        assert result.code == 0, (argv, result.err)
    listed = rl("get", "jobs").out
    assert all(name in listed for name in malformed)
    assert "bad-node-types" in rl("get", "nodes", "-A").out
    for name in malformed:
        described = rl("describe", "job", name)
        no_traceback(described)
        assert described.code == 0 and f"Name:           {name}" in described.out, described.err
        checked = rl("check", name)
        no_traceback(checked)
        assert checked.code in (0, 1, 3) and f"Run check of {name}" in checked.out, checked.err
        logs = rl("logs", name)
        no_traceback(logs)
        assert logs.code == 0 and "No Pod details yet" in logs.err


async def test_tui_lists_and_opens_malformed_jobs(access, malformed):
    app = RlarkApp(access)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: all(n in screen_text(app) for n in malformed[:3]), what="malformed rows")
        for name in malformed:  # every tab renders on each snapshot; y shows the YAML with its 10 KB labels
            app.open_job(name, "overview")
            await pilot.press("y")
            assert isinstance(app.screen, JobDetailScreen)
            await wait_for(pilot, lambda name=name: f"Jobs › {name}" in screen_text(app) and "metadata:" in screen_text(app),
                           what=f"the YAML of {name}")
            await pilot.press("escape")
            assert isinstance(app.screen, JobListScreen)
        app.open_check("bad-types")
        await wait_for(pilot, lambda: "Run check of bad-types at" in screen_text(app), what="the check report")
        await pilot.press("escape")
        await pilot.press("colon", *"nodes", "enter")
        await wait_for(pilot, lambda: "bad-node-types" in screen_text(app), what="the malformed Node row")


# ---------------------------------------------------------------- logs: cut mid-line, non-UTF-8, 1 MB lines


HEAD_ROLE = [{"name": "actor", "role": "Actor", "head": True, "cluster": "rlark-gpu-a", "node": "gpu-a1"}]
MEGABYTE_LINE = "M" * (1024 * 1024) + " end of the long line"


@pytest.fixture
def running_job(rel):
    """A Running Job `rel-<n>` with one Header Pod and its log, as the agent would leave it; removed after."""
    counter = getattr(running_job, "n", 0) + 1
    running_job.n = counter
    name = f"rel-data-{counter}"
    pods = seed_running_job(rel, name, HEAD_ROLE)
    cluster, pod = pods["actor"]
    try:
        yield name, cluster, pod
    finally:
        store = rel.store
        doomed = [("jobs", name, "", ROOT), ("tasks", f"{name}-actor", cluster, ROOT),
                  ("pods", pod, "rlark-system", cluster),
                  ("services", f"{name}-actor-ray-head", "rlark-system", cluster)]
        doomed += [("pods", cr["metadata"]["name"], cluster, ROOT) for cr in store.list("pods", cluster)[0]
                   if dig(cr, "spec", "taskName") == f"{name}-actor"]
        for resource, object_name, namespace, plane in doomed:
            with contextlib.suppress(NotFound):
                store.delete(resource, object_name, namespace, plane=plane)
        rel.logs.remove_pod(cluster, "rlark-system", pod)


class Follow:
    """`rlark logs -f` in a daemon thread (a hung follow fails the test instead of hanging the run)."""

    def __init__(self, kubeconfig, *argv: str) -> None:
        self.code = None
        self.thread = threading.Thread(target=self._run, args=(["--kubeconfig", str(kubeconfig), *argv],),
                                       daemon=True)
        self.thread.start()

    def _run(self, argv: list[str]) -> None:
        self.code = main(argv)

    def join(self, timeout: float = 30) -> None:
        self.thread.join(timeout)
        assert not self.thread.is_alive(), "rlark logs -f did not end"


def write_raw(rel, cluster: str, pod: str, data: bytes, second: int) -> None:
    """Bytes as the container wrote them, as one CRI entry (the runtime adds its time, stream and tag)."""
    with rel.logs.path(cluster, "rlark-system", pod, "main", 0).open("ab") as fh:
        fh.write(at(second).strftime("%Y-%m-%dT%H:%M:%SZ stdout F ").encode() + data + b"\n")


def test_cli_logs_print_non_utf8_and_megabyte_lines(rl, rel, running_job):
    name, cluster, pod = running_job
    write_log(rel, cluster, pod, ["first"], when=at(1))
    write_raw(rel, cluster, pod, b"bad bytes \xff\xfe\xc3( end", 2)
    write_raw(rel, cluster, pod, MEGABYTE_LINE.encode(), 3)
    write_log(rel, cluster, pod, ["last"], when=at(4))
    result = rl("logs", name, "--pod", pod)
    no_traceback(result)
    assert result.code == 0, result.err
    assert result.out.splitlines() == ["first", "bad bytes \ufffd\ufffd\ufffd( end", MEGABYTE_LINE, "last"]


def test_cli_follow_cut_mid_line_reconnects_without_a_half_line(rel, env, capsys, running_job):
    name, cluster, pod = running_job
    write_log(rel, cluster, pod, ["one", "two", "three is long enough to be cut in half"], when=at(1))
    rel.faults.cut_logs(after_lines=2, times=2)  # the backlog read, then the first follow stream
    with follow_opens(rel, pod):
        follow = Follow(rel.kubeconfig, "logs", name, "--pod", pod, "-f")
    write_log(rel, cluster, pod, ["four"], when=at(2))
    sent_all(rel, pod)
    remove_pod(rel, name, cluster, pod)
    follow.join()
    captured = capsys.readouterr()
    assert follow.code == 0
    assert captured.out.splitlines() == ["one", "two", "three is long enough to be cut in half", "four"]
    assert "was dropped" in captured.err and "reconnecting" in captured.err
    assert "Traceback" not in captured.err


async def test_tui_log_pane_cut_stream_odd_bytes_and_a_megabyte_line(rel, access, running_job):
    name, cluster, pod = running_job
    write_log(rel, cluster, pod, ["first", "second", "third"], when=at(1))
    write_raw(rel, cluster, pod, b"bad bytes \xff\xfe\xc3( end", 2)
    write_raw(rel, cluster, pod, MEGABYTE_LINE.encode(), 3)
    # the pane's follow stream, not an alert round's read nor the pane's first lines (a tail read, http.TailRead):
    # it replays the newest second, the 1 MB line, and is cut in the middle of the second line written after it
    rel.faults.cut_logs(after_lines=2, times=1, follow_only=True)
    after = ["fourth", "fifth is long enough to be cut in half", "sixth"]
    app = RlarkApp(access)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: name in screen_text(app), what="the Job row")
        app.open_logs(name, Scope.HEADER)
        await wait_for(pilot, lambda: isinstance(app.screen, LogScreen) and app.screen.query("#log-view"),
                       what="the log pane")
        view = app.screen.view
        await wait_for(pilot, lambda: any(line[TEXT] == MEGABYTE_LINE for line in view.shown_lines),
                       what="the 1 MB line")
        write_log(rel, cluster, pod, after, when=at(4))
        await wait_for(pilot, lambda: any(line[NOTICE] and "was dropped" in line[TEXT] for line in view.shown_lines),
                       what="the dropped-stream notice")
        assert any(line[NOTICE] and line[TEXT].startswith(f"-- stream interrupted: [actor/{pod}] ")
                   and line[TEXT].endswith("; reconnecting") for line in view.shown_lines)
        await wait_for(pilot, lambda: any(line[TEXT] == after[-1] for line in view.shown_lines),
                       what="the lines after the cut")
        texts = [line[TEXT] for line in view.shown_lines if not line[NOTICE]]
        assert texts == ["first", "second", "third", "bad bytes \ufffd\ufffd\ufffd( end", MEGABYTE_LINE, *after]
        await pilot.press("w")  # wrapped, the long line ends in a note instead of 8,700 rows
        assert view.wrap
        await wait_for(pilot, lambda: "more characters; ctrl+s saves" in screen_text(app),
                       what="the cut note")
        write_log(rel, cluster, pod, ["after the cut"], when=at(5))
        await wait_for(pilot, lambda: "after the cut" in screen_text(app), what="a line after the reconnect")
        await pilot.press("escape")
        assert isinstance(app.screen, JobListScreen)


# ---------------------------------------------------------------- the Ray dashboard down, then back


@pytest.fixture
def ray_dashboard(rel, running_job):
    """`up()` starts a fake Ray dashboard on port 8265 of the Job's head Pod (rlark-server's taskproxy reaches it);
    `down()` stops it (connection refused)."""
    name, cluster, pod = running_job
    running: list[FakeRayDashboard] = []

    def up() -> None:
        running.append(FakeRayDashboard(alive=1, dead=0).start())
        rel.proxies.register_pod(cluster, pod, 8265, running[-1].url)

    def down() -> None:
        running.pop().stop()

    yield up, down
    while running:
        down()
    rel.proxies.unregister_pod(cluster, pod)


def test_cli_describe_and_check_say_the_ray_dashboard_is_down_then_recover(rl, running_job, ray_dashboard):
    name = running_job[0]
    up, down = ray_dashboard
    up()
    assert "Ray:\n  alive nodes 1 / expected 1" in rl("describe", "job", name).out
    down()
    described = rl("describe", "job", name)
    no_traceback(described)
    assert described.code == 0
    ray = described.out.split("Ray:\n", 1)[1]
    assert ray.startswith("  unavailable: ") and "Ray dashboard of" in ray, ray
    checked = rl("check", name)
    no_traceback(checked)
    assert "alive Ray nodes unknown" in checked.out
    up()
    assert "Ray:\n  alive nodes 1 / expected 1" in rl("describe", "job", name).out


async def test_tui_ray_tab_shows_the_dashboard_down_then_recovers(access, running_job, ray_dashboard):
    name = running_job[0]
    up, down = ray_dashboard
    up()
    app = RlarkApp(access)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: name in screen_text(app), what="the Job row")
        app.open_job(name, "ray")
        await wait_for(pilot, lambda: "1 of 1 expected" in screen_text(app), what="alive Ray nodes")
        down()
        await wait_for(pilot, lambda: "Unavailable" in screen_text(app), what="the dashboard-down state")
        shown = screen_text(app)  # the header leaves Ray to this tab, by design
        assert "Alive nodes: unknown" in shown and f"Unavailable: Ray dashboard of {name}" in shown, shown
        await pilot.press("w", "r")  # keys still answer while the dashboard is down
        assert isinstance(app.screen, JobDetailScreen)
        up()
        await wait_for(pilot, lambda: "1 of 1 expected" in screen_text(app) and "Unavailable" not in screen_text(app),
                       what="recovery once the dashboard is back")


# ---------------------------------------------------------------- 10,000 Nodes


NODE_COUNT = 10_000


@pytest.fixture(scope="module")
def ten_thousand_nodes(reliability_sandbox):
    """Made once for the CLI and the TUI test (storing 10,000 Nodes takes seconds); removed after both."""
    rel = reliability_sandbox
    base = demo_nodes()[0]
    names = [f"scale-node-{index:05d}" for index in range(NODE_COUNT)]
    with rel.store.batch():
        for name in names:
            node = copy.deepcopy(base)
            node["metadata"]["name"] = name
            node["metadata"]["labels"]["kubernetes.io/hostname"] = name
            rel.store.create("nodes", node)
    try:
        yield names
    finally:
        with rel.store.batch():  # orphan: Nodes own nothing, and looking for dependents is a scan per Node
            for name in names:
                rel.store.delete("nodes", name, "rlark-gpu-a", orphan=True)


ONE_WORKER = pytest.mark.xdist_group("ten-thousand-nodes")
"""The two tests of the 10,000 Nodes share an xdist worker, so they are stored once (about 12 s each time)."""


@ONE_WORKER
def test_cli_lists_ten_thousand_nodes(rl, ten_thousand_nodes):
    result = rl("get", "nodes", "-A")
    no_traceback(result)
    assert result.code == 0, result.err
    rows = result.out.splitlines()[1:]
    assert len(rows) == NODE_COUNT + len(demo_nodes())
    assert rows[-1].split()[:3] == ["rlark-gpu-a", "scale-node-09999", "Online"]
    assert rl("get", "jobs").code == 0


@ONE_WORKER
async def test_tui_job_list_and_node_list_with_ten_thousand_nodes(access, ten_thousand_nodes):
    app = RlarkApp(access)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: "demo-ppo" in screen_text(app), timeout=30, what="the job list")
        await pilot.press("colon", *"nodes", "enter")
        await wait_for(pilot, lambda: "scale-node-0" in screen_text(app), timeout=30, what="the Node list")
        await pilot.press("end")
        await wait_for(pilot, lambda: "scale-node-09999" in screen_text(app), what="the last Node")
        await pilot.press("slash", *"gpu-a2", "enter")
        await wait_for(pilot, lambda: "scale-node-0" not in screen_text(app) and "gpu-a2" in screen_text(app),
                       what="the filtered Node list")
        await pilot.press("escape", "escape")
        await wait_for(pilot, lambda: isinstance(app.screen, JobListScreen), what="back to the job list")


# ---------------------------------------------------------------- a 40x10 terminal and back


async def test_tui_shrunk_to_40x10_and_back_keeps_rendering_and_answering_keys(rel, access, running_job):
    name = running_job[0]
    app = RlarkApp(access)
    async with app.run_test(size=(40, 10)) as pilot:
        await wait_for(pilot, lambda: "demo-ppo" in screen_text(app), what="the list at 40x10")
        assert len(screen_text(app).splitlines()) == 10
        await pilot.resize_terminal(120, 40)
        await wait_for(pilot, lambda: "DISPLAY NAME" in screen_text(app) and name in screen_text(app),
                       what="the list back at 120x40")
        app.screen.table.select_key(name)
        await pilot.press("enter")
        assert isinstance(app.screen, JobDetailScreen)
        await pilot.resize_terminal(40, 10)
        await pilot.press("d")
        await wait_for(pilot, lambda: "Jobs" in screen_text(app), what="the detail at 40x10")
        await pilot.press("l")
        assert isinstance(app.screen, LogScreen)
        write_log(rel, *running_job[1:], ["written while small"], when=at(1))
        await pilot.resize_terminal(120, 40)
        await wait_for(pilot, lambda: "written while small" in screen_text(app), what="the log pane back at 120x40")
        await pilot.press("escape", "escape")
        assert isinstance(app.screen, JobListScreen)
        await pilot.press("question_mark")
        await wait_for(pilot, lambda: "Help" in screen_text(app), what="help after the resizes")


def test_cli_ray_dashboard_url_at_a_closed_port_is_named_unavailable(rl, env, running_job):
    name = running_job[0]
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed = probe.getsockname()[1]
    (env / "config.yaml").write_text(f"ray:\n  urls:\n    {name}: http://127.0.0.1:{closed}\n")
    described = rl("describe", "job", name)
    no_traceback(described)
    assert described.code == 0, described.err
    ray = described.out.split("Ray:\n", 1)[1]
    assert ray.startswith("  unavailable: ") and f"127.0.0.1:{closed}" in ray, ray


@pytest.mark.parametrize("which", ["job", "task", "pod"])
async def test_tui_detail_renders_every_spoiled_field(which):
    """The detail screen (all five tabs render on each snapshot) fed one spoiled object after another."""
    objects = _well_formed()
    objects["task"]["status"] = {"phase": "Pending", "events": [
        {"type": "Warning", "reason": "Failed", "message": "pull failed", "count": 2, "objectKind": "Pod",
         "objectName": "j-actor-0", "lastTime": "2026-11-29T10:00:00Z"}],
        "pullProgress": [{"image": "img", "status": "Downloading", "downloaded": "1Gi", "total": "2Gi"}]}
    app = RlarkApp()
    async with app.run_test(size=SIZE) as pilot:
        app.apply_snapshot(_detail_snapshot(objects))
        app.open_job("j", "overview")
        await pilot.pause()
        for number, (description, spoiled) in enumerate(variants(objects[which])):
            if isinstance(spoiled.get("metadata"), dict):  # a new version, or the screen skips the render
                spoiled["metadata"]["resourceVersion"] = str(100 + number)
            app.apply_snapshot(_detail_snapshot({**objects, which: spoiled}))  # synchronous: a crash raises here
            if number % 25 == 0:
                await pilot.pause()
            assert isinstance(app.screen, JobDetailScreen), description
        await pilot.pause()
        assert "Jobs › j" in screen_text(app)


def _detail_snapshot(objects: dict) -> Snapshot:
    return Snapshot(jobs={"j": objects["job"]}, tasks={"rlark-gpu-a/j-actor": objects["task"]},
                    pods={"rlark-gpu-a/p": objects["pod"]},
                    ray={"j": {"alive_nodes": 1, "expected": 3, "status_text": "text", "jobs": [], "jobs_error": None,
                               "error": None, "source": "fake", "polled_at": 1.0}})
