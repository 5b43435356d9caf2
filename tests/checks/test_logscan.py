"""C3's error scan: the whole-log first pass (literal starts of each pattern's alternatives) never hides a line a
pattern matches: error_hits gives what trying every pattern on every line gives."""

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


@settings(max_examples=150, deadline=None)
@given(st.lists(st.lists(st.sampled_from(SAMPLES), min_size=1, max_size=3).map(" ".join), max_size=12))
def test_error_hits_are_those_of_every_pattern_on_every_line(lines):
    assert logscan.error_hits(lines) == plain_hits(lines)


def test_each_pattern_has_a_first_pass_of_plain_text():
    assert all(isinstance(quick, tuple) and all(quick) for quick in logscan._ERROR_PREFILTERS)
