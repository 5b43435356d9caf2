"""Issue 10's fault matrix, control-plane half: the API server down (dropped connections or 503) then back,
watches closed every second, 410 Gone on watch, 403 on listing (and on watching) Jobs, 409 and 422 with causes
on submit, stop, delete and the wizard, 2 s responses, and a kubeconfig pointing at a closed port (or at a port
that never answers) — each seen through the CLI and the TUI.

What a user must get: one clear line and a non-zero exit (CLI), a clear header / pane state (TUI), recovery by
itself once the fault goes (watching commands resume, the list comes back without a key press), keys that still
answer during the fault, never a traceback. The sandbox is Ray-free (tests/reliability/conftest.py).
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time

import pytest
import yaml

from rlark_sandbox.store import ROOT, NotFound
from rlark_tui.cli import main
from rlark_tui.cluster.access import ClusterAccess
from rlark_tui.screens.confirm import ConfirmScreen
from rlark_tui.screens.help import HelpScreen
from rlark_tui.screens.job_list import JobListScreen
from rlark_tui.screens.wizard import WizardScreen
from rlark_tui.tui.app import RlarkApp
from rlark_tui.widgets.status_header import StatusHeader
from tests.clirun import Result
from tests.cluster.seeding import at, job_manifest, remove_pod, seed_running_job, write_log
from tests.pilot import wait_for as pilot_wait_for
from tests.streams import follow_opens, sent_all, watch_asked, watch_opens
from tests.wizard.helpers import base_draft, open_wizard

SIZE = (120, 30)
DEMO = "demo-ppo"
ROLE = [{"name": "actor", "role": "Actor", "head": True, "cluster": "rlark-gpu-a", "node": "gpu-a1"}]
CAUSES = [{"field": "spec.tasks[0].image", "reason": "FieldValueRequired", "message": "Required value"},
          {"field": "metadata.name", "reason": "FieldValueInvalid", "message": "must be a DNS-1123 label"}]


# ---------------------------------------------------------------- helpers


def screen_text(app) -> str:
    """Every character on the screen, row by row: what the user reads."""
    return "\n".join(strip.text for strip in app.screen._compositor.render_strips())


def header(app) -> str:
    return app.screen.query_one(StatusHeader).summary()


def list_message(app) -> str:
    return str(app.screen.query_one("#job-list-message").render())


def notes(app) -> list[str]:
    return [n.message for n in app._notifications]


def wait_for(pilot, predicate, what: str = "condition", timeout: float = 20.0):
    return pilot_wait_for(pilot, predicate, what, timeout, show=lambda app: f"{header(app)}\n{screen_text(app)}")


async def keys_answer(pilot) -> None:
    """`?` opens the help screen and esc closes it: the UI is not frozen by the fault."""
    app = pilot.app
    await pilot.press("question_mark")
    await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen), timeout=5, what="the help screen")
    await pilot.press("escape")
    await wait_for(pilot, lambda: isinstance(app.screen, JobListScreen), timeout=5, what="the job list")


def one_line_error(result, *parts: str) -> None:
    assert result.code == 1, (result.code, result.out, result.err)
    assert "Traceback" not in result.err + result.out
    lines = result.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.err
    for part in parts:
        assert part in lines[0], lines[0]


def add_job(rel, name: str) -> None:
    rel.store.create("jobs", job_manifest(name, ROLE))


def drop_job(rel, name: str) -> None:
    with contextlib.suppress(NotFound):
        rel.store.delete("jobs", name, "", plane=ROOT)


class Background:
    """`rlark ARGV` in a thread (watching commands); its output is read from capsys after `join`."""

    def __init__(self, kubeconfig, *argv: str) -> None:
        self.code = None
        self.thread = threading.Thread(target=self._run, args=(["--kubeconfig", str(kubeconfig), *argv],))
        self.thread.start()

    def _run(self, argv) -> None:
        self.code = main(argv)

    def join(self, timeout: float = 60) -> int:
        self.thread.join(timeout)
        assert not self.thread.is_alive(), "the command did not end"
        return self.code


@pytest.fixture
def access(rel, env):
    access = ClusterAccess.open(str(rel.kubeconfig), rel.context)
    yield access
    access.close()


def kubeconfig_at(rel, port: int, path):
    """The sandbox's kubeconfig with every server moved to 127.0.0.1:`port`, written to `path`."""
    config = yaml.safe_load(rel.kubeconfig.read_text())
    for cluster in config["clusters"]:
        server = cluster["cluster"]["server"]
        cluster["cluster"]["server"] = server.replace(server.split("/")[2], f"127.0.0.1:{port}")
    path.write_text(yaml.safe_dump(config))
    path.chmod(0o600)
    return path


@pytest.fixture
def closed_port_kubeconfig(rel, tmp_path):
    """The sandbox's kubeconfig with every server moved to a port nobody listens on."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return kubeconfig_at(rel, port, tmp_path / "kubeconfig-closed-port")


# ---------------------------------------------------------------- CLI


def test_cli_closed_port_is_one_line_and_exit_1(closed_port_kubeconfig, env, capsys):
    """Done-when: a kubeconfig at a closed port gives a clear error and a non-zero exit (get -w included:
    it does not retry forever when it never listed anything)."""
    for argv in (["get", "jobs"], ["--request-timeout", "10", "get", "jobs", "-w"], ["logs", "-f", DEMO],
                 ["describe", "job", DEMO]):
        code = main(["--kubeconfig", str(closed_port_kubeconfig), *argv])
        captured = capsys.readouterr()
        one_line_error(Result(code, captured.out, captured.err), "cannot reach the control plane",
                       "connection refused")


def test_cli_silent_port_times_out_connecting_in_one_line(rel, env, capsys, tmp_path):
    """A server that takes the connection and never answers (a firewalled or hung API server): the connect
    timeout (5 s, TLS handshake included) ends it with a line that says so, not a 30 s read timeout."""
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(16)
        path = kubeconfig_at(rel, silent.getsockname()[1], tmp_path / "kubeconfig-silent")
        code = main(["--kubeconfig", str(path), "get", "jobs"])
    captured = capsys.readouterr()
    one_line_error(Result(code, captured.out, captured.err), "timed out connecting to the control plane")


@pytest.mark.parametrize("mode, says", [("drop", "the server closed it without answering"),
                                        ("503", "ServiceUnavailable (503)")])
def test_cli_outage_fails_in_one_line_then_works_again(rl, rel, mode, says):
    rel.faults.outage(30, mode)
    one_line_error(rl("get", "jobs"), "control plane", says)
    rel.faults.clear()
    result = rl("get", "jobs")
    assert result.code == 0 and DEMO in result.out, result.err


def test_cli_watch_and_follow_resume_after_an_outage(rel, env, capsys):
    """`get jobs -w` and `logs -f` say the stream was interrupted, reconnect by themselves and print what
    happened after the outage (no line lost or repeated)."""
    pods = seed_running_job(rel, "rel-cp-follow", ROLE)
    cluster, pod = pods["actor"]
    try:
        write_log(rel, cluster, pod, ["before"], when=at(1))
        with watch_opens(rel, "jobs"), follow_opens(rel, pod):
            watch = Background(rel.kubeconfig, "--request-timeout", "9", "get", "jobs", "-w")
            follow = Background(rel.kubeconfig, "logs", "rel-cp-follow", "--pod", pod, "-f")
        with watch_opens(rel, "jobs"), follow_opens(rel, pod):  # both again once the 2 s outage is over
            rel.faults.outage(2)
            write_log(rel, cluster, pod, ["during"], when=at(2))
        add_job(rel, "rel-cp-after-outage")
        write_log(rel, cluster, pod, ["after"], when=at(3))
        sent_all(rel, pod)
        remove_pod(rel, "rel-cp-follow", cluster, pod)
        assert follow.join() == 0
        assert watch.join() == 0
    finally:
        drop_job(rel, "rel-cp-follow")
        drop_job(rel, "rel-cp-after-outage")
        rel.logs.remove_pod(cluster, "rlark-system", pod)
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err + captured.out
    out = captured.out.splitlines()
    assert [line for line in out if line in ("before", "during", "after")] == ["before", "during", "after"]
    assert "-- no Pods left to follow for job rel-cp-follow" in captured.err  # --pod ends once the Pod is gone
    assert sum(line.startswith("rel-cp-after-outage ") for line in out) == 1
    assert "-- watch interrupted: " in captured.err and "-- stream interrupted: " in captured.err
    interrupted = [line for line in captured.err.splitlines() if "interrupted" in line]
    assert all(line.endswith("; reconnecting") for line in interrupted), interrupted


def test_cli_check_wait_rides_out_a_failed_request(rel, env, capsys):
    """`check --wait` reports a failed request while waiting, retries, and ends with its normal verdict."""
    check = Background(rel.kubeconfig, "check", DEMO, "--wait", "8")
    err = ""
    while "pending; waiting" not in err:  # the first evaluation is done: the wait loop runs
        assert check.thread.is_alive(), err
        time.sleep(0.1)
        err += capsys.readouterr().err
    rel.faults.fail(503, "get", "jobs", times=1)  # the next evaluation's first request (an outage could
    # also hit requests whose errors the checks keep as evidence, which makes the verdict timing-dependent)
    assert check.join() == 3  # demo-ppo has no Pods in the Ray-free sandbox: pending, not failed
    captured = capsys.readouterr()
    err += captured.err
    assert "Traceback" not in err
    assert "rlark check: control plane ServiceUnavailable (503) on get jobs" in err and "retrying" in err
    assert f"Run check of {DEMO}" in captured.out


def test_cli_watch_survives_closed_watches_and_410(rel, env, capsys):
    """Watches ended every second and two 410s: get -w relists quietly and prints each row once."""
    rel.faults.close_watches_every(1)
    rel.faults.expire_watches("jobs", times=2)
    try:
        with watch_opens(rel, "jobs", count=2):  # after the two 410s, the first watch ended and resumed
            watch = Background(rel.kubeconfig, "--request-timeout", "6", "get", "jobs", "-w")
        add_job(rel, "rel-cp-after-410")
        assert watch.join() == 0
    finally:
        drop_job(rel, "rel-cp-after-410")
    captured = capsys.readouterr()
    out = captured.out.splitlines()
    assert "Traceback" not in captured.err
    assert sum(line.startswith(f"{DEMO} ") for line in out) == 1, captured.out
    assert sum(line.startswith("rel-cp-after-410 ") for line in out) == 1, captured.out


def test_cli_403_on_listing_jobs(rl, rel):
    rel.faults.fail(403, "list", "jobs")
    one_line_error(rl("get", "jobs"), "forbidden (403): not allowed to list jobs")
    one_line_error(rl("--request-timeout", "10", "get", "jobs", "-w"), "forbidden (403)")
    rel.faults.clear()
    assert rl("get", "jobs").code == 0


def test_cli_watch_refused_403_keeps_listing(rel, env, capsys):
    """List allowed, watch forbidden: get -w says why, lists again at the backoff's pace and prints new rows."""
    rel.faults.fail(403, "watch", "jobs")
    try:
        with watch_asked(rel, "jobs"):  # listed, then refused its watch
            watch = Background(rel.kubeconfig, "--request-timeout", "7", "get", "jobs", "-w")
        add_job(rel, "rel-cp-no-watch")
        assert watch.join() == 0
    finally:
        drop_job(rel, "rel-cp-no-watch")
    captured = capsys.readouterr()
    out = captured.out.splitlines()
    assert "Traceback" not in captured.err
    assert "-- watch interrupted: forbidden (403): not allowed to watch jobs" in captured.err
    assert sum(line.startswith(f"{DEMO} ") for line in out) == 1, captured.out
    assert sum(line.startswith("rel-cp-no-watch ") for line in out) == 1, captured.out


def test_cli_409_and_422_on_submit_stop_and_delete(rl, rel, tmp_path):
    manifest = tmp_path / "job.yaml"
    manifest.write_text(yaml.safe_dump(job_manifest("rel-cp-submit", ROLE)))
    rel.faults.fail(409, "create", "jobs", message='jobs.rlinf.io "rel-cp-submit" already exists')
    one_line_error(rl("submit", "-f", str(manifest)), "conflict (409) on create jobs",
                   '"rel-cp-submit" already exists')
    rel.faults.clear()
    rel.faults.fail(422, "create", "jobs", causes=CAUSES)
    one_line_error(rl("submit", "-f", str(manifest)), "invalid (422)",
                   "spec.tasks[0].image: Required value; metadata.name: must be a DNS-1123 label")
    rel.faults.clear()
    assert "not found" in rl("get", "jobs", "rel-cp-submit").err
    rel.faults.fail(409, "patch", "jobs")
    one_line_error(rl("stop", DEMO, "--yes"), "conflict (409) on patch jobs")
    rel.faults.fail(422, "delete", "jobs", causes=CAUSES[:1])
    one_line_error(rl("delete", DEMO, "--yes"), "invalid (422)", "spec.tasks[0].image: Required value")
    rel.faults.clear()
    assert rl("get", "jobs", DEMO).code == 0


def test_cli_submit_cut_off_says_the_job_may_exist(rl, rel, tmp_path):
    """A create whose answer is lost may still have happened: the message says how to find out."""
    manifest = tmp_path / "job.yaml"
    manifest.write_text(yaml.safe_dump(job_manifest("rel-cp-cut", ROLE)))
    rel.faults.delay(1, verb="create", resource="jobs")
    one_line_error(rl("--request-timeout", "0.5", "submit", "-f", str(manifest)), "timed out",
                   "may have reached the server: check with `rlark get jobs rel-cp-cut`")
    # the slow server is the behaviour under test: past its 1 s delay, a create it may still have finished after
    # the client left is there to drop
    time.sleep(1)
    drop_job(rel, "rel-cp-cut")


def test_cli_slow_responses(rl, rel):
    """2 s answers: the command waits and succeeds; with --request-timeout 1 it says it timed out."""
    rel.faults.delay(2, verb="list", resource="jobs")
    result = rl("get", "jobs")
    assert result.code == 0 and DEMO in result.out
    one_line_error(rl("--request-timeout", "1", "get", "jobs"), "timed out after 1s waiting for the control plane")


# ---------------------------------------------------------------- TUI


async def test_tui_closed_port_shows_the_error_and_keys_answer(closed_port_kubeconfig, env):
    access = ClusterAccess.open(str(closed_port_kubeconfig), None)
    app = RlarkApp(access)
    try:
        async with app.run_test(size=SIZE) as pilot:
            await wait_for(pilot, lambda: "Cannot list Jobs from the control plane" in list_message(app),
                           what="the control-plane error state")
            assert "connection refused" in list_message(app) and "retrying" in list_message(app)
            assert "control plane disconnected (cannot reach the control plane: connection refused)" in header(app)
            await keys_answer(pilot)
    finally:
        access.close()


@pytest.mark.parametrize("mode, says", [("drop", "dropped"), ("503", "ServiceUnavailable (503)")])
async def test_tui_outage_goes_stale_then_comes_back_by_itself(rel, access, mode, says):
    app = RlarkApp(access)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: DEMO in screen_text(app) and "control plane connected" in header(app),
                       what="the list")
        rel.faults.outage(2, mode)
        await wait_for(pilot, lambda: "control plane stale" in header(app), what="the stale header")
        assert says in header(app) and "reconnecting" in header(app)
        assert DEMO in screen_text(app)  # the last list stays on screen
        await keys_answer(pilot)
        await wait_for(pilot, lambda: "control plane connected" in header(app), what="recovery")
        add_job(rel, "rel-cp-tui-outage")
        try:
            await wait_for(pilot, lambda: "rel-cp-tui-outage" in screen_text(app), what="a Job made after")
        finally:
            drop_job(rel, "rel-cp-tui-outage")


async def test_tui_ctrl_r_relists_without_blanking_the_list(rel, access):
    """ctrl+r lists everything again; until the new list answers (slowed to 1 s here) the rows stay shown."""
    app = RlarkApp(access)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: DEMO in screen_text(app) and "control plane connected" in header(app),
                       what="the list")
        add_job(rel, "rel-cp-ctrl-r")
        try:
            await wait_for(pilot, lambda: "rel-cp-ctrl-r" in screen_text(app), what="the new Job")
            rel.faults.delay(1, verb="list", resource="jobs")
            await pilot.press("ctrl+r")
            for _ in range(10):
                await pilot.pause(0.05)
                assert DEMO in screen_text(app) and "rel-cp-ctrl-r" in screen_text(app)
        finally:
            drop_job(rel, "rel-cp-ctrl-r")
        await wait_for(pilot, lambda: "rel-cp-ctrl-r" not in screen_text(app), what="the deleted Job gone")
        assert DEMO in screen_text(app)


async def test_tui_started_during_an_outage_comes_up_by_itself(rel, access):
    """Every source fails at start (control plane, data planes, gateway); all of them recover on their own."""
    rel.faults.outage(3)
    app = RlarkApp(access)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: "Cannot list Jobs from the control plane" in list_message(app),
                       what="the outage state")
        assert "control plane disconnected (connection to the control plane was dropped" in header(app)
        await keys_answer(pilot)
        await wait_for(pilot, lambda: DEMO in screen_text(app), what="the list after the outage")
        await wait_for(pilot, lambda: "stale" not in header(app) and "disconnected" not in header(app),
                       what="every source connected again")
        assert "● control plane connected  │ ● 2 data planes connected  │ ● gateway connected" in header(app)


async def test_tui_closed_watches_and_410_keep_the_list_live(rel, access):
    app = RlarkApp(access)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: DEMO in screen_text(app), what="the list")
        rel.faults.close_watches_every(1)
        rel.faults.expire_watches("jobs", times=2)
        await pilot.pause(2.5)
        add_job(rel, "rel-cp-tui-410")
        try:
            await wait_for(pilot, lambda: "rel-cp-tui-410" in screen_text(app), what="a Job made meanwhile")
            await keys_answer(pilot)
            assert "control plane connected" in header(app)
        finally:
            drop_job(rel, "rel-cp-tui-410")
        await wait_for(pilot, lambda: "rel-cp-tui-410" not in screen_text(app), what="the deletion")


async def test_tui_403_on_listing_jobs_says_so_then_lists(rel, access):
    rel.faults.fail(403, "list", "jobs")
    app = RlarkApp(access)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: "forbidden (403)" in list_message(app), what="the 403 state")
        assert "Cannot list Jobs from the control plane: forbidden (403): not allowed to list jobs" in \
            list_message(app)
        assert "control plane disconnected (forbidden (403)" in header(app)
        await keys_answer(pilot)
        rel.faults.clear()
        await wait_for(pilot, lambda: DEMO in screen_text(app) and "control plane connected" in header(app),
                       what="the list after the 403 goes")
        assert not list_message(app)


async def test_tui_watch_refused_403_stays_stale_and_still_refreshes(rel, access):
    rel.faults.fail(403, "watch", "jobs")
    app = RlarkApp(access)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: DEMO in screen_text(app) and "not allowed to watch" in header(app),
                       what="the list with a stale header")
        assert "control plane stale (forbidden (403): not allowed to watch jobs" in header(app)
        add_job(rel, "rel-cp-tui-no-watch")
        try:
            await wait_for(pilot, lambda: "rel-cp-tui-no-watch" in screen_text(app), what="a relisted Job")
            await keys_answer(pilot)
            rel.faults.clear()
            await wait_for(pilot, lambda: "control plane connected" in header(app), what="the watch back")
        finally:
            drop_job(rel, "rel-cp-tui-no-watch")
        await wait_for(pilot, lambda: "rel-cp-tui-no-watch" not in screen_text(app), what="the deletion")


async def test_tui_slow_responses_keep_keys_answering(rel, access):
    rel.faults.delay(2)
    app = RlarkApp(access)
    async with app.run_test(size=SIZE) as pilot:
        assert "Connecting to rlark-sandbox" in list_message(app)
        await keys_answer(pilot)
        await wait_for(pilot, lambda: DEMO in screen_text(app), what="the slow list")
        # the app's reads still queued end at once: closing the app waits for its threads (8 s at 2 s a read)
        rel.faults.clear()


async def test_tui_stop_and_delete_refused_409_422_say_why(rel, access):
    app = RlarkApp(access)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: DEMO in screen_text(app), what="the list")
        screen = app.screen
        await wait_for(pilot, lambda: screen.selected_job == DEMO, what="the selected row")
        rel.faults.fail(409, "patch", "jobs")
        await pilot.press("s")
        assert isinstance(app.screen, ConfirmScreen)
        await pilot.press("y")
        await wait_for(pilot, lambda: any("conflict (409)" in n for n in notes(app)), what="the 409 message")
        assert f'stop {DEMO}: conflict (409) on patch jobs "{DEMO}"' in notes(app)[-1]
        rel.faults.fail(422, "delete", "jobs", causes=CAUSES)
        await pilot.press("ctrl+d")
        assert isinstance(app.screen, ConfirmScreen)
        await pilot.press("y")
        await wait_for(pilot, lambda: any("invalid (422)" in n for n in notes(app)), what="the 422 message")
        assert "spec.tasks[0].image: Required value; metadata.name: must be a DNS-1123 label" in notes(app)[-1]
        assert all("\n" not in n for n in notes(app))
        assert DEMO in screen_text(app) and "control plane connected" in header(app)


async def test_tui_wizard_submit_409_422_keeps_the_draft(rel, access):
    name = "rel-cp-wizard"
    app = RlarkApp(access)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_wizard(pilot, base_draft(name))
        await screen.load(screen.draft, step=4)
        draft = screen.draft
        result = screen.query_one("#w-result")
        rel.faults.fail(409, "create", "jobs", message=f'jobs.rlinf.io "{name}" already exists')
        await pilot.press("ctrl+g")
        await wait_for(pilot, lambda: "Submit refused: conflict (409)" in str(result.render()), what="409")
        assert f'"{name}" already exists' in str(result.render())
        rel.faults.clear()
        rel.faults.fail(422, "create", "jobs", causes=CAUSES)
        await pilot.press("ctrl+g")
        await wait_for(pilot, lambda: "Submit refused: invalid (422)" in str(result.render()), what="422")
        assert "spec.tasks[0].image: Required value; metadata.name: must be a DNS-1123 label" in \
            str(result.render())
        assert app.screen is screen and screen.step == 4 and screen.draft == draft
        rel.faults.clear()
        try:
            await pilot.press("ctrl+g")
            await wait_for(pilot, lambda: not isinstance(app.screen, WizardScreen), what="the submit")
            assert rel.store.get("jobs", name, "", plane=ROOT)
        finally:
            drop_job(rel, name)


def test_a_watch_error_whose_code_is_no_number_is_an_error_and_the_watch_goes_on(rel, access):
    """A watch's ERROR event is the control plane's: its Status code read with int() raised OverflowError for
    `1e400` (JSON decodes it to inf) and TypeError for a list, past the watch's handling of a broken stream: the
    list+watch every follower of Jobs reads ended in that exception. Each is one ERROR of the stream, and the
    watch lists again and goes on."""
    from rlark_tui.cluster.access import Backoff
    from rlark_tui.cluster.kinds import JOBS

    for code in (float("inf"), "²", [1]):
        rel.faults.expire_watches("jobs", code=code)
    stop = threading.Event()
    seen: list[str] = []
    for event in access.list_watch(JOBS, stop, backoff=Backoff(0.01, 0.05)):
        seen.append(event.type)
        if seen.count("CONNECTED") == 4:
            stop.set()
            break
    assert seen == ["RELIST", "CONNECTED", "ERROR"] * 3 + ["RELIST", "CONNECTED"], seen
