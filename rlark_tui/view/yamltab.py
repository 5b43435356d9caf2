"""The Job detail's YAML tab: the Job's object as YAML, secrets redacted, and the part of it the tab lays out.

A Job's author sets how long its YAML is (21,000 small annotation keys fit the 256 KiB limit: 21,000 lines), and
dumping, highlighting and laying out all of it took 2.5 s of the UI thread each time the Job changed. So the app
makes it on a worker (tui/work.py, `RenderYaml`), and the tab shows the first YAML_LINES lines and says how many
more there are in one line; `Y` copies the whole YAML."""

from __future__ import annotations

from typing import Any

from rlark_tui.text.redact import redact_with
from rlark_tui.text.sinks import cut_lines, yaml_dumps

YAML_LINES = 500


def job_yaml(raw: Any, related: frozenset[str] = frozenset()) -> str:
    """The Job's YAML as the tab and `Y` give it: secrets redacted (its secret env values wherever they appear: a
    run script that echoed one showed it, and `Y` copied it, as 'YAML (secrets redacted)'; and `related`, those its
    Tasks name), no managedFields."""
    shown = redact_with(raw, related)
    if isinstance(shown, dict) and isinstance(shown.get("metadata"), dict):
        shown["metadata"] = {k: v for k, v in shown["metadata"].items() if k != "managedFields"}
    return yaml_dumps(shown, sort_keys=False, allow_unicode=True)


def shown_part(text: str, whole: str = "Y copies the whole YAML") -> tuple[str, str]:
    """The first YAML_LINES lines of `text`, each cut at sinks.FIELD_CHARS characters, and the line that counts
    the rest ("" when there is none), saying where the whole is (`whole`). The wizard's preview and a saved
    run-check record (`:records`) are laid out so too: a draft's run script is as long as its author made it (20,000 lines were 6 s of the UI thread), and a
    value of 100 KB without a space is one line (a Job of a dozen: 1.6 MB laid out, 4 s)."""
    lines = text.splitlines(keepends=True)
    if len(lines) <= YAML_LINES:
        return cut_lines(text), ""
    return cut_lines("".join(lines[:YAML_LINES])), (f"… {len(lines) - YAML_LINES:,} more lines (the first "
                                                    f"{YAML_LINES:,} shown; {whole})")
