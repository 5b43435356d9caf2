"""Log follow at load: 10 Pods writing 20,000 lines/s in total for 60 s (quick: 3 s at 2,000 lines/s).

The sandbox runs in its own process with its load generator (`POST /_sandbox/loadgen`); the app runs headless
(`run_test`) in a second process of its own (`python -m bench.logs --app ...`), with the log pane of the load
Job open on all Pods, following. Every SAMPLE seconds the app process prints what its pane shows at the bottom
(the newest line's `seq` and send time `t`) and how many lines the pane has taken in; this process adds the app's
RSS. Keys:
- `log_follow_lines_per_s`: lines taken in by the pane per second from 2 s after the load starts to its end;
- `log_lag_s`: worst (sample time - send time of the newest line shown) while the load runs, and after it until
  the pane has taken in every line written (or CATCH_UP seconds more);
- `log_rss_mb`: the app process's largest RSS over the run.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

from bench.harness import REPO, rss_mb, start_sandbox

SAMPLE = 0.5
WARMUP = 2.0
CATCH_UP = 15.0
JOB = "loadgen"
PODS = 10
SIZE = (160, 50)
_LINE = re.compile(r"seq=(\d+) pod=\d+ n=\d+ t=(\d+\.\d+)")


def run(workdir: Path, quick: bool) -> dict[str, float]:
    rate, seconds = (2_000, 3.0) if quick else (20_000, 60.0)
    sandbox = start_sandbox(workdir, "scale:1:0")
    app = None
    try:
        sandbox.post("/_sandbox/loadgen", {"pods": PODS, "lines_per_s": 1, "seconds": 0.1, "job": JOB})
        app = subprocess.Popen([sys.executable, "-m", "bench.logs", "--app", str(sandbox.kubeconfig),
                                sandbox.context, JOB], cwd=REPO, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               stderr=open(workdir / "logs-app.log", "ab"), text=True, bufsize=1)
        samples = _Samples(app)
        samples.wait_ready(120)
        sandbox.post("/_sandbox/loadgen", {"pods": PODS, "lines_per_s": rate, "seconds": seconds, "job": JOB})
        start = time.time()
        cpu = _cpu_seconds(app.pid)
        total = int(rate * seconds)
        end = start + seconds
        while time.time() < end + CATCH_UP:
            sample = samples.next(10)
            if sample["time"] <= end:
                busy = (_cpu_seconds(app.pid) - cpu) / (sample["time"] - start)
            if sample["taken"] >= total and sample["time"] >= end:
                break
        print(f"logs: the app process used {busy:.0%} of one core during the load", file=sys.stderr)
        return samples.keys(start, end, total)
    finally:
        if app is not None:
            _quit(app)
        sandbox.stop()


class _Samples:
    def __init__(self, app: subprocess.Popen) -> None:
        self.app = app
        self.taken: list[dict] = []

    def _line(self, timeout: float) -> dict:
        result: list[str] = []
        reader = threading.Thread(target=lambda: result.append(self.app.stdout.readline()), daemon=True)
        reader.start()
        reader.join(timeout)
        if not result or not result[0]:
            raise RuntimeError(f"the log app said nothing for {timeout:.0f} s (exit code {self.app.poll()})")
        return json.loads(result[0])

    def wait_ready(self, timeout: float) -> None:
        if self._line(timeout).get("ready") is not True:
            raise RuntimeError("the log app did not open the pane")

    def next(self, timeout: float) -> dict:
        sample = self._line(timeout)
        sample["rss"] = rss_mb(self.app.pid)
        self.taken.append(sample)
        return sample

    def keys(self, start: float, end: float, total: int) -> dict[str, float]:
        during = [s for s in self.taken if s["time"] >= start]
        lags = [s["time"] - s["t"] for s in during
                if s["t"] is not None and (s["time"] <= end or s["taken"] < total)]
        steady = [s for s in during if start + WARMUP <= s["time"] <= end]
        rate = 0.0
        if len(steady) >= 2:
            rate = (steady[-1]["taken"] - steady[0]["taken"]) / (steady[-1]["time"] - steady[0]["time"])
        last = self.taken[-1] if self.taken else {"seq": -1, "taken": 0}
        print(f"logs: {total} lines written, newest shown seq {last['seq']}, pane took in {last['taken']} "
              f"(skipped by the pane: {last.get('skipped', 0)})", file=sys.stderr)
        return {"log_follow_lines_per_s": round(rate, 1), "log_lag_s": round(max(lags, default=float("nan")), 3),
                "log_rss_mb": round(max(s["rss"] for s in self.taken), 1)}


def _cpu_seconds(pid: int) -> float:
    """User + system CPU time of process `pid` so far (all its threads)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _quit(app: subprocess.Popen) -> None:
    try:
        app.stdin.write("quit\n")
        app.stdin.flush()
        app.wait(20)
    except (OSError, subprocess.TimeoutExpired):
        app.kill()
        app.wait()


# ---- the app process -------------------------------------------------------------------------------------------

async def _drive(kubeconfig: str, context: str, job: str) -> None:
    from rlark_tui.app import RlarkApp
    from rlark_tui.cluster.access import ClusterAccess
    from rlark_tui.screens.logs import LogScreen

    access = ClusterAccess.open(kubeconfig, context)
    app = RlarkApp(access)
    quit_asked = threading.Event()
    threading.Thread(target=lambda: (sys.stdin.readline(), quit_asked.set()), daemon=True).start()
    async with app.run_test(size=SIZE) as pilot:
        while app.index is None or app.index.job(job) is None:
            await pilot.pause(0.1)
        screen = LogScreen(job, None)
        app.push_screen(screen)
        while screen.open_streams < PODS:
            await pilot.pause(0.1)
        _say({"ready": True})
        while not quit_asked.is_set():
            await asyncio.sleep(SAMPLE)
            _say(_sample(screen))
    access.close()


def _sample(screen) -> dict:
    view = screen.view
    seq, sent = -1, None
    for y in range(view.size.height - 1, -1, -1):
        match = _LINE.search(view.render_line(y).text)
        if match:
            seq, sent = int(match.group(1)), float(match.group(2))
            break
    buffer = screen.buffer
    return {"time": time.time(), "seq": seq, "t": sent, "taken": len(buffer) + buffer.dropped,
            "skipped": screen.skipped}


def _say(data: dict) -> None:
    sys.stdout.write(json.dumps(data) + "\n")
    sys.stdout.flush()


if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] == "--app":
        asyncio.run(_drive(*sys.argv[2:]))
    else:
        print("usage: python -m bench.logs --app KUBECONFIG CONTEXT JOB (run by bench/logs.py)", file=sys.stderr)
        sys.exit(2)
