"""The layer rules of docs/architecture.md, read from each module's imports with `ast` (every import statement,
also those inside functions): screens and widgets reach no cluster or HTTP code, screens start no threads, and
model/ and checks/ stay pure (the run check's I/O edges excepted, by name)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "rlark_tui"
HTTP_CLIENTS = ("urllib3", "kubernetes", "requests", "httpx", "aiohttp", "urllib.request", "http.client",
                "websocket", "websockets")
UI = ("textual", "rich_pixels", "rlark_tui.app", "rlark_tui.screens", "rlark_tui.widgets", "rlark_tui.messages")
RULES = {
    "screens": ("rlark_tui.cluster", "rlark_tui.raydash", *HTTP_CLIENTS, "threading"),
    "widgets": ("rlark_tui.cluster", "rlark_tui.raydash", *HTTP_CLIENTS),
    "model": (*UI, "rlark_tui.cluster", "rlark_tui.raydash", "rlark_tui.actions", "rlark_tui.sandbox"),
    "checks": (*UI, "rlark_tui.cluster", "rlark_tui.raydash", "rlark_tui.actions", "rlark_tui.sandbox"),
}
IO_EDGES = {"checks/gather.py", "checks/probe.py", "checks/records.py"}
"""The run check's I/O edges: they read the cluster, probe outputs and write records, by design."""


def imported(path: Path, root: Path) -> set[str]:
    """Every module name an import statement in `path` names (`from a import b` gives `a` and `a.b`)."""
    names: set[str] = set()
    package = ".".join(path.relative_to(root.parent).with_suffix("").parts[:-1])
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{parent}.{base}" if base else parent
            names.add(base)
            names.update(f"{base}.{alias.name}" for alias in node.names)
    return names


def forbidden(name: str, rules: tuple[str, ...]) -> bool:
    return any(name == rule or name.startswith(rule + ".") for rule in rules)


def violations(folder: str, root: Path = PACKAGE) -> list[str]:
    found = []
    for path in sorted((root / folder).rglob("*.py")):
        relative = path.relative_to(root).as_posix()
        if relative in IO_EDGES:
            continue
        bad = sorted(name for name in imported(path, root) if forbidden(name, RULES[folder]))
        found += [f"{relative} imports {name}" for name in bad]
    return found


@pytest.mark.parametrize("folder", sorted(RULES))
def test_layer_rules(folder):
    assert violations(folder) == []


def test_the_rules_catch_a_breach(tmp_path):
    """A screen importing threading and (inside a function, relatively) the cluster layer, a model module
    importing Textual, and a checks module other than the I/O edges importing the cluster layer all fail."""
    root = tmp_path / "rlark_tui"
    for folder in ("screens", "model", "checks"):
        (root / folder).mkdir(parents=True)
    (root / "screens" / "bad.py").write_text("import threading\n\ndef f():\n    from ..cluster import access\n")
    (root / "model" / "bad.py").write_text("from textual.widget import Widget\n")
    (root / "checks" / "rules.py").write_text("from rlark_tui.cluster.access import ClusterAccess\n")
    (root / "checks" / "gather.py").write_text("from rlark_tui.cluster.access import ClusterAccess\n")
    assert violations("screens", root) == ["screens/bad.py imports rlark_tui.cluster",
                                           "screens/bad.py imports rlark_tui.cluster.access",
                                           "screens/bad.py imports threading"]
    assert violations("model", root) == ["model/bad.py imports textual.widget",
                                         "model/bad.py imports textual.widget.Widget"]
    assert violations("checks", root) == ["checks/rules.py imports rlark_tui.cluster.access",
                                          "checks/rules.py imports rlark_tui.cluster.access.ClusterAccess"]
