"""Saving run-check records: markdown + JSON under `<state dir>/checks/`, private (0600) and atomic.

The I/O edge shared by `rlark check` and the TUI report screen.
"""

from __future__ import annotations

from datetime import timezone
from pathlib import Path

from rlark_tui import fsutil
from rlark_tui.checks.render import to_json_text, to_markdown
from rlark_tui.checks.report import CheckReport
from rlark_tui.errors import RlarkError


def save_record(root: Path, report: CheckReport, lang: str = "en") -> Path:
    """Save the record as markdown + JSON under `<root>/checks/`, mode 0600, atomically; returns the .md path."""
    stamp = report.checked_at.astimezone(timezone.utc).strftime("%Y%m%dT%H%M%S%fZ")
    base = f"{report.job}-{stamp}"
    markdown = root / "checks" / f"{base}.md"
    write_private(markdown, to_markdown(report, lang))
    write_private(root / "checks" / f"{base}.json", to_json_text(report, lang) + "\n")
    return markdown


def write_private(path: Path, text: str) -> None:
    """Write atomically and privately (rlark_tui.fsutil): readers never see half a record."""
    try:
        fsutil.write_private(path, text)
    except OSError as exc:
        raise RlarkError(f"cannot write the record to {path}: {exc.strerror or exc}") from None
