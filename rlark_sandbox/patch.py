"""JSON merge patch (RFC 7386) and JSON patch (RFC 6902), the two patch types custom resources accept.
Pure functions; a patch that cannot apply raises PatchError with a one-line reason.
"""

from __future__ import annotations

import copy


class PatchError(ValueError):
    """The patch is malformed or does not apply to the object."""


def merge_patch(target, patch):
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = copy.deepcopy(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def _tokens(pointer: str) -> list[str]:
    if pointer == "":
        return []
    if not pointer.startswith("/"):
        raise PatchError(f"invalid JSON pointer {pointer!r}")
    return [t.replace("~1", "/").replace("~0", "~") for t in pointer[1:].split("/")]


def _index(container: list, token: str, allow_end: bool) -> int:
    if token == "-" and allow_end:
        return len(container)
    if not token.isdigit():
        raise PatchError(f"invalid array index {token!r}")
    index = int(token)
    if index > len(container) or (index == len(container) and not allow_end):
        raise PatchError(f"array index {index} out of range")
    return index


def _parent(doc, pointer: str):
    tokens = _tokens(pointer)
    if not tokens:
        raise PatchError("the whole document cannot be the target here")
    cur = doc
    for token in tokens[:-1]:
        if isinstance(cur, dict) and token in cur:
            cur = cur[token]
        elif isinstance(cur, list):
            cur = cur[_index(cur, token, False)]
        else:
            raise PatchError(f"path {pointer} does not exist")
    return cur, tokens[-1]


def _get(doc, pointer: str):
    cur = doc
    for token in _tokens(pointer):
        if isinstance(cur, dict) and token in cur:
            cur = cur[token]
        elif isinstance(cur, list):
            cur = cur[_index(cur, token, False)]
        else:
            raise PatchError(f"path {pointer} does not exist")
    return cur


def _add(doc, pointer: str, value):
    if pointer == "":
        return value
    parent, token = _parent(doc, pointer)
    if isinstance(parent, dict):
        parent[token] = value
    elif isinstance(parent, list):
        parent.insert(_index(parent, token, True), value)
    else:
        raise PatchError(f"path {pointer} does not exist")
    return doc


def _remove(doc, pointer: str):
    parent, token = _parent(doc, pointer)
    if isinstance(parent, dict) and token in parent:
        return parent.pop(token)
    if isinstance(parent, list):
        return parent.pop(_index(parent, token, False))
    raise PatchError(f"path {pointer} does not exist")


def json_patch(target, operations):
    if not isinstance(operations, list):
        raise PatchError("a JSON patch is a list of operations")
    doc = copy.deepcopy(target)
    for op in operations:
        if not isinstance(op, dict) or "op" not in op or "path" not in op:
            raise PatchError("every JSON patch operation needs 'op' and 'path'")
        kind, path = op["op"], op["path"]
        if kind in ("add", "replace", "test") and "value" not in op:
            raise PatchError(f"operation {kind} needs a value")
        if kind == "add":
            doc = _add(doc, path, copy.deepcopy(op["value"]))
        elif kind == "remove":
            _remove(doc, path)
        elif kind == "replace":
            _get(doc, path)
            if path == "":
                doc = copy.deepcopy(op["value"])
            else:
                _remove(doc, path)
                doc = _add(doc, path, copy.deepcopy(op["value"]))
        elif kind in ("move", "copy"):
            source = op.get("from")
            if source is None:
                raise PatchError(f"operation {kind} needs 'from'")
            value = copy.deepcopy(_get(doc, source))
            if kind == "move":
                _remove(doc, source)
            doc = _add(doc, path, value)
        elif kind == "test":
            if _get(doc, path) != op["value"]:
                raise PatchError(f"test failed at {path}")
        else:
            raise PatchError(f"unknown operation {kind!r}")
    return doc
