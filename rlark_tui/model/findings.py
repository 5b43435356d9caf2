"""A Finding: one problem in a job draft, with its level, the field path it concerns and a plain message.

Shared by loading, validation, the CLI (one line per finding) and the wizard's findings list.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

Level = Literal["error", "warning"]


@dataclass(frozen=True)
class Finding:
    """`level` error (blocks submit) or warning; `field` a path such as `roles[1].selector`."""

    level: Level
    field: str
    message: str

    def __str__(self) -> str:
        return f"{self.level} {self.field}: {self.message}"


def error(field: str, message: str) -> Finding:
    return Finding("error", field, message)


def warning(field: str, message: str) -> Finding:
    return Finding("warning", field, message)


def has_errors(findings: Iterable[Finding]) -> bool:
    return any(f.level == "error" for f in findings)


def ordered(findings: Iterable[Finding]) -> list[Finding]:
    """Errors before warnings, otherwise in the order found; exact duplicates dropped."""
    unique = list(dict.fromkeys(findings))
    return [f for f in unique if f.level == "error"] + [f for f in unique if f.level != "error"]
