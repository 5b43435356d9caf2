"""What the TUI writes to its terminal, measured through a real pty (issue 36 item 2): what a slow or far SSH
link has to carry.

- `terminal_idle_bytes_per_min`: bytes per minute while nothing changes, 100 Jobs with a Running Pod each in
  view (a 200x110 terminal), created two hours ago (ages move once a minute); measured over 60 s (quick: 2 s)
  after the list settled (nothing written for 5 s; quick: for 0.5 s, so its figure may hold the header's last
  connection states: the quick run is a smoke test, its numbers are not judged).
- `terminal_key_bytes`: median bytes written in answer to one `j` (cursor down) on that list, 20 presses (3 quick).
- `terminal_log_frames_per_s` and `terminal_log_bytes_per_s`: while the log pane follows 10 Pods writing 2,000
  lines/s in total, the frames (writes closer than FRAME_GAP s apart count as one) and bytes per second, over
  20 s after 2 s of warm-up (quick: 2 s after 0.5 s).
"""

from __future__ import annotations

import statistics
import time
from pathlib import Path

from bench.harness import PtyApp, start_sandbox

JOBS = 100
AGE_SECONDS = 7200
SIZE = (200, 110)
FRAME_GAP = 0.004
LOG_RATE = 2_000
LOG_PODS = 10


def _quiet(app: PtyApp, gap: float = 0.3, limit: float = 5.0) -> None:
    """Read until the app has written nothing for `gap` seconds (or `limit` passed)."""
    deadline = time.perf_counter() + limit
    while time.perf_counter() < deadline:
        before = app.written
        app.drain(gap)
        if app.written == before:
            return


def _list(workdir: Path, quick: bool) -> dict[str, float]:
    sandbox = start_sandbox(workdir, f"scale:{JOBS}:{JOBS}:{AGE_SECONDS}")  # a Running Pod each: no alert fires
    try:
        app = PtyApp(["--kubeconfig", str(sandbox.kubeconfig)], workdir, size=SIZE)
        try:
            app.wait_for(rb"scale-%05d" % (JOBS - 1), 120)
            _quiet(app, 0.5 if quick else 5.0, 40.0)  # the header has its connection states, the list its first rows
            seconds = 2.0 if quick else 60.0
            before = app.written
            app.drain(seconds)
            idle = (app.written - before) * 60 / seconds
            keys = []
            for _ in range(3 if quick else 20):
                _quiet(app)
                before = app.written
                app.send(b"j")
                _quiet(app)
                keys.append(app.written - before)
            return {"terminal_idle_bytes_per_min": round(idle, 1), "terminal_key_bytes": statistics.median(keys)}
        finally:
            app.close()
    finally:
        sandbox.stop()


def _frames(chunks: list[tuple[float, int]]) -> int:
    frames, last = 0, None
    for at, _ in chunks:
        if last is None or at - last > FRAME_GAP:
            frames += 1
        last = at
    return frames


def _log(workdir: Path, quick: bool) -> dict[str, float]:
    seconds, warm = (2.0, 0.5) if quick else (20.0, 2.0)
    sandbox = start_sandbox(workdir, "scale:1:0")
    try:
        sandbox.post("/_sandbox/loadgen", {"pods": LOG_PODS, "lines_per_s": 1, "seconds": 0.1, "job": "loadgen"})
        app = PtyApp(["--kubeconfig", str(sandbox.kubeconfig)], workdir, size=(160, 50))
        try:
            app.wait_for(rb"loadgen", 120)
            mark = len(app.text)
            app.send(b"/")
            # typed once the bar shows: keys that come in one read with `/` still reach the list's own bindings
            # (a clean-clone run's loaded smoke lanes opened the wizard with its `n`)
            app.wait_for(rb"filter Jobs", 60, since=mark)
            app.send(b"^loadgen$\r")
            _quiet(app)
            app.send(b"l")
            app.wait_for(rb"Follow", 60)
            mark = len(app.text)
            sandbox.post("/_sandbox/loadgen", {"pods": LOG_PODS, "lines_per_s": LOG_RATE, "seconds": seconds + 5,
                                               "job": "loadgen"})
            app.wait_for(rb"seq=\d+", 60, since=mark)
            app.drain(warm)
            app.chunks, app.record = [], True
            before, started = app.written, time.perf_counter()
            app.drain(seconds)
            elapsed = time.perf_counter() - started
            app.record = False
            return {"terminal_log_frames_per_s": round(_frames(app.chunks) / elapsed, 1),
                    "terminal_log_bytes_per_s": round((app.written - before) / elapsed, 1)}
        finally:
            app.close()
    finally:
        sandbox.stop()


def run(workdir: Path, quick: bool) -> dict[str, float]:
    return {**_list(workdir, quick), **_log(workdir, quick)}
