"""Log follow at load: 10 Pods writing 20,000 lines/s in total for 60 s (quick: 2 s at 2,000 lines/s, a 3 s probe).

The sandbox runs in its own process with its load generator (`POST /_sandbox/loadgen`); the app runs headless
(`run_test`) in a second process of its own (`python -m bench.logs --app ...`), with the log pane of the load
Job open on all Pods, following. Every SAMPLE seconds the app process prints what its pane shows at the bottom
(the newest line's `seq` and send time `t`) and how many lines the pane has taken in; this process adds the app's
RSS. Two phases: the load itself, then a PROBE at twice the rate (the pane either keeps up or shows its limit).
Keys:
- `log_follow_lines_per_s`: lines taken in by the pane per second during the probe, from WARMUP s (a third of a
  short probe) after it starts to its end: the rate the pane sustains (at least the load's own rate when it keeps up; the load alone cannot
  show headroom, since a pane cannot show more lines than are written);
- `log_lag_s`: worst (sample time - send time of the newest line shown) during the load, and after it until the
  pane has taken in every line written (or CATCH_UP seconds more);
- `log_rss_mb`: the app process's largest RSS during the load.
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
from dataclasses import dataclass, field
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
    rate, seconds, probe_seconds = (2_000, 2.0, 3.0) if quick else (20_000, 60.0, 12.0)
    sandbox = start_sandbox(workdir, "scale:1:0")
    app = None
    try:
        sandbox.post("/_sandbox/loadgen", {"pods": PODS, "lines_per_s": 1, "seconds": 0.1, "job": JOB})
        with open(workdir / "logs-app.log", "ab") as errors:
            app = subprocess.Popen([sys.executable, "-m", "bench.logs", "--app", str(sandbox.kubeconfig),
                                    sandbox.context, JOB], cwd=REPO, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                   stderr=errors, text=True, bufsize=1)
        samples = _Samples(app)
        samples.wait_ready(120)
        load = _phase(sandbox, samples, rate, seconds)
        probe = _phase(sandbox, samples, 2 * rate, probe_seconds)
        print(f"logs: {load.written} lines at {rate}/s, the pane took in {load.last['taken'] - load.base} "
              f"(skipped {load.last['skipped']}), app CPU {load.cpu:.0%} of one core; probe at {2 * rate}/s: "
              f"{probe.rate():.0f} lines/s shown (skipped {probe.last['skipped'] - load.last['skipped']}), "
              f"app CPU {probe.cpu:.0%}", file=sys.stderr)
        return {"log_follow_lines_per_s": round(probe.rate(), 1), "log_lag_s": round(load.worst_lag(), 3),
                "log_rss_mb": round(max(s["rss"] for s in load.samples), 1)}
    finally:
        if app is not None:
            _quit(app)
        sandbox.stop()


@dataclass
class _Phase:
    start: float
    end: float
    base: int
    written: int
    samples: list[dict] = field(default_factory=list)
    cpu: float = 0.0

    @property
    def last(self) -> dict:
        return self.samples[-1]

    def caught_up(self, sample: dict) -> bool:
        """Every line written has reached the pane (shown, or skipped because the pane fell a buffer behind)."""
        return sample["taken"] + sample["skipped"] - self.base >= self.written

    def rate(self) -> float:
        warmup = min(WARMUP, (self.end - self.start) / 3)
        steady = [s for s in self.samples if self.start + warmup <= s["time"] <= self.end]
        if len(steady) < 2:
            return 0.0
        return (steady[-1]["taken"] - steady[0]["taken"]) / (steady[-1]["time"] - steady[0]["time"])

    def worst_lag(self) -> float:
        lags = [s["time"] - s["t"] for s in self.samples
                if s["t"] is not None and (s["time"] <= self.end or not self.caught_up(s))]
        return max(lags, default=float("nan"))


def _phase(sandbox, samples: _Samples, rate: float, seconds: float) -> _Phase:
    """Write `rate` lines/s for `seconds`; sample until the pane has taken in every line (or CATCH_UP s more)."""
    first = samples.next(10)
    base = first["taken"] + first["skipped"]
    sandbox.post("/_sandbox/loadgen", {"pods": PODS, "lines_per_s": rate, "seconds": seconds, "job": JOB})
    start = time.time()
    phase = _Phase(start, start + seconds, base, int(rate * seconds))
    cpu = _cpu_seconds(samples.app.pid)
    while time.time() < phase.end + CATCH_UP:
        sample = samples.next(10)
        phase.samples.append(sample)
        if sample["time"] <= phase.end:
            phase.cpu = (_cpu_seconds(samples.app.pid) - cpu) / (sample["time"] - start)
        if phase.caught_up(sample) and sample["time"] >= phase.end:
            break
    return phase


class _Samples:
    def __init__(self, app: subprocess.Popen) -> None:
        self.app = app

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
        return sample


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
    from rlark_tui.local.startup import enter_kubernetes_lazily
    enter_kubernetes_lazily()  # as `rlark` starts (cli.main): the package without its __init__'s imports
    from rlark_tui.cluster.access import ClusterAccess
    from rlark_tui.model.logtarget import Scope
    from rlark_tui.screens.logs import LogScreen
    from rlark_tui.tui.app import RlarkApp

    access = ClusterAccess.open(kubeconfig, context)
    app = RlarkApp(access)
    quit_asked = threading.Event()
    threading.Thread(target=lambda: (sys.stdin.readline(), quit_asked.set()), daemon=True).start()
    async with app.run_test(size=SIZE) as pilot:
        while app.index is None or app.index.job(job) is None:
            await pilot.pause(0.1)
        screen = LogScreen(job, Scope.ALL)
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
