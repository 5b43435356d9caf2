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
        self._answers: dict[Hashable, tuple[float, object]] = {}

    def get(self, key: Hashable, max_age: float, read: Callable[[], T]) -> T:
        """The answer stored under `key` if it is younger than `max_age` seconds, else `read()` (stored; an error
        it raises is not)."""
        with self._lock:
            hit = self._answers.get(key)
            if hit is not None and time.monotonic() - hit[0] < max_age:
                return hit[1]  # type: ignore[return-value]
        answer = read()
        with self._lock:
            now = time.monotonic()
            for old in [k for k, (at, _) in self._answers.items() if now - at > self.keep]:
                del self._answers[old]
            self._answers[key] = (now, answer)
        return answer
