"""Shared helpers for the benchmarks: a sandbox in its own process, RSS of a process, percentiles."""

from __future__ import annotations

import json
import os
import re
import select
import signal
import ssl
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

__all__ = ["SandboxProc", "start_sandbox", "rss_mb", "cpu_seconds", "percentile", "PtyApp", "app_env", "REPO"]

REPO = Path(__file__).resolve().parent.parent
_READY = re.compile(r"^ready kubeconfig=(\S+) gateway=(\S+) server=\S+$")


@dataclass
class SandboxProc:
    kubeconfig: Path
    context: str
    gateway: str
    state_dir: Path
    process: subprocess.Popen

    def stop(self) -> None:
        """SIGTERM, wait up to 10 s, then SIGKILL."""
        if self.process.poll() is not None:
            return
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()

    def post(self, path: str, body: dict) -> dict:
        """An authenticated HTTPS POST of `body` (JSON) to the sandbox, e.g. "/_sandbox/faults"; the decoded reply."""
        token = (self.state_dir / "token").read_text().strip()
        context = ssl.create_default_context(cafile=str(self.state_dir / "tls" / "ca.crt"))
        request = urllib.request.Request(
            self.gateway + path, data=json.dumps(body).encode(), method="POST",
            headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"})
        with urllib.request.urlopen(request, context=context, timeout=60) as response:
            raw = response.read()
        return json.loads(raw) if raw else {}


def _slug(seed: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", seed).strip("-")


def start_sandbox(workdir: Path, seed: str, *, agent: bool = False, timeout: float = 600) -> SandboxProc:
    """Run `python -m rlark_tui sandbox` for `seed` in its own process (state under workdir/sandbox-<seed>) and
    wait for its ready line. Its stderr goes to workdir/sandbox-<seed>.log."""
    workdir = Path(workdir)
    state_dir = workdir / f"sandbox-{_slug(seed)}"
    argv = [sys.executable, "-m", "rlark_tui", "sandbox", "--state-dir", str(state_dir), "--seed", seed]
    if not agent:
        argv.append("--no-agent")
    log = open(workdir / f"sandbox-{_slug(seed)}.log", "ab")
    process = subprocess.Popen(argv, cwd=REPO, stdout=subprocess.PIPE, stderr=log, stdin=subprocess.DEVNULL,
                               start_new_session=True)
    log.close()
    ready: list[re.Match] = []
    seen = threading.Event()

    def drain() -> None:
        for raw in process.stdout:
            match = _READY.match(raw.decode(errors="replace").strip())
            if match and not ready:
                ready.append(match)
                seen.set()
        seen.set()

    threading.Thread(target=drain, name=f"sandbox-{_slug(seed)}-stdout", daemon=True).start()
    if not seen.wait(timeout) or not ready:
        sandbox_failed = process.poll() is not None
        if not sandbox_failed:
            process.kill()
            process.wait()
        log_path = workdir / f"sandbox-{_slug(seed)}.log"
        last = (log_path.read_text(errors="replace").strip().splitlines() or [""])[-1]
        raise RuntimeError(f"sandbox {seed} {'exited' if sandbox_failed else 'not ready'}: {last} (see {log_path})")
    return SandboxProc(kubeconfig=Path(ready[0].group(1)), context="rlark-sandbox", gateway=ready[0].group(2),
                       state_dir=state_dir, process=process)


def rss_mb(pid: int) -> float:
    """VmRSS of process `pid` in MiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmRSS for pid {pid}")


def cpu_seconds(pid: int) -> float:
    """User + system CPU time process `pid` has used so far (under load, wall times grow; this does less)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile (q in 0..100) of `values`, linear interpolation between closest ranks."""
    if not values:
        raise ValueError("percentile of no values")
    ordered = sorted(values)
    rank = (len(ordered) - 1) * q / 100
    low = int(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def app_env(workdir: Path) -> dict[str, str]:
    """The environment for an rlark process under test: private config and state dirs, and bytecode cached in
    a private dir (an installed rlark has compiled bytecode; with PYTHONDONTWRITEBYTECODE set, every edited
    module would be compiled from source on each start). Its first run fills the cache: warm up before timing."""
    env = dict(os.environ, RLARK_CONFIG=str(Path(workdir) / "config.yaml"),
               RLARK_STATE_DIR=str(Path(workdir) / "state"),
               PYTHONPYCACHEPREFIX=str(Path(workdir).parent / "pycache"))
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


_ESCAPES = re.compile(rb"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)|[PX^_][^\x1b]*\x1b\\|[@-Z\\-_])")


class PtyApp:
    """`python -m rlark_tui ARGV` on a pseudo-terminal (TERM=xterm-256color, `size` columns x rows), as a user
    runs it. `wait_for(pattern)` reads its output until the text (escape sequences removed) matches."""

    def __init__(self, argv: Sequence[str], workdir: Path, size: tuple[int, int] = (160, 50)):
        import fcntl
        import pty
        import struct
        import termios
        self.master, slave = pty.openpty()
        columns, rows = size
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))
        env = dict(app_env(workdir), TERM="xterm-256color", COLUMNS=str(columns), LINES=str(rows))
        env.pop("TEXTUAL", None)
        self.started = time.perf_counter()
        self.process = subprocess.Popen([sys.executable, "-m", "rlark_tui", *argv], cwd=REPO, stdin=slave,
                                        stdout=slave, stderr=slave, env=env, start_new_session=True)
        os.close(slave)
        self.text = b""
        self.written = 0
        """Bytes the app wrote to its terminal so far, escape sequences included (what crosses an SSH link)."""
        self.chunks: list[tuple[float, int]] = []
        """(perf_counter time, bytes) of every read of the app's output, when `record` is on."""
        self.record = False

    def _read(self, timeout: float) -> bool:
        ready, _, _ = select.select([self.master], [], [], max(0.0, timeout))
        if not ready:
            return False
        try:
            chunk = os.read(self.master, 1 << 16)
        except OSError:
            chunk = b""
        if not chunk:
            raise RuntimeError(f"the app exited (code {self.process.poll()}): {self.tail()}")
        self.written += len(chunk)
        if self.record:
            self.chunks.append((time.perf_counter(), len(chunk)))
        self.text += _ESCAPES.sub(b"", chunk)
        return True

    def wait_for(self, pattern: bytes, timeout: float, since: int = 0) -> float:
        """Seconds since the process started when `pattern` (a regex) first matches the output after offset
        `since`; RuntimeError on timeout or exit."""
        regex = re.compile(pattern)
        deadline = time.perf_counter() + timeout
        while not regex.search(self.text, since):
            if time.perf_counter() > deadline:
                raise RuntimeError(f"{pattern.decode()!r} not shown within {timeout:.0f} s: {self.tail()}")
            self._read(deadline - time.perf_counter())
        return time.perf_counter() - self.started

    def drain(self, seconds: float) -> None:
        """Keep reading output for `seconds` (an app blocked on a full pty would stall), or until it exits."""
        deadline = time.perf_counter() + seconds
        while time.perf_counter() < deadline and self.process.poll() is None:
            try:
                self._read(deadline - time.perf_counter())
            except RuntimeError:
                return

    def send(self, data: bytes) -> None:
        os.write(self.master, data)

    def tail(self, chars: int = 300) -> str:
        return " ".join(self.text[-chars:].decode(errors="replace").split())

    def close(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(5)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
        os.close(self.master)
