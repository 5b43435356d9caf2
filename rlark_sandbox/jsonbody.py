"""A request body's JSON read as the platform's Go servers read it: the control plane (kcp, on the apiserver's
libraries: sigs.k8s.io/json, a fork of Go's encoding/json) and RLark's gateway take 10,000 levels of nesting and
refuse a deeper body (400), where Python's decoder recurses and raised RecursionError past ~990 levels (a 500).
"""

from __future__ import annotations

import json
import re

MAX_DEPTH = 10_000
"""Go's encoding/json maxNestingDepth: past it the body is refused, `invalid character '{' exceeded max depth`."""
KEPT_DEPTH = 64
"""A body nested deeper than Python decodes has what lies below this depth decoded as empty: nothing the sandbox
keeps nests that deep (a CRD's schema prunes unknown fields, and the rlinf.io CRDs' deepest field is 18 levels
down), so the pruning and its warning are those of the whole body."""

_TOKEN = re.compile(r"""[ \t\r\n]*(?:"(?:[^"\\\x00-\x1f]|\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4}))*"|-?(?:0|[1-9][0-9]*)"""
                    r"""(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?|true|false|null|[\[\]{},:])""")
_CLOSE = {"[": "]", "{": "}"}


def loads(data: bytes) -> object:
    """The JSON value of `data` (an empty body is null); ValueError when Go's decoder would refuse it."""
    try:
        return json.loads(data or b"null")
    except RecursionError:
        pass
    text = data.decode("utf-8")
    _check(text)
    return json.loads(_cut(text))


def _check(text: str) -> None:
    """ValueError unless `text` is one JSON value nested at most MAX_DEPTH deep (read without recursion)."""
    stack: list[str] = []
    expect = "value"  # value, first-value ([ read), key, first-key ({ read), colon, next (, or the close), end
    at, end = 0, len(text.rstrip(" \t\r\n"))
    while at < end:
        found = _TOKEN.match(text, at)
        if found is None:
            raise ValueError(f"invalid character {text[at]!r} at {at}")
        token, at = found.group().lstrip(" \t\r\n"), found.end()
        char = token[0]
        if expect == "end" or (char in ",:]}" and not _fits(char, expect, stack)) or \
                (expect in ("key", "first-key") and char not in '"}') or \
                (expect == "colon" and char != ":") or (expect == "next" and char not in ",]}"):
            raise ValueError(f"invalid character {char!r} at {found.start()}")
        if char in "[{":
            stack.append(char)
            if len(stack) > MAX_DEPTH:
                raise ValueError(f"invalid character {char!r} exceeded max depth")
            expect = "first-value" if char == "[" else "first-key"
        elif char in "]}":
            stack.pop()
            expect = "next" if stack else "end"
        elif char == ",":
            expect = "value" if stack[-1] == "[" else "key"
        elif char == ":":
            expect = "value"
        elif expect in ("key", "first-key"):
            expect = "colon"
        else:
            expect = "next" if stack else "end"
    if expect != "end":
        raise ValueError("unexpected end of JSON input")


def _fits(char: str, expect: str, stack: list[str]) -> bool:
    """Whether the punctuation `char` may come where `expect` says."""
    if char == ",":
        return expect == "next"
    if char == ":":
        return expect == "colon"
    opened = stack[-1] if stack else ""
    return _CLOSE.get(opened) == char and (expect == "next" or expect == ("first-value" if char == "]"
                                                                          else "first-key"))


def _cut(text: str) -> str:
    """`text` (valid JSON) with each array or object that begins deeper than KEPT_DEPTH written empty."""
    pieces: list[str] = []
    depth, kept_to = 0, 0
    for found in re.finditer(r'"(?:[^"\\]|\\.)*"|[\[\]{}]', text):
        char = text[found.start()]
        if char in "[{":
            depth += 1
            if depth == KEPT_DEPTH + 1:
                pieces.append(text[kept_to:found.start()] + ("[]" if char == "[" else "{}"))
        elif char in "]}":
            if depth == KEPT_DEPTH + 1:
                kept_to = found.end()
            depth -= 1
    return "".join(pieces) + text[kept_to:]
