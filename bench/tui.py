"""TUI list benchmarks (issue 9): the real RlarkApp, headless (`run_test`, 160x50), against a scale sandbox; 20
samples of each measure (quick: 5).

A frame counts as shown when Textual hands it to the driver: `App._display` is wrapped and each frame's
terminal output is built (as a real driver must) and searched for the text we wait for.

- watch_update_latency_ms_p50/p95: a thread patches one visible Job's display name ~5 times/s; each sample
  is the time from just before the PATCH to the first frame that paints the new name;
- filter_keystroke_ms_p95: `/`, then keys that narrow and widen the list; key → first frame painting the
  first row that moved;
- key_latency_ms_p95: j/k on the list while the writes go on (key → first frame painting the row the cursor
  moved to), and `/` on a log pane following 10 Pods at 20,000 lines/s (quick: 2,000) over the list while the
  writes go on (key → first frame painting the search bar's hint); p95 of both sets.
- progress_requests_per_s: the Header-log reads (`pods/log`) per second while the list is shown (the three measures
  above), every Job Running: one read serves the PROGRESS column and the alert rules (at most 4 per second, the
  Jobs on screen first: ~48 rows; the filter brings others on screen); progress_reads_per_job_per_10s: the most
  reads of one Job within 10 s (target 1).
- printed for the j/k phase: Snapshots shown per second, how many carried a new alerts result (the alert rules run
  for all 5,000 Jobs meanwhile), and the CPU seconds of the UI thread and of the whole process; for the filter
  phase the UI thread's CPU from a key to its frame (p50/p95) and the CPU seconds of the UI thread and the process
  (figures a loaded machine moves less than the wall-clock ones).
"""

from __future__ import annotations

import asyncio
import re
import sys
import threading
import time
from pathlib import Path

from bench.harness import percentile, start_sandbox
from rlark_tui.cluster.metrics import PROGRESS_SINCE_SECONDS

SIZE = (160, 50)
ESCAPES = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
LOG_JOB = "loadgen"
LOG_PODS = 10
LOG_SECONDS = 30
SEARCH_HINT = "n / N to step"
FILTER_KEYS = ("4", "2", "1", "backspace", "backspace", "backspace", "7", "backspace", "3", "backspace")


class FrameLog:
    """Every frame's plain text and time, from the app's `_display` (the hand-over to the driver)."""

    def __init__(self, app) -> None:
        self.frames: list[tuple[float, str]] = []
        self.changed = asyncio.Event()
        original = app._display

        def display(screen, renderable) -> None:
            original(screen, renderable)
            if renderable is None:
                return
            stamp = time.perf_counter()
            text = ESCAPES.sub("", renderable.render_segments(app.console))
            self.frames.append((stamp, text))
            self.changed.set()

        app._display = display

    async def first(self, token: str, since: float, timeout: float = 10.0) -> float | None:
        """Seconds from `since` to the first frame at or after it that contains `token` (None on timeout)."""
        deadline = time.perf_counter() + timeout
        checked = 0
        while True:
            for stamp, text in self.frames[checked:]:
                if stamp >= since and token in text:
                    return stamp - since
            checked = len(self.frames)
            remaining = deadline - time.perf_counter()
            if remaining <= 0:
                return None
            self.changed.clear()
            try:
                await asyncio.wait_for(self.changed.wait(), remaining)
            except TimeoutError:
                return None


class Writer(threading.Thread):
    """Patches the display name of `names` in turn at `rate`/s; records (time before the PATCH, new name)."""

    def __init__(self, access, names: list[str], rate: float, count: int) -> None:
        super().__init__(name="bench-writer", daemon=True)
        self.access, self.names, self.rate, self.count = access, names, rate, count
        self.sent: list[tuple[float, str]] = []
        self.errors: list[str] = []
        self.stop_event = threading.Event()

    def run(self) -> None:
        from rlark_tui.cluster.kinds import JOBS
        from rlark_tui.model import keys

        for n in range(self.count):
            if self.stop_event.is_set():
                return
            name = self.names[n % len(self.names)]
            shown = f"b{n:03d}-{name[-5:]}"
            stamp = time.perf_counter()
            try:
                self.access.patch(JOBS, name, {"metadata": {"annotations": {keys.DISPLAY_NAME_ANNOTATION: shown}}})
            except Exception as exc:  # noqa: BLE001 - recorded and reported, the run goes on
                self.errors.append(str(exc))
                continue
            self.sent.append((stamp, shown))
            self.stop_event.wait(max(0.0, stamp + 1 / self.rate - time.perf_counter()))


class SnapshotCount:
    """The Snapshots the app shows, and how many carry a new alerts result (a quiet alert round makes none)."""

    def __init__(self, app) -> None:
        self.shown = self.alerts = 0
        self._last = None
        original = app.apply_snapshot

        def apply(snapshot, index=None) -> None:
            self.shown += 1
            if self._last is not None and snapshot.alerts is not self._last.alerts:
                self.alerts += 1
            self._last = snapshot
            original(snapshot, index)

        app.apply_snapshot = apply


def _stamp_arrivals(app) -> dict[str, float]:
    """Display name → when its watch event reached the app's watch thread (splits a latency into the
    sandbox's part and the app's)."""
    from rlark_tui.model import keys

    arrivals: dict[str, float] = {}
    reconciler = app.reconciler
    original = reconciler._wake

    def wake(item) -> None:
        what, plural, event = item
        if what == "watch" and plural == "jobs" and event.obj:
            shown = ((event.obj.get("metadata") or {}).get("annotations") or {}).get(keys.DISPLAY_NAME_ANNOTATION)
            if shown:
                arrivals.setdefault(shown, time.perf_counter())
        original(item)

    reconciler._wake = wake
    return arrivals


def _most_per_window(reads: list[tuple[float, str]], window: float) -> int:
    """The most reads of one Pod within any `window` seconds."""
    by_pod: dict[str, list[float]] = {}
    for stamp, pod in reads:
        by_pod.setdefault(pod, []).append(stamp)
    most = 0
    for stamps in by_pod.values():
        start = 0
        for end, stamp in enumerate(stamps):
            while stamp - stamps[start] >= window:
                start += 1
            most = max(most, end - start + 1)
    return most


def _expected_first_rows(screen, text: str, count: int) -> list[str]:
    from rlark_tui.widgets.filter_bar import make_matcher

    matcher = make_matcher(text)
    return sorted(name for name, row in screen.rows.items()
                  if matcher.matches_row("\n".join(row.search_fields()).lower(), row.search_fields()))[:count]


def _ms(values: list[float], q: float) -> str:
    """The q-th percentile of `values` in whole ms for a printed line; "-" with no sample."""
    return f"{percentile(values, q):.0f}" if values else "-"


def _record(results: dict[str, float], values: list[float], what: str, **keys: float) -> None:
    """results[key] = the q-th percentile of `values` for each key=q. With no sample (the frame of every one missed
    its timeout, as on a machine loaded far past what a user has) the keys stay null, and a line says why: a
    smoke run still completes, and a full run shows n/a against the target instead of a number."""
    if not values:
        print(f"tui: no frame of {what} came within its timeout; {', '.join(keys)} left null", file=sys.stderr)
        return
    for key, q in keys.items():
        results[key] = percentile(values, q)


async def _wait(predicate, timeout: float, what: str) -> None:
    deadline = time.perf_counter() + timeout
    while not predicate():
        if time.perf_counter() > deadline:
            raise RuntimeError(f"timed out after {timeout:.0f}s waiting for {what}")
        await asyncio.sleep(0.1)


async def _keys_while_logs_stream(app, pilot, frames: FrameLog, post, writer_access, names: list[str],
                                  rate: int, samples: int) -> list[float]:
    """`/` on the log pane of the sandbox's load Job (10 Pods at `rate` lines/s) while the list behind it
    takes 5 writes/s: key → first frame painting the search bar's hint."""
    from rlark_tui.model.logtarget import Scope
    from rlark_tui.screens.logs import LogScreen

    post("/_sandbox/loadgen", {"pods": LOG_PODS, "lines_per_s": 1, "seconds": 0.1, "job": LOG_JOB})
    await _wait(lambda: app.index is not None and app.index.job(LOG_JOB) is not None, 60, "the load Job")
    screen = LogScreen(LOG_JOB, Scope.ALL)
    app.push_screen(screen)
    await _wait(lambda: screen.open_streams >= LOG_PODS, 60, f"{LOG_PODS} log streams")
    post("/_sandbox/loadgen", {"pods": LOG_PODS, "lines_per_s": rate, "seconds": LOG_SECONDS, "job": LOG_JOB})
    writer = Writer(writer_access, names, rate=5, count=10 * samples)
    writer.start()
    await asyncio.sleep(1.0)
    times = []
    try:
        for _ in range(samples):
            stamp = time.perf_counter()
            await pilot.press("slash")
            took = await frames.first(SEARCH_HINT, stamp, timeout=5)
            if took is not None:
                times.append(took * 1000)
            await pilot.press("escape")
            await asyncio.sleep(0.2)
    finally:
        writer.stop_event.set()
        writer.join()
    return times


async def _measure(kubeconfig: Path, context: str, jobs: int, pods: int, samples: int, post,
                   log_rate: int) -> dict[str, float]:
    from rlark_tui.cluster.access import ClusterAccess
    from rlark_tui.tui.app import RlarkApp

    access = ClusterAccess.open(str(kubeconfig), context)
    writer_access = ClusterAccess.open(str(kubeconfig), context)
    app = RlarkApp(access)
    results: dict[str, float] = {}
    reads: list[float] = []
    pod_log = access.pod_log

    def counted_pod_log(*args, **kwargs):
        # the Header-log reads (cluster/logreads.py: a first read of the last 10 minutes, then from the last line
        # seen), not the log pane's follows
        if not kwargs.get("follow") and (kwargs.get("since_seconds") == PROGRESS_SINCE_SECONDS
                                         or kwargs.get("since_time")):
            reads.append((time.perf_counter(), args[1]))
        return pod_log(*args, **kwargs)

    access.pod_log = counted_pod_log
    snapshots = SnapshotCount(app)
    try:
        async with app.run_test(size=SIZE) as pilot:
            frames = FrameLog(app)
            arrivals = _stamp_arrivals(app)
            screen = app.screen
            await _wait(lambda: len(screen.rows) == jobs and sum(r.pods_running for r in screen.rows.values()) == pods,
                        900, f"{jobs} Jobs with {pods} Pods in the list")
            await pilot.pause(0.5)
            visible = sorted(screen.rows)[:40]
            reads.clear()
            polled_from = time.perf_counter()

            # 1. API write → row repainted, ~5 writes/s
            writer = Writer(writer_access, visible[20:40], rate=5, count=samples)
            writer.start()
            latencies, in_sandbox = [], []
            for index in range(samples):
                await _wait(lambda index=index: len(writer.sent) > index or not writer.is_alive(), 30, "the next write")
                if len(writer.sent) <= index:
                    break
                stamp, shown = writer.sent[index]
                took = await frames.first(shown, stamp, timeout=5)
                if took is not None:
                    latencies.append(took * 1000)
                    if shown in arrivals:
                        in_sandbox.append((arrivals[shown] - stamp) * 1000)
            writer.join()
            if writer.errors:
                raise RuntimeError(f"writes failed: {writer.errors[0]}")
            _record(results, latencies, "a write's repaint", watch_update_latency_ms_p50=50,
                    watch_update_latency_ms_p95=95)
            if in_sandbox:
                print(f"tui: of the update latency, write → watch event in the app's watch thread took "
                      f"p50 {percentile(in_sandbox, 50):.0f} / p95 {percentile(in_sandbox, 95):.0f} ms "
                      f"(sandbox, network, JSON); samples {', '.join(f'{v:.0f}' for v in latencies)} ms",
                      file=sys.stderr)

            # 2. key latency: j/k while writes stream in
            writer = Writer(writer_access, visible[20:40], rate=5, count=10 * samples)
            writer.start()
            key_times = []
            phase = (time.perf_counter(), time.thread_time(), time.process_time(), snapshots.shown, snapshots.alerts)
            for index in range(2 * samples):
                # five rows down, five up; from wherever the cursor is (a loaded machine may not have shown the
                # last key's move yet, and the table may have moved the cursor's row), staying on the first rows
                at = screen.table.cursor_row
                key = "j" if at <= 0 or ((index // 5) % 2 == 0 and at < 5) else "k"
                row = at + (1 if key == "j" else -1)
                stamp = time.perf_counter()
                await pilot.press(key)
                if not 0 <= row < len(visible):
                    continue
                took = await frames.first(visible[row], stamp, timeout=5)
                if took is not None:
                    key_times.append(took * 1000)
                await asyncio.sleep(0.05)
            writer.stop_event.set()
            writer.join()
            took = time.perf_counter() - phase[0]
            print(f"tui: j/k phase {took:.0f} s: {(snapshots.shown - phase[3]) / took:.1f} Snapshots/s shown, "
                  f"{snapshots.alerts - phase[4]} with a new alerts result; CPU {time.thread_time() - phase[1]:.2f} s "
                  f"in the UI thread, {time.process_time() - phase[2]:.2f} s in the process", file=sys.stderr)

            # 3. filter keystrokes: narrow and widen; each key must move the first rows
            await pilot.press("slash")
            await pilot.pause(0.2)
            bar = screen.query_one("#job-filter")
            typed = ""
            filter_times, filter_cpu = [], []
            filter_phase = (time.perf_counter(), time.thread_time(), time.process_time())
            for _round in range(max(1, samples // len(FILTER_KEYS))):
                for key in FILTER_KEYS:
                    before = _expected_first_rows(screen, typed, 10)
                    typed = typed[:-1] if key == "backspace" else typed + key
                    after = _expected_first_rows(screen, typed, 10)
                    moved = next((name for old, name in zip(before + [""] * 10, after) if old != name), None)
                    stamp, cpu = time.perf_counter(), time.thread_time()
                    await pilot.press(key)
                    if moved is None:
                        continue
                    took = await frames.first(moved, stamp)
                    if took is not None:
                        filter_times.append(took * 1000)
                        filter_cpu.append((time.thread_time() - cpu) * 1000)
                    await asyncio.sleep(0.1)
            if bar.value != typed:
                raise RuntimeError(f"filter shows {bar.value!r}, expected {typed!r}")
            _record(results, filter_times, "a filter keystroke", filter_keystroke_ms_p95=95)
            took = time.perf_counter() - filter_phase[0]
            print(f"tui: filter phase {took:.0f} s: UI-thread CPU from a key to its frame p50 "
                  f"{_ms(filter_cpu, 50)} / p95 {_ms(filter_cpu, 95)} ms; CPU "
                  f"{time.thread_time() - filter_phase[1]:.2f} s in the UI thread, "
                  f"{time.process_time() - filter_phase[2]:.2f} s in the process", file=sys.stderr)
            await pilot.press("escape")
            listed_for = time.perf_counter() - polled_from
            results["progress_requests_per_s"] = len(reads) / listed_for
            results["progress_reads_per_job_per_10s"] = _most_per_window(reads, 10.0)
            print(f"tui: {len(reads)} progress reads of {len({pod for _, pod in reads})} Jobs in {listed_for:.0f} s "
                  f"with the list shown (filtering brings other Jobs on screen)", file=sys.stderr)

            # 4. key latency with a log pane streaming 10 Pods over the list while the writes go on
            log_times = await _keys_while_logs_stream(app, pilot, frames, post, writer_access, visible[20:40],
                                                      log_rate, samples)
            print(f"tui: key latency p95 {_ms(key_times, 95)} ms on the list with 5 writes/s, "
                  f"{_ms(log_times, 95)} ms on a log pane following {log_rate} lines/s as well",
                  file=sys.stderr)
            _record(results, key_times + log_times, "a key", key_latency_ms_p95=95)
    finally:
        access.close()
        writer_access.close()
    return results


def run(workdir: Path, quick: bool) -> dict[str, float]:
    jobs, pods = (200, 2000) if quick else (5000, 50000)
    sandbox = start_sandbox(workdir, f"scale:{jobs}:{pods}")
    try:
        samples = 5 if quick else 20
        return asyncio.run(_measure(sandbox.kubeconfig, sandbox.context, jobs, pods, samples, sandbox.post,
                                    2_000 if quick else 20_000))
    finally:
        sandbox.stop()


if __name__ == "__main__":
    import argparse
    import json
    import tempfile

    parser = argparse.ArgumentParser(description="TUI list benchmarks only")
    parser.add_argument("--quick", action="store_true")
    options = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-tui-") as tmp:
        print(json.dumps(run(Path(tmp), options.quick), indent=1))
