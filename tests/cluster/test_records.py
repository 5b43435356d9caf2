"""Pure parts of the mutation path: the submission record on a Job and local findings for a manifest."""

import copy
from datetime import UTC, datetime

import pytest

from rlark_tui.jobspec.manifest import manifest_findings
from rlark_tui.model.submission import (
    SUBMITTED_AT_ANNOTATION,
    SUBMITTED_SPEC_ANNOTATION,
    SUBMITTED_SPEC_SHA256_ANNOTATION,
    canonical_spec,
    spec_sha256,
    submitted_record,
    with_submission_record,
)
from tests.cluster.seeding import ROLES, job_manifest

NODES = [{"metadata": {"name": "gpu-a1", "namespace": "rlark-gpu-a",
                       "labels": {"kubernetes.io/hostname": "gpu-a1"}}},
         {"metadata": {"name": "edge-b1", "namespace": "rlark-edge-b",
                       "labels": {"kubernetes.io/hostname": "edge-b1"}}}]


def test_canonical_spec_ignores_key_order():
    assert canonical_spec({"b": 1, "a": [2, {"d": 3, "c": 4}]}) == '{"a":[2,{"c":4,"d":3}],"b":1}'
    assert spec_sha256({"b": 1, "a": 2}) == spec_sha256({"a": 2, "b": 1})


def test_record_is_added_beside_other_annotations_without_touching_the_input():
    manifest = job_manifest("rec", ROLES)
    manifest["metadata"]["annotations"] = {"rlark.io/launch-record": "{}"}
    original = copy.deepcopy(manifest)
    job = with_submission_record(manifest, now=datetime(2026, 11, 29, 10, 0, tzinfo=UTC))
    assert manifest == original
    notes = job["metadata"]["annotations"]
    assert notes["rlark.io/launch-record"] == "{}"
    assert notes[SUBMITTED_SPEC_ANNOTATION] == canonical_spec(manifest["spec"])
    assert notes[SUBMITTED_SPEC_SHA256_ANNOTATION] == spec_sha256(manifest["spec"])
    assert notes[SUBMITTED_AT_ANNOTATION] == "2026-11-29T10:00:00Z"
    record = submitted_record(job)
    assert record.intact and record.matches_live and record.spec == manifest["spec"]


def test_record_reports_a_changed_live_spec_and_a_tampered_record():
    job = with_submission_record(job_manifest("rec", ROLES))
    edited = copy.deepcopy(job)
    edited["spec"]["tasks"][0]["nodeSelector"] = {"kubernetes.io/hostname": "gpu-a2"}
    assert submitted_record(edited).intact and not submitted_record(edited).matches_live
    tampered = copy.deepcopy(job)
    tampered["metadata"]["annotations"][SUBMITTED_SPEC_SHA256_ANNOTATION] = "0" * 64
    assert not submitted_record(tampered).intact
    assert submitted_record({"metadata": {}}).spec is None


@pytest.mark.parametrize("change, level, field", [
    (lambda m: m["spec"].update(tasks=[]), "error", "spec.tasks"),
    (lambda m: m["spec"]["tasks"][0].update(nodeSelector={}), "error", "spec.tasks[0].nodeSelector"),
    (lambda m: m["spec"]["tasks"][0].update(nodeSelector={"kubernetes.io/hostname": "nowhere"}), "error",
     "spec.tasks[0].nodeSelector"),
    (lambda m: m["spec"]["tasks"][0].update(head=False), "warning", "spec.tasks"),
    (lambda m: m["spec"]["tasks"][1].update(head=True), "warning", "spec.tasks"),
    (lambda m: m["metadata"].update(name="demo-ppo"), "error", "metadata.name"),
])
def test_manifest_findings(change, level, field):
    manifest = job_manifest("ok", ROLES)
    assert manifest_findings(manifest, NODES, [{"metadata": {"name": "demo-ppo"}}]) == []
    change(manifest)
    findings = manifest_findings(manifest, NODES, [{"metadata": {"name": "demo-ppo"}}])
    assert [(f.level, f.field) for f in findings] == [(level, field)]
