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

import itertools
import os
import platform
import sys
import threading
import time
import traceback
from collections.abc import Callable, Coroutine, Iterable
from typing import TYPE_CHECKING, Any

from rlark_tui.local.config import state_dir
from rlark_tui.local.fsutil import write_private
from rlark_tui.text.redact import KnownSecrets, redact_lines
from rlark_tui.text.sanitize import clean
from rlark_tui.text.sinks import cut, one_line

if TYPE_CHECKING:
    import asyncio

REPORTS_DIR = "crashes"
"""Under the state dir: one file per crash, `<UTC time>-<pid>.txt` (`-1`, `-2`… before `.txt` for this process's
later reports: a Teller may tell several within a second)."""
_REPORTS = itertools.count()
REPORT_LINE_CHARS = 10_000
"""Each line of a report is cut there once masked, the rest counted: an exception's message may quote a megabyte of
cluster text, and a Teller may write a report for each bug it tells."""
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
    return header + [one_line(cut(line, REPORT_LINE_CHARS)) for line in redact_lines(lines, known)]


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


def write_report(error: BaseException, known: Iterable[str] = (), said: str = "crashed") -> str:
    """Write the report (0600); return the line to print: `rlark: crashed (<ExcType>); report: <path>` (`said`
    for a part that failed while rlark goes on)."""
    known = (*known, *known_in(error))
    what = one_line(clean(type(error).__name__))
    try:
        path = state_dir() / REPORTS_DIR / f"{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}-{os.getpid()}" \
            f"{f'-{told}' if (told := next(_REPORTS)) else ''}.txt"
        write_private(path, "\n".join(report_lines(error, known)) + "\n")
    except Exception as exc:  # the crash is still told, in one line: the report is what failed
        return f"rlark: {said} ({what}); no report: {clean(str(exc))}"
    return f"rlark: {said} ({what}); report: {clean(str(path))}"


BACKGROUND = "a background task failed"
"""What the line of a bug off the main path says (Teller): rlark goes on."""


class Teller:
    """A bug off the main path, where nothing else would catch it, told as a crash is: one masked line to `say`
    naming the report (write_report), once per type and place (a poll the reconciler runs again at each interval
    raises each time). Its hooks: an asyncio task whose exception nobody retrieves (`loop_handler`, of the app's loop
    and each tunnel's own: asyncio printed 'Task exception was never retrieved', the traceback and the message, at
    every interval), a thread's (`thread_hook`, threading.excepthook: Python printed 'Exception in thread', the
    traceback and the message) and a Textual worker's (the app's `on_worker_state_changed`: its toast quoted the
    exception's message, unmasked). `known()` gives the secret values the report masks besides those the crashed
    frames held."""

    def __init__(self, say: Callable[[str], object], known: Callable[[], Iterable[str]] = tuple) -> None:
        self.say = say
        self.known = known
        self._told: set[tuple[str, object]] = set()
        self._lock = threading.Lock()

    def __call__(self, error: BaseException) -> None:
        frames = traceback.extract_tb(error.__traceback__)
        told_as = (type(error).__name__, (frames[-1].filename, frames[-1].lineno) if frames else None)
        with self._lock:
            if told_as in self._told:
                return
            self._told.add(told_as)
        self.say(write_report(error, self.known(), said=BACKGROUND))

    def loop_handler(self, loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        """An asyncio loop's exception handler (`loop.set_exception_handler`)."""
        error = context.get("exception")
        if not isinstance(error, Exception):
            loop.default_exception_handler(context)
            return
        self(error)

    def thread_hook(self, hooked: threading.ExceptHookArgs) -> None:
        """threading.excepthook: a thread ended by an exception (SystemExit ends it quietly, as Python's own)."""
        if hooked.exc_value is None or isinstance(hooked.exc_value, SystemExit):
            return
        self(hooked.exc_value)


def to_stderr(line: str) -> None:
    """A command's way to say a Teller's line."""
    print(line, file=sys.stderr, flush=True)


def run_async(main: Coroutine[Any, Any, Any]) -> Any:
    """`asyncio.run(main)` for a command (`rlark watch`, `wait`, `port-forward`): an exception that none of its
    tasks' owners retrieves (a bug in a poll, which the reconciler runs again at its next interval) is told by a
    Teller on stderr."""
    import asyncio

    teller = Teller(to_stderr)

    async def handled() -> Any:
        asyncio.get_running_loop().set_exception_handler(teller.loop_handler)
        return await main

    return asyncio.run(handled())
