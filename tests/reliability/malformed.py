"""Malformed API objects for the data-fault tests: a few hand-made ones to put into the sandbox, and `variants`,
which spoils a well-formed object one field at a time (each field replaced by a value of the wrong type)."""

from __future__ import annotations

import copy
from collections.abc import Iterator

from rlark_tui.model.objects import dig

BIG = "x" * 10 * 1024
WRONG_TYPES = ("text", 7, [], {"unexpected": 1}, None)


def _paths(obj, prefix: tuple = ()) -> Iterator[tuple]:
    if prefix:
        yield prefix
    if isinstance(obj, dict):
        for key, value in obj.items():
            yield from _paths(value, prefix + (key,))
    elif isinstance(obj, list) and obj:
        yield from _paths(obj[0], prefix + (0,))


def _replaced(obj: dict, path: tuple, value) -> dict:
    spoiled = copy.deepcopy(obj)
    parent = spoiled
    for step in path[:-1]:
        parent = parent[step]
    parent[path[-1]] = value
    return spoiled


def variants(obj: dict) -> Iterator[tuple[str, dict]]:
    """(description, spoiled copy) for every field below the root (first list entries only) and every wrong
    type; metadata.name is left alone (the API never lists an object without one)."""
    for path in _paths(obj):
        if path == ("metadata", "name"):
            continue
        for value in WRONG_TYPES:
            if type(value) is not type(dig(obj, *path)):
                yield f"{'.'.join(map(str, path))}={value!r}", _replaced(obj, path, value)


def sandbox_jobs() -> list[dict]:
    """Jobs the sandbox's API would refuse, stored directly: each breaks the shape another way."""
    return [
        {"metadata": {"name": "bad-no-status"}, "spec": {"tasks": [{"name": "actor", "head": True}]}},
        {"metadata": {"name": "bad-types", "labels": "not-a-map", "annotations": ["not", "a", "map"]},
         "spec": {"tasks": "not-a-list", "stopped": "yes", "domain": 5},
         "status": {"phase": 7, "tasks": {"actor": 1}, "startTime": 12}},
        {"metadata": {"name": "bad-task-types"},
         "spec": {"tasks": [{"name": 5, "head": "true", "nodeSelector": ["a"], "runScript": 7,
                             "kubernetes": {"workload": {"replicas": "many",
                                                         "template": {"spec": {"containers": {"main": 1}}}}}}]},
         "status": "Running"},
        {"metadata": {"name": "bad-unknown-fields", "labels": {"big": BIG},
                      "annotations": {"big": BIG, "rlark.io/launch-record": BIG}},
         "spec": {"tasks": [], "frobnicate": {"x": 1}}, "surplus": [1, 2],
         "status": {"phase": "Running", "weird": {"nested": [1]}}},
        {"metadata": {"name": "bad-spec-string"}, "spec": "not-a-map", "status": ["not-a-map"]},
    ]


def sandbox_nodes(cluster: str) -> list[dict]:
    return [
        {"metadata": {"name": "bad-node-types", "namespace": cluster, "labels": {"big": BIG},
                      "annotations": {"big": BIG}},
         "spec": ["not-a-map"],
         "status": {"phase": 3, "capacity": "lots", "allocatable": {"nvidia.com/gpu": "many"},
                    "addresses": "10.0.0.1"}},
        {"metadata": {"name": "bad-node-bare", "namespace": cluster}},
    ]


def sandbox_pod(cluster: str, task: str) -> dict:
    return {"metadata": {"name": "bad-pod-types", "namespace": cluster, "labels": {"rlark.io/task-name": task}},
            "spec": "not-a-map", "status": 5}
