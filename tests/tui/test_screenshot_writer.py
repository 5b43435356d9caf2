"""The command palette's Screenshot goes through the one writer (issue 33 item 1): Textual's own open() follows a
link and writes in any directory; rlark's refuses a directory others may write in (one toast) and writes 0600 in
one of the user's own. The palette is driven once; the other cases call what its Screenshot calls
(RlarkApp.deliver_screenshot)."""

from __future__ import annotations

import os
import stat

from textual.command import CommandList, CommandPalette

from rlark_tui.tui.app import RlarkApp
from tests.pilot import press, wait_for


async def _screenshot(app, pilot) -> None:
    """ctrl+p, Screenshot typed and, once the palette's search lists it (a worker of the palette's), enter."""
    await press(pilot, "ctrl+p", *"Screenshot")
    await wait_for(pilot, lambda: isinstance(app.screen, CommandPalette) and app.screen.query_one(CommandList)
                   .option_count == 1, "Screenshot offered")
    await press(pilot, "enter")


async def test_a_screenshot_is_written_only_in_a_directory_of_the_users_own(tmp_path, monkeypatch):
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o1777)
    own = tmp_path / "own"
    own.mkdir(mode=0o700)
    app = RlarkApp(None)
    async with app.run_test(size=(100, 30)) as pilot:
        monkeypatch.chdir(shared)
        await _screenshot(app, pilot)
        await wait_for(pilot, lambda: any("Cannot save the screenshot" in n.message for n in app._notifications),
                       "the refusal")
        assert list(shared.iterdir()) == []
        monkeypatch.chdir(own)
        app.deliver_screenshot()
        await wait_for(pilot, lambda: list(own.glob("*.svg")), "the screenshot")
        # issue 33, a seventeenth round: a working directory removed under rlark (the Screenshot, the Logs screen's
        # save and the download's default path asked Path.cwd(), which raised there: the TUI ended in a crash report)
        gone = tmp_path / "gone"
        gone.mkdir()
        monkeypatch.chdir(gone)
        gone.rmdir()
        app.deliver_screenshot()
        await wait_for(pilot, lambda: any(n.message.endswith("the working directory it is relative to no longer exists")
                                          for n in app._notifications), "the refusal of the removed directory")
        said = [n.message for n in app._notifications if "no longer exists" in n.message][-1]
        assert app.is_running and said.startswith("Cannot save the screenshot: refusing to write ")
    saved = next(own.glob("*.svg"))
    assert stat.S_IMODE(os.stat(saved).st_mode) == 0o600 and "<svg" in saved.read_text()

