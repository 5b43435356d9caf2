"""What importing a module costs, checked in a fresh interpreter: the sandbox package face and its light
submodules load no server (aiohttp only where a Sandbox is built); the headless commands and model/ load no
Textual (docs/architecture.md; the import contracts are tests/test_layers.py); the TUI's job list paints before
the full kubernetes client and the filter's regex engine are loaded."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def loaded_after(statement: str, *modules: str) -> list[str]:
    """Which of `modules` a fresh interpreter has loaded after running `statement`."""
    probe = f"import sys\n{statement}\nprint(' '.join(m for m in {modules!r} if m in sys.modules))"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True)
    return done.stdout.split()


def test_the_sandbox_face_loads_no_server():
    assert loaded_after("import rlark_sandbox.seed, rlark_sandbox.plan\n"
                        "from rlark_sandbox import default_state_dir, running_pid",
                        "aiohttp", "rlark_sandbox.instance") == []
    assert loaded_after("from rlark_sandbox import Sandbox", "aiohttp") == ["aiohttp"]


HEADLESS = ("rlark_tui.cli", "rlark_tui.flow.reconciler", "rlark_tui.flow.polls", "rlark_tui.flow.alertpoll", "rlark_tui.flow.actions")


def test_the_headless_commands_and_model_load_no_textual():
    """Every module of model/, checks/, cluster/ and commands/ (but `rlark demo`, which opens the TUI), the
    reconciler `rlark watch` runs, and `rlark version` run to the end: Textual is never loaded."""
    import pkgutil

    import rlark_tui

    names = [f"rlark_tui.{folder}.{info.name}" for folder in ("model", "checks", "cluster", "commands")
             for info in pkgutil.iter_modules([str(Path(rlark_tui.__file__).parent / folder)])
             if f"{folder}.{info.name}" != "commands.demo"]
    statement = "\n".join(f"import {name}" for name in (*names, *HEADLESS))
    statement += ("\nimport contextlib, io\nfrom rlark_tui.cli import main\n"
                  "with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):\n"
                  "    main(['version'])")
    assert loaded_after(statement, "textual", "rlark_tui.tui.app", "rlark_tui.screens") == []


def test_the_tui_loads_no_kubernetes_client_nor_regex_before_its_first_list():
    """Everything `rlark` imports to open the TUI and paint the job list (bench/startup.py): the ApiClient (with
    pydantic and dateutil), cryptography, websocket, regex and urllib3 (the first list is read over
    cluster/lean.py) come later, with the reads that need them."""
    assert loaded_after("import rlark_tui.cli, rlark_tui.cluster.lean, rlark_tui.tui.app",
                        "kubernetes.client.api_client", "pydantic", "dateutil", "cryptography", "websocket", "regex",
                        "urllib3") == []
