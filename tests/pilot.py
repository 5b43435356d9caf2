"""Waiting on a running app in Pilot tests: pause it until what the test waits for is there."""

from __future__ import annotations

import time
from collections.abc import Callable


async def wait_for(pilot, predicate: Callable[[], object], what: str = "condition", timeout: float = 30.0,
                   show: Callable[[object], str] | None = None):
    """`predicate()`'s first truthy value, checked every 50 ms while the app runs. After `timeout` seconds an
    AssertionError names `what`, followed by `show(app)` (e.g. the screen's text) when given."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        result = predicate()
        if result:
            return result
        await pilot.pause(0.05)
    detail = f"\n{show(pilot.app)}" if show is not None else ""
    raise AssertionError(f"timed out after {timeout}s waiting for {what}{detail}")
