"""The headless commands' stdout and stderr pass through `text.sanitize.clean` (issue 26 item 6).

Whatever a command prints (a table cell, a describe section, a check report, an error quoting the API server)
may hold text from the cluster. Rather than trusting every print site, `clean_streams` wraps both streams for the
length of a command: each write loses its escape sequences and control characters but `\\n` and `\\t`. A command
that sanitises its own output (`rlark logs`, which keeps SGR colours on a terminal and has `--raw`) opts out
of the cleaning. Either way a stdout that cannot be written (a full disk, `>&-`) ends the command in one line.
Writes of bytes to `.buffer` (a relayed exec session) are not text for a terminal to interpret and pass as they are.
"""

from __future__ import annotations

import codecs
import contextlib
import errno
import io
import os
import select
import signal
import sys
import threading
from collections.abc import Iterable, Iterator
from typing import TextIO

from rlark_tui.errors import RlarkError
from rlark_tui.text.sanitize import clean

ESCAPE_ERRORS = "rlark.escape"
"""The error handler of the process's stdout and stderr (`escape_unencodable`)."""


def _escape(error: UnicodeError) -> tuple[str, int]:
    """Each character the stream's encoding cannot hold as its JSON escape (`\\u00e9`, a character past the BMP
    as its surrogate pair `\\ud83d\\ude80`), which JSON and YAML's double-quoted strings read back as it was."""
    if not isinstance(error, UnicodeEncodeError):
        raise error
    escaped = []
    for char in error.object[error.start:error.end]:
        code = ord(char)
        if code > 0xFFFF:
            code -= 0x10000
            escaped.append(f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}")
        else:
            escaped.append(f"\\u{code:04x}")
    return "".join(escaped), error.end


codecs.register_error(ESCAPE_ERRORS, _escape)


def escape_unencodable() -> None:
    """stdout and stderr write a character their encoding cannot hold (an ASCII or Latin-1 locale, or
    PYTHONIOENCODING, and a Job's name, a log line or rlark's own `▶`; a lone surrogate under any) as its escape,
    never UnicodeEncodeError: every command's output and the TUI's screen, which Textual draws on stderr."""
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, io.TextIOWrapper):
            stream.reconfigure(errors=ESCAPE_ERRORS)


class OutputLost(RlarkError):
    """stdout could not be written (a full disk, a closed descriptor, an I/O error): one line, exit 1, as a Unix tool
    says 'write error'. A reader gone (BrokenPipeError) is not one: the command stops quietly (cli.main)."""


class _Closed:
    """A standard stream the process was started without (`>&-`): each write fails as a closed descriptor does."""

    def write(self, text: str) -> int:
        raise OSError(errno.EBADF, "it is closed")

    def flush(self) -> None:
        return None

    def isatty(self) -> bool:
        return False


class CleanWriter:
    """A text stream whose writes are `clean`ed (unless the command cleans its own: `rlark logs`); every other
    attribute is the wrapped stream's. A write or flush of stdout that fails is `OutputLost`; one of stderr is
    dropped (there is nowhere left to say it)."""

    def __init__(self, stream: TextIO | None, name: str, cleaned: bool = True) -> None:
        self._stream: TextIO | _Closed = _Closed() if stream is None else stream
        self._name = name
        self._cleaned = cleaned

    def write(self, text: str) -> int:
        self._guarded(self._stream.write, clean(text) if self._cleaned else text)
        return len(text)

    def writelines(self, lines: Iterable[str]) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        self._guarded(self._stream.flush)

    def _guarded(self, call, *args) -> None:
        try:
            call(*args)
        except BrokenPipeError:
            raise
        except OSError as exc:
            if self._name == "stdout":
                raise OutputLost(f"cannot write the output to {self._name}: {exc.strerror or exc}") from None

    def __getattr__(self, name: str):
        return getattr(self._stream, name)


@contextlib.contextmanager
def clean_streams(cleaned: bool = True) -> Iterator[None]:
    """sys.stdout and sys.stderr cleaned (or only guarded) until the block ends, then restored, even on an exception.
    Output still buffered then that cannot be written is dropped with the descriptor, so that the interpreter's own
    flush at exit adds no 'Exception ignored' of its own to the command's one line."""
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = CleanWriter(sys.stdout, "stdout", cleaned), CleanWriter(sys.stderr, "stderr", cleaned)
    try:
        yield
    finally:
        try:
            sys.stdout.flush()
        except (OSError, OutputLost):
            silence_stdout()
        sys.stdout, sys.stderr = saved


def silence_stdout() -> None:
    """stdout's descriptor made /dev/null: what is still buffered for it goes nowhere, without an error."""
    try:
        descriptor = sys.stdout.fileno()
    except (OSError, ValueError, AttributeError):  # closed, or no descriptor of its own (a test's capture)
        return
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, descriptor)
    os.close(null)


def no_color(args: object) -> bool:
    """`--no-color`, or NO_COLOR set to anything but the empty string (no-color.org)."""
    return bool(getattr(args, "no_color", False)) or bool(os.environ.get("NO_COLOR"))


GONE_POLL_SECONDS = 0.5
"""How often the watch on the TUI's terminal (ends_with_terminal) looks up to see whether to stop."""
GONE_EVENTS = select.POLLHUP | select.POLLERR | select.POLLNVAL
HAND_OVER_SECONDS = 30.0
"""How long the process's own SIGHUP handler, given the hang-up, has to end it (rlark demo's stops its sandbox:
15 s, then a kill) before the watch ends it itself."""


@contextlib.contextmanager
def ends_with_terminal() -> Iterator[None]:
    """While the block runs (the TUI): when the terminal it reads and draws on is gone (the terminal emulator closed
    its side of the pty), end the process with 128 + SIGHUP, saying so in one line on stderr when that can still be
    written. The kernel's SIGHUP ends the process then, unless a wrapper ignores or blocks it, or the terminal is
    not the process's controlling one; and Textual does not end by itself: its input thread reads end-of-file
    over and over, its writer thread dies of the closed terminal's first error, and the next draws wait for ever
    for room in its write queue. A thread of rlark's own polls the terminal's descriptors (stdin and stderr, the
    ones Textual uses, when they are terminals) for the hang-up; nothing of Textual's is touched. A process with a
    SIGHUP handler of its own (rlark demo) is given the hang-up instead (`_hand_over`)."""
    fds = [fd for fd in (0, 2) if os.isatty(fd)]
    if not fds:
        yield
        return
    done = threading.Event()

    def watch() -> None:
        poller = select.poll()
        for fd in fds:
            poller.register(fd, 0)  # a hang-up, an error or a closed descriptor is reported whatever is asked
        while not done.is_set():
            if any(events & GONE_EVENTS for _fd, events in poller.poll(GONE_POLL_SECONDS * 1000)):
                if not done.is_set() and (not _hand_over() or not done.wait(HAND_OVER_SECONDS)):
                    _end_without_terminal()
                return

    watcher = threading.Thread(target=watch, name="rlark-terminal-gone", daemon=True)
    watcher.start()
    try:
        yield
    finally:
        done.set()


def _hand_over() -> bool:
    """Give the hang-up to the process's own SIGHUP handler, when it has one that can run (rlark demo's: it stops
    the sandbox, then ends the process), as a SIGHUP to itself, which Python runs on the main thread: the one way the
    process ends on a hang-up, so the watch never ends it while that handler is still stopping what it started.
    False when SIGHUP is ignored, left to its default or blocked: then the watch ends the process itself."""
    if not callable(signal.getsignal(signal.SIGHUP)) or \
            signal.SIGHUP in signal.pthread_sigmask(signal.SIG_BLOCK, ()):
        return False
    os.kill(os.getpid(), signal.SIGHUP)
    return True


def _end_without_terminal() -> None:
    """End the process at once: there is no terminal left to restore, and the TUI's shutdown would wait on its
    writes to the one that is gone (as rlark demo does on a hang-up)."""
    code = 128 + signal.SIGHUP
    with contextlib.suppress(OSError):  # to the descriptor: Textual holds sys.stderr while it runs
        said = os.dup(2)
        os.dup2(os.open(os.devnull, os.O_WRONLY), 2)  # the TUI's writer, still drawing, writes no frame after it
        os.write(said, f"rlark: the terminal is gone (closed without a hang-up signal); ending with {code}\n".encode())
    os._exit(code)
