"""Package data the console reads at run time: the Textual stylesheets of the package rlark_tui.styles.
The build maps the repository's top-level styles/ to that package, so source trees and wheels read the same."""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path


def stylesheet(name: str) -> Path:
    """The path of one stylesheet (`app.tcss`, ...) as Textual's CSS_PATH takes it."""
    return Path(str(files("rlark_tui.styles").joinpath(name)))
