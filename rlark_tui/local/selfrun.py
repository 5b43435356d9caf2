"""rlark's own Python children (the status refresher, the demo's server): the one way to start them."""

from __future__ import annotations

import sys


def python_module(module: str, *args: str) -> list[str]:
    """The argv that runs `python -m module args` with rlark's interpreter, importing nothing from the working
    directory: `-m` puts the working directory first on the child's sys.path, so a package `rlark_tui` another user
    left in a shared directory the command ran in (/tmp, a tmux pane's cwd) ran as the operator. `-P` (Python 3.11)
    leaves it out; the environment (a venv, PYTHONPATH) is the parent's, as before."""
    return [sys.executable, "-P", "-m", module, *args]
