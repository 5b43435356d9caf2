"""Cluster text parsed by total, bounded functions: numbers (ASCII digits only, with a length bound), JSON and
YAML (bounded in size, depth and aliases).

`str.isdigit` passes `²` and other Unicode digits that `int` refuses, and `int` raises past 4,300 digits: a
hostile nvidia-smi row or RLinf table row read with them stops the read of every Job. These answer None.
A 50,000-deep JSON array makes the standard library's decoder raise RecursionError, and every recursive reader
of a decoded value (a YAML dump, a diff) after it: load_json refuses it with one ValueError naming the bound.
"""

from __future__ import annotations

import json
import math
import re
from functools import cache
from typing import Any

MAX_DIGITS = 18
"""The longest integer read (a step, a GPU index, a count): past it the text is not a number rlark shows."""
MAX_NUMBER_CHARS = 40

_INT = re.compile(rf"[0-9]{{1,{MAX_DIGITS}}}", re.ASCII)
_FLOAT = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]{1,3})?", re.ASCII)


def ascii_digits(text: str) -> bool:
    """Whether `text` is ASCII digits only, however many (`²` and `١` are digits to str.isdigit, not to int or
    to the regex engine): the ASCII characters str.isdecimal takes are 0-9. Two string methods, no regex: a
    follow's reading threads ask it of every line's timestamp (logmerge.parse_timestamp, 20,000 lines/s)."""
    return text.isascii() and text.isdecimal()


def ascii_int(text: str) -> int | None:
    """A non-negative integer of ASCII digits (at most MAX_DIGITS of them), else None."""
    return int(text) if _INT.fullmatch(text) else None


def ascii_float(text: str) -> float | None:
    """A finite decimal number in ASCII (at most MAX_NUMBER_CHARS long), else None."""
    if len(text) > MAX_NUMBER_CHARS or not _FLOAT.fullmatch(text):
        return None
    value = float(text)
    return value if math.isfinite(value) else None


MAX_YAML_DEPTH = 100
"""The deepest nesting of collections a YAML text may have (a draft or Workflow is a few levels deep)."""
MAX_YAML_NODES = 2_000_000
"""The most nodes a YAML text may stand for once its aliases are expanded: a few hundred bytes of anchors and
aliases (the "billion laughs") stand for 10**9 nodes, which every reader of the data would walk."""


MAX_YAML_INT_DIGITS = 4300
"""The most digits an integer in YAML may have: Python's int() refuses more decimal ones, and a base-60 integer
(YAML 1.1's `1:0:0`, one multiplication of a growing number per field) took time quadratic in its length: 400 KB took
14 s, a kubeconfig's 16 MiB hours."""
_YAML_INT = "tag:yaml.org,2002:int"


def _yaml_int(event: Any, loader: type) -> bool:
    """Would `loader` build an integer from this scalar event: tagged `!!int`, or plain and resolved as one?"""
    if event.tag == _YAML_INT:
        return True
    if event.tag not in (None, "!") or not event.implicit[0] or not event.value:
        return False
    resolvers = getattr(loader, "yaml_implicit_resolvers", {}).get(event.value[0], [])
    return any(tag == _YAML_INT and regexp.match(event.value) for tag, regexp in resolvers)


_HEX_DIGIT_DIGITS = math.log10(16)
"""The decimal digits a hexadecimal digit stands for: YAML 1.1's densest integer (`0x` and 3,600 `f` are 4,335
decimal digits, which str() refuses)."""
_SHORTEST_TOO_LARGE = int(MAX_YAML_INT_DIGITS / _HEX_DIGIT_DIGITS)


def _int_digits(text: str) -> float:
    """At least as many decimal digits as the YAML integer `text` has: its hexadecimal digits times log10(16) after
    `0x`, else its digits 0-9 (as many as or more than an octal, binary or base-60 integer has)."""
    sign, marker, hexadecimal = text.lower().partition("0x")
    if marker and sign.strip("+-") == "":
        return sum(char in "0123456789abcdef" for char in hexadecimal) * _HEX_DIGIT_DIGITS
    return sum(text.count(digit) for digit in "0123456789")


class YamlBound(ValueError):
    """A YAML text past one of the bounds above; the message (after the text's name) names the bound."""


def load_yaml(text: str, loader: type, *, max_depth: int = MAX_YAML_DEPTH, max_nodes: int = MAX_YAML_NODES):
    """The data of one YAML document, read by `loader` (a safe loader) once its events show it within
    `max_depth` levels and `max_nodes` nodes with aliases expanded (YamlBound otherwise, before anything is
    built). yaml.YAMLError propagates for text that is not YAML."""
    import yaml

    weights: dict[str, int] = {}
    open_: list[tuple[int, str | None]] = []  # (nodes so far, anchor) of each open collection
    total = 0
    for event in yaml.parse(text, Loader=loader):
        if isinstance(event, yaml.CollectionStartEvent):
            open_.append((1, event.anchor))
            if len(open_) > max_depth:
                raise YamlBound(f"is nested deeper than {max_depth} levels")
            continue
        if isinstance(event, yaml.CollectionEndEvent):
            nodes, anchor = open_.pop()
            if anchor is not None:
                weights[anchor] = nodes
        elif isinstance(event, yaml.ScalarEvent):
            nodes = 1
            if event.anchor is not None:
                weights[event.anchor] = 1
            if len(event.value) > _SHORTEST_TOO_LARGE and _yaml_int(event, loader) and _int_digits(
                    event.value) > MAX_YAML_INT_DIGITS:
                raise YamlBound(f"holds a number too large to read (more than {MAX_YAML_INT_DIGITS} digits)")
        elif isinstance(event, yaml.AliasEvent):
            if any(anchor == event.anchor for _nodes, anchor in open_):
                raise YamlBound("refers to itself (an alias inside the collection its anchor names)")
            nodes = weights.get(event.anchor, 1) if event.anchor is not None else 1
        else:
            continue
        if open_:
            count, anchor = open_[-1]
            open_[-1] = (count + nodes, anchor)
        else:
            total += nodes
        if nodes > max_nodes or (open_ and open_[-1][0] > max_nodes) or total > max_nodes:
            raise YamlBound(f"stands for more than {max_nodes:,} nodes once its aliases are expanded")
    return yaml.load(text, Loader=_guarded(loader))


@cache
def _guarded(loader: type) -> type:
    """`loader` whose building of a value its tag or form cannot hold (`!!bool maybe`, `!!timestamp x`, the date
    `0000-01-01`) raises yaml's ConstructorError at that value's line and column, as for any other YAML it cannot
    read: PyYAML's constructors let KeyError, AttributeError and ValueError through, which every reader took for a
    number past its bound or did not expect at all (a crash report)."""
    import yaml

    class Guarded(loader):  # type: ignore[valid-type,misc]
        def construct_object(self, node: Any, deep: bool = False) -> Any:
            try:
                return super().construct_object(node, deep)
            except (ValueError, KeyError, AttributeError, TypeError, OverflowError):
                kind = node.tag.rpartition(":")[2] or "its tag says"
                raise yaml.constructor.ConstructorError(None, None, f"cannot read the value as {kind}",
                                                        node.start_mark) from None

    return Guarded


MAX_JSON_DEPTH = 64
"""The deepest nesting of arrays and objects a JSON text may have (a Job's spec in an annotation is a dozen levels
deep): the recursive readers of a decoded value (YAML dumps, diffs, the redaction) stay far from Python's limit."""
MAX_JSON_BYTES = 4 * 2**20
"""The longest JSON text load_json reads by default (all of a Job's annotations are at most 256 KiB)."""


SMALL_JSON_BYTES = 64 * 1024
"""A JSON text up to this long is read by the standard library alone: orjson is faster on long texts, but importing
it costs a process 14 ms (with dataclasses), and `rlark status --tmux`, which tmux runs every few seconds, reads a
few KiB."""


class JsonBound(ValueError):
    """A JSON text past one of the bounds of load_json; the message names the bound."""


def load_json(text: str | bytes, *, max_bytes: int = MAX_JSON_BYTES, max_depth: int | None = MAX_JSON_DEPTH
              ) -> Any:
    """The value of one JSON text: the standard library's for a text of at most SMALL_JSON_BYTES, else orjson's,
    else (invalid UTF-8 replaced, NaN, numbers past a double) the standard library's. ValueError for text that is not JSON; JsonBound (a ValueError) for one longer than `max_bytes` or
    nested deeper than `max_depth` (None: as deep as the decoders go, 1,024 levels), never RecursionError.
    An integer past 64 bits (which orjson refuses) is kept as its text when it has more than MAX_DIGITS digits:
    no reader takes a 5,000-digit step or replica count for a number, and `int` would raise past 4,300 digits.
    A number past a double (`1e400`) and `NaN`, `Infinity`, `-Infinity` (which orjson refuses too) are kept as
    their text, never inf or nan: a reader of a number takes them as a value of the wrong type, and JSON written
    from the value stays JSON (TensorBoard's own answers spell a NaN loss "NaN": telemetry.progress reads it)."""
    if len(text) > max_bytes:
        raise JsonBound(f"is larger than {max_bytes:,} bytes")
    try:
        # orjson reads 1,024 levels where the standard library's recursion limit ends first
        value = _standard(text) if len(text) <= SMALL_JSON_BYTES else _native(text, max_depth)
    except RecursionError:
        value = _native(text, max_depth)
    if max_depth is not None and nested_deeper(value, max_depth):
        raise JsonBound(f"is nested deeper than {max_depth} levels")
    return value


def _standard(text: str | bytes) -> Any:
    decoded = text.decode("utf-8", "replace") if isinstance(text, bytes) else text
    return json.loads(decoded, parse_int=_bounded_int, parse_float=_finite_float, parse_constant=str)


def _native(text: str | bytes, max_depth: int | None) -> Any:
    import orjson

    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        try:
            return _standard(text)
        except RecursionError:
            raise JsonBound(f"is nested deeper than {max_depth or 1024} levels") from None


def _bounded_int(text: str) -> int | str:
    digits = len(text.lstrip("-"))
    if digits <= MAX_DIGITS:
        return int(text)
    if digits <= 20 and -2**63 <= (value := int(text)) < 2**64:
        return value  # as orjson reads it: a text's numbers are the same whichever decoder its length chose
    return text


def _finite_float(text: str) -> float | str:
    value = float(text)
    return value if math.isfinite(value) else text


def nested_deeper(value: object, limit: int) -> bool:
    """Whether `value` nests arrays and objects deeper than `limit` (a walk without recursion)."""
    stack = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        children = node.values() if isinstance(node, dict) else node if isinstance(node, list) else None
        if children is None:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children if isinstance(child, (dict, list)))
    return False
