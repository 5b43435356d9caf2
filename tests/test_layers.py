"""The import rules of docs/architecture.md: one import-linter contract per row of its table ("The rule of each
folder"), in pyproject.toml's `[tool.importlinter]` with each exception and its reason. `lint-imports` keeps them
all (imports inside functions count too), every row of the table names the contract that enforces it, and a
breach is caught."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
LINT = [sys.executable, "-c", "import sys; from importlinter.cli import lint_imports_command; "
                              "sys.exit(lint_imports_command())"]


def contracts() -> dict[str, dict]:
    config = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["importlinter"]
    return {contract["id"]: contract for contract in config["contracts"]}


def table_rows() -> list[tuple[str, str]]:
    """(folder or module, the `enforced by` cell) of each row of the architecture doc's folder table."""
    text = (REPO / "docs" / "architecture.md").read_text()
    table = text.split("## The rule of each folder", 1)[1].split("\n\n", 2)[1]
    rows = [line.strip("|").split("|") for line in table.splitlines() if line.startswith("| `")]
    return [(cells[0].strip(), cells[-1].strip()) for cells in rows]


def lint(cwd: Path, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([*LINT, "--no-cache", *args], cwd=cwd, capture_output=True, text=True, timeout=120,
                          env=env)


def test_every_contract_is_kept():
    done = lint(REPO)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert f"Contracts: {len(contracts())} kept, 0 broken." in done.stdout


def test_every_row_of_the_architecture_table_names_the_contract_that_enforces_it():
    named = {}
    for folder, cell in table_rows():
        ids = re.findall(r"`([a-z-]+)`", cell)
        assert ids or cell.startswith("—"), f"{folder}: no contract named in {cell!r}"
        named.update({contract: folder for contract in ids})
    assert set(named) == set(contracts()), "rows and contracts differ"


def test_a_breach_is_caught(tmp_path):
    """A screen importing threading and (inside a function) the cluster layer, and a model module importing
    Textual, break the same contracts the project keeps."""
    root = tmp_path / "breach"
    for folder in ("", "screens", "model", "cluster"):
        (root / folder).mkdir(exist_ok=True)
        (root / folder / "__init__.py").write_text("")
    (root / "screens" / "bad.py").write_text("import threading\n\ndef f():\n    from ..cluster import access\n")
    (root / "cluster" / "access.py").write_text("")
    (root / "model" / "bad.py").write_text("from textual.widget import Widget\n")
    kept = contracts()
    lines = ["[tool.importlinter]", 'root_packages = ["breach"]', "include_external_packages = true"]
    for name, contract_id in (("screens", "screens"), ("model", "pure")):
        contract = kept[contract_id]
        lines += ["[[tool.importlinter.contracts]]", f'name = "{name}"', 'type = "forbidden"',
                  f'source_modules = ["breach.{name}"]',
                  "forbidden_modules = [" + ", ".join(
                      f'"{m}"' for m in ["breach.cluster", *contract["forbidden_modules"]]
                      if not m.startswith("rlark_tui.")) + "]"]
    (tmp_path / "contracts.toml").write_text("\n".join(lines) + "\n")
    done = lint(tmp_path, "contracts.toml", env={**os.environ, "PYTHONPATH": str(tmp_path)})
    assert done.returncode == 1 and "Contracts: 0 kept, 2 broken." in done.stdout, done.stdout + done.stderr
    for breach in ("breach.screens.bad -> threading", "breach.screens.bad -> breach.cluster",
                   "breach.model.bad -> textual (l.1)"):
        assert breach in done.stdout
