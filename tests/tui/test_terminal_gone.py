"""A TUI whose terminal is gone ends (issue 33, left-over item 4): the terminal emulator closed (the pty's master
side), with no SIGHUP reaching the process (a wrapper that ignores or blocks it, a process that is not the
terminal's session leader). Textual's writer thread dies of the closed terminal's first error and its next draw waits
for ever for room in the write queue, so the TUI, its reads and its port-forwards stayed behind for ever."""

from __future__ import annotations

import fcntl
import os
import pty
import select
import signal
import struct
import subprocess
import sys
import termios
import threading
import time

import pytest

from tests.agent.helpers import wait_for


@pytest.mark.parametrize("stderr", ["terminal", "file"])
def test_the_tui_ends_when_its_terminal_closes_without_a_hangup_signal(plain_sandbox, env, stderr):
    """Closed with stderr on the terminal too (what a user has: the TUI draws on stderr), the process ends with 129;
    with stderr elsewhere (a file: the TUI then draws there), it also says why in one line there."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 100, 0, 0))
    screen = bytearray()
    stop = threading.Event()
    log = env / "stderr"

    def drain() -> None:  # polls, so that it holds no read on the master when the test closes it
        while not stop.is_set():
            if select.select([master], [], [], 0.05)[0]:
                try:
                    screen.extend(os.read(master, 65536))
                except OSError:
                    return

    def drawn() -> bool:
        return b"NAME" in (screen if stderr == "terminal" else log.read_bytes())

    # SIGHUP ignored (inherited through exec) and a session of its own (the pty is not its controlling terminal):
    # nothing signals the process when the terminal closes
    with open(log, "wb") as err:
        child = subprocess.Popen(["sh", "-c", 'trap "" HUP; exec "$0" -m rlark_tui --kubeconfig "$1"', sys.executable,
                                  str(plain_sandbox.kubeconfig)], stdin=slave, stdout=slave,
                                 stderr=slave if stderr == "terminal" else err, start_new_session=True,
                                 env={**os.environ, "TERM": "xterm-256color"})
    os.close(slave)
    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    try:
        wait_for(drawn, timeout=60, interval=0.05, what="the job list drawn")
        stop.set()
        reader.join()
        os.close(master)
        started = time.monotonic()
        code = child.wait(timeout=15)
        assert code == 128 + signal.SIGHUP and time.monotonic() - started < 5
        if stderr == "file":
            assert log.read_bytes().endswith(b"rlark: the terminal is gone (closed without a hang-up signal); "
                                             b"ending with 129\n")  # after the TUI's last drawing
    finally:
        stop.set()
        if child.poll() is None:
            child.kill()
            child.wait()


HANDLED = r"""
import os, signal, sys, time
from rlark_tui.local import terminal
from rlark_tui.local.terminal import ends_with_terminal
terminal.GONE_POLL_SECONDS = 0.05  # the watch sees the terminal gone well within the handler's stop
log, finished = sys.argv[1], []

def on_hangup(signum, _frame):  # rlark demo's: finish() (stop the sandbox) once, then end the process
    if finished:
        return
    finished.append(True)
    with open(log, "a") as out:
        out.write("stopping\n")
    time.sleep(0.3)  # stopping the sandbox takes a while: longer than the watch's poll of the terminal
    with open(log, "a") as out:
        out.write("stopped\n")
    os._exit(128 + signum)

signal.signal(signal.SIGHUP, on_hangup)
with ends_with_terminal():
    with open(log, "a") as out:
        out.write("ready\n")
    while True:
        time.sleep(0.05)
"""


def _controlling_terminal() -> None:
    os.setsid()
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


@pytest.mark.parametrize("hangup", ["kernel", "none"])
def test_a_process_that_handles_its_hangup_is_ended_by_its_handler_alone(tmp_path, hangup):
    """Issue 33, left open by the fifteenth round: rlark demo stops its sandbox in its SIGHUP handler, and the
    terminal's watch (ends_with_terminal) ended the process with os._exit as soon as it saw the terminal gone, while
    that handler was still stopping the sandbox (the kernel's SIGHUP), or without it ever running (no SIGHUP: a
    session of its own). The watch hands the hang-up to the process's handler, the one way it ends."""
    master, slave = pty.openpty()
    log = tmp_path / "log"
    child = subprocess.Popen([sys.executable, "-c", HANDLED, str(log)], stdin=slave, stdout=slave, stderr=slave,
                             preexec_fn=_controlling_terminal if hangup == "kernel" else os.setsid)
    os.close(slave)
    try:
        wait_for(lambda: log.exists() and log.read_text() == "ready\n", timeout=30, interval=0.05,
                 what="the process watching its terminal")
        os.close(master)
        assert child.wait(timeout=40) == 128 + signal.SIGHUP
        assert log.read_text() == "ready\nstopping\nstopped\n"
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
