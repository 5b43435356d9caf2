"""rlark's own regular expressions run over cluster text without a budget (a log line may be 16 MiB, a Ray
traceback answer 4 MiB, an alert line is a Job's whole status message): each must take time linear in its input.
Every compiled pattern at module level in rlark_tui, and every module-level pattern text a module compiles at
first need (`compiled(NAME)`, text.sanitize), is searched over runs of 10,000 characters of the shapes that
make a backtracking engine quadratic (a run that a quantifier, a lazy group and a later start can each claim, with
no end that matches). A second fresh round found four: py-spy's frame line (`Thread …` then 20,000 spaces and
`x (`: 5 s, 4 MiB some hours), an RLinf table cell of spaces (`│` + spaces + `x│a=1`), the chat sink's
`scheme://` (an alert of 60 KB `ab.ab.…`: 38 s per webhook delivery) and `--since`'s duration; then, in the run
check's table of log signatures, `import ray` (a Header log line of 5,000 `ImportError: `: 10 s in rlark check)."""

from __future__ import annotations

import ast
import importlib
import pkgutil
import re
import time
from collections.abc import Mapping
from pathlib import Path

import rlark_tui
from rlark_tui.text.sanitize import compiled
from tests.sources import parsed

N = 10_000
SHAPES = {"spaces": " " * N + "x (", "spaces-nul": " " * N + "\x00", "tabs": "\t" * N + "x", "newlines": "\n" * N + "x",
          "letters": "a" * N + "!", "upper": "A" * N + "!", "digits": "1" * N + "x", "digit-dots": "1." * N + "x",
          "words-dots": "ab." * N + "1", "dashes": "a-" * N, "parens": " (" * N, "colons": ":" * N + "x",
          "equals": "a=" * N, "quotes": '"' * N, "words": " a" * N + "!", "dots": "." * N + "!",
          "brackets": "[" * N, "pipes": "|" * N + "x", "commas": ", " * N, "key": "key=" + "a" * N + "=",
          "import-errors": "ImportError: " * (N // 4), "import-rays": "import ray " * (N // 4)}
BOUND_SECONDS = 0.5
"""A linear search of 10,000 characters takes under a millisecond; a quadratic one seconds: acc6d58's five
(logscan's `import ray`, `--since`'s duration, the RLinf table cell, base64 runs, the sandbox's label sets) took
1.3-7.3 s each on runs of 10,000 (0.1-1.6 s on 5,000), and 7842e41's py-spy frame line and chat scheme 1.9 and
6.5 s."""


def _patterns(where: str, value: object, depth: int = 0) -> dict[str, re.Pattern]:
    """The patterns `value` is or holds (in tuples, lists and mappings, a few levels down: a table of signatures)."""
    if isinstance(value, re.Pattern):
        return {where: value}
    found: dict[str, re.Pattern] = {}
    items = value.items() if isinstance(value, Mapping) else enumerate(value) if isinstance(value, (tuple, list)) else ()
    for key, item in items if depth < 3 else ():
        found.update(_patterns(f"{where}[{key!r}]", item, depth + 1))
    return found


def _compiled_at_first_need(module) -> dict[str, re.Pattern]:
    """The module-level pattern texts `module` compiles when first needed (`compiled(NAME)`, text.sanitize), compiled
    here: a plain `rlark get` compiles none of them, so they are no compiled pattern at module level. Only a module
    whose source names `compiled` is parsed and walked (6 of some 200)."""
    found: dict[str, re.Pattern] = {}
    path = Path(module.__file__)
    if "compiled" not in path.read_text():
        return found
    for node in ast.walk(parsed(path)):
        if isinstance(node, ast.Call) and ast.unparse(node.func).endswith("compiled") and len(node.args) == 1 \
                and isinstance(node.args[0], ast.Name) and isinstance(getattr(module, node.args[0].id, None), str):
            found[f"{module.__name__}.{node.args[0].id}"] = compiled(getattr(module, node.args[0].id))
    return found


def own_patterns() -> dict[str, re.Pattern]:
    found = {}
    for info in pkgutil.walk_packages(rlark_tui.__path__, "rlark_tui."):
        if info.name.endswith("__main__"):
            continue
        module = importlib.import_module(info.name)
        for name, value in vars(module).items():
            found.update(_patterns(f"{info.name}.{name}", value))
        found.update(_compiled_at_first_need(module))
    return found


def test_every_own_pattern_is_linear_on_hostile_runs():
    patterns = own_patterns()
    assert len(patterns) > 80 and "rlark_tui.telemetry.stacks._FRAME" in patterns
    assert {"rlark_tui.text.sinks._DOT", "rlark_tui.text.sanitize._SEQUENCE"} <= patterns.keys()
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
