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
    for key in ("items", "additionalProperties"):
        if key in ours:
            if not isinstance(theirs.get(key), dict):
                problems.append(f"{path}: {key} missing in the CRD")
            else:
                compare(ours[key], theirs[key], f"{path}[]" if key == "items" else f"{path}{{}}", problems)


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
