"""Waiting on a running app in Pilot tests: pause it until what the test waits for is there."""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import Callable

from textual import events
from textual.keys import _character_to_key, key_to_character


async def wait_for(pilot, predicate: Callable[[], object], what: str = "condition", timeout: float = 30.0,
                   show: Callable[[object], str] | None = None):
    """`predicate()`'s first truthy value, checked every 50 ms while the app runs, each time once what was posted
    to the app is handled and the screen drawn (`drawn`). After `timeout` seconds an AssertionError names `what`,
    followed by `show(app)` (e.g. the screen's text) when given. Not `Pilot.pause(0.05)`: it queues a callback on
    every widget of the screen at each poll, CPU that slows the other tests of a loaded run."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        result = predicate()
        if result:
            return result
        await asyncio.sleep(0.05)
        await drawn(pilot)
    detail = f"\n{show(pilot.app)}" if show is not None else ""
    raise AssertionError(f"timed out after {timeout}s waiting for {what}{detail}")


async def drained(app) -> None:
    """The app, its screen, the focused widget and every widget with messages queued have handled them (a
    callback queued behind each has run), at least twice over (a handler posts to another widget) and then until
    no widget of the screen has one queued. Cheaper than `Pilot.pause(0)`, which queues a callback on each of the
    screen's widgets (~100 on the wizard) per wait, and it waits for no idle CPU. Bounded at 30 s a round, so a
    crash that stops the pumps fails on the app's state instead of hanging."""
    for round in itertools.count():
        waiting = [widget for widget in app.screen.walk_children() if widget.message_queue_size]
        if round >= 2 and not waiting and not app.message_queue_size and not app.screen.message_queue_size:
            return
        waits = []
        for pump in dict.fromkeys(pump for pump in (app, app.screen, app.focused, *waiting) if pump is not None):
            done = asyncio.Event()
            if pump.call_later(done.set):
                waits.append(done.wait())
        await asyncio.wait_for(asyncio.gather(*waits), 30)


def key_event(key: str) -> events.Key:
    """`key` as the terminal sends it: a key name ('tab', 'ctrl+n') or a character typed ('a', '=')."""
    if len(key) == 1:
        return events.Key(_character_to_key(key), key)
    return events.Key(key, key_to_character(key))


async def press(pilot, *keys: str) -> None:
    """Each of `keys` sent to the app as the terminal sends it (the app routes it to the focused widget and the
    bindings), the next once the app has handled what it set off (`drained`) and its animations (a scroll to the
    focused widget) are done, then the screen drawn. Pilot.press waits for an idle process twice per key, which
    the sandbox's threads in this process postpone to a one-second timeout each, and queues a callback on each of
    the screen's widgets (~400 on the wizard) per call. Workers a key starts are not waited for: wait on what
    they show."""
    app = pilot.app
    for key in keys:
        app.post_message(key_event(key))
        await _handled(app)
    app.screen._on_timer_update()


async def drawn(pilot) -> None:
    """What `Pilot.pause()` gives a test, without its wait for an idle process: what was posted to the app is
    handled (`drained`), its animations are done and the screen is drawn. Pilot.pause() waits, besides, until the
    process spends under 1 ms of CPU in 20 ms, which a running app's timers and the sandbox's threads put off (up
    to a second), and queues a callback on each of the screen's widgets. Workers are not waited for: wait on what
    they show."""
    await _handled(pilot.app)
    pilot.app.screen._on_timer_update()


async def _handled(app) -> None:
    await drained(app)
    await app.animator.wait_until_complete()
