"""No colour (issue 36 item 3): under NO_COLOR=1 (no-color.org) or --no-color the real TUI in tmux draws no
colour escape sequence (`capture-pane -e`), a Failed Job still reads Failed and the cursor row stands out by
reverse video; `rlark get` prints none either; the light theme and --no-mouse are taken; TERM=tmux-256color,
screen-256color and xterm show the same list."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time

import pytest

from tests.alerts.test_watch import fail_job
from tests.pod.test_tui_pod import _tmux, _wait_pane
from tests.sandbox.helpers import job

NAME = "nocolor-failed"
# an SGR sequence with a colour parameter: 30-37, 40-47, 90-97, 100-107, or 38;…/48;… extended colours (39 and 49,
# the terminal's default colours, are no colour)
COLOUR = re.compile(r"\x1b\[(?:[0-9;]*;)?(?:3[0-8]|4[0-8]|9[0-7]|10[0-7])(?:;[0-9;]*)?m")

REVERSE = re.compile(r"\x1b\[(?:[0-9;]*;)?7(?:;[0-9;]*)?m")


@pytest.fixture
def failed(plain_sandbox):
    plain_sandbox.store.create("jobs", job(NAME, stopped=False))
    fail_job(plain_sandbox, NAME)
    yield plain_sandbox
    plain_sandbox.store.delete("jobs", NAME)


def _session(sandbox, tmp_path, *flags: str, env: dict[str, str]) -> str:
    socket = str(tmp_path / "tmux.sock")
    command = f"{sys.executable} -m rlark_tui --kubeconfig {sandbox.kubeconfig} {' '.join(flags)}"
    full = {**{k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES", "NO_COLOR")},
            "RLARK_CONFIG": str(tmp_path / "config.yaml"), "RLARK_STATE_DIR": str(tmp_path / "state"),  # its own
            "TERM": "tmux-256color", **env}
    subprocess.run(["tmux", "-S", socket, "-f", "/dev/null", "new-session", "-d", "-s", "t", "-x", "120", "-y",
                    "30", command], env=full, check=True, timeout=20)
    return socket


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
@pytest.mark.parametrize("how", ["NO_COLOR", "--no-color"])
def test_tui_in_tmux_has_no_colour_and_failed_reads_failed(failed, tmp_path, how):
    socket = _session(failed, tmp_path, *(["--no-color"] if how == "--no-color" else []),
                      env={"NO_COLOR": "1"} if how == "NO_COLOR" else {})
    try:
        _wait_pane(socket, NAME)
        shown = _tmux(socket, "capture-pane", "-e", "-p", "-t", "t")
        assert not COLOUR.search(shown), repr(COLOUR.search(shown).group(0))
        row = next(line for line in _tmux(socket, "capture-pane", "-p", "-t", "t").splitlines() if NAME in line)
        assert "Failed" in row
        assert REVERSE.search(shown)  # the cursor row, in reverse video
    finally:
        _tmux(socket, "kill-server")


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
def test_colour_by_default_and_the_light_theme(failed, tmp_path):
    socket = _session(failed, tmp_path, "--theme", "light", "--no-mouse", env={})
    try:
        _wait_pane(socket, NAME)
        shown = _tmux(socket, "capture-pane", "-e", "-p", "-t", "t")
        backgrounds = [int(n) for n in re.findall(r"48;5;(\d+)", shown)]  # tmux's 256-colour palette
        commonest = max(set(backgrounds), key=backgrounds.count)
        assert COLOUR.search(shown) and commonest >= 244, backgrounds  # the light end of the grey ramp
    finally:
        _tmux(socket, "kill-server")


def test_get_prints_no_escape_under_no_color(failed):
    env = {**os.environ, "NO_COLOR": "1"}
    done = subprocess.run([sys.executable, "-m", "rlark_tui", "--kubeconfig", str(failed.kubeconfig), "get", "jobs"],
                          env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    row = next(line for line in done.stdout.splitlines() if line.startswith(NAME))
    assert "\x1b" not in done.stdout and "Failed" in row


TERMS = ("tmux-256color", "screen-256color", "xterm")


def heading(socket: str) -> tuple[str, ...]:
    """The words of the list's heading on the pane."""
    lines = _tmux(socket, "capture-pane", "-p", "-t", "t").splitlines()
    return tuple(next(line for line in lines if " NAME " in line).split())


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
def test_each_term_shows_the_same_list_in_colour_and_no_mouse_leaves_the_mouse(failed, tmp_path):
    """Under TERM=tmux-256color, screen-256color and xterm (16 colours) in tmux the list has the same columns,
    the Failed Job reads Failed, in colour; --no-mouse (here under xterm) turns no mouse reporting on (tmux's
    mouse_any_flag), without it the app does."""
    sockets = {}
    try:
        for term in TERMS:
            (tmp_path / term).mkdir()
            sockets[term] = _session(failed, tmp_path / term, *(["--no-mouse"] if term == "xterm" else []),
                                     env={"TERM": term})
        mouse = {}
        for term, socket in sockets.items():
            _wait_pane(socket, NAME)
            lines = _tmux(socket, "capture-pane", "-p", "-t", "t").splitlines()
            assert "Failed" in next(line for line in lines if NAME in line), term
            assert COLOUR.search(_tmux(socket, "capture-pane", "-e", "-p", "-t", "t")), term
            mouse[term] = _tmux(socket, "display-message", "-p", "-t", "t", "#{mouse_any_flag}").strip()
        # the columns' widths follow the rows, which the apps fill in at their own pace (a reason, a progress):
        # once all three have the same rows, they have the same heading
        deadline = time.monotonic() + 30
        while len(headings := {heading(socket) for socket in sockets.values()}) != 1:
            assert time.monotonic() < deadline, headings
            time.sleep(0.2)
        assert mouse == {"tmux-256color": "1", "screen-256color": "1", "xterm": "0"}
    finally:
        for socket in sockets.values():
            _tmux(socket, "kill-server")
