"""A crash prints no secret (issue 33 item 5): the TUI, crashed on purpose in tmux with a Job's secret env value in
a local and in the exception's message, says one line naming a 0600 report; neither the pane (its scrollback
included) nor the report holds the secret, and the report has the traceback without locals."""

from __future__ import annotations

import asyncio
import gc
import os
import re
import shutil
import stat
import subprocess
import sys
import textwrap
import threading
import uuid
from pathlib import Path

import pytest

from rlark_tui.local import crash
from tests.pod.test_tui_pod import _tmux, _wait_pane
from tests.sandbox.helpers import job

NAME = "crash-holds-secret"
SECRET = f"crash-{uuid.uuid4().hex}"
ENDED = "app ended with status "
LINE = re.compile(r"^rlark: crashed \((?P<what>.*)\); report: (?P<path>\S+)$", re.M)
BACKGROUND = re.compile(r"^rlark: a background task failed \((?P<what>.*)\); report: (?P<path>\S+)$")
"""The line of a bug off the main path (crash.Teller): a thread's, a worker's, a task's nobody awaits."""

# The test's own app: RlarkApp with one more key, whose action reads the Job's secret env value into a local
# and raises with it in the message (the product has no such key).
SCRIPT = textwrap.dedent("""\
    import sys

    from textual.binding import Binding

    from rlark_tui import cli
    from rlark_tui.tui import app as tui


    class Crashing(tui.RlarkApp):
        BINDINGS = [*tui.RlarkApp.BINDINGS, Binding("ctrl+t", "crash", priority=True)]

        def action_crash(self):
            spec = self.index.jobs[sys.argv[1]].raw["spec"]["tasks"][0]["kubernetes"]["workload"]["template"]
            token = spec["spec"]["containers"][0]["env"][0]["value"]
            raise ValueError(f"cannot use {token}; WANDB_API_KEY={token}")


    tui.RlarkApp = Crashing
    sys.exit(cli.main(["--kubeconfig", sys.argv[2]]))
""")


@pytest.fixture
def secret_job(plain_sandbox):
    spec = job(NAME)
    container = spec["spec"]["tasks"][0]["kubernetes"]["workload"]["template"]["spec"]["containers"][0]
    container["env"] = [{"name": "WANDB_API_KEY", "value": SECRET}]
    plain_sandbox.store.create("jobs", spec)
    yield plain_sandbox
    plain_sandbox.store.delete("jobs", NAME)


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
def test_a_crash_in_tmux_says_one_line_and_writes_a_masked_private_report(secret_job, tmp_path):
    script = tmp_path / "crashing.py"
    script.write_text(SCRIPT)
    conf = tmp_path / "tmux.conf"
    conf.write_text("set -g remain-on-exit on\n")
    socket = str(tmp_path / "tmux.sock")
    state = tmp_path / "state"
    env = {**{k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES", "NO_COLOR")},
           "RLARK_CONFIG": str(tmp_path / "config.yaml"), "RLARK_STATE_DIR": str(state), "TERM": "tmux-256color"}
    # A shell runs the app and says how it ended: tmux 3.3 can see the pty close and never reap the child (pane
    # dead, no status, no "Pane is dead" line), so its own status is not waited for.
    command = f"{sys.executable} {script} {NAME} {secret_job.kubeconfig}; echo \"{ENDED}$?\""
    subprocess.run(["tmux", "-S", socket, "-f", str(conf), "new-session", "-d", "-s", "t", "-x", "120", "-y", "30",
                    command], env=env, check=True, timeout=20)
    try:
        _wait_pane(socket, NAME)
        _tmux(socket, "send-keys", "-t", "t", "C-t")
        _wait_pane(socket, ENDED, timeout=90)
        shown = _tmux(socket, "capture-pane", "-p", "-J", "-S", "-", "-t", "t")
    finally:
        _tmux(socket, "kill-server")
    assert SECRET not in shown, shown
    shown, _, status = shown.partition(ENDED)
    said = LINE.findall(shown)
    assert len(said) == 1, shown
    what, path = said[0]
    assert what == "ValueError"
    assert "Traceback" not in shown and "action_crash" not in shown
    assert status.split("\n", 1)[0] == "1"
    report = open(path).read()
    assert os.path.dirname(path) == str(state / crash.REPORTS_DIR)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert SECRET not in report
    assert "Traceback (most recent call last):" in report and "in action_crash" in report
    assert "ValueError: cannot use ***; WANDB_API_KEY=***" in report


@pytest.mark.writes_crash_report
def test_the_report_masks_chained_messages_and_cuts_the_line(env):
    try:
        try:
            raise KeyError(f"HF_TOKEN=hf_{'x' * 34}")
        except KeyError as inner:
            raise RuntimeError("plain words " * 40) from inner
    except RuntimeError as exc:
        error = exc
    line = crash.write_report(error)
    what, path = LINE.fullmatch(line).groups()
    assert what == "RuntimeError"
    report = open(path).read()
    assert "hf_xxxx" not in report and "HF_TOKEN=***" in report and "RuntimeError: plain words plain" in report
    assert "The above exception was the direct cause" in report and stat.S_IMODE(os.stat(path).st_mode) == 0o600


def test_an_unwritable_state_dir_still_says_one_line(env, tmp_path, monkeypatch):
    blocked = tmp_path / "blocked"
    blocked.write_text("a file, not a directory")
    monkeypatch.setenv("RLARK_STATE_DIR", str(blocked))
    line = crash.write_report(ValueError("\x1b[31mred\x1b[0m text"))
    assert line.startswith("rlark: crashed (ValueError); no report: ") and "\n" not in line


@pytest.mark.writes_crash_report
def test_a_command_that_crashes_says_one_masked_line_and_writes_the_report(env, capsys, monkeypatch):
    """A bug in a headless command (outside Textual's handler) ends as the TUI's does: one line, exit 1, and the
    masked 0600 report, not a Python traceback with the token in its message. The line names the exception's type
    only (issue 33 item 5, a sixth round): its message quoted a Secret's value that does not look like one (the
    command's masking knew it; the line's did not); the report masks it, known from the crashed frame's masking."""
    from rlark_tui import cli
    from rlark_tui.commands import version
    from rlark_tui.text.redact import LineRedactor

    token = f"hf_{uuid.uuid4().hex}{uuid.uuid4().hex[:2]}"
    password = f"tulip-{uuid.uuid4().hex[:6]}-garden"

    def broken():
        redact = LineRedactor([password])  # as rlark logs holds the values of the Secrets it read
        raise KeyError(f"HF_TOKEN={token} cannot parse {redact(password)!r} in {password!r}")

    monkeypatch.setattr(version, "client_version", broken)
    code = cli.main(["version"])
    out, err = capsys.readouterr()
    assert code == 1
    said = LINE.fullmatch(err.strip())
    assert said is not None, err
    assert said["what"] == "KeyError" and token not in err + out
    assert password not in err + out
    report = open(said["path"]).read()
    assert stat.S_IMODE(os.stat(said["path"]).st_mode) == 0o600 and token not in report and password not in report
    assert "KeyError: " in report
    assert "Traceback (most recent call last):" in report and "in broken" in report


def test_the_masking_in_the_crashed_frames_is_found_past_a_local_that_raises_on_any_attribute():
    """crash.known_in looks at each local's attributes; a local whose __getattr__ raises (a proxy, a stand-in) must
    not end the crash handler before it writes the report."""
    from rlark_tui.text.redact import LineRedactor

    class Proxy:
        __slots__ = ()

        def __getattr__(self, name):
            raise AssertionError(name)

    def broken():
        proxy, redact = Proxy(), LineRedactor(["tulip-garden-value"])
        raise ValueError(f"{proxy!r} {redact('x')}")

    with pytest.raises(ValueError) as raised:
        broken()
    assert crash.known_in(raised.value) == {"tulip-garden-value"}


@pytest.mark.writes_crash_report
def test_a_commands_task_whose_exception_nobody_retrieves_says_one_masked_line_once(env, capsys):
    """Issue 33, a twentieth round (generated answers through a mutating proxy): a bug in one of rlark watch's polls
    (a Secret of the wrong shape raised TypeError in rlark-server's discovery) ended its asyncio task, and asyncio
    printed 'Task exception was never retrieved' with the traceback and the exception's message on stderr, at every
    interval the poll ran again. A command's loop (watch, wait, port-forward: local/crash.run_async) tells it as a
    crash: one line naming the report, once."""
    token = f"hf_{uuid.uuid4().hex}{uuid.uuid4().hex[:2]}"

    async def poll():
        raise KeyError(f"HF_TOKEN={token}")

    async def watch():
        for _ in range(3):  # a poll the reconciler runs again at each interval, raising each time
            asyncio.ensure_future(poll())
            await asyncio.sleep(0.01)  # the task nobody awaited ends and is freed: asyncio tells its exception
        await asyncio.sleep(0.01)

    crash.run_async(watch())
    err = capsys.readouterr().err
    said = BACKGROUND.fullmatch(err.strip())
    assert said is not None, err
    assert said["what"] == "KeyError" and token not in err
    report = open(said["path"]).read()
    assert stat.S_IMODE(os.stat(said["path"]).st_mode) == 0o600 and token not in report and "in poll" in report
    commands = Path(__file__).parents[2] / "rlark_tui" / "commands"
    assert not [p.name for p in commands.glob("*.py") if "asyncio.run(" in p.read_text()]


@pytest.mark.writes_crash_report
async def test_a_bug_in_a_thread_a_worker_or_a_task_is_one_toast_naming_a_masked_report(env):
    """Issue 33, a twenty-second round (background threads and workers): a bug in the TUI's Textual worker toasted
    'render failed: <the exception's message>', unmasked (a message may quote a Secret's value or any cluster text,
    1 MB of it), a thread's (threading.excepthook) and a task's nobody awaited (a poll of the reconciler, at every
    interval) went to the captured stderr: nothing said, no report. Each is now one toast naming a 0600 report
    masked as a crash's, once per type and place, and the app goes on."""
    from rlark_tui.flow.messages import SnapshotChanged
    from rlark_tui.tui.app import RlarkApp
    from tests.pilot import drained, wait_for
    from tests.tui.tui_factories import build_snapshot, job_dict

    said = f"the answer {SECRET} \x1b]52;c;cHduZWQ=\x07 " + "x" * 100_000  # ten of crash.REPORT_LINE_CHARS

    def in_a_worker():
        raise ValueError(said)

    def in_a_thread():
        raise KeyError(said)

    async def in_a_task():
        raise TypeError(said)

    app = RlarkApp()
    async with app.run_test(size=(160, 50)) as pilot:
        app.post_message(SnapshotChanged(build_snapshot([job_dict("bg", env_extra=[
            {"name": "WANDB_API_KEY", "value": SECRET}])])))
        await wait_for(pilot, lambda: app.index is not None and "bg" in app.index.jobs, "the Job listed")
        for _ in range(2):  # the same bug again is not told again
            app.run_worker(in_a_worker, thread=True, exit_on_error=False)
            thread = threading.Thread(target=in_a_thread)
            thread.start()
            thread.join()
            asyncio.ensure_future(in_a_task())
            await pilot.pause(0.05)
            gc.collect()  # the task nobody awaited is collected: asyncio tells its exception
        toasts = await wait_for(pilot, lambda: len(app._notifications) >= 3 and [
            n.message for n in app._notifications], "three toasts")
        await wait_for(pilot, lambda: all(worker.is_finished for worker in app.workers), "the workers ended")
        await drained(app)  # the second round's bugs told, or not, by now
        toasts = [n.message for n in app._notifications]
        app.post_message(SnapshotChanged(build_snapshot([job_dict("after")])))
        await wait_for(pilot, lambda: app.index is not None and "after" in app.index.jobs, "the app going on")
    lines = [BACKGROUND.fullmatch(toast) for toast in toasts]
    assert all(lines) and sorted(line["what"] for line in lines) == ["KeyError", "TypeError", "ValueError"], toasts
    for line in lines:
        report = Path(line["path"]).read_text()
        assert stat.S_IMODE(os.stat(line["path"]).st_mode) == 0o600
        assert SECRET not in report and "\x1b" not in report and len(report) < 50_000, report[:2000]
        assert "Locals are not recorded" in report and "in in_a_" in report


@pytest.mark.writes_crash_report
def test_a_commands_thread_ended_by_a_bug_says_one_masked_line_once(env, capsys, monkeypatch):
    """Issue 33, a twenty-second round (background threads): a command's thread that a bug ended (rlark watch's keeps,
    rlark wait's alert rounds, a webhook's delivery) had Python print 'Exception in thread', the traceback and the
    exception's message on stderr. It is told as a crash is: one line naming the report, once; the command goes on."""
    from rlark_tui import cli

    token = f"{uuid.uuid4().hex}"
    checked = cli._check_names

    def boom():
        raise ValueError(f"a thread of the command read WANDB_API_KEY={token} \x1b]52;c;cHduZWQ=\x07")

    def check_names(*args):  # the command, as it runs: one of its threads hits a bug, twice
        for _ in range(2):
            thread = threading.Thread(target=boom)
            thread.start()
            thread.join()
        return checked(*args)

    monkeypatch.setattr(cli, "_check_names", check_names)
    code = cli.main(["draft", "new"])
    out, err = capsys.readouterr()
    said = BACKGROUND.fullmatch(err.strip())
    assert code == 0 and "rlark job draft" in out and said is not None, err
    assert said["what"] == "ValueError" and token not in err
    report = open(said["path"]).read()
    assert stat.S_IMODE(os.stat(said["path"]).st_mode) == 0o600 and token not in report and "in boom" in report
