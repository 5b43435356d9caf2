"""Regular expressions from outside rlark (a Job, a launch record, a config file, the user), run under a time budget.

Every such pattern is compiled here (`compile_pattern`, the `regex` package in its `re`-compatible VERSION0) and
matched here (`search`, `finditer`), with the `regex` package's `timeout=`: a catastrophic pattern such as
`(a|aa)+$` against a long line stops after the budget with PatternTooSlow instead of freezing the caller.
A `Deadline` shares one budget across many calls (a pattern over every line of a log).
Before compiling, a pattern is refused by its shape (refusal): nested counted repeats whose product passes
MAX_REPEAT_PRODUCT (the compiler's memory), and recursion.
`has_nested_quantifier` finds the shape behind most catastrophic backtracking, for `draft render` to warn about.
Pure: no I/O.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Iterable
from functools import lru_cache
from typing import TYPE_CHECKING

from rlark_tui.text.parse import MAX_DIGITS, ascii_digits, ascii_int

if TYPE_CHECKING:
    import regex

    Pattern = regex.Pattern
    Match = regex.Match

BUDGET_SECONDS = 1.0
"""What one pattern may spend on one text, or (with a Deadline) over all of a log's lines."""
MAX_PATTERN_CHARS = 4096
"""A longer pattern is refused: no agreed signal or filter needs one, and compiling it is work of its own."""
MAX_REPEAT_PRODUCT = 10_000
"""The most copies counted repeats may ask for, nested ones multiplied (`(a{100}){100}` is 10 000): the engine
unrolls them when it compiles, so `(((a{100}){100}){100}){100}` would take gigabytes before any budget runs.
A larger product is refused before compiling, as is recursion (`(?R)`, `(?1)`, `(?&name)`, `(?P>name)`)."""
MAX_REPEAT_TEXT = 1 << 17
"""How much of a text, in characters times capturing groups (at least one), a pattern that repeats a group
matches: the engine keeps a backtrack entry for every round of a repeated group (`(?:ab)*$` over a 16 MiB log
line: 562 MB) and every capture of every round (70 to 170 bytes a character and group: `(.)*` asked for 3.5 GB
within its one second), so such a pattern sees at most this much of a text from where it starts (128 Ki
characters for none or one group, some 23 MB; 2 Ki for 64 groups). Patterns that repeat no group see it all."""
KNOWN_SLOW_MAX = 256
"""How many too-slow patterns a SlowPatterns remembers."""


@lru_cache(maxsize=1)
def _regex():
    """The `regex` package, imported on the first compile, so the TUI's first list does not wait for it."""
    import regex

    return regex


def __getattr__(name: str):
    """`Pattern` and `Match`, the `regex` package's types, for code that reads them at run time."""
    if name in ("Pattern", "Match"):
        return getattr(_regex(), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class PatternError(ValueError):
    """The text is not a usable regular expression; the message is one line."""


class PatternTooSlow(Exception):
    """Matching spent more than its budget (catastrophic backtracking); the message names the pattern."""

    def __init__(self, pattern: str, budget: float) -> None:
        super().__init__(f"pattern {pattern!r} is too slow (stopped after {budget:g} s)")
        self.pattern = pattern
        self.budget = budget


class SlowPatterns:
    """Patterns that overran their budget, (pattern, flags) -> that budget: a Deadline that knows them refuses such a
    pattern at once, so a caller that judges the same texts again and again (the run check's rounds) pays the
    budget once. Its owner keeps it (ClusterAccess.slow_patterns); thread-safe."""

    def __init__(self, limit: int = KNOWN_SLOW_MAX) -> None:
        self.limit = limit
        self._overran: dict[tuple[str, int], float] = {}
        self._lock = threading.Lock()

    def overran(self, pattern: Pattern) -> float | None:
        with self._lock:
            return self._overran.get((pattern.pattern, pattern.flags))

    def note(self, pattern: Pattern, seconds: float) -> None:
        with self._lock:
            if len(self._overran) < self.limit:
                self._overran[(pattern.pattern, pattern.flags)] = seconds


class Deadline:
    """One budget shared by many matches: each gets what is left of it, or at most `each` seconds when given (one
    text that is too slow stops the pass as soon as a bound per text would); with `known`, a pattern known to be too
    slow is refused at once, and one that overruns is noted there."""

    def __init__(self, seconds: float = BUDGET_SECONDS, known: SlowPatterns | None = None,
                 each: float | None = None) -> None:
        self.seconds = seconds
        self.known = known
        self.each = each
        self._end = time.monotonic() + seconds

    def left(self) -> float:
        left = self._end - time.monotonic()
        return left if self.each is None else min(left, self.each)

    def spent(self) -> float:
        """The bound a match that ran out of time ran into: `each`, unless the whole budget is gone."""
        return self.each if self.each is not None and self._end > time.monotonic() else self.seconds


def compile_pattern(text: str, ignore_case: bool = False) -> Pattern:
    """`text` compiled (as Python's `re` reads it); PatternError with one line when it is not a regex."""
    if not isinstance(text, str):
        raise PatternError(f"a pattern must be text, not {type(text).__name__}")
    return _compile(text, ignore_case)


def literal_pattern(text: str, ignore_case: bool = False) -> Pattern:
    """`text` matched as plain text (a literal cannot backtrack, so any length is fine)."""
    regex = _regex()
    return regex.compile(regex.escape(text), regex.VERSION0 | (regex.IGNORECASE if ignore_case else 0))


@lru_cache(maxsize=256)
def _compile(text: str, ignore_case: bool) -> Pattern:
    if len(text) > MAX_PATTERN_CHARS:
        raise PatternError(f"is longer than {MAX_PATTERN_CHARS} characters")
    refused = refusal(text)
    if refused:
        raise PatternError(refused)
    regex = _regex()
    flags = regex.VERSION0 | (regex.IGNORECASE if ignore_case else 0)
    try:
        return regex.compile(text, flags)
    except regex.error as exc:
        raise PatternError(f"is not a valid regular expression: {_one_line(str(exc))}") from None
    except (OverflowError, RecursionError, MemoryError):
        raise PatternError("is not a usable regular expression: too large or nested too deeply") from None


def _timeout(pattern: Pattern, budget: float | Deadline) -> float:
    known = budget.known if isinstance(budget, Deadline) else None
    overran = known.overran(pattern) if known is not None else None
    if overran is not None:
        raise PatternTooSlow(pattern.pattern, overran)
    seconds = budget.left() if isinstance(budget, Deadline) else budget
    if seconds <= 0:
        raise _too_slow(pattern, budget)
    return seconds


def _too_slow(pattern: Pattern, budget: float | Deadline) -> PatternTooSlow:
    seconds = budget.spent() if isinstance(budget, Deadline) else budget
    if isinstance(budget, Deadline) and budget.known is not None:
        budget.known.note(pattern, seconds)
    return PatternTooSlow(pattern.pattern, seconds)


_REPEATED_GROUP = re.compile(r"(?:\)|\\X|\\[0-9]+|\\g[<'][^>']*[>'])(?:[*+]|\{[0-9]*,?[0-9]*\})")
"""A group's end, a grapheme (`\\X`) or a backreference (`\\1`, `\\g<name>`) followed by a repeat: something wider
than one character, of which a backtrack entry, and a capture, may be kept each round (`(?>\\X*)` and `(a)\\1*$`
over a 16 MiB line asked for more than 6 GB)."""
_FULL_CASE = re.compile(r"\(\?[A-Za-z0-9-]*f")
"""The inline flag `f` (full case folding), under which a letter may match two (`ß` matches `ss`), so any repeat
may keep an entry a round (`(?fi)ß*$`: 572 MB)."""


@lru_cache(maxsize=256)
def _capture_bound(text: str, groups: int) -> int | None:
    """How many characters a pattern that may repeat a group, or anything else wider than one character, matches
    at once (MAX_REPEAT_TEXT shared by its capturing groups); none when it repeats single characters alone."""
    if _REPEATED_GROUP.search(text) is None and _FULL_CASE.search(text) is None:
        return None
    return max(MAX_REPEAT_TEXT // max(groups, 1), 1)


def _endpos(pattern: Pattern, text: str, pos: int = 0) -> int:
    """Where a match of `pattern` from `pos` stops looking: the text's end, or MAX_REPEAT_TEXT (shared by the
    capturing groups) past `pos` for a pattern that repeats a group."""
    bound = _capture_bound(pattern.pattern, pattern.groups)
    return len(text) if bound is None else min(len(text), max(pos, 0) + bound)


def search(pattern: Pattern | str, text: str, budget: float | Deadline = BUDGET_SECONDS,
           pos: int = 0) -> Match | None:
    """`pattern.search(text, pos)` stopped after `budget` seconds (PatternTooSlow), within MAX_REPEAT_TEXT of
    `pos` when it repeats a group."""
    compiled = compile_pattern(pattern) if isinstance(pattern, str) else pattern
    try:
        return compiled.search(text, pos, _endpos(compiled, text, pos), timeout=_timeout(compiled, budget))
    except TimeoutError:
        raise _too_slow(compiled, budget) from None


def match(pattern: Pattern | str, text: str, budget: float | Deadline = BUDGET_SECONDS) -> Match | None:
    """`pattern.match(text)` stopped after `budget` seconds (PatternTooSlow)."""
    compiled = compile_pattern(pattern) if isinstance(pattern, str) else pattern
    try:
        return compiled.match(text, 0, _endpos(compiled, text), timeout=_timeout(compiled, budget))
    except TimeoutError:
        raise _too_slow(compiled, budget) from None


def finditer(pattern: Pattern | str, text: str, budget: float | Deadline = BUDGET_SECONDS) -> list[Match]:
    """Every match of `pattern` in `text` (a list: the whole scan runs under the budget)."""
    compiled = compile_pattern(pattern) if isinstance(pattern, str) else pattern
    try:
        return list(compiled.finditer(text, 0, _endpos(compiled, text), timeout=_timeout(compiled, budget)))
    except TimeoutError:
        raise _too_slow(compiled, budget) from None


def search_lines(pattern: Pattern | str, lines: Iterable[str],
                 budget: float | Deadline = BUDGET_SECONDS) -> Iterable[tuple[int, Match]]:
    """(index, match) for every line that matches, all lines sharing one budget (PatternTooSlow past it)."""
    deadline = budget if isinstance(budget, Deadline) else Deadline(budget)
    for index, line in enumerate(lines):
        found = search(pattern, line, deadline)
        if found is not None:
            yield index, found


_QUANTIFIERS = "*+?{"
_RECURSION = ("(?R", "(?&", "(?P>", "(?0", "(?1", "(?2", "(?3", "(?4", "(?5", "(?6", "(?7", "(?8", "(?9", "(?+",
              "(?-1", "(?-2", "(?-3", "(?-4", "(?-5", "(?-6", "(?-7", "(?-8", "(?-9")
_INLINE_FLAGS = re.compile(r"\(\?([A-Za-z0-9-]*)")
"""An inline flag group's letters, `(?ix)`, `(?-x:`, `(?V1)` (none for `(?:`, `(?P<`, `(?=`)."""
_POSIX_CLASS = re.compile(r"\[:\^?[A-Za-z0-9 &_.-]*(?:[:=]([A-Za-z0-9 &_./-]*))?:\]")
"""A POSIX class inside a set, `[:alpha:]`, as the engine reads one (its property name's characters; a qualified
name after `:` or `=` not blank)."""
MAX_UNROLLED = 100_000
"""The most copies of its parts a whole pattern may ask for, repeats side by side added (and nested ones
multiplied): 500 of `a{9999}` side by side are 5 million, 1.3 GB when compiled, though each is under
MAX_REPEAT_PRODUCT. 100 000 is some 26 MB."""


def refusal(text: str) -> str:
    """Why `text` is refused before it is compiled ('' when it is not): counted repeats, nested ones multiplied,
    asking for more than MAX_REPEAT_PRODUCT copies, or all of them, side by side added, for more than MAX_UNROLLED;
    recursion; the verbose flag `x` (whitespace and `#` comments between an atom and its count would hide the
    count from this scan) and VERSION1 (nested sets). One pass over the text, no allocation but a stack as deep
    as the groups; escapes, character classes (POSIX classes in them included) and `(?#...)` comments are
    skipped as the engine skips them; `*`, `+` and `?` are loops (1)."""
    stack: list[tuple[int, int]] = []
    widest, total = 1, 0  # the most copies any repeat in the current group asks for; all of its copies added
    index, size = 0, len(text)
    while index < size:
        char = text[index]
        if char == "(":
            if text.startswith(_RECURSION, index):
                return "is refused: recursion ((?R), (?1), (?&name)) is not supported"
            if text.startswith("(?#", index):
                index = _comment_end(text, index + 3)
                continue
            flags = _INLINE_FLAGS.match(text, index)
            if flags and ("x" in flags.group(1) or "V1" in flags.group(1)):
                return "is refused: the inline flags x (verbose) and V1 are not supported"
            stack.append((widest, total))
            widest, total = 1, 0
            index += 1
            continue
        inner, part = 1, 1
        if char == ")":
            inner, part = widest, total
            widest, total = stack.pop() if stack else (1, 0)
            index += 1
        elif char == "\\":
            index += 2
        elif char == "[":
            index = _class_end(text, index)
        else:
            index += 1
        index, count = _count_at(text, index)
        copies = inner * count
        if copies > MAX_REPEAT_PRODUCT:
            return (f"is refused: its counted repeats, nested ones multiplied, ask for more than "
                    f"{MAX_REPEAT_PRODUCT} copies ({copies} so far)")
        widest = max(widest, copies)
        total += part * count
        if total > MAX_UNROLLED:
            return (f"is refused: its counted repeats, side by side added, ask for more than {MAX_UNROLLED} "
                    f"copies ({total} so far)")
    return ""


def _comment_end(text: str, index: int) -> int:
    """The index after the `(?#...)` comment whose text starts at `index`: its first `)` not escaped."""
    while index < len(text) and text[index] != ")":
        index += 2 if text[index] == "\\" else 1
    return index + 1


def _count(digits: str) -> int:
    """A repeat count's value; past ascii_int's bound, one more than any bound a pattern is held to (the engine
    refuses it anyway), never int() of 5,000 digits."""
    if not digits:
        return 0
    value = ascii_int(digits)
    return value if value is not None else 10 ** MAX_DIGITS


def _count_at(text: str, index: int) -> tuple[int, int]:
    """Past the quantifier at `index` (if any) and how many copies it asks for: its largest count for `{m,n}`,
    `{m}`, `{m,}`; 1 for none and for the loops `*`, `+`, `?`."""
    if index >= len(text) or text[index] not in _QUANTIFIERS:
        return index, 1
    count = 1
    if text[index] == "{":
        end = text.find("}", index)
        low, comma, high = text[index + 1:end].partition(",") if end > 0 else ("x", "", "")
        low, high = low.strip(), high.strip()
        if end < 0 or not (ascii_digits(low) or (comma and not low)) or (high and not ascii_digits(high)):
            return index, 1  # not a quantifier: a literal `{` (the engine reads ASCII digits only)
        count = max(_count(low), _count(high), 1)
        index = end + 1
    else:
        index += 1
    if index < len(text) and text[index] in "?+":
        index += 1
    return index, count


def has_nested_quantifier(text: str) -> bool:
    """Does a repeated group (`(...)*`, `(...)+`, `(...){2,}`) hold a repeat itself, as `(a+)+` or `(\\w*,)*`
    do? That shape backtracks exponentially on a near-miss. A scan of the pattern's text: escapes and
    character classes are skipped, `?` alone (0 or 1) does not count as repeating."""
    stack: list[bool] = []
    repeated_inside = False
    index, size = 0, len(text)
    while index < size:
        char = text[index]
        if char == "\\":
            index += 2
            after, repeat = _quantifier_at(text, index)
            repeated_inside = repeated_inside or repeat
            index = after
            continue
        if char == "[":
            index = _class_end(text, index)
            after, repeat = _quantifier_at(text, index)
            repeated_inside = repeated_inside or repeat
            index = after
            continue
        if char == "(":
            stack.append(repeated_inside)
            repeated_inside = False
            index += 1
            continue
        if char == ")":
            inner = repeated_inside
            repeated_inside = stack.pop() if stack else False
            after, repeat = _quantifier_at(text, index + 1)
            if repeat and inner:
                return True
            repeated_inside = repeated_inside or inner or repeat
            index = after
            continue
        after, repeat = _quantifier_at(text, index + 1)
        repeated_inside = repeated_inside or repeat
        index = after
    return False


def _quantifier_at(text: str, index: int) -> tuple[int, bool]:
    """Past the quantifier at `index` (if any) and whether it repeats (more than once)."""
    if index >= len(text) or text[index] not in _QUANTIFIERS:
        return index, False
    char = text[index]
    if char == "{":
        end = text.find("}", index)
        body = text[index + 1:end] if end > 0 else ""
        low, comma, high = body.partition(",")
        if end < 0 or not ascii_digits(low.strip()) and low.strip():
            return index, False
        repeat = (comma and (not high.strip() or (ascii_digits(high.strip()) and _count(high.strip()) > 1))) or \
            (not comma and ascii_digits(low.strip()) and _count(low.strip()) > 1)
        index = end + 1
    else:
        repeat = char in "*+"
        index += 1
    if index < len(text) and text[index] in "?+":
        index += 1
    return index, bool(repeat)


def _class_end(text: str, index: int) -> int:
    """The index after the character class starting at `index` (`[`)."""
    index += 1
    if index < len(text) and text[index] == "^":
        index += 1
    if index < len(text) and text[index] == "]":
        index += 1
    while index < len(text) and text[index] != "]":
        posix = _POSIX_CLASS.match(text, index) if text[index] == "[" else None
        if posix and (posix.group(1) is None or posix.group(1).strip()):
            index = posix.end()
        else:
            index += 2 if text[index] == "\\" else 1
    return index + 1


def _one_line(text: str) -> str:
    return " ".join(text.split())
