"""text/patterns.py: patterns from outside run under a time budget, refuse bad text in one line, and the
nested-quantifier warning finds the catastrophic shapes without flagging ordinary ones."""

from __future__ import annotations

import time

import pytest

from rlark_tui.text import patterns
from rlark_tui.text.patterns import Deadline, PatternError, PatternTooSlow, compile_pattern, has_nested_quantifier

NEAR_MISS = "Global Step: " + "a" * 34 + "!"


def test_a_catastrophic_pattern_stops_at_the_budget():
    slow = compile_pattern(r"^Global Step: (a|aa)+$")
    started = time.monotonic()
    with pytest.raises(PatternTooSlow, match=r"^pattern '\^Global Step: \(a\|aa\)\+\$' is too slow \(stopped after "
                                             r"0.2 s\)$"):
        patterns.search(slow, NEAR_MISS, budget=0.2)
    assert time.monotonic() - started < 2.0


def test_a_deadline_is_shared_by_every_line():
    slow = compile_pattern(r"(a|aa)+$")
    deadline = Deadline(0.3)
    started = time.monotonic()
    with pytest.raises(PatternTooSlow):
        list(patterns.search_lines(slow, [NEAR_MISS] * 50, deadline))
    assert time.monotonic() - started < 2.0


def test_ordinary_patterns_match_as_re_does():
    progress = compile_pattern(r"Global Step:\s*(\d+)/(\d+)")
    found = patterns.search(progress, "x Global Step: 3/10 y")
    assert found.groups() == ("3", "10")
    assert [m.group(0) for m in patterns.finditer("a.", "ab ac ad")] == ["ab", "ac", "ad"]
    assert patterns.search(compile_pattern("ERROR", ignore_case=True), "an error") is not None
    assert [i for i, _ in patterns.search_lines("^x", ["x1", "y", "x2"])] == [0, 2]


@pytest.mark.parametrize("text, message", [
    ("(unclosed", "is not a valid regular expression: missing ) at position 9"),
    ("a" * 5000, "is longer than 4096 characters"),
], ids=["unclosed", "too-long"])
def test_bad_patterns_are_one_line(text, message):
    with pytest.raises(PatternError) as refused:
        compile_pattern(text)
    assert str(refused.value) == message


@pytest.mark.parametrize("text", [r"(a+)+$", r"^Global Step: (a+)+$", r"(\w*,)*x", r"((ab)*c)+", r"(a|b+){2,}",
                                  r"([a-z]+\d*)*"])
def test_nested_quantifiers_are_found(text):
    assert has_nested_quantifier(text)


@pytest.mark.parametrize("text", [r"Global Step:\s*(\d+)/(\d+)", r"(ab)+", r"(a+)?", r"(a+){1}", r"[(+)]+",
                                  r"\(a+\)+", r"(?:x\d+)", r"(a){2,}b+"])
def test_ordinary_shapes_are_not(text):
    assert not has_nested_quantifier(text)
