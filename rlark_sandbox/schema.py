"""Structural schema of RLark's own fields (Job, Task, Pod, Node, Domain) and the apiserver-like validation
and pruning the sandbox applies to created and updated objects (422 causes, unknown fields).

The schema is written here by hand in the CRDs' OpenAPI vocabulary (type, properties, items, required,
additionalProperties, format, x-kubernetes-list-type / -list-map-keys); tests/sandbox/test_schema.py checks
it against ../shared/spec/crds. The pod template's `spec` is core Kubernetes: only the parts RLark relies on
are described (containers, initContainers, volumes, env, volumeMounts, resources) and other fields are kept
("open": True, i.e. not pruned), each only as deep as the CRD's schema admits there ("levels": the object's
nesting, itself one level): a value nested deeper is no field of the real PodSpec, and a real apiserver prunes it
(a Job's field 400 levels deep under the template was stored and served, one of 600 answered 500 Internal Server
Error: a real apiserver prunes both, with a warning). `template.metadata` has no
properties, so everything in it is pruned, as kcp does.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from rlark_tui.text.parse import nested_deeper

STR = {"type": "string"}
BOOL = {"type": "boolean"}
INT32 = {"type": "integer", "format": "int32"}
INT64 = {"type": "integer", "format": "int64"}
NUMBER = {"type": "number"}
DATE = {"type": "string", "format": "date-time"}
QUANTITY = {"x-kubernetes-int-or-string": True}


def obj(props: dict | None = None, required: tuple = (), **extra) -> dict:
    schema = {"type": "object", **extra}
    if props is not None:
        schema["properties"] = props
    if required:
        schema["required"] = list(required)
    return schema


def arr(items: dict, map_keys: tuple = ()) -> dict:
    schema = {"type": "array", "items": items}
    if map_keys:
        schema["x-kubernetes-list-type"] = "map"
        schema["x-kubernetes-list-map-keys"] = list(map_keys)
    return schema


STR_MAP = obj(additionalProperties=STR)
RESOURCE_LIST = obj(additionalProperties=QUANTITY)
NAME_VALUE = obj({"name": STR, "value": STR})
CONDITION = obj({"lastTransitionTime": DATE, "message": STR, "observedGeneration": INT64, "reason": STR,
                 "status": {"type": "string", "enum": ["True", "False", "Unknown"]}, "type": STR},
                required=("lastTransitionTime", "message", "reason", "status", "type"))
NODE_EVENT = obj({"count": INT32, "lastTime": DATE, "message": STR, "objectKind": STR, "objectName": STR,
                  "reason": STR, "source": STR, "type": STR}, required=("reason", "type"))
PULL_PROGRESS = obj({"downloaded": INT64, "image": STR, "message": STR, "speed": NUMBER, "status": STR,
                     "total": INT64}, required=("downloaded", "image", "speed", "status", "total"))

CONTAINER = obj({
    "name": STR,
    "image": STR,
    "env": arr(obj({"name": STR, "value": STR}, required=("name",), open=True, levels=3), ("name",)),
    "volumeMounts": arr(obj({"name": STR, "mountPath": STR}, required=("mountPath", "name"), open=True,
                            levels=1), ("mountPath",)),
    "resources": obj({"limits": RESOURCE_LIST, "requests": RESOURCE_LIST}, open=True, levels=3),
}, required=("name",), open=True, levels=6)

POD_SPEC = obj({
    "containers": arr(CONTAINER, ("name",)),
    "initContainers": arr(CONTAINER, ("name",)),
    "volumes": arr(obj({"name": STR}, required=("name",), open=True, levels=9), ("name",)),
}, required=("containers",), open=True, levels=11)

TASK_FIELDS = {
    "agentType": STR,
    "docker": obj({"containers": arr(obj({
        "args": arr(STR), "command": arr(STR), "environment": arr(NAME_VALUE), "image": STR, "name": STR,
        "volumes": arr(obj({"source": STR, "target": STR}))}))}),
    "domain": STR,
    "downstreamName": STR,
    "kubernetes": obj({"workload": obj({
        "kind": STR,
        "pvcStorageMap": STR_MAP,
        "replicas": INT32,
        "template": obj({"metadata": obj(), "spec": POD_SPEC}),
    })}),
    "nodeSelector": STR_MAP,
    "prepareScript": STR,
    "raw": obj({"artifact": STR, "entrypoint": arr(STR), "environment": arr(NAME_VALUE)}),
    "role": STR,
    "runScript": STR,
    "sshPublicKey": STR,
    "tensorBoardDir": STR,
}


def top(spec: dict, status: dict) -> dict:
    return obj({"apiVersion": STR, "kind": STR, "metadata": obj(open=True), "spec": spec, "status": status})


JOB_SPEC = obj({"domain": STR, "sshPublicKey": STR, "stopped": BOOL,
               "tasks": arr(obj({"name": STR, "head": BOOL, **TASK_FIELDS}, required=("role",)))})

SCHEMAS = {
    "jobs": top(
        JOB_SPEC,
        obj({"conditions": arr(CONDITION), "endTime": DATE, "phase": STR, "startTime": DATE,
             "tasks": arr(obj({"message": STR, "name": STR, "phase": STR}))})),
    "tasks": top(
        obj(TASK_FIELDS, required=("role",)),
        obj({"completionTime": DATE, "conditions": arr(CONDITION), "events": arr(NODE_EVENT), "message": STR,
             "observedNodes": arr(STR), "phase": STR, "pullProgress": arr(PULL_PROGRESS), "retryCount": INT32,
             "startTime": DATE, "tensorBoardProxy": STR})),
    "pods": top(
        obj({"domain": STR, "podName": STR, "podNamespace": STR, "taskName": STR, "taskNamespace": STR}),
        obj({"ip": STR, "message": STR, "node": STR, "phase": STR})),
    "nodes": top(
        obj({"agentType": STR, "unschedulable": BOOL}),
        obj({"addresses": arr(obj({"address": STR, "type": STR}, required=("address", "type"))),
             "allocatable": RESOURCE_LIST, "capacity": RESOURCE_LIST, "diskPressure": BOOL,
             "events": arr(NODE_EVENT),
             "nodeInfo": obj({"agentVersion": STR, "architecture": STR, "kernelVersion": STR,
                              "operatingSystem": STR}),
             "phase": STR, "pullProgress": arr(PULL_PROGRESS), "reason": STR, "used": RESOURCE_LIST})),
    "workflows": top(
        obj({"jobTemplates": arr(obj({"dependencies": arr(STR), "name": STR, "spec": JOB_SPEC}))}),
        obj({"conditions": arr(CONDITION), "endTime": DATE,
             "jobs": arr(obj({"message": STR, "name": STR, "phase": STR})), "phase": STR, "startTime": DATE})),
    "domains": top(
        obj({"cidr": STR}),
        obj({"ipAllocations": arr(obj({"ip": STR, "job": STR, "pod": STR, "task": STR}))})),
}

METADATA_FIELDS = {"name", "generateName", "namespace", "uid", "resourceVersion", "generation",
                   "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "labels",
                   "annotations", "ownerReferences", "finalizers", "managedFields", "selfLink"}

_DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_QUANTITY = re.compile(r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|"
                       r"([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$")


@dataclass(frozen=True)
class Cause:
    reason: str
    field: str
    message: str

    def as_dict(self) -> dict:
        return {"reason": self.reason, "message": self.message, "field": self.field}


def _json_type(value) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return "null"


def _show(value) -> str:
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, bool):
        return "true" if value else "false"
    return _json_type(value) if isinstance(value, (dict, list)) else str(value)


class _Walker:
    def __init__(self) -> None:
        self.causes: list[Cause] = []
        self.unknown: list[str] = []

    def invalid_type(self, path: str, value, want: str) -> None:
        got = _json_type(value)
        self.causes.append(Cause("FieldValueTypeInvalid", path,
                                 f'Invalid value: "{got}": {path} in body must be of type {want}: "{got}"'))

    def walk(self, value, schema: dict, path: str):
        """Validate `value`; return it with unknown fields pruned."""
        if value is None:
            return None
        if schema.get("x-kubernetes-int-or-string"):
            if isinstance(value, bool) or not isinstance(value, (int, str)):
                self.causes.append(Cause("FieldValueTypeInvalid", path,
                                         f'Invalid value: "{_json_type(value)}": {path} in body must be of '
                                         "type integer,string"))
            elif isinstance(value, str) and not _QUANTITY.match(value):
                self.causes.append(Cause("FieldValueInvalid", path,
                                         f'Invalid value: "{value}": {path} in body should match '
                                         f"'{_QUANTITY.pattern}'"))
            return value
        want = schema.get("type")
        got = _json_type(value)
        if want == "number" and got == "integer":
            got = "number"
        if want and got != want:
            self.invalid_type(path, value, want)
            return value
        if "enum" in schema and value not in schema["enum"]:
            allowed = ", ".join(f'"{v}"' for v in schema["enum"])
            self.causes.append(Cause("FieldValueNotSupported", path,
                                     f"Unsupported value: {_show(value)}: supported values: {allowed}"))
        if want == "integer" and schema.get("format") == "int32" and not -2**31 <= value < 2**31:
            self.causes.append(Cause("FieldValueInvalid", path,
                                     f"Invalid value: {value}: {path} in body must be of format int32"))
        if want == "array":
            return self._array(value, schema, path)
        if want == "object":
            return self._object(value, schema, path)
        return value

    def _array(self, value: list, schema: dict, path: str) -> list:
        items = schema["items"]
        out = [self.walk(item, items, f"{path}[{i}]") for i, item in enumerate(value)]
        keys = schema.get("x-kubernetes-list-map-keys")
        if keys:
            seen: set[tuple] = set()
            for i, item in enumerate(out):
                if not isinstance(item, dict):
                    continue
                key = tuple(item.get(k) for k in keys)
                if key in seen:
                    shown = ", ".join(f'"{k}":{_show(item.get(k))}' for k in keys)
                    self.causes.append(Cause("FieldValueDuplicate", f"{path}[{i}]",
                                             f"Duplicate value: map[string]interface {{}}{{{shown}}}"))
                seen.add(key)
        return out

    def _object(self, value: dict, schema: dict, path: str) -> dict:
        props = schema.get("properties")
        extra = schema.get("additionalProperties")
        out = {}
        for name in schema.get("required", ()):
            if value.get(name) is None:
                self.causes.append(Cause("FieldValueRequired", _join(path, name), "Required value"))
        for key, item in value.items():
            sub = _join(path, key)
            if props is not None and key in props:
                out[key] = self.walk(item, props[key], sub)
            elif extra is not None:
                out[key] = self.walk(item, extra, sub)
            elif schema.get("open") and not ("levels" in schema and nested_deeper(item, schema["levels"] - 1)):
                out[key] = item
            else:
                self.unknown.append(sub)
        return out


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


@dataclass
class Checked:
    obj: dict
    causes: list[Cause]
    unknown: list[str]


def check(resource: str, obj: dict) -> Checked:
    """Validate and prune one rlinf.io object of `resource` (a plural); metadata.name is checked too."""
    walker = _Walker()
    schema = SCHEMAS.get(resource)
    pruned = walker.walk(obj, schema, "") if schema else dict(obj)
    given = obj.get("metadata")
    meta = given if isinstance(given, dict) else {}
    for key in meta:
        if key not in METADATA_FIELDS:
            walker.unknown.append(f"metadata.{key}")
            pruned["metadata"].pop(key, None)
    name = meta.get("name")
    if isinstance(name, str) and name and (len(name) > 253 or not _DNS1123_SUBDOMAIN.match(name)):
        walker.causes.insert(0, Cause(
            "FieldValueInvalid", "metadata.name",
            f'Invalid value: "{name}": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric '
            "characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', "
            "regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"))
    return Checked(pruned, walker.causes, walker.unknown)
