"""A child process for the install tests: block the [sandbox] extra's packages (Ray, aiohttp, TensorBoard), then
run the console and report as JSON (the last stdout line).

`tui KUBECONFIG NAME`: import every console module, build the whole parser, paint the TUI's first screen until
NAME shows; `cli ARGS...`: run `rlark ARGS...`.
"""

from __future__ import annotations

import asyncio
import importlib
import io
import json
import pkgutil
import sys
import time
from contextlib import redirect_stderr, redirect_stdout

BLOCKED = ("ray", "aiohttp", "tensorboard", "tensorboardX")


class Blocker:
    """A meta-path finder that refuses the sandbox's packages, as an install without the extra lacks them."""

    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCKED:
            raise ModuleNotFoundError(f"No module named {name!r} (blocked: not in the console core)", name=name)
        return None


def console_modules() -> list[str]:
    """Every rlark_tui module except the sandbox package (the [sandbox] extra's), imported."""
    import rlark_tui
    names, packages = [], [(rlark_tui.__path__, "rlark_tui.")]
    while packages:
        path, prefix = packages.pop()
        for info in pkgutil.iter_modules(path, prefix):
            if info.name.startswith("rlark_sandbox") or info.name.endswith("__main__"):
                continue
            module = importlib.import_module(info.name)
            names.append(info.name)
            if info.ispkg:
                packages.append((module.__path__, info.name + "."))
    return names


async def first_screen(kubeconfig: str, name: str) -> dict:
    from rlark_tui.cluster.access import ClusterAccess
    from rlark_tui.tui.app import RlarkApp
    from rlark_tui.widgets.status_header import StatusHeader

    access = ClusterAccess.open(kubeconfig, None)
    app = RlarkApp(access)
    try:
        async with app.run_test(size=(120, 40)) as pilot:
            deadline = time.monotonic() + 30
            shown = False
            while not shown and time.monotonic() < deadline:
                await pilot.pause(0.1)
                shown = name in app.export_screenshot()
            header = app.screen.query_one(StatusHeader)
            return {"shown": shown, "header_dock": header.styles.dock,
                    "stylesheets": sorted({str(key[0]) for key in app.stylesheet.source if str(key[0]).endswith(".tcss")})}
    finally:
        access.close()


def main(argv: list[str]) -> dict:
    sys.meta_path.insert(0, Blocker())
    import rlark_tui
    report: dict = {"package": rlark_tui.__file__}
    if argv[0] == "tui":
        report["modules"] = console_modules()
        from rlark_tui.cli import build_parser
        report["commands"] = sorted(build_parser()._subparsers._group_actions[0].choices)
        report.update(asyncio.run(first_screen(argv[1], argv[2])))
    else:
        from rlark_tui.cli import main as rlark
        out, err = io.StringIO(), io.StringIO()
        with redirect_stdout(out), redirect_stderr(err):
            report["code"] = rlark(argv[1:])
        report["stdout"], report["stderr"] = out.getvalue(), err.getvalue()
    report["blocked_loaded"] = sorted(name for name in sys.modules if name.split(".")[0] in BLOCKED)
    return report


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1:])))
