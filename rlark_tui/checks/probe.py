"""The output probe: list a run's output path visible to this machine with sizes, modification times and sha256.

I/O (reads files only, never writes); the run check judges the listing (checks/rules.py, check 5).
"""

from __future__ import annotations

import hashlib
import os
from datetime import datetime, timezone
from pathlib import Path

from rlark_tui.checks.evidence import OutputFile, OutputProbe

MAX_FILES = 2000
HASH_BUDGET_BYTES = 512 * 1024 * 1024
"""Read back (sha256) the newest files first, up to this many bytes in total; larger trees get partial checksums."""


def _sha256(path: Path) -> str | None:
    digest = hashlib.sha256()
    try:
        with path.open("rb") as handle:
            for chunk in iter(lambda: handle.read(1024 * 1024), b""):
                digest.update(chunk)
    except OSError:
        return None
    return digest.hexdigest()


def probe_output(location: str) -> OutputProbe:
    """List the files under a local output path (or the single file it names), newest first, read back."""
    if "://" in location or not location.startswith("/"):
        return OutputProbe(location, error="not a local path visible to this machine; object-storage listings "
                                           "through the gateway are not read by rlark check")
    root = Path(location)
    if not root.exists():
        return OutputProbe(location)
    if not os.access(root, os.R_OK):
        return OutputProbe(location, error="not readable by this user")
    found: list[tuple[Path, os.stat_result]] = []
    paths = [root] if root.is_file() else (Path(d) / f for d, _, files in os.walk(root) for f in files)
    for path in paths:
        try:
            stat = path.stat()
        except OSError:
            continue
        if path.is_file():
            found.append((path, stat))
        if len(found) >= MAX_FILES:
            break
    found.sort(key=lambda item: item[1].st_mtime, reverse=True)
    budget = HASH_BUDGET_BYTES
    files = []
    for path, stat in found:
        checksum = None
        if stat.st_size <= budget:
            checksum = _sha256(path)
            budget -= stat.st_size
        files.append(OutputFile(str(path), stat.st_size,
                                datetime.fromtimestamp(stat.st_mtime, tz=timezone.utc), checksum))
    return OutputProbe(location, tuple(files))
