"""Run `rlark` in-process (the CLI's `main`) and keep what it printed."""

from __future__ import annotations

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
