"""The headless commands' stdout and stderr pass through `text.sanitize.clean` (issue 26 item 6).

Whatever a command prints (a table cell, a describe section, a check report, an error quoting the API server)
may hold text from the cluster. Rather than trusting every print site, `clean_streams` wraps both streams for the
length of a command: each write loses its escape sequences and control characters but `\\n` and `\\t`. A command
that sanitises its own output (`rlark logs`, which keeps SGR colours on a terminal and has `--raw`) opts out.
Writes of bytes to `.buffer` (a relayed exec session) are not text for a terminal to interpret and pass as they are.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterable, Iterator
from typing import TextIO

from rlark_tui.text.sanitize import clean


class CleanWriter:
    """A text stream whose writes are `clean`ed; every other attribute is the wrapped stream's."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        self._stream.write(clean(text))
        return len(text)

    def writelines(self, lines: Iterable[str]) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str):
        return getattr(self._stream, name)


@contextlib.contextmanager
def clean_streams() -> Iterator[None]:
    """sys.stdout and sys.stderr cleaned until the block ends (then restored, even on an exception)."""
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = CleanWriter(sys.stdout), CleanWriter(sys.stderr)
    try:
        yield
    finally:
        sys.stdout, sys.stderr = saved


def no_color(args: object) -> bool:
    """`--no-color`, or NO_COLOR set to anything but the empty string (no-color.org)."""
    return bool(getattr(args, "no_color", False)) or bool(os.environ.get("NO_COLOR"))
