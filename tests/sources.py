"""The package's source files parsed once per test process: several tests hold a rule by reading every module's
AST (one transport, no gc tricks, the derivers), and parsing the ~200 modules takes about 1.6 s each time."""

from __future__ import annotations

import ast
import functools
from pathlib import Path


@functools.cache
def parsed(path: Path) -> ast.Module:
    """The AST of the file at `path` (read-only: it is shared by every test that reads it)."""
    return ast.parse(path.read_text(), str(path))
