"""A key crawl: on the shared sandbox's objects, every screen at 80x24 and 120x40 gets every key bound there
pressed once (what pops up is closed again), and the app must live through it. In the wizard (opened with the
job list's n, which the screens part leaves to the wizard part) that is done in each of its four steps; then each
distinct fixture draft of the tests (tests/*/data/draft-*.yaml) is imported with ctrl+o and walked through the
four steps (ctrl+n, ctrl+b), and escape closes it. Keys that quit the app or hand the
terminal over (suspend, the Pod shell) are left out: they need a real terminal. A crash found here becomes a test
of its own next to its screen's tests.

A key bound on the app itself (RlarkApp's and Textual's App bindings: ctrl+p, the read-only refusals) is pressed
once per app, on the first screen that has it, not again on every screen: its action is the app's, the same
handler whichever screen is shown (ctrl+p pushes the one command palette; a refusal reads the screen only in
read-only mode, which the crawl is not in), so a second press runs the code the first one ran. Keys bound on a
screen or its focused widget are pressed on every screen and step, as their actions are that screen's. The
wizard's step 1 keys are pressed with the starter draft only, not again after the imports: the same bindings on
the same widgets; after the imports only escape is left to press.

One app per size and part (the screens, the wizard) visits them in turn; xdist spreads the four cases over its
workers. A key is sent as the terminal sends it and the next follows once the app has handled what it set off
(its message queues drained), not once the process looks idle, which the sandbox's threads in this process
postpone to a one-second timeout per wait. A crash stops the app at once, and every screen ends with a full
pause, so one that comes late still fails the test."""

from __future__ import annotations

from pathlib import Path

import pytest

from rlark_tui.flow import messages
from rlark_tui.jobspec.draft import load_draft
from rlark_tui.screens.wizard import WizardScreen
from rlark_tui.screens.wizard_dialogs import PathScreen
from rlark_tui.tui.app import RlarkApp
from tests.pilot import drained, press, wait_for

SIZES = [(80, 24), (120, 40)]
LEFT_OUT = ("quit", "suspend", "shell")
"""Actions whose key is not pressed: they end the app or need a real terminal."""
NEW_JOB = "new_job"
"""The job list's n, pressed by the wizard part (it opens the wizard that part crawls, at the same size), so not
again by the screens part: the same key on the same screen opening the same starter draft."""

def distinct_drafts(paths: list[Path]) -> list[Path]:
    """The first of `paths` of each draft they load as: the wizard shows a draft, not its file's comments."""
    kept: list[Path] = []
    loaded: list[object] = []
    for path in paths:
        draft = load_draft(path.read_text())[0]
        if draft not in loaded:
            loaded.append(draft)
            kept.append(path)
    return kept


DRAFTS = distinct_drafts(sorted(Path(__file__).parents[1].glob("*/data/draft-*.yaml")))
"""The fixture drafts the wizard imports, each distinct draft once (tests/model's and tests/wizard's draft-rl.yaml
differ in a comment only: the same form, the same four steps)."""


def first_job(app) -> str:
    return sorted(app.index.snapshot.jobs)[0]


def first_node(app) -> str:
    return sorted(app.index.snapshot.nodes)[0]


OPEN = {
    "job-detail": lambda app: app.post_message(messages.OpenJob(first_job(app))),
    "logs": lambda app: app.post_message(messages.OpenLogs(first_job(app))),
    "check": lambda app: app.post_message(messages.OpenCheck(first_job(app))),
    "stacks": lambda app: app.post_message(messages.OpenStacks(first_job(app))),
    "alerts": lambda app: app.run_command("alerts"),
    "nodes": lambda app: app.post_message(messages.OpenNodes()),
    "node-detail": lambda app: app.post_message(messages.OpenNode(first_node(app))),
    **{name: (lambda app, name=name: app.console_command(name))
       for name in ("clusters", "storage", "sshkeys", "pods", "events", "records", "overview")},
}
"""How each screen over the job list is opened; the job list itself is crawled last."""


def keys_of(screen, closing: bool, app_keys: set[str]) -> list[str]:
    """The keys bound on `screen` now (its own, its focused widget's and the app's), less the ones left out and
    the app's own keys already pressed (`app_keys`, which this adds the app's keys it returns to); escape (which may
    close the screen) last, or not at all unless `closing`."""
    keys = set()
    for key, active in screen.active_bindings.items():
        if any(word in active.binding.action for word in LEFT_OUT) or active.binding.action == NEW_JOB:
            continue
        if active.node is screen.app:
            if key in app_keys:
                continue
            app_keys.add(key)
        keys.add(key)
    return sorted(keys if closing else keys - {"escape"}, key=lambda key: (key == "escape", key))


def assert_alive(app, after: str) -> None:
    assert app.is_running and app._exception is None, f"the app died on {after}"


async def handled(pilot) -> None:
    """The app and its screen have handled their queued messages (tests/pilot.drained: the widgets with work, not
    a callback on each of a screen's ~100 widgets per wait as Pilot.pause), and the screen is drawn."""
    await drained(pilot.app)
    pilot.app.screen._on_timer_update()


async def back_to(pilot, screen) -> None:
    """Close whatever a key opened over `screen` (dialogs dismissed unanswered), once it has settled: mounted and
    its queues drained (a screen closed halfway through mounting is a race of its own, not a key's effect)."""
    app = pilot.app
    if app.screen is not screen:
        await wait_for(pilot, lambda: app.screen.is_mounted, f"{app.screen!r} mounted")
        await handled(pilot)
    while app.screen is not screen and len(app.screen_stack) > 1 and screen in app.screen_stack:
        app.pop_screen()
        await handled(pilot)


async def crawl(pilot, screen, name: str, app_keys: set[str], closing: bool = True,
                step: int | None = None) -> list[str]:
    """Press every key bound on `screen` (the app's own keys not in `app_keys` yet), each on `screen` itself (and
    on the wizard's `step`, which its ctrl+n and ctrl+b leave); stops if a key closed it."""
    pressed = []
    for key in keys_of(screen, closing, app_keys):
        await back_to(pilot, screen)
        if pilot.app.screen is not screen:
            break
        if step is not None and screen.step != step:
            await screen.load(screen.draft, step)
            await handled(pilot)
        await press(pilot, key)
        pressed.append(key)
        assert_alive(pilot.app, f"{key!r} on {name}")
    await back_to(pilot, screen)
    await pilot.pause()
    assert_alive(pilot.app, f"the keys of {name} ({', '.join(pressed)})")
    assert pressed, f"no keys bound on {name}"
    return pressed


async def started(pilot) -> None:
    app = pilot.app
    await wait_for(pilot, lambda: app.index is not None and app.index.snapshot.jobs and app.index.nodes,
                   "the sandbox's Jobs and Nodes")


async def crawl_screens(pilot) -> None:
    app = pilot.app
    base = app.screen
    app_keys: set[str] = set()
    for name, open_it in OPEN.items():
        open_it(app)
        await wait_for(pilot, lambda: app.screen is not base, f"the {name} screen")
        screen = app.screen
        await handled(pilot)
        await crawl(pilot, screen, name, app_keys)
        while app.screen is not base:
            app.pop_screen()
            await handled(pilot)
    await crawl(pilot, base, "job-list", app_keys)


async def crawl_steps(pilot, screen: WizardScreen, what: str, app_keys: set[str]) -> None:
    """Every key on each of the wizard's four steps of its current draft (escape, which closes it, not)."""
    for step in range(1, 5):
        await screen.load(screen.draft, step)
        await handled(pilot)
        await crawl(pilot, screen, f"wizard step {step} of {what}", app_keys, closing=False, step=step)


async def import_draft(pilot, screen: WizardScreen, path: Path) -> None:
    """ctrl+o, the file's path typed into the prompt and Enter, as a user imports a draft."""
    app = pilot.app
    await press(pilot, "ctrl+o")
    await wait_for(pilot, lambda: isinstance(app.screen, PathScreen), "the import prompt")
    app.screen.query_one("#wizard-path-input").value = str(path)
    await press(pilot, "enter")
    name = load_draft(path.read_text())[0].name
    await wait_for(pilot, lambda: app.screen is screen and screen.last_path == str(path) and screen.draft.name == name,
                   f"the import of {path}")
    await handled(pilot)
    assert_alive(app, f"the import of {path}")


async def walk_steps(pilot, screen: WizardScreen, what: str) -> None:
    """ctrl+n through the four steps (where an error blocks Next, the step is shown as the finding's jump
    would) and ctrl+b back to the first, each step drawn."""
    for key, steps in (("ctrl+n", (2, 3, 4)), ("ctrl+b", (3, 2, 1))):
        for step in steps:
            await press(pilot, key)
            if screen.step != step:
                await screen.load(screen.draft, step)
            await handled(pilot)
            assert_alive(pilot.app, f"{key} to step {step} of {what}")
            assert screen.step == step and str(screen.query_one("#wizard-title").render())


async def crawl_wizard(pilot) -> None:
    app = pilot.app
    await press(pilot, "n")
    await wait_for(pilot, lambda: isinstance(app.screen, WizardScreen), "the wizard")
    screen = app.screen
    await handled(pilot)
    app_keys: set[str] = set()
    await crawl_steps(pilot, screen, "the starter draft", app_keys)
    for path in DRAFTS:
        await import_draft(pilot, screen, path)
        await walk_steps(pilot, screen, path.name)
    await press(pilot, "escape")
    await wait_for(pilot, lambda: app.screen is not screen, "escape to close the wizard")
    await pilot.pause()
    assert_alive(app, "escape on the wizard")


@pytest.mark.parametrize("size", SIZES, ids=lambda size: f"{size[0]}x{size[1]}")
@pytest.mark.parametrize("part", [crawl_screens, crawl_wizard], ids=["screens", "wizard"])
async def test_every_bound_key_on_every_screen_leaves_the_app_running(access, env, monkeypatch, part, size):
    monkeypatch.chdir(env)  # what a key saves (a log, a download) lands in the test's directory
    assert len(DRAFTS) >= 3, "the fixture drafts moved"
    app = RlarkApp(access)
    async with app.run_test(size=size) as pilot:
        await started(pilot)
        await part(pilot)
        assert_alive(app, "the crawl")
