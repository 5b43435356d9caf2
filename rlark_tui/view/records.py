"""The `:records` view's deriver: the saved run-check records of this machine (read by the app's worker) and the
Jobs of the index that carry a saved check's summary (annotation rlark.io/check-summary)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Protocol

from rlark_tui.model.check_summary import check_cell, read_summary
from rlark_tui.model.keys import CHECK_SUMMARY_ANNOTATION
from rlark_tui.text.sanitize import clean
from rlark_tui.view.index import SnapshotIndex
from rlark_tui.view.pods import Line

RECORD = "record:"
"""A saved record's row key: this, then the record's markdown path."""
ON_JOB = "job:"
"""A Job's summary row key: this, then the Job's name."""


class SavedRecord(Protocol):
    """What a row shows of a saved record (checks.records.SavedRecord, read by the app's worker)."""

    @property
    def job(self) -> str: ...
    @property
    def checked_at(self) -> str: ...
    @property
    def passed(self) -> int: ...
    @property
    def checks(self) -> int: ...
    @property
    def path(self) -> str: ...


def record_rows(records: Sequence[SavedRecord], index: SnapshotIndex | None, now: datetime) -> list[Line]:
    """Saved records (key `record:<md path>`) and Jobs with a summary on them (key `job:<name>`): a summary that
    is malformed, dated in the future or not rlark's is a flagged claim (model.check_summary.check_cell), sorted
    below every pass."""
    rows = []
    for record in records:
        rows.append(Line(RECORD + record.path, (clean(record.job), clean(record.checked_at),
                                                f"{record.passed}/{record.checks}", clean(record.path)),
                         (record.job, record.checked_at, record.passed, record.path)))
    for name, job in (index.jobs.items() if index is not None else ()):
        annotations = job.annotations
        if CHECK_SUMMARY_ANNOTATION not in annotations:
            continue
        summary = read_summary(annotations)
        at = summary.at.strftime("%Y-%m-%dT%H:%M:%SZ") if summary is not None else ""
        passed = summary.passed if summary is not None and not summary.flag(now) else -1  # a flagged claim: no pass
        rows.append(Line(ON_JOB + name, (clean(name), at or "-", check_cell(annotations, now),
                                         "on the Job (rlark.io/check-summary)"), (name, at, passed, "")))
    return rows
