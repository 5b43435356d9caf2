"""RLinf 0.3.0 as released, for fixture logs: its wheel fetched from the package registry without dependencies
(`pip download rlinf==0.3.0 --no-deps`, cached under pytest's cache dir, fetched by one xdist worker while the
others wait for it), `print_metrics_table` loaded alone from `rlinf/utils/metric_utils.py` (the module imports
heavy things; the function needs only `os` and `time`), and the reasoning runners' tqdm bar driven with RLinf's
own arguments.

Tests that use it skip with the reason when the registry cannot be reached.
"""

from __future__ import annotations

import ast
import contextlib
import fcntl
import io
import os
import subprocess
import sys
import types
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pytest

REQUIREMENT = "rlinf==0.3.0"
MODULE = "rlinf/utils/metric_utils.py"
FUNCTION = "print_metrics_table"
DOWNLOAD_SECONDS = 120


def wheel(cache: Path) -> Path:
    """The cached wheel, downloaded on first use; skips the test when the registry does not answer."""
    found = sorted(cache.glob("rlinf-0.3.0-*.whl"))
    if found:
        return found[0]
    try:
        result = subprocess.run([sys.executable, "-m", "pip", "download", REQUIREMENT, "--no-deps",
                                 "--disable-pip-version-check", "-q", "-d", str(cache)],
                                capture_output=True, text=True, timeout=DOWNLOAD_SECONDS)
    except subprocess.TimeoutExpired:
        pytest.skip(f"the package registry did not deliver {REQUIREMENT} within {DOWNLOAD_SECONDS} s")
    found = sorted(cache.glob("rlinf-0.3.0-*.whl"))
    if result.returncode != 0 or not found:
        last = (result.stderr.strip().splitlines() or ["no output"])[-1]
        pytest.skip(f"the package registry is unreachable for {REQUIREMENT}: {last}")
    return found[0]


def function_source(wheel_path: Path) -> str:
    """The source of `print_metrics_table` as the wheel ships it (nothing else of the module)."""
    with zipfile.ZipFile(wheel_path) as archive:
        source = archive.read(MODULE).decode("utf-8")
    for node in ast.parse(source).body:
        if isinstance(node, ast.FunctionDef) and node.name == FUNCTION:
            return ast.get_source_segment(source, node)
    raise AssertionError(f"{MODULE} in {wheel_path.name} has no {FUNCTION}")


@dataclass
class Release:
    source: str
    """`print_metrics_table`'s own source."""

    def table(self, step: int, total: int, elapsed: float, metrics: dict, start_step: int = 0) -> str:
        """What RLinf prints on stdout after completed step `step` (1-based; RLinf is called with step-1),
        `elapsed` seconds after its start time."""
        now = 1_700_000_000.0
        namespace = {"os": os, "time": types.SimpleNamespace(time=lambda: now)}
        exec(compile(self.source, MODULE, "exec"), namespace)
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            namespace[FUNCTION](step - 1, total, now - elapsed, metrics, start_step=start_step)
        return out.getvalue()

    def printer(self, path: Path, total: int, seconds: float, metrics: str) -> Path:
        """A run script that prints RLinf's real table after each of `total` steps, `seconds` apart, then
        sleeps; `metrics` is a Python expression of `step` giving the metrics dict."""
        path.write_text(
            "import os, sys, time\n\n" + self.source + "\n\n"
            "start = time.time()\n"
            f"for step in range({total}):\n"
            f"    time.sleep({seconds!r})\n"
            f"    {FUNCTION}(step, {total}, start, {metrics})\n"
            "    sys.stdout.flush()\n"
            "time.sleep(3600)\n")
        return path


def tqdm_run(steps: int, seconds_per_step: float, postfix, initial: int = 0, close: bool = False) -> str:
    """What a reasoning runner writes on stderr: `tqdm(initial=..., total=max_steps, desc="Global Step",
    ncols=1650)`, then per step `set_postfix(metrics, refresh=False)` and `update(1)`; its clock advances
    `seconds_per_step` per step (RLinf's steps are far longer than tqdm's 0.1 s redraw interval)."""
    from tqdm import tqdm
    clock = [1_700_000_000.0]
    err = _Stderr()
    bar = tqdm(initial=initial, total=steps, desc="Global Step", ncols=1650, file=err)
    bar._time = lambda: clock[0]
    bar.start_t = bar.last_print_t = clock[0]
    for step in range(initial + 1, steps + 1):
        clock[0] += seconds_per_step
        bar.set_postfix(postfix(step), refresh=False)
        bar.update(1)
    if close:
        bar.close()
    return err.getvalue()


class _Stderr(io.StringIO):
    """A container's stderr as tqdm sees it (UTF-8, so it draws `█` blocks, not `#`)."""
    encoding = "utf-8"


@pytest.fixture(scope="session")
def rlinf(pytestconfig, tmp_path_factory) -> Release:
    """RLinf 0.3.0's `print_metrics_table`, from the released wheel (kept in pytest's cache dir, or in a temporary
    dir when the cache is turned off)."""
    cache_plugin = getattr(pytestconfig, "cache", None)
    cache = Path(cache_plugin.mkdir("rlinf-0.3.0")) if cache_plugin else tmp_path_factory.mktemp("rlinf-0.3.0")
    with open(cache / ".lock", "w") as lock:  # one xdist worker downloads it; the others then find it cached
        fcntl.flock(lock, fcntl.LOCK_EX)
        return Release(function_source(wheel(cache)))
