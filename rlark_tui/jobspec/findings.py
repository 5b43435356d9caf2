"""A Finding: one problem in a job draft, with its level, the field path it concerns and a plain message.

Shared by loading, validation, the CLI (one line per finding) and the wizard's findings list.
"""

from __future__ import annotations

import json
import re
import unicodedata
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
        """`error <field>: <message>` on one line."""
        return one_line(f"{self.level} {self.field}: {self.message}")


_PLAIN_KEY = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_./-]*$")


def field_path(base: str, key: object) -> str:
    """`base.key` for ordinary keys, `base["odd key"]` (JSON-quoted) for keys with spaces, colons or controls."""
    text = str(key)
    if _PLAIN_KEY.match(text):
        return f"{base}.{text}" if base else text
    return f"{base}[{json.dumps(text)}]"


def one_line(text: str) -> str:
    """`text` with line breaks and other control characters escaped, so it prints as exactly one line."""
    return "".join(
        ch if ch == " " or not (unicodedata.category(ch)[0] in "CZ") else ch.encode("unicode_escape").decode()
        for ch in text)


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
