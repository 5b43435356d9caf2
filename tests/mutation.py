"""Changing one place of a nested draft or manifest, for the fuzz tests."""

from __future__ import annotations

import copy


def mutate(mapping: dict, path: str, value) -> dict:
    """A copy of `mapping` with the value at dotted `path` (list indexes as numbers) replaced; unchanged when
    the path does not lead anywhere."""
    data = copy.deepcopy(mapping)
    steps = [int(s) if s.isdigit() else s for s in path.split(".")]
    target = data
    for step in steps[:-1]:
        try:
            target = target[step]
        except (KeyError, IndexError, TypeError):
            return data
    if isinstance(target, list) and isinstance(steps[-1], int):
        if steps[-1] < len(target):
            target[steps[-1]] = value
    elif isinstance(target, dict):
        target[steps[-1]] = value
    return data
