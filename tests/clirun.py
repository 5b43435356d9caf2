"""Run `rlark` in-process (the CLI's `main`) and keep what it printed."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass

from rlark_tui.cli import main


@dataclass
class Result:
    """What one in-process `rlark` run left: exit code, stdout, stderr."""

    code: int
    out: str
    err: str


def cli_runner(kubeconfig, capsys):
    """`run(*argv) -> Result`: `rlark --kubeconfig KUBECONFIG argv...` in-process."""
    def run(*argv: str) -> Result:
        code = main(["--kubeconfig", str(kubeconfig), *argv])
        captured = capsys.readouterr()
        assert "rlark: crashed" not in captured.err, captured.err  # a bug, whatever the test goes on to assert
        return Result(code, captured.out, captured.err)
    return run


@contextlib.contextmanager
def ctrl_c_once_printed(text: str) -> Iterator[None]:
    """Within it, an in-process rlark that serves until interrupted (a watch, port-forward) gets a Ctrl-C (a
    KeyboardInterrupt, as SIGINT's) once `text` is on its stdout (capsys's, read without taking it), not after a
    fixed time: it ends as soon as it said what the test reads."""
    previous = signal.signal(signal.SIGALRM, signal.default_int_handler)
    done = threading.Event()

    def ctrl_c() -> None:
        while text not in sys.stdout.getvalue() and not done.wait(0.01):
            pass
        if not done.is_set():
            os.kill(os.getpid(), signal.SIGALRM)

    sender = threading.Thread(target=ctrl_c, daemon=True)
    sender.start()
    try:
        yield
    finally:
        done.set()
        sender.join()
        signal.signal(signal.SIGALRM, previous)
