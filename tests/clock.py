"""An injected clock for rate and age tests: time moves only when the test moves it, so "not before 2 s" is
asserted without waiting 2 s.

    clock = Clock()
    reconciler = Reconciler(access, clock=clock)
    clock.now += 1.9
    await ticks(clock)     # the code has looked at the clock twice since: it saw the new time
"""

from __future__ import annotations

import asyncio
import time


class Clock:
    """`now` moves only when the test says; `reads` counts how often the code looked."""

    def __init__(self, now: float = 1000.0) -> None:
        self.now = now
        self.reads = 0

    def __call__(self) -> float:
        self.reads += 1
        return self.now


async def ticks(clock: Clock, count: int = 2, timeout: float = 20.0) -> None:
    """Until the code has looked at the clock `count` more times (a poll loop looks once per tick)."""
    seen = clock.reads
    deadline = time.monotonic() + timeout
    while clock.reads < seen + count:
        assert time.monotonic() < deadline, f"the clock was not read {count} more times within {timeout:g} s"
        await asyncio.sleep(0.01)
