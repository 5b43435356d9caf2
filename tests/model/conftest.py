"""Fixtures for the model tests: the sample Node list and a valid RL draft from tests/model/data."""

from __future__ import annotations

import copy
import re
from pathlib import Path

import pytest
import yaml

from rlark_tui.jobspec.build import parse_nodes

DATA = Path(__file__).parent / "data"
DELETE = object()


@pytest.fixture(scope="session")
def nodes_text() -> str:
    return (DATA / "nodes.yaml").read_text()


@pytest.fixture(scope="session")
def nodes(nodes_text) -> list[dict]:
    return parse_nodes(nodes_text)


@pytest.fixture
def good_mapping() -> dict:
    return yaml.safe_load((DATA / "draft-rl.yaml").read_text())


def set_path(data: dict, path: str, value) -> dict:
    """A deep copy of `data` with `path` (e.g. `roles[1].selector`) set to `value` (or removed for DELETE)."""
    data = copy.deepcopy(data)
    steps = [int(s) if s.isdigit() else s for s in re.findall(r"[^.\[\]]+", path)]
    target = data
    for step in steps[:-1]:
        target = target[step]
    if value is DELETE:
        del target[steps[-1]]
    else:
        target[steps[-1]] = value
    return data
