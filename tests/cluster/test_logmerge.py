"""Pure log logic: timestamp parsing, prefixes, merging by time, resume without duplicates, --since."""

import pytest

from rlark_tui.cluster.logmerge import (
    LogLine,
    Resume,
    merge_by_time,
    parse_duration,
    parse_since,
    parse_timestamp,
    since_time,
    split_line,
)
from rlark_tui.errors import UsageError

T0 = "2026-11-29T10:00:00.000000001Z"
T1 = "2026-11-29T10:00:00.5Z"
T2 = "2026-11-29T10:00:01Z"


@pytest.mark.parametrize("stamp, expected", [
    ("2026-11-29T10:00:00Z", 1795946400 * 10**9),
    ("2026-11-29T10:00:00.5Z", 1795946400 * 10**9 + 500_000_000),
    ("2026-11-29T10:00:00.000000001Z", 1795946400 * 10**9 + 1),
    ("2026-11-29T11:00:00+01:00", 1795946400 * 10**9),
    ("not-a-time", None),
    ("", None),
    ("2026-11-29T10:00:00.123456789Z", 1795946400 * 10**9 + 123456789),
    ("2026-W48-7T10:00:00.123456789Z", None),
    ("2026-11-29T10:00:00.12345678xZ", None),
    ("2026-11-29T25:00:00.123456789Z", None),
    ("9999-12-31T23:59:59-23:59", None),  # year 10000 in UTC: since_time of it raised
    ("0001-01-01T00:00:00+23:59", None),
    ("9999-12-31T23:59:59.999999999Z", 253402300799 * 10**9 + 999999999),
])
def test_parse_timestamp(stamp, expected):
    assert parse_timestamp(stamp) == expected
    if expected is not None:
        assert since_time(expected)


def test_split_line_keeps_text_and_stamp():
    line = split_line(f"{T1} Global Step: 3/40", "actor/demo-actor-0")
    assert (line.text, line.stamp, line.source) == ("Global Step: 3/40", T1, "actor/demo-actor-0")
    assert line.render() == "[actor/demo-actor-0] Global Step: 3/40"
    assert line.render(timestamps=True) == f"[actor/demo-actor-0] {T1} Global Step: 3/40"
    assert line.render(prefix=False) == "Global Step: 3/40"


def test_split_line_without_timestamp_keeps_the_whole_line():
    line = split_line("plain text line", "p")
    assert line.ts is None and line.text == "plain text line"


def lines(source, *pairs):
    return [split_line(f"{stamp} {text}", source) for stamp, text in pairs]


def feed(resume, batch):
    return [line.text for line in batch if resume.admit(line)]


def test_resume_drops_exactly_what_was_seen_even_identical_lines():
    first = lines("a/p", (T0, "x"), (T1, "same"), (T1, "same"))
    resume = Resume()
    assert feed(resume, first) == ["x", "same", "same"]
    # the reconnect replays the whole second; two identical lines at T1 were seen, a third is new
    replay = lines("a/p", (T0, "x"), (T1, "same"), (T1, "same"), (T1, "same"), (T2, "next"))
    resume.restart()
    assert feed(resume, replay) == ["same", "next"]


def test_resume_after_a_second_drop_counts_again_from_zero():
    resume = Resume()
    feed(resume, lines("a/p", (T1, "a"), (T1, "b")))
    resume.restart()
    assert feed(resume, lines("a/p", (T1, "a"), (T1, "b"), (T1, "c"))) == ["c"]
    resume.restart()
    assert feed(resume, lines("a/p", (T1, "a"), (T1, "b"), (T1, "c"), (T2, "d"))) == ["d"]


def test_resume_since_is_the_whole_second_of_the_last_line():
    resume = Resume()
    assert resume.since() is None
    feed(resume, lines("a/p", (T1, "a")))
    assert resume.since() == "2026-11-29T10:00:00Z"
    assert since_time(parse_timestamp(T2)) == "2026-11-29T10:00:01Z"


def test_lines_without_timestamps_are_always_admitted():
    resume = Resume()
    line = LogLine("a/p", "no stamp")
    assert resume.admit(line) and resume.admit(line)


def test_merge_by_time_interleaves_pods_and_keeps_ties_in_pod_order():
    actor = lines("actor/a-0", (T0, "a1"), (T2, "a2"))
    env = lines("env/e-0", (T0, "e1"), (T1, "e2"))
    merged = merge_by_time([actor, env])
    assert [line.text for line in merged] == ["a1", "e1", "e2", "a2"]


@pytest.mark.parametrize("text, seconds", [("30s", 30), ("5m", 300), ("1h30m", 5400), ("1.5s", 2), ("500ms", 1)])
def test_parse_since(text, seconds):
    assert parse_since(text) == seconds


@pytest.mark.parametrize("text, seconds", [("0s", 0), ("0m0s", 0), ("500ms", 0.5), ("1h30m", 5400)])
def test_a_duration_is_what_it_says_zero_included(text, seconds):
    """`rlark wait --timeout 0s` checks once, as kubectl wait does: it waited a whole second (parse_since's at
    least 1, meant for --since)."""
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "5", "m5", "5x", "-5s", "5m junk"])
def test_parse_since_rejects(text):
    with pytest.raises(UsageError):
        parse_since(text)
