"""Handing text to the user's editor (`$VISUAL`, `$EDITOR`, else vi) on a private temporary file.

Used by `rlark edit` for a whole job draft; the temporary file is 0600, in a 0700 directory of its own, and removed afterwards, also when rlark is
sent SIGHUP or SIGTERM while the editor runs (the editor is stopped, the draft removed, exit 128 + the signal); one
left by a SIGKILL is removed by the next edit (the directory is named with rlark's pid).
What the editor saved is read with the drafts' cap (4 MiB).
"""

from __future__ import annotations

import contextlib
import os
import shlex
import shutil
import signal
import stat
import subprocess
import tempfile
import threading

from rlark_tui.errors import RlarkError, UsageError
from rlark_tui.jobspec.draft import MAX_DRAFT_BYTES
from rlark_tui.local.fsutil import read_input, write_private
from rlark_tui.text.parse import ascii_int

PREFIX = "rlark-edit-"


def _remove_left_behind() -> None:
    """The temporary directories of earlier edits whose rlark is gone (SIGKILL, a lost terminal: no handler ran),
    this user's own only, removed with what they hold (a draft keeps its secret env values)."""
    base = tempfile.gettempdir()
    try:
        names = os.listdir(base)
    except OSError:
        return
    for name in names:
        pid = ascii_int(name[len(PREFIX):].partition("-")[0]) if name.startswith(PREFIX) else None
        if pid is None or pid == os.getpid():
            continue
        try:
            info = os.lstat(os.path.join(base, name))
            if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid():
                continue
            os.kill(pid, 0)
        except ProcessLookupError:
            shutil.rmtree(os.path.join(base, name), ignore_errors=True)
        except OSError:
            continue


def editor_command() -> str:
    return os.environ.get("VISUAL") or os.environ.get("EDITOR") or "vi"


def edit_text(text: str, command: str, suffix: str = ".yaml") -> str:
    """Open `text` in `command` and return what was saved (raises RlarkError if the editor fails)."""
    _remove_left_behind()
    # 0700: the editor's own backup and swap files stay private; the pid in the name lets a later edit remove it
    folder = tempfile.mkdtemp(prefix=f"{PREFIX}{os.getpid()}-")
    path = os.path.join(folder, f"draft{suffix}")
    try:
        with _ended_by_signals():
            write_private(path, text, durable=False)
            finished = subprocess.run([*shlex.split(command), path], check=False)
            if finished.returncode != 0:
                raise RlarkError(f"editor `{command}` exited with code {finished.returncode}; nothing was changed")
            try:
                return read_input(path, "the edited draft", MAX_DRAFT_BYTES).decode("utf-8")
            except UnicodeDecodeError:
                raise UsageError("the edited draft is not UTF-8 text; nothing was changed") from None
    except FileNotFoundError:
        raise RlarkError(f"editor `{command}` not found; set $EDITOR") from None
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@contextlib.contextmanager
def _ended_by_signals():
    """SIGHUP and SIGTERM raise SystemExit(128 + signal) here, so the caller's cleanup runs (subprocess.run
    kills the editor on the way out). Only the main thread can set handlers; elsewhere nothing changes."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def end(signum, _frame):
        raise SystemExit(128 + signum)

    previous = {signum: signal.signal(signum, end) for signum in (signal.SIGHUP, signal.SIGTERM)}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
