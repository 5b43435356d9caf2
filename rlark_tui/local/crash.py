"""A crash of rlark (issue 33 item 5), of the TUI or of a command: one line on the terminal, and a report in a
0600 file in the state dir.

The report is the traceback without locals (a local may hold a token, a Job's env, a draft), every line masked
as logs are (rlark_tui.text.redact: secret-looking assignments, token shapes, keys, and the values of the Jobs'
own secret env entries) and without control characters or bidi controls. The line names the exception's type, its masked
message and the report's path; when the report cannot be written, it says why instead.
"""

from __future__ import annotations

import os
import platform
import time
import traceback
from collections.abc import Iterable

from rlark_tui.local.config import state_dir
from rlark_tui.local.fsutil import write_private
from rlark_tui.text.redact import KnownSecrets, redact_lines, redact_text
from rlark_tui.text.sanitize import clean
from rlark_tui.text.sinks import one_line

REPORTS_DIR = "crashes"
"""Under the state dir: one file per crash, `<UTC time>-<pid>.txt`."""
MESSAGE_MAX = 200
"""The exception's message on the terminal line is cut to this many characters (the report has all of it)."""


def report_lines(error: BaseException, known: Iterable[str] = ()) -> list[str]:
    """The report's lines: a header, then the traceback (chained exceptions included) without locals, masked."""
    from importlib.metadata import PackageNotFoundError, version

    def installed(name: str) -> str:
        try:
            return version(name)
        except PackageNotFoundError:
            return "?"

    header = [f"rlark crash report, {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())}",
              f"rlark-tui {installed('rlark-tui')}, Textual {installed('textual')}, "
              f"Python {platform.python_version()} on {platform.system()}",
              "Locals are not recorded; secrets are masked.", ""]
    lines = "".join(traceback.format_exception(error)).splitlines()
    return header + [one_line(line) for line in redact_lines(lines, known)]


def summary(error: BaseException, known: Iterable[str] = ()) -> str:
    """`<ExcType>: <masked message>`, on one line, without control characters or bidi controls (cluster text in a
    message: `sinks.one_line`), the message cut to MESSAGE_MAX."""
    message = one_line(" ".join(clean(KnownSecrets(known).mask(redact_text(str(error)))).split()))
    if len(message) > MESSAGE_MAX:
        message = message[:MESSAGE_MAX - 1] + "…"
    name = type(error).__name__
    return f"{name}: {message}" if message else name


def write_report(error: BaseException, known: Iterable[str] = ()) -> str:
    """Write the report (0600); return the line to print: `rlark: crashed (<summary>); report: <path>`."""
    known = tuple(known)
    path = state_dir() / REPORTS_DIR / f"{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}-{os.getpid()}.txt"
    what = summary(error, known)
    try:
        write_private(path, "\n".join(report_lines(error, known)) + "\n")
    except Exception as exc:  # the crash is still told, in one line: the report is what failed
        return f"rlark: crashed ({what}); no report: {clean(str(exc))}"
    return f"rlark: crashed ({what}); report: {clean(str(path))}"
