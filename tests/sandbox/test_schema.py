"""The sandbox's own structural schema agrees with the real CRDs (../shared/spec/crds) on RLark's fields.
Types, formats, required fields, list-map keys and property sets are compared path by path.
"""

from __future__ import annotations

import functools
from pathlib import Path

import pytest
import yaml

from rlark_sandbox import schema

CRDS = Path(__file__).resolve().parents[2] / ".." / "shared" / "spec" / "crds"
COMPARED = ("type", "format", "required", "x-kubernetes-list-type", "x-kubernetes-list-map-keys",
            "x-kubernetes-int-or-string", "enum")


@functools.cache
def crd_schema(plural: str) -> dict:
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    doc = yaml.load((CRDS / f"rlinf.io_{plural}.yaml").read_text(), Loader=loader)
    return doc["spec"]["versions"][0]["schema"]["openAPIV3Schema"]


def compare(ours: dict, theirs: dict, path: str, problems: list[str]) -> None:
    for key in COMPARED:
        if ours.get(key) != theirs.get(key) and not (key == "required" and not ours.get(key)
                                                     and not theirs.get(key)):
            problems.append(f"{path}: {key} ours={ours.get(key)!r} crd={theirs.get(key)!r}")
    if "properties" in ours:
        props = theirs.get("properties", {})
        if not ours.get("open") and set(ours["properties"]) != set(props):
            problems.append(f"{path}: properties differ: ours only {sorted(set(ours['properties']) - set(props))}, "
                            f"crd only {sorted(set(props) - set(ours['properties']))}")
        for name, sub in ours["properties"].items():
            if name in props:
                compare(sub, props[name], f"{path}.{name}", problems)
            else:
                problems.append(f"{path}.{name}: not in the CRD")
    elif theirs.get("properties") and not ours.get("open"):
        problems.append(f"{path}: the CRD has properties {sorted(theirs['properties'])}, ours none")
    if ours.get("open") and ours.get("levels") != levels(theirs) and not path.endswith(".metadata"):
        problems.append(f"{path}: unknown fields kept to {ours.get('levels')} levels, the CRD admits {levels(theirs)}")
    for key in ("items", "additionalProperties"):
        if key in ours:
            if not isinstance(theirs.get(key), dict):
                problems.append(f"{path}: {key} missing in the CRD")
            else:
                compare(ours[key], theirs[key], f"{path}[]" if key == "items" else f"{path}{{}}", problems)


def levels(schema: dict) -> int:
    """How deep a value `schema` admits nests (an object or array is one level, a scalar none)."""
    below = [*schema.get("properties", {}).values(), *(schema[key] for key in ("items", "additionalProperties")
                                                        if isinstance(schema.get(key), dict))]
    return 1 + max(map(levels, below), default=0) if schema.get("type") in ("object", "array") else 0


@pytest.mark.parametrize("plural", ["jobs", "tasks", "pods", "nodes", "domains", "workflows"])
def test_schema_matches_crd(plural):
    problems: list[str] = []
    compare(schema.SCHEMAS[plural], crd_schema(plural), plural, problems)
    assert problems == []


def test_checker_reports_like_an_apiserver():
    bad = {"metadata": {"name": "ok"}, "spec": {"tasks": [{"role": 3, "kubernetes": {"workload": {
        "replicas": "2", "template": {"spec": {"containers": [{"name": "main", "env": [
            {"name": "A"}, {"name": "A"}], "resources": {"limits": {"nvidia.com/gpu": "lots"}}}]}}}}}]}}
    checked = schema.check("jobs", bad)
    fields = {c.field: c.reason for c in checked.causes}
    prefix = "spec.tasks[0].kubernetes.workload"
    assert fields == {
        "spec.tasks[0].role": "FieldValueTypeInvalid",
        f"{prefix}.replicas": "FieldValueTypeInvalid",
        f"{prefix}.template.spec.containers[0].env[1]": "FieldValueDuplicate",
        f"{prefix}.template.spec.containers[0].resources.limits.nvidia.com/gpu": "FieldValueInvalid",
    }
    good = {"metadata": {"name": "ok", "labels": {"a": "b"}}, "spec": {"tasks": [{"role": "Env", "extra": 1}]}}
    checked = schema.check("jobs", good)
    assert checked.causes == [] and checked.unknown == ["spec.tasks[0].extra"]
    assert checked.obj["spec"]["tasks"] == [{"role": "Env"}] and checked.obj["metadata"]["labels"] == {"a": "b"}


def test_a_field_deeper_than_a_real_pod_spec_admits_is_pruned_as_a_real_apiserver_prunes_it():
    """The pod template's spec is described in part and keeps the rest, but only as deep as the CRD's PodSpec
    admits: a Job's field 400 levels deep there was stored and served to rlark (one of 600 answered 500), which a
    real apiserver prunes (no rlinf.io CRD keeps unknown fields), so no real Job nests past the CRD's 18 levels."""
    deep: dict = {}
    for _ in range(900):
        deep = {"x": deep}
    affinity = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}]}}}
    job = {"metadata": {"name": "deep"}, "spec": {"tasks": [{"role": "Env", "kubernetes": {"workload": {"template": {
        "spec": {"affinity": affinity, "deep": deep, "volumes": [{"name": "v", "deep": deep}],
                 "containers": [{"name": "main", "deep": deep, "env": [{"name": "A", "deep": deep}]}]}}}}}]}}
    checked = schema.check("jobs", job)
    spec = "spec.tasks[0].kubernetes.workload.template.spec"
    assert checked.causes == [] and sorted(checked.unknown) == [
        f"{spec}.containers[0].deep", f"{spec}.containers[0].env[0].deep", f"{spec}.deep", f"{spec}.volumes[0].deep"]
    assert checked.obj["spec"]["tasks"][0]["kubernetes"]["workload"]["template"]["spec"] == {
        "affinity": affinity, "volumes": [{"name": "v"}], "containers": [{"name": "main", "env": [{"name": "A"}]}]}
