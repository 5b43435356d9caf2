"""Name the tests that passed only on .ci/run's rerun: those failed on the first pass (pytest's lastfailed cache
copied before the rerun, FIRST) and are no longer failed after it (the cache the rerun left, AFTER).

    python .ci/flaky.py FIRST AFTER     prints them under one heading, or nothing when there are none
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def failed(path: Path) -> set[str]:
    """The node ids a lastfailed cache file names (none when the file is missing: nothing failed)."""
    try:
        return set(json.loads(path.read_text()))
    except FileNotFoundError:
        return set()


def passed_on_rerun(first: Path, after: Path) -> list[str]:
    return sorted(failed(first) - failed(after))


def main(argv: list[str]) -> int:
    flaky = passed_on_rerun(Path(argv[0]), Path(argv[1]))
    if flaky:
        print("ci: passed only on the rerun (flaky, to fix):")
        for node in flaky:
            print(f"  {node}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
