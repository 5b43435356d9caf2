"""The hand-over the next shift can see: a saved run check's short summary, kept on the Job as the annotation
`rlark.io/check-summary` (issue 25 item 8). Pure: what goes in (time, recorder, each check's result, decision; no
evidence text, no notes, no contacts, nothing a secret could hide in but the recorder's name, which is cut short),
how it is read back from any Job (a hostile or hand-edited value gives None or cleaned text), and the CHECK cell
`6/6 continue 2h ago alice`.

The annotation is a claim anyone who may edit the Job can make (issue 33 item 4): the cell always says who
recorded it and how long ago, and shows a result only for a summary in the shape rlark writes (`"by": "rlark"`,
every field as rlark writes it) dated no later than now plus CLOCK_SKEW. Otherwise it is flagged, never shown
as a pass: `future? in 3d alice`, `claim? 2h ago alice` (written by something else), `malformed?`.

RLark has no field for this; the platform's Job controller reconciles on every Job change, but builds the Tasks
from the spec alone and updates a Task only when its spec differs (apps/rlark/pkg/controllermanager/job/sync.go
`taskSpecEqual`), so a merge patch of this annotation restarts nothing.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from rlark_tui.model.keys import CHECK_SUMMARY_ANNOTATION

if TYPE_CHECKING:
    from rlark_tui.checks.report import CheckReport
from rlark_tui.model.timefmt import parse_time, short_age
from rlark_tui.text.parse import load_json
from rlark_tui.text.sanitize import clean

RESULTS = ("pass", "fail", "pending")
DECISIONS = ("continue", "stop", "keep")
RECORDER_CHARS = 64
MAX_CHECKS = 12
WRITER = "rlark"
"""The annotation's `by`: rlark wrote it (a summary without it, or with another, is only a claim)."""
CLOCK_SKEW = timedelta(minutes=5)
"""A summary dated later than now by more than this is flagged `future?`."""
MALFORMED = "malformed?"
"""The CHECK cell of a Job whose annotation is there but is not a summary rlark could have written."""


@dataclass(frozen=True)
class CheckSummary:
    at: datetime
    recorder: str
    results: tuple[str, ...]
    """Each check's result in order (C1–C6)."""
    decision: str
    by: str = WRITER
    """Who wrote the annotation (WRITER for rlark), cleaned and cut short."""

    def flag(self, now: datetime) -> str:
        """'' for a summary shown with its results; else `future?` or `claim?`."""
        if self.at > now + CLOCK_SKEW:
            return "future?"
        return "" if self.by == WRITER else "claim?"

    @property
    def passed(self) -> int:
        return sum(1 for result in self.results if result == "pass")

    def cell(self, now: datetime) -> str:
        """`6/6 continue 2h ago alice`: checks passed, decision, age, recorder; flagged without results
        (`future? in 3d alice`, `claim? 2h ago alice`) when it is not one to show as rlark's."""
        flag = self.flag(now)
        if flag == "future?":
            parts = [flag, f"in {short_age(now, self.at)}"]
        elif flag:
            parts = [flag, f"{short_age(self.at, now)} ago"]
        else:
            parts = [f"{self.passed}/{len(self.results)}", self.decision or "-", f"{short_age(self.at, now)} ago"]
        if self.recorder:
            parts.append(self.recorder)
        return " ".join(parts)


def summary_of(report: CheckReport) -> CheckSummary:
    """The summary of a checks.report.CheckReport."""
    hand_over = report.hand_over
    return CheckSummary(report.checked_at.astimezone(UTC), _recorder(hand_over.recorder or ""),
                        tuple(row.result for row in report.rows), hand_over.decision or "")


def annotation_value(summary: CheckSummary) -> str:
    """The annotation's text: compact JSON with the time to the second."""
    return json.dumps({"at": summary.at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
                       "recorder": summary.recorder, "results": list(summary.results),
                       "decision": summary.decision, "by": summary.by}, separators=(",", ":"), ensure_ascii=False)


def annotation_patch(summary: CheckSummary) -> dict[str, Any]:
    """The merge patch: metadata only."""
    return {"metadata": {"annotations": {CHECK_SUMMARY_ANNOTATION: annotation_value(summary)}}}


def read_summary(annotations: object) -> CheckSummary | None:
    """The summary on a Job's annotations; None when absent or not one rlark could have written."""
    text = annotations.get(CHECK_SUMMARY_ANNOTATION) if isinstance(annotations, dict) else None
    if not isinstance(text, str) or len(text) > 4096:
        return None
    try:
        data = load_json(text)
    except ValueError:
        return None
    if not isinstance(data, dict):
        return None
    at = parse_time(data.get("at")) if isinstance(data.get("at"), str) else None
    results = data.get("results")
    if at is None or not isinstance(results, list) or not 0 < len(results) <= MAX_CHECKS \
            or not all(result in RESULTS for result in results):
        return None
    decision, recorder, by = data.get("decision", ""), data.get("recorder", ""), data.get("by", "")
    if decision not in ("", *DECISIONS) or not isinstance(recorder, str) or not isinstance(by, str):
        return None
    return CheckSummary(at, _recorder(recorder), tuple(results), decision, _recorder(by))


def check_cell(annotations: object, now: datetime) -> str:
    """The CHECK column of `rlark get jobs` and `:records`: '' when the Job carries no summary, MALFORMED when
    the annotation is there but is not a summary."""
    if not isinstance(annotations, dict) or CHECK_SUMMARY_ANNOTATION not in annotations:
        return ""
    summary = read_summary(annotations)
    return summary.cell(now) if summary is not None else MALFORMED


def _recorder(name: str) -> str:
    return " ".join(clean(name).split())[:RECORDER_CHARS]
