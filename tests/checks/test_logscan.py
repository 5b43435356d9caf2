"""C3's error scan: the whole-log first pass (literal starts of each pattern's alternatives) never hides a line a
pattern matches: error_hits gives what trying every pattern on every line gives."""

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from rlark_tui.checks import logscan

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


def re_case_twins():
    """Each character `re.IGNORECASE` takes for a printable ASCII one, found over every code point (20 ms)."""
    every = "".join(map(chr, range(0x80, 0x110000)))
    return {twin: [char for char in map(chr, range(0x20, 0x7F)) if re.fullmatch("(?i)" + re.escape(char), twin)]
            for twin in re.findall(r"(?i)[\x20-\x7e]", every)}


TWINS = re_case_twins()
SPELLINGS = {char: [char, *(twin for twin, chars in TWINS.items() if char in chars)]
             for char in {char for chars in TWINS.values() for char in chars}}


@st.composite
def respelled(draw, text):
    """`text` with each letter `re.IGNORECASE` takes another character for as it or as that (`ı`, `İ`, `ſ`, `K`)."""
    return "".join(draw(st.sampled_from(SPELLINGS[char])) if char in SPELLINGS else char for char in text)


def test_the_first_pass_knows_every_character_re_takes_for_an_ascii_one():
    """The run check's error scan skips a case-insensitive pattern whose texts the log, lower-cased, does not hold:
    a character `re.IGNORECASE` takes for an ASCII letter but str.lower makes no such letter (`ı`, `ſ`; `İ` lowers
    to two) hid a line the pattern matches, `Connectıon refused` or `request tİmed out`, from the check."""
    assert {(twin, letter) for twin, letters in TWINS.items() for letter in letters if letter.islower()} == set(
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
