"""RecentReads: one read per key at a time and per max_age, errors included (the progress topic and the alert
rules ask for the same Header log from two worker threads)."""

from __future__ import annotations

import threading
import time

import pytest

from rlark_tui.cluster.errors import Unreachable
from rlark_tui.cluster.recent import RecentReads


def test_concurrent_askers_share_one_read():
    reads, started = [], threading.Event()

    def read():
        reads.append(1)
        started.set()
        time.sleep(0.2)  # the behaviour under test: a slow read, which a second asker meanwhile shares
        return ["line"]

    recent = RecentReads()
    answers = []
    first = threading.Thread(target=lambda: answers.append(recent.get("k", 10, read)))
    first.start()
    started.wait(5)
    answers.append(recent.get("k", 10, read))
    first.join()
    assert reads == [1] and answers == [["line"], ["line"]]


def test_an_error_is_remembered_for_max_age():
    calls = []

    def read():
        calls.append(1)
        raise Unreachable("logs: connection refused", "network")

    recent = RecentReads()
    for _ in range(3):
        with pytest.raises(Unreachable):
            recent.get("k", 10, read)
    assert calls == [1]
    with pytest.raises(Unreachable):
        recent.get("k", 0, read)
    assert calls == [1, 1]
