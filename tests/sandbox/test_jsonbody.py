"""The sandbox reads a request body's JSON as the platform's Go servers do (rlark_sandbox/jsonbody.py): its reader of
bodies nested deeper than Python decodes takes and refuses what Python's decoder takes and refuses (but NaN and
Infinity, which Go refuses too), and nests to Go's 10,000 levels."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rlark_sandbox import jsonbody


def python_takes(text: str) -> bool:
    def refuse(name):
        raise ValueError(name)

    try:
        json.loads(text, parse_constant=refuse)
    except ValueError:
        return False
    return True


def deep_reader_takes(text: str) -> bool:
    try:
        jsonbody._check(text)
    except ValueError:
        return False
    return True


@settings(max_examples=150, deadline=None)
@given(st.text('[]{},:" \n01-.eE+tru\\fansINfy', max_size=14))
def test_the_deep_reader_takes_what_pythons_decoder_takes(text):
    assert deep_reader_takes(text) == python_takes(text)


def test_a_body_nests_to_gos_depth_and_no_further():
    assert isinstance(jsonbody.loads(("[" * 10_000 + "]" * 10_000).encode()), list)
    with pytest.raises(ValueError, match="exceeded max depth"):
        jsonbody.loads(("[" * 10_001 + "]" * 10_001).encode())
    with pytest.raises(ValueError):
        jsonbody.loads(("[" * 5_000 + "1,]" + "]" * 4_999).encode())
