"""RecentReads: answers of reads that several subscription topics make of one context (the Header log: the
progress topic and the alert rules), kept a while so the second asker within `max_age` gets the first's answer.

One per ClusterAccess (so per context, dropped with it); thread-safe, since topic reads run on worker threads.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Hashable
from typing import TypeVar

T = TypeVar("T")
KEEP_SECONDS = 600.0
"""An answer older than this is dropped at the next store, whoever asked for it."""


class RecentReads:
    def __init__(self, keep: float = KEEP_SECONDS) -> None:
        self.keep = keep
        self._lock = threading.Lock()
        self._answers: dict[Hashable, tuple[float, object, BaseException | None]] = {}
        self._reading: dict[Hashable, threading.Lock] = {}

    def peek(self, key: Hashable, max_age: float) -> tuple[float, object] | None:
        """(monotonic time of the read, its answer) stored under `key` when younger than `max_age` seconds and not
        an error; else None. Never reads."""
        with self._lock:
            hit = self._answers.get(key)
        if hit is None or hit[2] is not None or time.monotonic() - hit[0] >= max_age:
            return None
        return hit[0], hit[1]

    def get(self, key: Hashable, max_age: float, read: Callable[[], T]) -> T:
        """The answer stored under `key` if it is younger than `max_age` seconds, else `read()` (stored). One read
        per key at a time: a second asker meanwhile waits for the first's answer; an error `read` raises is
        remembered like an answer (raised again to askers within `max_age`), so a failing source is not asked
        twice as often."""
        with self._lock:
            reading = self._reading.setdefault(key, threading.Lock())
        with reading:
            with self._lock:
                hit = self._answers.get(key)
                if hit is not None and time.monotonic() - hit[0] < max_age:
                    if hit[2] is not None:
                        raise hit[2]
                    return hit[1]  # type: ignore[return-value]
            try:
                answer, error = read(), None
            except Exception as exc:  # noqa: BLE001 - kept and raised again below
                answer, error = None, exc
            with self._lock:
                now = time.monotonic()
                for old in [k for k, (at, _, _) in self._answers.items() if now - at > self.keep]:
                    del self._answers[old]
                    if old != key:
                        self._reading.pop(old, None)
                self._answers[key] = (now, answer, error)
        if error is not None:
            raise error
        return answer  # type: ignore[return-value]
