"""C3's error scan: the whole-log first pass (literal starts of each pattern's alternatives) never hides a line a
pattern matches: error_hits gives what trying every pattern on every line gives."""

import array
import functools
import json
import re
import sys
from collections.abc import Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rlark_tui.checks import logscan

from . import fixtures

SAMPLES = ["ErrImagePull", "Failed to pull image x", "Error: Ray CLI is not found", "bash: foo: command not found",
           "No module named 'ray'", "No module named ray", "ImportError: cannot import ray", "import ray.x Error",
           "Network Interface eth0", "CANNOT ASSIGN REQUESTED ADDRESS", "Failed to connect to GCS",
           "failed to connect to the gcs at 10.0.0.1", "Unable To Connect To The GCS", "could not connect to x",
           "Temporary failure in name resolution", "connection refused", "head is not reachable",
           "did not become ready within 60 s", "request timed out", "TimeoutError: x", "timedout", "step 3 ok",
           "RLINF_NODE_RANK: 1", "İmport ray Error", "no module named  'ray'", ""]


def plain_hits(lines):
    hits = []
    for index, text in enumerate(lines):
        for what, pattern in logscan.ERROR_PATTERNS:
            if pattern.search(text):
                hits.append((what, logscan.Hit(index + 1, text)))
                break
    return hits


@functools.cache
def re_case_twins() -> dict[str, list[str]]:
    """Each character `re.IGNORECASE` takes for a printable ASCII one, found over every code point (found when a
    test asks, not at each xdist worker's collection). The code points are made one string by decoding them as
    UTF-32 (surrogates too), a fourth of the CPU of joining 1.1 million chr()s."""
    every = array.array("I", range(0x80, 0x110000)).tobytes().decode(f"utf-32-{sys.byteorder[0]}e", "surrogatepass")
    return {twin: [char for char in map(chr, range(0x20, 0x7F)) if re.fullmatch("(?i)" + re.escape(char), twin)]
            for twin in re.findall(r"(?i)[\x20-\x7e]", every)}


@functools.cache
def spellings() -> dict[str, list[str]]:
    """Each printable ASCII character that has twins, and its spellings: itself and each twin."""
    twins = re_case_twins()
    return {char: [char, *(twin for twin, chars in twins.items() if char in chars)]
            for char in {char for chars in twins.values() for char in chars}}


@st.composite
def respelled(draw, text):
    """`text` with each letter `re.IGNORECASE` takes another character for as it or as that (`ı`, `İ`, `ſ`, `K`)."""
    return "".join(draw(st.sampled_from(spellings()[char])) if char in spellings() else char for char in text)


def test_the_first_pass_knows_every_character_re_takes_for_an_ascii_one():
    """The run check's error scan skips a case-insensitive pattern whose texts the log, lower-cased, does not hold:
    a character `re.IGNORECASE` takes for an ASCII letter but str.lower makes no such letter (`ı`, `ſ`; `İ` lowers
    to two) hid a line the pattern matches, `Connectıon refused` or `request tİmed out`, from the check."""
    assert {(twin, letter) for twin, letters in re_case_twins().items() for letter in letters if letter.islower()} == set(
        logscan.RE_CASE_TWINS)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.lists(st.sampled_from(SAMPLES).flatmap(respelled), min_size=1, max_size=3).map(" ".join),
                max_size=12))
def test_error_hits_are_those_of_every_pattern_on_every_line(lines):
    assert logscan.error_hits(lines) == plain_hits(lines)


def test_each_pattern_has_a_first_pass_of_plain_text():
    assert all(isinstance(quick, tuple) and all(quick) for quick in logscan._ERROR_PREFILTERS)


SEARCHED = [logscan.HARD_FAILURES, logscan.SAVING_CHECKPOINT_RE, logscan.RUNNING_ON_RE, logscan.CONFIG_SUM_RE,
            logscan.RUN_ID_RE, logscan.DATA_VERSION_RE, logscan.PROGRESS_STEP_RE, logscan.version_re("torch")]
LINES = ["Traceback (most recent call last):", "Failed to load checkpoint x", "Failed to", "Saving checkpoint at step 3.",
         "RLinf is running on a cluster with 4 nodes", "config_sha256: " + "a" * 64, "run_id: x", "Traceback",
         "│ Global Step: 3/10 │", "step 3 ok", "two\nlines Traceback (most recent call last):", "İ │", "",
         "CONFİG_SHA256: " + "b" * 64, "confıg hash=" + "c" * 64, "DATA_VERSION: v2", "Torch version: 2.1", "RUN ıd=7"]


def plain_search(lines, pattern, start):
    for index in range(start, len(lines)):
        match = pattern.search(lines[index])
        if match:
            return logscan.Hit(index + 1, lines[index]), match.span()
    return None


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(LINES), max_size=12), st.sampled_from(SEARCHED), st.integers(0, 13))
def test_search_finds_the_line_trying_every_line_finds(lines, pattern, start):
    found = logscan.search(lines, pattern, start)
    assert (found and (found[0], found[1].span())) == plain_search(lines, pattern, start)


class CountedLines(tuple):
    """A log whose lines count each read of one line."""

    reads: list[int]

    def __getitem__(self, index):
        if isinstance(index, int):
            self.reads.append(index)
        return super().__getitem__(index)


def test_a_search_of_our_own_pattern_reads_no_line_that_cannot_match():
    """Issue 34 (bench checkeval): the outputs check looks for a hard failure (HARD_FAILURES) in the Header's log
    from the run script's start, each line tried in turn: 0.8 ms of the check's 17 for the bench's healthy
    1,000 lines. A search of one of our case-sensitive patterns starts at the first line that holds what a match
    starts with (a substring scan of the joined lines), and reads no line when none does."""
    lines = CountedLines(f"step {i} loss=0.{i} (RolloutWorker pid=7) generated" for i in range(1000))
    lines.reads = []
    assert logscan.search(lines, logscan.HARD_FAILURES, 25) is None
    assert lines.reads == []
    late = CountedLines([*lines[:990], "Traceback (most recent call last):", *lines[990:]])
    late.reads = []
    assert logscan.search(late, logscan.HARD_FAILURES, 25)[0] == logscan.Hit(991, "Traceback (most recent call last):")
    assert set(late.reads) == {990}
    lines.reads = []
    assert logscan.search(lines, logscan.CONFIG_SUM_RE, 25) is None  # case-insensitive: as re reads the case
    assert lines.reads == []


def config_trying_every_brace_line(lines, start=0):
    """The resolved config as the run check looked for it before: from each `{` line on to its matching close."""
    for index in range(start, len(lines)):
        if lines[index].rstrip() == "{":
            depth = 0
            for end in range(index, len(lines)):
                depth += lines[end].count("{") - lines[end].count("}")
                if depth <= 0:
                    block = logscan.config_block(lines, index, end)
                    if block is not None:
                        return block
                    break
    return None


BLOCK_LINES = ["{", "}", "{ ", "  {", "{}", "} {", "x", '"a":', ",", '"cluster": {}', '"cluster": {"n": 1},',
               '"\\u0063luster": {"n": 2}', '{"cluster": {"n": 3}}', '"cluster": 1', '"n": [', "]"]


def block_lines(picks: bytes) -> list[str]:
    """One line of BLOCK_LINES a drawn byte (16 of them: each byte picks one of the 16 lines alike)."""
    return [BLOCK_LINES[pick % len(BLOCK_LINES)] for pick in picks]


@settings(max_examples=150, deadline=None)
@given(st.binary(max_size=16).map(block_lines), st.integers(0, 3))
def test_the_resolved_config_is_the_block_trying_every_brace_line_finds(lines, start):
    """Up to 16 lines: no block is inside JUDGED_DEPTH blocks that are judged, where the answer could differ. The
    lines are read off one drawn string of bytes, not drawn one at a time through st.sampled_from (hypothesis's draws
    of each line cost more than the two searches compared)."""
    assert logscan.resolved_config(lines, start) == config_trying_every_brace_line(lines, start)


def config_lines(config=fixtures.CONFIG):
    return json.dumps(config, indent=2).splitlines()


@pytest.mark.parametrize("lines", [
    fixtures.head_lines(),
    ["{", "not json", *config_lines(), "}"],  # a broken block around the config
    ["{", '"wrap":', *config_lines(), "}"],  # JSON around the config, naming no cluster of its own
    ["{", *config_lines(), *config_lines({"cluster": {"num_nodes": 9}})],  # never closed: the first config
    ["{"] * 300 + ['"cluster": {}'] + ["}"] * 300,  # the innermost of 300 is one
    ["{", "}"] * 50 + config_lines({"cluster": "none"}) + ["{", "{", "{"] + fixtures.head_lines(),
], ids=["rlinf", "broken-around", "json-around", "unclosed-around", "nested-300", "closed-and-open-before"])
def test_the_resolved_config_is_the_one_found_trying_every_brace_line(lines):
    expected = config_trying_every_brace_line(lines)
    assert expected is not None and logscan.resolved_config(lines) == expected
    assert logscan.resolved_config(lines, expected.first_line) == config_trying_every_brace_line(
        lines, expected.first_line)


class ReadLines(Sequence):
    """A log that counts the lines read from it, one at a time, in a slice or by iterating."""

    def __init__(self, lines):
        self.lines = lines
        self.read = 0

    def __len__(self):
        return len(self.lines)

    def __getitem__(self, index):
        item = self.lines[index]
        self.read += len(item) if isinstance(index, slice) else 1
        return item


def test_the_resolved_config_after_thousands_of_braces_that_never_close_reads_each_line_a_few_times():
    """Each `{` line whose block never closes was scanned to the log's end, so a Pod printing thousands of them
    held the run check quadratic time (2,000 / 4,000 / 8,000: 0.44 / 1.78 / 7.96 s; 64 MiB of them never ended).
    One pass reads each line and the config after them is found."""
    head = fixtures.head_lines()
    lines = ReadLines(["{"] * 2000 + head)
    block = logscan.resolved_config(lines)
    assert (block.first_line, block.config) == (2000 + head.index("{") + 1, fixtures.CONFIG)
    assert lines.read <= 2 * len(lines)  # 2,185,087 lines read before


def test_the_resolved_config_after_thousands_of_nested_blocks_joins_each_line_a_few_times(monkeypatch):
    """4,000 `{` blocks nested, each JSON's start and naming the cluster inside, were each joined to its close and
    parsed, quadratic in the log's text (72 MB joined for 4,001 judgements of 41 KB). A block is judged only inside
    fewer than JUDGED_DEPTH judged ones (288 KB for 9 now), and the config after them is found."""
    head = fixtures.head_lines()
    lines = ["{", '"a":'] * 4000 + ['{"cluster": {}}'] + ["}"] * 4000 + head
    joined = []
    read = logscan.load_json
    monkeypatch.setattr(logscan, "load_json", lambda text, *args, **kw: joined.append(len(text)) or read(text, *args,
                                                                                                          **kw))
    block = logscan.resolved_config(lines)
    assert (block.first_line, block.config) == (12001 + head.index("{") + 1, fixtures.CONFIG)
    assert sum(joined) <= logscan.JUDGED_DEPTH * sum(len(line) + 1 for line in lines)
