"""Nothing lost: every file rlark writes for the user (drafts, exports, run-check records, saved submissions,
sandbox credentials) goes through rlark_tui.local.fsutil.write_private: mode 0600, no temp file left behind, and a
crash at any point (an error before the rename, a SIGKILL mid-write) leaves the last good copy.

The wizard's autosave surviving a killed app is tests/wizard/test_drafts.py
(test_killed_mid_wizard_then_started_again_restores_the_draft).
"""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
import yaml

from rlark_sandbox.seed import demo_draft
from rlark_tui.jobspec.draft import JobDraft, load_draft
from rlark_tui.local import fsutil
from rlark_tui.local.draft_files import DraftStore, export_draft

SIZE = 4 * 1024 * 1024


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def leftovers(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name.endswith(".tmp"))


@pytest.mark.parametrize("durable", [True, False], ids=["fsynced", "not-fsynced"])
def test_new_file_is_private_in_a_private_dir_and_no_temp_is_left(tmp_path, durable):
    target = tmp_path / "new" / "notes.md"
    fsutil.write_private(target, "first\n", durable=durable)
    fsutil.write_private(target, b"second\n", durable=durable)
    assert target.read_text() == "second\n"
    assert mode(target) == 0o600 and mode(target.parent) == 0o700
    assert leftovers(target.parent) == []


def test_replacing_a_world_readable_file_makes_it_private(tmp_path):
    target = tmp_path / "export.yaml"
    target.write_text("old\n")
    target.chmod(0o644)
    fsutil.write_private(target, "new\n")
    assert target.read_text() == "new\n" and mode(target) == 0o600


def test_failure_before_the_rename_keeps_the_old_copy_and_removes_the_temp(tmp_path, monkeypatch):
    target = tmp_path / "draft.yaml"
    fsutil.write_private(target, "good\n")

    def crash(src, dst, **_dir_fds):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(fsutil.os, "replace", crash)
    with pytest.raises(OSError):
        fsutil.write_private(target, "half-new\n")
    assert target.read_text() == "good\n" and leftovers(tmp_path) == []


def test_text_no_utf8_holds_is_written_whole(tmp_path):
    """A byte read undecodable (surrogateescape) is written as that byte, and a lone surrogate (JSON's '\\ud800',
    in a hostile control plane's Job name) as its escape: no text raises out of the writer any more (it did,
    UnicodeEncodeError, keeping the old copy: rlark diagnose of such a Job ended in a crash report)."""
    target = tmp_path / "draft.yaml"
    fsutil.write_private(target, "good\n")
    fsutil.write_private(target, "byte \udcff, lone \ud800")
    assert target.read_bytes() == b"byte \xff, lone \\ud800" and leftovers(tmp_path) == []


WRITER = textwrap.dedent("""
    import sys
    from rlark_tui.local import fsutil
    path, size = sys.argv[1], int(sys.argv[2])
    count = 0
    while True:
        fsutil.write_private(path, (b"AB"[count % 2:count % 2 + 1]) * size)
        count += 1
        if count == 2:
            print("writing", flush=True)
""")


def test_sigkill_at_any_moment_leaves_one_whole_copy(tmp_path):
    """A child rewrites a 4 MB file in a loop (all A, then all B, ...) and is SIGKILLed at several moments:
    the file is always one whole version, and what a killed write left is at most a private temp file."""
    target = tmp_path / "autosave.yaml"
    for delay in (0.0, 0.01, 0.03, 0.07, 0.15):
        child = subprocess.Popen([sys.executable, "-c", WRITER, str(target), str(SIZE)], stdout=subprocess.PIPE)
        assert child.stdout.readline() == b"writing\n"
        time.sleep(delay)  # the behaviour under test: a kill at this moment of the write
        child.send_signal(signal.SIGKILL)
        child.wait()
        child.stdout.close()
        data = target.read_bytes()
        assert len(data) == SIZE and data.count(data[:1]) == SIZE, (delay, len(data))
        assert mode(target) == 0o600
        assert all(mode(tmp_path / name) == 0o600 for name in leftovers(tmp_path))


KILLED_BEFORE_RENAME = textwrap.dedent("""
    import os, sys, time
    from rlark_tui.local import fsutil
    def hang(src, dst, **_dir_fds):
        print("temp written", flush=True)
        time.sleep(60)
    os.replace = hang
    fsutil.write_private(sys.argv[1], "new draft\\n")
""")


def test_sigkill_between_the_temp_write_and_the_rename_keeps_the_last_good_copy(tmp_path):
    target = tmp_path / "wizard-autosave.yaml"
    fsutil.write_private(target, "last good draft\n")
    child = subprocess.Popen([sys.executable, "-c", KILLED_BEFORE_RENAME, str(target)], stdout=subprocess.PIPE)
    assert child.stdout.readline() == b"temp written\n"
    child.send_signal(signal.SIGKILL)
    child.wait()
    child.stdout.close()
    assert target.read_text() == "last good draft\n"
    [temp] = leftovers(tmp_path)
    assert (tmp_path / temp).read_text() == "new draft\n" and mode(tmp_path / temp) == 0o600
    fsutil.write_private(target, "next draft\n")
    assert target.read_text() == "next draft\n"


def test_wizard_autosave_and_export_are_private(tmp_path):
    store = DraftStore(tmp_path / "state")
    draft, _ = load_draft(b"name: kept\ntype: rl\n")
    store.save(draft, 2)
    assert mode(store.path) == 0o600 and mode(store.path.parent) == 0o700
    assert store.load().draft.name == "kept" and store.load().step == 2
    exported = tmp_path / "exports" / "kept.yaml"
    export_draft(exported, draft)
    assert mode(exported) == 0o600 and yaml.safe_load(exported.read_text())["name"] == "kept"
    assert leftovers(store.path.parent) == [] and leftovers(exported.parent) == []


def test_export_to_an_unwritable_place_is_one_line_and_keeps_nothing_half_written(tmp_path):
    from rlark_tui.errors import UsageError
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(UsageError) as info:
        export_draft(blocker / "draft.yaml", JobDraft())
    assert str(info.value).startswith(f"export to {blocker / 'draft.yaml'}:") and "\n" not in str(info.value)


def test_check_records_are_private_and_the_named_output_ordinary(rl, env, tmp_path):
    output = tmp_path / "exports" / "record.md"
    output.parent.mkdir()
    result = rl("check", "demo-ppo", "--format", "md", "--output", str(output))
    assert "record saved:" in result.err and "Traceback" not in result.err
    saved = Path(result.err.split("record saved: ", 1)[1].splitlines()[0])
    for path in (saved, saved.with_suffix(".json")):
        assert mode(path) == 0o600, path
    umask = os.umask(0o022)
    os.umask(umask)
    assert mode(output) == 0o666 & ~umask  # a path the user named keeps the ordinary mode
    assert output.read_text().startswith("#") and leftovers(saved.parent) == []


@pytest.mark.parametrize("job", ["../../escaped", "/tmp/rlark-escaped", ".hidden"])
def test_check_records_of_any_typed_name_stay_in_the_state_dir(rl, env, job):
    """`rlark check ../../x` once wrote its record two directories above <state>/checks (and `/tmp/x` to /tmp).
    A path-like name is now refused before anything is read or written; any other name's record stays inside."""
    result = rl("check", job)
    assert "Traceback" not in result.err
    if "/" in job:
        assert result.code == 2 and result.err.count("\n") == 1 and "is not a name" in result.err
        assert not (env / "state" / "checks").exists() or not list((env / "state" / "checks").iterdir())
    else:
        assert result.code == 1
        saved = Path(result.err.split("record saved: ", 1)[1].splitlines()[0])
        assert saved.parent == env / "state" / "checks" and not saved.name.startswith(".")
    assert not list(Path("/tmp").glob("rlark-escaped-*")) and not list(env.glob("escaped-*"))


def test_submitted_yaml_is_saved_private(rl, rel, env, tmp_path):
    name = "nothing-lost-saved"
    draft = {**demo_draft("/tmp/rlark-nothing-lost"), "name": name}
    path = tmp_path / "job.yaml"
    path.write_text(yaml.safe_dump(draft))
    try:
        result = rl("submit", "-f", str(path))
        assert result.code == 0, result.err
        saved = Path(result.out.split("submitted YAML saved to ", 1)[1].splitlines()[0])
        assert mode(saved) == 0o600 and mode(saved.parent) == 0o700
    finally:
        rl("delete", name, "-y", "--wait", "--timeout=30")
    assert name not in rl("get", "jobs").out


def test_sandbox_credentials_and_objects_are_private(rel):
    state = Path(rel.state_dir)
    assert mode(Path(rel.kubeconfig)) == 0o600 and mode(state / "token") == 0o600
    keys = list(state.rglob("*.key"))
    assert keys and all(mode(key) == 0o600 for key in keys)
    objects = list((state / "objects").rglob("*.json"))
    assert objects and all(mode(path) == 0o600 for path in objects)
    assert not list((state / "objects").rglob("*.tmp"))


def test_wizard_draft_survives_a_sigkilled_tui(rel, env):
    """The real `rlark` TUI in a terminal: open the wizard (n), type a name, SIGKILL the process; the autosave
    holds what was typed, whole and private (tests/wizard/test_drafts.py shows it is offered again on restart)."""
    import fcntl
    import pty
    import struct
    import termios
    import threading

    state = env / "state"
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    screen = bytearray()

    def drain() -> None:
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:
                return
            if not chunk:
                return
            screen.extend(chunk)

    child = subprocess.Popen([sys.executable, "-m", "rlark_tui", "--kubeconfig", str(rel.kubeconfig)],
                             stdin=slave, stdout=slave, stderr=slave, start_new_session=True,
                             env={**os.environ, "TERM": "xterm-256color", "RLARK_STATE_DIR": str(state)})
    os.close(slave)
    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    autosave = DraftStore(state, pid=child.pid).path  # the TUI's own (one a process)
    try:
        wait_for(lambda: b"demo-ppo" in screen, "the job list")
        os.write(master, b"n")
        wait_for(lambda: b"Step 1/4" in screen, "the wizard")
        os.write(master, b"wiz-killed")
        wait_for(lambda: autosave.exists() and b"name: wiz-killed\n" in autosave.read_bytes(),
                 "the typed name in the autosave")
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
        os.close(master)
        reader.join(timeout=5)
    store = DraftStore(state)
    saved = store.load()  # the killed TUI's, taken over
    assert saved is not None and saved.draft.name == "wiz-killed" and not autosave.exists()
    assert mode(store.path) == 0o600 and mode(store.path.parent) == 0o700


def wait_for(predicate, what: str, limit: float = 90.0) -> None:
    deadline = time.monotonic() + limit
    while not predicate():
        if time.monotonic() > deadline:
            pytest.fail(f"gave up waiting for {what}")
        time.sleep(0.05)


async def test_run_check_hand_over_fields_are_kept_until_the_record_is_saved(tmp_path):
    """Notes typed into the report screen survive the app going away before ctrl+s; saving the record takes
    them and drops the kept copy."""
    from textual.widgets import Input

    from rlark_tui.checks.records import hand_over_path
    from rlark_tui.checks.report import HandOverKey
    from rlark_tui.screens.check import CheckScreen
    from rlark_tui.tui.app import RlarkApp
    from tests.checks.fixtures import post_evidence
    from tests.checks.scenarios import SCENARIOS

    evidence = SCENARIOS["healthy"][0]
    kept = hand_over_path(tmp_path, HandOverKey("", "demo-ppo", ""))  # no context, the fixture's Job has no uid

    async def open_report(pilot, app) -> CheckScreen:
        screen = CheckScreen("demo-ppo", records_dir=tmp_path)
        app.push_screen(screen)
        await pilot.pause()
        post_evidence(app, "demo-ppo", evidence)
        for _ in range(400):
            await pilot.pause(0.05)
            if screen.report is not None:
                return screen
        pytest.fail("the report never arrived")

    app = RlarkApp(None)
    async with app.run_test(size=(140, 45)) as pilot:
        screen = await open_report(pilot, app)
        screen.query_one("#check-recorder", Input).value = "Li Lei"
        screen.query_one("#check-notes", Input).value = "night shift: outputs on /data/ppo"
        await pilot.pause()
    assert mode(kept) == 0o600 and "night shift" in kept.read_text()

    app = RlarkApp(None)
    async with app.run_test(size=(140, 45)) as pilot:
        screen = await open_report(pilot, app)
        assert screen.query_one("#check-notes", Input).value == "night shift: outputs on /data/ppo"
        assert screen.query_one("#check-recorder", Input).value == "Li Lei"
        await pilot.pause()
        assert screen.report.hand_over.notes == "night shift: outputs on /data/ppo"
        screen.focus_body()
        await pilot.press("ctrl+s")
        await pilot.pause()
    (record,) = sorted((tmp_path / "checks").glob("*.md"))
    assert "night shift: outputs on /data/ppo" in record.read_text() and not kept.exists()


async def test_hand_over_fields_an_earlier_rlark_kept_by_name_are_shown_once_with_a_notice(tmp_path):
    """Fields kept under the Job's name alone (before they were kept per Job: context, name and uid) are not lost:
    the first run check of that name shows them, says in one line that they were kept by name, and keeps them as
    that Job's; they are no longer offered to any other Job of the name."""
    from textual.widgets import Input

    from rlark_tui.checks.records import hand_over_path
    from rlark_tui.checks.report import HandOverKey
    from rlark_tui.screens.check import CheckScreen
    from rlark_tui.tui.app import RlarkApp
    from tests.checks.fixtures import post_evidence
    from tests.checks.scenarios import SCENARIOS
    from tests.pilot import wait_for

    by_name = tmp_path / "checks" / "hand-over" / "demo-ppo.json"
    fsutil.write_private(by_name, '{"notes": "night shift: outputs on /data/ppo"}\n')
    app = RlarkApp(None)
    async with app.run_test(size=(140, 45)) as pilot:
        screen = CheckScreen("demo-ppo", records_dir=tmp_path)
        app.push_screen(screen)
        await pilot.pause()
        post_evidence(app, "demo-ppo", SCENARIOS["healthy"][0])
        notes = screen.query_one("#check-notes", Input)
        await wait_for(pilot, lambda: notes.value == "night shift: outputs on /data/ppo", "the kept notes")
        await wait_for(pilot, lambda: len(app._notifications) > 0, "the notice")  # app.notify posts a message
        (toast,) = [n.message for n in app._notifications]
    assert toast == ("hand-over fields an earlier rlark kept under the name demo-ppo alone are shown here: check "
                     "they are this Job's")
    assert not by_name.exists() and "night shift" in hand_over_path(tmp_path, HandOverKey("", "demo-ppo", "")).read_text()


def test_a_symlinked_export_path_updates_its_target_and_keeps_the_link(tmp_path):
    target = tmp_path / "real" / "draft.yaml"
    target.parent.mkdir()
    target.write_text("old\n")
    link = tmp_path / "draft.yaml"
    link.symlink_to(target)
    fsutil.write_private(link, "new\n")
    assert link.is_symlink() and target.read_text() == "new\n" and mode(target) == 0o600


def test_a_pipe_as_the_output_path_is_written_through_not_replaced(tmp_path):
    """`rlark check JOB --output /dev/stdout` (or a FIFO): the special file stays what it was."""
    import threading
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    received = []
    reader = threading.Thread(target=lambda: received.append(fifo.read_bytes()))
    reader.start()
    fsutil.write_private(fifo, "record\n")
    reader.join(timeout=10)
    assert received == [b"record\n"] and stat.S_ISFIFO(fifo.stat().st_mode) and leftovers(tmp_path) == []


def test_dev_stdout_redirected_to_a_file_adds_to_that_file(tmp_path):
    """`rlark check JOB --output /dev/stdout > out.md`: the record lands between what was printed before and
    after; the shell's file is neither replaced nor truncated."""
    out = tmp_path / "out.md"
    code = ("import sys; from rlark_tui.local import fsutil; print('before', flush=True); "
            "fsutil.write_private('/dev/stdout', 'RECORD\\n'); print('after')")
    with open(out, "w") as handle:
        subprocess.run([sys.executable, "-c", code], stdout=handle, check=True, timeout=60)
    assert out.read_text() == "before\nRECORD\nafter\n" and out.is_file() and leftovers(tmp_path) == []


def test_a_terminal_gets_text_cleaned_and_no_binary_output(monkeypatch):
    """Issue 33: `-` is stdout, as for tar; written to a terminal, text is cleaned as every line rlark prints (a
    record's or draft's cluster text with OSC 52 set the clipboard) and binary output is refused in one line."""
    import io
    import pty
    import select

    from rlark_tui.errors import UsageError

    master, slave = pty.openpty()
    try:
        monkeypatch.setattr(sys, "stdout", io.TextIOWrapper(open(slave, "wb", closefd=False)))  # noqa: SIM115
        fsutil.write_named("-", "a\x1b]52;c;ZXZpbA==\x07b \x9b31mc\n")
        assert select.select([master], [], [], 5)[0] and os.read(master, 4096) == b"ab c\r\n"
        with pytest.raises(UsageError, match="^refusing to write binary output to the terminal on stdout: "):
            fsutil.write_named("-", b"\x1b]52;c;ZXZpbA==\x07")
        with pytest.raises(UsageError, match=f"^refusing to write binary output to the terminal {os.ttyname(slave)}: "):
            with fsutil.atomic_output(os.ttyname(slave), named=True) as out:
                out.write(b"\x1b]2;forged\x07")
    finally:
        os.close(master)
        os.close(slave)
    monkeypatch.setattr(sys, "stdout", None)  # `>&-`: one line, where it was a crash report (AttributeError)
    with pytest.raises(fsutil.WriteFailed, match="^cannot write the output to stdout: it is closed$"):
        fsutil.write_named("-", "record\n")


def test_new_parent_directories_are_all_private(tmp_path):
    target = tmp_path / "a" / "b" / "notes.md"
    fsutil.write_private(target, "x")
    assert mode(tmp_path / "a") == 0o700 and mode(tmp_path / "a" / "b") == 0o700


def test_a_directory_as_the_output_path_is_an_error_and_stays_a_directory(tmp_path):
    with pytest.raises(IsADirectoryError):
        fsutil.write_private(tmp_path, "x")
    assert tmp_path.is_dir() and leftovers(tmp_path) == []
