"""The run-check result: six rows of pass / fail / pending, each with structured evidence items.

Evidence items are references a reader (or a test) can re-resolve against the evidence they came from.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from types import MappingProxyType
from typing import Literal

from rlark_tui.text.sinks import one_line

Result = Literal["pass", "fail", "pending"]

STAGES = ("job", "pods", "ray", "app", "progress", "outputs")
"""The order in which a run can break (C10); the earliest failing one is where to start looking."""

TITLES = MappingProxyType({
    1: "Job created and configured as submitted",
    2: "Pods: count and Nodes as planned",
    3: "Ray started as expected",
    4: "Application and config versions consistent",
    5: "Progress seen and outputs persisted",
    6: "Result saved and next steps decided",
})


@dataclass(frozen=True)
class EvidenceItem:
    """One thing a result rests on.

    kind "object": `ref` = "Job/<name>" | "Task/<ns>/<name>" | "Pod/<ns>/<name>" | "Node/<ns>/<name>",
    `path` = dotted path with [i] indexes, `value` = the value found there (redacted).
    kind "log": `ref` = Pod name, `container`, `instance` (restart count, None if unknown),
    `line` (1-based within the log read), `value` = the line text (redacted).
    kind "file": `ref` = file path, `size`, `mtime` (ISO), `sha256`.
    kind "ray": `ref` = the Ray dashboard route read, `path` = field, `value`.
    kind "record": `ref` = "launch-record" | "deployment-plan" | "submitted-spec" | "submission" (sha256, yaml).
    kind "event": `ref` = Pod name, `value` = "<type> <reason>: <message>".
    kind "container": `ref` = data-plane Pod name, `path` = the `main` container status field (`imageID`), `value`.
    kind "check": `ref` = "check/<id>", `value` = that row's result.
    """

    kind: str
    ref: str
    value: str = ""
    path: str | None = None
    container: str | None = None
    instance: int | None = None
    line: int | None = None
    size: int | None = None
    mtime: str | None = None
    sha256: str | None = None
    expected: str | None = None
    """What the checker wanted here when it differs from `value` (a mismatch)."""

    def to_json(self) -> dict[str, object]:
        data: dict[str, object] = {"kind": self.kind, "ref": self.ref}
        for key in ("path", "container", "instance", "line", "value", "expected", "size", "mtime", "sha256"):
            value = getattr(self, key)
            if value is not None and not (key == "value" and value == "" and self.kind == "file"):
                data[key] = value
        return data

    def location(self) -> str:
        """Where to look, in one short phrase (for the record's 'evidence location' column)."""
        if self.kind == "log":
            instance = "" if self.instance is None else f"#{self.instance}"
            return f"{self.ref}/{self.container or 'main'}{instance}:{self.line}"
        if self.kind in ("object", "record", "ray", "container") and self.path:
            return f"{self.ref} {self.path}"
        return self.ref


@dataclass(frozen=True)
class Reason:
    """One reason behind a row's result; fail and pending reasons name a stage and who can act."""

    result: Result
    message: str
    stage: str | None = None
    owner: str | None = None
    """For pending reasons: who can confirm it (job owner, platform admin, image maintainer, operator)."""


@dataclass(frozen=True)
class CheckRow:
    id: int
    title: str
    result: Result
    checked_at: datetime
    evidence: tuple[EvidenceItem, ...] = ()
    findings: tuple[Reason, ...] = ()
    notes: tuple[str, ...] = ()

    @property
    def stage(self) -> str | None:
        """The earliest stage among this row's failing reasons."""
        stages = [f.stage for f in self.findings if f.result == "fail" and f.stage]
        return min(stages, key=STAGES.index) if stages else None

    def all_notes(self) -> list[str]:
        """Fail and pending reasons first, then plain notes; each one line (sinks.one_line), as every report and
        the run-check screen show them: a note quotes cluster text (an event's message, which a kubelet fills from
        the Pod's own probe output), and 'no volume\\n3. PASS     Ray: forged' printed a forged row."""
        lines = [f.message for f in self.findings if f.result == "fail"]
        lines += [f.message + (f" (to confirm: {f.owner})" if f.owner else "")
                  for f in self.findings if f.result == "pending"]
        return [one_line(line) for line in lines + list(self.notes)]


Decision = Literal["continue", "stop", "keep"]
"""What happens to the run after the check (the hand-over's decision)."""


@dataclass(frozen=True)
class HandOver:
    """What the operator adds to the record: who checked, who to contact, what happens next."""

    recorder: str | None = None
    contacts: tuple[str, ...] = ()
    decision: Decision | None = None
    notes: str | None = None
    retention: str | None = None
    links: tuple[str, ...] = ()
    cleaned_up: bool = False
    """The seed's checkbox: temporary access and secrets used for the run were cleaned up."""


@dataclass(frozen=True)
class HandOverKey:
    """Whose kept hand-over fields these are: a Job is its context, name and uid (Jobs are cluster-scoped:
    cluster.kinds.JOBS), so a Job of the same name in another context, or one deleted and made again, never sees
    another's fields."""

    context: str
    job: str
    uid: str


@dataclass(frozen=True)
class RecordFacts:
    """The record template's header fields (C8), filled from the evidence; '' when unknown."""

    run_id: str = ""
    code_ref: str = ""
    images: tuple[str, ...] = ()
    config_ref: str = ""
    run_script: str = ""
    num_nodes: str = ""
    placement_mode: str = ""
    placement: tuple[str, ...] = ()
    """Per role: "<role>: <namespace> on <nodes>, <resources>"."""
    job_name: str = ""
    submitted_yaml: str = ""
    submitted_sha256: str = ""
    stop_condition: str = ""
    """The agreed stop condition (launch record `stopCondition`)."""

    def __post_init__(self) -> None:
        """Every field but the run script on one line (sinks.one_line): they quote the launch record, an annotation
        the Job's author may edit, and the role names, images and log the Job's, into the record's header fields
        and its conclusion, where a line break forged a field ('- Recorder: ...') or ended a code block."""
        for name, value in vars(self).items():
            if isinstance(value, str) and name != "run_script":
                object.__setattr__(self, name, one_line(value))
            elif isinstance(value, tuple):
                object.__setattr__(self, name, tuple(one_line(str(item)) for item in value))


@dataclass(frozen=True)
class CheckReport:
    job: str
    checked_at: datetime
    rows: tuple[CheckRow, ...]
    facts: RecordFacts = field(default_factory=RecordFacts)
    hand_over: HandOver = field(default_factory=HandOver)
    uid: str = ""
    """The checked Job's uid, kept in the saved record: a bundle takes only a record of its own Job."""

    @property
    def settled_at(self) -> datetime:
        """When the last row reached its present result: the conclusion's time (row 6 carries it)."""
        return self.rows[-1].checked_at if self.rows else self.checked_at

    @property
    def earliest_failing_stage(self) -> str | None:
        stages = [row.stage for row in self.rows if row.stage]
        return min(stages, key=STAGES.index) if stages else None

    @property
    def all_pass(self) -> bool:
        return all(row.result == "pass" for row in self.rows)

    @property
    def exit_code(self) -> int:
        """0 all pass, 1 any fail, 3 nothing failed but something pending."""
        results = {row.result for row in self.rows}
        if "fail" in results:
            return 1
        return 3 if "pending" in results else 0

    def row(self, check_id: int) -> CheckRow:
        return self.rows[check_id - 1]
