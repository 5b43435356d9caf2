"""What importing a module costs, checked in a fresh interpreter: the sandbox package face and its light
submodules load no server (aiohttp only where a Sandbox is built)."""

from __future__ import annotations

import subprocess
import sys


def loaded_after(statement: str, *modules: str) -> list[str]:
    """Which of `modules` a fresh interpreter has loaded after running `statement`."""
    probe = f"import sys\n{statement}\nprint(' '.join(m for m in {modules!r} if m in sys.modules))"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True)
    return done.stdout.split()


def test_the_sandbox_face_loads_no_server():
    assert loaded_after("import rlark_tui.sandbox.seed, rlark_tui.sandbox.plan\n"
                        "from rlark_tui.sandbox import default_state_dir, running_pid",
                        "aiohttp", "rlark_tui.sandbox.instance") == []
    assert loaded_after("from rlark_tui.sandbox import Sandbox", "aiohttp") == ["aiohttp"]
