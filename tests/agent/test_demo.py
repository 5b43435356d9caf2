"""`rlark demo` in a pseudo-terminal, as in a tmux pane: it starts the sandbox with the demo Job, shows the TUI,
and a hang-up stops every process it started; with --keep the sandbox survives and the next run reuses it."""

import json
import os
import pty
import signal
import subprocess
import sys
import time

import pytest

from rlark_tui.sandbox.runner import temp_dir_for

from .helpers import wait_for

pytestmark = pytest.mark.ray


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


def start_demo(state_dir, *extra):
    """`rlark demo` on a pty; returns (process, master fd). The pty output is drained in the background."""
    master, slave = pty.openpty()
    env = {**os.environ, "TERM": "xterm-256color", "COLUMNS": "120", "LINES": "40"}
    proc = subprocess.Popen([sys.executable, "-m", "rlark_tui", "demo", "--state-dir", str(state_dir), *extra],
                            stdin=slave, stdout=slave, stderr=slave, env=env, start_new_session=True)
    os.close(slave)
    return proc, master


def drain(master, seconds):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            os.read(master, 65536)
        except OSError:
            return
        time.sleep(0.05)


def pod_scripts(state_dir) -> bool:
    return any(b"ray_head.sh" in open(f"/proc/{pid}/cmdline", "rb").read() for pid in processes_under(state_dir)
               if os.path.exists(f"/proc/{pid}/cmdline"))


def test_demo_hangup_stops_everything_and_keep_leaves_a_reusable_sandbox(tmp_path):
    state_dir = tmp_path / "demo"
    proc, master = start_demo(state_dir, "--keep")
    try:
        wait_for(lambda: (drain(master, 0.2), pod_scripts(state_dir))[1], timeout=90, what="demo pods running")
        kept = json.loads((state_dir / "demo.json").read_text())
        ours = set(processes_under(state_dir)) | {kept["pid"]}
        listening = subprocess.run(["ss", "-ltnpH"], capture_output=True, text=True, timeout=30).stdout.splitlines()
        mine = [line.split()[3] for line in listening
                if {int(p.split(",")[0]) for p in line.split("pid=")[1:]} & ours]
        assert mine and all(address.startswith(("127.", "[::1]")) for address in mine), mine   # rlark demo: loopback
        temp_dirs = [temp_dir_for(json.loads(f.read_text())["metadata"]["uid"], str(state_dir))
                     for f in state_dir.glob("objects/*/pods/rlark-system/*.json")]
        proc.send_signal(signal.SIGHUP)                                      # the tmux pane closes
        proc.wait(30)
        assert os.path.exists(f"/proc/{kept['pid']}")                       # --keep: the sandbox stays

        proc, master = start_demo(state_dir)                                 # reuses it
        drain(master, 3)
        assert json.loads((state_dir / "demo.json").read_text())["pid"] == kept["pid"]
        assert pod_scripts(state_dir)
        began = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        proc.wait(30)
        wait_for(lambda: not processes_under(state_dir), timeout=20, what="every demo process gone")
        assert time.monotonic() - began < 20
        assert not (state_dir / "demo.json").exists()
        assert temp_dirs and not any(d.exists() for d in temp_dirs)          # Ray's session files go too
    finally:
        if proc.poll() is None:
            proc.kill()
        os.close(master)
        for pid in processes_under(state_dir):
            os.kill(pid, signal.SIGKILL)
