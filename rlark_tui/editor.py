"""Handing text to the user's editor (`$VISUAL`, `$EDITOR`, else vi) on a private temporary file.

Used by `rlark edit` for a whole job draft; the temporary file is 0600 and removed afterwards.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import tempfile

from rlark_tui.errors import RlarkError


def editor_command() -> str:
    return os.environ.get("VISUAL") or os.environ.get("EDITOR") or "vi"


def edit_text(text: str, command: str, suffix: str = ".yaml") -> str:
    """Open `text` in `command` and return what was saved (raises RlarkError if the editor fails)."""
    fd, path = tempfile.mkstemp(prefix="rlark-", suffix=suffix)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        finished = subprocess.run([*shlex.split(command), path], check=False)
        if finished.returncode != 0:
            raise RlarkError(f"editor `{command}` exited with code {finished.returncode}; nothing was changed")
        with open(path, encoding="utf-8") as handle:
            return handle.read()
    except FileNotFoundError:
        raise RlarkError(f"editor `{command}` not found; set $EDITOR") from None
    finally:
        try:
            os.unlink(path)
        except OSError:
            pass
