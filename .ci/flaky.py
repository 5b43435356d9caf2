"""Name the tests that passed only on .ci/run's rerun: those failed on the first pass (pytest's lastfailed cache
copied before the rerun, FIRST) and are no longer failed after it (the cache the rerun left, AFTER).

    python .ci/flaky.py FIRST AFTER     prints them under one heading, or nothing when there are none
    python .ci/flaky.py --ids FIRST     prints the node ids to run again, one a line

pytest-xdist's loadgroup names a grouped test `<node id>@<group>` in the cache; a run in one process knows it as
`<node id>`, so the group is taken off (else `--last-failed` finds nothing to run and the failure goes unseen).
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

GROUP = re.compile(r"@[A-Za-z0-9_.-]+$")
"""xdist's `@<group>` suffix (a parametrized id ends with `]`, so it is never taken for one)."""


def failed(path: Path) -> set[str]:
    """The node ids a lastfailed cache file names (none when the file is missing: nothing failed)."""
    try:
        return {GROUP.sub("", key) for key in json.loads(path.read_text())}
    except FileNotFoundError:
        return set()


def passed_on_rerun(first: Path, after: Path) -> list[str]:
    return sorted(failed(first) - failed(after))


def main(argv: list[str]) -> int:
    if argv[0] == "--ids":
        for node in sorted(failed(Path(argv[1]))):
            print(node)
        return 0
    flaky = passed_on_rerun(Path(argv[0]), Path(argv[1]))
    if flaky:
        print("ci: passed only on the rerun (flaky, to fix):")
        for node in flaky:
            print(f"  {node}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
