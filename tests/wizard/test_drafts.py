"""Draft files: the autosave survives killing the app mid-wizard and is offered again; import (ctrl+o) and
export (ctrl+s) use the `rlark draft render` format; scripts open in $EDITOR; writes are atomic and private.
"""

from __future__ import annotations

import io
import os
import stat
import subprocess
import sys
from dataclasses import replace

import pytest
from textual.widgets import Static

from rlark_tui.commands.draft import write_rendered
from rlark_tui.errors import RlarkError, UsageError
from rlark_tui.jobspec.draft import load_draft
from rlark_tui.local.draft_files import DraftStore, export_draft, import_draft
from rlark_tui.local.editor import edit_text
from rlark_tui.screens.confirm import ConfirmScreen
from rlark_tui.screens.wizard import WizardScreen
from rlark_tui.screens.wizard_dialogs import PathScreen
from rlark_tui.tui.app import RlarkApp
from rlark_tui.view import yamltab
from tests.pilot import press
from wizard.helpers import (
    DATA,
    SIZE,
    base_draft,
    data_draft,
    focused_id,
    message,
    new_app,
    open_offline,
    open_wizard,
    settle,
    until,
)


def resume_offered(app) -> bool:
    """The wizard's offer to resume its autosave is on screen, its text laid out: a pushed screen is the app's
    screen before its widgets are mounted (a loaded CI run found no '#confirm-body' on it)."""
    return isinstance(app.screen, ConfirmScreen) and bool(app.screen.query("#confirm-body"))


async def test_an_autosave_read_answered_after_the_first_keys_offers_nothing(state):
    """README line 2's run (flaky under load: the typed name never reached the autosave): the wizard asks the app
    to read the autosave when it opens, and a user typing at once wrote this process's autosave first; the read,
    answered after it, found the user's own first keys and offered to resume them, and the dialog took the keys
    typed after. An answer that comes after the form's first change offers nothing: the keys stay in the form."""
    from rlark_tui.flow.messages import AutosaveLoaded

    app = RlarkApp(None)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_offline(pilot)
        assert not resume_offered(app)
        await press(pilot, *"wiz")
        store = DraftStore()
        await until(pilot, lambda: store.path.exists() and b"name: wiz\n" in store.path.read_bytes(),
                    what="the autosave of the first keys")
        screen.post_message(AutosaveLoaded(store.load()))  # the app's read, answered late
        await settle(pilot)
        await press(pilot, *"-late")
        await settle(pilot)
        assert app.screen is screen and not resume_offered(app)
        assert screen.draft.name == "wiz-late"
        await until(pilot, lambda: b"name: wiz-late\n" in store.path.read_bytes(), what="the whole name autosaved")


async def test_killed_mid_wizard_then_started_again_restores_the_draft(access, state):
    app = new_app(access)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_wizard(pilot)
        await press(pilot, *"wiz-restore")
        screen.query_one("#w-header").value = 1
        await settle(pilot)
        await press(pilot, "ctrl+n")
        await settle(pilot)
        screen.query_one("#w-cluster").value = "rlark-gpu-a"
        await press(pilot, "tab", "tab")  # past Hardware: placed by the selector
        await settle(pilot)
        assert focused_id(app) == "w-selector"
        await press(pilot, *"kubernetes.io/hostname=gpu-a3")
        await settle(pilot)
    # the app is gone without closing the wizard (as after a crash): only the autosave remains
    saved = DraftStore(state).path
    assert stat.S_IMODE(saved.stat().st_mode) == 0o600
    assert [p.name for p in saved.parent.iterdir()] == [f"wizard-autosave-{os.getpid()}.yaml"]

    app = new_app(access)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.index is not None and app.index.nodes, what="the first snapshot")
        screen = WizardScreen()
        await app.push_screen(screen)
        await until(pilot, lambda: resume_offered(app), what="the resume offer")
        body = str(app.screen.query_one("#confirm-body").render())
        assert "wiz-restore · rl · roles: Actor, Rollout, Environment · step 2 of 4" in body
        await press(pilot, "y")
        await until(pilot, lambda: screen.draft.name == "wiz-restore", what="the restored draft")
        await settle(pilot)
        assert screen.step == 2
        assert screen.draft.header == "Rollout"
        assert screen.query_one("#w-selector").value == "kubernetes.io/hostname=gpu-a3"
        assert screen.draft.roles[0].selector == {"kubernetes.io/hostname": "gpu-a3"}
        assert "Replicas (read-only) = matched Nodes: 1" in str(screen.query_one("#w-match-summary").render())
        await press(pilot, "ctrl+b")
        await settle(pilot)
        assert screen.query_one("#w-name").value == "wiz-restore"


async def test_declining_the_offer_starts_a_new_draft(access, state):
    DraftStore().save(base_draft("wiz-old"), 3)
    app = new_app(access)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.index is not None and app.index.nodes, what="the first snapshot")
        screen = WizardScreen()
        await app.push_screen(screen)
        await until(pilot, lambda: resume_offered(app), what="the resume offer")
        await press(pilot, "n")
        await settle(pilot)
        assert app.screen is screen and screen.step == 1 and screen.draft.name == ""
        assert "required: the Job name" in message(screen, "name")


async def test_export_import_and_script_editing(access, state, tmp_path):
    path = tmp_path / "exported.yaml"
    app = new_app(access)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_wizard(pilot, base_draft("wiz-export"))
        await pilot.press("ctrl+s")
        await until(pilot, lambda: isinstance(app.screen, PathScreen), what="the export prompt")
        await answer(pilot, path)
        await until(pilot, path.exists, what="the exported file")
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        out, err = io.StringIO(), io.StringIO()
        assert write_rendered(path.read_text(), access.nodes(), stdout=out, stderr=err) == 0, err.getvalue()

        edited = path.read_text().replace("wiz-export", "wiz-imported")
        path.write_text(edited)
        await pilot.press("ctrl+o")
        await until(pilot, lambda: isinstance(app.screen, PathScreen), what="the import prompt")
        await answer(pilot, path)
        await until(pilot, lambda: screen.draft.name == "wiz-imported", what="the imported draft")
        await settle(pilot)
        assert screen.query_one("#w-name").value == "wiz-imported"
        assert screen.draft == load_draft(edited)[0]

        await pilot.press("ctrl+o")
        await until(pilot, lambda: isinstance(app.screen, PathScreen), what="the import prompt")
        await answer(pilot, tmp_path / "missing.yaml")
        await until(pilot, lambda: any("no such file" in n.message for n in app._notifications),
                    what="the import error")
        assert screen.draft.name == "wiz-imported"

        await screen.load(screen.draft, step=3)
        screen.query_one("#w-runScript").focus()
        await press(pilot, "f4")
        await settle(pilot)
        assert "cannot hand over to $EDITOR" in str(screen.query_one("#wizard-status").render())
        await press(pilot, "end", *" -x")
        await settle(pilot)
        assert screen.draft.run_script == "cd /workspace && python train.py -x"


@pytest.mark.parametrize("name", ["evaluation", "data-collection", "rl"])
async def test_importing_a_draft_with_another_role_count_rebuilds_the_role_rows(state, name):
    """The RL starter has three roles; a draft of two (evaluation) or one (data collection) replaces them: the
    role rows and their derived tasks follow, and the app lives on (it died with NoMatches '#task-0')."""
    path = DATA / f"draft-{name}.yaml"
    draft = load_draft(path.read_text())[0]
    app = RlarkApp(None)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_offline(pilot)
        assert len(screen.draft.roles) == 3
        await pilot.press("ctrl+o")
        await until(pilot, lambda: isinstance(app.screen, PathScreen), what="the import prompt")
        await answer(pilot, path)
        await until(pilot, lambda: screen.draft.name == draft.name, what="the imported draft")
        await settle(pilot)
        assert app.screen is screen and app.return_value is None
        assert screen.draft == draft
        names = [w.value for w in screen.query(".wizard-role-name")]
        assert names == [role.name for role in draft.roles]
        tasks = [str(w.render()) for w in screen.query(".wizard-task")]
        assert len(tasks) == len(draft.roles) and all(tasks)


async def test_importing_a_draft_of_many_roles_takes_linear_time(state, tmp_path, monkeypatch):
    """Issue 33, an eleventh round, a draft from someone else: each role's rename (the import sets every role's
    name) made the Job step query its whole tree once per role for the derived task names, so opening a draft of
    40 roles took a minute of the UI thread and one of 120 four minutes (n³), the TUI frozen meanwhile. The rows
    are found by their place: the step is not queried per role (12 roles: 483 queries before; 6 here). Past
    jobspec.draft.MAX_ROLES roles, or MAX_ROLE_ENTRIES entries in a role, the wizard refuses a draft in one line,
    resumed or imported, and its preview lays out the first YAML_LINES of a long one."""
    base = data_draft()
    many = replace(base, roles=(base.roles[0], *(replace(base.roles[1], name=f"Rollout{i}") for i in range(5))))
    path = tmp_path / "many.yaml"
    export_draft(path, many)
    # issue 33, a sixteenth round (a draft another rlark or a hand edit left as the autosave): the wizard refused a
    # draft past MAX_ROLES on import, clone and edit, but resumed an autosave of any number of roles, and 400 held
    # the UI thread 25 s. Every draft enters the form through WizardScreen.load, which refuses it in one line and
    # keeps the form as it was
    DraftStore().save(replace(base, name="many", roles=tuple(replace(base.roles[1], name=f"R{i}")
                                                              for i in range(72))), 2)
    app = RlarkApp(None)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_offline(pilot)
        await until(pilot, lambda: resume_offered(app), what="the resume offer")
        await press(pilot, "y")
        said = "the autosaved draft has 72 roles, more than the wizard's 64: not opened in it"
        await until(pilot, lambda: any(n.message == said for n in app._notifications), what="the refusal")
        assert app.screen is screen and screen.draft.name == "" and len(screen.draft.roles) == 3
        step, queries = screen.job_step, []
        step.query = lambda *a, _query=step.query, **k: queries.append(a) or _query(*a, **k)  # type: ignore[method-assign]
        await press(pilot, "ctrl+o")
        await until(pilot, lambda: isinstance(app.screen, PathScreen), what="the import prompt")
        await answer(pilot, path)
        await until(pilot, lambda: len(screen.draft.roles) == 6, what="the imported draft")
        await settle(pilot)
        tasks = [str(w.render()) for w in screen.query(".wizard-task")]
        assert len(tasks) == 6 and all(tasks) and len(queries) < 6, len(queries)
        # past the wizard's bound (a row and a form per role: 500 roles held the UI thread a minute) one line
        export_draft(path, replace(many, roles=many.roles * 12))
        await import_refused(pilot, path, f"draft {path} has 72 roles, more than the wizard's 64: not opened in it")
        assert len(screen.draft.roles) == 6
        # issue 33, an eighteenth round: so is a role of more entries than it takes (30,000 env entries, a 400 KB
        # draft, were 3 s to open and 0.9 s of the UI thread at each keystroke)
        export_draft(path, replace(many, roles=(replace(many.roles[0], env={f"E{i}": "v" for i in range(513)}),)))
        await import_refused(pilot, path,
                             f"draft {path} has a role of 513 env entries, more than the wizard's 512: not opened in it")
        assert len(screen.draft.roles) == 6
        # issue 33, an eighteenth round: step 4 highlighted and laid out the whole Job YAML on the UI thread (a
        # 20,000-line run script was 6 s, a 4 MiB draft's minutes); it lays out the first YAML_LINES, as the Job
        # detail's YAML tab does, and counts the rest (the draft enters at step 4 through WizardScreen.load, the
        # import's own way in, tried above). A tenth of the app's YAML_LINES here: the 600-line script still
        # crosses it, and highlighting and laying out 500 lines was 0.4 s of the test's CPU
        monkeypatch.setattr(yamltab, "YAML_LINES", yamltab.YAML_LINES // 10)
        assert await screen.load(replace(base, run_script="".join(f"echo {i}\n" for i in range(600))), step=4)
        await settle(pilot)
        shown = screen.query_one("#w-yaml", Static).content.code
        assert shown.count("\n") <= yamltab.YAML_LINES and "echo 599" in screen.preview_yaml
        title = str(screen.query_one("#w-yaml-title").render())
        assert f"more lines (the first {yamltab.YAML_LINES:,} shown" in title, title


async def import_refused(pilot, path, said: str) -> None:
    """Import the draft at `path` (ctrl+o) and wait for the one line refusing it."""
    await press(pilot, "ctrl+o")
    await until(pilot, lambda: isinstance(pilot.app.screen, PathScreen), what="the import prompt")
    await answer(pilot, path)
    await until(pilot, lambda: any(n.message == said for n in pilot.app._notifications), what="the refusal")


async def answer(pilot, path) -> None:
    """Type the path into the file prompt (paste-like: set the text, then Enter as a user would)."""
    prompt = pilot.app.screen.query_one("#wizard-path-input")
    prompt.value = str(path)
    await press(pilot, "enter")


def test_script_editor_returns_what_the_editor_saved(tmp_path):
    editor = tmp_path / "fake-editor"
    editor.write_text(f"#!{sys.executable}\nimport sys\np = sys.argv[1]\n"
                      "open(p, 'a').write('\\npython train.py\\n')\n")
    editor.chmod(0o700)
    assert edit_text("cd /workspace", str(editor)) == "cd /workspace\npython train.py\n"
    failing = tmp_path / "failing-editor"
    failing.write_text("#!/bin/sh\nexit 3\n")
    failing.chmod(0o700)
    with pytest.raises(RlarkError, match="exited with code 3"):
        edit_text("x", str(failing))
    with pytest.raises(RlarkError, match="not found"):
        edit_text("x", str(tmp_path / "no-editor"))


def test_store_round_trip_atomic_and_private(tmp_path):
    store = DraftStore(tmp_path)
    assert store.load() is None
    draft = base_draft("wiz-store")
    store.save(draft, 3)
    saved = store.load()
    assert saved.draft == draft and saved.step == 3 and not saved.findings
    assert stat.S_IMODE(store.path.stat().st_mode) == 0o600
    assert stat.S_IMODE(store.path.parent.stat().st_mode) == 0o700
    store.save(replace(draft, name="wiz-store-2"), 1)
    assert store.load().draft.name == "wiz-store-2"
    assert sorted(os.listdir(store.path.parent)) == [f"wizard-autosave-{os.getpid()}.yaml"]
    store.clear()
    assert store.load() is None
    store.path.write_text("name: [unclosed")
    with pytest.raises(UsageError, match="not valid YAML"):
        store.load()


def test_import_errors_are_one_line(tmp_path):
    with pytest.raises(UsageError, match="is a directory"):
        import_draft(tmp_path)
    with pytest.raises(UsageError, match="no such file"):
        import_draft(tmp_path / "nope.yaml")
    (tmp_path / "file").write_text("")
    with pytest.raises(UsageError, match=r"export to .*file/x.yaml"):
        export_draft(tmp_path / "file" / "x.yaml", base_draft())


def test_a_draft_left_by_a_killed_edit_is_removed_by_the_next(tmp_path, monkeypatch):
    """SIGKILL (or a crash of the terminal) while the editor runs leaves the draft, secret env values and all, in
    its temporary directory: no handler runs. The next edit removes every such directory of this user's whose rlark
    is gone, and none of a live rlark or of another user."""
    import shutil
    import signal
    import subprocess
    import tempfile
    import time

    monkeypatch.setenv("TMPDIR", str(tmp_path))
    tmp_path.chmod(0o1777)
    tempfile.tempdir = None
    try:
        waiting = tmp_path / "waiting-editor"
        waiting.write_text("#!/bin/sh\ntouch \"$1.opened\"\nexec sleep 60\n")
        waiting.chmod(0o755)
        code = "import sys; from rlark_tui.local.editor import edit_text; edit_text('HF_TOKEN=hf_secret', sys.argv[1])"
        killed = subprocess.Popen([sys.executable, "-c", code, str(waiting)], start_new_session=True)
        deadline = time.monotonic() + 30
        while not list(tmp_path.glob("rlark-edit-*/draft.yaml.opened")) and time.monotonic() < deadline:
            time.sleep(0.05)
        os.killpg(killed.pid, signal.SIGKILL)
        killed.wait()
        left = list(tmp_path.glob("rlark-edit-*"))
        assert len(left) == 1 and (left[0] / "draft.yaml").read_text() == "HF_TOKEN=hf_secret"
        live = tmp_path / f"rlark-edit-{os.getppid()}-live"
        live.mkdir(mode=0o700)
        theirs = tmp_path / "rlark-edit-1-theirs"
        theirs.mkdir(mode=0o700)
        os.chown(theirs, 65534, 65534)
        editor = tmp_path / "true-editor"
        editor.write_text("#!/bin/sh\nexit 0\n")
        editor.chmod(0o755)
        assert edit_text("x", str(editor)) == "x"
        assert sorted(p.name for p in tmp_path.glob("rlark-edit-*")) == sorted([live.name, theirs.name])
    finally:
        tempfile.tempdir = None
        shutil.rmtree(tmp_path / "rlark-edit-1-theirs", ignore_errors=True)


def test_the_resume_offer_names_the_draft_and_its_roles_on_one_line(tmp_path):
    """Issue 33, a fourteenth round (a draft from someone else, resumed): the resume offer's first line names the
    autosaved draft and its roles, and an imported draft named 'x<LF>Resume it now: all checks passed' (a role
    'Actor<LF><LF>...' too) showed lines of its own in the offer, above the real question. The summary is one
    line."""
    store = DraftStore(tmp_path)
    draft = base_draft("wiz-offer")
    roles = [replace(draft.roles[0], name="Actor\n\nResume it, or start"), *draft.roles[1:]]
    store.save(replace(draft, name="x\nResume it now: all checks passed", roles=roles), 2)
    summary = store.load().summary()
    assert "\n" not in summary and summary.startswith("x\\nResume it now: all checks passed · ")
    assert "roles: Actor\\n\\nResume it, or start, " in summary


def test_the_resume_offer_is_a_line_of_bounded_length_whatever_the_autosave(tmp_path):
    """Issue 33, a sixteenth round (an autosave another rlark or a hand edit left): the offer quoted the draft's
    name, every role's name and the header's save time whole, and a 4 MiB autosave made them 3 MB of text, which the
    confirm dialog took the UI thread 4 s to lay out. Each is cut and the roles past the first eight counted."""
    store = DraftStore(tmp_path)
    draft = base_draft("n" * 100_000)
    store.save(replace(draft, roles=tuple(replace(draft.roles[0], name=f"R{i}" + "r" * 5_000) for i in range(20))),
               2)
    store.path.write_text(store.path.read_text().replace("saved ", "saved " + "x" * 100_000, 1))
    summary = store.load().summary()
    assert len(summary) < 1_000 and "(+12 more)" in summary and summary.startswith("n" * 63 + "… · "), summary


def test_two_rlark_autosave_their_own_drafts_and_a_gone_ones_is_offered(tmp_path):
    """Issue 33, a seventeenth round (two rlark on one state dir, each with its wizard open): both autosaved to one
    file at every change, so the draft of the one that then crashed was the other's, and a submit in either removed
    the other's. Each process keeps its own; the draft of a process gone is offered (the newest first) and taken
    over, and one an rlark before kept for every process too."""
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True,
                          check=True).stdout.strip()
    other, mine, left = DraftStore(tmp_path, pid=os.getppid()), DraftStore(tmp_path), DraftStore(tmp_path, pid=int(gone))
    other.save(base_draft("wiz-other"), 2)  # a running rlark's (this test's parent stands for it)
    left.save(base_draft("wiz-left"), 3)  # a crashed rlark's
    mine.save(base_draft("wiz-mine"), 1)
    mine.clear()  # submitted here
    assert other.load().draft.name == "wiz-other" and other.path.exists()
    taken = mine.load()
    assert (taken.draft.name, taken.step) == ("wiz-left", 3) and not left.path.exists() and mine.path.exists()
    mine.clear()
    (tmp_path / "drafts" / "wizard-autosave.yaml").write_bytes(other.path.read_bytes())
    assert mine.load().draft.name == "wiz-other" and other.load().draft.name == "wiz-other"
