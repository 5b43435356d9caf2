"""`rlark demo` in a pseudo-terminal, as in a tmux pane: it starts the sandbox with the demo Job, shows the TUI,
and a hang-up stops every process it started; with --keep the sandbox survives and the next run reuses it."""

import contextlib
import json
import os
import pty
import select
import signal
import subprocess
import sys
import threading
import time

import pytest

from rlark_sandbox.runner import temp_dir_for

from .helpers import wait_for

pytestmark = pytest.mark.ray

ALT_SCREEN_OFF = b"\x1b[?1049l"
"""What a TUI that closes writes last to its terminal: the screen the user had comes back."""


def processes_under(state_dir) -> list[int]:
    """Live processes started for this state dir: the sandbox child and every pod process (found by the
    hosts file path the agent gives each pod)."""
    needle = str(state_dir).encode()
    found = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", "rb") as fh:
                if fh.read().rsplit(b")", 1)[1].split()[0] == b"Z":
                    continue
            with open(f"/proc/{entry.name}/cmdline", "rb") as fh:
                cmdline = fh.read()
            with open(f"/proc/{entry.name}/environ", "rb") as fh:
                environ = fh.read()
        except OSError:
            continue
        if needle in cmdline or needle in environ:
            found.append(int(entry.name))
    return found


class Pane:
    """`rlark demo` on a pty, as in a tmux pane: its output is read in the background for as long as the pane is
    open (a terminal that stops reading would block the TUI's writes)."""

    def __init__(self, state_dir, *extra) -> None:
        self.master, slave = pty.openpty()
        env = {**os.environ, "TERM": "xterm-256color", "COLUMNS": "120", "LINES": "40"}
        self.proc = subprocess.Popen([sys.executable, "-m", "rlark_tui", "demo", "--state-dir", str(state_dir),
                                      *extra], stdin=slave, stdout=slave, stderr=slave, env=env,
                                     start_new_session=True)
        os.close(slave)
        self.shown = bytearray()
        """What the app wrote to the terminal (its last 1 MiB)."""
        self._open = threading.Event()
        self._open.set()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        while self._open.is_set():
            if select.select([self.master], [], [], 0.1)[0]:
                try:
                    self.shown += os.read(self.master, 65536)
                except OSError:
                    return
                del self.shown[:-1 << 20]

    def close(self) -> None:
        """The pane goes away: nothing reads the terminal any more, and writes to it fail."""
        if self._open.is_set():
            self._open.clear()
            self._reader.join()
            os.close(self.master)


def pod_scripts(state_dir) -> bool:
    return any(b"ray_head.sh" in open(f"/proc/{pid}/cmdline", "rb").read() for pid in processes_under(state_dir)
               if os.path.exists(f"/proc/{pid}/cmdline"))


def _clean_up(pane: Pane, state_dir) -> None:
    """Whatever a test left running: its `rlark demo`, its pane, and every process of the state dir."""
    if pane.proc.poll() is None:
        pane.proc.kill()
    pane.close()
    for pid in processes_under(state_dir):
        with contextlib.suppress(ProcessLookupError):  # gone since it was listed (the sandbox was still starting)
            os.kill(pid, signal.SIGKILL)


def test_a_hangup_while_the_tui_starts_ends_demo_keep_at_once(tmp_path):
    """The pane closes as soon as the kept sandbox is up, while the TUI is still starting: `rlark demo --keep`
    ends at once with 129 (a hang-up), as later. Its "sandbox kept running" line cannot reach the closed terminal;
    before, that write's error took the place of the exit: a traceback and 1, or, raised inside the TUI's
    starting event loop, only logged there, with the TUI left running on the dead pane."""
    state_dir = tmp_path / "demo"
    pane = Pane(state_dir, "--keep")
    try:
        wait_for(lambda: (state_dir / "demo.json").exists(), timeout=60, what="the kept sandbox")
        pane.close()
        pane.proc.send_signal(signal.SIGHUP)
        assert pane.proc.wait(30) == 128 + signal.SIGHUP
    finally:
        _clean_up(pane, state_dir)


def test_demo_hangup_stops_everything_and_keep_leaves_a_reusable_sandbox(tmp_path):
    state_dir = tmp_path / "demo"
    pane = Pane(state_dir, "--keep")
    try:
        wait_for(lambda: pod_scripts(state_dir), timeout=90, what="demo pods running")
        kept = json.loads((state_dir / "demo.json").read_text())
        ours = set(processes_under(state_dir)) | {kept["pid"]}
        listening = subprocess.run(["ss", "-ltnpH"], capture_output=True, text=True, timeout=30).stdout.splitlines()
        mine = [line.split()[3] for line in listening
                if {int(p.split(",")[0]) for p in line.split("pid=")[1:]} & ours]
        assert mine and all(address.startswith(("127.", "[::1]")) for address in mine), mine   # rlark demo: loopback
        temp_dirs = [temp_dir_for(json.loads(f.read_text())["metadata"]["uid"], str(state_dir))
                     for f in state_dir.glob("objects/*/pods/rlark-system/*.json")]
        pane.close()                                                         # the tmux pane closes
        pane.proc.send_signal(signal.SIGHUP)
        pane.proc.wait(30)
        assert os.path.exists(f"/proc/{kept['pid']}")                       # --keep: the sandbox stays

        pane = Pane(state_dir)                                               # reuses it
        wait_for(lambda: b"demo-ppo" in pane.shown, timeout=30, what="the job list on the kept sandbox")
        assert json.loads((state_dir / "demo.json").read_text())["pid"] == kept["pid"]
        assert pod_scripts(state_dir)
        began = time.monotonic()
        pane.proc.send_signal(signal.SIGTERM)
        assert pane.proc.wait(30) == 128 + signal.SIGTERM
        wait_for(lambda: not processes_under(state_dir), timeout=20, what="every demo process gone")
        wait_for(lambda: ALT_SCREEN_OFF in pane.shown, timeout=10, what="the terminal given back")  # the TUI's close
        assert time.monotonic() - began < 20
        assert not (state_dir / "demo.json").exists()
        assert temp_dirs and not any(d.exists() for d in temp_dirs)          # Ray's session files go too
    finally:
        _clean_up(pane, state_dir)
