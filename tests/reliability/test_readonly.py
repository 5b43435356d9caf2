"""--readonly refuses every path that writes to the cluster, from the CLI and from the TUI; dry runs stay allowed.

One test per path. Each asserts what the user sees (the message and exit code, or the screen) and reads the
Job back over HTTPS to prove nothing changed (same resourceVersion, or still no such Job).
"""

from __future__ import annotations

import uuid

import pytest
import yaml

from rlark_tui.cluster.access import ClusterAccess
from rlark_tui.cluster.errors import NotFound
from rlark_tui.cluster.kinds import JOBS
from rlark_tui.jobspec.draft import dump_draft
from rlark_tui.screens.confirm import ConfirmScreen
from rlark_tui.screens.job_detail import JobDetailScreen
from rlark_tui.screens.job_list import JobListScreen
from rlark_tui.screens.wizard import WizardScreen
from rlark_tui.tui.app import RlarkApp
from rlark_tui.widgets.status_header import StatusHeader
from tests.cluster.seeding import job_manifest
from tests.pilot import wait_for
from tests.wizard.helpers import SIZE, base_draft, open_wizard, settle, until

RUNNING = "ro-running"
STOPPED = "ro-stopped"


def refusal(verb: str, name: str) -> str:
    return f"error: read-only mode: refusing to {verb} job {name} (started with --readonly)\n"


@pytest.fixture(scope="module")
def access(reliability_sandbox):
    """Over HTTPS, as any client; makes one running and one stopped Job for the lifecycle paths."""
    sb = reliability_sandbox
    access = ClusterAccess.open(str(sb.kubeconfig), sb.context)
    for name, stopped in ((RUNNING, False), (STOPPED, True)):
        body = job_manifest(name, [{"name": "actor", "head": True, "node": "gpu-a1"}])
        body["spec"]["stopped"] = stopped
        access.create(JOBS, body)
    yield access
    for name in (RUNNING, STOPPED):
        try:
            access.delete(JOBS, name)
        except NotFound:
            pass
    access.close()


def version(access, name: str) -> tuple[str, object]:
    job = access.get(JOBS, name)
    return job["metadata"]["resourceVersion"], job["spec"].get("stopped")


def absent(access, name: str) -> bool:
    try:
        access.get(JOBS, name)
    except NotFound:
        return True
    return False


def no_submitted_copy(env) -> bool:
    folder = env / "state" / "submitted"
    return not folder.exists() or not any(folder.iterdir())


# ---- CLI -----------------------------------------------------------------------------------------------------

def test_cli_submit_of_a_manifest_is_refused(rl, access, env):
    name = f"ro-sub-{uuid.uuid4().hex[:6]}"
    path = env / "job.yaml"
    path.write_text(yaml.safe_dump(job_manifest(name, [{"name": "actor", "head": True, "node": "gpu-a1"}])))
    result = rl("--readonly", "submit", "-f", str(path))
    assert (result.code, result.out, result.err) == (1, "", refusal("submit", name))
    assert absent(access, name) and no_submitted_copy(env)


def test_cli_submit_of_a_draft_is_refused(rl, access, env):
    name = f"ro-draft-{uuid.uuid4().hex[:6]}"
    path = env / "draft.yaml"
    path.write_text(dump_draft(base_draft(name)))
    result = rl("submit", "-f", str(path), "--readonly")
    assert result.code == 1 and result.out == ""
    assert result.err.endswith(refusal("submit", name))
    assert absent(access, name) and no_submitted_copy(env)


def test_cli_dry_run_is_allowed_and_creates_nothing(rl, access, env):
    name = f"ro-dry-{uuid.uuid4().hex[:6]}"
    path = env / "draft.yaml"
    path.write_text(dump_draft(base_draft(name)))
    result = rl("--readonly", "submit", "-f", str(path), "--dry-run")
    assert result.code == 0, result.err
    assert f"job.rlinf.io/{name} valid (dry run" in result.out
    assert absent(access, name) and no_submitted_copy(env)


@pytest.mark.parametrize("verb, name", [("stop", RUNNING), ("start", STOPPED), ("delete", RUNNING)])
def test_cli_lifecycle_is_refused_before_any_prompt(rl, access, verb, name):
    before = version(access, name)
    result = rl("--readonly", verb, name)
    assert (result.code, result.out, result.err) == (1, "", refusal(verb, name))
    result = rl(verb, name, "--yes", "--wait", "--readonly")
    assert (result.code, result.out, result.err) == (1, "", refusal(verb, name))
    assert version(access, name) == before


# ---- TUI -----------------------------------------------------------------------------------------------------


def shown_keys(app) -> str:
    """The key labels the footer shows on the current screen."""
    return " ".join(active.binding.description for active in app.screen.active_bindings.values()
                    if active.binding.show and app.screen.check_action(active.binding.action, ()) is not False)


def header(app) -> str:
    return app.screen.query_one(StatusHeader).summary()


def notes(app) -> list[str]:
    return [n.message for n in app._notifications]


async def on_list(pilot, app, name: str) -> None:
    await wait_for(pilot, lambda: isinstance(app.screen, JobListScreen) and name in app.screen.rows,
                     f"{name} in the job list")
    assert app.screen.table.select_key(name)
    await pilot.pause()


async def on_detail(pilot, app, name: str) -> None:
    await on_list(pilot, app, name)
    await pilot.press("enter")
    await wait_for(pilot, lambda: isinstance(app.screen, JobDetailScreen), "the job detail")


async def refused_in_tui(access, name: str, key: str, screen: str) -> None:
    before = version(access, name)
    app = RlarkApp(access, readonly=True)
    async with app.run_test(size=SIZE) as pilot:
        await (on_detail if screen == "detail" else on_list)(pilot, app, name)
        shown = type(app.screen)
        assert "READ-ONLY" in header(app)
        keys = shown_keys(app)
        assert "Logs" in keys and "Stop/Start" not in keys and "Delete" not in keys
        await pilot.press(key)
        await settle(pilot)
        assert type(app.screen) is shown and not isinstance(app.screen, ConfirmScreen)
        verb = "delete" if key == "ctrl+d" else "stop or start"
        assert notes(app) == [f"read-only mode: refusing to {verb} job {name} (started with --readonly)"]
        # Even a confirmed dialog (were one shown) goes through rlark_tui.flow.actions, which refuses.
        action = "delete" if key == "ctrl+d" else ("start" if name == STOPPED else "stop")
        app._confirmed(action, name, True)
        refused = f"{action} {name}: read-only mode: refusing to {action} job {name} (started with --readonly)"
        await wait_for(pilot, lambda: refused in notes(app), "the refusal from actions")
    assert version(access, name) == before


async def test_tui_list_stop_is_refused(access):
    await refused_in_tui(access, RUNNING, "s", "list")


async def test_tui_list_start_is_refused(access):
    await refused_in_tui(access, STOPPED, "s", "list")


async def test_tui_list_delete_is_refused(access):
    await refused_in_tui(access, RUNNING, "ctrl+d", "list")


async def test_tui_detail_stop_is_refused(access):
    await refused_in_tui(access, RUNNING, "s", "detail")


async def test_tui_detail_start_is_refused(access):
    await refused_in_tui(access, STOPPED, "s", "detail")


async def test_tui_detail_delete_is_refused(access):
    await refused_in_tui(access, STOPPED, "ctrl+d", "detail")


async def test_tui_palette_offers_no_mutation(access):
    app = RlarkApp(access, readonly=True)
    async with app.run_test(size=SIZE) as pilot:
        await on_list(pilot, app, RUNNING)
        await pilot.press("ctrl+p")
        await settle(pilot)
        await pilot.press(*RUNNING)
        await settle(pilot, 6)
        options = app.screen.query_one("CommandList")
        texts = [str(options.get_option_at_index(i).prompt) for i in range(options.option_count)]
        assert any(f"Logs of {RUNNING}" in t for t in texts), texts
        assert not any("Stop" in t or "Delete" in t for t in texts), texts


async def test_tui_wizard_submit_is_refused_and_dry_run_allowed(access, env):
    name = f"ro-wiz-{uuid.uuid4().hex[:6]}"
    app = RlarkApp(access, readonly=True)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_wizard(pilot, base_draft(name))
        await screen.load(screen.draft, step=4)
        await settle(pilot)
        assert "READ-ONLY" in header(app)
        button = screen.query_one("#submit")
        assert str(button.label) == "Submit refused: read-only" and button.disabled
        assert "ctrl+g Submit (refused: read-only)" in str(screen.query_one("#wizard-keys").render())
        await pilot.click("#submit")
        await pilot.press("ctrl+g")
        await settle(pilot)
        result = str(screen.query_one("#w-result").render())
        assert "read-only mode: Submit refused (dry run is allowed)" in result
        assert absent(access, name)
        await pilot.press("ctrl+t")
        await until(pilot, lambda: "Dry run: the server accepts" in str(screen.query_one("#w-result").render()),
                    what="the dry run")
        assert isinstance(app.screen, WizardScreen)
    assert absent(access, name) and no_submitted_copy(env)
