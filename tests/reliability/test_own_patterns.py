"""rlark's own regular expressions run over cluster text without a budget (a log line may be 16 MiB, a Ray
traceback answer 4 MiB, an alert line is a Job's whole status message): each must take time linear in its input.
Every compiled pattern at module level in rlark_tui is searched over runs of 20,000 characters of the shapes that
make a backtracking engine quadratic (a run that a quantifier, a lazy group and a later start can each claim, with
no end that matches). A second fresh round found four: py-spy's frame line (`Thread …` then 20,000 spaces and
`x (`: 5 s, 4 MiB some hours), an RLinf table cell of spaces (`│` + spaces + `x│a=1`), the chat sink's
`scheme://` (an alert of 60 KB `ab.ab.…`: 38 s per webhook delivery) and `--since`'s duration; then, in the run
check's table of log signatures, `import ray` (a Header log line of 5,000 `ImportError: `: 10 s in rlark check)."""

from __future__ import annotations

import importlib
import pkgutil
import re
import time
from collections.abc import Mapping

import rlark_tui

N = 20_000
SHAPES = {"spaces": " " * N + "x (", "spaces-nul": " " * N + "\x00", "tabs": "\t" * N + "x", "newlines": "\n" * N + "x",
          "letters": "a" * N + "!", "upper": "A" * N + "!", "digits": "1" * N + "x", "digit-dots": "1." * N + "x",
          "words-dots": "ab." * N + "1", "dashes": "a-" * N, "parens": " (" * N, "colons": ":" * N + "x",
          "equals": "a=" * N, "quotes": '"' * N, "words": " a" * N + "!", "dots": "." * N + "!",
          "brackets": "[" * N, "pipes": "|" * N + "x", "commas": ", " * N, "key": "key=" + "a" * N + "=",
          "import-errors": "ImportError: " * (N // 4), "import-rays": "import ray " * (N // 4)}
BOUND_SECONDS = 0.5
"""A linear search of 20,000 characters takes about a millisecond; a quadratic one seconds."""


def _patterns(where: str, value: object, depth: int = 0) -> dict[str, re.Pattern]:
    """The patterns `value` is or holds (in tuples, lists and mappings, a few levels down: a table of signatures)."""
    if isinstance(value, re.Pattern):
        return {where: value}
    found: dict[str, re.Pattern] = {}
    items = value.items() if isinstance(value, Mapping) else enumerate(value) if isinstance(value, (tuple, list)) else ()
    for key, item in items if depth < 3 else ():
        found.update(_patterns(f"{where}[{key!r}]", item, depth + 1))
    return found


def own_patterns() -> dict[str, re.Pattern]:
    found = {}
    for module in pkgutil.walk_packages(rlark_tui.__path__, "rlark_tui."):
        if module.name.endswith("__main__"):
            continue
        for name, value in vars(importlib.import_module(module.name)).items():
            found.update(_patterns(f"{module.name}.{name}", value))
    return found


def test_every_own_pattern_is_linear_on_hostile_runs():
    patterns = own_patterns()
    assert len(patterns) > 80 and "rlark_tui.telemetry.stacks._FRAME" in patterns
    slow = []
    for name, pattern in patterns.items():
        for shape, text in SHAPES.items():
            subject = text.encode("utf-8", "surrogatepass") if isinstance(pattern.pattern, bytes) else text
            started = time.perf_counter()
            pattern.search(subject)
            spent = time.perf_counter() - started
            if spent > BOUND_SECONDS:
                slow.append(f"{name} on {shape}: {spent:.1f} s")
    assert slow == []
