"""A crash of rlark (issue 33 item 5), of the TUI or of a command: one line on the terminal, and a report in a
0600 file in the state dir.

The report is the traceback without locals (a local may hold a token, a Job's env, a draft), every line masked
as logs are (rlark_tui.text.redact: secret-looking assignments, token shapes, keys, and the values of the Jobs'
own secret env entries, and every value the masking in the crashed frames knew) and without control characters or bidi
controls. The line names the exception's type and the report's path, never its message: a message may quote any
cluster value (a Secret's value that does not look like one is known only to the masking that read it); when the
report cannot be written, the line says why instead.
"""

from __future__ import annotations

import os
import platform
import sys
import time
import traceback
from collections.abc import Coroutine, Iterable
from typing import Any

from rlark_tui.local.config import state_dir
from rlark_tui.local.fsutil import write_private
from rlark_tui.text.redact import KnownSecrets, redact_lines
from rlark_tui.text.sanitize import clean
from rlark_tui.text.sinks import one_line

REPORTS_DIR = "crashes"
"""Under the state dir: one file per crash, `<UTC time>-<pid>.txt`."""
FRAME_ATTRIBUTES = 200
"""known_in looks at most this many attributes of each local (a `self` that holds the masking)."""


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


def known_in(error: BaseException) -> set[str]:
    """The values the masking in the crashed frames knew: every KnownSecrets, LineRedactor and JobSecrets (the
    Secrets a command or view read) that a frame of the traceback (chained exceptions too) holds as a local or as
    an attribute of one (`self.redact`)."""
    from rlark_tui.cluster.secrets import JobSecrets
    from rlark_tui.text.redact import LineRedactor

    def values(obj: object) -> tuple[str, ...] | frozenset[str]:
        if isinstance(obj, KnownSecrets):
            return obj.given
        if isinstance(obj, LineRedactor):
            return obj.known.given
        if isinstance(obj, JobSecrets):
            return obj.values
        return ()

    found: set[str] = set()
    seen: set[int] = set()
    chained: BaseException | None = error
    while chained is not None and id(chained) not in seen:
        seen.add(id(chained))
        for frame, _ in traceback.walk_tb(chained.__traceback__):
            for local in list(frame.f_locals.values()):
                try:  # a local's own __getattr__ may raise anything: the crash is still told
                    found.update(values(local))
                    members = getattr(local, "__dict__", None)
                    if isinstance(members, dict):
                        for member in list(members.values())[:FRAME_ATTRIBUTES]:
                            found.update(values(member))
                except Exception:  # noqa: BLE001, S112 - what cannot be looked at holds no masking
                    continue
        chained = chained.__cause__ or chained.__context__
    return {value for value in found if isinstance(value, str)}


def write_report(error: BaseException, known: Iterable[str] = ()) -> str:
    """Write the report (0600); return the line to print: `rlark: crashed (<ExcType>); report: <path>`."""
    known = (*known, *known_in(error))
    what = one_line(clean(type(error).__name__))
    try:
        path = state_dir() / REPORTS_DIR / f"{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}-{os.getpid()}.txt"
        write_private(path, "\n".join(report_lines(error, known)) + "\n")
    except Exception as exc:  # the crash is still told, in one line: the report is what failed
        return f"rlark: crashed ({what}); no report: {clean(str(exc))}"
    return f"rlark: crashed ({what}); report: {clean(str(path))}"


def run_async(main: Coroutine[Any, Any, Any]) -> Any:
    """`asyncio.run(main)` for a command (`rlark watch`, `wait`, `port-forward`): an exception that none of its
    tasks' owners retrieves (a bug in a poll, which the reconciler runs again at its next interval) is told as a
    crash is, one line and the masked report, once per type and place; asyncio printed its traceback and the
    exception's message (which may quote cluster text) on stderr at every interval."""
    import asyncio

    told: set[tuple[str, object]] = set()

    def handler(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        error = context.get("exception")
        if not isinstance(error, Exception):
            loop.default_exception_handler(context)
            return
        frames = traceback.extract_tb(error.__traceback__)
        told_as = (type(error).__name__, (frames[-1].filename, frames[-1].lineno) if frames else None)
        if told_as not in told:
            told.add(told_as)
            print(write_report(error), file=sys.stderr, flush=True)

    async def handled() -> Any:
        asyncio.get_running_loop().set_exception_handler(handler)
        return await main

    return asyncio.run(handled())
