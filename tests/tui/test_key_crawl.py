"""A key crawl: on the shared sandbox's objects, every screen at 80x24 and 120x40 gets every key bound there
pressed once (what pops up is closed again), and the app must live through it. Keys that quit the app or hand
the terminal over (suspend, the Pod shell) are left out: they need a real terminal. A crash found here becomes a
test of its own next to its screen's tests."""

from __future__ import annotations

import pytest

from rlark_tui.flow import messages
from rlark_tui.screens.wizard import WizardScreen
from rlark_tui.tui.app import RlarkApp
from tests.pilot import wait_for

SIZES = [(80, 24), (120, 40)]
LEFT_OUT = ("quit", "suspend", "shell")
"""Actions whose key is not pressed: they end the app or need a real terminal."""


def first_job(app) -> str:
    return sorted(app.index.snapshot.jobs)[0]


def first_node(app) -> str:
    return sorted(app.index.snapshot.nodes)[0]


OPEN = {
    "job-list": None,
    "job-detail": lambda app: app.post_message(messages.OpenJob(first_job(app))),
    "logs": lambda app: app.post_message(messages.OpenLogs(first_job(app))),
    "check": lambda app: app.post_message(messages.OpenCheck(first_job(app))),
    "wizard": lambda app: app.post_message(messages.OpenWizard()),
    "nodes": lambda app: app.post_message(messages.OpenNodes()),
    "node-detail": lambda app: app.post_message(messages.OpenNode(first_node(app))),
    **{name: (lambda app, name=name: app.console_command(name))
       for name in ("clusters", "storage", "sshkeys", "pods", "events", "records")},
}


def keys_of(screen, closing: bool) -> list[str]:
    """The keys bound on `screen` now (its own, its focused widget's and the app's), less the ones left out;
    escape (which may close the screen) last, or not at all unless `closing`."""
    keys = {key for key, active in screen.active_bindings.items()
            if not any(word in active.binding.action for word in LEFT_OUT)}
    return sorted(keys if closing else keys - {"escape"}, key=lambda key: (key == "escape", key))


async def back_to(pilot, screen) -> None:
    """Close whatever a key opened over `screen` (dialogs dismissed unanswered)."""
    app = pilot.app
    while app.screen is not screen and len(app.screen_stack) > 1 and screen in app.screen_stack:
        app.pop_screen()
        await pilot.pause()


async def crawl(pilot, screen, closing: bool = True) -> list[str]:
    pressed = []
    for key in keys_of(screen, closing):
        if pilot.app.screen is not screen:
            break
        await pilot.press(key)
        await pilot.pause()
        pressed.append(key)
        assert pilot.app.is_running and pilot.app._exception is None, f"the app died on {key!r}"
        await back_to(pilot, screen)
    return pressed


@pytest.mark.parametrize("size", SIZES, ids=lambda size: f"{size[0]}x{size[1]}")
@pytest.mark.parametrize("name", sorted(OPEN))
async def test_every_bound_key_on_every_screen_leaves_the_app_running(access, env, monkeypatch, name, size):
    monkeypatch.chdir(env)  # what a key saves (a log, a download) lands in the test's directory
    app = RlarkApp(access)
    async with app.run_test(size=size) as pilot:
        await wait_for(pilot, lambda: app.index is not None and app.index.snapshot.jobs and app.index.nodes,
                       "the sandbox's Jobs and Nodes")
        base = app.screen
        if OPEN[name] is not None:
            OPEN[name](app)
            await wait_for(pilot, lambda: app.screen is not base, f"the {name} screen")
        screen = app.screen
        await pilot.pause()
        steps = 4 if isinstance(screen, WizardScreen) else 1
        pressed = []
        for step in range(1, steps + 1):
            if screen not in app.screen_stack:
                break
            if isinstance(screen, WizardScreen):
                await screen.load(screen.draft, step)
                await pilot.pause()
            pressed += await crawl(pilot, screen, closing=step == steps)
        assert pressed, f"no keys bound on {name}"
        assert app.is_running and app._exception is None
