"""`rlark` without a sub-command opens the TUI through run_tui.

Connection problems before the TUI starts are one-line errors, never tracebacks.
"""

from __future__ import annotations

import gc

from rlark_tui.cli import main


def test_rlark_without_command_reports_a_missing_kubeconfig_in_one_line(tmp_path, capsys):
    code = main(["--kubeconfig", str(tmp_path / "missing")])
    err = capsys.readouterr().err
    assert code == 2
    assert err.strip().splitlines() == [f"error: kubeconfig {tmp_path / 'missing'}: no such file"]
    assert gc.isenabled()  # the cycle collector paused for the TUI's start runs again, whatever ended it


def test_rlark_without_kubeconfig_points_to_the_sandbox(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    code = main([])
    err = capsys.readouterr().err
    assert code == 2
    assert "no kubeconfig found" in err and "rlark demo" in err and "Traceback" not in err
