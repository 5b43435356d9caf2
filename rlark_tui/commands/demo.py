"""`rlark demo [--keep] [--state-dir DIR]`: start the embedded sandbox (demo seed) in the background and open
the TUI on it; quitting, SIGHUP or SIGTERM stops the sandbox and every process it started unless `--keep`.

The sandbox runs as a child process (`python -m rlark_tui.commands.demo serve ...`) that records itself in
`<state dir>/demo.json`; a kept sandbox is found there and reused by the next `rlark demo`. Without `--keep`
the child also ends when its stdin closes, so it does not outlive a `rlark demo` that was killed outright.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from rlark_tui.errors import RlarkError
from rlark_tui.local.fsutil import open_append, read_own, write_private
from rlark_tui.local.selfrun import python_module
from rlark_tui.text.parse import load_json

RECORD = "demo.json"
READY_TIMEOUT = 90.0
STOP_TIMEOUT = 15.0
CLOSE_GRACE = 5.0


def register(subparsers, parents) -> None:
    parser = subparsers.add_parser(
        "demo", parents=parents,
        help="try rlark on a local sandbox: starts it (demo seed, real local Ray) and opens the TUI")
    parser.add_argument("--keep", action="store_true",
                        help="leave the sandbox running after the TUI quits; the next `rlark demo` reuses it")
    parser.add_argument("--state-dir", type=Path, default=None,
                        help="the sandbox's state dir (default: the user state dir, as `rlark sandbox`)")
    parser.set_defaults(handler=run)


# ----- the background sandbox -----

class Background:
    """A sandbox child process: started here, or a kept one found through its record."""

    def __init__(self, state_dir: Path, pid: int, kubeconfig: Path, proc: subprocess.Popen | None):
        self.state_dir = state_dir
        self.pid = pid
        self.kubeconfig = kubeconfig
        self.proc = proc

    @classmethod
    def find_kept(cls, state_dir: Path) -> Background | None:
        """The kept sandbox recorded in `state_dir`, if its process still runs."""
        try:
            record = load_json(read_own(state_dir / RECORD, 64 * 1024))
            pid, kubeconfig = int(record["pid"]), Path(record["kubeconfig"])
            with open(f"/proc/{pid}/cmdline", "rb") as fh:
                cmdline = fh.read().split(b"\0")
        except (OSError, ValueError, KeyError, TypeError):
            return None
        if b"rlark_tui.commands.demo" not in cmdline or not kubeconfig.exists():
            return None
        return cls(state_dir, pid, kubeconfig, None)

    @classmethod
    def start(cls, state_dir: Path, keep: bool) -> Background:
        log = open_append(state_dir / "demo.log")  # makes the state dir (0700) as any write does
        command = python_module("rlark_tui.commands.demo", "serve", str(state_dir))
        if not keep:
            command.append("--exit-with-stdin")
        try:
            proc = subprocess.Popen(command, stdin=subprocess.DEVNULL if keep else subprocess.PIPE,
                                    stdout=subprocess.PIPE, stderr=log, start_new_session=True, close_fds=True)
        finally:
            log.close()
        kubeconfig = _await_ready(proc, state_dir)
        return cls(state_dir, proc.pid, kubeconfig, proc)

    def stop(self) -> None:
        """SIGTERM the sandbox (it stops every pod process it runs) and wait for it to exit."""
        try:
            os.kill(self.pid, signal.SIGTERM)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + STOP_TIMEOUT
        while time.monotonic() < deadline:
            if self.proc is not None:
                if self.proc.poll() is not None:
                    break
            elif not _alive(self.pid):
                break
            time.sleep(0.05)
        else:
            os.kill(self.pid, signal.SIGKILL)
        (self.state_dir / RECORD).unlink(missing_ok=True)


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            return fh.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except OSError:
        return False


def _await_ready(proc: subprocess.Popen, state_dir: Path) -> Path:
    """Read the child's `ready kubeconfig=<path> gateway=<url> server=<url>` line."""
    stdout = proc.stdout
    if stdout is None:
        raise ValueError("the sandbox was started without a pipe for its ready line")
    result: list[str] = []
    reader = threading.Thread(target=lambda: result.append(stdout.readline().decode()), daemon=True)
    reader.start()
    reader.join(READY_TIMEOUT)
    line = result[0] if result else ""
    if not line.startswith("ready "):
        proc.kill()
        raise RlarkError(f"the sandbox did not start; see {state_dir / 'demo.log'}")
    fields = dict(part.split("=", 1) for part in line.split()[1:] if "=" in part)
    return Path(fields["kubeconfig"])


# ----- the command -----

def run(args: argparse.Namespace) -> int:
    from rlark_tui.commands.sandbox import require_sandbox_extra
    require_sandbox_extra("demo")
    from rlark_sandbox import default_state_dir

    state_dir = (args.state_dir or default_state_dir()).resolve()
    background = Background.find_kept(state_dir)
    if background is None:
        print(f"starting the sandbox in {state_dir} ...", file=sys.stderr, flush=True)
        background = Background.start(state_dir, args.keep)
    else:
        print(f"reusing the kept sandbox in {state_dir}", file=sys.stderr, flush=True)

    finished: list[bool] = []
    apps: list = []

    def finish() -> None:
        if finished:
            return
        finished.append(True)
        if args.keep:
            # after a hang-up the terminal is gone and a write to it fails (EIO); the sandbox stays all the same
            with contextlib.suppress(OSError):
                print(f"sandbox kept running: KUBECONFIG={background.kubeconfig}", file=sys.stderr, flush=True)
        else:
            background.stop()

    def on_signal(signum, _frame) -> None:
        # whatever finish() meets, the signal ends the process: an error raised here instead would, while the TUI
        # starts, reach asyncio's loop as a callback's error, be logged, and leave the TUI running on a dead pane.
        # A second signal while finish() runs (the terminal's watch hands its hang-up here: local/terminal) leaves
        # the ending to the first, so the sandbox is stopped before the process ends.
        if finished:
            return
        try:
            finish()
        finally:
            _end(signum, apps)

    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGTERM, signal.SIGHUP)}
    try:
        return _open_tui(args, background.kubeconfig, apps.append)
    finally:
        finish()
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _end(signum: int, apps: list) -> None:
    """End `rlark demo` on SIGHUP or SIGTERM, its sandbox already stopped (or kept).

    A hang-up leaves no terminal to restore, and Textual's writes to a closed one block once its writer thread died
    of the first error: the process ends at once, as the TUI without the demo does on SIGHUP. On SIGTERM the TUI
    closes as its own quit does, restoring the terminal, asked from its event loop: SystemExit raised from here
    would land in whichever of the app's tasks the signal interrupted, that task would die, and the app's shutdown
    could wait on it for ever (a loaded run's demo outlived its SIGTERM by 30 s). Should the close still not end
    the process within CLOSE_GRACE seconds, it ends without it. Before and after the TUI runs, SystemExit ends it."""
    code = 128 + signum
    if signum == signal.SIGHUP:
        os._exit(code)
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        raise SystemExit(code) from None
    loop.call_soon_threadsafe(apps[0].exit, None, code)
    last_resort = threading.Timer(CLOSE_GRACE, os._exit, (code,))
    last_resort.daemon = True
    last_resort.start()


def _open_tui(args: argparse.Namespace, kubeconfig: Path, on_app) -> int:
    from rlark_tui.tui.app import run_tui
    return run_tui(argparse.Namespace(kubeconfig=str(kubeconfig), context="rlark-sandbox",
                                      readonly=bool(getattr(args, "readonly", False))), on_app=on_app)


# ----- the child: `python -m rlark_tui.commands.demo serve <state dir> [--exit-with-stdin]` -----

def serve(state_dir: Path, exit_with_stdin: bool) -> int:
    from rlark_sandbox import Sandbox

    sandbox = Sandbox(state_dir, seed="demo")

    def ready(sb: Sandbox) -> None:
        record = {"pid": os.getpid(), "kubeconfig": str(sb.kubeconfig), "gateway": sb.gateway,
                  "server": sb.server_url}
        write_private(state_dir / RECORD, json.dumps(record))
        print(f"ready kubeconfig={sb.kubeconfig} gateway={sb.gateway} server={sb.server_url}", flush=True)
        if exit_with_stdin:
            threading.Thread(target=lambda: (sys.stdin.buffer.read(), sandbox.request_stop()), daemon=True).start()

    from rlark_tui.local.crash import run_async
    run_async(sandbox.serve(ready))
    (state_dir / RECORD).unlink(missing_ok=True)
    return 0


if __name__ == "__main__" and len(sys.argv) >= 3 and sys.argv[1] == "serve":
    sys.exit(serve(Path(sys.argv[2]), "--exit-with-stdin" in sys.argv[3:]))
