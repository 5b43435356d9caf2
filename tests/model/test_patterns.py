"""text/patterns.py: patterns from outside run under a time budget, refuse bad text in one line, and the
nested-quantifier warning finds the catastrophic shapes without flagging ordinary ones."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time

import pytest

from rlark_tui.text import patterns
from rlark_tui.text.patterns import (
    Deadline,
    PatternError,
    PatternTooSlow,
    compile_pattern,
    has_nested_quantifier,
    refusal,
)

NEAR_MISS = "Global Step: " + "a" * 34 + "!"


def test_a_catastrophic_pattern_stops_at_the_budget():
    slow = compile_pattern(r"^Global Step: (a|aa)+$")
    started = time.thread_time()  # CPU, not wall time: a loaded machine stretches the second, not the work
    with pytest.raises(PatternTooSlow, match=r"^pattern '\^Global Step: \(a\|aa\)\+\$' is too slow \(stopped after "
                                             r"0.2 s\)$"):
        patterns.search(slow, NEAR_MISS, budget=0.2)
    assert time.thread_time() - started < 2.0, "the search went on past its budget"


def test_a_deadline_is_shared_by_every_line():
    slow = compile_pattern(r"(a|aa)+$")
    deadline = Deadline(0.3)
    started = time.thread_time()  # CPU, not wall time: a loaded machine stretches the second, not the work
    with pytest.raises(PatternTooSlow):
        list(patterns.search_lines(slow, [NEAR_MISS] * 50, deadline))
    assert time.thread_time() - started < 2.0, "the lines went on past their shared budget"


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


NESTED = "(((a{100}){100}){100}){100}"


def test_nested_counted_repeats_are_refused_in_one_line_before_compiling():
    """`(((a{100}){100}){100}){100}` would make the compiler unroll 10^8 copies: it is refused from its text
    alone, in a child whose address space is capped (RLIMIT_AS) a few MB above what it holds, without growing."""
    child = textwrap.dedent(f"""\
        import resource
        from rlark_tui.text import patterns
        patterns._regex()  # the engine itself is loaded first: only the refusal runs under the cap
        with open("/proc/self/status") as status:
            size = next(int(line.split()[1]) * 1024 for line in status if line.startswith("VmSize:"))
        resource.setrlimit(resource.RLIMIT_AS, (size + 64 * 2**20, resource.RLIM_INFINITY))
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        try:
            patterns.compile_pattern({NESTED!r})
        except patterns.PatternError as exc:
            print(exc)
        print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before)
    """)
    done = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    said, grew_kb = done.stdout.splitlines()
    assert said == "is refused: its counted repeats, nested ones multiplied, ask for more than 10000 copies " \
                   "(1000000 so far)"
    assert int(grew_kb) < 2048


@pytest.mark.parametrize("text", ["a{100000}", "(a{100}){101}", "((a{200})+){60}", "(?R)", "a(?1)b",
                                  "(?P<n>a)(?P>n)", "(?&n)"])
def test_a_pattern_too_large_by_structure_or_recursive_is_refused(text):
    with pytest.raises(PatternError) as refused:
        compile_pattern(text)
    assert str(refused.value).startswith("is refused: ") and "\n" not in str(refused.value)


@pytest.mark.parametrize("text", [
    "(?x)(((a{100}) {100}) {100}) {100}", "(?x)((a{100})#c\n{100})", "x(?x)y", "(?-x:(a{100}) {100})", "(?V1)a",
    "((a{100}){100}(?#()){100}", "((a{100}){100}[[:alpha:](]){100}", "a{9999}" * 11, "(a{9999}|b{9999})" * 6])
def test_a_count_hidden_from_the_scan_or_repeats_side_by_side_are_refused(text):
    """Issue 33, a third round: whitespace or a comment between an atom and its count under the verbose flag,
    a `(` in a `(?#...)` comment or after a POSIX class in a set (`[[:alpha:](]`), the scan's groups then not the
    engine's, hid a product of 10^6 (292 MB when compiled; one level more, 10^8, past 3 GB), and 500 `a{9999}`
    side by side compiled to 1.3 GB though each was under the product's bound."""
    with pytest.raises(PatternError) as refused:
        compile_pattern(text)
    assert str(refused.value).startswith("is refused: ") and "\n" not in str(refused.value)


@pytest.mark.parametrize("text", [r"\d{4}-\d{2}-\d{2}", r"(\d{1,3}\.){3}\d{1,3}", "(a{100}){100}", "[{]{5}",
                                  r"\{99999\}", "a{99999", "(a{100})*", "(?:x)(?P<n>y)(?P=n)",
                                  "[[:alpha:]]{3}", "(?i)step(?#a comment)", "a{9999}" * 10, "(?P<x>a)"])
def test_ordinary_counted_repeats_and_literal_braces_still_compile(text):
    assert refusal(text) == ""
    compile_pattern(text)


def test_a_repeated_group_over_a_long_line_is_matched_within_a_memory_bound():
    """Issue 33, a third round: the engine keeps a backtrack entry and every capture for every round of a
    repeated group, so `(?:ab)*$` over a 16 MiB log line (a filter, a progress pattern) took 562 MB, and `(.)*` or
    `(?:(a)|(b))*` asked for 3.5 GB within its one second (MemoryError under a 4 GB cap). In a child capped 192 MB
    above what it holds, each is matched within MAX_REPEAT_TEXT (shared by the capturing groups) and finds what
    it finds there; a pattern that repeats no group sees the whole line."""
    child = textwrap.dedent("""\
        import resource
        from rlark_tui.text import patterns
        line = "ab" * (1 << 23)
        patterns.compile_pattern("x")
        with open("/proc/self/status") as status:
            size = next(int(line.split()[1]) * 1024 for line in status if line.startswith("VmSize:"))
        resource.setrlimit(resource.RLIMIT_AS, (size + 192 * 2**20, resource.RLIM_INFINITY))
        for text in ["(?:ab)*", "(.)*", "(?:(a)|(b))*", "(" * 60 + "." + ")" * 60 + "*"]:
            found = patterns.search(text, line)
            print(found.span() == (0, patterns.MAX_REPEAT_TEXT // max(patterns.compile_pattern(text).groups, 1)))
        print(patterns.search("[ab]*$", line).span() == (0, len(line)))
        print(patterns.search("b(a)b", line, pos=5).span() == (5, 8))
    """)
    done = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["True"] * 6


def test_a_repeat_of_more_than_one_character_is_matched_within_the_same_memory_bound():
    """Issue 33, a twenty-fourth round (generated patterns of 7-12 characters): a repeat of something wider than
    one character that is no group, a grapheme (`\\X*`), a backreference (`(ab)\\1*`, `\\g<1>`) or a letter under
    full case folding (`(?fi)ß*`, which matches `ss`), keeps a backtrack entry a round as a repeated group does, and
    saw the whole 16 MiB line: 410-570 MB within the budget, `(?>\\X*)` and `(a)\\1*$` over 6 GB (MemoryError under
    the cap). Each now sees MAX_REPEAT_TEXT of the line."""
    child = textwrap.dedent("""\
        import resource
        from rlark_tui.text import patterns
        lines = {"a": "ab" * (1 << 23), "s": "s" * (1 << 24)}
        patterns.compile_pattern("x")
        with open("/proc/self/status") as status:
            size = next(int(line.split()[1]) * 1024 for line in status if line.startswith("VmSize:"))
        resource.setrlimit(resource.RLIMIT_AS, (size + 192 * 2**20, resource.RLIM_INFINITY))
        for line, text in [("a", r"\\X*$"), ("a", r"(?>\\X*)"), ("a", r"(ab)\\1*$"), ("a", r"(ab)\\g<1>*+$"),
                           ("s", r"(?fi)ß*$"), ("s", r"(?fi:[ßx]*)$")]:
            found = patterns.search(text, lines[line])
            print(found is not None and found.end() <= patterns.MAX_REPEAT_TEXT)
    """)
    done = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["True"] * 6
