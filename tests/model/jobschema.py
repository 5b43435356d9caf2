"""The Job CRD's openAPIV3Schema, read from ../shared at test time, as a validator for rendered manifests.

Adds the Kubernetes list-map rule (unique keys, e.g. env and volume names) that plain JSON Schema lacks.
"""

from __future__ import annotations

import functools
from pathlib import Path

import jsonschema
import yaml

SHARED = Path(__file__).resolve().parents[3] / "shared"
JOB_CRD = SHARED / "spec" / "crds" / "rlinf.io_jobs.yaml"


def _list_map(validator, list_type, instance, schema):
    if list_type != "map" or not isinstance(instance, list):
        return
    seen = set()
    for item in instance:
        key = tuple(item.get(k) for k in schema.get("x-kubernetes-list-map-keys", ())) if isinstance(item, dict) \
            else None
        if key in seen:
            yield jsonschema.ValidationError(f"duplicate list-map key {key}")
        seen.add(key)


@functools.cache
def crd_validator(plural: str) -> jsonschema.protocols.Validator:
    """Validator for `rlinf.io_<plural>.yaml` (jobs, nodes, ...), Kubernetes list-map rule included."""
    path = JOB_CRD.with_name(f"rlinf.io_{plural}.yaml")
    assert path.is_file(), f"{path} is missing: the shared/ specs must sit beside the repository"
    crd = yaml.load(path.read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    base = jsonschema.validators.validator_for(schema)
    kube = jsonschema.validators.extend(base, {"x-kubernetes-list-type": _list_map})
    return kube(schema)


def schema_errors(manifest: dict) -> list[str]:
    """Every schema violation of a Job manifest, as `path: message` lines (empty when valid)."""
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}"
            for e in crd_validator("jobs").iter_errors(manifest)]


def assert_valid_job(manifest: dict) -> None:
    errors = schema_errors(manifest)
    assert not errors, "\n".join(errors)
    for task in manifest["spec"]["tasks"]:
        assert "metadata" not in task["kubernetes"]["workload"]["template"], "template.metadata is pruned by kcp"
