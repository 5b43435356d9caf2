"""The line streamer and progress bars: a tqdm bar redrawn with `\r` never ends its line, so the last redraw
of a log read must come through; a plain line cut short must still not."""

from __future__ import annotations

import io

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rlark_tui.cluster.errors import Request, Unreachable
from rlark_tui.cluster.http import LineStream
from rlark_tui.telemetry.progress import latest_progress


class _Body(io.BytesIO):
    """What urllib3 hands LineStream: read1 plus release_conn."""

    def release_conn(self) -> None:
        pass


def _lines(data: bytes, whole_lines: bool = True) -> list[str]:
    return list(LineStream(_Body(data), Request("logs", "pods", "p", "ns", "data plane"), 5, whole_lines))


def test_tqdm_tail_is_yielded_and_parsed():
    bar = "Global Step:  {0}%|█ | {0}/100 [00:0{0}<01:30, 1.00s/it]"
    data = ("2026-12-01T03:00:00.000000000Z start\n2026-12-01T03:00:01.000000000Z "
            + "\r".join(bar.format(n) for n in (1, 2, 3))).encode()
    lines = _lines(data)
    assert lines[0].endswith("start") and lines[1].endswith(bar.format(3))
    assert latest_progress([(None, line) for line in lines]).step == 3


def test_plain_cut_line_still_refused():
    with pytest.raises(Unreachable, match="middle of a line"):
        _lines(b"whole\nhalf a li")
    assert _lines(b"whole\nhalf a li", whole_lines=False) == ["whole", "half a li"]


@settings(max_examples=500, deadline=None)
@given(st.binary(max_size=40).map(lambda data: data.replace(b"\x00", b"\n")), st.integers(1, 7))
def test_lines_read_together_are_the_lines_decoded_one_by_one(data, size):
    """LineStream.batches decodes what one read brings at once (the log pane's hot path)."""
    class Chunks(_Body):
        def read1(self, _limit: int = -1) -> bytes:
            return super().read1(size)

    stream = LineStream(Chunks(data), Request("logs", "pods", "p", "ns", "data plane"), 5)
    pieces = data.split(b"\n")
    expected = [piece.decode("utf-8", "replace").rstrip("\r") for piece in pieces[:-1]]
    if pieces[-1]:
        expected.append(pieces[-1].decode("utf-8", "replace").rstrip("\r"))
    assert [line for batch in stream.batches() for line in batch] == expected


def test_a_tail_read_keeps_only_the_last_lines_whatever_the_server_sends():
    """Issue 33 item 2, a third round: a read that asked for tailLines (the progress and step-time reads, rlark
    logs --tail, diagnose) kept every line a server sent, so one that ignored the tail and sent 64 MiB of empty
    lines made a list of 67 million strings (some 540 MB of pointers, more with timestamps). LineStream keeps the
    last `last` lines only: here 2 million lines pass through in about a MB (kept, their list is 17 MB)."""
    import tracemalloc

    data = b"\n" * (2 << 20) + b"next to last\nlast\n"
    tracemalloc.start()
    try:
        lines = list(LineStream(_Body(data), Request("logs", "pods", "p", "ns", "data plane"), 5, last=2))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert lines == ["next to last", "last"]
    assert peak < 8 << 20


def test_a_tail_read_holds_at_most_its_byte_bound_and_counts_the_lines_it_left_out():
    """Issue 33, open item (rlark diagnose): a tail read held its last `last` lines whatever their size, and a line
    may be 16 MiB (http.MAX_LINE_BYTES), so the Header log's 20,000 lines could be 320 GiB. With `last_bytes` it
    holds the newest lines whose strings take that many bytes at most and counts those it left out for it."""
    import tracemalloc

    big = "x" * (1 << 20)
    data = ("".join(f"{big}{n}\n" for n in range(16)) + "next to last\nlast\n").encode()
    tracemalloc.start()
    try:
        stream = LineStream(_Body(data), Request("logs", "pods", "p", "ns", "data plane"), 5, last=20_000,
                            last_bytes=3 << 20)
        lines = list(stream)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert lines == [f"{big}14", f"{big}15", "next to last", "last"] and stream.left_out == 14
    assert peak < 8 << 20  # one line being read and the bound held; the 16 lines were 16 MiB of strings
    within = LineStream(_Body(data), Request("logs", "pods", "p", "ns", "data plane"), 5, last=3, last_bytes=3 << 20)
    assert list(within) == [f"{big}15", "next to last", "last"] and within.left_out == 0


@settings(max_examples=60, deadline=None, derandomize=True)
@given(st.lists(st.text(st.sampled_from("ab\u00e9\u4e00\U0001f600"), max_size=300), max_size=40),
       st.integers(1, 30), st.integers(0, 4000))
def test_a_tail_read_keeps_the_newest_lines_whose_sizes_fit_its_bound(texts, last, bound):
    """The bounded tail read counts lines' lengths until the lines may pass the bound (sizes of ASCII, 2- and
    4-byte characters alike) and their sizes from there: it keeps what counting every line's size keeps."""
    import sys

    data = "".join(f"{text}\n" for text in texts).encode()
    stream = LineStream(_Body(data), Request("logs", "pods", "p", "ns", "data plane"), 5, last=last, last_bytes=bound)
    expected: list[str] = []
    for text in reversed(texts[-last:]):
        if sum(map(sys.getsizeof, [text, *expected])) > bound:
            break
        expected.insert(0, text)
    assert list(stream) == expected
    assert stream.kept == len(expected) and stream.left_out == min(len(texts), last) - len(expected)
