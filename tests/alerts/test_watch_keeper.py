"""rlark watch's keeping of first failures: a Job whose reads hang delays no other Job's keep, and fires no second
keep of its own while its first runs (the keeping code driven directly, its reads stood in for: no cluster)."""

from __future__ import annotations

import threading
import time

from rlark_tui.alerting import rules
from rlark_tui.commands.watch import Keeper


def crashed(job: str, at: float) -> rules.Alert:
    finding = rules.Finding("run-crashed", job, f"{job}-header", "Segmentation fault", "")
    return rules.Alert.fired(finding, at, at)


def wait_for(condition, what: str, seconds: float = 5.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, f"not within {seconds} s: {what}"
        time.sleep(0.01)


def test_a_job_whose_reads_hang_delays_no_other_jobs_keep():
    release = threading.Event()
    calls: list[str] = []
    lines: list[str] = []

    def keep(job: str) -> None:
        calls.append(job)
        if job == "drips":
            release.wait(10)

    keeper = Keeper(keep, lines.append, seconds=0.2, at_once=1)
    try:
        keeper.fired(crashed("drips", 0.0))
        wait_for(lambda: "drips" in calls, "the first Job's keep")
        for at in range(1, 5):  # a crash-looping Job fires again and again while its first keep hangs
            keeper.fired(crashed("drips", float(at)))
        keeper.fired(crashed("plain", 0.0))
        wait_for(lambda: "plain" in calls, "the other Job's keep, past the hanging one's bound")
        assert calls.count("drips") == 1
        assert lines == ["the first failure of drips is not read within 0.2 s (the bound of a keep): its read "
                         "goes on, the other Jobs' are read meanwhile"]
        release.set()
        wait_for(lambda: calls.count("drips") == 2, "one more keep of the Job that fired while its keep ran")
        keeper.fired(crashed("plain", 1.0))
        wait_for(lambda: calls.count("plain") == 2, "the next firing's keep")
        assert calls.count("drips") == 2
    finally:
        release.set()


def test_jobs_crashing_under_new_names_for_days_hold_a_bounded_memory_of_firings(monkeypatch):
    """Issue 33, a seventeenth round (churn over time): the Keeper remembered every (Job, time) it kept for, so
    a control plane whose Jobs crash under new names every second grew rlark watch by an entry a second for as
    long as it ran. It remembers the newest SEEN_FIRINGS; the same round's firing is still kept once."""
    from rlark_tui.commands import watch

    monkeypatch.setattr(watch, "SEEN_FIRINGS", 8)
    calls: list[str] = []
    keeper = Keeper(calls.append, lambda line: None)
    for number in range(24):
        keeper.fired(crashed(f"job-{number}", float(number)))
    keeper.fired(crashed("job-23", 23.0))  # the same round's second alert of the Job
    assert len(keeper.seen) == 8
    wait_for(lambda: len(calls) == 24, "every Job's keep")
    assert calls.count("job-23") == 1


def test_a_keep_the_watchs_end_cuts_short_prints_no_traceback(monkeypatch):
    """Issue 33, a twentieth round (rlark watch ended by Ctrl-C behind a mutating proxy): a keep runs on a daemon
    thread and the watch does not wait for it, so one still reading when the interpreter shut down raised
    RuntimeError ('cannot schedule new futures after interpreter shutdown', from its reads' thread pool) and Python
    printed the thread's traceback under the watch's last line. A keep that fails once the watch has ended is
    dropped; one that fails while the watch runs is still a bug, raised."""
    uncaught: list = []
    monkeypatch.setattr(threading, "excepthook", uncaught.append)
    started, release, lines = threading.Event(), threading.Event(), []

    def keep(job: str) -> None:
        started.set()
        release.wait(10)
        raise RuntimeError("cannot schedule new futures after interpreter shutdown")

    keeper = Keeper(keep, lines.append)
    keeper.fired(crashed("ends", 0.0))
    assert started.wait(5)
    keeper.stop()
    release.set()
    wait_for(lambda: not keeper.running, "the keep's end")
    time.sleep(0.05)  # the thread's exception, if any, is handed to threading.excepthook as the thread ends
    assert uncaught == [] and lines == []
