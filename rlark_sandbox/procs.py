"""Process groups of sandbox pods: list their live members, end them, and the watchdog that kills them if the
sandbox process dies without stopping its pods. Standard library only, so the watchdog starts small.

Watchdog: `python procs.py <pods dir>` waits for EOF on stdin (the sandbox holds the pipe), then kills the
process group recorded in each `<pods dir>/<pod uid>/pgid` (and `exec-<pgid>.pgid`) whose processes carry that
pod's uid marker.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

POD_UID_ENV = "RLARK_SANDBOX_POD_UID"


def live_stats():
    """(pid, the fields of /proc/<pid>/stat after the command name: [0] state, [2] pgid, [3] session, …) of every
    live (non-zombie) process."""
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", "rb") as fh:
                stat = fh.read().decode(errors="replace")
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2:].split()
        if len(fields) > 3 and fields[0] != "Z":
            yield int(entry.name), fields


def group_members(pgid: int) -> list[int]:
    """Live (non-zombie) processes of a process group, read from /proc."""
    return [pid for pid, fields in live_stats() if int(fields[2]) == pgid]


def session_members(sid: int) -> list[int]:
    """Live (non-zombie) processes of a session, read from /proc: a container's processes, also those that made a
    process group of their own (Ray's workers do)."""
    return [pid for pid, fields in live_stats() if int(fields[3]) == sid]


def session_rss(sid: int) -> int:
    """Resident memory of a session in bytes (the sum over its live members), as a container's cgroup counts it."""
    total = 0
    page = os.sysconf("SC_PAGE_SIZE")
    for pid in session_members(sid):
        try:
            with open(f"/proc/{pid}/statm", "rb") as fh:
                total += int(fh.read().split()[1]) * page
        except (OSError, IndexError, ValueError):
            continue
    return total


def kill_session(sid: int) -> None:
    """SIGKILL every process of a session, as the kernel's OOM killer ends a container's cgroup."""
    for pid in session_members(sid):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)


async def end_group(pgid: int, grace: float) -> None:
    """SIGTERM the process group, SIGKILL what is left after `grace` seconds, wait until it is empty."""
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 2.0)):
        try:
            os.killpg(pgid, sig)
        except (ProcessLookupError, PermissionError):
            return
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            if not group_members(pgid):
                return
            await asyncio.sleep(0.05)


def _environ_has(pid: int, marker: bytes) -> bool:
    try:
        with open(f"/proc/{pid}/environ", "rb") as fh:
            return marker in fh.read().split(b"\0")
    except OSError:
        return False


def reap_stale_group(pgid_file: Path) -> None:
    """Kill the process group recorded in `<uid>/pgid` if its processes carry that pod uid's marker."""
    try:
        pgid = int(pgid_file.read_text())
    except (OSError, ValueError):
        return
    marker = f"{POD_UID_ENV}={pgid_file.parent.name}".encode()
    if any(_environ_has(pid, marker) for pid in group_members(pgid)):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, signal.SIGKILL)
    pgid_file.unlink(missing_ok=True)


def reap_all(pods_dir: Path) -> None:
    """Kill every pod process group recorded under `pods_dir`: containers (`<uid>/pgid`) and execs
    (`<uid>/exec-<pgid>.pgid`)."""
    if pods_dir.is_dir():
        for pattern in ("*/pgid", "*/exec-*.pgid"):
            for pgid_file in pods_dir.glob(pattern):
                reap_stale_group(pgid_file)


def start_watchdog(pods_dir: Path) -> subprocess.Popen:
    """Start the watchdog in its own session (terminal signals do not reach it); close its stdin to end it."""
    return subprocess.Popen([sys.executable, "-I", str(Path(__file__).resolve()), str(pods_dir)],
                            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True, close_fds=True)


def _watchdog(pods_dir: str) -> None:
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.SIG_IGN)
    sys.stdin.buffer.read()
    reap_all(Path(pods_dir))


if __name__ == "__main__" and len(sys.argv) == 2:
    _watchdog(sys.argv[1])
