"""Reading the `main` container logs: the platform's start-script markers, RLinf's progress rows and config block.

Facts from rlark-platform.md §2.4 and rlinf-runtime.md §2; all functions are pure over lists of lines.
"""

from __future__ import annotations

import re
from array import array
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import islice
from typing import Any, Literal

from rlark_tui.text import patterns
from rlark_tui.text.parse import ascii_int, load_json

MAX_RANKS = 1 << 16
"""The most ranks a rank expression may name."""
RANK_RE = re.compile(r"^RLINF_NODE_RANK: (\d+)\s*$")
CHECK_PASSED = "Ray cluster check passed."
CHECK_FAILED_IGNORED = "Warning: Ray cluster check failed, proceeding anyway."
RUN_SCRIPT_STARTED = "Executing run script..."
NO_RUN_SCRIPT = "No run script provided, keeping cluster alive."
WORKER_EXITED = "Ray worker process exited with code"
"""The platform's worker sequence after `ray start --block` ended (rlark-platform.md §2.4); it then exits 0."""
CLUSTER_READY_RE = re.compile(r"Cluster is ready: (\d+) nodes available \(required: (\d+)\)\.")
SAVING_CHECKPOINT_RE = re.compile(r"Saving checkpoint at step (\d+)\.")
RESUMING_RE = re.compile(r"Resuming training from checkpoint directory (.+?)\.?\s*$")
"""The embodied runners' resume line (rlinf-runtime.md §2.3); group 1 the directory."""
GLOBAL_STEP_SET_RE = re.compile(r"Setting global step to (\d+)\b")
"""The reasoning runners' resume line, after `Load from checkpoint folder: <dir>`; group 1 the step N."""
PROGRESS_STEP_RE = re.compile(r"│ Global Step:\s*(\d+)/(\d+) │|Global Step:\s+\d+%\|[^|]*\|\s*(\d+)/(\d+) \[")
"""A progress row's step: the embodied metric table's Global Step row, or a redraw of the reasoning tqdm bar."""


ERROR_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("image pull", re.compile(r"ErrImagePull|ImagePullBackOff|Failed to pull image")),
    ("Ray CLI missing", re.compile(r"Error: Ray CLI is not found")),
    ("command not found", re.compile(r"command not found")),
    # each ImportError / import ray looks only as far as the next one (a line matches as before): each scanning
    # the rest of the line made a line of them quadratic (5,000 `ImportError: `, 65 KB: 10 s in rlark check)
    ("import ray", re.compile(r"No module named '?ray'?|ImportError: (?:(?!ImportError: ).)*\bray\b|"
                              r"import ray(?:(?!import ray).)*(?:Error|failed)")),
    ("network interface", re.compile(r"(?i)network interface|Cannot assign requested address|no such device")),
    ("Ray address", re.compile(
        r"(?i)failed to connect to (?:the )?gcs|unable to connect to (?:the )?gcs|could not connect to|"
        r"Name or service not known|Temporary failure in name resolution|Connection refused|is not reachable")),
    ("timeout", re.compile(r"(?i)did not become ready within|\btimed out\b|TimeoutError")),
)
"""C3's error scan: each (what, pattern) a line of any Pod's `main` log must not match."""

HARD_FAILURES = re.compile(
    r"Exiting main process due to a failure upon worker execution\.|Traceback \(most recent call last\):|"
    r"Failed to (?:load|save) checkpoint")

RUN_ID_RE = re.compile(r"(?i)\brun[ _-]?id\b\s*[:=]\s*(\S+)")
CODE_REF_RE = re.compile(r"(?i)\b(?:code[ _-]?ref|commit(?: sha)?)\b\s*[:=]\s*([0-9a-f]{7,40})\b")
DATA_VERSION_RE = re.compile(r"(?i)\bdata[ _-]?version\b\s*[:=]\s*(\S+)")
OUTPUT_RE = re.compile(r"(?i)\boutput[ _-]?(?:dir|path|prefix)\b\s*[:=]\s*(/\S*|\w+://\S+)")
RUNNING_ON_RE = re.compile(r"RLinf is running on a cluster with (\d+) nodes")
CONFIG_SUM_RE = re.compile(r"(?i)\bconfig[ _-]?(?:checksum|sha256|hash)\b\s*[:=]\s*(?:sha256:)?([0-9a-f]{64})\b")


def version_re(name: str) -> re.Pattern[str]:
    """`<name> version: X`, `<name>_version=X` or `<name>==X`, as an application prints a runtime version."""
    quoted = re.escape(name)
    return re.compile(rf"(?i)(?<![\w-])(?:{quoted}[ _-]?version\s*[:=]\s*|{quoted}==)v?([\w.+-]+)")


@dataclass(frozen=True)
class Hit:
    line: int
    """1-based line number in the log read."""
    text: str


def find(lines: Sequence[str], needle: str, start: int = 0) -> Hit | None:
    """First line at or after index `start` that equals `needle` once stripped."""
    for index in range(start, len(lines)):
        if lines[index].strip() == needle:
            return Hit(index + 1, lines[index])
    return None


def find_last(lines: Sequence[str], needle: str) -> Hit | None:
    for index in range(len(lines) - 1, -1, -1):
        if lines[index].strip() == needle:
            return Hit(index + 1, lines[index])
    return None


def search(lines: Sequence[str], pattern: re.Pattern[str] | patterns.Pattern[str], start: int = 0,
           budget: patterns.Deadline | None = None) -> tuple[Hit, re.Match[str] | patterns.Match[str]] | None:
    """The first line at or after `start` that `pattern` matches. A pattern from outside (the launch record)
    comes with a `budget` shared by all lines (patterns.PatternTooSlow past it); one of ours starts at the first
    line that holds what its matches start with (_first_possible)."""
    if budget is None and isinstance(pattern, re.Pattern):
        start = _first_possible(lines, pattern, start)
    for index in range(start, len(lines)):
        match = (pattern.search(lines[index]) if budget is None or isinstance(pattern, re.Pattern)
                 else patterns.search(pattern, lines[index], budget))
        if match:
            return Hit(index + 1, lines[index]), match
    return None


def _first_possible(lines: Sequence[str], pattern: re.Pattern[str], start: int) -> int:
    """The first line at or after `start` that holds the text one of the alternatives of `pattern` (one of ours)
    starts with (_literal_start; as the pattern's case rule reads it, for `(?i)`), found in the lines joined;
    len(lines) when no line holds any, and `start` when an alternative starts with no plain text. A line matches
    only where its text is, so the search from there finds what a search from `start` finds: the healthy Header
    log's 1,000 lines cost the outputs check's HARD_FAILURES search 0.8 ms line by line, and check 4's
    CONFIG_SUM_RE (case-insensitive, `re` tries each character) 1.4 ms; a join and a scan or two this way."""
    source = pattern.pattern.removeprefix("(?i)")
    if pattern.flags & re.VERBOSE or re.search(r"\(\?[a-zA-Z^]", source):
        return start
    literals = [_literal_start(alternative) for alternative in _alternatives(source.replace(r"\b", ""))]
    if not all(literals):
        return start
    joined = "\n".join(lines[start:])
    if joined.count("\n") != len(lines) - start - 1:  # a line holds a newline itself: line by line
        return start
    if pattern.flags & re.IGNORECASE:  # the texts under the pattern's own case rule: re's, not str.lower's
        found = re.compile("|".join(map(re.escape, literals)), pattern.flags & (re.IGNORECASE | re.ASCII)).search(joined)
        first = found.start() if found else -1
    else:
        first = min((at for at in map(joined.find, literals) if at >= 0), default=-1)
    return start + joined.count("\n", 0, first) if first >= 0 else len(lines)


def rank_line(lines: Sequence[str]) -> tuple[Hit, int] | None:
    """The start script's `RLINF_NODE_RANK: <n>` line (the first of the instance)."""
    for index, text in enumerate(lines):
        match = RANK_RE.match(text.strip())
        rank = ascii_int(match.group(1)) if match else None
        if rank is not None:
            return Hit(index + 1, text), rank
    return None


RE_CASE_TWINS = (("\N{LATIN CAPITAL LETTER I WITH DOT ABOVE}", "i"), ("\N{LATIN SMALL LETTER DOTLESS I}", "i"),
                 ("\N{LATIN SMALL LETTER LONG S}", "s"), ("\N{KELVIN SIGN}", "k"))
"""Each character that is not ASCII and that `re.IGNORECASE` takes for an ASCII one, with that one (Python's sre
compares simple lower cases, and adds i/ı and s/ſ; tests/checks/test_logscan.py finds them over every code point)."""


def _prefilter(pattern: re.Pattern[str]) -> tuple[bytes, ...] | None:
    """A cheap superset of `pattern` for the whole log as _folded makes it: the plain start of each alternative,
    lower-cased, without word boundaries. None when an alternative starts with no plain text, the pattern is not
    ASCII, or lower-casing or joining could lose a match (upper-case escapes such as \\S, anchors, lookbehinds)."""
    source = pattern.pattern.removeprefix("(?i)")
    if re.search(r"\\[A-Z]|\^|\$|\(\?<|\(\?[a-z]", source) or not source.isascii():
        return None
    source = source.lower().replace(r"\b", "")
    literals = tuple(_literal_start(alternative).encode() for alternative in _alternatives(source))
    return literals if all(literals) else None


def _folded(lines: Sequence[str]) -> bytes:
    """The log joined by newlines, each of RE_CASE_TWINS as the letter `re` takes it for, then its ASCII characters
    alone, lower-cased. A match of an ASCII pattern is ASCII there, whatever its case: str.lower left `ı` and `ſ` as
    they are and made `İ` two characters, so a log where `re.IGNORECASE` finds `Connectıon refused` held no
    `connection refused`. Bytes lower-case in a quarter of the time str.lower takes on a log that is not all ASCII."""
    joined = "\n".join(lines)
    for twin, letter in RE_CASE_TWINS:
        joined = joined.replace(twin, letter)
    return joined.encode("ascii", "ignore").lower()


_SYNTAX = ".^$*+?{}[]\\()|"


def _alternatives(source: str) -> list[str]:
    """The top-level alternatives of a regex's text (a `|` inside a group, a class or after `\\` does not split)."""
    parts: list[str] = []
    depth, start, index = 0, 0, 0
    while index < len(source):
        char = source[index]
        if char == "\\":
            index += 1
        elif char == "[":
            index = source.index("]", index + 2 if source[index + 1:index + 2] == "]" else index + 1)
        elif char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        elif char == "|" and depth == 0:
            parts.append(source[start:index])
            start = index + 1
        index += 1
    return parts + [source[start:]]


def _literal_start(alternative: str) -> str:
    """The plain text every match of `alternative` starts with: its characters up to the first regex syntax, less
    the last one when a quantifier follows it (`'?ray` starts with nothing sure after the `'`)."""
    end = next((index for index, char in enumerate(alternative) if char in _SYNTAX), len(alternative))
    if end < len(alternative) and alternative[end] in "?*{":
        end -= 1
    return alternative[:max(end, 0)]


def _may_match(quick: tuple[bytes, ...] | None, folded: bytes) -> bool:
    return quick is None or any(literal in folded for literal in quick)


_ERROR_PREFILTERS = tuple(_prefilter(pattern) for _what, pattern in ERROR_PATTERNS)


def error_hits(lines: Sequence[str]) -> list[tuple[str, Hit]]:
    """Per line, the first ERROR_PATTERNS entry it matches. Case-insensitive regexes are slow in `re`, so each
    pattern is first tried once on the whole log (_folded) and skipped when even its superset finds nothing."""
    folded = _folded(lines)
    active = tuple((what, pattern) for (what, pattern), quick in zip(ERROR_PATTERNS, _ERROR_PREFILTERS)
                   if _may_match(quick, folded))
    hits: list[tuple[str, Hit]] = []
    if not active:
        return hits
    for index, text in enumerate(lines):
        for what, pattern in active:
            if pattern.search(text):
                hits.append((what, Hit(index + 1, text)))
                break
    return hits


def first_progress(lines: Sequence[str], pattern: str, start: int = 0, slow: patterns.SlowPatterns | None = None) -> Hit | None:
    """The first line where the agreed progress pattern shows the workload moving: its first match whose first
    numeric group is above 0 (`Global Step: 0/10` and a tqdm bar at 0% are where it starts, not progress); a
    pattern without a numeric group counts its first match. Only the agreed pattern counts: no generic fallback.
    The pattern comes from the launch record: patterns.PatternError when it is not a regex, PatternTooSlow when
    the whole scan spends more than the budget (at once when `slow` knows it overran before).
    """
    compiled = patterns.compile_pattern(pattern)
    deadline = patterns.Deadline(known=slow)
    for index in range(start, len(lines)):
        for segment in lines[index].split("\r"):
            match = patterns.search(compiled, segment, deadline)
            if not match:
                continue
            numbers = [g for g in match.groups() if g is not None and g.isnumeric()]
            first = ascii_int(numbers[0]) if numbers else None  # `²` or 5,000 digits: no count, so no progress
            if not numbers or (first is not None and first > 0):
                return Hit(index + 1, segment)
    return None


def resume_line(lines: Sequence[str], start: int = 0) -> tuple[Hit, re.Match[str]] | None:
    """The first resume line at or after index `start`: embodied `Resuming training from checkpoint directory
    <dir>.` (RESUMING_RE) or reasoning `Setting global step to <N>` (GLOBAL_STEP_SET_RE)."""
    for index in range(start, len(lines)):
        match = RESUMING_RE.search(lines[index]) or GLOBAL_STEP_SET_RE.search(lines[index])
        if match:
            return Hit(index + 1, lines[index]), match
    return None


def first_step(lines: Sequence[str], start: int = 0, skip: int | None = None) -> tuple[Hit, int, str] | None:
    """The first progress row at or after index `start`: its line, its step and the row's own text, its runs of
    spaces made one (each `\\r` redraw of a tqdm bar counts alone); a row at step `skip` is passed over (a resumed tqdm bar first draws the
    step it starts at)."""
    for index in range(start, len(lines)):
        for segment in lines[index].split("\r"):
            match = PROGRESS_STEP_RE.search(segment)
            if match is None:
                continue
            step = ascii_int(match.group(1) or match.group(3))
            if step is not None and step != skip:
                return Hit(index + 1, lines[index]), step, " ".join(segment.split())
    return None


@dataclass(frozen=True)
class ConfigBlock:
    first_line: int
    last_line: int
    config: dict[str, Any]


JUDGED_DEPTH = 8
"""A block that could be a config is judged only inside fewer than this many such blocks: each line's text is then
joined for at most 8 judgements (4,000 blocks nested, each JSON's start naming the cluster inside, were 4,001
judgements joining 72 MB of a 41 KB log, 1 s; 9 and 288 KB now). RLinf prints its config inside no block."""


def resolved_config(lines: Sequence[str], start: int = 0) -> ConfigBlock | None:
    """RLinf's resolved config: JSON printed from a line that is exactly `{` to its matching `}`, the earliest such
    block that is one. One pass keeps each open `{` line and the depth of the braces before it (as
    cluster/checkpoints reads a log) and the blocks that close and could be a config: a line of theirs may name the
    cluster and they begin as a JSON object. Those are judged in the order they begin once no block is open, and
    at the end (a `{` line that never closes is no block: scanning on from each one to the end was quadratic,
    8,000 of them 8 s)."""
    opened, depths = array("q"), array("q")
    """Each open `{` line and the braces' depth before it (8 bytes each: 64 MiB of `{` lines are 32 million)."""
    closed: list[tuple[int, int]] = []
    depth = 0
    named = -1
    """The last line that may name the cluster: a key is on one line, its letters perhaps spelled `\\u0063`."""
    for index, line in enumerate(islice(lines, start, None), start):
        if line == "{" or line.rstrip() == "{":
            opened.append(index)
            depths.append(depth)
            depth += 1
            continue  # a block opens, none closes
        if '"cluster"' in line or "\\u" in line:
            named = index
        change = line.count("{") - line.count("}")
        if not change:
            continue  # no block opens or closes here
        depth += change
        while opened and depth <= depths[-1]:
            depths.pop()
            first = opened.pop()
            if named >= first and _opens_object(lines, first, index):
                closed.append((first, index))
        if closed and not opened:
            block = _first_config(lines, closed)
            if block is not None:
                return block
            closed.clear()
    return _first_config(lines, closed)


def _opens_object(lines: Sequence[str], first: int, last: int) -> bool:
    """Whether `lines[first..last]`, from a `{` line, begins as a JSON object does: JSON's whitespace, then `"` or
    `}` (any other block is no JSON: 4,000 `{` lines nested were each joined to its close to be parsed)."""
    rest, index = lines[first][1:].lstrip(" \t\r\n"), first
    while not rest and index < last:
        index += 1
        rest = lines[index].lstrip(" \t\r\n")
    return rest[:1] in ('"', "}")


def _first_config(lines: Sequence[str], blocks: list[tuple[int, int]]) -> ConfigBlock | None:
    """The first of `blocks` (closed, none across another) in the order they begin that is a config, judging each
    inside fewer than JUDGED_DEPTH others."""
    enclosing: list[int] = []
    for first, last in sorted(blocks):
        while enclosing and enclosing[-1] < first:
            enclosing.pop()
        if len(enclosing) < JUDGED_DEPTH:
            block = config_block(lines, first, last)
            if block is not None:
                return block
        enclosing.append(last)
    return None


def config_block(lines: Sequence[str], first: int, last: int) -> ConfigBlock | None:
    """`lines[first..last]`, a `{` line to the line that closes it, as RLinf's resolved config (None: it is not)."""
    try:
        data = load_json("\n".join(lines[first:last + 1]))
    except ValueError:
        return None
    if isinstance(data, dict) and isinstance(data.get("cluster"), dict):
        return ConfigBlock(first + 1, last + 1, data)
    return None


def parse_ranks(expression: object) -> set[int] | None:
    """RLinf rank expressions (`0-7`, `0,2,5-6`, an int); `all` and anything unreadable give None, as do
    expressions of more than MAX_RANKS ranks (a log line's `0-99999999999` is no placement to enumerate)."""
    if isinstance(expression, bool):
        return None
    if isinstance(expression, int):
        return {expression}
    if not isinstance(expression, str) or expression.strip() == "all":
        return None
    ranks: set[int] = set()
    for part in expression.split(","):
        low, _, high = part.strip().partition("-")
        first, last = ascii_int(low), ascii_int(high) if high else ascii_int(low)
        if first is None or last is None or last < first or len(ranks) + last - first >= MAX_RANKS:
            return None
        ranks.update(range(first, last + 1))
    return ranks


def placement_mode(component_placement: object) -> str | None:
    """collocated / disaggregated / hybrid from the resource rank sets of `component_placement`.

    RLinf's embodied placement always reports HYBRID, so the mode is derived from the sets here.
    """
    if not isinstance(component_placement, dict) or not component_placement:
        return None
    sets: list[set[int] | Literal["all"] | None] = []
    for key, value in component_placement.items():
        spec: object = value
        if isinstance(value, dict):
            spec = ",".join(part.split(":")[0] for part in str(value.get("placement", "")).split(","))
        ranks: set[int] | Literal["all"] | None = (
            "all" if isinstance(spec, str) and spec.strip() == "all" else parse_ranks(spec))
        for _ in str(key).split(","):
            sets.append(ranks)
    if any(s is None for s in sets):
        return None
    if all(s == "all" for s in sets):
        return "collocated"
    concrete = [s for s in sets if isinstance(s, set)]
    if len(concrete) < len(sets):
        return "hybrid"
    if all(s == concrete[0] for s in concrete):
        return "collocated"
    disjoint = all(not (a & b) for i, a in enumerate(concrete) for b in concrete[i + 1:])
    return "disaggregated" if disjoint else "hybrid"
