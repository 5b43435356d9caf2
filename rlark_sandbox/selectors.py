"""Kubernetes label and field selectors as the API server parses them (=, ==, !=, in, notin, exists, !key).
Pure functions; a malformed selector raises ValueError with a one-line reason.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection
from functools import partial

from rlark_tui.model.objects import dig

_SET = re.compile(r"^\s*(!?)\s*([A-Za-z0-9._/-]+)\s*(?:(notin|in)\s*\(([^)]*)\))?\s*$")
_EQ = re.compile(r"^\s*([A-Za-z0-9._/-]+)\s*(==|=|!=)\s*([A-Za-z0-9._-]*)\s*$")


def _split(selector: str) -> list[str]:
    parts, depth, cur = [], 0, ""
    for ch in selector:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    parts.append(cur)
    return [p for p in parts if p.strip()]


def _label_is(key: str, value: str, labels: dict) -> bool:
    return labels.get(key) == value


def _label_is_not(key: str, value: str, labels: dict) -> bool:
    return labels.get(key) != value


def _label_in(key: str, allowed: Collection[str], labels: dict) -> bool:
    return labels.get(key) in allowed


def _label_not_in(key: str, allowed: Collection[str], labels: dict) -> bool:
    return labels.get(key) not in allowed


def _label_set(key: str, labels: dict) -> bool:
    return key in labels


def _label_unset(key: str, labels: dict) -> bool:
    return key not in labels


def _field(path: list[str], obj: dict) -> str:
    found = dig(obj, *path)
    return "" if found is None else str(found)


def _field_is(path: list[str], value: str, obj: dict) -> bool:
    return _field(path, obj) == value


def _field_is_not(path: list[str], value: str, obj: dict) -> bool:
    return _field(path, obj) != value


def parse_labels(selector: str | None) -> Callable[[dict], bool]:
    """A predicate over a labels dict."""
    reqs: list[Callable[[dict], bool]] = []
    for part in _split(selector or ""):
        eq = _EQ.match(part)
        if eq:
            key, op, value = eq.groups()
            reqs.append(partial(_label_is_not if op == "!=" else _label_is, key, value))
            continue
        st = _SET.match(part)
        if not st:
            raise ValueError(f"unable to parse requirement: {part.strip()!r}")
        neg, key, op, values = st.groups()
        if op:
            if neg:
                raise ValueError(f"unable to parse requirement: {part.strip()!r}")
            allowed = {v.strip() for v in values.split(",") if v.strip()}
            reqs.append(partial(_label_in if op == "in" else _label_not_in, key, allowed))
        else:
            reqs.append(partial(_label_unset if neg else _label_set, key))
    return lambda labels: all(req(labels) for req in reqs)


def parse_fields(selector: str | None, allowed: set[str] | None = None) -> Callable[[dict], bool]:
    """A predicate over an object; `allowed` limits the field paths (others raise ValueError)."""
    reqs: list[Callable[[dict], bool]] = []
    for part in _split(selector or ""):
        eq = _EQ.match(part)
        if not eq:
            raise ValueError(f"invalid field selector: {part.strip()!r}")
        path, op, value = eq.groups()
        if allowed is not None and path not in allowed:
            raise ValueError(f'field label not supported: {path}')
        reqs.append(partial(_field_is_not if op == "!=" else _field_is, path.split("."), value))
    return lambda obj: all(req(obj) for req in reqs)


def object_matcher(labels: str | None, fields: str | None,
                   allowed_fields: set[str] | None = None) -> Callable[[dict], bool]:
    label_match = parse_labels(labels)
    field_match = parse_fields(fields, allowed_fields)
    return lambda obj: label_match((obj.get("metadata") or {}).get("labels") or {}) and field_match(obj)
