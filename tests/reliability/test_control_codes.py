"""No control code from the cluster reaches a terminal (issue 26 item 6).

A Job on the shared sandbox carries OSC 52 (clipboard), OSC 0 (title), CSI cursor movement, DCS, C1 controls and
Rich markup in its display name, image, env values, scripts and log lines; its Pod really runs (the sandbox's
agent, no Ray) and prints them. `describe`, `get -o wide`, `get pods -o wide`, `logs` (to a pipe and to a pty),
`check` and the TUI (Pilot screen text, and the real app on a pty, its output bytes scanned) show the text with
no escape sequence; `logs --raw` passes the bytes through for whoever asks.
"""

from __future__ import annotations

import fcntl
import json
import os
import pty
import re
import select
import shlex
import struct
import subprocess
import sys
import termios
import time
import uuid

import pytest

from rlark_tui.cluster.access import ClusterAccess
from rlark_tui.screens.check import CheckScreen
from rlark_tui.screens.job_detail import JobDetailScreen
from rlark_tui.tui.app import RlarkApp
from tests.clirun import cli_runner
from tests.pilot import wait_for
from tests.reliability.running_job import edge_task, running_job
from tests.reliability.test_secrets import screen_text
from tests.wizard.helpers import SIZE, settle

OSC52 = "\x1b]52;c;cHduZWQ=\x07"
OSC0 = "\x1b]0;pwned-title\x1b\\"
CSI = "\x1b[2J\x1b[H\x1b[1A"
DCS = "\x1bP+q544e\x1b\\"
C1 = "\x9b2J\x9d0;c1-title\x9c"
MARKUP = "[red]red[/red][@click=app.quit]quit[/]"
HOSTILE = OSC52 + OSC0 + CSI + DCS + C1 + MARKUP
"""Everything a hostile Pod writes; what must reach the terminal of it is `red` and `quit` in brackets."""
SHELL_HOSTILE = r"\033]52;c;cHduZWQ=\007\033]0;pwned-title\033\\\033[2J\033[H\033[1A\033P+q544e\033\\"
"""The same escapes as printf writes them (C1 and markup are added as literal bytes by the script)."""

NAME = f"ctl-{uuid.uuid4().hex[:6]}"
DISPLAY = f"pwn{OSC52}{OSC0}{MARKUP}"
MARKER = "ctl-log-line"
SCRIPT = (f"printf '{MARKER} {SHELL_HOSTILE}\\302\\2332J sgr \\033[31mred\\033[0m end\\n'\n"
          f"echo 'markup {MARKUP} env '\"$CTL_NOTE\"\n"
          "sleep 600")

ESCAPE = re.compile(rb"\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\xc2[\x80-\x9f]")
"""An OSC sequence (either terminator), or a C1 control encoded in UTF-8 (which some terminals obey)."""
TUI_ESCAPE = re.compile(rb"\x1b\](?!22;)[^\x07\x1b]*(?:\x07|\x1b\\)|\xc2[\x80-\x9f]")
"""The same in the TUI's output but OSC 22 (the mouse pointer's shape), which Textual writes itself."""


def manifest() -> dict:
    env = [{"name": "RLARK_TASK_ROLE", "value": "actor"}, {"name": "CTL_NOTE", "value": f"note{HOSTILE}"}]
    return {"apiVersion": "rlinf.io/v1alpha1", "kind": "Job",
            "metadata": {"name": NAME, "annotations": {"rlark.io/display-name": DISPLAY}},
            "spec": {"tasks": [edge_task("actor", "edge-b1", SCRIPT, env, head=True),
                               edge_task("env", "edge-b2", "", env, image=f"registry.example/x{OSC52}:v1{C1}")]}}


def no_escape(text: str | bytes) -> bool:
    data = text.encode("utf-8", "surrogateescape") if isinstance(text, str) else text
    return b"\x1b" not in data and ESCAPE.search(data) is None


@pytest.fixture(scope="module")
def hostile(plain_sandbox):
    with running_job(plain_sandbox, manifest(), {f"{NAME}-actor-0": MARKER}):
        yield plain_sandbox


@pytest.fixture
def rl(hostile, env, capsys):
    return cli_runner(hostile.kubeconfig, capsys)


@pytest.mark.parametrize("argv, shows", [
    (("describe", "job", NAME), ["[red]red[/red][@click=app.quit]quit[/]", "registry.example/x", "note"]),
    (("get", "jobs", NAME, "-o", "wide"), [NAME, "pwn"]),
    (("get", "tasks", "-A", "-o", "wide"), [f"{NAME}-env", "registry.example/x"]),
    (("get", "pods", "-A", "-o", "wide"), [f"{NAME}-actor-0"]),
    (("get", "jobs", NAME, "-o", "json"), ["\\u001b]52;c;cHduZWQ=\\u0007", "\\u009b2J"]),
    (("get", "jobs", NAME, "-o", "yaml"), ["\\e]52;c;cHduZWQ=\\a"]),
], ids=["describe", "get-wide", "get-tasks-wide", "get-pods-wide", "get-json", "get-yaml"])
def test_cli_output_has_no_escape(rl, argv, shows):
    result = rl(*argv)
    assert result.code == 0, result.err
    assert no_escape(result.out) and no_escape(result.err)
    for text in shows:
        assert text in result.out, (text, result.out)
    if argv[-1] == "json":
        assert json.loads(result.out)["metadata"]["annotations"]["rlark.io/display-name"] == DISPLAY


def test_get_wide_columns_stay_aligned(rl):
    lines = rl("get", "jobs", NAME, "-o", "wide").out.splitlines()
    assert lines[1].index("pwn") == lines[0].index("DISPLAY NAME")


def test_logs_to_a_pipe_has_no_escape_and_raw_keeps_them(rl):
    result = rl("logs", NAME, "--role", "actor")
    assert result.code == 0, result.err
    assert f"{MARKER} " in result.out and " sgr red end" in result.out and "[@click=app.quit]" in result.out
    assert no_escape(result.out)
    raw = rl("logs", NAME, "--role", "actor", "--raw")
    assert OSC52 in raw.out and "\x1b[31mred" in raw.out


def test_check_reports_have_no_escape(rl, env):
    for fmt in ("text", "md", "json"):
        out = env / f"r.{fmt}"
        result = rl("check", NAME, "--format", fmt, "--output", str(out))
        assert result.code in (0, 1, 3), result.err
        assert NAME in result.out
        assert no_escape(result.out) and no_escape(result.err) and no_escape(out.read_bytes())
        if fmt == "json":
            json.loads(out.read_text())
    for saved in (env / "state" / "checks").glob(f"{NAME}-*"):
        assert no_escape(saved.read_bytes()), saved.name


class Terminal:
    """`python -m rlark_tui ARGV` on a pseudo-terminal of 160 x 50; `raw` holds every byte it wrote."""

    PLAIN = re.compile(rb"\x1b\[[0-?]*[ -/]*[@-~]|\x1b[^\[]")

    def __init__(self, argv: list[str], env: dict) -> None:
        main, child = pty.openpty()
        fcntl.ioctl(child, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 160, 0, 0))
        self.main = main
        self.process = subprocess.Popen([sys.executable, "-m", "rlark_tui", *argv], stdin=child, stdout=child,
                                        stderr=child, env=env, start_new_session=True)
        os.close(child)
        self.raw = b""

    def wait_for(self, text: bytes, timeout: float = 30.0) -> None:
        """Read until `text` shows (escape sequences aside) or the app exits; AssertionError on timeout."""
        deadline = time.monotonic() + timeout
        while text not in self.PLAIN.sub(b"", self.raw):
            if time.monotonic() > deadline:
                raise AssertionError(f"{text!r} not shown: {self.PLAIN.sub(b'', self.raw)[-400:]!r}")
            ready, _, _ = select.select([self.main], [], [], 0.2)
            if ready:
                try:
                    chunk = os.read(self.main, 65536)
                except OSError:
                    chunk = b""
                if not chunk:
                    return
                self.raw += chunk

    def send(self, keys: bytes) -> None:
        os.write(self.main, keys)

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()
        os.close(self.main)


def _pty_env(env) -> dict:
    return {**os.environ, "RLARK_CONFIG": str(env / "config.yaml"), "RLARK_STATE_DIR": str(env / "state"),
            "TERM": "xterm-256color", "COLUMNS": "200", "LINES": "50"}


def test_logs_on_a_terminal_keep_only_sgr(hostile, env):
    term = Terminal(["--kubeconfig", str(hostile.kubeconfig), "logs", NAME, "--role", "actor"], _pty_env(env))
    try:
        term.wait_for(b"env note")
    finally:
        term.close()
    assert MARKER.encode() in term.raw and b"\x1b[31mred\x1b[0m" in term.raw
    assert ESCAPE.search(term.raw) is None and b"\x1b[2J" not in term.raw and b"\x1bP" not in term.raw


def test_raw_logs_on_a_terminal_keep_a_pods_drawing_but_no_clipboard_or_title_write(hostile, env):
    """Issue 33, a sixteenth round (after rlark exec's rule, 6d20b50): `rlark logs --raw` prints lines as the Pod
    wrote them, and on a terminal a log line's OSC 52 set the operator's clipboard and its OSC 0 the window's
    title. On a terminal --raw passes what rlark exec passes."""
    term = Terminal(["--kubeconfig", str(hostile.kubeconfig), "logs", NAME, "--role", "actor", "--raw"],
                    _pty_env(env))
    try:
        term.wait_for(b"env note")
    finally:
        term.close()
    assert MARKER.encode() in term.raw and b"\x1b[2J\x1b[H" in term.raw and b"\x1bP+q544e\x1b\\" in term.raw
    assert b"]52;" not in term.raw and b"pwned-title" not in term.raw and b"c1-title" not in term.raw


class Tmux:
    """The real app in a tmux pane (its own server, `set-clipboard on` as the README recommends): `screen()` is
    what the pane shows, `raw()` every byte the app wrote (pipe-pane, attached before the app starts)."""

    def __init__(self, argv: list[str], env: dict, workdir) -> None:
        self.socket = f"rlark-ctl-{uuid.uuid4().hex[:8]}"
        self.log = workdir / "pane.bin"
        self.log.touch()
        command = " ".join(shlex.quote(a) for a in [sys.executable, "-m", "rlark_tui", *argv])
        self.tmux("-f", "/dev/null", "new-session", "-d", "-x", "160", "-y", "50", "-s", "ctl",
                  f"read go; exec {command}", env=env)
        self.tmux("set-option", "-g", "set-clipboard", "on")
        self.tmux("pipe-pane", "-o", "-t", "ctl", f"cat >> {shlex.quote(str(self.log))}")
        self.send("Enter")

    def tmux(self, *args: str, env: dict | None = None) -> str:
        return subprocess.run(["tmux", "-L", self.socket, *args], env=env, capture_output=True, text=True,
                              timeout=20).stdout

    def send(self, *keys: str) -> None:
        self.tmux("send-keys", "-t", "ctl", *keys)

    def screen(self) -> str:
        return self.tmux("capture-pane", "-p", "-t", "ctl")

    def wait_for(self, text: str, timeout: float = 30.0, gone: bool = False) -> None:
        deadline = time.monotonic() + timeout
        while (text in self.screen()) is gone:
            assert time.monotonic() < deadline, f"{text!r} not shown:\n{self.screen()}"
            time.sleep(0.2)

    def raw(self) -> bytes:
        return self.log.read_bytes()

    def close(self) -> None:
        self.tmux("kill-server")


def test_the_tui_follows_its_terminal_whatever_columns_and_lines_say(plain_sandbox, env):
    """Started with COLUMNS=80 and LINES=24 exported (a Python REPL's readline does it, and so do pytest's xdist
    workers), the app still fills its 160x50 pane, and follows it to 100x30: its key bar is on the last row."""
    term = Tmux(["--kubeconfig", str(plain_sandbox.kubeconfig)], {**_pty_env(env), "COLUMNS": "80", "LINES": "24"},
                env)

    def fills(rows: int) -> None:
        """The key bar reaches the pane's last row (at 80x24 it would stay on row 24)."""
        deadline = time.monotonic() + 10
        while not ((lines := term.screen().splitlines()) and len(lines) == rows and "? Help" in lines[-1]):
            assert time.monotonic() < deadline, f"the app does not fill the {rows}-row pane:\n{term.screen()}"
            time.sleep(0.2)
    try:
        term.wait_for("demo-ppo")
        fills(50)
        term.tmux("resize-window", "-t", "ctl", "-x", "100", "-y", "30")
        fills(30)
    finally:
        term.close()


def test_tui_on_a_terminal_writes_no_osc_from_the_cluster(hostile, env):
    """The real app in tmux: the list, the detail's overview, events and workers, the log pane. The bytes it
    wrote hold no OSC sequence and no C1 control, tmux's clipboard and the pane title stay untouched, and the
    markup in the names shows as text."""
    term = Tmux(["--kubeconfig", str(hostile.kubeconfig)], _pty_env(env), env)
    try:
        term.wait_for(NAME)
        term.send("/")
        term.wait_for("filter Jobs")
        term.send("-l", NAME)
        term.wait_for(f"▊  {NAME}")
        term.send("Enter")
        term.wait_for("▔▔▔", gone=True)
        term.send("Enter")
        term.wait_for("Pods 1/1")
        term.send("d")
        term.wait_for("Prepare script")
        overview = term.screen()
        term.send("e")
        term.wait_for("Events")
        term.send("l")
        term.wait_for("env note")
        logs = term.screen()
        clipboard = term.tmux("show-buffer")
        title = term.tmux("display-message", "-p", "-t", "ctl", "#{pane_title}")
        raw = term.raw()
    finally:
        term.close()
    found = TUI_ESCAPE.search(raw)
    assert found is None, raw[max(0, found.start() - 40):][:120]
    assert "pwned" not in clipboard and "pwned" not in title
    assert "[@click=app.quit]quit" in overview and "pwn" in overview
    assert MARKER in logs and "[red]red[/red]" in logs


def painted(app) -> str:
    """What the app would write to a terminal for the whole current screen (Textual's own sequences included)."""
    return app.screen._compositor.render_full_update().render_segments(app.console)


async def test_tui_screens_show_the_text_without_escapes_or_markup(hostile):
    """Pilot: the list, the detail's overview, workers and events, the run check (rows and evidence): the hostile
    text shows as text (its brackets included), never as an escape or a style, and nothing was clicked."""
    access = ClusterAccess.open(str(hostile.kubeconfig), hostile.context)
    app = RlarkApp(access)
    shown = []
    try:
        async with app.run_test(size=SIZE) as pilot:
            await wait_for(pilot, lambda: NAME in screen_text(app), "the Job in the list")
            shown.append(painted(app))
            app.open_job(NAME, "overview")
            await wait_for(pilot, lambda: isinstance(app.screen, JobDetailScreen), "the detail")
            for key, expected in (("d", "note"), ("w", "Pods 1/1"), ("e", "registry.example/x")):
                await pilot.press(key)
                await wait_for(pilot, lambda expected=expected: expected in screen_text(app), expected)
                shown.append(painted(app))
            app.open_check(NAME)
            await wait_for(pilot, lambda: isinstance(app.screen, CheckScreen) and app.screen.report is not None,
                           "the run check")
            screen = app.screen
            for row in range(screen.table.row_count):
                screen.table.move_cursor(row=row)
                await settle(pilot, 2)
                shown.append(painted(app))
            assert app.is_running  # `[@click=app.quit]` quit nothing
    finally:
        access.close()
    raw = "\n".join(shown).encode()
    found = TUI_ESCAPE.search(raw)
    assert found is None, raw[max(0, found.start() - 40):][:120]
    text = Terminal.PLAIN.sub(b"", raw).decode()
    assert "[red]red[/red][@click=app.quit]quit[/]" in text and "registry.example/x" in text
