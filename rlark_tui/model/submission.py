"""The submission record a Job carries: its spec exactly as submitted (canonical JSON), that text's sha256 and
the submission time, as annotations; written by rlark_tui.flow.actions, read back by describe and the run check.
"""

from __future__ import annotations

import copy
import hashlib
import json
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from rlark_tui.model.keys import CHECK_SUMMARY_ANNOTATION
from rlark_tui.model.objects import Job
from rlark_tui.text.parse import load_json

SUBMITTED_SPEC_ANNOTATION = "rlark.io/submitted-spec"
"""Compact canonical JSON of the Job `spec` exactly as submitted."""
SUBMITTED_SPEC_SHA256_ANNOTATION = "rlark.io/submitted-spec-sha256"
"""sha256 (hex) of the canonical JSON in SUBMITTED_SPEC_ANNOTATION."""
SUBMITTED_AT_ANNOTATION = "rlark.io/submitted-at"


def canonical_spec(spec: dict[str, Any]) -> str:
    """The spec as compact JSON with sorted keys: the text the sha256 covers."""
    return json.dumps(spec, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def spec_sha256(spec: dict[str, Any]) -> str:
    """The sha256 of canonical_spec's UTF-8; a lone surrogate (JSON's `\\ud800`, which a spec read back from a Job's
    annotation may hold) taken as it is, never UnicodeEncodeError (rlark describe and check ended in a crash)."""
    return hashlib.sha256(canonical_spec(spec).encode("utf-8", "surrogatepass")).hexdigest()


def with_submission_record(manifest: dict[str, Any], now: datetime | None = None) -> dict[str, Any]:
    """A copy of the manifest carrying its own spec and sha256 as annotations (beside launch record / plan), and no
    run check's summary: one is written by the Job's own check (actions.annotate_check), and a manifest someone
    handed over carried one in rlark's shape ('6/6 continue'), shown as the new Job's before any check ran; an
    edit or a re-creation kept the old run's."""
    job = copy.deepcopy(manifest)
    spec = job.get("spec") or {}
    annotations = job.setdefault("metadata", {}).setdefault("annotations", {}) or {}
    job["metadata"]["annotations"] = annotations
    annotations.pop(CHECK_SUMMARY_ANNOTATION, None)
    annotations[SUBMITTED_SPEC_ANNOTATION] = canonical_spec(spec)
    annotations[SUBMITTED_SPEC_SHA256_ANNOTATION] = spec_sha256(spec)
    annotations[SUBMITTED_AT_ANNOTATION] = (now or datetime.now(UTC)).strftime("%Y-%m-%dT%H:%M:%SZ")
    return job


@dataclass(frozen=True)
class SubmittedRecord:
    """What a Job says about its own submission, read back by describe and the run check."""

    spec: dict[str, Any] | None
    sha256: str | None
    intact: bool
    """The stored spec hashes to the stored sha256."""
    matches_live: bool
    """The live `spec` equals the stored one."""


def submitted_record(job: dict[str, Any]) -> SubmittedRecord:
    annotations = Job(job).annotations
    text = annotations.get(SUBMITTED_SPEC_ANNOTATION)
    sha = annotations.get(SUBMITTED_SPEC_SHA256_ANNOTATION)
    if not isinstance(text, str):
        return SubmittedRecord(None, sha if isinstance(sha, str) else None, False, False)
    try:
        spec = load_json(text)
    except ValueError:
        return SubmittedRecord(None, sha, False, False)
    intact = isinstance(spec, dict) and sha == spec_sha256(spec)
    live = (job or {}).get("spec")
    return SubmittedRecord(spec if isinstance(spec, dict) else None, sha, intact,
                           isinstance(live, dict) and isinstance(spec, dict)
                           and canonical_spec(live) == canonical_spec(spec))
